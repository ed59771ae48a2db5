/* Side streams: one per group with device collectives (comm/nccl.c), beside
 * the compute stream. Work is forked onto a side stream behind the compute
 * stream's work so far, and joined back: the compute stream waits for it
 * before its next work, and the host never does. Each join's wait is timed
 * by an event pair on the compute stream, read later without waiting (a
 * group's blocked time). Here, not in comm/, so that only the backend calls
 * the CUDA runtime. */
#include "backend/cuda/cuda.h"
#include <stdlib.h>
#include <string.h>

struct ax_cuda_side {
    cudaStream_t stream;
    cudaEvent_t ready, done; /* compute -> side, side -> compute */
    /* the compute stream's waits at the joins not yet read: a ring of event
     * pairs recorded on it before and after each join, n of them from first */
    struct {
        cudaEvent_t before, after;
    } * waits;
    int cap, first, n;
};

ax_cuda_side *ax_cuda_side_new(void) {
    ax_cuda_side *s = (ax_cuda_side *)ax_calloc(1, sizeof *s);
    AX_CHECK_CUDA(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    AX_CHECK_CUDA(cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming));
    AX_CHECK_CUDA(cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
    return s;
}

void ax_cuda_side_free(ax_cuda_side *s) {
    if (!s) return;
    cudaStreamSynchronize(s->stream); /* at teardown: errors are not fatal */
    cudaStreamDestroy(s->stream);
    cudaEventDestroy(s->ready);
    cudaEventDestroy(s->done);
    for (int i = 0; i < s->cap; i++) {
        cudaEventDestroy(s->waits[i].before);
        cudaEventDestroy(s->waits[i].after);
    }
    free(s->waits);
    free(s);
}

struct CUstream_st *ax_cuda_side_fork(ax_cuda_side *s) {
    AX_CHECK_CUDA(cudaEventRecord(s->ready, ax_cuda_stream()));
    AX_CHECK_CUDA(cudaStreamWaitEvent(s->stream, s->ready, 0));
    return s->stream;
}

void ax_cuda_side_done(ax_cuda_side *s) { AX_CHECK_CUDA(cudaEventRecord(s->done, s->stream)); }

/* the seconds of the joins' waits that are read, oldest first: those
 * complete (block 0: the host does not wait), else every one (block 1) */
double ax_cuda_side_seconds(ax_cuda_side *s, int block) {
    double sec = 0;
    for (; s->n; s->n--, s->first = (s->first + 1) % s->cap) {
        cudaEvent_t before = s->waits[s->first].before, after = s->waits[s->first].after;
        if (block) AX_CHECK_CUDA(cudaEventSynchronize(after));
        else {
            cudaError_t e = cudaEventQuery(after);
            if (e == cudaErrorNotReady) break;
            AX_CHECK_CUDA(e);
        }
        float ms;
        AX_CHECK_CUDA(cudaEventElapsedTime(&ms, before, after));
        sec += ms * 1e-3;
    }
    return sec;
}

/* room for one more pair: the ring doubled, the pending pairs kept in order
 * (it grows in the first steps, while joins outrun the device, then stays) */
static void waits_grow(ax_cuda_side *s) {
    int cap = s->cap ? 2 * s->cap : 16;
    size_t one = sizeof *s->waits;
    char *w = (char *)ax_calloc((size_t)cap, one);
    if (s->cap) { /* full: the oldest at first, up to the end, then from 0 */
        memcpy(w, s->waits + s->first, (size_t)(s->cap - s->first) * one);
        memcpy(w + (size_t)(s->cap - s->first) * one, s->waits, (size_t)s->first * one);
    }
    free(s->waits);
    s->waits = (decltype(s->waits))w;
    for (int i = s->cap; i < cap; i++) {
        AX_CHECK_CUDA(cudaEventCreate(&s->waits[i].before));
        AX_CHECK_CUDA(cudaEventCreate(&s->waits[i].after));
    }
    s->first = 0;
    s->cap = cap;
}

/* The latest work's event: a stream runs in order, so joining it joins the
 * earlier work too. The compute stream's wait there is the group's blocked
 * time on a GPU: events before and after it, read by ax_cuda_side_seconds.
 * Not while a graph is captured: the pair would not be recorded at its
 * launches, and the capture forbids reading the ring's older pairs. */
double ax_cuda_side_join(ax_cuda_side *s) {
    if (ax_cuda_capturing()) {
        AX_CHECK_CUDA(cudaStreamWaitEvent(ax_cuda_stream(), s->done, 0));
        return 0;
    }
    double sec = ax_cuda_side_seconds(s, 0);
    if (s->n == s->cap) waits_grow(s);
    int i = (s->first + s->n++) % s->cap;
    AX_CHECK_CUDA(cudaEventRecord(s->waits[i].before, ax_cuda_stream()));
    AX_CHECK_CUDA(cudaStreamWaitEvent(ax_cuda_stream(), s->done, 0));
    AX_CHECK_CUDA(cudaEventRecord(s->waits[i].after, ax_cuda_stream()));
    return sec;
}

int ax_cuda_side_idle(const ax_cuda_side *s) {
    cudaError_t e = cudaEventQuery(s->done);
    if (e == cudaErrorNotReady) return 0;
    AX_CHECK_CUDA(e);
    return 1;
}
