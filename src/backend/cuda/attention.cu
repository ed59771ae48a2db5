/* Causal attention, and one block of it (backend.h: ax_attn_block; ring
 * attention's query chunk against a key chunk, causal or full, merged by
 * log-sum-exp), in one code path: the whole attention is the block of every
 * row against every row. Tiled flash-style: a warp per query row (forward, dq) or
 * per key row (dk, dv), key or query tiles of 32 rows staged in shared memory,
 * one row of a tile per lane for the scores, the head dimension split over
 * the lanes for the accumulators. Online softmax in the forward, which saves
 * the row's log-sum-exp; the backward recomputes the probabilities from it.
 * Every output element is written by one warp that walks its inputs in order
 * (a block's gradients added to what the buffers hold, still by that warp):
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

/* rows [r0, r0 + n) of one head (its element 0 at off of src, stored in st;
 * row stride ld) into s as fp32 (row stride sld); zeros past T */
__device__ static void stage(float *s, int sld, const void *src, ax_dtype st, size_t off, size_t ld, int r0, int n,
                             int T, int hd) {
    for (int k = threadIdx.x; k < n * hd; k += blockDim.x) {
        int r = k / hd, e = k % hd;
        s[r * sld + e] = r0 + r < T ? ax_load(src, st, off + (size_t)(r0 + r) * ld + e) : 0.0f;
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

typedef ax_cuda_blk blk;

/* keys [0, lim) that query row i sees, and [0, end) those any of rows [i0, i0 + BR) see */
__device__ static int keys_seen(const blk &a, int i) { return a.causal ? min(i + 1, a.Tk) : a.Tk; }
__device__ static int keys_seen_by(const blk &a, int i0) { return a.causal ? min(min(i0 + BR, a.Tq), a.Tk) : a.Tk; }

/* a warp per query row: out (stored in ot) and lse of the block, or with
 * merge (fp32 out) combined with those already there (the same row over
 * other keys) by their log-sum-exp */
__global__ static void fwd(void *out, ax_dtype ot, float *lse, blk a, int merge) {
    extern __shared__ float sm[];
    int hd = a.hd, w = threadIdx.x / 32, lane = threadIdx.x % 32, bh = blockIdx.y, b = bh / a.Hl, h = bh % a.Hl;
    float *Ks = sm, *Vs = Ks + TK * (hd + 1), *Qs = Vs + TK * hd;
    int Cl = a.Hl * hd, i0 = blockIdx.x * BR, i = i0 + w, kh = h / (a.Hl / a.KVl);
    size_t kv = (size_t)b * a.Sk * a.ldk + kh * hd;
    float scale = ax_attn_scale(hd), m = -INFINITY, l = 0, o[NC] = {0};
    stage(Qs, hd, a.q, a.st, (size_t)b * a.Sq * a.ldq + h * hd, a.ldq, i0, BR, a.Tq, hd);
    int lim = keys_seen(a, i), end = keys_seen_by(a, i0);
    for (int j0 = 0; j0 < end; j0 += TK) {
        __syncthreads();
        stage(Ks, hd + 1, a.k, a.st, kv, a.ldk, j0, TK, a.Tk, hd);
        stage(Vs, hd, a.v, a.st, kv, a.ldk, j0, TK, a.Tk, hd);
        __syncthreads();
        if (i >= a.Tq || j0 >= lim) continue; /* warp-uniform */
        int j = j0 + lane, nk = min(TK, lim - j0);
        float s = j < lim ? scale * dot(Qs + w * hd, Ks + lane * (hd + 1), hd) : -INFINITY;
        online_tile(s, j < lim, m, l, o, Vs, nk, hd, lane);
    }
    if (i >= a.Tq) return;
    size_t at = (size_t)bh * a.Sq + i, ob = ((size_t)b * a.Sq + i) * Cl + h * hd;
    float inv = 1.0f / l, lb = ax_lse(m, l), *orow = (float *)out + ob;
    if (!merge) {
#pragma unroll
        for (int q = 0; q < NC; q++)
            if (lane + 32 * q < hd) ax_store(out, ot, ob + lane + 32 * q, o[q] * inv);
        if (lane == 0) lse[at] = lb;
        return;
    }
    /* lane 0 reads the old lse before it writes the new one; the shuffle hands it to the warp */
    float la = __shfl_sync(0xffffffffu, lane == 0 ? lse[at] : 0.0f, 0), ln = ax_lse_merge(la, lb);
    float wa = ax_expf(la - ln), wb = ax_expf(lb - ln);
#pragma unroll
    for (int q = 0; q < NC; q++)
        if (lane + 32 * q < hd) orow[lane + 32 * q] = wa * orow[lane + 32 * q] + wb * (o[q] * inv);
    if (lane == 0) lse[at] = ln;
}

static void tiled_forward(const blk &a, int B, void *out, ax_dtype ot, float *lse, int merge) {
    check_hd(a.hd);
    dim3 grid((a.Tq + BR - 1) / BR, B * a.Hl);
    size_t smem = sizeof(float) * (TK * (a.hd + 1) + TK * a.hd + BR * a.hd);
    fwd<<<grid, 32 * BR, smem, ax_cuda_stream()>>>(out, ot, lse, a, merge);
}

void ax_cuda_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd,
                               ax_dtype dt, float *scratch, int nthr) {
    if (!B || !T || !Hl) return;
    int mode = ax_cuda_attention_mode(dt, hd);
    if (mode == AX_CUDA_ATTN_MM) {
        ax_cuda_attention_mm_forward(out, lse, qkv, dt, B, T, Hl, KVl, hd);
        return;
    }
    if (mode == AX_CUDA_ATTN_FLASH) {
        ax_cuda_attention_flash_forward(out, lse, qkv, dt, B, T, Hl, KVl, hd);
        return;
    }
    tiled_forward(ax_cuda_blk_full(qkv, dt, T, Hl, KVl, hd), B, out, dt, lse, 0);
    AX_CUDA_DONE();
}

/* D_i = dO_i . O_i (O stored in ot), a warp per row i < Tq of Sq per sequence, into D[bh*Tq + i] */
__global__ static void row_d(float *D, const float *dout, const void *out, ax_dtype ot, int Sq, int Tq, int Hl,
                             int hd) {
    int lane = threadIdx.x % 32, i = blockIdx.x * BR + threadIdx.x / 32, bh = blockIdx.y, b = bh / Hl, h = bh % Hl;
    if (i >= Tq) return;
    size_t o = ((size_t)b * Sq + i) * Hl * hd + h * hd;
    float d = 0;
    for (int e = lane; e < hd; e += 32) d += dout[o + e] * ax_load(out, ot, o + e);
    d = ax_warp_sum(d);
    if (lane == 0) D[(size_t)bh * Tq + i] = d;
}

void ax_cuda_attention_rowdot_rows(float *D, const float *dout, const void *out, ax_dtype ot, int B, int Sq, int Tq,
                                   int Hl, int hd) {
    row_d<<<dim3((Tq + BR - 1) / BR, B * Hl), 32 * BR, 0, ax_cuda_stream()>>>(D, dout, out, ot, Sq, Tq, Hl, hd);
}

void ax_cuda_attention_rowdot(float *D, const float *dout, const void *out, ax_dtype ot, int B, int T, int Hl, int hd) {
    ax_cuda_attention_rowdot_rows(D, dout, out, ot, B, T, T, Hl, hd);
    AX_CUDA_DONE();
}

/* each gradient element written once, by one warp: stored, or added to what the buffer holds (a block's share) */
__device__ static void put_row(float *row, const float *g, int acc, int hd, int lane) {
#pragma unroll
    for (int q = 0; q < NC; q++)
        if (lane + 32 * q < hd) row[lane + 32 * q] = acc ? row[lane + 32 * q] + g[q] : g[q];
}

/* dq of query rows, a warp each, over key tiles */
__global__ static void bwd_dq(float *dq, const float *dout, const float *lse, const float *D, blk a, int acc) {
    extern __shared__ float sm[];
    int hd = a.hd, w = threadIdx.x / 32, lane = threadIdx.x % 32, bh = blockIdx.y, b = bh / a.Hl, h = bh % a.Hl;
    float *Ks = sm, *Vs = Ks + TK * (hd + 1), *Qs = Vs + TK * (hd + 1), *dOs = Qs + BR * hd;
    int Cl = a.Hl * hd, i0 = blockIdx.x * BR, i = i0 + w, kh = h / (a.Hl / a.KVl);
    size_t kv = (size_t)b * a.Sk * a.ldk + kh * hd;
    float scale = ax_attn_scale(hd), g[NC] = {0};
    stage(Qs, hd, a.q, a.st, (size_t)b * a.Sq * a.ldq + h * hd, a.ldq, i0, BR, a.Tq, hd);
    stage(dOs, hd, dout, AX_F32, (size_t)b * a.Sq * Cl + h * hd, Cl, i0, BR, a.Tq, hd);
    float li = i < a.Tq ? lse[(size_t)bh * a.Sq + i] : 0.0f, di = i < a.Tq ? D[(size_t)bh * a.Tq + i] : 0.0f;
    int lim = keys_seen(a, i), end = keys_seen_by(a, i0);
    for (int j0 = 0; j0 < end; j0 += TK) {
        __syncthreads();
        stage(Ks, hd + 1, a.k, a.st, kv, a.ldk, j0, TK, a.Tk, hd);
        stage(Vs, hd + 1, a.v, a.st, kv, a.ldk, j0, TK, a.Tk, hd);
        __syncthreads();
        if (i >= a.Tq || j0 >= lim) continue;
        int j = j0 + lane, nk = min(TK, lim - j0);
        float ds = 0.0f;
        if (j < lim) {
            float p = ax_softmax_p(scale * dot(Qs + w * hd, Ks + lane * (hd + 1), hd), li);
            ds = ax_softmax_ds(p, dot(dOs + w * hd, Vs + lane * (hd + 1), hd), di, scale);
        }
        for (int jj = 0; jj < nk; jj++) {
            float sj = __shfl_sync(0xffffffffu, ds, jj);
#pragma unroll
            for (int q = 0; q < NC; q++)
                if (lane + 32 * q < hd) g[q] += sj * Ks[jj * (hd + 1) + lane + 32 * q];
        }
    }
    if (i >= a.Tq) return;
    put_row(dq + ((size_t)b * a.Sq + i) * a.ldq + h * hd, g, acc, hd, lane);
}

/* dk, dv of key rows, a warp each, over every query head of the group and the query tiles that see them */
__global__ static void bwd_dkv(float *dk, float *dv, const float *dout, const float *lse, const float *D, blk a,
                               int acc) {
    extern __shared__ float sm[];
    int hd = a.hd, w = threadIdx.x / 32, lane = threadIdx.x % 32, bk = blockIdx.y, b = bk / a.KVl, kh = bk % a.KVl;
    float *Qs = sm, *dOs = Qs + TK * (hd + 1), *ks = dOs + TK * (hd + 1), *vs = ks + BR * hd;
    int Cl = a.Hl * hd, j0 = blockIdx.x * BR, j = j0 + w, grp = a.Hl / a.KVl;
    float scale = ax_attn_scale(hd), gk[NC] = {0}, gv[NC] = {0};
    stage(ks, hd, a.k, a.st, (size_t)b * a.Sk * a.ldk + kh * hd, a.ldk, j0, BR, a.Tk, hd);
    stage(vs, hd, a.v, a.st, (size_t)b * a.Sk * a.ldk + kh * hd, a.ldk, j0, BR, a.Tk, hd);
    for (int h = kh * grp; h < (kh + 1) * grp; h++) {
        size_t bh = (size_t)b * a.Hl + h, qo = (size_t)b * a.Sq * a.ldq + h * hd, oo = (size_t)b * a.Sq * Cl + h * hd;
        for (int i0 = a.causal ? j0 : 0; i0 < a.Tq; i0 += TK) { /* causal: the rows from the diagonal down */
            __syncthreads();
            stage(Qs, hd + 1, a.q, a.st, qo, a.ldq, i0, TK, a.Tq, hd);
            stage(dOs, hd + 1, dout, AX_F32, oo, Cl, i0, TK, a.Tq, hd);
            __syncthreads();
            if (j >= a.Tk) continue;
            int i = i0 + lane;
            float p = 0.0f, ds = 0.0f;
            if (i < a.Tq && (!a.causal || i >= j)) {
                p = ax_softmax_p(scale * dot(Qs + lane * (hd + 1), ks + w * hd, hd), lse[bh * a.Sq + i]);
                ds = ax_softmax_ds(p, dot(dOs + lane * (hd + 1), vs + w * hd, hd), D[bh * a.Tq + i], scale);
            }
            int n = min(TK, a.Tq - i0);
            for (int ii = 0; ii < n; ii++) {
                float pi = __shfl_sync(0xffffffffu, p, ii), si = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
                for (int q = 0; q < NC; q++)
                    if (lane + 32 * q < hd) {
                        gv[q] += pi * dOs[ii * (hd + 1) + lane + 32 * q];
                        gk[q] += si * Qs[ii * (hd + 1) + lane + 32 * q];
                    }
            }
        }
    }
    if (j >= a.Tk) return;
    put_row(dk + ((size_t)b * a.Sk + j) * a.ldk + kh * hd, gk, acc, hd, lane);
    put_row(dv + ((size_t)b * a.Sk + j) * a.ldk + kh * hd, gv, acc, hd, lane);
}

/* dq into dq, dk, dv into theirs (laid out as q, k, v), stored or added (acc), from out and lse of the whole forward */
static void tiled_backward(const blk &a, int B, float *dq, float *dk, float *dv, const float *dout, const void *out,
                           ax_dtype ot, const float *lse, int acc) {
    check_hd(a.hd);
    cudaStream_t s = ax_cuda_stream();
    float *D = (float *)ax_cuda_tmp(AX_CUDA_TMP_ATTN, sizeof(float) * B * a.Hl * a.Tq);
    dim3 gq((a.Tq + BR - 1) / BR, B * a.Hl), gk((a.Tk + BR - 1) / BR, B * a.KVl);
    size_t smem = sizeof(float) * (2 * TK * (a.hd + 1) + 2 * BR * a.hd);
    ax_cuda_attention_rowdot_rows(D, dout, out, ot, B, a.Sq, a.Tq, a.Hl, a.hd);
    bwd_dq<<<gq, 32 * BR, smem, s>>>(dq, dout, lse, D, a, acc);
    bwd_dkv<<<gk, 32 * BR, smem, s>>>(dk, dv, dout, lse, D, a, acc);
}

void ax_cuda_attention_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                                int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr) {
    if (!B || !T || !Hl) return;
    int mode = ax_cuda_attention_mode(dt, hd);
    if (mode == AX_CUDA_ATTN_MM) {
        ax_cuda_attention_mm_backward(dqkv, dout, out, lse, qkv, dt, B, T, Hl, KVl, hd);
        return;
    }
    if (mode == AX_CUDA_ATTN_FLASH) {
        ax_cuda_attention_flash_backward(dqkv, dout, out, lse, qkv, dt, B, T, Hl, KVl, hd);
        return;
    }
    tiled_backward(ax_cuda_blk_full(qkv, dt, T, Hl, KVl, hd), B, dqkv, dqkv + Hl * hd, dqkv + (Hl + KVl) * hd, dout,
                   out, dt, lse, 0);
    AX_CUDA_DONE();
}

