/* Vocabulary-parallel cross-entropy, one block per row: max, then sum of
 * exponentials and target logit, each completed over the vocabulary group by
 * its reducer; then the loss and, when dscale is not NULL, the gradient. Logits and
 * gradient are in the dtype of the LM head's GEMMs (fp32 arithmetic either
 * way); the gradient may overwrite the logits (each thread reads an element
 * before it writes it). A group of one rank (the reducer's `single`) takes
 * the fused classifier instead: one kernel, the row read once for an online
 * softmax (each thread's running max and sum, merged across the block) and
 * once more for the gradient, written in the logits' dtype; 16 bytes a load
 * and a store where the rows are 16-byte aligned. The dtype is a template
 * argument there, not a branch per element. */
#include "backend/cuda/cuda.h"
#include "backend/kmath.h"

#define NT 512

__global__ static void row_max(float *mx, const void *logits, ax_dtype dt, int Vl, int nv) {
    size_t r = (size_t)blockIdx.x * Vl;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < nv; j += NT) m = fmaxf(m, ax_load(logits, dt, r + j));
    m = ax_block_max(m);
    if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

__global__ static void row_sum_exp(float *st, const float *mx, const void *logits, ax_dtype dt, const int32_t *targets,
                                   int Vl, int v0, int nv) {
    size_t r = (size_t)blockIdx.x * Vl;
    float m = mx[blockIdx.x], s = 0;
    for (int j = threadIdx.x; j < nv; j += NT) s += ax_expf(ax_load(logits, dt, r + j) - m);
    s = ax_block_sum(s);
    if (threadIdx.x == 0) {
        int t = targets[blockIdx.x] - v0;
        st[2 * blockIdx.x] = s;
        st[2 * blockIdx.x + 1] = t >= 0 && t < nv ? ax_load(logits, dt, r + t) : 0.0f;
    }
}

__global__ static void loss_grad(const void *logits, float *losses, const float *mx, const float *st,
                                 const int32_t *targets, const float *weight, int Vl, int v0, int nv,
                                 const float *dscale, void *dgrad, ax_dtype dt) {
    int i = blockIdx.x;
    float lse = ax_lse(mx[i], st[2 * i]);
    if (threadIdx.x == 0) losses[i] = ax_xent_loss(lse, st[2 * i + 1]);
    if (!dscale) return;
    size_t r = (size_t)i * Vl;
    float w = weight ? weight[i] * *dscale : *dscale;
    int t = targets[i] - v0; /* dgrad may be logits: each element read before it is written */
    for (int j = threadIdx.x; j < Vl; j += NT)
        ax_store(dgrad, dt, r + j, j < nv ? ax_xent_dlogit(ax_load(logits, dt, r + j), lse, w, j == t) : 0.0f);
}

/* 16 bytes of a row, 8 bf16 or 4 fp32: one 128-bit load or store */
typedef union __align__(16) {
    uint16_t h[8];
    float f[4];
}
pack16;

/* E elements of dtype DT at element `at` of p, loaded and stored: a pack16
 * (at a multiple of E, p 16-byte aligned); E = 1, one element */
template <ax_dtype DT, int E> struct row_io {
    __device__ static void load(float *v, const void *p, size_t at) {
        pack16 q = *(const pack16 *)((const char *)p + at * (DT == AX_BF16 ? 2 : 4));
        for (int k = 0; k < E; k++) v[k] = DT == AX_BF16 ? ax_bf16_widen(q.h[k]) : q.f[k];
    }
    __device__ static void store(void *p, size_t at, const float *v) {
        pack16 q;
        for (int k = 0; k < E; k++) {
            if (DT == AX_BF16) q.h[k] = ax_bf16_round(v[k]);
            else q.f[k] = v[k];
        }
        *(pack16 *)((char *)p + at * (DT == AX_BF16 ? 2 : 4)) = q;
    }
};
template <ax_dtype DT> struct row_io<DT, 1> {
    __device__ static void load(float *v, const void *p, size_t at) { v[0] = ax_load(p, DT, at); }
    __device__ static void store(void *p, size_t at, const float *v) { ax_store(p, DT, at, v[0]); }
};

/* one element into this thread's online softmax: running max m, sum s of exp(x - m) */
__device__ static inline void online(float v, float *m, float *s) {
    if (v > *m) {
        *s = *s * ax_softmax_rescale(*m, v) + 1.0f;
        *m = v;
    } else *s += ax_softmax_p(v, *m);
}

