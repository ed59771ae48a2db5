/* NCCL communicators for the grid's groups (see comm/nccl.h). */
#include "comm/nccl.h"
#include "backend/cuda/cuda.h"
#include "util/err.h"
#include <cuda_runtime.h>
#include <nccl.h>
#include <string.h>

#define AX_CHECK_NCCL(call) do { ncclResult_t ax_r_ = (call); if (ax_r_ != ncclSuccess) \
    ax_fatal(__FILE__, __LINE__, "%s: %s", #call, ncclGetErrorString(ax_r_)); } while (0)
#define AX_CHECK_CUDA(call) do { cudaError_t ax_e_ = (call); if (ax_e_ != cudaSuccess) \
    ax_fatal(__FILE__, __LINE__, "%s: %s", #call, cudaGetErrorString(ax_e_)); } while (0)

typedef struct {
    const ax_comm *group;           /* the MPI group it mirrors */
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready, done;        /* compute -> collectives, collectives -> compute */
} ax_nccl_comm;

#define MAX_COMMS 16   /* five per grid; a process holds one or two grids */
static ax_nccl_comm comms[MAX_COMMS];
static int ncomms;

static ax_nccl_comm *find(const ax_comm *c) {
    for (int i = 0; i < ncomms; i++)
        if (comms[i].group == c) return &comms[i];
    return NULL;
}

int ax_nccl_has(const ax_comm *c) { return find(c) != NULL; }

static void create(const ax_comm *c) {
    if (ncomms == MAX_COMMS) ax_fatal(__FILE__, __LINE__, "NCCL: more than %d communicators", MAX_COMMS);
    ax_nccl_comm *n = &comms[ncomms++];
    ncclUniqueId id;
    if (c->rank == 0) AX_CHECK_NCCL(ncclGetUniqueId(&id));
    AX_CHECK_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c->comm));
    n->group = c;
    AX_CHECK_NCCL(ncclCommInitRank(&n->comm, c->size, id, c->rank));
    AX_CHECK_CUDA(cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking));
    AX_CHECK_CUDA(cudaEventCreateWithFlags(&n->ready, cudaEventDisableTiming));
    AX_CHECK_CUDA(cudaEventCreateWithFlags(&n->done, cudaEventDisableTiming));
}

int ax_nccl_init(ax_grid *g) {
    MPI_Comm node;
    int local;
    AX_CHECK_MPI(MPI_Comm_split_type(g->world, MPI_COMM_TYPE_SHARED, g->rank, MPI_INFO_NULL, &node));
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    ax_cuda_bind(local);
    /* every group, size 1 included, so that one GPU exercises the same path;
     * the reducer still returns at once for a group of one, as MPI's does */
    const ax_comm *groups[] = {&g->X, &g->Y, &g->Z, &g->Zg, &g->data};
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++) create(groups[i]);
    return 0;
}

void ax_nccl_free(ax_grid *g) {
    int kept = 0;
    for (int i = 0; i < ncomms; i++) {
        ax_nccl_comm *n = &comms[i];
        if ((const char *)n->group < (const char *)g || (const char *)n->group >= (const char *)(g + 1)) {
            comms[kept++] = *n;         /* another grid's */
            continue;
        }
        cudaStreamSynchronize(n->stream);
        ncclCommDestroy(n->comm);
        cudaStreamDestroy(n->stream);
        cudaEventDestroy(n->ready);
        cudaEventDestroy(n->done);
    }
    ncomms = kept;
}

/* the group's stream, ordered after what the compute stream has queued */
static ax_nccl_comm *begin(const ax_comm *c) {
    ax_nccl_comm *n = find(c);
    if (!n) ax_fatal(__FILE__, __LINE__, "NCCL: no communicator for this group (ax_nccl_init not called?)");
    AX_CHECK_CUDA(cudaEventRecord(n->ready, ax_cuda_stream()));
    AX_CHECK_CUDA(cudaStreamWaitEvent(n->stream, n->ready, 0));
    return n;
}

static void end(ax_nccl_comm *n) { AX_CHECK_CUDA(cudaEventRecord(n->done, n->stream)); }

void ax_nccl_iallreduce_f32(const ax_comm *c, float *buf, size_t n) {
    ax_nccl_comm *k = begin(c);
    AX_CHECK_NCCL(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, k->comm, k->stream));
    end(k);
}

void ax_nccl_iallgather_f32(const ax_comm *c, const float *send, float *recv, size_t n) {
    ax_nccl_comm *k = begin(c);
    AX_CHECK_NCCL(ncclAllGather(send, recv, n, ncclFloat32, k->comm, k->stream));
    end(k);
}

void ax_nccl_iallgather_bf16(const ax_comm *c, const ax_bf16 *send, ax_bf16 *recv, size_t n) {
    ax_nccl_comm *k = begin(c);
    AX_CHECK_NCCL(ncclAllGather(send, recv, n, ncclBfloat16, k->comm, k->stream));
    end(k);
}

void ax_nccl_ireduce_scatter_f32(const ax_comm *c, const float *send, float *recv, size_t n) {
    ax_nccl_comm *k = begin(c);
    AX_CHECK_NCCL(ncclReduceScatter(send, recv, n, ncclFloat32, ncclSum, k->comm, k->stream));
    end(k);
}

void ax_nccl_join(const ax_comm *c) {
    ax_nccl_comm *n = find(c);
    if (n) AX_CHECK_CUDA(cudaStreamWaitEvent(ax_cuda_stream(), n->done, 0));
}

void ax_nccl_wait(const ax_comm *c) {
    ax_nccl_comm *n = find(c);
    if (n) AX_CHECK_CUDA(cudaEventSynchronize(n->done));
}

static void reduce(void *ctx, float *buf, size_t n, ncclRedOp_t op) {
    ax_comm *c = ctx;
    if (c->size == 1) return;
    ax_nccl_comm *k = begin(c);
    AX_CHECK_NCCL(ncclAllReduce(buf, buf, n, ncclFloat32, op, k->comm, k->stream));
    end(k);
    AX_CHECK_CUDA(cudaEventSynchronize(k->done));   /* kernels read the result through the host next */
}

static void reduce_sum(void *ctx, float *buf, size_t n) { reduce(ctx, buf, n, ncclSum); }
static void reduce_max(void *ctx, float *buf, size_t n) { reduce(ctx, buf, n, ncclMax); }

int ax_nccl_reducer(ax_comm *c, ax_reducer *r) {
    if (!find(c)) return 0;
    r->sum = reduce_sum; r->max = reduce_max; r->ctx = c;
    return 1;
}
