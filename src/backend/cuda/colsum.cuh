/* Column sums over many rows, deterministic and parallel over the rows: the
 * parameter gradients of bias, LayerNorm and RMSNorm, out_o[j] += sum_i v_o(i, j)
 * for NO outputs (LayerNorm's dw and db) in one pass over the rows.
 *
 * One launch. Stage 1: a block of 32x8 threads per (tile of 32 columns, chunk of 256 rows);
 * thread (x, y) sums rows y, y+8, ... of its chunk for column x (a warp reads
 * 32 consecutive columns of one row), then thread (x, 0) adds the 8 partial
 * sums in y order through shared memory into part[o][chunk][j]. Stage 2, in
 * the same launch: the tile's last block to finish (a counter per tile,
 * counted after each block's partials are made visible, and set back to
 * zero for the next launch) adds the chunks' partials in chunk order and +=
 * the sum into out. The counter only picks which block adds; the sums are
 * in a fixed order: the same bits every run; the order is not the CPU's
 * row-by-row loop, so the two differ by rounding only.
 *
 * f is a functor, f(i, j, v) writes the NO values of row i, column j:
 *   struct db_of { const float *dy; int n;
 *                  __device__ void operator()(int i, int j, float *v) const { v[0] = dy[(size_t)i * n + j]; } };
 *   ax_colsum<1>(db, NULL, M, n, db_of{dy, n}); */
#ifndef AX_BACKEND_CUDA_COLSUM_CUH
#define AX_BACKEND_CUDA_COLSUM_CUH
#include "backend/cuda/cuda.h"

#define AX_COLSUM_X    32  /* columns of a block: a warp's coalesced row segment */
#define AX_COLSUM_Y    8   /* threads down the rows */
#define AX_COLSUM_ROWS 256 /* rows of a chunk: 32 per thread */

template <int NO, class F>
__global__ static void ax_colsum_k(float *out0, float *out1, float *part, unsigned *done, int M, int n, int nchunks,
                                   F f) {
    __shared__ float sh[NO][AX_COLSUM_Y][AX_COLSUM_X];
    __shared__ unsigned arrived;
    int x = threadIdx.x, y = threadIdx.y, j = blockIdx.x * AX_COLSUM_X + x;
    /* chunks beyond gridDim.y's limit loop; c depends on the block only, so
     * every thread meets the same barriers */
    for (int c = blockIdx.y; c < nchunks; c += gridDim.y) {
        float s[NO];
        for (int o = 0; o < NO; o++) s[o] = 0.0f;
        int i0 = c * AX_COLSUM_ROWS, i1 = M - i0 < AX_COLSUM_ROWS ? M : i0 + AX_COLSUM_ROWS;
        if (j < n)
            for (int i = i0 + y; i < i1; i += AX_COLSUM_Y) {
                float v[NO];
                f(i, j, v);
                for (int o = 0; o < NO; o++) s[o] += v[o];
            }
        for (int o = 0; o < NO; o++) sh[o][y][x] = s[o];
        __syncthreads();
        if (y == 0 && j < n)
            for (int o = 0; o < NO; o++) {
                float a = sh[o][0][x];
                for (int k = 1; k < AX_COLSUM_Y; k++) a += sh[o][k][x];
                part[((size_t)o * nchunks + c) * n + j] = a;
            }
        __syncthreads(); /* sh is written again by the next chunk */
    }
    __threadfence(); /* this block's partials, seen by whichever block adds them, */
    __syncthreads(); /* before its count */
    if (x == 0 && y == 0) arrived = atomicAdd(&done[blockIdx.x], 1u);
    __syncthreads();
    if (arrived != gridDim.y - 1) return;
    __threadfence(); /* the other blocks' partials, read after their counts (volatile: from L2, not L1) */
    if (y == 0 && j < n)
        for (int o = 0; o < NO; o++) {
            const volatile float *p = part + (size_t)o * nchunks * n + j;
            float a = 0.0f;
            for (int c = 0; c < nchunks; c++) a += p[(size_t)c * n];
            (o ? out1 : out0)[j] += a;
        }
    if (x == 0 && y == 0) done[blockIdx.x] = 0; /* for the next launch: every block of the tile has counted */
}

/* the tiles' counters, zero between launches: grown (zeroed) before a
 * launch needs more, which happens in the first step, outside any capture */
static unsigned *ax_colsum_counters(unsigned tiles) {
    static unsigned *c, have;
    if (tiles > have) {
        if (c) ax_cuda_free(c);
        c = (unsigned *)ax_cuda_alloc(tiles * sizeof(unsigned));
        have = tiles;
    }
    return c;
}

/* out0 (and out1 when NO is 2) += column sums of f over M rows of n columns;
 * one launch queued on the backend's stream, the partials in ax_cuda_tmp's
 * COLSUM slot */
template <int NO, class F> static void ax_colsum(float *out0, float *out1, int M, int n, F f) {
    static_assert(NO == 1 || NO == 2, "one or two outputs");
    if (M <= 0 || n <= 0) return;
    int nchunks = (M + AX_COLSUM_ROWS - 1) / AX_COLSUM_ROWS;
    float *part = (float *)ax_cuda_tmp(AX_CUDA_TMP_COLSUM, (size_t)NO * nchunks * n * sizeof(float));
    dim3 grid(ax_cuda_blocks(n, AX_COLSUM_X), nchunks < 65535 ? nchunks : 65535), block(AX_COLSUM_X, AX_COLSUM_Y);
    unsigned *done = ax_colsum_counters(grid.x);
    ax_colsum_k<NO><<<grid, block, 0, ax_cuda_stream()>>>(out0, out1, part, done, M, n, nchunks, f);
}
#endif
