/* The device, its stream and its memory: plain device memory (cudaMalloc,
 * not managed memory, which can hang a GPU asked for more than it has free),
 * allocated once per buffer and zero-filled like the CPU side; the host
 * reaches it through ax_cuda_copy. */
#include "backend/cuda/cuda.h"
#include <stdio.h>
#include <stdlib.h>

static int device = -1;
static cudaStream_t stream;

int ax_cuda_open(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();             /* clear the sticky "no device" so later queries start clean */
        return ax_err_set("--backend cuda: no usable CUDA device (%s)",
                          e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    if (device < 0) ax_cuda_bind(0);
    return 0;
}

void ax_cuda_bind(int local_rank) {
    int n = 0;
    AX_CHECK_CUDA(cudaGetDeviceCount(&n));
    if (device >= 0 && device == local_rank % n) return;
    device = local_rank % n;
    AX_CHECK_CUDA(cudaSetDevice(device));
    if (stream) AX_CHECK_CUDA(cudaStreamDestroy(stream));
    AX_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
}

cudaStream_t ax_cuda_stream(void) {
    if (device < 0) ax_cuda_bind(0);
    return stream;
}

const char *ax_cuda_device_name(void) {
    static char s[320];
    cudaDeviceProp p;
    AX_CHECK_CUDA(cudaGetDeviceProperties(&p, device < 0 ? 0 : device));
    snprintf(s, sizeof s, "%s (sm_%d%d, %.0f GiB)", p.name, p.major, p.minor, p.totalGlobalMem / 1073741824.0);
    return s;
}

/* Kernels stay queued: the host goes on to queue the next ones, and meets
 * the device again only at copy (or an NCCL join). A kernel's fault then
 * surfaces at that later call; AXONN_CUDA_SYNC=1 drains the stream after
 * every entry so that the error names the kernel's file and line. */
void ax_cuda_done(const char *file, int line) {
    static int sync = -1;
    if (sync < 0) sync = getenv("AXONN_CUDA_SYNC") && atoi(getenv("AXONN_CUDA_SYNC")) > 0;
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && sync) e = cudaStreamSynchronize(ax_cuda_stream());
    if (e != cudaSuccess) ax_fatal(file, line, "CUDA kernel: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
}

void *ax_cuda_alloc(size_t bytes) {
    void *p;
    if (device < 0) ax_cuda_bind(0);
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        ax_fatal(__FILE__, __LINE__, "cudaMalloc(%zu bytes): %s (%zu of %zu bytes free)", bytes, cudaGetErrorString(e),
                 fr, tot);
    }
    AX_CHECK_CUDA(cudaMemsetAsync(p, 0, bytes ? bytes : 1, stream));
    AX_CHECK_CUDA(cudaStreamSynchronize(stream));
    return p;
}

void ax_cuda_free(void *p) {
    if (!p) return;
    AX_CHECK_CUDA(cudaStreamSynchronize(ax_cuda_stream()));   /* queued kernels may still read it */
    AX_CHECK_CUDA(cudaFree(p));
}

void ax_cuda_zero(void *p, size_t bytes) {
    if (bytes) AX_CHECK_CUDA(cudaMemsetAsync(p, 0, bytes, ax_cuda_stream()));
}

void ax_cuda_copy(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    AX_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ax_cuda_stream()));
    AX_CHECK_CUDA(cudaStreamSynchronize(ax_cuda_stream()));
}

void *ax_cuda_tmp(int slot, size_t bytes) {
    static void *buf[AX_CUDA_TMP_SLOTS];
    static size_t cap[AX_CUDA_TMP_SLOTS];
    if (bytes > cap[slot]) {
        if (buf[slot]) ax_cuda_free(buf[slot]);
        AX_CHECK_CUDA(cudaMalloc(&buf[slot], bytes));
        cap[slot] = bytes;
    }
    return buf[slot];
}

/* one host thread drives the device; the kernels' parallelism is the GPU's */
void ax_cuda_set_threads(int n) { (void)n; }
int ax_cuda_threads(void) { return 1; }
