/* backend_cmp (label gpu): every kernel of the CUDA backend against the CPU
 * backend on the same inputs, forward and backward, printed as a table of
 * normalised max errors, max|gpu - cpu| / max|cpu|, against each op's stated
 * tolerance. fp32 kernels differ only in summation order, fused multiply-adds
 * and the math library (1e-5 .. 1e-4); bf16 GEMMs multiply the same bf16
 * products with fp32 accumulation in another order (1e-5 for an fp32 result,
 * 8e-3 ~ two bf16 ulps where the result is rounded to bf16); casts are exact.
 * The dtype variants and fused entries (residual + norm, bias + GELU, GELU
 * backward + bias gradient, SwiGLU in bf16, bias_round): a bf16 output of an
 * fp32 result within 1e-5 is within 8e-3; an exact add or copy rounded on
 * both sides (the residual stream, a kept pre-activation) has tolerance 0.
 * Without a CUDA build or a device it prints SKIP and exits 77. */
#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#include "backend/kmath.h"
#include "test.h"
#ifdef AX_HAVE_CUDA
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_table.h"
#include "util/err.h"

static const ax_backend *C_, *G_;
static uint64_t rng = 88172645463325252ull;

static float uniform(float lo, float hi) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) / 16777216.0);
}

/* the CPU buffer, the GPU one and a host mirror of the GPU one (h, filled by
 * got() for reading); inputs are written in c and sent to g by put() */
typedef struct {
    void *c, *g, *h;
    size_t bytes;
} pair;

static pair mk(size_t bytes) {
    pair p = {C_->alloc(bytes), G_->alloc(bytes), ax_calloc(bytes ? bytes : 1, 1), bytes};
    return p;
}
static void put(pair p) { G_->copy(p.g, p.c, p.bytes); }
static void got(pair p) { G_->copy(p.h, p.g, p.bytes); }
static pair randf(size_t n, float lo, float hi) {
    pair p = mk(n * 4);
    for (size_t i = 0; i < n; i++) ((float *)p.c)[i] = uniform(lo, hi);
    put(p);
    return p;
}
static pair randi(size_t n, int lo, int hi) {
    pair p = mk(n * 4);
    for (size_t i = 0; i < n; i++) ((int32_t *)p.c)[i] = lo + (int)(uniform(0, 1) * (hi - lo)) % (hi - lo);
    put(p);
    return p;
}
static pair randh(size_t n) {
    pair p = mk(n * 2);
    for (size_t i = 0; i < n; i++) ((uint16_t *)p.c)[i] = ax_bf16_round(uniform(-1, 1));
    put(p);
    return p;
}
static void drop(pair p) {
    C_->free(p.c);
    G_->free(p.g);
    free(p.h);
}
#define F(p) ((float *)(p).c)
#define G(p) ((float *)(p).g)

static void row(const char *op, const char *shape, pair p, int bf16, double tol) {
    size_t n = p.bytes / (bf16 ? 2 : 4);
    double err = 0, ref = 0;
    got(p);
    for (size_t i = 0; i < n; i++) {
        double c = bf16 ? ax_bf16_widen(((uint16_t *)p.c)[i]) : F(p)[i];
        double g = bf16 ? ax_bf16_widen(((uint16_t *)p.h)[i]) : ((float *)p.h)[i];
        double d = fabs(g - c);
        if (!(d <= err)) err = d; /* NaN counts as the worst */
        if (fabs(c) > ref) ref = fabs(c);
    }
    double e = err / (ref > 1e-30 ? ref : 1.0);
    int ok = e <= tol;
    printf("%-24s %-30s %10.2e %8.0e  %s\n", op, shape, e, tol, ok ? "ok" : "FAIL");
    CHECK(ok, "%s %s: error %.3g > tolerance %.3g", op, shape, e, tol);
}

static void none(void *ctx, float *buf, size_t n) {
    (void)ctx;
    (void)buf;
    (void)n;
}
/* a group of one rank: solo runs the passes a group needs (its calls do
 * nothing), single says it is one rank, and a backend may fuse them */
static const ax_reducer solo = {none, none, NULL, 0}, single = {none, none, NULL, 1};

static void gemms(void) {
    int M = 192, N = 160, K = 320;
    for (int t = 0; t < 4; t++) {
        int ta = t & 1, tb = t >> 1;
        pair a = randf((size_t)M * K, -1, 1), b = randf((size_t)K * N, -1, 1), c = randf((size_t)M * N, -1, 1);
        pair ah = randh((size_t)M * K), bh = randh((size_t)K * N), ch = mk((size_t)M * N * 2);
        const ax_backend *be[2] = {C_, G_};
        for (int s = 0; s < 2; s++) {
            void *A = s ? a.g : a.c, *B = s ? b.g : b.c, *Cc = s ? c.g : c.c;
            void *Ah = s ? ah.g : ah.c, *Bh = s ? bh.g : bh.c, *Ch = s ? ch.g : ch.c;
            int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
            be[s]->gemm(1, 0.5f, ax_mat_of(A, AX_F32, ar, ac), ta, ax_mat_of(B, AX_F32, br, bc), tb, 1.0f,
                        ax_mat_of(Cc, AX_F32, M, N));
            be[s]->gemm(1, 1.0f, ax_mat_of(Ah, AX_BF16, ar, ac), ta, ax_mat_of(Bh, AX_BF16, br, bc), tb, 0.0f,
                        ax_mat_of(Ch, AX_BF16, M, N));
        }
        char sh[64];
        snprintf(sh, sizeof sh, "%dx%dx%d %s%s", M, N, K, ta ? "T" : "N", tb ? "T" : "N");
        row("gemm fp32 beta=1", sh, c, 0, 1e-5);
        row("gemm bf16->bf16", sh, ch, 1, 8e-3);
        drop(a);
        drop(b);
        drop(c);
        drop(ah);
        drop(bh);
        drop(ch);
    }
    /* strided batch, bf16 inputs into fp32, a leading dimension wider than the matrix */
    int bt = 3;
    pair a = randh((size_t)bt * 64 * 96), b = randh((size_t)bt * 80 * 96), c = mk((size_t)bt * 64 * 128 * 4);
    for (int s = 0; s < 2; s++) {
        ax_mat A = ax_mat_of(s ? a.g : a.c, AX_BF16, 64, 96), B = ax_mat_of(s ? b.g : b.c, AX_BF16, 80, 96);
        ax_mat Cm = ax_mat_of(s ? c.g : c.c, AX_F32, 64, 80);
        B.stride = 80 * 96;
        Cm.ld = 128;
        Cm.stride = 64 * 128;
        (s ? G_ : C_)->gemm(bt, 1.0f, A, 0, B, 1, 0.0f, Cm);
    }
    row("gemm bf16->fp32 batched", "3 x 64x80x96 NT, ldc 128", c, 0, 1e-5);
    drop(a);
    drop(b);
    drop(c);
    /* mixed: fp32 A, bf16 B */
    pair x = randf(48 * 64, -1, 1), w = randh(64 * 32), y = mk(48 * 32 * 4);
    C_->gemm(1, 1.0f, ax_mat_of(x.c, AX_F32, 48, 64), 0, ax_mat_of(w.c, AX_BF16, 64, 32), 0, 0.0f,
             ax_mat_of(y.c, AX_F32, 48, 32));
    G_->gemm(1, 1.0f, ax_mat_of(x.g, AX_F32, 48, 64), 0, ax_mat_of(w.g, AX_BF16, 64, 32), 0, 0.0f,
             ax_mat_of(y.g, AX_F32, 48, 32));
    row("gemm fp32 x bf16", "48x32x64 NN", y, 0, 1e-5);
    drop(x);
    drop(w);
    drop(y);
}

