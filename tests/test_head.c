/* The classifier over chunks of rows and the one-launch optimizer.
 *
 * Chunks: training with the classifier cut into chunks of 5 rows (M = 24
 * per micro-batch on one rank: four full chunks and a partial one; fewer
 * rows per rank on a grid) gives the run of one chunk up to fp32
 * reassociation: OpenBLAS's GEMM over 5 rows may round a logit in the last
 * bit differently from the GEMM over 24, and the LM head's weight gradient
 * sums its rows chunk by chunk. Losses and gradient norms within 1e-6
 * relative (measured 7e-9 in fp32 on one rank), the parameters after three
 * steps within 1e-5 norm-wise (the grid tests' fp32 tolerance; measured
 * 7e-7). In bf16 a logit one bit apart now and then rounds its gradient to
 * the neighbouring bf16 value, which AdamW amplifies, as on grids: 1e-2 on
 * both, as tests/test_grid_equiv.c after three steps (measured 1.2e-8 in the
 * Release build on one rank, 1.0e-4 and 5.9e-5 in the sanitizer build on X =
 * 2 with 2 threads). On the grid given (--grid D,X,Y,Z: the vocabulary split over Y, the head
 * gradient's blocks over Z). The activation sizes describe the chunk, not
 * the (tokens x vocabulary) array.
 *
 * Optimizer: one adamw_all call over the flat buffer gives, bit for bit,
 * ax_adamw_elem (kmath.h) on each parameter's elements with its decay and
 * the cast of the zchunk region to bf16, on GPT-2 (tied) and Llama (untied
 * head) tables;
 * in training under bf16 the copy it leaves is params rounded, so the next
 * forward need not round them. */
#include "test.h"
#include "grids.h"
#include "train_steps.h"
#include "backend/kmath.h"
#include "model/gpt.h"
#include "train/optim.h"
#include "util/err.h"
#include "util/rng.h"

#define STEPS 3
static ax_gpt_config cfg = {.n_layer = 2, .n_head = 4, .n_embd = 16, .block_size = 8, .vocab_size = 101};
static const int B = 12, T = 8, ACCUM = 2;
static const ax_hparams hp = AX_T_HPARAMS(STEPS);

/* STEPS steps from the seed-7 weights with at most rows per classifier chunk (0: the rule) */
static void train(ax_grid *g, ax_dtype dt, int rows, double *losses, double *gnorms, float **params, int64_t *n) {
    ax_gpt m;
    if (ax_gpt_init(&m, &cfg, g)) ax_err_exit(1);
    ax_gpt_set_dtype(&m, dt);
    m.logit_rows_max = rows;
    ax_gpt_init_random(&m, 7);
    ax_adamw o;
    ax_adamw_init(&o, m.n_local);
    ax_t_train(&m, &o, &hp, 11, B, ACCUM, T, STEPS, 1, losses, gnorms);
    *n = m.n_local;
    *params = ax_malloc(m.n_local * sizeof(float));
    memcpy(*params, m.params, m.n_local * sizeof(float));
    ax_adamw_free(&o);
    ax_gpt_free(&m);
}

static void check_chunks(ax_grid *g, ax_dtype dt) {
    double l1[STEPS], g1[STEPS], l5[STEPS], g5[STEPS];
    float *p1, *p5;
    int64_t n;
    train(g, dt, 0, l1, g1, &p1, &n);
    train(g, dt, 5, l5, g5, &p5, &n);
    double wl = 0, wp = 0, num = 0, den = 0;
    for (int s = 0; s < STEPS; s++) {
        wl = fmax(wl, fabs(l1[s] - l5[s]) / l1[s]);
        wl = fmax(wl, fabs(g1[s] - g5[s]) / g1[s]);
    }
    for (int64_t i = 0; i < n; i++) {
        num += (double)(p1[i] - p5[i]) * (p1[i] - p5[i]);
        den += (double)p1[i] * p1[i];
    }
    wp = sqrt(num / den);
    double tl = dt == AX_F32 ? 1e-6 : 1e-2, tp = dt == AX_F32 ? 1e-5 : 1e-2;
    CHECK(wl < tl && wp < tp, "%s: chunked classifier differs: losses/norms %.3g, parameters %.3g", ax_dtype_name(dt),
          wl, wp);
    if (g->rank == 0)
        printf("%s: chunks of 5 rows vs one chunk: losses/norms %.2g, parameters %.2g\n", ax_dtype_name(dt), wl, wp);
    free(p1);
    free(p5);
}

