#include "nn/activation.h"
#include "backend/cpu/vmath.h"

#define GELU_K 0.7978845608028654f   /* sqrt(2/pi) */

void ax_gelu_forward(float *out, const float *x, size_t n) {
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + ax_tanhf(GELU_K * (v + 0.044715f * v * v * v)));
    }
}

void ax_gelu_backward(float *dx, const float *x, const float *dout, size_t n) {
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float v = x[i], u = GELU_K * (v + 0.044715f * v * v * v);
        float t = ax_tanhf(u);
        float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dout[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    }
}

void ax_add_inplace(float *y, const float *x, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}