static void casts(void) {
    size_t n = 100003;
    pair x = randf(n, -1e3f, 1e3f), h = mk(n * 2), back = mk(n * 4);
    C_->cast(h.c, AX_BF16, x.c, AX_F32, n);
    G_->cast(h.g, AX_BF16, x.g, AX_F32, n);
    row("cast fp32->bf16", "100003", h, 1, 0);
    C_->cast(back.c, AX_F32, h.c, AX_BF16, n);
    G_->cast(back.g, AX_F32, h.g, AX_BF16, n);
    row("cast bf16->fp32", "100003", back, 0, 0);
    drop(x);
    drop(h);
    drop(back);
}

/* M = 96, and a training step's 8200 rows (33 row chunks of the GPU's
 * parameter gradients, the last one partial): the CPU sums dw and db row by
 * row, the GPU in chunks (colsum.cuh), so the two round differently; a C
 * model of both orders gave 2.7e-6 at most on 8200 rows. X: solo, the
 * passes a group needs, or single, a row's passes fused (the same bits) */
static void norms(int M, const ax_reducer *X) {
    int C = 768;
    size_t n = (size_t)M * C;
    char sh[32], sc1[16];
    snprintf(sh, sizeof sh, "%dx%d", M, C);
    snprintf(sc1, sizeof sc1, "%d", M);
    pair x = randf(n, -2, 2), w = randf(C, 0.5f, 1.5f), b = randf(C, -0.5f, 0.5f), out = mk(n * 4);
    pair mean = mk(M * 4), rstd = mk(M * 4), sc = mk(2 * M * 4);
    C_->layernorm_forward(F(out), AX_F32, F(mean), F(rstd), F(x), NULL, NULL, F(w), F(b), M, C, C, 1e-5f, F(sc), X);
    G_->layernorm_forward(G(out), AX_F32, G(mean), G(rstd), G(x), NULL, NULL, G(w), G(b), M, C, C, 1e-5f, G(sc), X);
    row("layernorm fwd out", sh, out, 0, 1e-5);
    row("layernorm fwd rstd", sc1, rstd, 0, 1e-5);
    /* fused residual (x = (x + bias) + r, the same two adds on both: exact)
     * and a bf16 output: fp32 values within 1e-5 round to the same or the
     * adjacent bf16, 8e-3 ~ two bf16 ulps as for the GEMMs */
    pair xr = randf(n, -2, 2), bi = randf(C, -0.5f, 0.5f), r = randf(n, -1, 1), oh = mk(n * 2);
    C_->layernorm_forward(oh.c, AX_BF16, F(mean), F(rstd), F(xr), F(bi), F(r), F(w), F(b), M, C, C, 1e-5f, F(sc), X);
    G_->layernorm_forward(oh.g, AX_BF16, G(mean), G(rstd), G(xr), G(bi), G(r), G(w), G(b), M, C, C, 1e-5f, G(sc), X);
    row("layernorm+res x", sh, xr, 0, 0);
    row("layernorm+res out bf16", sh, oh, 1, 8e-3);
    row("layernorm+res rstd", sc1, rstd, 0, 1e-5);
    put(xr);
    C_->rmsnorm_forward(oh.c, AX_BF16, F(rstd), F(xr), NULL, F(r), F(w), M, C, C, 1e-5f, X);
    G_->rmsnorm_forward(oh.g, AX_BF16, G(rstd), G(xr), NULL, G(r), G(w), M, C, C, 1e-5f, X);
    row("rmsnorm+res x", sh, xr, 0, 0);
    row("rmsnorm+res out bf16", sh, oh, 1, 8e-3);
    drop(xr);
    drop(bi);
    drop(r);
    drop(oh);
    pair d = randf(n, -1, 1), dx = randf(n, -1, 1), dw = randf(C, -1, 1), db = randf(C, -1, 1);
    C_->layernorm_backward(F(dx), F(dw), F(db), F(d), F(x), F(w), F(mean), F(rstd), M, C, C, F(sc), X);
    G_->layernorm_backward(G(dx), G(dw), G(db), G(d), G(x), G(w), G(mean), G(rstd), M, C, C, G(sc), X);
    row("layernorm bwd dx", sh, dx, 0, 1e-5);
    row("layernorm bwd dw", sh, dw, 0, 1e-5);
    row("layernorm bwd db", sh, db, 0, 1e-5);
    C_->rmsnorm_forward(F(out), AX_F32, F(rstd), F(x), NULL, NULL, F(w), M, C, C, 1e-5f, X);
    G_->rmsnorm_forward(G(out), AX_F32, G(rstd), G(x), NULL, NULL, G(w), M, C, C, 1e-5f, X);
    row("rmsnorm fwd out", sh, out, 0, 1e-5);
    put(dx);
    put(dw); /* from the same inputs: no error carried over */
    C_->rmsnorm_backward(F(dx), F(dw), F(d), F(x), F(w), F(rstd), M, C, C, F(sc), X);
    G_->rmsnorm_backward(G(dx), G(dw), G(d), G(x), G(w), G(rstd), M, C, C, G(sc), X);
    row("rmsnorm bwd dx", sh, dx, 0, 1e-5);
    row("rmsnorm bwd dw", sh, dw, 0, 1e-5);
    drop(x);
    drop(w);
    drop(b);
    drop(out);
    drop(mean);
    drop(rstd);
    drop(sc);
    drop(d);
    drop(dx);
    drop(dw);
    drop(db);
}

/* The dtype variants and fused entries: bf16 stores of fp32 values within
 * 1e-6 round to the same or the adjacent bf16 (8e-3 ~ two bf16 ulps of the
 * largest, as for the GEMMs); a stored pre-activation is one add (or a copy)
 * rounded on both: exact. GELU's fused bias gradient sums rows in chunks on
 * the GPU (colsum.cuh), and gelu' differs by up to 4e-6: 1e-5. */
