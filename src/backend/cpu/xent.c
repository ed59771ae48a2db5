/* Vocabulary-parallel cross-entropy: row max, sum of exponentials and target
 * logit completed over the group, then the loss and (optionally) its gradient. */
#include "backend/cpu/cpu.h"
#include "backend/kmath.h"
#include <math.h>

void ax_cpu_xent(float *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl, int v0,
                 int V, float dscale, float *scratch, const ax_reducer *Y) {
    int nv = V - v0 < Vl ? V - v0 : Vl; /* valid columns here */
    if (nv < 0) nv = 0;
    float *mx = scratch, *st = scratch + M; /* st[2i] = sum exp, st[2i+1] = target logit */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = logits + (size_t)i * Vl;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int j = 0; j < nv; j++) m = r[j] > m ? r[j] : m;
        mx[i] = m;
    }
    Y->max(Y->ctx, mx, M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *r = logits + (size_t)i * Vl;
        float m = mx[i], s = 0;
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < nv; j++) s += ax_expf(r[j] - m);
        int t = targets[i] - v0;
        st[2 * i] = s;
        st[2 * i + 1] = (t >= 0 && t < nv) ? r[t] : 0.0f;
    }
    Y->sum(Y->ctx, st, 2 * (size_t)M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float lse = ax_lse(mx[i], st[2 * i]);
        losses[i] = ax_xent_loss(lse, st[2 * i + 1]);
        if (dscale == 0.0f) continue;
        float *r = logits + (size_t)i * Vl, w = weight ? weight[i] * dscale : dscale;
        int t = targets[i] - v0;
#pragma omp simd
        for (int j = 0; j < nv; j++) r[j] = ax_xent_grad(r[j], lse, w);
        for (int j = nv; j < Vl; j++) r[j] = 0.0f;
        if (t >= 0 && t < nv) r[t] -= w;
    }
}
