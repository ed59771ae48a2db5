/* Elementwise and per-column kernels: GELU, SwiGLU, rotary embeddings,
 * residual add, bias. */
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

static inline float sigmoid(float v) { return 1.0f / (1.0f + ax_expf(-v)); }

void ax_cpu_swiglu_forward(float *out, const float *gu, int M, int F) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *g = gu + (size_t)i * 2 * F, *u = g + F;
        float *o = out + (size_t)i * F;
        for (int j = 0; j < F; j++) o[j] = g[j] * sigmoid(g[j]) * u[j];
    }
}

void ax_cpu_swiglu_backward(float *dgu, const float *gu, const float *dout, int M, int F) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *g = gu + (size_t)i * 2 * F, *u = g + F, *d = dout + (size_t)i * F;
        float *dg = dgu + (size_t)i * 2 * F, *du = dg + F;
        for (int j = 0; j < F; j++) {
            float s = sigmoid(g[j]), silu = g[j] * s;
            du[j] = d[j] * silu;
            dg[j] = d[j] * u[j] * s * (1.0f + g[j] * (1.0f - s));
        }
    }
}

/* Rotates the first and second halves of each head (the Llama/NeoX layout)
 * by the angles of the row's position: cs[pos][k] = (cos, sin) of frequency k.
 * The backward is the rotation by the opposite angle (sign -1). */
void ax_cpu_rope(float *x, int ld, int M, int T, const int32_t *pos, int nh, int hd, const float *cs, float sign) {
    int half = hd / 2;
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *c = cs + (size_t)(pos ? pos[i] : i % T) * hd;
        for (int h = 0; h < nh; h++) {
            float *a = x + (size_t)i * ld + h * hd, *b = a + half;
            for (int k = 0; k < half; k++) {
                float co = c[2 * k], si = sign * c[2 * k + 1], u = a[k], v = b[k];
                a[k] = u * co - v * si;
                b[k] = v * co + u * si;
            }
        }
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
