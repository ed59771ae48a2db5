/* Causal attention as flash attention on the tensor cores (WMMA, bf16 x bf16
 * -> fp32), for bf16 models under AXONN_CUDA_ATTN=flash. The arithmetic is
 * attention_mm.cu's: q, k, v, the probabilities P, dO and dS rounded to bf16
 * as products' operands, fp32 accumulation, fp32 softmax with kmath's
 * functions. But the (T, T) scores never leave shared memory: a block owns a
 * tile of 64 queries (forward, dq) or keys (dk, dv) and walks the other side's
 * tiles up to the diagonal, so HBM sees O(T) bytes per head and the masked
 * half is skipped rather than multiplied.
 *
 * Four warps; warp w owns the 16 rows 16w.. of the block's tile: its scores,
 * their softmax (a lane per row) and its rows of the accumulators, which
 * stay in shared memory in fp32 and pass through accumulator fragments
 * around each product (fragments are opaque: rows are rescaled in shared
 * memory, never in a fragment). Only the staging of a new tile needs the
 * whole block; the rest syncs per warp.
 *
 * The backward is FA2's in two kernels, so that no output is summed by
 * atomics: dk, dv of a key tile over its group's query heads and the query
 * tiles at or below the diagonal, then dq of a query tile over its key tiles;
 * each recomputes P from the saved log-sum-exp. Every output element is
 * written once by one block, in a fixed order: the same bits every run.
 *
 * The kernels take one block of attention (cuda.h: ax_cuda_blk), as the
 * tiled ones do: the whole causal attention, or ring attention's query chunk
 * against a key chunk, causal (the diagonal masked as above) or full (every
 * key tile, the last one's rows past Tk masked), the forward merged into out
 * and lse by log-sum-exp and the backward's share added to dq, dk, dv. */
#include "backend/cuda/cuda.h"
#include "backend/cuda/attn_plan.h"
#include "backend/kmath.h"
#include <mma.h>

using namespace nvcuda;

/* the tiles, and the shared memory each kernel lays out: attn_plan.h, where
 * the attention selection reads them too */
#define BQ      AX_FLASH_BQ /* rows of a block's tile, 16 per warp */
#define NW      (BQ / 16)
#define NT      (32 * NW)
#define LDS     AX_FLASH_LDS
#define LDP     AX_FLASH_LDP
#define LDW     AX_FLASH_LDW
#define SCRATCH AX_FLASH_SCRATCH /* the backward's S and dP chunks, a pair per warp */

typedef uint16_t bf16;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a_row;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::col_major> a_col;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b_row;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b_col;

/* one warp: the 16 x 16 fp32 tile c (row stride ldc) = (acc ? c : 0) + the
 * sum of nk products A B of 16-deep slices; a and b step by sa and sb
 * elements per slice (16 along a row, 16 rows down a column) */
template <class FA, class FB>
__device__ static void mma_tile(float *c, int ldc, int acc, const bf16 *a, int lda, int sa, const bf16 *b, int ldb,
                                int sb, int nk) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> f;
    FA fa;
    FB fb;
    if (acc) wmma::load_matrix_sync(f, c, ldc, wmma::mem_row_major);
    else wmma::fill_fragment(f, 0.0f);
    for (int k = 0; k < nk; k++) {
        wmma::load_matrix_sync(fa, (const __nv_bfloat16 *)a + k * sa, lda);
        wmma::load_matrix_sync(fb, (const __nv_bfloat16 *)b + k * sb, ldb);
        wmma::mma_sync(f, fa, fb, f);
    }
    wmma::store_matrix_sync(c, f, ldc, wmma::mem_row_major);
}

/* BQ rows of hd columns from element off of src (stored in st, row stride
 * ld) as bf16 in dst (row stride ldd), rows from n on zero: a partial tile
 * multiplies as zeros. A bf16 source is copied: rounding its widened value
 * gives it back. */
