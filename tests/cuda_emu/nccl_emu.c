/* NCCL for the emulated device (tests/cuda_emu/README.md): the entries
 * src/comm/nccl.c opens (AXONN_NCCL_LIB names this library), with NCCL's own
 * declarations (nccl.h, so that the types are the real ones), done by MPI on
 * host memory as each is called: the emulated streams run every call as it
 * is queued. A communicator is made from its id, which names the world rank
 * of the group's rank 0 and a count: the other ranks send that rank their
 * world ranks, it answers with the list, and they make an MPI communicator of
 * it. Sums are MPI's (fp32; bf16 widened, summed in fp32 and rounded). */
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ncclComm {
    MPI_Comm comm;
    int rank, size;
};

#define TAG_INIT 0x4100 /* + the id's count */
#define TAG_P2P  77

static int next_id;

ncclResult_t ncclGetVersion(int *v) {
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
    return r == ncclSuccess ? "no error" : "emulated NCCL: unsupported argument or MPI error";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    int v[2] = {0, next_id++ % 16384};
    MPI_Comm_rank(MPI_COMM_WORLD, &v[0]);
    memset(id, 0, sizeof *id);
    memcpy(id->internal, v, sizeof v);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int n, ncclUniqueId id, int rank) {
    int v[2], w, rc = MPI_SUCCESS;
    memcpy(v, id.internal, sizeof v);
    MPI_Comm_rank(MPI_COMM_WORLD, &w);
    int *members = malloc((size_t)n * sizeof *members), tag = TAG_INIT + v[1];
    if (rank == 0) { /* member i's world rank from each, then the list to all */
        members[0] = w;
        for (int i = 1; i < n && rc == MPI_SUCCESS; i++) {
            int m[2];
            rc = MPI_Recv(m, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (m[0] > 0 && m[0] < n) members[m[0]] = m[1];
        }
        for (int i = 1; i < n && rc == MPI_SUCCESS; i++)
            rc = MPI_Send(members, n, MPI_INT, members[i], tag, MPI_COMM_WORLD);
    } else {
        int m[2] = {rank, w};
        rc = MPI_Send(m, 2, MPI_INT, v[0], tag, MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS) rc = MPI_Recv(members, n, MPI_INT, v[0], tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    struct ncclComm *c = calloc(1, sizeof *c);
    MPI_Group all, g;
    if (rc == MPI_SUCCESS) rc = MPI_Comm_group(MPI_COMM_WORLD, &all);
    if (rc == MPI_SUCCESS) rc = MPI_Group_incl(all, n, members, &g);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_create_group(MPI_COMM_WORLD, g, tag, &c->comm);
    free(members);
    if (rc != MPI_SUCCESS) return ncclSystemError;
    MPI_Group_free(&g);
    MPI_Group_free(&all);
    c->rank = rank;
    c->size = n;
    *out = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
    MPI_Comm_free(&c->comm);
    free(c);
    return ncclSuccess;
}

/* ---- bf16 as MPI sees it: 16-bit words, summed or maxed in fp32 ---- */
static float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t round_bf16(float f) { /* to nearest even, as the device's conversion */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static void bf16_sum(void *in, void *inout, int *n, MPI_Datatype *t) {
    (void)t;
    for (int i = 0; i < *n; i++)
        ((uint16_t *)inout)[i] = round_bf16(widen(((uint16_t *)in)[i]) + widen(((uint16_t *)inout)[i]));
}
static void bf16_max(void *in, void *inout, int *n, MPI_Datatype *t) {
    (void)t;
    for (int i = 0; i < *n; i++)
        if (widen(((uint16_t *)in)[i]) > widen(((uint16_t *)inout)[i])) ((uint16_t *)inout)[i] = ((uint16_t *)in)[i];
}

/* MPI's view of n elements of NCCL's type t under op */
typedef struct {
    MPI_Datatype type;
    MPI_Op op;
    size_t bytes; /* an element's */
} mpi_kind;

/* 0 when this emulation lacks t or op, or n is past MPI's int counts */
static int mpi_of(ncclDataType_t t, ncclRedOp_t op, size_t n, mpi_kind *k) {
    static MPI_Op sum16 = MPI_OP_NULL, max16 = MPI_OP_NULL;
    if (t == ncclFloat32) *k = (mpi_kind){MPI_FLOAT, op == ncclMax ? MPI_MAX : MPI_SUM, 4};
    else if (t == ncclBfloat16) {
        if (sum16 == MPI_OP_NULL) {
            MPI_Op_create(bf16_sum, 1, &sum16);
            MPI_Op_create(bf16_max, 1, &max16);
        }
        *k = (mpi_kind){MPI_UINT16_T, op == ncclMax ? max16 : sum16, 2};
    } else return 0;
    return (op == ncclSum || op == ncclMax) && n <= INT32_MAX;
}

/* the stream is not used: the emulated streams have run all that was queued before */
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                           cudaStream_t s) {
    mpi_kind k;
    if (!mpi_of(t, op, n, &k)) return ncclInvalidArgument;
    (void)s;
    int rc = MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)n, k.type, k.op, c->comm);
    return rc ? ncclSystemError : ncclSuccess;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t s) {
    mpi_kind k;
    if (!mpi_of(t, ncclSum, n, &k)) return ncclInvalidArgument;
    (void)s;
    int in_place = send == (const char *)recv + (size_t)c->rank * n * k.bytes;
    int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : send, (int)n, k.type, recv, (int)n, k.type, c->comm);
    return rc ? ncclSystemError : ncclSuccess;
}

/* NCCL's in place is recv at this rank's block of send; MPI's is not */
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                               cudaStream_t s) {
    mpi_kind k;
    if (!mpi_of(t, op, n, &k)) return ncclInvalidArgument;
    (void)s;
    void *tmp = malloc(n > 0 ? n * k.bytes : 1);
    int rc = MPI_Reduce_scatter_block(send, tmp, (int)n, k.type, k.op, c->comm);
    memcpy(recv, tmp, n * k.bytes);
    free(tmp);
    return rc ? ncclSystemError : ncclSuccess;
}

/* point to point: posted as called, completed at the group's end (or at once outside one) */
#define P2P_MAX 64
static MPI_Request p2p[P2P_MAX];
static int np2p, in_group;

static ncclResult_t p2p_wait(void) {
    int rc = MPI_Waitall(np2p, p2p, MPI_STATUSES_IGNORE);
    np2p = 0;
    return rc ? ncclSystemError : ncclSuccess;
}

static ncclResult_t p2p_post(void *buf, size_t n, ncclDataType_t t, int peer, ncclComm_t c, int send) {
    mpi_kind k;
    if (!mpi_of(t, ncclSum, n, &k) || np2p == P2P_MAX) return ncclInvalidArgument;
    int rc = send ? MPI_Isend(buf, (int)n, k.type, peer, TAG_P2P, c->comm, &p2p[np2p])
                  : MPI_Irecv(buf, (int)n, k.type, peer, TAG_P2P, c->comm, &p2p[np2p]);
    if (rc) return ncclSystemError;
    np2p++;
    return in_group ? ncclSuccess : p2p_wait();
}

ncclResult_t ncclSend(const void *send, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
    (void)s;
    return p2p_post((void *)send, n, t, peer, c, 1);
}

ncclResult_t ncclRecv(void *recv, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
    (void)s;
    return p2p_post(recv, n, t, peer, c, 0);
}

ncclResult_t ncclGroupStart(void) {
    in_group++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    if (in_group == 0) return ncclInvalidUsage;
    return --in_group ? ncclSuccess : p2p_wait();
}
