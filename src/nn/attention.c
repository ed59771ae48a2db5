#include "nn/attention.h"
#include "backend/cpu/gemm.h"
#include <math.h>
#include "backend/cpu/vmath.h"
#include <omp.h>
#include <string.h>

void ax_attention_forward(float *out, float *att, const float *qkv, int B, int T, int Hl, int hd) {
    int Cl = Hl * hd, ld = 3 * Cl;
    float scale = 1.0f / sqrtf((float)hd);
    #pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * Hl; bh++) {
        int b = bh / Hl, h = bh % Hl;
        const float *q = qkv + (size_t)b * T * ld + h * hd, *k = q + Cl, *v = q + 2 * Cl;
        float *a = att + (size_t)bh * T * T;
        ax_gemm(0, 1, T, T, hd, scale, q, ld, k, ld, 0.0f, a, T);   /* scores (T, T) */
        for (int i = 0; i < T; i++) {
            float *r = a + (size_t)i * T, mx = -INFINITY, s = 0;
            for (int j = 0; j <= i; j++) mx = r[j] > mx ? r[j] : mx;
            #pragma omp simd reduction(+ : s)
            for (int j = 0; j <= i; j++) { r[j] = ax_expf(r[j] - mx); s += r[j]; }
            float inv = 1.0f / s;
            for (int j = 0; j <= i; j++) r[j] *= inv;
            for (int j = i + 1; j < T; j++) r[j] = 0.0f;
        }
        ax_gemm(0, 0, T, hd, T, 1.0f, a, T, v, ld, 0.0f, out + (size_t)b * T * Cl + h * hd, Cl);
    }
}

void ax_attention_backward(float *dqkv, const float *dout, const float *att, const float *qkv,
                           int B, int T, int Hl, int hd, float *scratch) {
    int Cl = Hl * hd, ld = 3 * Cl;
    float scale = 1.0f / sqrtf((float)hd);
    #pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * Hl; bh++) {
        int b = bh / Hl, h = bh % Hl;
        size_t off = (size_t)b * T * ld + h * hd;
        const float *q = qkv + off, *k = q + Cl, *v = q + 2 * Cl;
        float *dq = dqkv + off, *dk = dq + Cl, *dv = dq + 2 * Cl;
        const float *a = att + (size_t)bh * T * T, *dO = dout + (size_t)b * T * Cl + h * hd;
        float *ds = scratch + (size_t)omp_get_thread_num() * T * T;
        ax_gemm(1, 0, T, hd, T, 1.0f, a, T, dO, Cl, 0.0f, dv, ld);     /* dv = att^T dO */
        ax_gemm(0, 1, T, T, hd, 1.0f, dO, Cl, v, ld, 0.0f, ds, T);     /* datt = dO v^T */
        for (int i = 0; i < T; i++) {                                  /* softmax backward */
            const float *ar = a + (size_t)i * T;
            float *dr = ds + (size_t)i * T, dot = 0;
            for (int j = 0; j <= i; j++) dot += ar[j] * dr[j];
            for (int j = 0; j <= i; j++) dr[j] = ar[j] * (dr[j] - dot) * scale;
            for (int j = i + 1; j < T; j++) dr[j] = 0.0f;
        }
        ax_gemm(0, 0, T, hd, T, 1.0f, ds, T, k, ld, 0.0f, dq, ld);     /* dq = ds k */
        ax_gemm(1, 0, T, hd, T, 1.0f, ds, T, q, ld, 0.0f, dk, ld);     /* dk = ds^T q */
    }
}
