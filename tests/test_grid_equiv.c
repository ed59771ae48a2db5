/* The correctness definition (docs/algorithm.md §3): from the same initial weights and data,
 * training on any 4D grid gives the single-rank losses and parameters up to
 * float reassociation. Every rank computes the serial run itself (on a 1-rank
 * grid over MPI_COMM_SELF); then the world trains on every ordered
 * factorisation (D, X, Y, Z) of its size and compares. The model's sizes
 * divide by 2, 3, 4, 6, 8 and 12 (24 heads of 2, hidden 48, batch 24), and
 * its vocabulary (101) divides by nothing, so padding is exercised too.
 * Step 1 uses the goldfish loss (k = 3, h = 3), so masked token counts are
 * checked on every grid as well. Each grid also trains with activation
 * recomputation (attn and block by turns), which must give the same bits.
 *
 * With --arch llama the model is the Llama kind (RMSNorm, SwiGLU of width 72,
 * rotary positions, 12 key/value heads for the 24 query heads, no biases,
 * untied LM head); --kv N then sets the key/value heads (2: fewer than G_y
 * on grids of Y = 4, 6, 8, 12, where each Y shard holds a copy of the one
 * key/value head its query heads read, and the copies' gradients are summed).
 * Every grid's trained model is saved and loaded back on the same grid: the
 * same bits (so replicated copies stayed identical, too). With --dtype bf16 everything runs in mixed precision, and the
 * tolerances widen (see TOL below); the bf16 serial run is also checked to differ from the fp32 one by what bf16
 * rounding gives, neither nothing nor much more.
 *
 * With --cp the grids are instead those of five dimensions with context
 * parallelism, every ordered factorisation (D, X, Y, Z, C) with C >= 2
 * (docs/design.md, Context parallelism): each rank then trains on its two
 * chunks of every sequence, the attention going around the C ring; the same
 * checks and tolerances hold (the ring only sums the same softmax in another
 * order). --seq T sets the sequence length (default 8; C must divide T / 2).
 *
 * With --zero the grids with D x C > 1 train with ZeRO-1 (model/gpt.h,
 * ax_gpt_set_zero) and are checked against the serial run as above and
 * against the same grid without it (check_zero0). --embd N --heads H set
 * other sizes (45 and 5 leave bucket ranges that P does not divide). */
#include "test.h"
#include "train_steps.h"
#include "grids.h"
#include "model/gpt.h"
#include "train/optim.h"
#include "train/source.h"
#include "train/checkpoint.h"
#include "util/fileio.h"
#include <unistd.h>
#include "memo/goldfish.h"
#include "util/err.h"

#define STEPS 3
static ax_dtype dt = AX_F32;
/* fp32: reassociation only, 1e-5 everywhere. bf16: on X or Y splits a
 * reassociated activation now and then rounds to the neighbouring bf16 value
 * (2^-8 relative) where the serial run rounded the other way. The first step
 * (before any update) is held to 5e-5 (measured up to 6e-6 on 8 ranks; bf16
 * against fp32 differs by 8e-3 on the gradient norm). After updates the
 * parameters differ too, more of them round the other way, and AdamW's early
 * steps, nearly sign(g) * lr, turn the flips of near-zero gradients into
 * whole steps: measured up to 3e-3 on the parameters and 7e-4 on the
 * gradient norm after 3 steps, so 1e-2. */
#define TOL  (dt == AX_F32 ? 1e-5 : 1e-2)
#define TOL0 (dt == AX_F32 ? 1e-5 : 5e-5)
/* The parameters after STEPS AdamW updates, fp32: losses and gradient norms
 * agree to 1e-8..2e-6, but the update lr * m / (sqrt(v) + eps) divides each
 * gradient by its own size, so the rounding of the small components, which
 * reassociation changes most, comes through at the step's full size:
 * measured 3e-6 to 1.04e-5 on the 6-rank grids with C > 1 (grid_equiv_6_cp),
 * so 3e-5; the losses and gradient norms keep 1e-5. bf16: as TOL. */