static void fused_bf16(pair gu, pair dso, int M, int Fd) {
    int R = 301, Cn = 997;
    size_t n = (size_t)R * Cn;
    pair y = randf(n, -4, 4), bias = randf(Cn, -1, 1), pre = mk(n * 2), act = mk(n * 2), d = randf(n, -1, 1);
    pair dx = mk(n * 2), db = randf(Cn, -1, 1);
    C_->bias_gelu_forward(act.c, AX_BF16, pre.c, AX_BF16, F(y), F(bias), R, Cn);
    G_->bias_gelu_forward(act.g, AX_BF16, pre.g, AX_BF16, G(y), G(bias), R, Cn);
    row("bias+gelu pre bf16", "301x997", pre, 1, 0);
    row("bias+gelu out bf16", "301x997", act, 1, 8e-3);
    put(pre); /* the backward from the same bf16 input */
    C_->gelu_backward(dx.c, AX_BF16, F(db), pre.c, AX_BF16, F(d), R, Cn);
    G_->gelu_backward(dx.g, AX_BF16, G(db), pre.g, AX_BF16, G(d), R, Cn);
    row("gelu bwd+dbias dx bf16", "301x997", dx, 1, 8e-3);
    row("gelu bwd+dbias db", "301x997", db, 0, 1e-5);
    put(y); /* a GEMM output kept in bf16: the same add rounded, exact */
    C_->bias_round(F(y), pre.c, AX_BF16, F(bias), R, Cn);
    G_->bias_round(G(y), pre.g, AX_BF16, G(bias), R, Cn);
    row("bias_round out bf16", "301x997", pre, 1, 0);
    row("bias_round y widened", "301x997", y, 0, 0);
    pair guh = mk((size_t)M * 2 * Fd * 2), soh = mk((size_t)M * Fd * 2), dguh = mk((size_t)M * 2 * Fd * 2);
    C_->swiglu_forward(soh.c, AX_BF16, guh.c, AX_BF16, F(gu), M, Fd);
    G_->swiglu_forward(soh.g, AX_BF16, guh.g, AX_BF16, G(gu), M, Fd);
    row("swiglu pre bf16", "64x1000", guh, 1, 0);
    row("swiglu out bf16", "64x1000", soh, 1, 8e-3);
    put(guh);
    C_->swiglu_backward(dguh.c, AX_BF16, guh.c, AX_BF16, F(dso), M, Fd);
    G_->swiglu_backward(dguh.g, AX_BF16, guh.g, AX_BF16, G(dso), M, Fd);
    row("swiglu bwd bf16", "64x1000", dguh, 1, 8e-3);
    pair all[] = {y, bias, pre, act, d, dx, db, guh, soh, dguh};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) drop(all[i]);
}

/* GEMM epilogues (gemm_epilogue, optional): the bias add, and bias + GELU
 * with its pre-activation, on the GEMM's fp32 product, against the CPU's
 * GEMM and separate pass (as for the GEMMs: 1e-5 fp32, 8e-3 ~ two bf16 ulps
 * rounded), and against the device's own GEMM then separate pass at the
 * same tolerances (the emulated cuBLASLt sums in the same order, so there
 * they agree bit for bit; a GPU's Lt may pick another kernel for the fused
 * GEMM). bf16 inputs may give an fp32 output with the bias alone (the
 * out-projections into the residual stream). N = 97: no leading dimension of a multiple of 8 for Lt's aux, so
 * the backend's fallback to the separate pass. */
static void epilogue_case(ax_epilogue e, ax_dtype t, ax_dtype ct, int M, int N, int K) {
    size_t sz = ax_dtype_size(ct), n = (size_t)M * N;
    pair a = t == AX_BF16 ? randh((size_t)M * K) : randf((size_t)M * K, -1, 1);
    pair w = t == AX_BF16 ? randh((size_t)N * K) : randf((size_t)N * K, -1, 1);
    pair bias = randf(N, -1, 1), y = mk(n * 4), out = mk(n * sz), pre = mk(n * sz);
    pair uo = mk(n * sz), up = mk(n * sz); /* the device's unfused results, copied into .c */
    const ax_backend *be[2] = {C_, G_};
    for (int s = 0; s < 2; s++) { /* the GEMM, then the separate pass */
        void *A = s ? a.g : a.c, *W = s ? w.g : w.c, *Y = s ? y.g : y.c, *O = s ? out.g : out.c, *P = s ? pre.g : pre.c;
        const float *b = s ? G(bias) : F(bias);
        be[s]->gemm(1, 1.0f, ax_mat_of(A, t, M, K), 0, ax_mat_of(W, t, N, K), 1, 0.0f, ax_mat_f32(Y, M, N));
        if (e == AX_EPI_BIAS) be[s]->bias_round(Y, O, ct, b, M, N);
        else be[s]->bias_gelu_forward(O, ct, P, ct, Y, b, M, N);
    }
    G_->copy(uo.c, out.g, n * sz);
    G_->copy(up.c, pre.g, n * sz);
    G_->zero(out.g, n * sz);
    G_->zero(pre.g, n * sz);
    G_->gemm_epilogue(e, ax_mat_of(a.g, t, M, K), 0, ax_mat_of(w.g, t, N, K), 1, ax_mat_of(out.g, ct, M, N), G(bias),
                      pre.g);
    G_->copy(uo.g, out.g, n * sz);
    G_->copy(up.g, pre.g, n * sz);
    int h = ct == AX_BF16;
    double tol = h ? 8e-3 : 1e-5;
    char sh[64], op[40];
    const char *name = e == AX_EPI_BIAS ? "epi bias" : "epi gelu";
    snprintf(sh, sizeof sh, "%dx%dx%d NT %s->%s", M, N, K, ax_dtype_name(t), ax_dtype_name(ct));
    snprintf(op, sizeof op, "%s out", name);
    row(op, sh, out, h, tol);
    snprintf(op, sizeof op, "%s out vs unfused", name);
    row(op, sh, uo, h, tol);
    if (e == AX_EPI_BIAS_GELU) {
        row("epi gelu pre", sh, pre, h, tol);
        row("epi gelu pre vs unfused", sh, up, h, tol);
    }
    pair all[] = {a, w, bias, y, out, pre, uo, up};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) drop(all[i]);
}