static void fill(float *x, int64_t n, uint64_t seed, float lo, float hi) {
    ax_rng r = {seed, 1, 0};
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)ax_rng_next_uniform(&r);
}

static void check_adamw(ax_grid *g, int arch) {
    ax_gpt_config c = cfg;
    c.arch = arch;
    c.untied = arch == AX_ARCH_LLAMA;
    ax_gpt m;
    if (ax_gpt_init(&m, &c, g)) ax_err_exit(1);
    int64_t n = m.n_local, nz = m.n_zchunk;
    float *w[2], *gr = ax_malloc(n * 4), *mo[2], *v[2];
    ax_bf16 *h[2];
    fill(gr, n, 1, -1, 1);
    for (int k = 0; k < 2; k++) {
        w[k] = ax_malloc(n * 4);
        mo[k] = ax_malloc(n * 4);
        v[k] = ax_malloc(n * 4);
        h[k] = ax_calloc(nz + 1, sizeof(ax_bf16));
        fill(w[k], n, 2, -1, 1);
        fill(mo[k], n, 3, -0.1f, 0.1f);
        fill(v[k], n, 4, 0, 0.01f);
    }
    ax_adamw_step s = {.gscale = 0.7f,
                       .b1 = 0.9f,
                       .b2 = 0.95f,
                       .c1 = 0.19f,
                       .c2 = 0.0975f,
                       .lr = 1e-2f,
                       .eps = 1e-8f,
                       .decay = 0.999f};
    int ndecay = 0;
    for (int i = 0; i < m.np; i++) { /* parameter by parameter, each with its decay, then the cast */
        const ax_param *p = &m.p[i];
        if (!p->present) continue;
        ndecay += p->decay;
        float d = p->decay ? s.decay : 1.0f;
        for (int64_t k = p->offset; k < p->offset + p->numel; k++)
            ax_adamw_elem(&w[0][k], gr[k], &mo[0][k], &v[0][k], s.gscale, s.b1, s.b2, s.c1, s.c2, s.lr, s.eps, d);
    }
    ax_be()->cast(h[0], AX_BF16, w[0], AX_F32, nz);
    ax_be()->adamw_all(w[1], gr, mo[1], v[1], n, m.decay_ranges, m.n_decay_ranges, h[1], nz, s);
    CHECK(ndecay > 1 && m.n_decay_ranges >= 1 && m.n_decay_ranges < ndecay, "%d decayed tensors in %d ranges", ndecay,
          m.n_decay_ranges);
    CHECK(!memcmp(w[0], w[1], n * 4) && !memcmp(mo[0], mo[1], n * 4) && !memcmp(v[0], v[1], n * 4),
          "arch %d: adamw_all differs from ax_adamw_elem parameter by parameter", arch);
    CHECK(!memcmp(h[0], h[1], (nz + 1) * sizeof(ax_bf16)), "arch %d: adamw_all's bf16 copy differs from the cast",
          arch);
    for (int k = 0; k < 2; k++) {
        free(w[k]);
        free(mo[k]);
        free(v[k]);
        free(h[k]);
    }
    free(gr);
    ax_gpt_free(&m);
}

/* under bf16 the optimizer leaves params_h current (the next forward rounds
 * nothing): it equals params rounded after each step */
