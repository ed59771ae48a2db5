/* The CUDA runtime as the CUDA backend uses it, on the host (with the device
 * language of emu_device.h): "device" memory is host memory, a
 * stream runs each call to completion as it is queued, and events hold the
 * host's clock. C++ names, so that nothing here binds to the real libraries the
 * test program also links. */
#pragma once
#include "emu_device.h"

typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorNotReady = 600,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureUnjoined = 904,
    cudaErrorStreamCaptureIsolation = 905,
    cudaErrorCapturedEvent = 907
} cudaError_t;
typedef enum {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
    cudaMemcpyDefault
} cudaMemcpyKind;
enum { cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
struct CUevent_st;
typedef CUevent_st *cudaEvent_t;
struct cudaUUID_t {
    char bytes[16];
};
struct cudaDeviceProp {
    char name[256];
    cudaUUID_t uuid;
    size_t totalGlobalMem, sharedMemPerBlockOptin;
    int major, minor;
};

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d);
cudaError_t cudaGetLastError();
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaMallocBytes(void **p, size_t bytes);
template <class T> static inline cudaError_t cudaMalloc(T **p, size_t bytes) {
    return cudaMallocBytes((void **)p, bytes);
}
cudaError_t cudaMallocHostBytes(void **p, size_t bytes);
template <class T> static inline cudaError_t cudaMallocHost(T **p, size_t bytes) {
    return cudaMallocHostBytes((void **)p, bytes);
}
cudaError_t cudaFree(void *p);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total);
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind k, cudaStream_t s);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                              cudaMemcpyKind k, cudaStream_t s);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
/* graphs: a capture keeps the work of its streams (runtime.cc says which,
 * and what it refuses, as CUDA's global capture mode does) */
enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal,
    cudaStreamCaptureModeThreadLocal,
    cudaStreamCaptureModeRelaxed
};
struct CUgraph_st;
typedef CUgraph_st *cudaGraph_t;
struct CUgraphExec_st;
typedef CUgraphExec_st *cudaGraphExec_t;
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e);
/* a kernel's dynamic shared memory limit, up to the device's opt-in figure (emu_device.h) */
template <class F> static inline cudaError_t cudaFuncSetAttribute(F f, cudaFuncAttribute, int v) {
    return emu_smem_raise((const void *)f, v) ? cudaErrorInvalidValue : cudaSuccess;
}