static void epilogues(void) {
    if (!G_->gemm_epilogue) return;
    for (int t = 0; t < 2; t++)
        for (int e = 0; e < 2; e++) epilogue_case((ax_epilogue)e, (ax_dtype)t, (ax_dtype)t, 192, 160, 320);
    epilogue_case(AX_EPI_BIAS, AX_BF16, AX_F32, 192, 160, 320); /* an out-projection into the fp32 residual */
    epilogue_case(AX_EPI_BIAS_GELU, AX_BF16, AX_BF16, 64, 97, 96);
}

static void pointwise(void) {
    size_t n = 300007;
    pair x = randf(n, -6, 6), d = randf(n, -1, 1), o = mk(n * 4), g = mk(n * 4);
    C_->bias_gelu_forward(F(o), AX_F32, NULL, AX_F32, F(x), NULL, 1, (int)n);
    G_->bias_gelu_forward(G(o), AX_F32, NULL, AX_F32, G(x), NULL, 1, (int)n);
    row("gelu fwd", "300007", o, 0, 1e-6);
    C_->gelu_backward(F(g), AX_F32, NULL, F(x), AX_F32, F(d), 1, (int)n);
    G_->gelu_backward(G(g), AX_F32, NULL, G(x), AX_F32, G(d), 1, (int)n);
    /* CUDA's tanhf is within 2 ulp, glibc's within 1, and the gradient's
     * x * (1 - tanh^2) terms magnify the difference: measured 1.5e-6 on an H200 */
    row("gelu bwd", "300007", g, 0, 4e-6);
    int M = 64, Fd = 1000;
    pair gu = randf((size_t)M * 2 * Fd, -5, 5), so = mk((size_t)M * Fd * 4), dso = randf((size_t)M * Fd, -1, 1);
    pair dgu = mk((size_t)M * 2 * Fd * 4);
    C_->swiglu_forward(F(so), AX_F32, NULL, AX_F32, F(gu), M, Fd);
    G_->swiglu_forward(G(so), AX_F32, NULL, AX_F32, G(gu), M, Fd);
    row("swiglu fwd", "64x1000", so, 0, 1e-6);
    C_->swiglu_backward(F(dgu), AX_F32, F(gu), AX_F32, F(dso), M, Fd);
    G_->swiglu_backward(G(dgu), AX_F32, G(gu), AX_F32, G(dso), M, Fd);
    row("swiglu bwd", "64x1000", dgu, 0, 1e-6);
    fused_bf16(gu, dso, M, Fd);
    int T = 40, nh = 3, hd = 64, ld = 5 * hd, Mr = 2 * T;
    pair cs = randf((size_t)T * hd, -1, 1), xr = randf((size_t)Mr * ld, -1, 1), pos = randi(Mr, 0, T);
    C_->rope(F(xr), ld, Mr, T, NULL, nh, hd, F(cs), 1.0f);
    G_->rope(G(xr), ld, Mr, T, NULL, nh, hd, G(cs), 1.0f);
    row("rope fwd", "80 rows, 3x64 of 320", xr, 0, 1e-6);
    put(xr); /* each op from the same inputs: no error carried over */
    C_->rope(F(xr), ld, Mr, T, pos.c, nh, hd, F(cs), -1.0f);
    G_->rope(G(xr), ld, Mr, T, pos.g, nh, hd, G(cs), -1.0f);
    row("rope bwd (positions)", "80 rows, 3x64 of 320", xr, 0, 1e-6);
    put(o);
    C_->add(F(o), F(d), n);
    G_->add(G(o), G(d), n);
    row("add", "300007", o, 0, 0);
    int R = 301, Cn = 997;
    pair y = randf((size_t)R * Cn, -1, 1), bias = randf(Cn, -1, 1), dbias = randf(Cn, -1, 1);
    C_->bias_add(F(y), F(bias), R, Cn);
    G_->bias_add(G(y), G(bias), R, Cn);
    row("bias_add", "301x997", y, 0, 0);
    C_->bias_grad(F(dbias), F(y), R, Cn);
    G_->bias_grad(G(dbias), G(y), R, Cn);
    /* the GPU sums rows in chunks (colsum.cuh), the CPU row by row: rounding
     * differs, a C model of both orders gave 6.7e-7 (301 rows), 2.7e-6 (8200) */
    row("bias_grad", "301x997", dbias, 0, 2e-6);
    int Rl = 8200, Cw = 768; /* a training step's rows: 33 row chunks, the last partial */
    pair yl = randf((size_t)Rl * Cw, -1, 1), dbl = randf(Cw, -1, 1);
    C_->bias_grad(F(dbl), F(yl), Rl, Cw);
    G_->bias_grad(G(dbl), G(yl), Rl, Cw);
    row("bias_grad", "8200x768", dbl, 0, 1e-5);
    drop(yl);
    drop(dbl);
    pair w = randf(n, -1, 1), gr = randf(n, -1, 1), m = randf(n, -0.1f, 0.1f), v = randf(n, 0, 0.01f);
    { /* three steps, every element decayed (one range over the buffer), no bf16 copy */
        int64_t whole[2] = {0, (int64_t)n};
        pair r1 = mk(sizeof whole);
        memcpy(r1.c, whole, sizeof whole);
        put(r1);
        ax_adamw_step st = {0.5f, 0.9f, 0.95f, 0.5f, 0.3f, 1e-3f, 1e-8f, 0.999f};
        for (int s = 0; s < 3; s++) {
            C_->adamw_all(F(w), F(gr), F(m), F(v), (int64_t)n, (const int64_t *)r1.c, 1, NULL, 0, st);
            G_->adamw_all(G(w), G(gr), G(m), G(v), (int64_t)n, (const int64_t *)r1.g, 1, NULL, 0, st);
        }
        drop(r1);
    }
    row("adamw w (3 steps)", "300007", w, 0, 1e-6);
    row("adamw v", "300007", v, 0, 1e-6);
    { /* the one-call AdamW: decay on three ranges (one at the start, one empty), bf16 copy of a prefix */
        int64_t rr[6] = {0, 1000, 5000, 5000, 70001, 290000};
        pair rg = mk(sizeof rr), wa = randf(n, -1, 1), ma = randf(n, -0.1f, 0.1f), va = randf(n, 0, 0.01f);
        pair wh = mk((size_t)100003 * 2);
        memcpy(rg.c, rr, sizeof rr);
        put(rg);
        ax_adamw_step st = {0.5f, 0.9f, 0.95f, 0.5f, 0.3f, 1e-3f, 1e-8f, 0.999f};
        C_->adamw_all(F(wa), F(gr), F(ma), F(va), (int64_t)n, (const int64_t *)rg.c, 3, (ax_bf16 *)wh.c, 100003, st);
        G_->adamw_all(G(wa), G(gr), G(ma), G(va), (int64_t)n, (const int64_t *)rg.g, 3, (ax_bf16 *)wh.g, 100003, st);
        row("adamw_all w", "300007, 3 decay ranges", wa, 0, 1e-6);
        row("adamw_all bf16 copy", "100003 of 300007", wh, 1, 8e-3); /* a weight 1 ulp off may round apart */
        pair acc = mk(sizeof(double));
        put(va); /* the same inputs: AdamW's moments may differ in the last bit between the backends */
        C_->wsum((double *)acc.c, F(gr), F(va), 8193);
        G_->wsum((double *)acc.g, G(gr), G(va), 8193);
        got(acc);
        double ec = *(double *)acc.c, eg = *(double *)acc.h, e = fabs(ec - eg) / fmax(fabs(ec), 1e-30);
        printf("%-24s %-30s %10.2e %8.0e  %s\n", "wsum", "8193", e, 1e-12, e <= 1e-12 ? "ok" : "FAIL");
        CHECK(e <= 1e-12, "wsum: %.17g on the device, %.17g on the CPU", eg, ec);
        drop(rg);
        drop(wa);
        drop(ma);
        drop(va);
        drop(wh);
        drop(acc);
    }
    drop(x);
    drop(d);
    drop(o);
    drop(g);
    drop(gu);
    drop(so);
    drop(dso);
    drop(dgu);
    drop(cs);
    drop(xr);
    drop(pos);
    drop(y);
    drop(bias);
    drop(dbias);
    drop(w);
    drop(gr);
    drop(m);
    drop(v);
}

