/* Collectives on one process group, blocking and non-blocking.
 *
 * A group of size 1 costs nothing: every call returns at once (in-place results
 * are already final, out-of-place ones are copied). Element counts are 64-bit:
 * MPI-3 counts are int, so a collective larger than the chunk size (INT_MAX
 * elements, settable for tests) is issued as several, each rank's blocks
 * described by a resized datatype so the layout stays the one of a single call.
 *
 *   ax_req r;
 *   ax_iallreduce_f32(&g->data, grads, n, &r);   // starts; buffers stay in use
 *   ...compute...
 *   ax_wait(&r);                                 // complete; time counted as blocked
 *
 * MPI progresses a non-blocking collective only inside MPI calls (Open MPI has
 * no progress thread by default). ax_progress() tests every collective in
 * flight; the backend calls it between the tiles of a long GEMM and of the
 * CPU attention (backend.h: ax_backend_set_progress, ax_backend_poll), so
 * communication started before them advances while they run. Only the main
 * thread calls MPI, OpenMP's thread 0 in a kernel (MPI_THREAD_FUNNELED). An
 * ax_req stays at one address from its start to its completion.
 *
 * Under a GPU backend a group with an NCCL communicator (comm/nccl.h) runs
 * its float and bf16 collectives there, queued on the device behind the
 * kernels already queued, on the backend's memory; the same calls, the same
 * layouts. A group without one (its ranks share a GPU, or every group was
 * asked to: comm/devices.h) stages them through the host: the backend copies
 * the input into a host buffer of the group's, MPI runs the same collective
 * there, and the result is copied back when the collective completes (at
 * once when blocking, at ax_wait or a successful ax_test otherwise). The
 * arithmetic is MPI's in both cases, so results equal the CPU backend's bit
 * for bit, with overlap or without. Host buffers are the backend's page-locked
 * memory where it has some, kept per group and grown on first use. */
#ifndef AX_COMM_COMM_H
#define AX_COMM_COMM_H
#include <mpi.h>
#include <stddef.h>
#include "backend/backend.h"

typedef struct {
    MPI_Comm comm;
    int size, rank;
    double seconds; /* time blocked in this group's collectives: read it with ax_comm_seconds */
    double bytes;   /* bytes each rank contributed */
    /* the group's NCCL communicator (comm/nccl.h) under a GPU backend: its
     * float and bf16 collectives run there, on the backend's memory; NULL: MPI */
    struct ax_nccl_comm *nccl;
    struct ax_stage *stage; /* host buffers of staged collectives (NULL until the first) */
} ax_comm;

#define AX_REQ_PARTS 16
/* One collective in flight. Holds at most AX_REQ_PARTS MPI requests, so a
 * non-blocking collective uses chunks of at least n / AX_REQ_PARTS elements. */
typedef struct {
    ax_comm *c;
    int n;
    MPI_Request r[AX_REQ_PARTS];
    int queued; /* an NCCL collective queued on the group's stream */
    /* a staged collective: its result, in host buffer `slot` of the group at
     * `from`, goes to `to` (bytes) when it completes; from NULL: none */
    const void *from;
    void *to;
    size_t bytes;
    int slot;
} ax_req;

void ax_comm_from(ax_comm *c, MPI_Comm comm); /* takes ownership */
/* the ranks of parent with the same colour, ordered by key (MPI_Comm_split);
 * with NCCL where parent has it */
void ax_comm_split(const ax_comm *parent, int color, int key, ax_comm *c);
void ax_comm_free(ax_comm *c);
/* Largest element count of one MPI call (default INT_MAX); tests lower it. */
void ax_comm_set_chunk(size_t n);

/* Seconds this rank stood blocked in c's collectives since the last reset.
 * On the host (MPI, and a device's staged collectives: the copies and MPI,
 * not the wait for the kernels queued before) the host clock around the
 * blocking call or ax_wait. Under NCCL the device's: how long the compute
 * stream waited at each join, from events around it (comm/nccl.h), read
 * here, where the host waits for them: call it where the host waits anyway
 * (after a step), never inside one. A group of one: 0. */
double ax_comm_seconds(ax_comm *c);
/* seconds and bytes back to 0 (the joins so far are read first) */
void ax_comm_reset_stats(ax_comm *c);

void ax_allreduce_f32(ax_comm *c, float *buf, size_t n);
/* on host memory always (MPI): the control plane's sums (token counts, the loss) */
void ax_allreduce_f64(ax_comm *c, double *buf, size_t n);
void ax_allreduce_max_f32(ax_comm *c, float *buf, size_t n);
/* recv (size*n) = concatenation of each rank's send (n) in rank order; send
 * may be the rank's own block of recv (recv + rank*n: in place) */
void ax_allgather_f32(ax_comm *c, const float *send, float *recv, size_t n);
/* the same for bf16 (weights gathered in the precision the GEMMs read) */
void ax_allgather_bf16(ax_comm *c, const ax_bf16 *send, ax_bf16 *recv, size_t n);
/* recv (n) = rank's block of the elementwise sum of every send (size*n) */
void ax_reduce_scatter_f32(ax_comm *c, const float *send, float *recv, size_t n);

/* The group as a backend kernel's reducer (float sum and max, blocking;
 * single when the group is this rank alone). */
ax_reducer ax_comm_reducer(ax_comm *c);

/* Non-blocking forms of the same (sum in float); complete with ax_wait. */
void ax_iallreduce_f32(ax_comm *c, float *buf, size_t n, ax_req *r);
void ax_iallgather_f32(ax_comm *c, const float *send, float *recv, size_t n, ax_req *r);
void ax_ireduce_scatter_f32(ax_comm *c, const float *send, float *recv, size_t n, ax_req *r);
void ax_iallgather_bf16(ax_comm *c, const ax_bf16 *send, ax_bf16 *recv, size_t n, ax_req *r);
/* Point to point inside the group, non-blocking: n floats of send to group
 * rank dst and n floats from group rank src into recv (a ring's step:
 * dst = rank + 1, src = rank - 1). Both buffers stay in use until ax_wait.
 * MPI on the host; under a GPU backend NCCL's send and receive where the
 * group has NCCL, else staged through host buffers like the collectives. */
void ax_isendrecv_f32(ax_comm *c, const float *send, int dst, float *recv, int src, size_t n, ax_req *r);
/* MPI: returns when complete. NCCL: the backend's later kernels wait for it
 * on the device; the host goes on (it sees the result through copy). */
void ax_wait(ax_req *r);
/* 1 when complete (then as after ax_wait); drives MPI's progress either way */
int ax_test(ax_req *r);
/* Tests every collective in flight; returns how many are still in flight. */
int ax_progress(void);
#endif