__device__ static void stage(bf16 *dst, int ldd, const void *src, ax_dtype st, size_t off, int ld, int n, int hd) {
    for (int t = threadIdx.x; t < BQ * hd; t += NT) {
        int r = t / hd, e = t % hd;
        dst[r * ldd + e] = r < n ? ax_bf16_round(ax_load(src, st, off + (size_t)r * ld + e)) : (bf16)0;
    }
}

/* keys [0, n) of the tile from j0 that row i sees (causal: to the diagonal) */
__device__ static int keys_in(const ax_cuda_blk &a, int i, int j0) {
    return a.causal ? min(BQ, i - j0 + 1) : min(BQ, a.Tk - j0);
}
/* the key tiles a query tile from i0 walks: causal, to the diagonal; else all */
__device__ static int keys_end(const ax_cuda_blk &a, int i0) { return a.causal ? min(i0 + BQ, a.Tq) : a.Tk; }
/* 16-wide chunks of the key tile j0 that warp w's rows of the query tile i0
 * multiply: those right of the diagonal are all masked */
__device__ static int chunks(const ax_cuda_blk &a, int i0, int j0, int w) { return a.causal && i0 == j0 ? w + 1 : NW; }

/* a block per (query tile, b*Hl + h); the heaviest tiles, the last, first;
 * out stored in ot. merge: out (fp32) and lse combined with those already
 * there by log-sum-exp. */
__global__ static void __launch_bounds__(NT) fwd(void *out, ax_dtype ot, float *lse, ax_cuda_blk a, int merge) {
    extern __shared__ __align__(128) unsigned char ax_fsm[];
    int hd = a.hd, ldq = hd + 8, ldo = hd + 4, w = threadIdx.x / 32, lane = threadIdx.x % 32;
    bf16 *Qs = (bf16 *)ax_fsm, *Ks = Qs + BQ * ldq, *Vs = Ks + BQ * ldq, *Ps = Vs + BQ * ldq;
    float *S = (float *)(Ps + BQ * LDP), *O = S + BQ * LDS, *al = O + BQ * ldo, *ls = al + BQ;
    int bh = blockIdx.y, b = bh / a.Hl, h = bh % a.Hl, i0 = (gridDim.x - 1 - blockIdx.x) * BQ, nq = min(BQ, a.Tq - i0);
    int kh = h / (a.Hl / a.KVl), r = 16 * w + lane;
    size_t kv = (size_t)b * a.Sk * a.ldk + kh * hd;
    float scale = ax_attn_scale(hd), m = -INFINITY, l = 0.0f; /* row r's running max and sum (lanes < 16) */
    stage(Qs, ldq, a.q, a.st, ((size_t)b * a.Sq + i0) * a.ldq + h * hd, a.ldq, nq, hd);
    for (int t = threadIdx.x; t < BQ * ldo; t += NT) O[t] = 0.0f;
    for (int j0 = 0; j0 < keys_end(a, i0); j0 += BQ) {
        int nc = chunks(a, i0, j0, w);
        __syncthreads(); /* every warp done with the previous Ks, Vs */
        stage(Ks, ldq, a.k, a.st, kv + (size_t)j0 * a.ldk, a.ldk, min(BQ, a.Tk - j0), hd);
        stage(Vs, ldq, a.v, a.st, kv + (size_t)j0 * a.ldk, a.ldk, min(BQ, a.Tk - j0), hd);
        __syncthreads();
        for (int c = 0; c < nc; c++) /* S = Q K^T */
            mma_tile<a_row, b_col>(S + 16 * w * LDS + 16 * c, LDS, 0, Qs + 16 * w * ldq, ldq, 16, Ks + 16 * c * ldq,
                                   ldq, 16, hd / 16);
        __syncwarp();
        if (lane < 16) {
            int n = keys_in(a, i0 + r, j0);
            const float *s = S + r * LDS;
            float mx = m, sum = 0.0f;
            for (int j = 0; j < n; j++) mx = fmaxf(mx, s[j] * scale);
            for (int j = 0; j < BQ; j++) {
                float p = j < n ? ax_softmax_p(s[j] * scale, mx) : 0.0f;
                sum += p;
                Ps[r * LDP + j] = ax_bf16_round(p);
            }
            al[r] = ax_softmax_rescale(m, mx);
            l = l * al[r] + sum;
            m = mx;
        }
        __syncwarp();
        for (int t = lane; t < 16 * hd; t += 32) O[(16 * w + t / hd) * ldo + t % hd] *= al[16 * w + t / hd];
        __syncwarp();
        for (int c = 0; c < hd / 16; c++) /* O += P V */
            mma_tile<a_row, b_row>(O + 16 * w * ldo + 16 * c, ldo, 1, Ps + 16 * w * LDP, LDP, 16, Vs + 16 * c, ldq,
                                   16 * ldq, nc);
    }
    if (lane < 16) {
        ls[r] = l;
        al[r] = m; /* the rescale factors are spent: al holds the rows' maxima */
    }
    __syncwarp();
    int Cl = a.Hl * hd;
    for (int t = lane; t < 16 * hd; t += 32) {
        int rr = 16 * w + t / hd, e = t % hd;
        if (rr >= nq) continue;
        size_t at = ((size_t)b * a.Sq + i0 + rr) * Cl + h * hd + e;
        float *o = (float *)out + at;
        if (!merge) {
            ax_store(out, ot, at, O[rr * ldo + e] / ls[rr]);
            continue;
        }
        float la = lse[(size_t)bh * a.Sq + i0 + rr], lb = ax_lse(al[rr], ls[rr]), ln = ax_lse_merge(la, lb);
        *o = ax_expf(la - ln) * *o + ax_expf(lb - ln) * (O[rr * ldo + e] / ls[rr]);
    }
    __syncwarp(); /* every lane read the old lse of its rows */
    if (lane < 16 && r < nq) {
        float *at = lse + (size_t)bh * a.Sq + i0 + r;
        *at = merge ? ax_lse_merge(*at, ax_lse(m, l)) : ax_lse(m, l);
    }
}