static void check_bf16_copy(ax_grid *g) {
    ax_gpt m;
    if (ax_gpt_init(&m, &cfg, g)) ax_err_exit(1);
    ax_gpt_set_dtype(&m, AX_BF16);
    ax_gpt_init_random(&m, 7);
    CHECK(!m.params_h_current, "params_h current after random init");
    ax_adamw o;
    ax_adamw_init(&o, m.n_local);
    double l[2], gn[2];
    ax_t_train(&m, &o, &hp, 11, B, ACCUM, T, 2, -1, l, gn);
    ax_bf16 *want = ax_malloc((m.n_zchunk + 1) * sizeof(ax_bf16));
    ax_be()->cast(want, AX_BF16, m.params, AX_F32, m.n_zchunk);
    CHECK(m.params_h_current && !memcmp(want, m.params_h, m.n_zchunk * sizeof(ax_bf16)),
          "after the update params_h is not params rounded (current %d)", m.params_h_current);
    free(want);
    ax_adamw_free(&o);
    ax_gpt_free(&m);
}

/* the chunk rule and the activation sizes that follow it */
static void check_sizes(void) {
    CHECK(ax_gpt_logit_rows(100, 50304) == 100, "rows capped at M");
    int r = ax_gpt_logit_rows(8192, 50304);
    CHECK(r % 64 == 0 && (int64_t)r * 50304 * 4 <= AX_LOGITS_CHUNK_BYTES &&
              (int64_t)(r + 64) * 50304 * 4 > AX_LOGITS_CHUNK_BYTES,
          "GPT-2 vocabulary at 8192 rows: %d rows per chunk", r);
    CHECK(ax_gpt_logit_rows(1 << 20, 1 << 22) == 64, "at least 64 rows");
    /* a device's budget, a quarter of 16 GiB free: GPT-2 small's 8192 rows in one chunk */
    CHECK(ax_gpt_logit_rows_in(8192, 50304, (int64_t)4 << 30) == 8192, "one chunk where the budget holds it");
    CHECK(ax_gpt_logit_budget() == AX_LOGITS_CHUNK_BYTES, "the CPU keeps the fixed budget");
    ax_gpt_config c = {.n_layer = 12, .n_head = 12, .n_embd = 768, .block_size = 1024, .vocab_size = 50257};
    ax_gpt_acts s;
    ax_gpt_act_sizes(&c, (int[]){1, 1, 1, 1}, 1, 8, 1024, AX_RECOMPUTE_NONE, AX_F32, &s);
    int64_t chunk = (int64_t)ax_gpt_logit_rows(8192, 50304) * 50304;
    CHECK(s.buf[AX_ACT_LOGITS].floats == chunk, "logits buffer: %lld floats, expected one chunk",
          (long long)s.buf[AX_ACT_LOGITS].floats);
    /* bf16: the chunk's logits in dy_h (two to a float); an fp32 chunk only
     * for the X all-reduce's sum */
    for (int gx = 1; gx <= 2; gx++) {
        ax_gpt_act_sizes(&c, (int[]){1, gx, 1, 1}, 1, 8, 1024, AX_RECOMPUTE_NONE, AX_BF16, &s);
        CHECK(s.buf[AX_ACT_DY_H].floats >= chunk / 2 && s.buf[AX_ACT_LOGITS].floats == (gx == 1 ? 0 : chunk),
              "bf16, X = %d: dy_h %lld floats, fp32 logits %lld (expected >= %lld and %lld)", gx,
              (long long)s.buf[AX_ACT_DY_H].floats, (long long)s.buf[AX_ACT_LOGITS].floats, (long long)chunk / 2,
              (long long)(gx == 1 ? 0 : chunk));
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int dims[4];
    ax_grid g;
    ax_t_grid_args(argc, argv, &g, dims);
    check_sizes();
    check_adamw(&g, AX_ARCH_GPT2);
    check_adamw(&g, AX_ARCH_LLAMA);
    check_bf16_copy(&g);
    check_chunks(&g, AX_F32);
    check_chunks(&g, AX_BF16);
    ax_grid_free(&g);
    int rc = ax_test_done("head");
    MPI_Finalize();
    return rc;
}
