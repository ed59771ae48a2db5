/* Exact LayerNorm over columns split across a group: row sums, then centred
 * squares, each completed by the group's reducer (two passes, as stable as
 * the serial two-pass formula). */
#include "backend/cpu/cpu.h"
#include <math.h>
#include <omp.h>

void ax_cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                              int M, int Cl, int C, float *scratch, const ax_reducer *X) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = x + (size_t)i * Cl;
        float s = 0; for (int j = 0; j < Cl; j++) s += r[j];
        mean[i] = s;
    }
    X->sum(X->ctx, mean, M);
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = x + (size_t)i * Cl;
        float m = mean[i] / C, s = 0;
        mean[i] = m;
        for (int j = 0; j < Cl; j++) { float d = r[j] - m; s += d * d; }
        scratch[i] = s;
    }
    X->sum(X->ctx, scratch, M);
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = x + (size_t)i * Cl;
        float *o = out + (size_t)i * Cl, m = mean[i];
        float rs = 1.0f / sqrtf(scratch[i] / C + 1e-5f);
        rstd[i] = rs;
        for (int j = 0; j < Cl; j++) o[j] = (r[j] - m) * rs * w[j] + b[j];
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
            s1 += dxh; s2 += dxh * (r[j] - m) * rs;
        }
        scratch[2 * i] = s1; scratch[2 * i + 1] = s2;
    }
    X->sum(X->ctx, scratch, 2 * (size_t)M);
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = x + (size_t)i * Cl, *d = dout + (size_t)i * Cl;
        float *o = dx + (size_t)i * Cl;
        float m = mean[i], rs = rstd[i], a = scratch[2 * i] / C, c = scratch[2 * i + 1] / C;
        for (int j = 0; j < Cl; j++) {
            float xh = (r[j] - m) * rs;
            o[j] += rs * (d[j] * w[j] - a - xh * c);
        }
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
            for (int j = c0; j < c1; j++) { dw[j] += d[j] * (r[j] - m) * rs; db[j] += d[j]; }
        }
    }
}
