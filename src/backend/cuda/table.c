/* The CUDA backend's table. */
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_table.h"

const ax_backend ax_cuda_backend = {
    .name = "cuda",
    .open = ax_cuda_open, .bind = ax_cuda_bind,
    .set_threads = ax_cuda_set_threads, .threads = ax_cuda_threads,
    .alloc = ax_cuda_alloc, .free = ax_cuda_free, .copy = ax_cuda_copy,
    .host_memory = 0, .zero = ax_cuda_zero, .sumsq = ax_cuda_sumsq, .sync = ax_cuda_sync,
    .gemm = ax_cuda_gemm, .gemm_kernel = ax_cuda_gemm_kernel,
    .gemm_timing = ax_cuda_gemm_timing, .gemm_stats = ax_cuda_gemm_stats, .cast = ax_cuda_cast,
    .layernorm_forward = ax_cuda_layernorm_forward, .layernorm_backward = ax_cuda_layernorm_backward,
    .rmsnorm_forward = ax_cuda_rmsnorm_forward, .rmsnorm_backward = ax_cuda_rmsnorm_backward,
    .swiglu_forward = ax_cuda_swiglu_forward, .swiglu_backward = ax_cuda_swiglu_backward, .rope = ax_cuda_rope,
    .gelu_forward = ax_cuda_gelu_forward, .gelu_backward = ax_cuda_gelu_backward,
    .add = ax_cuda_add, .bias_add = ax_cuda_bias_add, .bias_grad = ax_cuda_bias_grad,
    .embedding_forward = ax_cuda_embedding_forward, .embedding_backward = ax_cuda_embedding_backward,
    .xent = ax_cuda_xent,
    .attention_scratch = ax_cuda_attention_scratch, .attention_forward = ax_cuda_attention_forward,
    .attention_backward = ax_cuda_attention_backward, .attention_decode = ax_cuda_attention_decode,
    .adamw = ax_cuda_adamw,
};
