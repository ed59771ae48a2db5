/* The CUDA device language on the host, for running the CUDA backend's
 * kernels without a GPU (tests/cuda_emu/README.md): a launch runs its blocks
 * one after another, each block's threads as fibers (sched.cc) that switch
 * only at barriers, so
 *
 *   kernel<<<grid, block, smem, stream>>>(args);   // rewritten by convert.sh to
 *   emu_launch(grid, block, smem, stream, (const void *)&kernel, [=] { kernel(args); });
 *
 * runs the kernel's own source. One block at a time makes a function's
 * static variable its block's shared memory (__shared__ is `static`); the
 * dynamic shared memory (extern __shared__, rewritten to a pointer to
 * emu_smem) starts as NaN, and a block must write exactly the bytes its
 * launch asked for. Warp shuffles meet at warp barriers; atomics are plain
 * read-modify-writes, as no fiber runs between a read and its write. */
#pragma once
#include <algorithm>
#include <functional>
#include <vector>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
using std::max;
using std::min;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__   static
#define __restrict__ __restrict

struct uint3e {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern uint3e threadIdx, blockIdx;
extern dim3 gridDim, blockDim;
struct CUstream_st;
typedef CUstream_st *cudaStream_t;

/* the dynamic shared memory of the running block, and its capacity */
#define EMU_SMEM_MAX (1u << 20)
extern unsigned char emu_smem[];
/* The most dynamic shared memory a launch of a kernel may ask for: 48 KiB
 * unless cudaFuncSetAttribute raised that kernel's limit (emu_smem_raise:
 * 0, or -1 past the emulated device's opt-in figure, an sm_90 device's, so
 * that attn_plan.h's selection takes its paths). Per kernel, as on a GPU:
 * a launch of one kernel is not covered by another's consent. */
#define EMU_SMEM_OPTIN (227u << 10)
int emu_smem_raise(const void *kernel, int bytes);

/* kernel: the launched function's address (convert.sh), whose limit applies;
 * name: its name as the source spells it, for the launch tally */
void emu_launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s, const void *kernel, std::function<void()> body,
                const char *name = "kernel");
/* The launch tally: each piece of device work counted by kind as it runs
 * (so a graph replay counts what it runs), a kernel by its name, the other
 * kinds as "gemm", "memset", "copy", "sort". With EMU_LAUNCHES=FILE set, the
 * process writes "count kind" lines to FILE at exit (one process a file). */
void emu_count(const char *kind);
/* The work queued on a stream (launches, copies, memsets, GEMMs, sorts),
 * checked as it is queued, runs at once, unless a capture is open and the
 * stream is in it (cudaStreamBeginCapture .. cudaStreamEndCapture): the
 * runtime's hook then keeps it, to run at each cudaGraphLaunch, and returns
 * true. No hook (the flash emulator has no runtime): it runs. */
void emu_enqueue(cudaStream_t s, std::function<void()> work);
extern bool (*emu_capture_hook)(cudaStream_t s, std::function<void()> &work);
void emu_syncthreads();
void emu_syncwarp();
int emu_lane();
float emu_shfl(float v, int src_lane);
#define __syncthreads() emu_syncthreads()
#define __threadfence() ((void)0) /* one block at a time: every write is seen */
#define __syncwarp(...) emu_syncwarp()
static inline float __shfl_sync(unsigned, float v, int src) { return emu_shfl(v, src); }
static inline float __shfl_xor_sync(unsigned, float v, int mask) { return emu_shfl(v, (emu_lane() ^ mask) & 31); }
template <class T> static inline T atomicAdd(T *p, T v) {
    T old = *p;
    *p = old + v;
    return old;
}
