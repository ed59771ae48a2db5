/* host emulation of the CUDA bits attention_flash.cu uses: threads of a block as ucontext fibers */
#pragma once
#include <stdint.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <functional>
#include <algorithm>
using std::min;
#define __global__
#define __device__
#define __shared__
#define __launch_bounds__(n)
#define __align__(n) __attribute__((aligned(n)))
struct uint3e {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern uint3e threadIdx, blockIdx;
extern dim3 gridDim, blockDim;
void emu_syncthreads();
void emu_syncwarp();
#define __syncthreads() emu_syncthreads()
#define __syncwarp()    emu_syncwarp()
typedef void *cudaStream_t;
static inline cudaStream_t ax_cuda_stream() { return 0; }
#define AX_CUDA_DONE()   ((void)0)
#define AX_CHECK_CUDA(x) (x)
enum { cudaFuncAttributeMaxDynamicSharedMemorySize };
int cudaFuncSetAttribute(const void *f, int attr, int v);
enum { AX_CUDA_TMP_ATTN };
[[noreturn]] void ax_fatal(const char *file, int line, const char *fmt, ...);
void *ax_cuda_tmp(int slot, size_t bytes);
void ax_cuda_attention_rowdot(float *D, const float *dout, const float *out, int B, int T, int Hl, int hd);
void emu_launch(dim3 g, int nt, size_t smem, cudaStream_t s, std::function<void()> f);
extern unsigned char ax_fsm[];
