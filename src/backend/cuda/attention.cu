/* Causal attention, tiled flash-style: a warp per query row (forward, dq) or
 * per key row (dk, dv), key or query tiles of 32 rows staged in shared memory,
 * one row of a tile per lane for the scores, the head dimension split over
 * the lanes for the accumulators. Online softmax in the forward, which saves
 * the row's log-sum-exp; the backward recomputes the probabilities from it.
 * Every output element is written by one warp that walks its inputs in order:
 * no atomics, results independent of the launch. Head dimension at most 128.
 * Softmax pieces from backend/kmath.h. These run fp32 models (and, with
 * AXONN_CUDA_ATTN=tiled, bf16 ones); bf16 models otherwise run on the matrix
 * units (attention_mm.cu, or attention_flash.cu under AXONN_CUDA_ATTN=flash). */
#include "backend/cuda/cuda.h"
#include "backend/kmath.h"

#define TK    32 /* rows of a staged tile: one per lane */
#define BR    8  /* rows a block owns: one per warp */
#define MAXHD 128
#define NC    (MAXHD / 32)

static void check_hd(int hd) {
    if (hd > MAXHD) ax_fatal(__FILE__, __LINE__, "CUDA attention: head dimension %d > %d", hd, MAXHD);
}

/* rows [r0, r0 + n) of one head (row stride ld, head at column off) into s (row stride sld); zeros past T */
__device__ static void stage(float *s, int sld, const float *src, size_t ld, int r0, int n, int T, int hd) {
    for (int k = threadIdx.x; k < n * hd; k += blockDim.x) {
        int r = k / hd, e = k % hd;
        s[r * sld + e] = r0 + r < T ? src[(size_t)(r0 + r) * ld + e] : 0.0f;
    }
}

__device__ static float dot(const float *a, const float *b, int hd) {
    float d = 0;
    for (int e = 0; e < hd; e++) d += a[e] * b[e];
    return d;
}

/* One tile of the online softmax for a query row held by a warp: this lane's
 * score s (of a key kept when valid), the running max m and sum l, and the
 * accumulators o (NC per lane) over the tile's nk value rows at V (stride hd).
 * Training's forward and KV-cache decoding share it. */
__device__ static void online_tile(float s, int valid, float &m, float &l, float *o, const float *V, int nk, int hd,
                                   int lane) {
    float mn = fmaxf(m, ax_warp_max(s));
    float c = m == -INFINITY ? 0.0f : ax_softmax_rescale(m, mn);
    float p = valid ? ax_softmax_p(s, mn) : 0.0f;
    l = l * c + ax_warp_sum(p);
    m = mn;
#pragma unroll
    for (int q = 0; q < NC; q++) o[q] *= c;
    for (int jj = 0; jj < nk; jj++) {
        float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
        for (int q = 0; q < NC; q++)
            if (lane + 32 * q < hd) o[q] += pj * V[jj * hd + lane + 32 * q];
    }
}

__global__ static void fwd(float *out, float *lse, const float *qkv, int T, int Hl, int KVl, int hd) {
    extern __shared__ float sm[];
    float *Ks = sm, *Vs = Ks + TK * (hd + 1), *Qs = Vs + TK * hd;
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, bh = blockIdx.y, b = bh / Hl, h = bh % Hl;
    int Cl = Hl * hd, ld = (Hl + 2 * KVl) * hd, i0 = blockIdx.x * BR, i = i0 + w;
    const float *base = qkv + (size_t)b * T * ld, *k = base + Cl + (h / (Hl / KVl)) * hd, *v = k + KVl * hd;
    float scale = ax_attn_scale(hd), m = -INFINITY, l = 0, o[NC] = {0};
    stage(Qs, hd, base + h * hd, ld, i0, BR, T, hd);
    int last = min(i0 + BR, T) - 1;
    for (int j0 = 0; j0 <= last; j0 += TK) {
        __syncthreads();
        stage(Ks, hd + 1, k, ld, j0, TK, T, hd);
        stage(Vs, hd, v, ld, j0, TK, T, hd);
        __syncthreads();
        if (i >= T || j0 > i) continue; /* warp-uniform */
        int j = j0 + lane, nk = min(TK, i - j0 + 1);
        float s = j <= i ? scale * dot(Qs + w * hd, Ks + lane * (hd + 1), hd) : -INFINITY;
        online_tile(s, j <= i, m, l, o, Vs, nk, hd, lane);
    }
    if (i >= T) return;
    float inv = 1.0f / l, *orow = out + ((size_t)b * T + i) * Cl + h * hd;
#pragma unroll
    for (int q = 0; q < NC; q++)
        if (lane + 32 * q < hd) orow[lane + 32 * q] = o[q] * inv;
    if (lane == 0) lse[(size_t)bh * T + i] = ax_lse(m, l);
}

