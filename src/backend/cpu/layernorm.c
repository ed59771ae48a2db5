/* Exact LayerNorm and RMSNorm over columns split across a group: row sums,
 * then centred squares (RMSNorm: squares), each completed by the group's
 * reducer (two passes for LayerNorm, as stable as the serial formula). */
#include "backend/cpu/cpu.h"
#include "backend/kmath.h"
#include <math.h>
#include <omp.h>

/* row i of x after the fused residual: x = (x + bias) + r, stored back, with its sum
 * (sq: of squares) over the row's Cl columns; the plain sum when neither is given */
static float residual_row(float *x, const float *bias, const float *r, int Cl, int sq) {
    float s = 0;
    if (bias || r)
        for (int j = 0; j < Cl; j++) {
            float v = x[j];
            if (bias) v += bias[j];
            if (r) v += r[j];
            x[j] = v;
        }
    if (sq)
        for (int j = 0; j < Cl; j++) s += x[j] * x[j];
    else
        for (int j = 0; j < Cl; j++) s += x[j];
    return s;
}

void ax_cpu_layernorm_forward(void *out, ax_dtype ot, float *mean, float *rstd, float *x, const float *bias,
                              const float *r, const float *w, const float *b, int M, int Cl, int C, float eps,
                              float *scratch, const ax_reducer *X) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) mean[i] = residual_row(x + (size_t)i * Cl, bias, r ? r + (size_t)i * Cl : NULL, Cl, 0);
    X->sum(X->ctx, mean, M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *xr = x + (size_t)i * Cl;
        float m = mean[i] / C, s = 0;
        mean[i] = m;
        for (int j = 0; j < Cl; j++) {
            float d = xr[j] - m;
            s += d * d;
        }
        scratch[i] = s;
    }
    X->sum(X->ctx, scratch, M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *xr = x + (size_t)i * Cl;
        size_t o = (size_t)i * Cl;
        float m = mean[i], rs = ax_norm_rstd(scratch[i], C, eps);
        rstd[i] = rs;
        for (int j = 0; j < Cl; j++) ax_store(out, ot, o + j, ax_layernorm(xr[j], m, rs, w[j], b[j]));
    }
}

void ax_cpu_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                               const float *mean, const float *rstd, int M, int Cl, int C, float *scratch,
                               const ax_reducer *X) {
/* scratch[2i] = sum_j dxhat, scratch[2i+1] = sum_j dxhat * xhat, over all of C */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = x + (size_t)i * Cl, *d = dout + (size_t)i * Cl;
        float m = mean[i], rs = rstd[i], s1 = 0, s2 = 0;
        for (int j = 0; j < Cl; j++) {
            float dxh = d[j] * w[j];
            s1 += dxh;
            s2 += ax_layernorm_s2(dxh, r[j], m, rs);
        }
        scratch[2 * i] = s1;
        scratch[2 * i + 1] = s2;
    }
    X->sum(X->ctx, scratch, 2 * (size_t)M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = x + (size_t)i * Cl, *d = dout + (size_t)i * Cl;
        float *o = dx + (size_t)i * Cl;
        float m = mean[i], rs = rstd[i], a = scratch[2 * i] / C, c = scratch[2 * i + 1] / C;
        for (int j = 0; j < Cl; j++) o[j] += ax_layernorm_dx(r[j], d[j], w[j], m, rs, a, c);
    }
/* parameter gradients: threads own column ranges and walk the rows in
 * order, so access is contiguous and the sums deterministic */
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)Cl * t / nt), c1 = (int)((long)Cl * (t + 1) / nt);
        for (int i = 0; i < M; i++) {
            const float *r = x + (size_t)i * Cl, *d = dout + (size_t)i * Cl;
            float m = mean[i], rs = rstd[i];
            for (int j = c0; j < c1; j++) {
                dw[j] += ax_layernorm_dw(d[j], r[j], m, rs);
                db[j] += d[j];
            }
        }
    }
}

void ax_cpu_rmsnorm_forward(void *out, ax_dtype ot, float *rstd, float *x, const float *bias, const float *r,
                            const float *w, int M, int Cl, int C, float eps, const ax_reducer *X) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) rstd[i] = residual_row(x + (size_t)i * Cl, bias, r ? r + (size_t)i * Cl : NULL, Cl, 1);
    X->sum(X->ctx, rstd, M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *xr = x + (size_t)i * Cl;
        size_t o = (size_t)i * Cl;
        float rs = ax_norm_rstd(rstd[i], C, eps);
        rstd[i] = rs;
        for (int j = 0; j < Cl; j++) ax_store(out, ot, o + j, ax_rmsnorm(xr[j], rs, w[j]));
    }
}

void ax_cpu_rmsnorm_backward(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                             int M, int Cl, int C, float *scratch, const ax_reducer *X) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = x + (size_t)i * Cl, *d = dout + (size_t)i * Cl;
        float s = 0;
        for (int j = 0; j < Cl; j++) s += d[j] * w[j] * r[j];
        scratch[i] = s;
    }
    X->sum(X->ctx, scratch, M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = x + (size_t)i * Cl, *d = dout + (size_t)i * Cl;
        float *o = dx + (size_t)i * Cl, rs = rstd[i], c = ax_rmsnorm_c(scratch[i], C, rs);
        for (int j = 0; j < Cl; j++) o[j] += ax_rmsnorm_dx(r[j], d[j], w[j], rs, c);
    }
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)Cl * t / nt), c1 = (int)((long)Cl * (t + 1) / nt);
        for (int i = 0; i < M; i++) {
            const float *r = x + (size_t)i * Cl, *d = dout + (size_t)i * Cl;
            float rs = rstd[i];
            for (int j = c0; j < c1; j++) dw[j] += ax_rmsnorm_dw(d[j], r[j], rs);
        }
    }
}