#define TOLP (dt == AX_F32 ? 3e-5 : 1e-2)
/* --zero: ZeRO-1 against the same grid without it (check_zero0) */
static int zero = 0;
static ax_gpt_config cfg = {.n_layer = 2, .n_head = 24, .n_embd = 48, .block_size = 8, .vocab_size = 101};
static const int B = 24, ACCUM = 1;
static int T = 8;
static const ax_hparams hp = AX_T_HPARAMS(STEPS);

/* trains STEPS steps on grid g from the seed-7 initialisation; losses and
 * pre-clip gradient norms out (AdamW would hide a gradient scaled k times);
 * mode: which activations backward rebuilds */
static void run(ax_gpt *m, ax_grid *g, double *losses, double *gnorms, ax_recompute mode, ax_dtype t, int zero1) {
    ax_gpt_init(m, &cfg, g);
    ax_gpt_set_recompute(m, mode);
    ax_gpt_set_dtype(m, t);
    ax_gpt_set_zero(m, zero1);
    ax_gpt_init_random(m, 7);
    ax_adamw o;
    ax_adamw_init(&o, ax_gpt_opt_numel(m));
    ax_t_train(m, &o, &hp, 11, B, ACCUM, T, STEPS, 1, losses, gnorms); /* goldfish weights at step 1 */
    ax_adamw_free(&o);
}

/* --zero: the ZeRO-1 run of grid g (losses, gradient norms, parameters in
 * m) against the same grid's run without it. The gradients are the same
 * messages summed by MPI's reduce-scatter instead of its all-reduce, which
 * may associate the sums of more than two ranks otherwise, and the gradient
 * norm adds the shares' squares in another order; the update is elementwise.
 * So the 4D grids' tolerances hold (TOL, TOLP), and the run says whether the
 * bits were the same (what was seen: docs/design.md, ZeRO-1's "Bits"). */
static void check_zero0(ax_gpt *m, ax_grid *g, const double *got, const double *gnorm, int d, int x, int y, int z,
                        int c) {
    ax_gpt m0;
    double l0[STEPS], n0[STEPS], wl = 0, wn = 0, wp = 0;
    run(&m0, g, l0, n0, AX_RECOMPUTE_NONE, dt, 0);
    for (int s = 0; s < STEPS; s++) {
        wl = fmax(wl, fabs(got[s] - l0[s]) / l0[s]);
        wn = fmax(wn, fabs(gnorm[s] - n0[s]) / n0[s]);
    }
    float *diff = ax_malloc(m->n_local * sizeof(float));
    for (int64_t k = 0; k < m->n_local; k++) diff[k] = m->params[k] - m0.params[k];
    wp = sqrt(ax_gpt_sumsq(&m0, diff) / ax_gpt_sumsq(&m0, m0.params));
    free(diff);
    int same = !memcmp(m->params, m0.params, m->n_local * sizeof(float)) && !memcmp(got, l0, sizeof l0);
    CHECK(wl < TOL && wn < TOL && wp < TOLP,
          "grid %d,%d,%d,%d cp %d: ZeRO-1 against none: losses %.3g, gradient norms %.3g, parameters %.3g", d, x, y, z,
          c, wl, wn, wp);
    if (g->rank == 0)
        printf("grid %d,%d,%d,%d cp %d: ZeRO-1 against none: %s (losses %.2g, gradient norms %.2g, parameters %.2g)\n",
               d, x, y, z, c, same ? "the same bits" : "differ", wl, wn, wp);
    ax_gpt_free(&m0);
}

