/* Finite-difference checks of the backward of every single-rank op
 * (LayerNorm, RMSNorm, GELU, SwiGLU, rotary embeddings, attention with and
 * without grouped-query heads, cross-entropy, embedding, linear) on a 1-rank
 * grid, and the fused kernels (bias + GELU, GELU backward + bias gradient,
 * residual + norm) and bf16 stores against the unfused fp32 composition. The scalar under test is L = sum(out * R) for
 * a fixed random R (the cross-entropy: its own weighted loss), accumulated in double; the numeric gradient is a central
 * difference with a fp32 step of about 1e-3.
 *
 * Each comparison is norm-wise relative. The tolerance is well below 1e-2 so
 * that every check also proves it can fail: the same analytic gradient scaled
 * by 1.01 must be rejected by the very same comparison. */
#include "test.h"
#include "backend/bf16.h"
#include "grid/grid.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/rope.h"
#include "util/err.h"
#include "util/rng.h"
#include <omp.h>
#include <stdint.h>

#define SEED    20240611u
#define STEP    1e-3f
#define TOL     3e-3  /* a 1.01-scaled gradient is off by 1e-2 */
#define GARBAGE 1e30f /* prefill of outputs the op must overwrite */

static ax_grid g;
static uint64_t next_stream;

/* ---- helpers shared by every op ---- */

static float *randn(long n, double scale) {
    float *p = ax_malloc(n * sizeof(float));
    uint64_t s = next_stream++;
    for (long i = 0; i < n; i++) p[i] = (float)(scale * ax_rng_normal(SEED, s, i));
    return p;
}

static float *filled(long n, float v) {
    float *p = ax_malloc(n * sizeof(float));
    for (long i = 0; i < n; i++) p[i] = v;
    return p;
}

static float *copy_of(const float *a, long n) {
    float *p = ax_malloc(n * sizeof(float));
    memcpy(p, a, n * sizeof(float));
    return p;
}

