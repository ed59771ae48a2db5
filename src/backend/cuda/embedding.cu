/* Token + position embedding: gather of the owned vocabulary rows (zeros for
 * others), completed over the vocabulary group by its reducer, plus the
 * position rows. Backward: each table row receives its rows of dout in
 * increasing row order, starting from its value, as the CPU's loop adds
 * them: the same bits as the CPU backend, and deterministic. */
#include "backend/cuda/cuda.h"
#include <cub/device/device_radix_sort.cuh>

#define NT 256

static unsigned grid_of(size_t n) {
    size_t b = (n + NT - 1) / NT;
    return (unsigned)(b < 65535 * 8 ? b : 65535 * 8);
}

__device__ static inline int position(const int32_t *pos, size_t i, int T) { return pos ? pos[i] : (int)(i % T); }

__global__ static void gather(float *out, const int32_t *tokens, const float *wte, int v0, int Vl, int Cl, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        size_t i = k / Cl, j = k % Cl;
        int v = tokens[i] - v0;
        out[k] = v >= 0 && v < Vl ? wte[(size_t)v * Cl + j] : 0.0f;
    }
}

__global__ static void add_pos(float *out, const int32_t *pos, const float *wpe, int T, int Cl, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        out[k] += wpe[(size_t)position(pos, k / Cl, T) * Cl + k % Cl];
}

void ax_cuda_embedding_forward(float *out, const int32_t *tokens, const int32_t *pos, const float *wte,
                               const float *wpe, int M, int T, int v0, int Vl, int Cl, const ax_reducer *Y) {
    size_t n = (size_t)M * Cl;
    if (!n) return;
    gather<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(out, tokens, wte, v0, Vl, Cl, n);
    AX_CUDA_DONE();
    Y->sum(Y->ctx, out, n);
    if (!wpe) return; /* rotary positions act in attention instead */
    add_pos<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(out, pos, wpe, T, Cl, n);
    AX_CUDA_DONE();
}

/* the sort's key of row i: its table row ids[i] - off, or nkeys (sorted
 * after every kept row) when outside [0, nkeys) */
__global__ static void row_keys(unsigned *key, int *row, const int32_t *ids, int off, unsigned nkeys, int M) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < M; i += gridDim.x * blockDim.x) {
        long long k = (long long)ids[i] - off;
        key[i] = k >= 0 && k < nkeys ? (unsigned)k : nkeys;
        row[i] = i;
    }
}

/* A block per (position p of the sorted rows, tile of columns); only the block
 * where a run of equal keys starts works: from the table row's value it adds
 * the run's rows in increasing row order (the sort is stable), the serial
 * loop's order bit for bit. A run's additions are a chain, so its rows' loads
 * are issued 8 at a time ahead of the adds. */
#define RUN_NT 128
__global__ static void add_runs(float *tab, const float *dout, const unsigned *skey, const int *srow, int M,
                                unsigned nkeys, int Cl) {
    int p = blockIdx.x, j = blockIdx.y * RUN_NT + threadIdx.x;
    unsigned k = skey[p];
    if (k >= nkeys || (p > 0 && skey[p - 1] == k) || j >= Cl) return;
    /* the run's end e, the first position with another key: gallop, then
     * bisect; skey[lo - 1] == k throughout, and skey[hi] != k or hi == M */
    int lo = p + 1, hi = p + 1, step = 1;
    while (hi < M && skey[hi] == k) {
        lo = hi + 1;
        hi = M - hi > step ? hi + step : M;
        step *= 2;
    }
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (skey[mid] == k) lo = mid + 1;
        else hi = mid;
    }
    int e = lo, q = p;
    float *t = tab + (size_t)k * Cl + j, a = *t;
    for (; e - q >= 8; q += 8) {
        float v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) v[u] = dout[(size_t)srow[q + u] * Cl + j];
#pragma unroll
        for (int u = 0; u < 8; u++) a += v[u];
    }
    for (; q < e; q++) a += dout[(size_t)srow[q] * Cl + j];
    *t = a;
}

/* tab[ids[i] - off] += dout[i] for ids in [off, off + nkeys): the rows sorted
 * by key (CUB's radix sort, stable), then a block per run of equal keys */
static void scatter_rows(float *tab, const float *dout, const int32_t *ids, int off, int nkeys, int M, int Cl) {
    cudaStream_t s = ax_cuda_stream();
    size_t st = ((size_t)M + 63) / 64 * 64; /* each array 256-byte aligned */
    unsigned *key = (unsigned *)ax_cuda_tmp(AX_CUDA_TMP_EMB_KEYS, 4 * st * sizeof(unsigned)), *skey = key + 2 * st;
    int *row = (int *)(key + st), *srow = (int *)(key + 3 * st);
    int bits = 32 - __builtin_clz((unsigned)nkeys); /* keys 0 .. nkeys */
    size_t tb = 0;
    AX_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(NULL, tb, key, skey, row, srow, M, 0, bits, s));
    void *tmp = ax_cuda_tmp(AX_CUDA_TMP_EMB_SORT, tb > 16 ? tb : 16); /* never NULL: NULL only asks the size */
    row_keys<<<grid_of(M), NT, 0, s>>>(key, row, ids, off, (unsigned)nkeys, M);
    AX_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(tmp, tb, key, skey, row, srow, M, 0, bits, s));
    add_runs<<<dim3(M, ax_cuda_blocks(Cl, RUN_NT)), RUN_NT, 0, s>>>(tab, dout, skey, srow, M, (unsigned)nkeys, Cl);
}

/* positions i % T: dwpe[t] += dout[t], dout[t + T], ... in that order; a thread per (t, column) */
__global__ static void add_positions(float *dwpe, const float *dout, int M, int T, int Cl, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        size_t t = k / Cl, j = k % Cl;
        float a = dwpe[k];
        for (size_t i = t; i < (size_t)M; i += T) a += dout[i * Cl + j];
        dwpe[k] = a;
    }
}

/* Explicit positions (pos) lie in [0, T), a training sequence's (backend.h);
 * rows outside are skipped. */
void ax_cuda_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                                int M, int T, int v0, int Vl, int Cl) {
    if (M <= 0 || Cl <= 0) return;
    if (Vl > 0) scatter_rows(dwte, dout, tokens, v0, Vl, M, Cl);
    if (dwpe && T > 0) {
        if (pos) scatter_rows(dwpe, dout, pos, 0, T, M, Cl);
        else {
            size_t n = (size_t)(M < T ? M : T) * Cl;
            add_positions<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(dwpe, dout, M, T, Cl, n);
        }
    }
    AX_CUDA_DONE();
}