void ax_cuda_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int Hl, int KVl, int hd,
                               ax_dtype dt, float *scratch, int nthr) {
    if (!B || !T || !Hl) return;
    int mode = ax_cuda_attention_mode(dt, hd);
    if (mode == AX_CUDA_ATTN_MM) {
        ax_cuda_attention_mm_forward(out, lse, qkv, B, T, Hl, KVl, hd);
        return;
    }
    if (mode == AX_CUDA_ATTN_FLASH) {
        ax_cuda_attention_flash_forward(out, lse, qkv, B, T, Hl, KVl, hd);
        return;
    }
    check_hd(hd);
    dim3 grid((T + BR - 1) / BR, B * Hl);
    size_t smem = sizeof(float) * (TK * (hd + 1) + TK * hd + BR * hd);
    fwd<<<grid, 32 * BR, smem, ax_cuda_stream()>>>(out, lse, qkv, T, Hl, KVl, hd);
    AX_CUDA_DONE();
}

/* D_i = dO_i . O_i, a warp per row */
__global__ static void row_d(float *D, const float *dout, const float *out, int T, int Hl, int hd) {
    int lane = threadIdx.x % 32, i = blockIdx.x * BR + threadIdx.x / 32, bh = blockIdx.y, b = bh / Hl, h = bh % Hl;
    if (i >= T) return;
    size_t o = ((size_t)b * T + i) * Hl * hd + h * hd;
    float d = 0;
    for (int e = lane; e < hd; e += 32) d += dout[o + e] * out[o + e];
    d = ax_warp_sum(d);
    if (lane == 0) D[(size_t)bh * T + i] = d;
}

void ax_cuda_attention_rowdot(float *D, const float *dout, const float *out, int B, int T, int Hl, int hd) {
    row_d<<<dim3((T + BR - 1) / BR, B * Hl), 32 * BR, 0, ax_cuda_stream()>>>(D, dout, out, T, Hl, hd);
    AX_CUDA_DONE();
}

/* dq of query rows, a warp each, over key tiles */
__global__ static void bwd_dq(float *dqkv, const float *dout, const float *lse, const float *D, const float *qkv, int T,
                              int Hl, int KVl, int hd) {
    extern __shared__ float sm[];
    float *Ks = sm, *Vs = Ks + TK * (hd + 1), *Qs = Vs + TK * (hd + 1), *dOs = Qs + BR * hd;
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, bh = blockIdx.y, b = bh / Hl, h = bh % Hl;
    int Cl = Hl * hd, ld = (Hl + 2 * KVl) * hd, i0 = blockIdx.x * BR, i = i0 + w;
    const float *base = qkv + (size_t)b * T * ld, *k = base + Cl + (h / (Hl / KVl)) * hd, *v = k + KVl * hd;
    float scale = ax_attn_scale(hd), dq[NC] = {0};
    stage(Qs, hd, base + h * hd, ld, i0, BR, T, hd);
    stage(dOs, hd, dout + (size_t)b * T * Cl + h * hd, Cl, i0, BR, T, hd);
    float li = i < T ? lse[(size_t)bh * T + i] : 0.0f, di = i < T ? D[(size_t)bh * T + i] : 0.0f;
    int last = min(i0 + BR, T) - 1;
    for (int j0 = 0; j0 <= last; j0 += TK) {
        __syncthreads();
        stage(Ks, hd + 1, k, ld, j0, TK, T, hd);
        stage(Vs, hd + 1, v, ld, j0, TK, T, hd);
        __syncthreads();
        if (i >= T || j0 > i) continue;
        int j = j0 + lane, nk = min(TK, i - j0 + 1);
        float ds = 0.0f;
        if (j <= i) {
            float p = ax_softmax_p(scale * dot(Qs + w * hd, Ks + lane * (hd + 1), hd), li);
            ds = ax_softmax_ds(p, dot(dOs + w * hd, Vs + lane * (hd + 1), hd), di, scale);
        }
        for (int jj = 0; jj < nk; jj++) {
            float sj = __shfl_sync(0xffffffffu, ds, jj);
#pragma unroll
            for (int q = 0; q < NC; q++)
                if (lane + 32 * q < hd) dq[q] += sj * Ks[jj * (hd + 1) + lane + 32 * q];
        }
    }
    if (i >= T) return;
    float *row = dqkv + ((size_t)b * T + i) * ld + h * hd;
#pragma unroll
    for (int q = 0; q < NC; q++)
        if (lane + 32 * q < hd) row[lane + 32 * q] = dq[q];
}