/* One scenario read top to bottom (set up, run, check each quantity in order): kept whole on purpose. */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int P, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int kv = 0, cp = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cp")) cp = 1;
        if (!strcmp(argv[i], "--zero")) zero = 1;
    }
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--kv")) kv = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--seq")) cfg.block_size = T = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--embd")) cfg.n_embd = atoi(argv[i + 1]); /* with --heads: other sizes */
        if (!strcmp(argv[i], "--heads")) cfg.n_head = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--dtype") && ax_dtype_parse(argv[i + 1], &dt)) ax_err_exit(1);
        if (!strcmp(argv[i], "--arch") && !strcmp(argv[i + 1], "llama")) {
            cfg.arch = AX_ARCH_LLAMA;
            cfg.n_kv_head = 12;
            cfg.n_inner = 72;
            cfg.untied = 1;
            cfg.norm_eps = 1e-6f;
        }
    }
    if (kv) cfg.n_kv_head = kv;
    /* the round trip's directory, one name for all ranks */
    char dir[64];
    int pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(dir, sizeof dir, "/tmp/axonn_grid_equiv_%d", pid);

    /* the serial reference, as logical tensors */
    ax_grid g1;
    ax_gpt m1;
    double ref[STEPS], rnorm[STEPS];
    if (ax_grid_init(&g1, MPI_COMM_SELF, 1, 1, 1, 1)) ax_err_exit(0);
    run(&m1, &g1, ref, rnorm, AX_RECOMPUTE_NONE, dt, 0);
    if (dt == AX_BF16) {
        ax_gpt mf;
        double fl[STEPS], fn[STEPS], dl = 0, dn = 0;
        run(&mf, &g1, fl, fn, AX_RECOMPUTE_NONE, AX_F32, 0);
        for (int s = 0; s < STEPS; s++) {
            dl = fmax(dl, fabs(fl[s] - ref[s]) / fl[s]);
            dn = fmax(dn, fabs(fn[s] - rnorm[s]) / fn[s]);
        }
        /* bf16 rounds GEMM inputs by up to 2^-9: the loss moves by ~1e-3 at most */
        CHECK(dl > 1e-7 && dl < 1e-2 && dn > 1e-7 && dn < 5e-2, "bf16 against fp32: loss %.3g, gradient norm %.3g", dl,
              dn);
        if (rank == 0) printf("bf16 serial against fp32 serial: loss %.2g, gradient norm %.2g\n", dl, dn);
        ax_gpt_free(&mf);
    }
    float **logical = ax_malloc(m1.np * sizeof(float *));
    for (int i = 0; i < m1.np; i++) {
        ax_param *p = &m1.p[i];
        logical[i] = ax_calloc(p->shard.rows * p->shard.cols, sizeof(float));
        for (int64_t k = 0; k < p->numel; k++) {
            int64_t j = ax_shard_logical_index(&p->shard, &g1, 0, 0, 0, k);
            if (j >= 0) logical[i][j] = m1.params[p->offset + k];
        }
    }

    int ngrids = 0;
    for (ax_t_grids q = {.P = P, .cp = cp, .T = T}; ax_t_grids_next(&q);) {
        int d = q.d, x = q.x, y = q.y, z = q.z, c = q.c;
        ax_grid g;
        ax_gpt m;
        double got[STEPS], gnorm[STEPS];
        if (ax_grid_init_cp(&g, MPI_COMM_WORLD, d, x, y, z, c)) ax_err_exit(0);
        if (ax_gpt_check_grid(&cfg, &g)) { /* e.g. Llama's 12 key/value heads on G_y = 8, 2 on G_y = 3 */
            if (rank == 0) printf("grid %d,%d,%d,%d cp %d: skipped: %s\n", d, x, y, z, c, ax_err_msg());
            ax_grid_free(&g);
            continue;
        }
        if (zero && d * c == 1) { /* ZeRO-1 shards over the data group: these grids have none */
            ax_grid_free(&g);
            continue;
        }
        run(&m, &g, got, gnorm, AX_RECOMPUTE_NONE, dt, zero);
        if (zero) check_zero0(&m, &g, got, gnorm, d, x, y, z, c);
        double wl = 0, wn = 0, w0 = fmax(fabs(got[0] - ref[0]) / ref[0], fabs(gnorm[0] - rnorm[0]) / rnorm[0]);
        CHECK(w0 < TOL0, "grid %d,%d,%d,%d cp %d: first step's loss or gradient norm differs by %.3g", d, x, y, z, c,
              w0);
        for (int s = 0; s < STEPS; s++) {
            wl = fmax(wl, fabs(got[s] - ref[s]) / ref[s]);
            wn = fmax(wn, fabs(gnorm[s] - rnorm[s]) / rnorm[s]);
        }
        /* parameters: this rank's shards against the serial tensors' shards */
        float *want = ax_malloc(m.n_local * sizeof(float)), *diff = ax_malloc(m.n_local * sizeof(float));
        for (int i = 0; i < m.np; i++) ax_shard_extract(&m.p[i].shard, &g, logical[i], want + m.p[i].offset);
        for (int64_t k = 0; k < m.n_local; k++) diff[k] = m.params[k] - want[k];
        double wp = sqrt(ax_gpt_sumsq(&m, diff) / ax_gpt_sumsq(&m, want));
        CHECK(wl < TOL, "grid %d,%d,%d,%d cp %d: losses differ by %.3g", d, x, y, z, c, wl);
        CHECK(wn < TOL, "grid %d,%d,%d,%d cp %d: gradient norms differ by %.3g", d, x, y, z, c, wn);
        CHECK(wp < TOLP, "grid %d,%d,%d,%d cp %d: parameters differ by %.3g", d, x, y, z, c, wp);
        if (rank == 0)
            printf("grid %d,%d,%d,%d cp %d%s: first step %.2g; loss %.2g, gradient norm %.2g, parameters %.2g\n", d, x,
                   y, z, c, m.kv_copies > 1 ? " (key/value heads replicated)" : "", w0, wl, wn, wp);
        /* saved and loaded back: every rank's parameters, bit for bit */
        ax_gpt ml;
        CHECK(ax_model_save(dir, &m, 0, AX_ST_F32) == 0, "grid %d,%d,%d,%d cp %d: save: %s", d, x, y, z, c,
              ax_err_msg());
        ax_gpt_init(&ml, &cfg, &g);
        CHECK(ax_gpt_load(&ml, dir) == 0, "grid %d,%d,%d,%d cp %d: load: %s", d, x, y, z, c, ax_err_msg());
        CHECK(!memcmp(ml.params, m.params, m.n_local * sizeof(float)),
              "grid %d,%d,%d,%d cp %d: saved and loaded parameters differ", d, x, y, z, c);
        ax_gpt_free(&ml);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) ax_remove_tree(dir);
        /* activation recomputation, attn and block by turns: the same bits */
        ax_recompute mode = ngrids % 2 ? AX_RECOMPUTE_BLOCK : AX_RECOMPUTE_ATTN;
        ax_gpt mr;
        double rl[STEPS], rn[STEPS];
        run(&mr, &g, rl, rn, mode, dt, zero);
        CHECK(!memcmp(rl, got, sizeof rl) && !memcmp(rn, gnorm, sizeof rn) &&
                  !memcmp(mr.params, m.params, m.n_local * sizeof(float)),
              "grid %d,%d,%d,%d cp %d: recompute %s changes the results", d, x, y, z, c,
              mode == AX_RECOMPUTE_BLOCK ? "block" : "attn");
        CHECK(mr.act_bytes < m.act_bytes, "grid %d,%d,%d,%d cp %d: recompute keeps no less memory", d, x, y, z, c);
        if (rank == 0)
            printf("  recompute %s: identical, activations %.0f%% of none\n",
                   mode == AX_RECOMPUTE_BLOCK ? "block" : "attn", 100 * mr.act_bytes / m.act_bytes);
        ax_gpt_free(&mr);
        free(want);
        free(diff);
        ax_gpt_free(&m);
        ax_grid_free(&g);
        ngrids++;
    }
    if (rank == 0) printf("%d grids of %d ranks, serial losses %.6f %.6f %.6f\n", ngrids, P, ref[0], ref[1], ref[2]);
    int rc = ax_test_done("grid_equiv");
    MPI_Finalize();
    return rc;
}