/* warp w's rows of a score tile, queries i0 + 16w.. against keys j0..: the
 * gradient dS = P (dP - D) scale to bf16 in dSs and, where Ps, P itself.
 * S = Q K^T and dP = dO V^T pass a 16 x 16 chunk at a time through the
 * warp's own fp32 scratch SW (2 x 16 x LDW), so the backward's blocks stay
 * small enough to share an SM; masked chunks (right of the diagonal) are zeros */
__device__ static void grad_scores(bf16 *Ps, bf16 *dSs, float *SW, const bf16 *Qs, const bf16 *dOs, const bf16 *Ks,
                                   const bf16 *Vs, const float *li, const float *di, int i0, int j0,
                                   const ax_cuda_blk &a) {
    int hd = a.hd, w = threadIdx.x / 32, lane = threadIdx.x % 32, ldq = hd + 8, nc = chunks(a, i0, j0, w);
    float scale = ax_attn_scale(hd), *S = SW + 2 * 16 * LDW * w, *dP = S + 16 * LDW;
    for (int c = 0; c < NW; c++) {
        if (c < nc) {
            mma_tile<a_row, b_col>(S, LDW, 0, Qs + 16 * w * ldq, ldq, 16, Ks + 16 * c * ldq, ldq, 16, hd / 16);
            mma_tile<a_row, b_col>(dP, LDW, 0, dOs + 16 * w * ldq, ldq, 16, Vs + 16 * c * ldq, ldq, 16, hd / 16);
        }
        __syncwarp();
        for (int t = lane; t < 16 * 16; t += 32) {
            int r = 16 * w + t / 16, j = 16 * c + t % 16, i = i0 + r;
            float p = 0.0f, ds = 0.0f;
            if (i < a.Tq && j < keys_in(a, i, j0)) {
                p = ax_softmax_p(S[(t / 16) * LDW + t % 16] * scale, li[r]);
                ds = ax_softmax_ds(p, dP[(t / 16) * LDW + t % 16], di[r], scale);
            }
            if (Ps) Ps[r * LDP + j] = ax_bf16_round(p);
            dSs[r * LDP + j] = ax_bf16_round(ds);
        }
        __syncwarp(); /* read before the next chunk overwrites */
    }
}