/* dk, dv of key rows, a warp each, over every query head of the group and the query tiles that see them */
__global__ static void bwd_dkv(float *dqkv, const float *dout, const float *lse, const float *D, const float *qkv,
                               int T, int Hl, int KVl, int hd) {
    extern __shared__ float sm[];
    float *Qs = sm, *dOs = Qs + TK * (hd + 1), *ks = dOs + TK * (hd + 1), *vs = ks + BR * hd;
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, bk = blockIdx.y, b = bk / KVl, kh = bk % KVl;
    int Cl = Hl * hd, ld = (Hl + 2 * KVl) * hd, j0 = blockIdx.x * BR, j = j0 + w, grp = Hl / KVl;
    const float *base = qkv + (size_t)b * T * ld, *k = base + Cl + kh * hd, *v = k + KVl * hd;
    float scale = ax_attn_scale(hd), dk[NC] = {0}, dv[NC] = {0};
    stage(ks, hd, k, ld, j0, BR, T, hd);
    stage(vs, hd, v, ld, j0, BR, T, hd);
    for (int h = kh * grp; h < (kh + 1) * grp; h++) {
        size_t bh = (size_t)b * Hl + h;
        for (int i0 = j0; i0 < T; i0 += TK) {
            __syncthreads();
            stage(Qs, hd + 1, base + h * hd, ld, i0, TK, T, hd);
            stage(dOs, hd + 1, dout + (size_t)b * T * Cl + h * hd, Cl, i0, TK, T, hd);
            __syncthreads();
            if (j >= T) continue;
            int i = i0 + lane;
            float p = 0.0f, ds = 0.0f;
            if (i >= j && i < T) {
                p = ax_softmax_p(scale * dot(Qs + lane * (hd + 1), ks + w * hd, hd), lse[bh * T + i]);
                ds = ax_softmax_ds(p, dot(dOs + lane * (hd + 1), vs + w * hd, hd), D[bh * T + i], scale);
            }
            int n = min(TK, T - i0);
            for (int ii = 0; ii < n; ii++) {
                float pi = __shfl_sync(0xffffffffu, p, ii), si = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
                for (int q = 0; q < NC; q++)
                    if (lane + 32 * q < hd) {
                        dv[q] += pi * dOs[ii * (hd + 1) + lane + 32 * q];
                        dk[q] += si * Qs[ii * (hd + 1) + lane + 32 * q];
                    }
            }
        }
    }
    if (j >= T) return;
    float *dkr = dqkv + ((size_t)b * T + j) * ld + Cl + kh * hd, *dvr = dkr + KVl * hd;
#pragma unroll
    for (int q = 0; q < NC; q++)
        if (lane + 32 * q < hd) {
            dkr[lane + 32 * q] = dk[q];
            dvr[lane + 32 * q] = dv[q];
        }
}

