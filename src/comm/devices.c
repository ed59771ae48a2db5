/* Ranks and their devices (see comm/devices.h). */
#include "comm/devices.h"
#include "backend/backend.h"
#ifdef AX_HAVE_CUDA
#include "comm/nccl.h"
#endif
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ax_device_comm device_comm = AX_DEVICE_COMM_AUTO;

void ax_set_device_comm(ax_device_comm mode) { device_comm = mode; }
ax_device_comm ax_get_device_comm(void) { return device_comm; }

int ax_device_comm_parse(const char *s, ax_device_comm *mode) {
    if (!strcmp(s, "auto")) *mode = AX_DEVICE_COMM_AUTO;
    else if (!strcmp(s, "mpi")) *mode = AX_DEVICE_COMM_MPI;
    else return AX_ERR("--device-comm %s: expected auto (NCCL where a group's ranks drive distinct GPUs) or mpi", s);
    return 0;
}

void ax_node_rank(MPI_Comm comm, int *local, int *nlocal) {
    MPI_Comm node;
    int rank;
    MPI_Comm_rank(comm, &rank);
    AX_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    MPI_Comm_rank(node, local);
    MPI_Comm_size(node, nlocal);
    MPI_Comm_free(&node);
}

int ax_ids_repeat(const char *ids, int n, size_t len, int *a, int *b) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (!strncmp(ids + i * len, ids + j * len, len)) {
                *a = i;
                *b = j;
                return 1;
            }
    return 0;
}

/* every rank's device id over comm, in rank order (n * AX_DEVICE_ID_LEN bytes, freed by the caller) */
static char *gather_ids(MPI_Comm comm, int n) {
    char id[AX_DEVICE_ID_LEN] = {0};
    ax_be()->device_id(id);
    id[AX_DEVICE_ID_LEN - 1] = 0;
    char *all = ax_malloc((size_t)n * AX_DEVICE_ID_LEN);
    AX_CHECK_MPI(MPI_Allgather(id, AX_DEVICE_ID_LEN, MPI_CHAR, all, AX_DEVICE_ID_LEN, MPI_CHAR, comm));
    return all;
}

int ax_comm_shares_device(const ax_comm *c) {
    if (ax_be()->host_memory || !ax_be()->device_id || c->size < 2) return 0;
    char *ids = gather_ids(c->comm, c->size);
    int a, b, shared = ax_ids_repeat(ids, c->size, AX_DEVICE_ID_LEN, &a, &b);
    free(ids);
    return shared;
}

/* "N ranks on K devices (name), at most R ranks a device" and, for a few ranks, each rank's device */
static void describe(const char *ids, int n, char *line, size_t cap) {
    int distinct = 0, most = 0;
    for (int i = 0; i < n; i++) {
        int first = 1, users = 0;
        for (int j = 0; j < n; j++) {
            if (j < i && !strcmp(ids + j * AX_DEVICE_ID_LEN, ids + i * AX_DEVICE_ID_LEN)) first = 0;
            users += !strcmp(ids + j * AX_DEVICE_ID_LEN, ids + i * AX_DEVICE_ID_LEN);
        }
        distinct += first;
        if (users > most) most = users;
    }
    const char *name = ax_be()->device_name ? ax_be()->device_name() : ax_be()->name;
    size_t k = (size_t)snprintf(line, cap, "devices: %d rank%s on %d device%s (%s), at most %d rank%s a device", n,
                                n > 1 ? "s" : "", distinct, distinct > 1 ? "s" : "", name, most, most > 1 ? "s" : "");
    for (int i = 0; i < n && n <= 16 && k < cap; i++) /* the first 12 characters of an id: "GPU-" and 8 hex digits */
        k += (size_t)snprintf(line + k, cap - k, "%s rank %d: %.12s", i ? "," : ";", i, ids + i * AX_DEVICE_ID_LEN);
}

int ax_devices_check(MPI_Comm comm, int share, char *line, size_t cap) {
    if (ax_be()->host_memory || !ax_be()->device_id) {
        snprintf(line, cap, "devices: the %s backend runs on the host", ax_be()->name);
        return 0;
    }
    int n, rank, a, b;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &rank);
    char *ids = gather_ids(comm, n);
    describe(ids, n, line, cap);
    int rc = 0;
    if (!share && ax_ids_repeat(ids, n, AX_DEVICE_ID_LEN, &a, &b))
        rc = AX_ERR("--backend %s: ranks %d and %d drive the same device (%s): start one rank per GPU (or set "
                    "CUDA_VISIBLE_DEVICES per rank), or pass --share-gpu to run several ranks on one GPU, their "
                    "collectives through MPI on host buffers",
                    ax_be()->name, a, b, ids + a * AX_DEVICE_ID_LEN);
    free(ids);
    return rc;
}

int ax_device_comm_ready(MPI_Comm comm) {
#ifdef AX_HAVE_CUDA
    return ax_nccl_ready(comm);
#else
    (void)comm;
    return 0;
#endif
}

void ax_device_comm_library(char *line, size_t cap) {
    line[0] = 0;
#ifdef AX_HAVE_CUDA
    int v;
    if (ax_nccl_load(&v)) snprintf(line, cap, "%s", ax_err_msg());
    else if (v >= 20900) snprintf(line, cap, "NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100); /* 2.9 on */
    else snprintf(line, cap, "NCCL %d.%d.%d", v / 1000, v / 100 % 10, v % 100);
    ax_err_clear();
#endif
}

void ax_comm_use_devices(ax_comm *c) {
#ifdef AX_HAVE_CUDA
    ax_nccl_group(c);
#else
    (void)c;
#endif
}