static double dot(const float *a, const float *b, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* what a += backward added on top of its prefilled base */
static float *added(const float *after, const float *base, long n) {
    float *p = ax_malloc(n * sizeof(float));
    for (long i = 0; i < n; i++) p[i] = after[i] - base[i];
    return p;
}

static int all_zero(const float *a, long n) {
    for (long i = 0; i < n; i++)
        if (a[i] != 0.0f) return 0;
    return 1;
}

typedef double (*loss_fn)(void *ctx);

/* Numeric gradient of f with respect to p[0..n). The divisor is the step
 * actually representable in fp32, not the nominal 2*STEP. */
static double *fd_grad(loss_fn f, void *ctx, float *p, long n) {
    double *num = ax_malloc(n * sizeof(double));
    for (long i = 0; i < n; i++) {
        float v = p[i], up = v + STEP, dn = v - STEP;
        p[i] = up;
        double lp = f(ctx);
        p[i] = dn;
        double lm = f(ctx);
        p[i] = v;
        num[i] = (lp - lm) / ((double)up - dn);
    }
    return num;
}

static double rel_err(const float *ana, const double *num, long n, double scale) {
    double d2 = 0, n2 = 0;
    for (long i = 0; i < n; i++) {
        double d = scale * ana[i] - num[i];
        d2 += d * d;
        n2 += num[i] * num[i];
    }
    return sqrt(d2) / (n2 > 1e-30 ? sqrt(n2) : 1.0);
}

/* Analytic vs numeric within TOL, and the 1.01-scaled analytic gradient must
 * fail the same comparison, or the tolerance would be too loose to mean anything. */
static void fd_check(const char *what, loss_fn f, void *ctx, float *p, const float *ana, long n) {
    double *num = fd_grad(f, ctx, p, n);
    double e = rel_err(ana, num, n, 1.0), bad = rel_err(ana, num, n, 1.01);
    CHECK(e < TOL, "%s: analytic vs numeric gradient: relative error %.3g >= %.g", what, e, TOL);
    CHECK(bad >= TOL, "%s: a gradient scaled by 1.01 passes (error %.3g < %.g)", what, bad, TOL);
    printf("  %-22s n=%-4ld rel err %.2e  (1.01-scaled: %.2e)\n", what, n, e, bad);
    free(num);
}

/* ---- LayerNorm: dx, dw, db ---- */

typedef struct {
    int M, C;
    float *x, *w, *b, *R, *out, *mean, *rstd, *scratch;
} ln_ctx;

static double ln_loss(void *v) {
    ln_ctx *c = v;
    ax_layernorm_forward(&g.X, c->out, AX_F32, c->mean, c->rstd, c->x, NULL, NULL, c->w, c->b, c->M, c->C, c->C, 1e-5f,
                         c->scratch);
    return dot(c->out, c->R, (long)c->M * c->C);
}

static void test_layernorm(void) {
    enum { M = 7, C = 10 };
    ln_ctx c = {M,
                C,
                randn(M * C, 1.0),
                randn(C, 1.0),
                randn(C, 0.5),
                randn(M * C, 1.0),
                filled(M * C, 0),
                filled(M, 0),
                filled(M, 0),
                filled(2 * M, 0)};
    /* a per-row offset, so that subtracting the mean matters */
    for (int i = 0; i < M; i++)
        for (int j = 0; j < C; j++) c.x[i * C + j] += 0.7f * (i - 3);
    ln_loss(&c); /* mean and rstd at the unperturbed point */
    float *bx = randn(M * C, 1.0), *bw = randn(C, 1.0), *bb = randn(C, 1.0); /* += bases */
    float *dx = copy_of(bx, M * C), *dw = copy_of(bw, C), *db = copy_of(bb, C);
    ax_layernorm_backward(&g.X, dx, dw, db, c.R, c.x, c.w, c.mean, c.rstd, M, C, C, c.scratch);
    float *ax = added(dx, bx, M * C), *aw = added(dw, bw, C), *ab = added(db, bb, C);
    fd_check("layernorm dx", ln_loss, &c, c.x, ax, M * C);
    fd_check("layernorm dw", ln_loss, &c, c.w, aw, C);
    fd_check("layernorm db", ln_loss, &c, c.b, ab, C);
    float *all[] = {c.x, c.w, c.b, c.R, c.out, c.mean, c.rstd, c.scratch, bx, bw, bb, dx, dw, db, ax, aw, ab};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* ---- RMSNorm: dx, dw ---- */

static double rms_loss(void *v) {
    ln_ctx *c = v;
    ax_rmsnorm_forward(&g.X, c->out, AX_F32, c->rstd, c->x, NULL, NULL, c->w, c->M, c->C, c->C, 1e-6f);
    return dot(c->out, c->R, (long)c->M * c->C);
}

static void test_rmsnorm(void) {
    enum { M = 7, C = 10 };
    ln_ctx c = {
        M,           C, randn(M * C, 1.0), randn(C, 1.0), NULL, randn(M * C, 1.0), filled(M * C, 0), NULL, filled(M, 0),
        filled(M, 0)};
    for (int i = 0; i < M; i++) /* rows of different scales */
        for (int j = 0; j < C; j++) c.x[i * C + j] *= 0.3f + 0.4f * i;
    rms_loss(&c);
    double worst = 0; /* the definition, in double */
    for (int i = 0; i < M; i++) {
        double ss = 0;
        for (int j = 0; j < C; j++) ss += (double)c.x[i * C + j] * c.x[i * C + j];
        for (int j = 0; j < C; j++)
            worst = fmax(worst, fabs(c.x[i * C + j] / sqrt(ss / C + 1e-6) * c.w[j] - c.out[i * C + j]));
    }
    CHECK(worst < 1e-5, "rmsnorm forward off the definition by %.3g", worst);
    float *bx = randn(M * C, 1.0), *bw = randn(C, 1.0);
    float *dx = copy_of(bx, M * C), *dw = copy_of(bw, C);
    ax_rmsnorm_backward(&g.X, dx, dw, c.R, c.x, c.w, c.rstd, M, C, C, c.scratch);
    float *ax = added(dx, bx, M * C), *aw = added(dw, bw, C);
    fd_check("rmsnorm dx", rms_loss, &c, c.x, ax, M * C);
    fd_check("rmsnorm dw", rms_loss, &c, c.w, aw, C);
    float *all[] = {c.x, c.w, c.R, c.out, c.rstd, c.scratch, bx, bw, dx, dw, ax, aw};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* ---- SwiGLU: d[gate | up] ---- */

typedef struct {
    int M, F;
    float *gu, *R, *out;
} swiglu_ctx;

static double swiglu_loss(void *v) {
    swiglu_ctx *c = v;
    ax_swiglu_forward(c->out, AX_F32, NULL, AX_F32, c->gu, c->M, c->F);
    return dot(c->out, c->R, (long)c->M * c->F);
}

static void test_swiglu(void) {
    enum { M = 5, F = 7 };
    swiglu_ctx c = {M, F, randn(M * 2 * F, 2.5), randn(M * F, 1.0), filled(M * F, 0)};
    c.gu[0] = 0.0f;
    c.gu[1] = -9.0f;
    c.gu[2] = 9.0f;
    swiglu_loss(&c);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < F; j++) {
            double gt = c.gu[i * 2 * F + j], up = c.gu[i * 2 * F + F + j];
            worst = fmax(worst, fabs(gt / (1 + exp(-gt)) * up - c.out[i * F + j]));
        }
    CHECK(worst < 1e-5, "swiglu forward off silu(gate) * up by %.3g", worst);
    float *d = filled(M * 2 * F, GARBAGE);
    ax_swiglu_backward(d, AX_F32, c.gu, AX_F32, c.R, M, F);
    fd_check("swiglu d[gate|up]", swiglu_loss, &c, c.gu, d, M * 2 * F);
    free(c.gu);
    free(c.R);
    free(c.out);
    free(d);
}

/* ---- rotary embeddings: dx; the rotation itself against its definition ---- */

typedef struct {
    ax_rope r;
    int M, T, ld, nh;
    float *x, *y, *R;
} rope_ctx;

static double rope_loss(void *v) {
    rope_ctx *c = v;
    memcpy(c->y, c->x, sizeof(float) * c->M * c->ld);
    ax_rope_forward(&c->r, c->y, c->ld, c->M, c->T, NULL, c->nh);
    return dot(c->y, c->R, (long)c->M * c->ld);
}

static void test_rope(int llama3) {
    enum { T = 6, M = 2 * T, hd = 8, nh = 3, ld = nh * hd + 5 }; /* 5 columns after the heads: untouched */
    ax_gpt_config cfg = {.block_size = T, .rope_theta = 500.0};
    if (llama3) {
        cfg.rope_factor = 8;
        cfg.rope_low_freq = 1;
        cfg.rope_high_freq = 4;
        cfg.rope_orig_pos = 16;
    }
    rope_ctx c = {
        .M = M, .T = T, .ld = ld, .nh = nh, .x = randn(M * ld, 1.0), .y = filled(M * ld, 0), .R = randn(M * ld, 1.0)};
    ax_rope_init(&c.r, &cfg, hd);
    rope_loss(&c);
    double f[hd / 2], worst = 0;
    for (int k = 0; k < hd / 2; k++) { /* theta^(-2k/hd), and Llama 3's rescaling by wavelength */
        f[k] = pow(500.0, -2.0 * k / hd);
        double wl = 2 * M_PI / f[k];
        if (llama3 && wl > 16.0) f[k] /= 8;
        else if (llama3 && wl >= 4.0) {
            double sm = (16.0 / wl - 1) / 3;
            f[k] = (1 - sm) * f[k] / 8 + sm * f[k];
        }
    }
    for (int i = 0; i < M; i++) {
        for (int h = 0; h < nh; h++)
            for (int k = 0; k < hd / 2; k++) {
                double a = c.x[i * ld + h * hd + k], b = c.x[i * ld + h * hd + hd / 2 + k], t = (i % T) * f[k];
                worst = fmax(worst, fabs(a * cos(t) - b * sin(t) - c.y[i * ld + h * hd + k]));
                worst = fmax(worst, fabs(b * cos(t) + a * sin(t) - c.y[i * ld + h * hd + hd / 2 + k]));
            }
        for (int j = nh * hd; j < ld; j++) worst = fmax(worst, fabs(c.x[i * ld + j] - c.y[i * ld + j]));
    }
    CHECK(worst < 1e-5, "rope%s off the rotation by %.3g", llama3 ? " (llama3 scaling)" : "", worst);
    float *dx = copy_of(c.R, M * ld);
    ax_rope_backward(&c.r, dx, ld, M, T, NULL, nh);
    fd_check(llama3 ? "rope dx (llama3)" : "rope dx", rope_loss, &c, c.x, dx, M * ld);
    ax_rope_free(&c.r);
    free(c.x);
    free(c.y);
    free(c.R);
    free(dx);
}

/* ---- GELU ---- */

typedef struct {
    long n;
    float *x, *R, *out;
} gelu_ctx;

static double gelu_loss(void *v) {
    gelu_ctx *c = v;
    ax_bias_gelu_forward(c->out, AX_F32, NULL, AX_F32, c->x, NULL, 1, (int)c->n);
    return dot(c->out, c->R, c->n);
}

static void test_gelu(void) {
    enum { N = 37 };
    gelu_ctx c = {N, randn(N, 2.5), randn(N, 1.0), filled(N, 0)}; /* wide: both tails and the bend */
    c.x[0] = 0.0f;
    c.x[1] = -6.0f;
    c.x[2] = 6.0f;
    float *dx = filled(N, GARBAGE);
    ax_gelu_backward(dx, AX_F32, NULL, c.x, AX_F32, c.R, 1, N);
    fd_check("gelu dx", gelu_loss, &c, c.x, dx, N);
    /* documented: dx may alias dout */
    float *inplace = copy_of(c.R, N);
    ax_gelu_backward(inplace, AX_F32, NULL, c.x, AX_F32, inplace, 1, N);
    CHECK(memcmp(inplace, dx, sizeof(float) * N) == 0, "gelu backward in place (dx == dout) differs");
    free(c.x);
    free(c.R);
    free(c.out);
    free(dx);
    free(inplace);
}

/* ---- fused kernels and bf16 stores, against the unfused composition ----
 * Each fused entry does the unfused ops' arithmetic in their order, so its
 * fp32 results are the same bits; a bf16 output is the fp32 result rounded
 * once (ax_bf16_round), and a kernel reading a bf16 input computes what the
 * fp32 kernel computes on the widened values: tolerance 0 throughout. */

static int same_bits(const void *a, const void *b, size_t bytes) { return memcmp(a, b, bytes) == 0; }

static ax_bf16 *rounded(const float *x, long n) {
    ax_bf16 *h = ax_malloc((n + 1) * sizeof(ax_bf16));
    for (long i = 0; i < n; i++) h[i] = ax_bf16_round(x[i]);
    return h;
}

static float *widened(const ax_bf16 *h, long n) {
    float *x = ax_malloc(n * sizeof(float));
    for (long i = 0; i < n; i++) x[i] = ax_bf16_widen(h[i]);
    return x;
}

typedef struct {
    int M, n;
    float *y, *b, *R, *v, *out;
} bg_ctx;

static double bias_gelu_loss(void *v) {
    bg_ctx *c = v;
    ax_bias_gelu_forward(c->out, AX_F32, c->v, AX_F32, c->y, c->b, c->M, c->n);
    return dot(c->out, c->R, (long)c->M * c->n);
}

static void test_bias_gelu(void) {
    enum { M = 9, N = 13 };
    long n = M * N;
    const ax_backend *be = ax_be();
    float *y = randn(n, 2.0), *b = randn(N, 1.0), *R = randn(n, 1.0);
    /* unfused: y + bias (bias_add), then GELU, then its backward and bias_grad */
    float *yu = copy_of(y, n), *ou = filled(n, GARBAGE), *du = filled(n, GARBAGE), *dbu = randn(N, 1.0);
    float *dbf = copy_of(dbu, N);
    be->bias_add(yu, b, M, N);
    ax_bias_gelu_forward(ou, AX_F32, NULL, AX_F32, yu, NULL, M, N);
    ax_gelu_backward(du, AX_F32, NULL, yu, AX_F32, R, M, N);
    be->bias_grad(dbu, du, M, N);
    /* fused, fp32, the pre-activation kept in y itself as the model does */
    float *yf = copy_of(y, n), *of = filled(n, GARBAGE), *df = filled(n, GARBAGE);
    ax_bias_gelu_forward(of, AX_F32, yf, AX_F32, yf, b, M, N);
    CHECK(same_bits(yf, yu, n * 4) && same_bits(of, ou, n * 4), "bias+gelu fp32 differs from bias_add + gelu");
    ax_gelu_backward(df, AX_F32, dbf, yf, AX_F32, R, M, N);
    CHECK(same_bits(df, du, n * 4) && same_bits(dbf, dbu, N * 4),
          "gelu backward + bias gradient differs from gelu backward + bias_grad");
    /* bf16 stores: the fp32 results rounded once */
    ax_bf16 *ph = ax_malloc(n * 2 + 2), *oh = ax_malloc(n * 2 + 2), *dh = ax_malloc(n * 2 + 2);
    ax_bias_gelu_forward(oh, AX_BF16, ph, AX_BF16, y, b, M, N);
    ax_bf16 *pe = rounded(yu, n), *oe = rounded(ou, n);
    CHECK(same_bits(ph, pe, n * 2) && same_bits(oh, oe, n * 2),
          "bias+gelu bf16 stores are not the fp32 results rounded");
    /* bf16 pre-activation read, bf16 dx written: the fp32 kernel on the widened input, rounded */
    float *pw = widened(ph, n), *dw32 = filled(n, GARBAGE), *db32 = filled(N, 0), *dbh = filled(N, 0);
    ax_gelu_backward(dw32, AX_F32, db32, pw, AX_F32, R, M, N);
    ax_gelu_backward(dh, AX_BF16, dbh, ph, AX_BF16, R, M, N);
    ax_bf16 *de = rounded(dw32, n);
    CHECK(same_bits(dh, de, n * 2) && same_bits(dbh, db32, N * 4),
          "gelu backward from bf16: not the fp32 kernel's result on the widened input");
    /* the fused bias gradient against finite differences of sum(gelu(y + b) R) */
    bg_ctx c = {M, N, y, b, R, filled(n, 0), filled(n, 0)};
    float *db = filled(N, 0), *dx = filled(n, GARBAGE);
    bias_gelu_loss(&c);
    ax_gelu_backward(dx, AX_F32, db, c.v, AX_F32, R, M, N);
    fd_check("bias+gelu db (fused)", bias_gelu_loss, &c, c.b, db, N);
    fd_check("bias+gelu dy (fused)", bias_gelu_loss, &c, c.y, dx, n);
    printf("  bias+gelu fused fp32 == unfused bits; bf16 == fp32 rounded\n");
    void *all[] = {y,  b,  R,  yu, ou,   du,   dbu, dbf, yf,  of,    df, ph, oh,
                   dh, pe, oe, pw, dw32, db32, dbh, de,  c.v, c.out, db, dx};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* res = (x + bias) + r and norm(res) in one kernel against bias_add, add and
 * the norm; rms: RMSNorm */
static void test_add_norm(int rms) {
    enum { M = 7, C = 12 };
    long n = M * C;
    const ax_backend *be = ax_be();
    float *x = randn(n, 1.0), *bias = randn(C, 0.5), *r = randn(n, 1.0), *w = randn(C, 1.0), *b = randn(C, 0.5);
    float *xu = copy_of(x, n), *ou = filled(n, GARBAGE), *mu = filled(M, 0), *ru = filled(M, 0), *sc = filled(2 * M, 0);
    float *xf = copy_of(x, n), *of = filled(n, GARBAGE), *mf = filled(M, 0), *rf = filled(M, 0);
    float *xh = copy_of(x, n), *mh = filled(M, 0), *rh = filled(M, 0);
    ax_bf16 *oh = ax_malloc(n * 2 + 2);
    be->bias_add(xu, bias, M, C);
    be->add(xu, r, n);
    if (rms) {
        ax_rmsnorm_forward(&g.X, ou, AX_F32, ru, xu, NULL, NULL, w, M, C, C, 1e-6f);
        ax_rmsnorm_forward(&g.X, of, AX_F32, rf, xf, bias, r, w, M, C, C, 1e-6f);
        ax_rmsnorm_forward(&g.X, oh, AX_BF16, rh, xh, bias, r, w, M, C, C, 1e-6f);
    } else {
        ax_layernorm_forward(&g.X, ou, AX_F32, mu, ru, xu, NULL, NULL, w, b, M, C, C, 1e-5f, sc);
        ax_layernorm_forward(&g.X, of, AX_F32, mf, rf, xf, bias, r, w, b, M, C, C, 1e-5f, sc);
        ax_layernorm_forward(&g.X, oh, AX_BF16, mh, rh, xh, bias, r, w, b, M, C, C, 1e-5f, sc);
    }
    const char *what = rms ? "residual+rmsnorm" : "residual+layernorm";
    CHECK(same_bits(xf, xu, n * 4) && same_bits(of, ou, n * 4) && same_bits(mf, mu, M * 4) && same_bits(rf, ru, M * 4),
          "%s fp32 differs from bias_add + add + norm", what);
    ax_bf16 *oe = rounded(ou, n);
    CHECK(same_bits(xh, xu, n * 4) && same_bits(oh, oe, n * 2) && same_bits(rh, ru, M * 4),
          "%s bf16 output is not the fp32 result rounded", what);
    printf("  %s fused fp32 == unfused bits; bf16 == fp32 rounded\n", what);
    void *all[] = {x, bias, r, w, b, xu, ou, mu, ru, sc, xf, of, mf, rf, xh, mh, rh, oh, oe};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* a GEMM output kept in bf16 with its bias: out = round(y + bias), and y
 * then holds the rounded value widened; fp32 with out = y is bias_add's bits */
static void test_bias_round(void) {
    enum { M = 6, N = 11 };
    long n = M * N;
    float *y = randn(n, 3.0), *b = randn(N, 1.0), *yu = copy_of(y, n), *yf = copy_of(y, n), *yh = copy_of(y, n);
    ax_bf16 *oh = ax_malloc(n * 2 + 2);
    ax_be()->bias_add(yu, b, M, N);
    ax_bias_round(yf, yf, AX_F32, b, M, N);
    ax_bias_round(yh, oh, AX_BF16, b, M, N);
    ax_bf16 *oe = rounded(yu, n);
    float *we = widened(oe, n);
    CHECK(same_bits(yf, yu, n * 4), "bias_round fp32 differs from bias_add");
    CHECK(same_bits(oh, oe, n * 2) && same_bits(yh, we, n * 4),
          "bias_round bf16: not y + bias rounded, or y not left holding it widened");
    printf("  bias_round fp32 == bias_add bits; bf16 == rounded, y widened\n");
    void *all[] = {y, b, yu, yf, yh, oh, oe, we};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* SwiGLU with bf16 stores and a bf16 input to its backward */
static void test_swiglu_bf16(void) {
    enum { M = 5, F = 9 };
    long n = M * F, n2 = 2 * n;
    float *gu = randn(n2, 2.5), *R = randn(n, 1.0), *o32 = filled(n, GARBAGE), *d32 = filled(n2, GARBAGE);
    ax_bf16 *oh = ax_malloc(n * 2 + 2), *ph = ax_malloc(n2 * 2 + 2), *dh = ax_malloc(n2 * 2 + 2);
    ax_swiglu_forward(o32, AX_F32, NULL, AX_F32, gu, M, F);
    ax_swiglu_forward(oh, AX_BF16, ph, AX_BF16, gu, M, F);
    ax_bf16 *oe = rounded(o32, n), *pe = rounded(gu, n2);
    CHECK(same_bits(oh, oe, n * 2) && same_bits(ph, pe, n2 * 2), "swiglu bf16 stores are not the fp32 results rounded");
    float *pw = widened(ph, n2);
    ax_swiglu_backward(d32, AX_F32, pw, AX_F32, R, M, F);
    ax_swiglu_backward(dh, AX_BF16, ph, AX_BF16, R, M, F);
    ax_bf16 *de = rounded(d32, n2);
    CHECK(same_bits(dh, de, n2 * 2), "swiglu backward from bf16: not the fp32 kernel on the widened input, rounded");
    printf("  swiglu bf16 == fp32 rounded\n");
    void *all[] = {gu, R, o32, d32, oh, ph, dh, oe, pe, pw, de};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* ---- attention: dqkv ---- */

typedef struct {
    int B, T, H, KV, hd;
    float *qkv, *R, *out, *lse, *scratch;
} att_ctx;

static double att_loss(void *v) {
    att_ctx *c = v;
    ax_attention_forward(c->out, c->lse, c->qkv, c->B, c->T, c->H, c->KV, c->hd, AX_F32, c->scratch, 1);
    return dot(c->out, c->R, (long)c->B * c->T * c->H * c->hd);
}

/* Textbook causal attention in double: softmax(q k^T / sqrt(hd)) v, and its
 * backward, over whole (T, T) maps; query head h reads key/value head
 * h / (H / KV). The tiled kernel must agree with it. */
static void naive_attention(const float *qkv, const float *dout, int B, int T, int H, int KV, int hd, double *out,
                            double *dqkv) {
    int C = H * hd, ld = (H + 2 * KV) * hd;
    double *P = malloc(sizeof(double) * T * T), *dP = malloc(sizeof(double) * T * T), sc = 1.0 / sqrt(hd);
    memset(dqkv, 0, sizeof(double) * B * T * ld);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t kvo = (size_t)b * T * ld + C + (h / (H / KV)) * hd;
            const float *q = qkv + (size_t)b * T * ld + h * hd, *k = qkv + kvo, *v = k + KV * hd,
                        *dO = dout + (size_t)b * T * C + h * hd;
            double *dq = dqkv + (size_t)b * T * ld + h * hd, *dk = dqkv + kvo, *dv = dk + KV * hd;
            for (int i = 0; i < T; i++) {
                double mx = -1e300, s = 0;
                for (int j = 0; j <= i; j++) {
                    double d = 0;
                    for (int e = 0; e < hd; e++) d += (double)q[i * ld + e] * k[j * ld + e];
                    P[i * T + j] = d * sc;
                    mx = fmax(mx, d * sc);
                }
                for (int j = 0; j <= i; j++) {
                    P[i * T + j] = exp(P[i * T + j] - mx);
                    s += P[i * T + j];
                }
                for (int j = 0; j <= i; j++) P[i * T + j] /= s;
                for (int e = 0; e < hd; e++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++) o += P[i * T + j] * v[j * ld + e];
                    out[((size_t)b * T + i) * C + h * hd + e] = o;
                }
            }
            for (int i = 0; i < T; i++) {
                double dot_ = 0;
                for (int j = 0; j <= i; j++) {
                    double d = 0;
                    for (int e = 0; e < hd; e++) d += (double)dO[i * C + e] * v[j * ld + e];
                    dP[i * T + j] = d;
                    dot_ += d * P[i * T + j];
                }
                for (int j = 0; j <= i; j++) {
                    double ds = P[i * T + j] * (dP[i * T + j] - dot_) * sc;
                    for (int e = 0; e < hd; e++) {
                        dq[i * ld + e] += ds * k[j * ld + e];
                        dk[j * ld + e] += ds * q[i * ld + e];
                        dv[j * ld + e] += P[i * T + j] * dO[i * C + e];
                    }
                }
            }
        }
    free(P);
    free(dP);
}

static double reldiff_d(const float *a, const double *b, long n) {
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return sqrt(num / den);
}

/* q|k|v and out stored in bf16 (attention_forward's dt): the kernels widen
 * them tile by tile, so the results must be the fp32 path's bits on the same
 * values: out that output rounded once, lse and dqkv equal (the fp32
 * backward given the bf16 output widened); with 1 and 2 threads */
static void attention_stored_bf16(const float *x, const float *dout, int B, int T, int H, int KV, int hd,
                                  float *scratch) {
    long nq = (long)B * T * (H + 2 * KV) * hd, no = (long)B * T * H * hd, nl = (long)B * H * T;
    ax_bf16 *qh = malloc(nq * sizeof *qh), *oh = malloc(no * sizeof *oh);
    float *qw = filled(nq, 0), *ow = filled(no, 0), *o32 = filled(no, GARBAGE), *l32 = filled(nl, GARBAGE),
          *lh = filled(nl, GARBAGE), *d32 = filled(nq, GARBAGE), *dh = filled(nq, GARBAGE);
    for (long i = 0; i < nq; i++) qw[i] = ax_bf16_widen(qh[i] = ax_bf16_round(x[i]));
    ax_attention_forward(o32, l32, qw, B, T, H, KV, hd, AX_F32, scratch, 1);
    for (int nthr = 1; nthr <= 2; nthr++) {
        ax_attention_forward(oh, lh, qh, B, T, H, KV, hd, AX_BF16, scratch, nthr);
        long bad_o = 0;
        for (long i = 0; i < no; i++) bad_o += oh[i] != ax_bf16_round(o32[i]);
        for (long i = 0; i < no; i++) ow[i] = ax_bf16_widen(oh[i]);
        ax_attention_backward(d32, dout, ow, l32, qw, B, T, H, KV, hd, AX_F32, scratch, 1);
        ax_attention_backward(dh, dout, oh, lh, qh, B, T, H, KV, hd, AX_BF16, scratch, nthr);
        CHECK(!bad_o && !memcmp(lh, l32, nl * sizeof(float)) && !memcmp(dh, d32, nq * sizeof(float)),
              "attention on bf16-stored q|k|v, %d threads: %ld outputs differ from the fp32 path's rounded, lse %s, "
              "dqkv %s",
              nthr, bad_o, memcmp(lh, l32, nl * sizeof(float)) ? "differs" : "equal",
              memcmp(dh, d32, nq * sizeof(float)) ? "differs" : "equal");
    }
    printf("attention on bf16-stored q|k|v and output: the fp32 path's bits, 1 and 2 threads\n");
    free(qh);
    free(oh);
    free(qw);
    free(ow);
    free(o32);
    free(l32);
    free(lh);
    free(d32);
    free(dh);
}

/* KV < H: grouped-query attention */
static void test_attention(int KV) {
    for (int kv1 = KV; kv1 == KV; kv1++) { /* one tile: finite differences */
        enum { B = 2, T = 5, H = 2 * 2, hd = 3, C = H * hd };
        long nq = (long)B * T * (H + 2 * kv1) * hd;
        att_ctx c = {B,
                     T,
                     H,
                     kv1,
                     hd,
                     randn(nq, 1.0),
                     randn(B * T * C, 1.0),
                     filled(B * T * C, 0),
                     filled(B * H * T, 0),
                     filled(ax_attention_scratch(T, hd), GARBAGE)};
        att_loss(&c);
        float *dqkv = filled(nq, GARBAGE);
        ax_attention_backward(dqkv, c.R, c.out, c.lse, c.qkv, B, T, H, kv1, hd, AX_F32, c.scratch, 1);
        fd_check(kv1 < H ? "attention dqkv (GQA)" : "attention dqkv", att_loss, &c, c.qkv, dqkv, nq);
        free(c.qkv);
        free(c.R);
        free(c.out);
        free(c.lse);
        free(c.scratch);
        free(dqkv);
    }
    /* several tiles, the last one partial: the double-precision textbook
     * attention, within 1e-5 norm-wise (fp32 sums in another order; a wrong
     * tile, mask or rescaling is off by far more) */
    enum { B = 2, T = 2 * 64 + 22, H = 4, hd = 8, C = H * hd }; /* the CPU backend's tiles are 64 */
    int ld = (H + 2 * KV) * hd;
    long nq = (long)B * T * ld, no = (long)B * T * C;
    float *qkv = randn(nq, 1.5), *dout = randn(no, 1.0), *lse = filled(B * H * T, GARBAGE);
    float *out1 = filled(no, GARBAGE), *out2 = filled(no, GARBAGE), *dq1 = filled(nq, GARBAGE),
          *dq2 = filled(nq, GARBAGE);
    float *scratch = filled(2 * ax_attention_scratch(T, hd), GARBAGE);
    double *rout = malloc(sizeof(double) * no), *rdq = malloc(sizeof(double) * nq);
    naive_attention(qkv, dout, B, T, H, KV, hd, rout, rdq);
    ax_attention_forward(out1, lse, qkv, B, T, H, KV, hd, AX_F32, scratch, 1);
    ax_attention_backward(dq1, dout, out1, lse, qkv, B, T, H, KV, hd, AX_F32, scratch, 1);
    double eo = reldiff_d(out1, rout, no), eg = reldiff_d(dq1, rdq, nq);
    printf("attention T=%d (%d tiles), %d query / %d key-value heads: out %.2g, dqkv %.2g relative to the double "
           "reference\n",
           T, (T + 63) / 64, H, KV, eo, eg);
    CHECK(eo < 1e-5, "tiled attention output differs from the reference: %.3g", eo);
    CHECK(eg < 1e-5, "tiled attention dqkv differs from the reference: %.3g", eg);
    /* one thread or two: the same bits (each unit of work belongs to one thread) */
    ax_attention_forward(out2, lse, qkv, B, T, H, KV, hd, AX_F32, scratch, 2);
    ax_attention_backward(dq2, dout, out2, lse, qkv, B, T, H, KV, hd, AX_F32, scratch, 2);
    CHECK(!memcmp(out1, out2, no * sizeof(float)) && !memcmp(dq1, dq2, nq * sizeof(float)),
          "attention with 2 threads differs from 1 thread");
    attention_stored_bf16(qkv, dout, B, T, H, KV, hd, scratch);
    /* causal: changing the last query's k and v (and all later rows of the
     * first sequence's second half) leaves the earlier outputs unchanged */
    int cut = 64 + 3;
    for (long i = (long)cut * ld; i < (long)T * ld; i++) qkv[i] += 0.5f;
    ax_attention_forward(out2, lse, qkv, B, T, H, KV, hd, AX_F32, scratch, 1);
    CHECK(!memcmp(out1, out2, (size_t)cut * C * sizeof(float)), "outputs before position %d depend on later tokens",
          cut);
    CHECK(memcmp(out1 + (size_t)cut * C, out2 + (size_t)cut * C, (size_t)C * sizeof(float)),
          "the perturbation changed nothing");
    free(qkv);
    free(dout);
    free(lse);
    free(out1);
    free(out2);
    free(dq1);
    free(dq2);
    free(scratch);
    free(rout);
    free(rdq);
}

/* ---- cross-entropy: dlogits ---- */

typedef struct {
    int M, Vl, V;
    float *logits, *tmp, *losses, *weight, *scratch, dscale;
    int32_t *targets;
} xent_ctx;

/* the scalar whose gradient the op returns: dscale * sum_i weight_i * loss_i */
static double xent_loss(void *v) {
    xent_ctx *c = v;
    memcpy(c->tmp, c->logits, sizeof(float) * c->M * c->Vl);
    ax_xent_forward_backward(&g.Y, c->tmp, c->losses, c->targets, c->weight, c->M, c->Vl, 0, c->V, NULL, c->tmp, AX_F32,
                             c->scratch);
    double s = 0;
    for (int i = 0; i < c->M; i++) s += (double)c->dscale * c->weight[i] * c->losses[i];
    return s;
}

/* bf16 logits (as the LM head's bf16 GEMM writes them): the fp32 op's
 * losses on the same values widened, bit for bit, and its gradient rounded
 * once, in place over the logits and out of place alike. M rows of V real
 * columns, Vl - V of padding. */
static void xent_bf16(const float *logits, const int32_t *targets, const float *weight, int M, int Vl, int V,
                      float dscale) {
    long n = (long)M * Vl;
    ax_bf16 *h16 = ax_malloc(sizeof(ax_bf16) * n), *d16 = ax_malloc(sizeof(ax_bf16) * n);
    float *wide = filled(n, 0), *want_losses = filled(M, 0), *losses = filled(M, 0), *scratch = filled(3 * M, 0);
    for (long i = 0; i < n; i++) wide[i] = ax_bf16_widen(h16[i] = ax_bf16_round(logits[i]));
    ax_xent_forward_backward(&g.Y, wide, want_losses, targets, weight, M, Vl, 0, V, &dscale, wide, AX_F32, scratch);
    for (int in_place = 0; in_place < 2; in_place++) {
        ax_bf16 *out = in_place ? h16 : d16;
        if (!in_place) memset(d16, 0x7f, sizeof(ax_bf16) * n);
        ax_xent_forward_backward(&g.Y, h16, losses, targets, weight, M, Vl, 0, V, &dscale, out, AX_BF16, scratch);
        int bf16_ok = 1;
        for (long i = 0; i < n; i++) bf16_ok &= out[i] == ax_bf16_round(wide[i]);
        CHECK(bf16_ok, "xent bf16 (%s, %d columns): the gradient is not the fp32 one rounded",
              in_place ? "in place" : "out of place", V);
        CHECK(memcmp(losses, want_losses, sizeof(float) * M) == 0,
              "xent bf16 (%s, %d columns): the losses differ from fp32's on the widened logits",
              in_place ? "in place" : "out of place", V);
    }
    void *all[] = {h16, d16, wide, want_losses, losses, scratch};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

static void test_xent(void) {
    enum { M = 7, V = 10, Vl = 13 }; /* columns V..Vl are vocabulary padding */
    int32_t targets[M] = {3, 0, 9, 3, 7, 1, 5};
    xent_ctx c = {
        M,        Vl,     V, randn(M * Vl, 2.0), filled(M * Vl, 0), filled(M, 0), filled(M, 1), filled(3 * M, 0),
        1.0f / 5, targets};
    /* huge padded logits: counted by mistake, they would dominate max and sum */
    for (int i = 0; i < M; i++)
        for (int j = V; j < Vl; j++) c.logits[i * Vl + j] = 40.0f + j;
    for (int i = 0; i < M; i++) c.weight[i] = (float)(0.5 + ax_rng_uniform(SEED, next_stream, i));
    next_stream++;
    c.weight[2] = c.weight[5] = 0.0f; /* masked tokens (goldfish, padding) */

    xent_loss(&c); /* forward only (dscale NULL): logits untouched */
    CHECK(memcmp(c.tmp, c.logits, sizeof(float) * M * Vl) == 0, "xent forward only modified the logits");
    double worst = 0;
    for (int i = 0; i < M; i++) { /* -log softmax over the V real columns, in double */
        const float *r = c.logits + i * Vl;
        double mx = r[0], s = 0;
        for (int j = 1; j < V; j++) mx = fmax(mx, r[j]);
        for (int j = 0; j < V; j++) s += exp(r[j] - mx);
        worst = fmax(worst, fabs(mx + log(s) - r[targets[i]] - c.losses[i]));
    }
    CHECK(worst < 1e-5, "xent per-row losses off by %.3g", worst);

    float *fwd_losses = copy_of(c.losses, M);
    float *d = copy_of(c.logits, M * Vl);
    ax_xent_forward_backward(&g.Y, d, c.losses, targets, c.weight, M, Vl, 0, V, &c.dscale, d, AX_F32, c.scratch);
    CHECK(memcmp(fwd_losses, c.losses, sizeof(float) * M) == 0, "xent losses differ with and without backward");
    /* out of place, the logits kept: the in-place bits */
    float *d32 = filled(M * Vl, 7.0f);
    ax_xent_forward_backward(&g.Y, c.logits, c.losses, targets, c.weight, M, Vl, 0, V, &c.dscale, d32, AX_F32,
                             c.scratch);
    CHECK(memcmp(d32, d, sizeof(float) * M * Vl) == 0, "xent: the gradient out of place differs from in place");
    CHECK(memcmp(c.tmp, c.logits, sizeof(float) * M * Vl) == 0, "xent out of place modified the logits");
    free(d32);
    xent_bf16(c.logits, targets, c.weight, M, Vl, V, c.dscale);
    /* rows of whole blocks of the CPU's running sums and a tail; each row's
     * largest logit 0 and its target, so that the loss, log(sum exp), shows
     * a sum that is a bit off (beside a larger max, it would round away) */
    float *lw = randn(3 * 80, 1.0), ww[3] = {1.0f, 0.5f, 2.0f};
    int32_t tw[3];
    for (int i = 0; i < 3; i++) {
        float *r = lw + i * 80;
        tw[i] = 0;
        for (int j = 1; j < 77; j++) tw[i] = r[j] > r[tw[i]] ? j : tw[i];
        float top = r[tw[i]];
        for (int j = 0; j < 77; j++) r[j] -= top;
    }
    xent_bf16(lw, tw, ww, 3, 80, 77, 0.25f);
    free(lw);
    int pad_zero = 1;
    for (int i = 0; i < M; i++) pad_zero &= all_zero(d + i * Vl + V, Vl - V);
    CHECK(pad_zero, "xent: padded vocabulary columns got a nonzero gradient");
    CHECK(all_zero(d + 2 * Vl, Vl) && all_zero(d + 5 * Vl, Vl), "xent: zero-weight rows got a nonzero gradient");
    fd_check("xent dlogits", xent_loss, &c, c.logits, d, M * Vl); /* padding included: numeric 0 there */
    free(c.logits);
    free(c.tmp);
    free(c.losses);
    free(c.weight);
    free(c.scratch);
    free(fwd_losses);
    free(d);
}

/* ---- embedding: dwte rows, dwpe ---- */

typedef struct {
    int M, T, v0, Vl, C;
    const int32_t *tokens, *pos;
    float *wte, *wpe, *R, *out;
} emb_ctx;

static double emb_loss(void *v) {
    emb_ctx *c = v;
    ax_embedding_forward(&g.Y, c->out, c->tokens, c->pos, c->wte, c->wpe, c->M, c->T, c->v0, c->Vl, c->C);
    return dot(c->out, c->R, (long)c->M * c->C);
}

static void test_embedding(int given_positions) {
    /* The block holds vocabulary rows [2, 7) of 9, as one Y shard would:
     * tokens outside it have no row here (on a 1-rank Y group they embed as
     * zeros and get no gradient). Token 3 repeats, so its row must accumulate;
     * token 5 never occurs; wpe has maxT = 6 > T rows, the last one unused
     * with positions i % T; with given positions (rows of mixed sequences,
     * repeats, the last row; sequences of maxT positions, as a rank's rows
     * under context parallelism are of longer sequences) every position row
     * is exercised. */
    enum { B = 2, T = 5, M = B * T, maxT = 6, v0 = 2, Vl = 5, C = 7 };
    static const int32_t tokens[M] = {3, 3, 0, 6, 8, 2, 3, 1, 6, 4}, positions[M] = {0, 1, 2, 5, 4, 2, 0, 5, 1, 3};
    const int32_t *pos = given_positions ? positions : NULL;
    int Tp = pos ? maxT : T; /* a sequence's positions */
    emb_ctx c = {
        M, Tp, v0, Vl, C, tokens, pos, randn(Vl * C, 1.0), randn(maxT * C, 1.0), randn(M * C, 1.0), filled(M * C, 0)};
    float *bte = randn(Vl * C, 1.0), *bpe = randn(maxT * C, 1.0); /* += bases */
    float *dte = copy_of(bte, Vl * C), *dpe = copy_of(bpe, maxT * C);
    if (pos) { /* positions past T are skipped (backend.h), as the CUDA backend's sort does */
        ax_embedding_backward(dte, dpe, c.R, tokens, pos, M, maxT - 1, v0, Vl, C);
        CHECK(!memcmp(dpe + (maxT - 1) * C, bpe + (maxT - 1) * C, C * sizeof(float)),
              "embedding: dwpe row %d changed with T = %d", maxT - 1, maxT - 1);
        memcpy(dte, bte, Vl * C * sizeof(float));
        memcpy(dpe, bpe, maxT * C * sizeof(float));
    }
    ax_embedding_backward(dte, dpe, c.R, tokens, pos, M, Tp, v0, Vl, C);
    float *ate = added(dte, bte, Vl * C), *ape = added(dpe, bpe, maxT * C);
    /* exact structural facts, then the finite differences */
    CHECK(all_zero(ate + (5 - v0) * C, C), "embedding: dwte row of an unused token changed");
    if (!pos) CHECK(all_zero(ape + T * C, (maxT - T) * C), "embedding: dwpe rows >= T changed");
    fd_check(pos ? "embedding dwte (positions)" : "embedding dwte", emb_loss, &c, c.wte, ate, Vl * C);
    fd_check(pos ? "embedding dwpe (positions)" : "embedding dwpe", emb_loss, &c, c.wpe, ape, maxT * C);
    float *all[] = {c.wte, c.wpe, c.R, c.out, bte, bpe, dte, dpe, ate, ape};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* ---- linear (1-rank grid, both orientations): dx, dW, db ---- */

typedef struct {
    ax_linear L;
    int M;
    float *w, *b, *x, *R, *y;
} lin_ctx;

static double lin_loss(void *v) {
    lin_ctx *c = v;
    ax_mat W = ax_linear_weight(&c->L, &g, c->w, AX_F32, NULL); /* Gz = 1: the chunk itself */
    ax_linear_forward(&c->L, W, c->b, ax_mat_f32(c->x, c->M, c->L.in_l), c->y);
    return dot(c->y, c->R, (long)c->M * c->L.out_l);
}

static void test_linear(int transposed) {
    enum { M = 7, IN = 10, OUT = 6 };
    lin_ctx c;
    ax_linear_init(&c.L, &g, IN, OUT, (ax_linear_opts){.transposed = transposed});
    c.M = M;
    long nw = ax_shard_numel(&c.L.w, &g);
    c.w = randn(nw, 0.5);
    c.b = randn(OUT, 1.0);
    c.x = randn(M * IN, 1.0);
    c.R = randn(M * OUT, 1.0);
    c.y = filled(M * OUT, 0);
    ax_linear_ws ws;
    ax_linear_ws_init(&ws, &g, (const ax_linear *[]){&c.L}, 1, 1, 0);
    float *bw = randn(nw, 1.0), *bb = randn(OUT, 1.0); /* += bases */
    float *dw = copy_of(bw, nw), *db = copy_of(bb, OUT), *dx = filled(M * IN, GARBAGE);
    ax_linear_backward(&c.L, &g, ax_linear_weight(&c.L, &g, c.w, AX_F32, NULL), ax_mat_f32(c.x, M, IN),
                       ax_mat_f32(c.R, M, OUT), dx, dw, db, &ws, NULL);
    float *aw = added(dw, bw, nw), *ab = added(db, bb, OUT);
    char name[3][32];
    for (int i = 0; i < 3; i++)
        snprintf(name[i], sizeof name[i], "linear%s %s", transposed ? "(T)" : "",
                 (const char *[]){"dx", "dW", "db"}[i]);
    fd_check(name[0], lin_loss, &c, c.x, dx, M * IN);
    fd_check(name[1], lin_loss, &c, c.w, aw, nw);
    fd_check(name[2], lin_loss, &c, c.b, ab, OUT);
    ax_linear_ws_free(&ws);
    float *all[] = {c.w, c.b, c.x, c.R, c.y, bw, bb, dw, db, dx, aw, ab};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (ax_grid_init(&g, MPI_COMM_WORLD, 1, 1, 1, 1)) ax_err_exit(1);
    test_layernorm();
    test_rmsnorm();
    test_gelu();
    test_swiglu();
    test_bias_gelu();
    test_add_norm(0);
    test_add_norm(1);
    test_swiglu_bf16();
    test_bias_round();
    test_rope(0);
    test_rope(1);
    test_attention(4);
    test_attention(2);
    test_xent();
    test_embedding(0);
    test_embedding(1);
    test_linear(0);
    test_linear(1);
    ax_grid_free(&g);
    int rc = ax_test_done("ops_fd");
    MPI_Finalize();
    return rc;
}