/* A block's causal mask is the diagonal's (j <= i): only a chunk against itself */
static void check_block(const ax_attn_block *a) {
    if (a->causal && a->Tq != a->Tk)
        ax_fatal(__FILE__, __LINE__, "CUDA attention block: causal needs Tq == Tk, got %d and %d", a->Tq, a->Tk);
    if (a->Tq > a->Sq || a->Tk > a->Sk)
        ax_fatal(__FILE__, __LINE__, "CUDA attention block: %d of %d query rows, %d of %d key rows", a->Tq, a->Sq,
                 a->Tk, a->Sk);
}

/* Blocks take the tiles, or flash where the plan picks it; never mm, whose
 * (T, T) scores hold one sequence's whole square (attention_mm.cu). */
void ax_cuda_attention_block_forward(const ax_attn_block *a, float *out, float *lse, int merge, float *scratch,
                                     int nthr) {
    (void)scratch;
    (void)nthr;
    if (!a->B || !a->Tq || !a->Hl || !a->Tk) return;
    check_block(a);
    if (ax_cuda_attention_mode(a->dt, a->hd) == AX_CUDA_ATTN_FLASH)
        ax_cuda_attention_flash_block_forward(a, out, lse, merge);
    else tiled_forward(ax_cuda_blk_of(a), a->B, out, AX_F32, lse, merge);
    AX_CUDA_DONE();
}

void ax_cuda_attention_block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                      const float *out, const float *lse, float *scratch, int nthr) {
    (void)scratch;
    (void)nthr;
    if (!a->B || !a->Tq || !a->Hl || !a->Tk) return;
    check_block(a);
    if (ax_cuda_attention_mode(a->dt, a->hd) == AX_CUDA_ATTN_FLASH)
        ax_cuda_attention_flash_block_backward(a, dq, dk, dv, dout, out, lse);
    else tiled_backward(ax_cuda_blk_of(a), a->B, dq, dk, dv, dout, out, AX_F32, lse, 1);
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
size_t ax_cuda_attention_scratch(int T, int hd) {
    (void)T;
    (void)hd;
    return 0;
}
