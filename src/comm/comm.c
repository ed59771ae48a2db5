#include "comm/comm.h"
#include "util/err.h"
#include <string.h>

void ax_comm_from(ax_comm *c, MPI_Comm comm) {
    memset(c, 0, sizeof *c);
    c->comm = comm;
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_rank(comm, &c->rank);
}

void ax_comm_free(ax_comm *c) {
    if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
    c->comm = MPI_COMM_NULL;
}

void ax_allreduce_f32(ax_comm *c, float *buf, size_t n) {
    if (c->size == 1 || n == 0) return;
    double t = MPI_Wtime();
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, c->comm));
    c->seconds += MPI_Wtime() - t; c->bytes += 4.0 * n;
}

void ax_allreduce_f64(ax_comm *c, double *buf, size_t n) {
    if (c->size == 1 || n == 0) return;
    double t = MPI_Wtime();
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_SUM, c->comm));
    c->seconds += MPI_Wtime() - t; c->bytes += 8.0 * n;
}

void ax_allreduce_max_f32(ax_comm *c, float *buf, size_t n) {
    if (c->size == 1 || n == 0) return;
    double t = MPI_Wtime();
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_MAX, c->comm));
    c->seconds += MPI_Wtime() - t; c->bytes += 4.0 * n;
}

void ax_allgather_f32(ax_comm *c, const float *send, float *recv, size_t n) {
    if (c->size == 1) { if (recv != send) memcpy(recv, send, n * sizeof(float)); return; }
    double t = MPI_Wtime();
    AX_CHECK_MPI(MPI_Allgather(send, (int)n, MPI_FLOAT, recv, (int)n, MPI_FLOAT, c->comm));
    c->seconds += MPI_Wtime() - t; c->bytes += 4.0 * n;
}

void ax_reduce_scatter_f32(ax_comm *c, const float *send, float *recv, size_t n) {
    if (c->size == 1) { if (recv != send) memcpy(recv, send, n * sizeof(float)); return; }
    double t = MPI_Wtime();
    AX_CHECK_MPI(MPI_Reduce_scatter_block(send, recv, (int)n, MPI_FLOAT, MPI_SUM, c->comm));
    c->seconds += MPI_Wtime() - t; c->bytes += 4.0 * n * c->size;
}