static void vocab(void) {
    int M = 128, T = 32, Vl = 500, Cl = 64, v0 = 250;
    pair tok = randi(M, 0, 1000), wte = randf((size_t)Vl * Cl, -1, 1), wpe = randf((size_t)T * Cl, -1, 1);
    pair out = mk((size_t)M * Cl * 4), d = randf((size_t)M * Cl, -1, 1), dwte = mk((size_t)Vl * Cl * 4),
         dwpe = mk((size_t)T * Cl * 4);
    C_->embedding_forward(F(out), tok.c, NULL, F(wte), F(wpe), M, T, v0, Vl, Cl, &solo);
    G_->embedding_forward(G(out), tok.g, NULL, G(wte), G(wpe), M, T, v0, Vl, Cl, &solo);
    row("embedding fwd", "128 tokens, 500x64 of 1000", out, 0, 0);
    C_->embedding_backward(F(dwte), F(dwpe), F(d), tok.c, NULL, M, T, v0, Vl, Cl);
    G_->embedding_backward(G(dwte), G(dwpe), G(d), tok.g, NULL, M, T, v0, Vl, Cl);
    row("embedding bwd dwte", "500x64", dwte, 0, 0);
    row("embedding bwd dwpe", "32x64", dwpe, 0, 0);
    int Mx = 64, V = 4000, Vx = 4096; /* the last 96 columns are padding */
    pair logits = randf((size_t)Mx * Vx, -8, 8), tg = randi(Mx, 0, V), wt = randf(Mx, 0, 1), loss = mk(Mx * 4),
         sc = mk(3 * Mx * 4), ds = randf(1, 1.0f / Mx, 1.0f / Mx); /* the gradient's scale, in each one's memory */
    /* the passes of a group; the fused classifier with 16-byte loads (rows
     * 16-byte aligned; 4001 valid columns: one past the last whole pack)
     * and with single loads (rows of 4093: not aligned) */
    const struct {
        const ax_reducer *Y;
        int Vl, V;
        const char *tag, *shape;
    } xc[] = {{&solo, Vx, V, "", "64 x 4000 (4096)"},
              {&single, Vx, V + 1, " fused", "64 x 4001 (4096)"},
              {&single, Vx - 3, V, " fused", "64 x 4000 (4093)"}};
    for (int c = 0; c < 3; c++) {
        const ax_reducer *Y = xc[c].Y;
        int Vl = xc[c].Vl, Vv = xc[c].V;
        const char *tag = xc[c].tag, *shape = xc[c].shape;
        char name[64];
        pair lg = mk((size_t)Mx * Vx * 4);
        memcpy(lg.c, logits.c, (size_t)Mx * Vx * 4);
        put(lg);
        /* bf16 first, as the model runs it: the logits rounded, the gradient in place over them */
        pair dh = mk((size_t)Mx * Vx * 2);
        C_->cast(dh.c, AX_BF16, lg.c, AX_F32, (size_t)Mx * Vx);
        put(dh);
        C_->xent(dh.c, F(loss), tg.c, F(wt), Mx, Vl, 0, Vv, F(ds), dh.c, AX_BF16, F(sc), Y);
        G_->xent(dh.g, G(loss), tg.g, G(wt), Mx, Vl, 0, Vv, G(ds), dh.g, AX_BF16, G(sc), Y);
        snprintf(name, sizeof name, "xent loss bf16%s", tag);
        row(name, shape, loss, 0, 1e-5);
        snprintf(name, sizeof name, "xent dlogits bf16%s", tag);
        row(name, shape, dh, 1, 8e-3); /* a gradient 1 ulp off may round apart */
        drop(dh);
        C_->xent(F(lg), F(loss), tg.c, F(wt), Mx, Vl, 0, Vv, F(ds), F(lg), AX_F32, F(sc), Y);
        G_->xent(G(lg), G(loss), tg.g, G(wt), Mx, Vl, 0, Vv, G(ds), G(lg), AX_F32, G(sc), Y);
        snprintf(name, sizeof name, "xent loss%s", tag);
        row(name, shape, loss, 0, 1e-5);
        snprintf(name, sizeof name, "xent dlogits%s", tag);
        row(name, shape, lg, 0, 1e-5);
        drop(lg);
    }
    drop(tok);
    drop(wte);
    drop(wpe);
    drop(out);
    drop(d);
    drop(dwte);
    drop(dwpe);
    drop(logits);
    drop(tg);
    drop(wt);
    drop(loss);
    drop(sc);
}

/* The embedding backward on a step's rows: the GPU adds each table row's
 * rows in increasing row order from its value, the CPU loop's order, so the
 * two agree bit for bit (tolerance 0). Few keys: tokens in [0, 40) over the 30
 * owned from 5 (a quarter outside, skipped), runs of ~100 rows; explicit
 * positions, then positions i % T with a partial last sequence; then a
 * GPT-2-sized vocabulary. */
