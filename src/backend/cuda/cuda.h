/* The CUDA backend's entries (see backend/backend.h for what each computes)
 * and, for the .cu files, the error checks and launch helpers they share.
 *
 * Every entry queues its kernels on one stream and returns without waiting
 * for them (ax_cuda_done): the device runs them in order, a kernel's reducer
 * and every collective are queued behind them (src/comm/nccl.c), and the
 * host sees results only through copy, which drains the stream. */
#ifndef AX_BACKEND_CUDA_CUDA_H
#define AX_BACKEND_CUDA_CUDA_H
#include "backend/backend.h"
#include "backend/cuda/attn_block.h"
#include "backend/cuda/attn_plan.h"

#ifdef __cplusplus
extern "C" {
#endif
int ax_cuda_open(int local_rank);
void ax_cuda_device_id(char *id);
void *ax_cuda_host_alloc(size_t bytes);
void ax_cuda_host_free(void *p);
size_t ax_cuda_mem_free(void);
void *ax_cuda_alloc(size_t bytes);
void ax_cuda_free(void *p);
void ax_cuda_copy(void *dst, const void *src, size_t bytes);
void ax_cuda_copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows);
void ax_cuda_copy_async(void *dst, const void *src, size_t bytes);
void ax_cuda_wsum(double *acc, const float *x, const float *w, int64_t n);
void ax_cuda_zero(void *p, size_t bytes);
double ax_cuda_sumsq(int n, const float *const *x, const size_t *len);
void ax_cuda_sync(void);
void ax_cuda_capture_begin(void);
void *ax_cuda_capture_end(void);
int ax_cuda_replay(void *graph);
void ax_cuda_graph_free(void *graph);
/* 1 between ax_cuda_capture_begin and _end: an event recorded then cannot be
 * read afterwards (cudaErrorCapturedEvent), so timing events are left out */
int ax_cuda_capturing(void);
void ax_cuda_set_threads(int n);
int ax_cuda_threads(void);
/* the backend's one compute stream (a cudaStream_t) */
struct CUstream_st *ax_cuda_stream(void);
/* A side stream for one group's collectives (side.cu; src/comm/nccl.c):
 *   cudaStream_t s = ax_cuda_side_fork(side);  // after the compute stream's work so far
 *   ncclAllReduce(..., s); ax_cuda_side_done(side);
 *   seconds += ax_cuda_side_join(side);         // the compute stream waits for it; the host does not
 * join returns the seconds of earlier joins' waits now complete;
 * ax_cuda_side_seconds(side, 1) waits for and returns the rest. */
typedef struct ax_cuda_side ax_cuda_side;
ax_cuda_side *ax_cuda_side_new(void);
void ax_cuda_side_free(ax_cuda_side *s); /* after its work has run */
struct CUstream_st *ax_cuda_side_fork(ax_cuda_side *s);
void ax_cuda_side_done(ax_cuda_side *s);
double ax_cuda_side_join(ax_cuda_side *s);
double ax_cuda_side_seconds(ax_cuda_side *s, int block);
int ax_cuda_side_idle(const ax_cuda_side *s); /* its work so far has run */
/* "NVIDIA H200 (sm_90, 139 GiB)" of the rank's device */
const char *ax_cuda_device_name(void);
void ax_cuda_gemm(int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C);
void ax_cuda_gemm_epilogue(ax_epilogue e, ax_mat A, int transA, ax_mat B, int transB, ax_mat C, const float *bias,
                           void *pre);
const char *ax_cuda_gemm_kernel(ax_dtype t, int *emulated);
void ax_cuda_gemm_timing(int on);
void ax_cuda_gemm_stats(double *seconds, double *flops);
void ax_cuda_cast(void *dst, ax_dtype dt, const void *src, ax_dtype st, size_t n);
void ax_cuda_layernorm_forward(void *out, ax_dtype ot, float *mean, float *rstd, float *x, const float *bias,
                               const float *r, const float *w, const float *b, int M, int Cl, int C, float eps,
                               float *scratch, const ax_reducer *X);
