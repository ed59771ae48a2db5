/* Vocabulary-parallel cross-entropy: row max, sum of exponentials and target
 * logit completed over the group, then the loss and (optionally) its gradient,
 * written in the dtype of the GEMMs that read it. */
#include "backend/cpu/cpu.h"
#include "backend/kmath.h"
#include <math.h>

void ax_cpu_xent(const float *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl, int v0,
                 int V, float dscale, void *dgrad, ax_dtype dt, float *scratch, const ax_reducer *Y) {
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
        const float *r = logits + (size_t)i * Vl;
        float w = weight ? weight[i] * dscale : dscale;
        int t = targets[i] - v0; /* out of [0, nv): no column of this rank */
        if (dt == AX_BF16) {
            ax_bf16 *d = (ax_bf16 *)dgrad + (size_t)i * Vl;
#pragma omp simd
            for (int j = 0; j < nv; j++) d[j] = ax_bf16_round(ax_xent_dlogit(r[j], lse, w, j == t));
            for (int j = nv; j < Vl; j++) d[j] = 0; /* bf16 +0 */
        } else {
            float *d = (float *)dgrad + (size_t)i * Vl; /* may be r: each element read before it is written */
#pragma omp simd
            for (int j = 0; j < nv; j++) d[j] = ax_xent_dlogit(r[j], lse, w, j == t);
            for (int j = nv; j < Vl; j++) d[j] = 0.0f;
        }
    }
}