/* lse and D of the BQ query rows from i0 of head bh into li, di (zeros past Tq) */
__device__ static void stage_rows(float *li, float *di, const float *lse, const float *D, size_t bh, int i0,
                                  const ax_cuda_blk &a) {
    for (int r = threadIdx.x; r < BQ; r += NT) {
        int ok = i0 + r < a.Tq;
        li[r] = ok ? lse[bh * a.Sq + i0 + r] : 0.0f;
        di[r] = ok ? D[bh * a.Tq + i0 + r] : 0.0f;
    }
}

/* each gradient element written once, by one thread: stored, or added to what the buffer holds (a block's share) */
__device__ static void put(float *p, float g, int acc) { *p = acc ? *p + g : g; }

/* dq: a block per (query tile, b*Hl + h), heaviest first, over the key tiles it sees */
__global__ static void __launch_bounds__(NT)
    bwd_dq(float *dq, const float *dout, const float *lse, const float *D, ax_cuda_blk a, int acc) {
    extern __shared__ __align__(128) unsigned char ax_fsm[];
    int hd = a.hd, ldq = hd + 8, ldo = hd + 4, w = threadIdx.x / 32, lane = threadIdx.x % 32;
    bf16 *Qs = (bf16 *)ax_fsm, *dOs = Qs + BQ * ldq, *Ks = dOs + BQ * ldq, *Vs = Ks + BQ * ldq, *dSs = Vs + BQ * ldq;
    float *SW = (float *)(dSs + BQ * LDP), *dQ = SW + SCRATCH, *li = dQ + BQ * ldo, *di = li + BQ;
    int bh = blockIdx.y, b = bh / a.Hl, h = bh % a.Hl, i0 = (gridDim.x - 1 - blockIdx.x) * BQ, nq = min(BQ, a.Tq - i0);
    int Cl = a.Hl * hd, kh = h / (a.Hl / a.KVl);
    size_t kv = (size_t)b * a.Sk * a.ldk + kh * hd;
    stage(Qs, ldq, a.q, a.st, ((size_t)b * a.Sq + i0) * a.ldq + h * hd, a.ldq, nq, hd);
    stage(dOs, ldq, dout, AX_F32, ((size_t)b * a.Sq + i0) * Cl + h * hd, Cl, nq, hd);
    stage_rows(li, di, lse, D, bh, i0, a);
    for (int t = threadIdx.x; t < BQ * ldo; t += NT) dQ[t] = 0.0f;
    for (int j0 = 0; j0 < keys_end(a, i0); j0 += BQ) {
        __syncthreads();
        stage(Ks, ldq, a.k, a.st, kv + (size_t)j0 * a.ldk, a.ldk, min(BQ, a.Tk - j0), hd);
        stage(Vs, ldq, a.v, a.st, kv + (size_t)j0 * a.ldk, a.ldk, min(BQ, a.Tk - j0), hd);
        __syncthreads();
        grad_scores(NULL, dSs, SW, Qs, dOs, Ks, Vs, li, di, i0, j0, a);
        __syncwarp();
        for (int c = 0; c < hd / 16; c++) /* dQ += dS K */
            mma_tile<a_row, b_row>(dQ + 16 * w * ldo + 16 * c, ldo, 1, dSs + 16 * w * LDP, LDP, 16, Ks + 16 * c, ldq,
                                   16 * ldq, chunks(a, i0, j0, w));
    }
    __syncwarp();
    for (int t = lane; t < 16 * hd; t += 32) {
        int r = 16 * w + t / hd, e = t % hd;
        if (r < nq) put(dq + ((size_t)b * a.Sq + i0 + r) * a.ldq + h * hd + e, dQ[r * ldo + e], acc);
    }
}

