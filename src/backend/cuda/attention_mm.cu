/* Causal attention on the matrix units, for bf16 models (dt == AX_BF16).
 *
 * q, k and v (stored in bf16, or fp32 rounded here) are repacked per query head, (B*Hl, T, hd),
 * k and v repeated for each query head of their group. For a chunk of heads
 * at a time, one batched cuBLASLt GEMM writes the scores in fp32, a warp per
 * row takes the softmax in fp32 (kmath's, as every backend), keeps the
 * log-sum-exp and rounds the probabilities to bf16, and a second GEMM
 * multiplies them with v. The backward recomputes the scores and runs
 * dP = dO v^T, dS = P (dP - D) scale (fp32, rounded to bf16), dv = P^T dO,
 * dq = dS k and dk = dS^T q as batched GEMMs; the copies of a key/value head
 * sum their gradients in head order. Every product is a bf16 GEMM with fp32
 * accumulation, like the layers' GEMMs under --dtype bf16, and no float
 * atomics: the same bits every run.
 *
 * The (T, T) score buffers of one chunk are workspace, reused by every layer
 * (CHUNK_BYTES bounds them), so what the model keeps stays O(T) per head as
 * with the tiled kernels. The GEMMs also multiply the zeros right of the
 * diagonal: twice the causal FLOPs, on units ~15x faster than the fp32 SIMT
 * tiles of attention.cu, which fp32 models and AXONN_CUDA_ATTN=tiled use. */
#include "backend/cuda/cuda.h"
#include "backend/kmath.h"
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES    ((size_t)256 << 20) /* score-sized buffers of one chunk of heads */
#define NT             256
#define ROWS_PER_BLOCK (NT / 32)

typedef uint16_t bf16;

static unsigned grid_of(size_t n) {
    size_t b = (n + NT - 1) / NT;
    return (unsigned)(b < 65535 * 8 ? b : 65535 * 8);
}
static size_t up256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

#define EACH(t, n) \
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < (n); t += (size_t)gridDim.x * blockDim.x)

/* decided once per (ask, dtype, head size): the plan, and its line if flash
 * or auto fell back to mm */
int ax_cuda_attention_mode(ax_dtype dt, int hd) {
    static struct { int ask, dt, hd, mode; } seen[16];
    static int n;
    const ax_cuda_caps *c = ax_cuda_caps_get();
    for (int i = 0; i < n; i++)
        if (seen[i].ask == c->attn_ask && seen[i].dt == (int)dt && seen[i].hd == hd) return seen[i].mode;
    ax_attn_plan p = ax_attn_plan_make(c->attn_ask, dt == AX_BF16, hd, c->sm, c->smem_optin);
    if (p.why[0] && c->logs) fprintf(stderr, "axonn: attention: %s\n", p.why);
    if (n < 16) seen[n++] = {c->attn_ask, (int)dt, hd, p.mode};
    return p.mode;
}

/* q, k, v (B*Hl, T, hd) bf16 from qkv (B*T, (Hl + 2 KVl) hd) stored in st; n = B*Hl*T*hd */
__global__ static void pack_qkv(bf16 *q, bf16 *k, bf16 *v, const void *qkv, ax_dtype st, int T, int Hl, int KVl, int hd,
                                size_t n) {
    int ld = (Hl + 2 * KVl) * hd, grp = Hl / KVl;
    EACH(t, n) {
        size_t r = t / hd, bh = r / T, i = r % T, b = bh / Hl;
        int e = (int)(t % hd), h = (int)(bh % Hl);
        size_t row = (b * T + i) * ld;
        q[t] = ax_bf16_round(ax_load(qkv, st, row + h * hd + e));
        k[t] = ax_bf16_round(ax_load(qkv, st, row + (Hl + h / grp) * hd + e));
        v[t] = ax_bf16_round(ax_load(qkv, st, row + (Hl + KVl + h / grp) * hd + e));
    }
}

/* (B*Hl, T, hd) head-major <-> (B*T, Hl*hd) token-major, rounded to bf16 on the way in */
__global__ static void pack_heads(bf16 *dst, const float *src, int T, int Hl, int hd, size_t n) {
    EACH(t, n) {
        size_t r = t / hd, bh = r / T, i = r % T, b = bh / Hl;
        dst[t] = ax_bf16_round(src[(b * T + i) * Hl * hd + (bh % Hl) * hd + t % hd]);
    }
}

/* and back, stored in dt */
__global__ static void unpack_heads(void *dst, ax_dtype dt, const float *src, int T, int Hl, int hd, size_t n) {
    EACH(t, n) {
        size_t r = t / ((size_t)Hl * hd), b = r / T, i = r % T;
        int c = (int)(t % ((size_t)Hl * hd)), h = c / hd;
        ax_store(dst, dt, t, src[((b * Hl + h) * T + i) * hd + c % hd]);
    }
}

/* dqkv (B*T, (Hl + 2 KVl) hd) from dq, dk, dv (B*Hl, T, hd): a key/value head's
 * gradient is the sum over its group's query heads, in head order */
