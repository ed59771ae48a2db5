/* Elementwise and per-column kernels: GELU, residual add, bias. */
#include "backend/cpu/cpu.h"
#include "backend/cpu/vmath.h"
#include <math.h>
#include <omp.h>

#define GELU_K 0.7978845608028654f   /* sqrt(2/pi) */

void ax_cpu_gelu_forward(float *out, const float *x, size_t n) {
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + ax_tanhf(GELU_K * (v + 0.044715f * v * v * v)));
    }
}

void ax_cpu_gelu_backward(float *dx, const float *x, const float *dout, size_t n) {
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float v = x[i], u = GELU_K * (v + 0.044715f * v * v * v);
        float t = ax_tanhf(u);
        float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dout[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    }
}

void ax_cpu_add(float *y, const float *x, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void ax_cpu_bias_add(float *y, const float *bias, int M, int n) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < n; j++) y[(size_t)i * n + j] += bias[j];
}

/* threads own column ranges and walk the rows in order: deterministic sums */
void ax_cpu_bias_grad(float *db, const float *dy, int M, int n) {
    #pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)n * t / nt), c1 = (int)((long)n * (t + 1) / nt);
        for (int i = 0; i < M; i++) {
            const float *r = dy + (size_t)i * n;
            for (int j = c0; j < c1; j++) db[j] += r[j];
        }
    }
}

void ax_cpu_adamw(float *w, const float *g, float *m, float *v, int64_t n, float gscale, float b1, float b2,
                  float c1, float c2, float lr, float eps, float decay) {
    #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) {
        float gk = g[k] * gscale;
        m[k] = b1 * m[k] + (1.0f - b1) * gk;
        v[k] = b2 * v[k] + (1.0f - b2) * gk * gk;
        float mh = m[k] / c1, vh = v[k] / c2;
        w[k] = w[k] * decay - lr * mh / (sqrtf(vh) + eps);
    }
}