void ax_cuda_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                                const float *mean, const float *rstd, int M, int Cl, int C, float *scratch,
                                const ax_reducer *X);
void ax_cuda_rmsnorm_forward(void *out, ax_dtype ot, float *rstd, float *x, const float *bias, const float *r,
                             const float *w, int M, int Cl, int C, float eps, const ax_reducer *X);
void ax_cuda_rmsnorm_backward(float *dx, float *dw, const float *dout, const float *x, const float *w,
                              const float *rstd, int M, int Cl, int C, float *scratch, const ax_reducer *X);
void ax_cuda_bias_gelu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *y, const float *bias, int M,
                               int n);
void ax_cuda_gelu_backward(void *dx, ax_dtype dt, float *db, const void *x, ax_dtype xt, const float *dout, int M,
                           int n);
void ax_cuda_swiglu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *gu, int M, int F);
void ax_cuda_swiglu_backward(void *dgu, ax_dtype dt, const void *gu, ax_dtype gt, const float *dout, int M, int F);
void ax_cuda_rope(float *x, int ld, int M, int T, const int32_t *pos, int nh, int hd, const float *cs, float sign);
void ax_cuda_add(float *y, const float *x, size_t n);
void ax_cuda_bias_add(float *y, const float *bias, int M, int n);
void ax_cuda_bias_round(float *y, void *out, ax_dtype ot, const float *bias, int M, int n);
void ax_cuda_bias_grad(float *db, const float *dy, int M, int n);
void ax_cuda_embedding_forward(float *out, const int32_t *tokens, const int32_t *pos, const float *wte,
                               const float *wpe, int M, int T, int v0, int Vl, int Cl, const ax_reducer *Y);
void ax_cuda_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                                int M, int T, int v0, int Vl, int Cl);
void ax_cuda_xent(const void *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl, int v0,
                  int V, const float *dscale, void *dgrad, ax_dtype dt, float *scratch, const ax_reducer *Y);
size_t ax_cuda_attention_scratch(int T, int hd);
/* the attention path (AX_CUDA_ATTN_*) for models of GEMM precision dt and
 * head dimension hd on this rank's device: attn_plan.h's rules for what
 * AXONN_CUDA_ATTN asks (read at open: tiled, mm, flash or auto; unset, mm);
 * a fallback from flash or auto is logged once per head size, one line on
 * the node's first rank */
int ax_cuda_attention_mode(ax_dtype dt, int hd);
/* tests: ask for another path (AX_ATTN_ASK_*) from now on */
void ax_cuda_attention_ask(int ask);
/* what the selection reads of the open device: compute capability (10 major
 * + minor), its opt-in shared memory per block, the AXONN_CUDA_ATTN ask, and
 * whether this rank logs (node-local rank 0) */
typedef struct {
    int sm;
    size_t smem_optin;
    int attn_ask;
    int logs;
} ax_cuda_caps;
const ax_cuda_caps *ax_cuda_caps_get(void);
void ax_cuda_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd,
                               ax_dtype dt, float *scratch, int nthr);
void ax_cuda_attention_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                                int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr);
void ax_cuda_attention_decode(float *out, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl,
                              int KVl, int hd, int Tmax);
void ax_cuda_attention_block_forward(const ax_attn_block *a, float *out, float *lse, int merge, float *scratch,
                                     int nthr);
void ax_cuda_attention_block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                      const float *out, const float *lse, float *scratch, int nthr);
void ax_cuda_adamw_all(float *w, const float *g, float *m, float *v, int64_t n, const int64_t *ranges, int nr,
                       ax_bf16 *wh, int64_t nh, ax_adamw_step s);