__global__ static void unpack_grads(float *dqkv, const float *dq, const float *dk, const float *dv, int T, int Hl,
                                    int KVl, int hd, size_t n) {
    int ld = (Hl + 2 * KVl) * hd, grp = Hl / KVl;
    EACH(t, n) {
        size_t r = t / ld, b = r / T, i = r % T;
        int c = (int)(t % ld), e = c % hd, hh = c / hd;
        float s;
        if (hh < Hl) {
            s = dq[((b * Hl + hh) * T + i) * hd + e];
        } else {
            const float *src = hh < Hl + KVl ? dk : dv;
            int kh = hh < Hl + KVl ? hh - Hl : hh - Hl - KVl;
            s = 0.0f;
            for (int h = kh * grp; h < (kh + 1) * grp; h++) s += src[((b * Hl + h) * T + i) * hd + e];
        }
        dqkv[t] = s;
    }
}

/* a warp per score row r of a chunk (query i = r % T), row stride ldS:
 * lse[r], and the row's probabilities as bf16, zeros right of the diagonal */
__global__ static void softmax_fwd(bf16 *P, float *lse, const float *S, int T, int ldS, size_t rows) {
    size_t r = blockIdx.x * (size_t)ROWS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return; /* the whole warp: r is the same for its lanes */
    int i = (int)(r % T);
    const float *s = S + r * ldS;
    bf16 *p = P + r * ldS;
    float m = -INFINITY, l = 0.0f;
    for (int j = lane; j <= i; j += 32) m = fmaxf(m, s[j]);
    m = ax_warp_max(m);
    for (int j = lane; j <= i; j += 32) l += ax_softmax_p(s[j], m);
    float ls = ax_lse(m, ax_warp_sum(l));
    for (int j = lane; j < T; j += 32) p[j] = j <= i ? ax_bf16_round(ax_softmax_p(s[j], ls)) : (bf16)0;
    if (lane == 0) lse[r] = ls;
}

/* a warp per score row: P and dS = P (dP - D) scale as bf16, zeros right of the diagonal */
__global__ static void softmax_bwd(bf16 *P, bf16 *dS, const float *S, const float *dP, const float *lse, const float *D,
                                   int T, int ldS, size_t rows, float scale) {
    size_t r = blockIdx.x * (size_t)ROWS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;
    int i = (int)(r % T);
    float li = lse[r], di = D[r];
    const float *s = S + r * ldS, *dp = dP + r * ldS;
    for (int j = lane; j < T; j += 32) {
        float p = j <= i ? ax_softmax_p(s[j], li) : 0.0f;
        P[r * ldS + j] = ax_bf16_round(p);
        dS[r * ldS + j] = j <= i ? ax_bf16_round(ax_softmax_ds(p, dp[j], di, scale)) : (bf16)0;
    }
}

/* rows x cols at p with row stride ld, a strided batch of such matrices */
static ax_mat mat(const void *p, ax_dtype t, int rows, int cols, int ld) {
    ax_mat m = ax_mat_of(p, t, rows, cols);
    m.ld = ld;
    m.stride = (int64_t)rows * ld;
    return m;
}

/* heads per chunk: as many as CHUNK_BYTES holds at `per` bytes each, at least one */
static size_t chunk_heads(size_t nbh, size_t per) {
    size_t c = CHUNK_BYTES / per;
    return c < 1 ? 1 : c > nbh ? nbh : c;
}

/* bytes carved from one workspace: each piece 256-byte aligned */
static void *carve(char **at, size_t bytes) {
    void *p = *at;
    *at += up256(bytes);
    return p;
}

void ax_cuda_attention_mm_forward(void *out, float *lse, const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl,
                                  int hd) {
    cudaStream_t s = ax_cuda_stream();
    int ldS = (T + 7) & ~7; /* bf16 rows 16-byte aligned for the GEMMs */
    size_t nbh = (size_t)B * Hl, nh = nbh * T * hd, per = (size_t)T * ldS;
    size_t c = chunk_heads(nbh, per * (sizeof(float) + sizeof(bf16)));
    char *w = (char *)ax_cuda_tmp(AX_CUDA_TMP_ATTN_MM,
                                  3 * up256(nh * 2) + up256(nh * 4) + up256(c * per * 4) + up256(c * per * 2));
    bf16 *q = (bf16 *)carve(&w, nh * 2), *k = (bf16 *)carve(&w, nh * 2), *v = (bf16 *)carve(&w, nh * 2);
    float *o = (float *)carve(&w, nh * 4), *S = (float *)carve(&w, c * per * 4);
    bf16 *P = (bf16 *)carve(&w, c * per * 2);
    float scale = ax_attn_scale(hd);
    pack_qkv<<<grid_of(nh), NT, 0, s>>>(q, k, v, qkv, st, T, Hl, KVl, hd, nh);
    AX_CUDA_DONE();
    for (size_t c0 = 0; c0 < nbh; c0 += c) {
        int nc = (int)(nbh - c0 < c ? nbh - c0 : c);
        size_t at = c0 * T * hd, rows = (size_t)nc * T;
        ax_cuda_gemm(nc, scale, mat(q + at, AX_BF16, T, hd, hd), 0, mat(k + at, AX_BF16, T, hd, hd), 1, 0.0f,
                     mat(S, AX_F32, T, T, ldS)); /* S = q k^T scale */
        softmax_fwd<<<ax_cuda_blocks(rows, ROWS_PER_BLOCK), NT, 0, s>>>(P, lse + c0 * T, S, T, ldS, rows);
        AX_CUDA_DONE();
        ax_cuda_gemm(nc, 1.0f, mat(P, AX_BF16, T, T, ldS), 0, mat(v + at, AX_BF16, T, hd, hd), 0, 0.0f,
                     mat(o + at, AX_F32, T, hd, hd)); /* o = P v */
    }
    size_t n = (size_t)B * T * Hl * hd;
    unpack_heads<<<grid_of(n), NT, 0, s>>>(out, st, o, T, Hl, hd, n);
    AX_CUDA_DONE();
}

