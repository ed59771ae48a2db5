/* Token + position embedding: gather of the owned vocabulary rows (zeros for
 * others), completed over the vocabulary group by its reducer, plus the
 * position rows. Backward: a thread per column walks the rows in order, as
 * the CPU's threads do, so repeated tokens accumulate deterministically. */
#include "backend/cuda/cuda.h"

#define NT 256

static unsigned grid_of(size_t n) { size_t b = (n + NT - 1) / NT; return (unsigned)(b < 65535 * 8 ? b : 65535 * 8); }

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

void ax_cuda_embedding_forward(float *out, const int32_t *tokens, const int32_t *pos, const float *wte, const float *wpe,
                               int M, int T, int v0, int Vl, int Cl, const ax_reducer *Y) {
    size_t n = (size_t)M * Cl;
    if (!n) return;
    gather<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(out, tokens, wte, v0, Vl, Cl, n);
    AX_CUDA_DONE();
    Y->sum(Y->ctx, out, n);
    if (!wpe) return;                   /* rotary positions act in attention instead */
    add_pos<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(out, pos, wpe, T, Cl, n);
    AX_CUDA_DONE();
}

__global__ static void scatter(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                               int M, int T, int v0, int Vl, int Cl) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= Cl) return;
    for (int i = 0; i < M; i++) {
        float d = dout[(size_t)i * Cl + j];
        if (dwpe) dwpe[(size_t)position(pos, i, T) * Cl + j] += d;
        int v = tokens[i] - v0;
        if (v >= 0 && v < Vl) dwte[(size_t)v * Cl + j] += d;
    }
}

void ax_cuda_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                                int M, int T, int v0, int Vl, int Cl) {
    if (!M || !Cl) return;
    scatter<<<ax_cuda_blocks(Cl, 64), 64, 0, ax_cuda_stream()>>>(dwte, dwpe, dout, tokens, pos, M, T, v0, Vl, Cl);
    AX_CUDA_DONE();
}