/* dk, dv: a block per (key tile, b*KVl + kh), over its group's query heads in
 * order and their query tiles that see it (causal: from the diagonal on) */
__global__ static void __launch_bounds__(NT)
    bwd_dkv(float *dk, float *dv, const float *dout, const float *lse, const float *D, ax_cuda_blk a, int acc) {
    extern __shared__ __align__(128) unsigned char ax_fsm[];
    int hd = a.hd, ldq = hd + 8, ldo = hd + 4, w = threadIdx.x / 32, lane = threadIdx.x % 32;
    bf16 *Ks = (bf16 *)ax_fsm, *Vs = Ks + BQ * ldq, *Qs = Vs + BQ * ldq, *dOs = Qs + BQ * ldq, *Ps = dOs + BQ * ldq;
    bf16 *dSs = Ps + BQ * LDP;
    float *SW = (float *)(dSs + BQ * LDP), *dK = SW + SCRATCH, *dV = dK + BQ * ldo;
    float *li = dV + BQ * ldo, *di = li + BQ;
    int bk = blockIdx.y, b = bk / a.KVl, kh = bk % a.KVl, j0 = blockIdx.x * BQ, nk = min(BQ, a.Tk - j0);
    int grp = a.Hl / a.KVl, Cl = a.Hl * hd;
    size_t krow = ((size_t)b * a.Sk + j0) * a.ldk + kh * hd;
    stage(Ks, ldq, a.k, a.st, krow, a.ldk, nk, hd);
    stage(Vs, ldq, a.v, a.st, krow, a.ldk, nk, hd);
    for (int t = threadIdx.x; t < BQ * ldo; t += NT) dK[t] = dV[t] = 0.0f;
    for (int h = kh * grp; h < (kh + 1) * grp; h++)
        for (int i0 = a.causal ? j0 : 0; i0 < a.Tq; i0 += BQ) {
            int nq = min(BQ, a.Tq - i0), c0 = a.causal && i0 == j0 ? w : 0; /* query chunks above the diagonal */
            __syncthreads(); /* every warp done with the previous Qs, dOs, Ps, dSs */
            stage(Qs, ldq, a.q, a.st, ((size_t)b * a.Sq + i0) * a.ldq + h * hd, a.ldq, nq, hd);
            stage(dOs, ldq, dout, AX_F32, ((size_t)b * a.Sq + i0) * Cl + h * hd, Cl, nq, hd);
            stage_rows(li, di, lse, D, (size_t)b * a.Hl + h, i0, a);
            __syncthreads();
            grad_scores(Ps, dSs, SW, Qs, dOs, Ks, Vs, li, di, i0, j0, a);
            __syncthreads();                    /* warp w's keys need every warp's query rows */
            for (int c = 0; c < hd / 16; c++) { /* dV += P^T dO, dK += dS^T Q */
                mma_tile<a_col, b_row>(dV + 16 * w * ldo + 16 * c, ldo, 1, Ps + 16 * w + c0 * 16 * LDP, LDP, 16 * LDP,
                                       dOs + c0 * 16 * ldq + 16 * c, ldq, 16 * ldq, NW - c0);
                mma_tile<a_col, b_row>(dK + 16 * w * ldo + 16 * c, ldo, 1, dSs + 16 * w + c0 * 16 * LDP, LDP, 16 * LDP,
                                       Qs + c0 * 16 * ldq + 16 * c, ldq, 16 * ldq, NW - c0);
            }
        }
    __syncwarp();
    for (int t = lane; t < 16 * hd; t += 32) {
        int r = 16 * w + t / hd, e = t % hd;
        if (r < nk) {
            put(dk + krow + (size_t)r * a.ldk + e, dK[r * ldo + e], acc);
            put(dv + krow + (size_t)r * a.ldk + e, dV[r * ldo + e], acc);
        }
    }
}