static void embedding_rows(void) {
    int M = 4100, Cl = 200, v0 = 5, Vl = 30, T = 128, Tn = 1000, V = 50257, Cv = 64;
    pair tok = randi(M, 0, 40), pos = randi(M, 0, T), d = randf((size_t)M * Cl, -1, 1);
    pair dwte = randf((size_t)Vl * Cl, -1, 1), dwpe = randf((size_t)T * Cl, -1, 1),
         dwpn = randf((size_t)Tn * Cl, -1, 1);
    C_->embedding_backward(F(dwte), F(dwpe), F(d), tok.c, pos.c, M, T, v0, Vl, Cl);
    G_->embedding_backward(G(dwte), G(dwpe), G(d), tok.g, pos.g, M, T, v0, Vl, Cl);
    row("embedding bwd dwte", "4100 rows, 30x200 of 40", dwte, 0, 0);
    row("embedding bwd dwpe (pos)", "4100 rows, 128x200", dwpe, 0, 0);
    put(dwte);
    C_->embedding_backward(F(dwte), F(dwpn), F(d), tok.c, NULL, M, Tn, v0, Vl, Cl);
    G_->embedding_backward(G(dwte), G(dwpn), G(d), tok.g, NULL, M, Tn, v0, Vl, Cl);
    row("embedding bwd dwte", "4100 rows, 30x200 of 40", dwte, 0, 0);
    row("embedding bwd dwpe (i%T)", "4100 rows, 1000x200", dwpn, 0, 0);
    pair tv = randi(M, 0, V), dv = randf((size_t)M * Cv, -1, 1), dwv = randf((size_t)V * Cv, -1, 1);
    C_->embedding_backward(F(dwv), NULL, F(dv), tv.c, NULL, M, T, 0, V, Cv);
    G_->embedding_backward(G(dwv), NULL, G(dv), tv.g, NULL, M, T, 0, V, Cv);
    row("embedding bwd dwte", "4100 rows, 50257x64", dwv, 0, 0);
    drop(tok);
    drop(pos);
    drop(d);
    drop(dwte);
    drop(dwpe);
    drop(dwpn);
    drop(tv);
    drop(dv);
    drop(dwv);
}

static const char *ask_name = "";

/* dt AX_F32: the tiled fp32 kernels, which differ from the CPU's only in
 * summation order (1e-5, 1e-4 for the backward's longer sums). AX_BF16: q|k|v
 * and out stored in bf16 on both; the path asked for (attention_mm.cu,
 * attention_flash.cu; the shape names the ask and the path that ran:
 * "auto:flash") against the CPU's fp32 arithmetic on the same values: the
 * probabilities, dO and dS rounded to bf16. Its
 * tolerances are 3x the worst error of a numpy emulation of that arithmetic
 * on these shapes against fp64 (out 3.6e-3, lse 4.7e-4, dqkv 2.9e-3; two
 * seeds each). The bf16 outputs compare rounded values: fp32 results closer
 * than one bf16 step round at most one step apart, at most 2^-7 of the
 * largest output, so out keeps the same 1e-2. */
static void attention(int B, int T, int Hl, int KVl, int hd, ax_dtype dt) {
    int ld = (Hl + 2 * KVl) * hd, Cl = Hl * hd, nthr = C_->threads();
    size_t nq = (size_t)B * T * ld, no = (size_t)B * T * Cl;
    int bf = dt == AX_BF16; /* q|k|v and out stored in bf16 */
    pair qkv = bf ? randh(nq) : randf(nq, -1, 1), out = mk(no * (bf ? 2 : 4)), lse = mk((size_t)B * Hl * T * 4);
    pair dout = randf(no, -1, 1), dqkv = mk(nq * 4), sc = mk(C_->attention_scratch(T, hd) * nthr * 4 + 4);
    C_->attention_forward(F(out), F(lse), F(qkv), B, T, Hl, KVl, hd, dt, F(sc), nthr);
    G_->attention_forward(G(out), G(lse), G(qkv), B, T, Hl, KVl, hd, dt, G(sc), G_->threads());
    char sh[64];
    static const char *path[] = {
        [AX_CUDA_ATTN_TILED] = "tiled", [AX_CUDA_ATTN_MM] = "mm", [AX_CUDA_ATTN_FLASH] = "flash"};
    snprintf(sh, sizeof sh, "B%d T%d H%d KV%d hd%d%s%s%s", B, T, Hl, KVl, hd, bf ? " bf16 " : "", bf ? ask_name : "",
             bf ? path[ax_cuda_attention_mode(dt, hd)] : "");
    row("attention fwd out", sh, out, bf, bf ? 1e-2 : 1e-5);
    row("attention fwd lse", sh, lse, 0, bf ? 2e-3 : 1e-5);
    put(out);
    put(lse); /* the backward from the same inputs */
    C_->attention_backward(F(dqkv), F(dout), F(out), F(lse), F(qkv), B, T, Hl, KVl, hd, dt, F(sc), nthr);
    G_->attention_backward(G(dqkv), G(dout), G(out), G(lse), G(qkv), B, T, Hl, KVl, hd, dt, G(sc), G_->threads());
    row("attention bwd dqkv", sh, dqkv, 0, bf ? 1e-2 : 1e-4);
    drop(qkv);
    drop(out);
    drop(lse);
    drop(dout);
    drop(dqkv);
    drop(sc);
}

/* ring attention's blocks (backend.h: ax_attn_block) of a sequence of nch
 * chunks of Tc rows, on the GPU: the queries of chunk c against their
 * own chunk (causal, out and lse written), then against chunks c-1 .. 0 (full,
 * merged into them), whose keys and values come from packed [k | v] copies kv[d]
 * (row stride 2 KVl hd, Tc rows a sequence: the ring's buffers). The backward
 * adds every block's share: dq in place, the off-diagonal blocks' dk, dv to
 * dkv[d], laid out as kv[d]. */
typedef struct {
    int B, nch, Tc, Hl, KVl, hd;
    ax_dtype dt;
} ring_shape;

static ax_attn_block ring_block(const ring_shape *r, const float *qkv, const float *kv, int c) {
    int T = r->nch * r->Tc, ld = (r->Hl + 2 * r->KVl) * r->hd, Cl = r->Hl * r->hd;
    const float *q = qkv + (size_t)c * r->Tc * ld;
    ax_attn_block a = {r->B, r->Hl, r->KVl, r->hd, r->Tc, r->Tc, T, T, 1, q, q + Cl, q + Cl + r->KVl * r->hd,
                       ld,   ld,    r->dt};
    if (kv) { /* an earlier chunk's packed copy */
        a.Sk = r->Tc;
        a.causal = 0;
        a.k = kv;
        a.v = kv + r->KVl * r->hd;
        a.ldk = 2 * r->KVl * r->hd;
    }
    return a;
}

