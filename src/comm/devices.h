/* Which device each rank drives, and how a group's collectives reach it.
 *
 *   int local, nlocal;
 *   ax_node_rank(MPI_COMM_WORLD, &local, &nlocal);
 *   if (ax_backend_use("cuda", local)) ...;                    // the rank's device, chosen first
 *   if (ax_agree(MPI_COMM_WORLD, ax_devices_check(MPI_COMM_WORLD, share, line, sizeof line))) ...;
 *
 * A device backend (host_memory 0) runs a group's float and bf16 collectives
 * on NCCL where the group's ranks drive distinct devices, and through MPI on
 * host buffers (comm.h: host staging) where two of them share one: NCCL
 * refuses two ranks of one communicator on the same GPU. The choice is made
 * per group when the grid is made (ax_comm_shares_device), from the ranks'
 * device ids; AX_DEVICE_COMM_MPI stages every group. Several ranks on one GPU
 * is a mode asked for by name (--share-gpu), for tests and small jobs: without
 * it, ranks that share a device are refused at start-up, one line naming them. */
#ifndef AX_COMM_DEVICES_H
#define AX_COMM_DEVICES_H
#include <mpi.h>
#include <stddef.h>
#include "comm/comm.h"

/* This rank's index among the ranks of its node, and their count. */
void ax_node_rank(MPI_Comm comm, int *local, int *nlocal);

/* How device groups communicate: NCCL where the ranks' devices are distinct
 * (AUTO, the default), or host-staged MPI for every group. Process-wide, set
 * before any grid is made. */
typedef enum { AX_DEVICE_COMM_AUTO, AX_DEVICE_COMM_MPI } ax_device_comm;
void ax_set_device_comm(ax_device_comm mode);
ax_device_comm ax_get_device_comm(void);
/* "auto" or "mpi" into *mode; fails with one line naming the accepted values */
int ax_device_comm_parse(const char *s, ax_device_comm *mode);

/* Under a device backend, over comm (collective): fails, naming two ranks of a
 * node that drive the same device, unless share; writes a line naming the
 * devices and how many ranks each drives into line (rank 0's is complete). On
 * a host backend: 0, and line says so. */
int ax_devices_check(MPI_Comm comm, int share, char *line, size_t cap);

/* For groups made outside a grid (ax_grid_init does this for its own):
 * ax_device_comm_ready readies what the device groups need (NCCL's library
 * under the cuda backend and --device-comm auto; collective over comm, the
 * same one-line failure on every rank where it cannot be loaded), then
 * ax_comm_use_devices gives c NCCL where it has more than one rank and they
 * drive distinct devices (collective over c); its collectives are staged
 * through the host otherwise. Nothing on a host backend. */
int ax_device_comm_ready(MPI_Comm comm);
void ax_comm_use_devices(ax_comm *c);

/* For `axonn --version`: the device collectives' library as this process
 * would load it ("NCCL 2.27.3"), or the one line saying why it cannot; ""
 * where the build has none. Needs neither MPI nor a device. */
void ax_device_comm_library(char *line, size_t cap);

/* 1 when two ranks of c drive the same device (collective over c); 0 on a
 * host backend and for a group of one. */
int ax_comm_shares_device(const ax_comm *c);

/* 1 when two of the n ids (each len bytes, NUL-terminated) are equal; *a, *b
 * the first such pair */
int ax_ids_repeat(const char *ids, int n, size_t len, int *a, int *b);
#endif
