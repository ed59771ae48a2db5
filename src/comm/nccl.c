/* NCCL communicators for the grid's groups (see comm/nccl.h). */
#include "comm/nccl.h"
#include "comm/devices.h"
#include "backend/cuda/cuda.h"
#include "util/err.h"
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the library, opened at run time ----
 * The binary does not link libnccl: a machine without it still runs the CPU
 * backend and --device-comm mpi. The build's nccl.h gives the types; the
 * entries used are resolved by name into this table on the first need. */

static struct {
    ncclResult_t (*GetVersion)(int *);
    const char *(*GetErrorString)(ncclResult_t);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
} nccl;
static const char *const nccl_names[] = {
    "ncclGetVersion", "ncclGetErrorString", "ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy", "ncclAllReduce",
    "ncclAllGather",  "ncclReduceScatter",  "ncclSend",        "ncclRecv",         "ncclGroupStart",  "ncclGroupEnd"};
_Static_assert(sizeof nccl == sizeof nccl_names / sizeof *nccl_names * sizeof(void (*)(void)), "one name an entry");

#define AX_CHECK_NCCL(call)                                                                                  \
    do {                                                                                                     \
        ncclResult_t ax_r_ = (call);                                                                         \
        if (ax_r_ != ncclSuccess) ax_fatal(__FILE__, __LINE__, "%s: %s", #call, nccl.GetErrorString(ax_r_)); \
    } while (0)

#ifndef AX_NCCL_DIR /* the directory of the library the build found (cmake/cuda.cmake) */
#define AX_NCCL_DIR ""
#endif
#define AX_NCCL_SONAME "libnccl.so.2"

/* dlopen of $AXONN_NCCL_LIB when set (that file only), else of libnccl.so.2
 * by the loader's search, else in the build's NCCL directory */
static void *nccl_open(char *looked, size_t cap, char *why, size_t wcap) {
    const char *env = getenv("AXONN_NCCL_LIB");
    void *h = NULL;
    if (env && *env) {
        snprintf(looked, cap, "AXONN_NCCL_LIB=%s", env);
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    } else {
        snprintf(looked, cap, "%s in LD_LIBRARY_PATH and the system's library paths%s%s", AX_NCCL_SONAME,
                 *AX_NCCL_DIR ? " and in " : "", AX_NCCL_DIR);
        h = dlopen(AX_NCCL_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h && *AX_NCCL_DIR) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", AX_NCCL_DIR, AX_NCCL_SONAME);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (!h) snprintf(why, wcap, "%s", dlerror());
    return h;
}

int ax_nccl_load(int *version) {
    static int loaded;
    if (!loaded) {
        char looked[4300], why[1024] = "";
        void *h = nccl_open(looked, sizeof looked, why, sizeof why);
        if (!h)
            return AX_ERR("NCCL: cannot load it (looked for %s: %s): add NCCL's lib directory to LD_LIBRARY_PATH "
                          "or name the library in AXONN_NCCL_LIB, or pass --device-comm mpi (every group's "
                          "collectives through MPI on host buffers, no NCCL)",
                          looked, why);
        void (**entry)(void) = (void (**)(void)) & nccl;
        for (size_t i = 0; i < sizeof nccl_names / sizeof *nccl_names; i++) {
            void *f = dlsym(h, nccl_names[i]);
            if (!f) {
                memset(&nccl, 0, sizeof nccl);
                dlclose(h);
                return AX_ERR("NCCL: %s has no %s (NCCL 2.10 or later is needed), or pass --device-comm "
                              "mpi (no NCCL)",
                              looked, nccl_names[i]);
            }
            memcpy(&entry[i], &f, sizeof f); /* an object pointer to a function pointer, as POSIX allows */
        }
        loaded = 1;
    }
    if (version) AX_CHECK_NCCL(nccl.GetVersion(version));
    return 0;
}
/* a group's communicator and the side stream its collectives run on */
struct ax_nccl_comm {
    ncclComm_t comm;
    ax_cuda_side *side;
};

void ax_nccl_attach(ax_comm *c) {
    if (ax_nccl_load(NULL)) ax_fatal(__FILE__, __LINE__, "%s", ax_err_msg()); /* ax_nccl_ready said it loads */
    struct ax_nccl_comm *n = ax_calloc(1, sizeof *n);
    ncclUniqueId id;
    if (c->rank == 0) AX_CHECK_NCCL(nccl.GetUniqueId(&id));
    AX_CHECK_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c->comm));
    AX_CHECK_NCCL(nccl.CommInitRank(&n->comm, c->size, id, c->rank));
    n->side = ax_cuda_side_new();
    c->nccl = n;
}

void ax_nccl_detach(ax_comm *c) {
    struct ax_nccl_comm *n = c->nccl;
    ax_cuda_side_free(n->side); /* its collectives run first */
    nccl.CommDestroy(n->comm);
    free(n);
    c->nccl = NULL;
}

/* NCCL is for the cuda backend's memory, unless every group was asked to use MPI */
static int wanted(void) { return !strcmp(ax_be()->name, "cuda") && ax_get_device_comm() == AX_DEVICE_COMM_AUTO; }

int ax_nccl_ready(MPI_Comm comm) { return wanted() ? ax_agree(comm, ax_nccl_load(NULL)) : 0; }

/* a group of one rank gets none: its collectives and transfers are copies
 * (comm.c), and each communicator costs NCCL's set-up and a stream */
void ax_nccl_group(ax_comm *c) {
    if (c->size > 1 && wanted() && !ax_comm_shares_device(c)) ax_nccl_attach(c);
}

void ax_nccl_coll(ax_comm *c, int op, int bf16, const void *send, void *recv, size_t n) {
    struct ax_nccl_comm *k = c->nccl;
    cudaStream_t s = ax_cuda_side_fork(k->side);
    ncclDataType_t t = bf16 ? ncclBfloat16 : ncclFloat32;
    if (op == AX_NCCL_GATHER) AX_CHECK_NCCL(nccl.AllGather(send, recv, n, t, k->comm, s));
    else if (op == AX_NCCL_SCATTER) AX_CHECK_NCCL(nccl.ReduceScatter(send, recv, n, t, ncclSum, k->comm, s));
    else AX_CHECK_NCCL(nccl.AllReduce(recv, recv, n, t, op == AX_NCCL_MAX ? ncclMax : ncclSum, k->comm, s));
    ax_cuda_side_done(k->side);
}

/* one NCCL group, so that neither call waits for the other: a ring's ranks
 * all send and receive at once, which separate calls would deadlock */
void ax_nccl_sendrecv(ax_comm *c, const float *send, int dst, float *recv, int src, size_t n) {
    struct ax_nccl_comm *k = c->nccl;
    cudaStream_t s = ax_cuda_side_fork(k->side);
    AX_CHECK_NCCL(nccl.GroupStart());
    AX_CHECK_NCCL(nccl.Send(send, n, ncclFloat32, dst, k->comm, s));
    AX_CHECK_NCCL(nccl.Recv(recv, n, ncclFloat32, src, k->comm, s));
    AX_CHECK_NCCL(nccl.GroupEnd());
    ax_cuda_side_done(k->side);
}

/* the compute stream waits for the group's collectives so far; the waits
 * of earlier joins that are complete go into c->seconds */
void ax_nccl_join(ax_comm *c) { c->seconds += ax_cuda_side_join(c->nccl->side); }

void ax_nccl_seconds(ax_comm *c) { c->seconds += ax_cuda_side_seconds(c->nccl->side, 1); }

int ax_nccl_done(const ax_comm *c) { return ax_cuda_side_idle(c->nccl->side); }
