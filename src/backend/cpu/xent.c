/* Vocabulary-parallel cross-entropy: row max, sum of exponentials and target
 * logit completed over the group, then the loss and (optionally) its gradient.
 * Logits and gradient are in the dtype of the LM head's GEMMs; the
 * arithmetic is fp32 (kmath.h) either way. */
#include "backend/cpu/cpu.h"
#include "backend/kmath.h"
#include <math.h>

/* Sum over the row's nv columns from r of exp(z - m), in LANES running sums
 * (lane l takes the columns j = l mod LANES, in order) added pairwise at the
 * end: an order fixed by this code, where an omp simd reduction would leave
 * it to the compiler, which may vectorise one dtype's loop and not the
 * other's. So bf16 logits give the sums of the fp32 path on the widened
 * values, on any instruction set. ax_expf's last step multiplies by a power
 * of two into a normal float, exactly, so a fused multiply-add there changes
 * nothing either. */
#define LANES 16
static inline __attribute__((always_inline)) float sum_exp(const void *logits, ax_dtype dt, size_t r, int nv, float m) {
    float acc[LANES] = {0};
    int j0 = 0;
    for (; j0 + LANES <= nv; j0 += LANES)
#pragma omp simd
        for (int l = 0; l < LANES; l++) acc[l] += ax_expf(ax_load(logits, dt, r + j0 + l) - m);
    for (int l = 0; j0 + l < nv; l++) acc[l] += ax_expf(ax_load(logits, dt, r + j0 + l) - m);
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) acc[l] += acc[l + w];
    return acc[0];
}

/* The whole computation for one dtype: always inlined with dt a constant, so
 * each element's load and store compile to the plain fp32 or bf16 access. */
static inline __attribute__((always_inline)) void xent(const void *logits, float *losses, const int32_t *targets,
                                                       const float *weight, int M, int Vl, int v0, int nv,
                                                       const float *dscale, void *dgrad, ax_dtype dt, float *scratch,
                                                       const ax_reducer *Y) {
    float *mx = scratch, *st = scratch + M; /* st[2i] = sum exp, st[2i+1] = target logit */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        size_t r = (size_t)i * Vl;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int j = 0; j < nv; j++) {
            float z = ax_load(logits, dt, r + j);
            m = z > m ? z : m;
        }
        mx[i] = m;
    }
    Y->max(Y->ctx, mx, M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        size_t r = (size_t)i * Vl;
        int t = targets[i] - v0;
        st[2 * i] = sum_exp(logits, dt, r, nv, mx[i]);
        st[2 * i + 1] = (t >= 0 && t < nv) ? ax_load(logits, dt, r + t) : 0.0f;
    }
    Y->sum(Y->ctx, st, 2 * (size_t)M);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float lse = ax_lse(mx[i], st[2 * i]);
        losses[i] = ax_xent_loss(lse, st[2 * i + 1]);
        if (!dscale) continue;
        size_t r = (size_t)i * Vl; /* dgrad may be logits: each element is read before it is written */
        float w = weight ? weight[i] * *dscale : *dscale;
        int t = targets[i] - v0; /* out of [0, nv): no column of this rank */
#pragma omp simd
        for (int j = 0; j < nv; j++)
            ax_store(dgrad, dt, r + j, ax_xent_dlogit(ax_load(logits, dt, r + j), lse, w, j == t));
        for (int j = nv; j < Vl; j++) ax_store(dgrad, dt, r + j, 0.0f);
    }
}

void ax_cpu_xent(const void *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl, int v0,
                 int V, const float *dscale, void *dgrad, ax_dtype dt, float *scratch, const ax_reducer *Y) {
    int nv = V - v0 < Vl ? V - v0 : Vl; /* valid columns here */
    if (nv < 0) nv = 0;
    if (dt == AX_BF16) xent(logits, losses, targets, weight, M, Vl, v0, nv, dscale, dgrad, AX_BF16, scratch, Y);
    else xent(logits, losses, targets, weight, M, Vl, v0, nv, dscale, dgrad, AX_F32, scratch, Y);
}