/* from util/err.h, which the .cu files do not include (it brings in mpi.h) */
void ax_fatal(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
int ax_err_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *ax_malloc(size_t n); /* abort on failure */
void *ax_calloc(size_t n, size_t sz);
#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>

#define AX_CHECK_CUDA(call)                                                                                         \
    do {                                                                                                            \
        cudaError_t ax_e_ = (call);                                                                                 \
        if (ax_e_ != cudaSuccess)                                                                                   \
            ax_fatal(__FILE__, __LINE__, "%s: %s (%s)", #call, cudaGetErrorString(ax_e_), cudaGetErrorName(ax_e_)); \
    } while (0)
/* after a kernel entry's launches: launch errors (the stream drained too
 * under AXONN_CUDA_SYNC=1), and the entry's device time under
 * AXONN_CUDA_PROFILE=1 (a table on stderr at exit) */
void ax_cuda_done(const char *file, int line, const char *func);
#define AX_CUDA_DONE() ax_cuda_done(__FILE__, __LINE__, __func__)
/* a device buffer for a kernel's own temporaries, grown on first use to the
 * largest request of its slot and then reused (no cudaMalloc per step) */
enum {
    AX_CUDA_TMP_GEMM_A,
    AX_CUDA_TMP_GEMM_B,
    AX_CUDA_TMP_GEMM_C,
    AX_CUDA_TMP_ATTN,
    AX_CUDA_TMP_ATTN_MM,
    AX_CUDA_TMP_SUMSQ,
    AX_CUDA_TMP_COLSUM,
    AX_CUDA_TMP_EMB_KEYS,
    AX_CUDA_TMP_EMB_SORT,
    AX_CUDA_TMP_SLOTS
};

/* attention on the matrix units (attention_mm.cu) and as flash attention on
 * them (attention_flash.cu), and their passes */
void ax_cuda_attention_mm_forward(void *out, float *lse, const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl,
                                  int hd);
void ax_cuda_attention_mm_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                                   ax_dtype st, int B, int T, int Hl, int KVl, int hd);
void ax_cuda_attention_flash_forward(void *out, float *lse, const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl,
                                     int hd);
void ax_cuda_attention_flash_backward(float *dqkv, const float *dout, const void *out, const float *lse,
                                      const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl, int hd);
/* one block (ax_attn_block) as flash attention: the forward, and the backward's
 * share added to dq, dk, dv */
void ax_cuda_attention_flash_block_forward(const ax_attn_block *a, float *out, float *lse, int merge);
void ax_cuda_attention_flash_block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                            const float *out, const float *lse);
/* D (B, Hl, T) = rowsum(dout o out) per query head, the softmax backward's row term; out stored in ot */
void ax_cuda_attention_rowdot(float *D, const float *dout, const void *out, ax_dtype ot, int B, int T, int Hl, int hd);
/* D[(b*Hl + h)*Tq + i] = dout_i . out_i over rows i < Tq of Sq per sequence, queued */
void ax_cuda_attention_rowdot_rows(float *D, const float *dout, const void *out, ax_dtype ot, int B, int Sq, int Tq,
                                   int Hl, int hd);
void *ax_cuda_tmp(int slot, size_t bytes);

static inline unsigned ax_cuda_blocks(size_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

/* sum and max over a block of blockDim.x threads (a multiple of 32); every thread gets the result */
__device__ inline float ax_warp_sum(float v) {
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ inline float ax_warp_max(float v) {
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ inline float ax_block_sum(float v) {
    __shared__ float sh[32];
    v = ax_warp_sum(v);
    __syncthreads(); /* sh may still be read by a previous call */
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < blockDim.x / 32 ? sh[threadIdx.x % 32] : 0.0f;
    return ax_warp_sum(v);
}
__device__ inline float ax_block_max(float v) {
    __shared__ float sh[32];
    v = ax_warp_max(v);
    __syncthreads();
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < blockDim.x / 32 ? sh[threadIdx.x % 32] : -INFINITY;
    return ax_warp_max(v);
}
#endif
#endif