/* more than the default 48 KB of shared memory needs the kernel's consent */
static void smem_allow(const void *f, size_t bytes) {
    AX_CHECK_CUDA(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

/* the selection (ax_cuda_attention_mode) sends only head sizes the tiles take */
static void need_hd(int hd) {
    if (hd % AX_FLASH_HD_STEP || hd < AX_FLASH_HD_STEP || hd > AX_FLASH_HD_MAX)
        ax_fatal(__FILE__, __LINE__, "flash attention called for head size %d, which its plan refuses", hd);
}

static void flash_forward(const ax_cuda_blk &a, int B, void *out, ax_dtype ot, float *lse, int merge) {
    need_hd(a.hd);
    size_t sm = ax_flash_smem(AX_FLASH_FWD, a.hd);
    smem_allow((const void *)fwd, sm);
    fwd<<<dim3((a.Tq + BQ - 1) / BQ, B * a.Hl), NT, sm, ax_cuda_stream()>>>(out, ot, lse, a, merge);
    AX_CUDA_DONE();
}

/* the gradients stored (acc 0) or added to dq, dk, dv, from out (stored in ot) and lse of the whole forward */
static void flash_backward(const ax_cuda_blk &a, int B, float *dq, float *dk, float *dv, const float *dout,
                           const void *out, ax_dtype ot, const float *lse, int acc) {
    float *D = (float *)ax_cuda_tmp(AX_CUDA_TMP_ATTN, sizeof(float) * B * a.Hl * a.Tq);
    need_hd(a.hd);
    size_t sq = ax_flash_smem(AX_FLASH_DQ, a.hd), sk = ax_flash_smem(AX_FLASH_DKV, a.hd);
    smem_allow((const void *)bwd_dq, sq);
    smem_allow((const void *)bwd_dkv, sk);
    ax_cuda_attention_rowdot_rows(D, dout, out, ot, B, a.Sq, a.Tq, a.Hl, a.hd); /* D = rowsum(dO o), fp32 */
    bwd_dq<<<dim3((a.Tq + BQ - 1) / BQ, B * a.Hl), NT, sq, ax_cuda_stream()>>>(dq, dout, lse, D, a, acc);
    bwd_dkv<<<dim3((a.Tk + BQ - 1) / BQ, B * a.KVl), NT, sk, ax_cuda_stream()>>>(dk, dv, dout, lse, D, a, acc);
    AX_CUDA_DONE();
}

void ax_cuda_attention_flash_forward(void *out, float *lse, const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl,
                                     int hd) {
    flash_forward(ax_cuda_blk_full(qkv, st, T, Hl, KVl, hd), B, out, st, lse, 0);
}

void ax_cuda_attention_flash_backward(float *dqkv, const float *dout, const void *out, const float *lse,
                                      const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl, int hd) {
    flash_backward(ax_cuda_blk_full(qkv, st, T, Hl, KVl, hd), B, dqkv, dqkv + Hl * hd, dqkv + (Hl + KVl) * hd, dout,
                   out, st, lse, 0);
}

void ax_cuda_attention_flash_block_forward(const ax_attn_block *a, float *out, float *lse, int merge) {
    flash_forward(ax_cuda_blk_of(a), a->B, out, AX_F32, lse, merge);
}

void ax_cuda_attention_flash_block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                            const float *out, const float *lse) {
    flash_backward(ax_cuda_blk_of(a), a->B, dq, dk, dv, dout, out, AX_F32, lse, 1);
}