/* the fused classifier, DT the logits' dtype at compile time, E elements a
 * load (E > 1: 16 bytes, the rows 16-byte aligned; the valid columns past
 * the last whole pack one at a time): row i's loss, and with dscale its
 * gradient (in place over the logits allowed: every thread reads the target
 * logit before the block's first barrier, and each element before it
 * writes it) */
template <ax_dtype DT, int E>
__global__ static void fused(const void *logits, float *losses, const int32_t *targets, const float *weight, int Vl,
                             int v0, int nv, const float *dscale, void *dgrad) {
    int i = blockIdx.x, t = targets[i] - v0, nw = nv / E * E;
    size_t r = (size_t)i * Vl;
    float tl = t >= 0 && t < nv ? ax_load(logits, DT, r + t) : 0.0f, m = -INFINITY, s = 0.0f, v[E];
    for (int j = threadIdx.x * E; j < nw; j += NT * E) { /* this thread's online softmax */
        row_io<DT, E>::load(v, logits, r + j);
        for (int k = 0; k < E; k++) online(v[k], &m, &s);
    }
    for (int j = nw + threadIdx.x; j < nv; j += NT) online(ax_load(logits, DT, r + j), &m, &s);
    float mx = ax_block_max(m);
    float lse = ax_lse(mx, ax_block_sum(m == -INFINITY ? 0.0f : s * ax_softmax_rescale(m, mx)));
    if (threadIdx.x == 0) losses[i] = ax_xent_loss(lse, tl);
    if (!dscale) return;
    float w = weight ? weight[i] * *dscale : *dscale;
    for (int j = threadIdx.x * E; j < Vl; j += NT * E) { /* Vl a multiple of E */
        row_io<DT, E>::load(v, logits, r + j);
        for (int k = 0; k < E; k++) v[k] = j + k < nv ? ax_xent_dlogit(v[k], lse, w, j + k == t) : 0.0f;
        row_io<DT, E>::store(dgrad, r + j, v);
    }
}

/* the fused classifier's launch: 16-byte loads where every row starts 16-byte aligned */
template <ax_dtype DT>
static void fused_launch(const void *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl,
                         int v0, int nv, const float *dscale, void *dgrad) {
    const int es = DT == AX_BF16 ? 2 : 4;
    int vec = (uintptr_t)logits % 16 == 0 && (!dscale || (uintptr_t)dgrad % 16 == 0) && (size_t)Vl * es % 16 == 0;
    cudaStream_t s = ax_cuda_stream();
    if (vec) fused<DT, 16 / es><<<M, NT, 0, s>>>(logits, losses, targets, weight, Vl, v0, nv, dscale, dgrad);
    else fused<DT, 1><<<M, NT, 0, s>>>(logits, losses, targets, weight, Vl, v0, nv, dscale, dgrad);
}

void ax_cuda_xent(const void *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl, int v0,
                  int V, const float *dscale, void *dgrad, ax_dtype dt, float *scratch, const ax_reducer *Y) {
    int nv = V - v0 < Vl ? V - v0 : Vl; /* valid columns here */
    if (nv < 0) nv = 0;
    if (M == 0) return;
    cudaStream_t s = ax_cuda_stream();
    if (Y->single) {
        if (dt == AX_BF16) fused_launch<AX_BF16>(logits, losses, targets, weight, M, Vl, v0, nv, dscale, dgrad);
        else fused_launch<AX_F32>(logits, losses, targets, weight, M, Vl, v0, nv, dscale, dgrad);
        AX_CUDA_DONE();
        return;
    }
    float *mx = scratch, *st = scratch + M;
    row_max<<<M, NT, 0, s>>>(mx, logits, dt, Vl, nv);
    AX_CUDA_DONE();
    Y->max(Y->ctx, mx, M);
    row_sum_exp<<<M, NT, 0, s>>>(st, mx, logits, dt, targets, Vl, v0, nv);
    AX_CUDA_DONE();
    Y->sum(Y->ctx, st, 2 * (size_t)M);
    loss_grad<<<M, NT, 0, s>>>(logits, losses, mx, st, targets, weight, Vl, v0, nv, dscale, dgrad, dt);
    AX_CUDA_DONE();
}