static void ring_forward(const ring_shape *r, float *out, float *lse, const float *qkv, float *const *kv) {
    int Cl = r->Hl * r->hd;
    for (int c = 0; c < r->nch; c++) {
        float *o = out + (size_t)c * r->Tc * Cl, *l = lse + (size_t)c * r->Tc;
        ax_attn_block a = ring_block(r, qkv, NULL, c);
        G_->attention_block_forward(&a, o, l, 0, NULL, 1);
        for (int d = c - 1; d >= 0; d--) {
            a = ring_block(r, qkv, kv[d], c);
            G_->attention_block_forward(&a, o, l, 1, NULL, 1);
        }
    }
}

static void ring_backward(const ring_shape *r, float *dqkv, float *const *dkv, const float *dout, const float *out,
                          const float *lse, const float *qkv, float *const *kv) {
    int ld = (r->Hl + 2 * r->KVl) * r->hd, Cl = r->Hl * r->hd, KV = r->KVl * r->hd;
    for (int c = 0; c < r->nch; c++) {
        size_t qo = (size_t)c * r->Tc * ld, oo = (size_t)c * r->Tc * Cl;
        float *dq = dqkv + qo;
        ax_attn_block a = ring_block(r, qkv, NULL, c);
        G_->attention_block_backward(&a, dq, dq + Cl, dq + Cl + KV, dout + oo, out + oo, lse + c * r->Tc, NULL, 1);
        for (int d = c - 1; d >= 0; d--) {
            a = ring_block(r, qkv, kv[d], c);
            G_->attention_block_backward(&a, dq, dkv[d], dkv[d] + KV, dout + oo, out + oo, lse + c * r->Tc, NULL, 1);
        }
    }
}

/* The blocks on the GPU against the CPU's unsplit causal attention of the
 * same sequences. Chunk 0's rows check a block alone, the later chunks' the
 * merges (one and two); the dk, dv of the off-diagonal blocks are added to
 * the GPU's dqkv on the host before the comparison. Blocks run the tiles,
 * or flash where the plan picks it (never mm); tolerances as the unsplit
 * attention's on the path that ran: the merge adds a few fp32 roundings. */
#define RING_MAXCH 3
static void attention_ring(ring_shape r) {
    int T = r.nch * r.Tc, ld = (r.Hl + 2 * r.KVl) * r.hd, Cl = r.Hl * r.hd, lk = 2 * r.KVl * r.hd, nthr = C_->threads();
    size_t nq = (size_t)r.B * T * ld, no = (size_t)r.B * T * Cl, nkv = (size_t)r.B * r.Tc * lk;
    pair qkv = randf(nq, -1, 1), out = mk(no * 4), lse = mk((size_t)r.B * r.Hl * T * 4), dout = randf(no, -1, 1);
    pair dqkv = mk(nq * 4), sc = mk(C_->attention_scratch(T, r.hd) * nthr * 4 + 4), kv[RING_MAXCH], dkv[RING_MAXCH];
    float *kvg[RING_MAXCH], *dkvg[RING_MAXCH];
    for (int d = 0; d < r.nch; d++) {
        kv[d] = mk(nkv * 4);
        dkv[d] = mk(nkv * 4);
        for (int b = 0; b < r.B; b++)
            for (int i = 0; i < r.Tc; i++)
                memcpy(F(kv[d]) + ((size_t)b * r.Tc + i) * lk, F(qkv) + ((size_t)b * T + d * r.Tc + i) * ld + Cl,
                       lk * 4);
        put(kv[d]);
        kvg[d] = G(kv[d]);
        dkvg[d] = G(dkv[d]);
    }
    /* the CPU computes in fp32 whatever dt is: its fp32-stored attention is the reference */
    C_->attention_forward(F(out), F(lse), F(qkv), r.B, T, r.Hl, r.KVl, r.hd, AX_F32, F(sc), nthr);
    ring_forward(&r, G(out), G(lse), G(qkv), kvg);
    int flash = ax_cuda_attention_mode(r.dt, r.hd) == AX_CUDA_ATTN_FLASH, bf = r.dt == AX_BF16;
    char sh[80];
    snprintf(sh, sizeof sh, "B%d %dx%d H%d KV%d hd%d%s%s%s", r.B, r.nch, r.Tc, r.Hl, r.KVl, r.hd, bf ? " bf16 " : "",
             bf ? ask_name : "", bf ? (flash ? "flash" : "tiled") : "");
    row("attn blocks fwd out", sh, out, 0, flash ? 1e-2 : 1e-5);
    row("attn blocks fwd lse", sh, lse, 0, flash ? 2e-3 : 1e-5);
    put(out);
    put(lse); /* the backward from the same inputs */
    C_->attention_backward(F(dqkv), F(dout), F(out), F(lse), F(qkv), r.B, T, r.Hl, r.KVl, r.hd, AX_F32, F(sc), nthr);
    G_->zero(G(dqkv), nq * 4);
    for (int d = 0; d < r.nch; d++) G_->zero(dkvg[d], nkv * 4);
    ring_backward(&r, G(dqkv), dkvg, G(dout), G(out), G(lse), G(qkv), kvg);
    got(dqkv);
    for (int d = 0; d < r.nch; d++) { /* the off-diagonal blocks' dk, dv to chunk d's rows */
        got(dkv[d]);
        for (int b = 0; b < r.B; b++)
            for (int i = 0; i < r.Tc; i++)
                for (int e = 0; e < lk; e++)
                    ((float *)dqkv.h)[((size_t)b * T + d * r.Tc + i) * ld + Cl + e] +=
                        ((float *)dkv[d].h)[((size_t)b * r.Tc + i) * lk + e];
    }
    G_->copy(dqkv.g, dqkv.h, dqkv.bytes);
    row("attn blocks bwd dqkv", sh, dqkv, 0, flash ? 1e-2 : 1e-4);
    for (int d = 0; d < r.nch; d++) {
        drop(kv[d]);
        drop(dkv[d]);
    }
    drop(qkv);
    drop(out);
    drop(lse);
    drop(dout);
    drop(dqkv);
    drop(sc);
}

/* the gradient norm's sum of squares over ranges (one long enough for every
 * partial block, one empty): positive doubles summed in another order, so
 * within n u = 3e6 x 1.1e-16 = 3.3e-10 relative (measured 1.15e-12 on an H200) */
static void sumsq(void) {
    size_t len[3] = {3000017, 0, 777};
    pair a = randf(len[0], -1, 1), b = randf(len[2] + 5, -1, 1);
    const float *xc[3] = {F(a), F(b), F(b) + 5}, *xg[3] = {G(a), G(b), G(b) + 5};
    double c = C_->sumsq(3, xc, len), g = G_->sumsq(3, xg, len), e = fabs(g - c) / c;
    printf("%-24s %-30s %10.2e %8.0e  %s\n", "sumsq", "3 ranges: 3000017, 0, 777", e, 4e-10,
           e <= 4e-10 ? "ok" : "FAIL");
    CHECK(e <= 4e-10, "sumsq: relative error %.3g", e);
    drop(a);
    drop(b);
}

