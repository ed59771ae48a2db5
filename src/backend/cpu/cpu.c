/* The CPU backend's table. */
#include "backend/cpu/cpu.h"
#include "util/err.h"
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ax_host_parallel(int64_t n, void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx) {
    const int64_t chunk = 1 << 16;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t lo = 0; lo < n; lo += chunk) fn(ctx, lo, lo + chunk < n ? lo + chunk : n);
}

/* Zeroed and 64-byte aligned: the model carves its buffers at 64-byte offsets
 * from one block, so none of their vector loads splits a cache line (which
 * slows elementwise kernels: docs/design.md, Choices and why). Over-allocated from calloc
 * (its zero pages are touched on first use, not here), the block's start kept
 * just before the pointer handed out. */
static void *cpu_alloc(size_t bytes) {
    char *raw = ax_calloc(bytes + 64 + sizeof(void *), 1);
    char *p = (char *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);
    memcpy(p - sizeof(void *), &raw, sizeof raw);
    return p;
}
static void cpu_free(void *p) {
    if (!p) return;
    void *raw;
    memcpy(&raw, (char *)p - sizeof raw, sizeof raw);
    free(raw);
}
static void cpu_copy(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }
static void cpu_copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows) {
    for (size_t r = 0; r < rows; r++) memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
}
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
/* accumulated in order, in one double */
/* in order of i: the bits the loss had when the host summed it */
static void cpu_wsum(double *acc, const float *x, const float *w, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)(w ? w[i] : 1.0f) * x[i];
    *acc += s;
}

static double cpu_sumsq(int n, const float *const *x, const size_t *len) {
    double s = 0;
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < len[r]; i++) s += (double)x[r][i] * x[r][i];
    return s;
}

const ax_backend ax_cpu_backend = {
    .name = "cpu",
    .set_threads = ax_cpu_set_threads,
    .threads = ax_cpu_threads,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .copy_rows = cpu_copy_rows,
    .host_memory = 1,
    .zero = cpu_zero,
    .sumsq = cpu_sumsq,
    .wsum = cpu_wsum,
    .gemm = ax_cpu_gemm,
    .gemm_kernel = ax_cpu_gemm_kernel,
    .gemm_timing = ax_cpu_gemm_timing,
    .gemm_stats = ax_cpu_gemm_stats,
    .cast = ax_cpu_cast,
    .transpose = ax_cpu_transpose,
    .layernorm_forward = ax_cpu_layernorm_forward,
    .layernorm_backward = ax_cpu_layernorm_backward,
    .rmsnorm_forward = ax_cpu_rmsnorm_forward,
    .rmsnorm_backward = ax_cpu_rmsnorm_backward,
    .swiglu_forward = ax_cpu_swiglu_forward,
    .swiglu_backward = ax_cpu_swiglu_backward,
    .rope = ax_cpu_rope,
    .bias_gelu_forward = ax_cpu_bias_gelu_forward,
    .gelu_backward = ax_cpu_gelu_backward,
    .add = ax_cpu_add,
    .bias_add = ax_cpu_bias_add,
    .bias_round = ax_cpu_bias_round,
    .bias_grad = ax_cpu_bias_grad,
    .embedding_forward = ax_cpu_embedding_forward,
    .embedding_backward = ax_cpu_embedding_backward,
    .xent = ax_cpu_xent,
    .attention_scratch = ax_cpu_attention_scratch,
    .attention_forward = ax_cpu_attention_forward,
    .attention_backward = ax_cpu_attention_backward,
    .attention_decode = ax_cpu_attention_decode,
    .adamw_all = ax_cpu_adamw_all,
};
