/* what attention_flash.cu and attention.cu take from the CUDA backend's
 * cuda.h, for their host emulation alone (the device language:
 * tests/cuda_emu/include/emu_device.h) */
#pragma once
#include "emu_device.h"
#include "backend/cuda/attn_block.h"
#include "backend/cuda/attn_plan.h"
static inline cudaStream_t ax_cuda_stream() { return 0; }
#define AX_CUDA_DONE()   ((void)0)
#define AX_CHECK_CUDA(x) (x)
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
template <class F> static inline int cudaFuncSetAttribute(F f, cudaFuncAttribute, int v) {
    if (emu_smem_raise((const void *)f, v)) {
        fprintf(stderr, "smem %d too big\n", v);
        exit(1);
    }
    return 0;
}
enum { AX_CUDA_TMP_ATTN, AX_CUDA_TMP_ATTN_MM };
[[noreturn]] void ax_fatal(const char *file, int line, const char *fmt, ...);
void *ax_cuda_tmp(int slot, size_t bytes);
void ax_cuda_attention_rowdot(float *D, const float *dout, const void *out, ax_dtype ot, int B, int T, int Hl, int hd);
void ax_cuda_attention_rowdot_rows(float *D, const float *dout, const void *out, ax_dtype ot, int B, int Sq, int Tq,
                                   int Hl, int hd);
void ax_cuda_attention_flash_forward(void *out, float *lse, const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl,
                                     int hd);
void ax_cuda_attention_flash_backward(float *dqkv, const float *dout, const void *out, const float *lse,
                                      const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl, int hd);
void ax_cuda_attention_flash_block_forward(const ax_attn_block *a, float *out, float *lse, int merge);
void ax_cuda_attention_flash_block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                            const float *out, const float *lse);
/* attention.cu's (tiled) entries, emulated in tiled_emu.cc */
void ax_cuda_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd,
                               ax_dtype dt, float *scratch, int nthr);
void ax_cuda_attention_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                                int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr);
void ax_cuda_attention_block_forward(const ax_attn_block *a, float *out, float *lse, int merge, float *scratch,
                                     int nthr);
void ax_cuda_attention_block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                      const float *out, const float *lse, float *scratch, int nthr);
/* the path the emulated selection returns (AX_CUDA_ATTN_TILED or _FLASH; emu.cc sets it) */
extern int emu_attn_mode;
static inline int ax_cuda_attention_mode(ax_dtype, int) { return emu_attn_mode; }
void ax_cuda_attention_mm_forward(void *out, float *lse, const void *qkv, ax_dtype st, int B, int T, int Hl, int KVl,
                                  int hd);
void ax_cuda_attention_mm_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                                   ax_dtype st, int B, int T, int Hl, int KVl, int hd);
static inline unsigned ax_cuda_blocks(size_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }
static inline float ax_warp_sum(float v) {
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static inline float ax_warp_max(float v) {
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
