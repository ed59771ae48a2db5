/* NCCL beside MPI, for the CUDA backend. MPI stays the launcher and the
 * control plane: each of the grid's groups X, Y, Z, Zg and data gets an NCCL
 * communicator made from an id that the group's rank 0 broadcasts over the
 * group's MPI communicator, and every rank drives the GPU its node-local rank
 * picks (MPI_Comm_split_type shared), one GPU per rank.
 *
 * Each communicator has its own stream. A collective is queued there after
 * the work already on the backend's compute stream (an event), and marks its
 * end with another event: ax_nccl_join makes later compute wait for it on the
 * device, ax_nccl_wait makes the host wait. In between the GPU computes and
 * communicates at once; the overlap issue decides what to put there.
 *
 *   ax_nccl_iallreduce_f32(&g->data, grads, n);   // queued behind the backward
 *   ...more kernels...
 *   ax_nccl_join(&g->data);                       // the optimizer's kernels see the sum
 *
 * Buffers are the backend's memory. Built only with the CUDA backend. */
#ifndef AX_COMM_NCCL_H
#define AX_COMM_NCCL_H
#include "comm/comm.h"
#include "grid/grid.h"

/* binds this rank's GPU and creates the groups' communicators (collective over g->world) */
int ax_nccl_init(ax_grid *g);
void ax_nccl_free(ax_grid *g);
/* 1 when the group has an NCCL communicator */
int ax_nccl_has(const ax_comm *c);

void ax_nccl_iallreduce_f32(const ax_comm *c, float *buf, size_t n);
void ax_nccl_iallgather_f32(const ax_comm *c, const float *send, float *recv, size_t n);
void ax_nccl_iallgather_bf16(const ax_comm *c, const ax_bf16 *send, ax_bf16 *recv, size_t n);
void ax_nccl_ireduce_scatter_f32(const ax_comm *c, const float *send, float *recv, size_t n);
/* the compute stream waits, on the device, for the group's queued collectives */
void ax_nccl_join(const ax_comm *c);
/* the host waits for them */
void ax_nccl_wait(const ax_comm *c);
/* the group as a kernel's reducer over NCCL (sum and max, complete on return);
 * 0 when the group has no NCCL communicator */
int ax_nccl_reducer(ax_comm *c, ax_reducer *r);
#endif
