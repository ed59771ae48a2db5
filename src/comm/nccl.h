/* NCCL beside MPI, for the CUDA backend. MPI stays the launcher and the
 * control plane: each of the grid's groups of more than one rank gets an
 * NCCL communicator made from an id that the group's rank 0 broadcasts over
 * the group's MPI communicator, where the group's ranks drive distinct GPUs
 * (the backend picked each rank's when it was opened: comm/devices.h). A
 * group two of whose ranks share a GPU gets none: NCCL refuses it, and
 * comm.c stages its collectives through the host instead. A group of one
 * gets none either: comm.c copies its gathers and transfers.
 *
 * src/comm/comm.c sends a group's float and bf16 collectives here when the
 * group has a communicator (ax_comm.nccl); nothing else calls these. Each
 * communicator has its own stream (the backend's side stream, backend/cuda/cuda.h): a collective is queued there after
 * the work already on the backend's compute stream (an event) and marks its end with another; ax_nccl_join makes later
 * compute wait for it on the device. In between the GPU computes and communicates at once, which is the overlap of
 * docs/algorithm.md §4 on a GPU: ax_wait joins where the CPU path blocks. The group's blocked time is the compute
 * stream's wait at each join, measured by a pair of events around it and read only when asked for.
 *
 * Buffers are the backend's memory. Built only with the CUDA backend. */
#ifndef AX_COMM_NCCL_H
#define AX_COMM_NCCL_H
#include "comm/comm.h"

/* NCCL's library, opened on the first call (dlopen; the binary does not
 * link it): the file named in $AXONN_NCCL_LIB when set, else libnccl.so.2 by
 * the dynamic loader's search, else in the directory the build found NCCL
 * in. 0, with NCCL's version (e.g. 22703) in *version unless NULL; or fails
 * with one line naming the library, where it looked and why it failed, and
 * the ways out (LD_LIBRARY_PATH, AXONN_NCCL_LIB, --device-comm mpi). Needs no
 * GPU. */
int ax_nccl_load(int *version);
/* Under the cuda backend unless every group was asked to use MPI: the
 * library loaded (ax_nccl_load) or the same failure on every rank of comm
 * (collective); 0 elsewhere. */
int ax_nccl_ready(MPI_Comm comm);
/* attaches c when NCCL is wanted (as above), c has more than one rank and
 * they drive distinct GPUs (collective over c; after ax_nccl_ready) */
void ax_nccl_group(ax_comm *c);
/* a communicator for c, whatever its size (collective over c);
 * ax_comm_free detaches it */
void ax_nccl_attach(ax_comm *c);
void ax_nccl_detach(ax_comm *c);

enum { AX_NCCL_SUM, AX_NCCL_MAX, AX_NCCL_GATHER, AX_NCCL_SCATTER };
/* queued after the compute stream's work: all-reduce (SUM, MAX) in place in
 * recv, all-gather of n per rank, reduce-scatter to n per rank; float, or
 * bf16 for the gather */
void ax_nccl_coll(ax_comm *c, int op, int bf16, const void *send, void *recv, size_t n);
/* queued like a collective: n floats of send to group rank dst and n from
 * group rank src into recv (NCCL's send and receive in one group); joined
 * and timed like the collectives (ax_nccl_join) */
void ax_nccl_sendrecv(ax_comm *c, const float *send, int dst, float *recv, int src, size_t n);
/* the compute stream waits, on the device, for the group's queued
 * collectives; the wait is timed by events on that stream */
void ax_nccl_join(ax_comm *c);
/* the joins' waits so far added to c->seconds (the host waits for the
 * events: where it waits anyway, after a step; ax_comm_seconds calls it) */
void ax_nccl_seconds(ax_comm *c);
/* 1 when the group's queued collectives have finished */
int ax_nccl_done(const ax_comm *c);
#endif
