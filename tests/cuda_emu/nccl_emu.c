/* NCCL for the emulated device (tests/cuda_emu/README.md): the entries
 * src/comm/nccl.c opens (AXONN_NCCL_LIB names this library), with NCCL's own
 * declarations (nccl.h, so that the types are the real ones), done by MPI on
 * host memory, queued on the call's stream (below: at once, or at the
 * launches of a graph that captured it). A communicator is made from its id, which names the world rank
 * of the group's rank 0 and a count: the other ranks send that rank their
 * world ranks, it answers with the list, and they make an MPI communicator of
 * it. Sums are MPI's (fp32; bf16 widened, summed in fp32 and rounded). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct call;
struct ncclComm {
    MPI_Comm comm;
    int rank, size;
    struct call *kept; /* the calls graphs captured (queue) */
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

/* ---- a call's MPI work, queued on its stream ----
 * as host work of the emulated runtime (emu_host_work, runtime.cc): it runs
 * at once, or, when the stream is in a capture, at each launch of the graph,
 * so that a captured step's collectives run at its replays, in the order
 * queued. A kept call lives as long as its communicator. */
enum { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, P2P };
#define P2P_MAX 64
typedef struct call {
    int kind;
    const void *send;
    void *recv;
    size_t n;
    mpi_kind k;
    ncclComm_t c;
    int np; /* P2P: the group's sends and receives */
    struct {
        void *buf;
        size_t n;
        mpi_kind k;
        int peer, send;
        ncclComm_t c;
    } p[P2P_MAX];
    struct call *next; /* the communicator's kept calls */
} call;

static void run(void *arg) {
    call *a = arg;
    int rc = MPI_SUCCESS, n = (int)a->n;
    if (a->kind == ALLREDUCE)
        rc = MPI_Allreduce(a->send == a->recv ? MPI_IN_PLACE : a->send, a->recv, n, a->k.type, a->k.op, a->c->comm);
    else if (a->kind == ALLGATHER) { /* NCCL's in place is send at this rank's block of recv */
        int in_place = a->send == (const char *)a->recv + (size_t)a->c->rank * a->n * a->k.bytes;
        rc = MPI_Allgather(in_place ? MPI_IN_PLACE : a->send, n, a->k.type, a->recv, n, a->k.type, a->c->comm);
    } else if (a->kind == REDUCE_SCATTER) { /* NCCL's in place is recv at this rank's block of send; MPI's is not */
        void *tmp = malloc(a->n > 0 ? a->n * a->k.bytes : 1);
        rc = MPI_Reduce_scatter_block(a->send, tmp, n, a->k.type, a->k.op, a->c->comm);
        memcpy(a->recv, tmp, a->n * a->k.bytes);
        free(tmp);
    } else {
        MPI_Request q[P2P_MAX];
        for (int i = 0; i < a->np && rc == MPI_SUCCESS; i++)
            rc = a->p[i].send ? MPI_Isend(a->p[i].buf, (int)a->p[i].n, a->p[i].k.type, a->p[i].peer, TAG_P2P,
                                          a->p[i].c->comm, &q[i])
                              : MPI_Irecv(a->p[i].buf, (int)a->p[i].n, a->p[i].k.type, a->p[i].peer, TAG_P2P,
                                          a->p[i].c->comm, &q[i]);
        if (rc == MPI_SUCCESS) rc = MPI_Waitall(a->np, q, MPI_STATUSES_IGNORE);
    }
    if (rc != MPI_SUCCESS) { /* no caller to return it to at a replay */
        fprintf(stderr, "emulated NCCL: MPI failed (%d) in a queued call\n", rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static ncclResult_t queue(call *a, cudaStream_t s) {
    static int (*host_work)(void *, void (*)(void *), void *);
    if (!host_work) *(void **)&host_work = dlsym(RTLD_DEFAULT, "emu_host_work");
    if (!host_work) {
        fprintf(stderr, "emulated NCCL: the program has no emu_host_work (the emulated CUDA runtime, its symbols "
                        "exported)\n");
        free(a);
        return ncclSystemError;
    }
    if (!host_work(s, run, a)) free(a); /* it ran */
    else {
        a->next = a->c->kept;
        a->c->kept = a;
    }
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
    for (call *a = c->kept, *next; a; a = next) {
        next = a->next;
        free(a);
    }
    MPI_Comm_free(&c->comm);
    free(c);
    return ncclSuccess;
}

static ncclResult_t coll(int kind, const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op,
                         ncclComm_t c, cudaStream_t s) {
    call *a = calloc(1, sizeof *a);
    if (!a || !mpi_of(t, op, n, &a->k)) {
        free(a);
        return ncclInvalidArgument;
    }
    a->kind = kind;
    a->send = send;
    a->recv = recv;
    a->n = n;
    a->c = c;
    return queue(a, s);
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                           cudaStream_t s) {
    return coll(ALLREDUCE, send, recv, n, t, op, c, s);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t s) {
    return coll(ALLGATHER, send, recv, n, t, ncclSum, c, s);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                               cudaStream_t s) {
    return coll(REDUCE_SCATTER, send, recv, n, t, op, c, s);
}

/* point to point: gathered between ncclGroupStart and ncclGroupEnd (or one
 * alone outside a group), then queued as one call that posts them all and
 * waits for them */
static call *group;
static cudaStream_t group_stream;
static int in_group;

static ncclResult_t group_end(void) {
    call *a = group;
    group = NULL;
    return a ? queue(a, group_stream) : ncclSuccess;
}

static ncclResult_t p2p_post(void *buf, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s, int send) {
    if (!group) {
        group = calloc(1, sizeof *group);
        if (!group) return ncclSystemError;
        group->kind = P2P;
        group->c = c;
        group_stream = s;
    }
    int i = group->np;
    if (i == P2P_MAX || !mpi_of(t, ncclSum, n, &group->p[i].k)) return ncclInvalidArgument;
    group->p[i].buf = buf;
    group->p[i].n = n;
    group->p[i].peer = peer;
    group->p[i].send = send;
    group->p[i].c = c;
    group->np++;
    return in_group ? ncclSuccess : group_end();
}

ncclResult_t ncclSend(const void *send, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
    return p2p_post((void *)send, n, t, peer, c, s, 1);
}

ncclResult_t ncclRecv(void *recv, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
    return p2p_post(recv, n, t, peer, c, s, 0);
}

ncclResult_t ncclGroupStart(void) {
    in_group++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    if (in_group == 0) return ncclInvalidUsage;
    return --in_group ? ncclSuccess : group_end();
}