void ax_cuda_attention_backward(float *dqkv, const float *dout, const float *out, const float *lse, const float *qkv,
                                int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr) {
    if (!B || !T || !Hl) return;
    int mode = ax_cuda_attention_mode(dt, hd);
    if (mode == AX_CUDA_ATTN_MM) {
        ax_cuda_attention_mm_backward(dqkv, dout, out, lse, qkv, B, T, Hl, KVl, hd);
        return;
    }
    if (mode == AX_CUDA_ATTN_FLASH) {
        ax_cuda_attention_flash_backward(dqkv, dout, out, lse, qkv, B, T, Hl, KVl, hd);
        return;
    }
    check_hd(hd);
    cudaStream_t s = ax_cuda_stream();
    float *D = (float *)ax_cuda_tmp(AX_CUDA_TMP_ATTN, sizeof(float) * B * Hl * T);
    dim3 gq((T + BR - 1) / BR, B * Hl), gk((T + BR - 1) / BR, B * KVl);
    size_t smem = sizeof(float) * (2 * TK * (hd + 1) + 2 * BR * hd);
    ax_cuda_attention_rowdot(D, dout, out, B, T, Hl, hd);
    bwd_dq<<<gq, 32 * BR, smem, s>>>(dqkv, dout, lse, D, qkv, T, Hl, KVl, hd);
    bwd_dkv<<<gk, 32 * BR, smem, s>>>(dqkv, dout, lse, D, qkv, T, Hl, KVl, hd);
    AX_CUDA_DONE();
}

/* the new key and value of each row appended to its cache at len[b] */
__global__ static void append(float *kc, float *vc, const float *qkv, const int *len, int nb, int Hl, int KVl, int hd,
                              int Tmax) {
    int ld = (Hl + 2 * KVl) * hd, n = nb * KVl * hd;
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < n; t += gridDim.x * blockDim.x) {
        int bk = t / hd, e = t % hd, b = bk / KVl, kh = bk % KVl;
        const float *row = qkv + (size_t)b * ld + Hl * hd + kh * hd;
        size_t at = ((size_t)bk * Tmax + len[b]) * hd + e;
        kc[at] = row[e];
        vc[at] = row[KVl * hd + e];
    }
}

/* a warp per (row, head): online softmax over the cache in tiles of 32 keys */
__global__ static void decode(float *out, const float *qkv, const float *kc, const float *vc, const int *len, int Hl,
                              int KVl, int hd, int Tmax) {
    int lane = threadIdx.x, bh = blockIdx.x, b = bh / Hl, h = bh % Hl, n = len[b] + 1;
    int ld = (Hl + 2 * KVl) * hd;
    const float *q = qkv + (size_t)b * ld + h * hd;
    const float *k = kc + ((size_t)b * KVl + h / (Hl / KVl)) * Tmax * hd,
                *v = vc + ((size_t)b * KVl + h / (Hl / KVl)) * Tmax * hd;
    float scale = ax_attn_scale(hd), m = -INFINITY, l = 0, o[NC] = {0};
    for (int j0 = 0; j0 < n; j0 += TK) {
        int j = j0 + lane, nk = min(TK, n - j0);
        float s = j < n ? dot(q, k + (size_t)j * hd, hd) * scale : -INFINITY;
        online_tile(s, j < n, m, l, o, v + (size_t)j0 * hd, nk, hd, lane);
    }
    float *orow = out + (size_t)b * Hl * hd + h * hd;
#pragma unroll
    for (int qq = 0; qq < NC; qq++)
        if (lane + 32 * qq < hd) orow[lane + 32 * qq] = o[qq] / l;
}

void ax_cuda_attention_decode(float *out, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl,
                              int KVl, int hd, int Tmax) {
    if (!nb || !Hl) return;
    check_hd(hd);
    cudaStream_t s = ax_cuda_stream();
    append<<<ax_cuda_blocks((size_t)nb * KVl * hd, 256), 256, 0, s>>>(kc, vc, qkv, len, nb, Hl, KVl, hd, Tmax);
    decode<<<nb * Hl, 32, 0, s>>>(out, qkv, kc, vc, len, Hl, KVl, hd, Tmax);
    AX_CUDA_DONE();
}

/* the kernels keep their tiles in shared memory: callers need no scratch */
size_t ax_cuda_attention_scratch(int T) {
    (void)T;
    return 0;
}
