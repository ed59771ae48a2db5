/* Overlapped communication (docs/algorithm.md §4: OAR, ORS, OAG, bucketed DP) changes
 * when collectives complete, never what they compute: on every ordered
 * factorisation (D, X, Y, Z) of the world size, 3 steps with each overlap
 * alone, all of them, and all with the gathered weights kept, give the same
 * losses, gradient norms and parameters, bit for bit, as with none. The same
 * holds under block recomputation (whose backward re-runs each layer's
 * forward, so the prefetch order differs), and in bf16 (weights gathered
 * as bf16). Two micro-batches per step, so the reduce-scatters still in
 * flight at the end of one backward meet the next, and a bucket size of
 * one byte, so every layer is its own data-parallel bucket.
 *
 * Bitwise is the right tolerance: both settings issue the same non-blocking
 * collectives on the same buffers, and a GEMM cut into tiles (to test MPI
 * between them) splits C's rows or columns, never the sum over k.
 *
 * So that the test cannot pass with the overlap switched off, each overlap
 * must also show in the statistics: gathers served by a prefetch (OAG),
 * reduce-scatters completed later than started (ORS), buckets started
 * inside backward (DP), where the grid has those groups.
 *
 * With --cp the grids are those with context parallelism (C >= 2, every
 * ordered (D, X, Y, Z, C)): its gradients join the data buckets, and the ring
 * attention's transfers run beside the overlapped collectives. */
#include "test.h"
#include "train_steps.h"
#include "grids.h"
#include "model/gpt.h"
#include "train/optim.h"
#include "train/source.h"
#include "util/err.h"

#define STEPS 3
#define ACCUM 2
static ax_gpt_config cfg = {.n_layer = 3, .n_head = 8, .n_embd = 32, .block_size = 8, .vocab_size = 101};
static const int B = 16, T = 8;
static const ax_hparams hp = AX_T_HPARAMS(STEPS);

typedef struct {
    double loss[STEPS], gnorm[STEPS];
    float *params;
    int64_t n, prefetched, deferred, early;
} result;

static void run(ax_grid *g, int overlap, int keep, ax_recompute mode, ax_dtype t, result *r) {
    ax_gpt m;
    if (ax_gpt_init(&m, &cfg, g)) ax_err_exit(1);
    ax_gpt_set_recompute(&m, mode);
    ax_gpt_set_dtype(&m, t);
    ax_gpt_set_overlap(&m, overlap, keep, 1);
    ax_gpt_init_random(&m, 5);
    ax_adamw o;
    ax_adamw_init(&o, m.n_local);
    ax_t_train(&m, &o, &hp, 3, B, ACCUM, T, STEPS, -1, r->loss, r->gnorm);
    r->n = m.n_local;
    r->params = ax_malloc(m.n_local * sizeof(float));
    memcpy(r->params, m.params, m.n_local * sizeof(float));
    r->prefetched = m.wf.prefetched;
    r->deferred = m.ws.rs.deferred;
    r->early = m.buckets_early;
    ax_adamw_free(&o);
    ax_gpt_free(&m);
}

static int same(const result *a, const result *b) {
    return !memcmp(a->loss, b->loss, sizeof a->loss) && !memcmp(a->gnorm, b->gnorm, sizeof a->gnorm) && a->n == b->n &&
           !memcmp(a->params, b->params, a->n * sizeof(float));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int P, rank, ngrids = 0, cp = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--cp")) cp = 1;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--llama")) {
            cfg.arch = AX_ARCH_LLAMA;
            cfg.n_kv_head = 2;
            cfg.n_inner = 40;
            cfg.untied = 1; /* G_y = 4: replicated key/value heads */
        }
    struct {
        const char *name;
        int flags, keep;
        ax_recompute mode;
        ax_dtype t;
    } cases[] = {
        {"oar", AX_OV_OAR, 0, AX_RECOMPUTE_NONE, AX_F32},
        {"ors", AX_OV_ORS, 0, AX_RECOMPUTE_NONE, AX_F32},
        {"oag", AX_OV_OAG, 0, AX_RECOMPUTE_NONE, AX_F32},
        {"dp", AX_OV_DP, 0, AX_RECOMPUTE_NONE, AX_F32},
        {"all", AX_OV_ALL, 0, AX_RECOMPUTE_NONE, AX_F32},
        {"all, kept", AX_OV_ALL, 1, AX_RECOMPUTE_NONE, AX_F32},
        {"all, block recompute", AX_OV_ALL, 0, AX_RECOMPUTE_BLOCK, AX_F32},
        {"all, kept, block recompute", AX_OV_ALL, 1, AX_RECOMPUTE_BLOCK, AX_F32},
        {"all, bf16", AX_OV_ALL, 0, AX_RECOMPUTE_NONE, AX_BF16},
    };
    for (ax_t_grids q = {.P = P, .cp = cp, .T = T}; ax_t_grids_next(&q);) {
        int d = q.d, x = q.x, y = q.y, z = q.z, c = q.c;
        ax_grid g;
        if (ax_grid_init_cp(&g, MPI_COMM_WORLD, d, x, y, z, c)) ax_err_exit(1);
        if (ax_gpt_check_grid(&cfg, &g)) {
            ax_grid_free(&g);
            continue;
        }
        result ref[3] = {0}; /* none: fp32, fp32 with block recompute, bf16 */
        run(&g, AX_OV_NONE, 0, AX_RECOMPUTE_NONE, AX_F32, &ref[0]);
        run(&g, AX_OV_NONE, 0, AX_RECOMPUTE_BLOCK, AX_F32, &ref[1]);
        run(&g, AX_OV_NONE, 0, AX_RECOMPUTE_NONE, AX_BF16, &ref[2]);
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            result r;
            run(&g, cases[k].flags, cases[k].keep, cases[k].mode, cases[k].t, &r);
            const result *want = &ref[cases[k].t == AX_BF16 ? 2 : cases[k].mode == AX_RECOMPUTE_BLOCK];
            CHECK(same(&r, want), "grid %d,%d,%d,%d cp %d, overlap %s: results differ from no overlap", d, x, y, z, c,
                  cases[k].name);
            int f = cases[k].flags;
            if (z > 1 && (f & AX_OV_OAG))
                CHECK(r.prefetched > want->prefetched,
                      "grid %d,%d,%d,%d cp %d, overlap %s: no gather was prefetched (%lld)", d, x, y, z, c,
                      cases[k].name, (long long)r.prefetched);
            if (z > 1 && (f & AX_OV_ORS))
                CHECK(r.deferred > 0, "grid %d,%d,%d,%d cp %d, overlap %s: no reduce-scatter was left in flight", d, x,
                      y, z, c, cases[k].name);
            if (f & AX_OV_DP)
                CHECK(r.early > 0, "grid %d,%d,%d,%d cp %d, overlap %s: no bucket started inside backward", d, x, y, z,
                      c, cases[k].name);
            CHECK(want->deferred == 0 && want->early == 0,
                  "grid %d,%d,%d,%d cp %d: overlap none left communication in flight", d, x, y, z, c);
            free(r.params);
        }
        if (rank == 0)
            printf("grid %d,%d,%d,%d cp %d: %zu overlap settings identical to none\n", d, x, y, z, c,
                   sizeof cases / sizeof *cases);
        for (int i = 0; i < 3; i++) free(ref[i].params);
        ax_grid_free(&g);
        ngrids++;
    }
    CHECK(ngrids > 0, "no grid of %d ranks fits the model", P);
    int rc = ax_test_done("overlap");
    MPI_Finalize();
    return rc;
}
