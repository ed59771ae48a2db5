/* NCCL communicators for the grid's groups (see comm/nccl.h). */
#include "comm/nccl.h"
#include "comm/devices.h"
#include "backend/cuda/cuda.h"
#include "util/err.h"
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#define AX_CHECK_NCCL(call)                                                                                 \
    do {                                                                                                    \
        ncclResult_t ax_r_ = (call);                                                                        \
        if (ax_r_ != ncclSuccess) ax_fatal(__FILE__, __LINE__, "%s: %s", #call, ncclGetErrorString(ax_r_)); \
    } while (0)
#define AX_CHECK_CUDA(call)                                                                                 \
    do {                                                                                                    \
        cudaError_t ax_e_ = (call);                                                                         \
        if (ax_e_ != cudaSuccess) ax_fatal(__FILE__, __LINE__, "%s: %s", #call, cudaGetErrorString(ax_e_)); \
    } while (0)

struct ax_nccl_comm {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready, done; /* compute -> collectives, collectives -> compute */
    /* the compute stream's waits at the joins not yet read: a ring of event
     * pairs recorded on it before and after each join, n of them from first */
    struct {
        cudaEvent_t before, after;
    } * waits;
    int cap, first, n;
};

void ax_nccl_attach(ax_comm *c) {
    struct ax_nccl_comm *n = ax_calloc(1, sizeof *n);
    ncclUniqueId id;
    if (c->rank == 0) AX_CHECK_NCCL(ncclGetUniqueId(&id));
    AX_CHECK_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c->comm));
    AX_CHECK_NCCL(ncclCommInitRank(&n->comm, c->size, id, c->rank));
    AX_CHECK_CUDA(cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking));
    AX_CHECK_CUDA(cudaEventCreateWithFlags(&n->ready, cudaEventDisableTiming));
    AX_CHECK_CUDA(cudaEventCreateWithFlags(&n->done, cudaEventDisableTiming));
    c->nccl = n;
}

void ax_nccl_detach(ax_comm *c) {
    struct ax_nccl_comm *n = c->nccl;
    cudaStreamSynchronize(n->stream);
    ncclCommDestroy(n->comm);
    cudaStreamDestroy(n->stream);
    cudaEventDestroy(n->ready);
    cudaEventDestroy(n->done);
    for (int i = 0; i < n->cap; i++) {
        cudaEventDestroy(n->waits[i].before);
        cudaEventDestroy(n->waits[i].after);
    }
    free(n->waits);
    free(n);
    c->nccl = NULL;
}

int ax_nccl_init(ax_grid *g) {
    if (strcmp(ax_be()->name, "cuda")) return 0; /* NCCL works on CUDA memory only */
    /* every group whose ranks drive distinct GPUs, size 1 included, so that one GPU runs the same path;
     * the others stage their collectives through the host (comm.h) */
    ax_comm *groups[] = {&g->X, &g->Y, &g->Z, &g->Zg, &g->data, &g->dz, &g->tp};
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++)
        if (ax_get_device_comm() == AX_DEVICE_COMM_AUTO && !ax_comm_shares_device(groups[i])) ax_nccl_attach(groups[i]);
    return 0;
}

void ax_nccl_coll(ax_comm *c, int op, int bf16, const void *send, void *recv, size_t n) {
    struct ax_nccl_comm *k = c->nccl;
    AX_CHECK_CUDA(cudaEventRecord(k->ready, ax_cuda_stream()));
    AX_CHECK_CUDA(cudaStreamWaitEvent(k->stream, k->ready, 0));
    ncclDataType_t t = bf16 ? ncclBfloat16 : ncclFloat32;
    if (op == AX_NCCL_GATHER) AX_CHECK_NCCL(ncclAllGather(send, recv, n, t, k->comm, k->stream));
    else if (op == AX_NCCL_SCATTER) AX_CHECK_NCCL(ncclReduceScatter(send, recv, n, t, ncclSum, k->comm, k->stream));
    else AX_CHECK_NCCL(ncclAllReduce(recv, recv, n, t, op == AX_NCCL_MAX ? ncclMax : ncclSum, k->comm, k->stream));
    AX_CHECK_CUDA(cudaEventRecord(k->done, k->stream));
}

/* The joins' waits read into c->seconds, oldest first: those complete
 * (block 0: the host does not wait), else every one (block 1). */
static void collect(ax_comm *c, int block) {
    struct ax_nccl_comm *k = c->nccl;
    for (; k->n; k->n--, k->first = (k->first + 1) % k->cap) {
        cudaEvent_t before = k->waits[k->first].before, after = k->waits[k->first].after;
        if (block) AX_CHECK_CUDA(cudaEventSynchronize(after));
        else {
            cudaError_t e = cudaEventQuery(after);
            if (e == cudaErrorNotReady) return;
            AX_CHECK_CUDA(e);
        }
        float ms;
        AX_CHECK_CUDA(cudaEventElapsedTime(&ms, before, after));
        c->seconds += ms * 1e-3;
    }
}

/* room for one more pair: the ring doubled, the pending pairs kept in order
 * (it grows in the first steps, while joins outrun the device, then stays) */
static void waits_grow(struct ax_nccl_comm *k) {
    int cap = k->cap ? 2 * k->cap : 16;
    size_t one = sizeof *k->waits;
    char *w = ax_calloc((size_t)cap, one);
    if (k->cap) { /* full: the oldest at first, up to the end, then from 0 */
        memcpy(w, k->waits + k->first, (size_t)(k->cap - k->first) * one);
        memcpy(w + (size_t)(k->cap - k->first) * one, k->waits, (size_t)k->first * one);
    }
    free(k->waits);
    k->waits = (void *)w;
    for (int i = k->cap; i < cap; i++) {
        AX_CHECK_CUDA(cudaEventCreate(&k->waits[i].before));
        AX_CHECK_CUDA(cudaEventCreate(&k->waits[i].after));
    }
    k->first = 0;
    k->cap = cap;
}

/* The latest collective's event: a stream runs its collectives in order, so
 * joining it joins the earlier ones too. The compute stream's wait there is
 * the collective's blocked time on a GPU (the host never waits): events
 * before and after it on the compute stream, read later by collect. */
void ax_nccl_join(ax_comm *c) {
    struct ax_nccl_comm *k = c->nccl;
    collect(c, 0);
    if (k->n == k->cap) waits_grow(k);
    int i = (k->first + k->n++) % k->cap;
    AX_CHECK_CUDA(cudaEventRecord(k->waits[i].before, ax_cuda_stream()));
    AX_CHECK_CUDA(cudaStreamWaitEvent(ax_cuda_stream(), k->done, 0));
    AX_CHECK_CUDA(cudaEventRecord(k->waits[i].after, ax_cuda_stream()));
}

void ax_nccl_seconds(ax_comm *c) { collect(c, 1); }

int ax_nccl_done(const ax_comm *c) {
    cudaError_t e = cudaEventQuery(c->nccl->done);
    if (e == cudaErrorNotReady) return 0;
    AX_CHECK_CUDA(e);
    return 1;
}