void ax_cuda_attention_mm_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                                   ax_dtype st, int B, int T, int Hl, int KVl, int hd) {
    cudaStream_t s = ax_cuda_stream();
    int ldS = (T + 7) & ~7;
    size_t nbh = (size_t)B * Hl, nh = nbh * T * hd, per = (size_t)T * ldS;
    size_t c = chunk_heads(nbh, per * 2 * (sizeof(float) + sizeof(bf16)));
    char *w = (char *)ax_cuda_tmp(AX_CUDA_TMP_ATTN_MM, 4 * up256(nh * 2) + up256(nbh * T * 4) + 3 * up256(nh * 4) +
                                                           2 * up256(c * per * 4) + 2 * up256(c * per * 2));
    bf16 *q = (bf16 *)carve(&w, nh * 2), *k = (bf16 *)carve(&w, nh * 2), *v = (bf16 *)carve(&w, nh * 2);
    bf16 *dO = (bf16 *)carve(&w, nh * 2);
    float *D = (float *)carve(&w, nbh * T * 4);
    float *dq = (float *)carve(&w, nh * 4), *dk = (float *)carve(&w, nh * 4), *dv = (float *)carve(&w, nh * 4);
    float *S = (float *)carve(&w, c * per * 4), *dP = (float *)carve(&w, c * per * 4);
    bf16 *P = (bf16 *)carve(&w, c * per * 2), *dS = (bf16 *)carve(&w, c * per * 2);
    float scale = ax_attn_scale(hd);
    pack_qkv<<<grid_of(nh), NT, 0, s>>>(q, k, v, qkv, st, T, Hl, KVl, hd, nh);
    pack_heads<<<grid_of(nh), NT, 0, s>>>(dO, dout, T, Hl, hd, nh);
    AX_CUDA_DONE();
    ax_cuda_attention_rowdot(D, dout, out, st, B, T, Hl, hd); /* D = rowsum(dO o), fp32 */
    for (size_t c0 = 0; c0 < nbh; c0 += c) {
        int nc = (int)(nbh - c0 < c ? nbh - c0 : c);
        size_t at = c0 * T * hd, rows = (size_t)nc * T;
        ax_cuda_gemm(nc, scale, mat(q + at, AX_BF16, T, hd, hd), 0, mat(k + at, AX_BF16, T, hd, hd), 1, 0.0f,
                     mat(S, AX_F32, T, T, ldS)); /* S = q k^T scale */
        ax_cuda_gemm(nc, 1.0f, mat(dO + at, AX_BF16, T, hd, hd), 0, mat(v + at, AX_BF16, T, hd, hd), 1, 0.0f,
                     mat(dP, AX_F32, T, T, ldS)); /* dP = dO v^T */
        softmax_bwd<<<ax_cuda_blocks(rows, ROWS_PER_BLOCK), NT, 0, s>>>(P, dS, S, dP, lse + c0 * T, D + c0 * T, T, ldS,
                                                                        rows, scale);
        AX_CUDA_DONE();
        ax_cuda_gemm(nc, 1.0f, mat(P, AX_BF16, T, T, ldS), 1, mat(dO + at, AX_BF16, T, hd, hd), 0, 0.0f,
                     mat(dv + at, AX_F32, T, hd, hd)); /* dv = P^T dO */
        ax_cuda_gemm(nc, 1.0f, mat(dS, AX_BF16, T, T, ldS), 0, mat(k + at, AX_BF16, T, hd, hd), 0, 0.0f,
                     mat(dq + at, AX_F32, T, hd, hd)); /* dq = dS k */
        ax_cuda_gemm(nc, 1.0f, mat(dS, AX_BF16, T, T, ldS), 1, mat(q + at, AX_BF16, T, hd, hd), 0, 0.0f,
                     mat(dk + at, AX_F32, T, hd, hd)); /* dk = dS^T q */
    }
    size_t n = (size_t)B * T * (Hl + 2 * KVl) * hd;
    unpack_grads<<<grid_of(n), NT, 0, s>>>(dqkv, dq, dk, dv, T, Hl, KVl, hd, n);
    AX_CUDA_DONE();
}