static void decode(void) {
    int nb = 3, Hl = 4, KVl = 2, hd = 64, Tmax = 40, ld = (Hl + 2 * KVl) * hd;
    pair qkv = randf((size_t)nb * ld, -1, 1), kc = randf((size_t)nb * KVl * Tmax * hd, -1, 1);
    pair vc = randf((size_t)nb * KVl * Tmax * hd, -1, 1), out = mk((size_t)nb * Hl * hd * 4), len = mk(nb * 4);
    int l[3] = {0, 5, 39};
    memcpy(len.c, l, sizeof l);
    put(len);
    C_->attention_decode(F(out), F(qkv), F(kc), F(vc), len.c, nb, Hl, KVl, hd, Tmax);
    G_->attention_decode(G(out), G(qkv), G(kc), G(vc), len.g, nb, Hl, KVl, hd, Tmax);
    row("attention_decode out", "3 rows, len 0/5/39, GQA 4/2", out, 0, 1e-5);
    row("attention_decode kcache", "3x2x40x64", kc, 0, 0);
    /* the prefill's strided copy: head 1's value rows of the qkv rows into a cache block, exactly */
    C_->copy_rows(F(vc) + 7 * hd, hd * 4, F(qkv) + (Hl + KVl + 1) * hd, (size_t)ld * 4, hd * 4, nb);
    G_->copy_rows(G(vc) + 7 * hd, hd * 4, G(qkv) + (Hl + KVl + 1) * hd, (size_t)ld * 4, hd * 4, nb);
    row("copy_rows", "3 rows of 64 at pitch 512", vc, 0, 0);
    drop(qkv);
    drop(kc);
    drop(vc);
    drop(out);
    drop(len);
}

/* The attention paths: fp32 (the tiles), then bf16 under each ask of
 * AXONN_CUDA_ATTN in turn, on shapes with partial tiles, hd 8 (which flash
 * refuses: mm, with the logged line), a training length, and grouped
 * queries 4:1 and 8:1 at hd 128, the last off the diagonal at T = 2048;
 * ring attention's blocks of the same (attention_ring) beside them.
 * small: only the first three shapes and the first blocks (for the
 * sanitizers), under the asks
 * named (none: all). The device's opt-in shared memory must be attn_plan.h's
 * figure for its architecture. */
static void attentions(int small, char **only, int nonly) {
    const ax_cuda_caps *c = ax_cuda_caps_get();
    size_t table = ax_flash_smem_limit(c->sm);
    printf("%-24s sm_%d, opt-in shared memory %zu bytes a block (attn_plan.h: %zu)\n", "device", c->sm, c->smem_optin,
           table);
    CHECK(!table || table == c->smem_optin, "sm_%d: the device's %zu bytes against the table's %zu", c->sm,
          c->smem_optin, table);
    attention(2, 100, 4, 2, 64, AX_F32);
    attention(1, 64, 2, 2, 128, AX_F32);
    attention(2, 33, 4, 4, 8, AX_F32);
    /* ring attention's blocks: partial tiles, chunks of 64 and 128 at head size 64 and 128, grouped queries */
    attention_ring((ring_shape){2, 3, 33, 4, 2, 64, AX_F32});
    if (!small) {
        attention_ring((ring_shape){2, 2, 64, 4, 2, 64, AX_F32});
        attention_ring((ring_shape){1, 3, 128, 8, 2, 128, AX_F32});
        attention_ring((ring_shape){2, 2, 128, 4, 4, 64, AX_F32});
        attention_ring((ring_shape){1, 3, 64, 2, 1, 128, AX_F32});
    }
    static const char *names[] = {"tiled:", "mm:", "flash:", "auto:"};
    int asked = c->attn_ask;
    for (int ask = AX_ATTN_ASK_TILED; ask <= AX_ATTN_ASK_AUTO; ask++) {
        int named = !nonly;
        for (int i = 0; i < nonly; i++) named |= ax_attn_ask_parse(only[i]) == ask;
        if (!named) continue;
        ax_cuda_attention_ask(ask);
        ask_name = names[ask];
        attention(2, 100, 4, 2, 64, AX_BF16);
        attention(1, 64, 2, 2, 128, AX_BF16);
        attention(2, 33, 4, 4, 8, AX_BF16);
        attention_ring((ring_shape){2, 3, 33, 4, 2, 64, AX_BF16});
        if (small) continue;
        attention_ring((ring_shape){2, 2, 64, 4, 2, 64, AX_BF16});
        attention_ring((ring_shape){1, 3, 128, 8, 2, 128, AX_BF16});
        attention(1, 1024, 2, 2, 64, AX_BF16); /* a training length: many chunk rows */
        attention(2, 256, 8, 2, 128, AX_BF16);
        attention(1, 2048, 8, 1, 128, AX_BF16);
    }
    ax_cuda_attention_ask(asked);
    ask_name = "";
}
#endif

/* test_backend_cmp [small] [attention [ASK...]]: every op, or only the
 * attention paths (under the asks named: tiled, mm, flash, auto) on small
 * shapes; small: the attention paths of every op on small shapes too (the
 * host emulation, tests/cuda_emu, where the long sequences take minutes) */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IONBF, 0); /* the table so far survives a crash */
#ifndef AX_HAVE_CUDA
    printf("SKIP backend_cmp: built without the CUDA backend\n");
    MPI_Finalize();
    return 77;
#else
    if (ax_backend_use("cuda", 0) != 0) {
        printf("SKIP backend_cmp: %s\n", ax_err_msg());
        MPI_Finalize();
        return 77;
    }
    C_ = &ax_cpu_backend;
    G_ = &ax_cuda_backend;
    printf("CUDA backend vs CPU backend on %s\n", ax_cuda_backend.gemm_kernel(AX_BF16, &(int){0}));
    printf("%-24s %-30s %10s %8s\n", "op", "shape", "max err", "tol");
    int a = 1, small = argc > a && !strcmp(argv[a], "small");
    a += small;
    if (argc > a && !strcmp(argv[a], "attention")) {
        attentions(1, argv + a + 1, argc - a - 1);
        int rc = ax_test_done("backend_cmp attention");
        MPI_Finalize();
        return rc;
    }
    gemms();
    epilogues();
    casts();
    norms(96, &solo);
    norms(96, &single);
    pointwise();
    sumsq();
    vocab();
    attentions(small, NULL, 0);
    decode();
    norms(8200, &solo);
    norms(8200, &single); /* last: the earlier cases keep their random inputs */
    embedding_rows();
    int rc = ax_test_done("backend_cmp");
    MPI_Finalize();
    return rc;
#endif
}
