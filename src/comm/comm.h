/* Collectives on one process group. A group of size 1 costs nothing: every
 * call returns at once (in-place results are already final).
 * (Non-blocking variants arrive with the overlap of SPEC §4.) */
#ifndef AX_COMM_COMM_H
#define AX_COMM_COMM_H
#include <mpi.h>
#include <stddef.h>

typedef struct {
    MPI_Comm comm;
    int size, rank;
    double seconds;   /* time spent blocked in this group's collectives */
    double bytes;     /* bytes each rank contributed */
} ax_comm;

void ax_comm_from(ax_comm *c, MPI_Comm comm);   /* takes ownership */
void ax_comm_free(ax_comm *c);

void ax_allreduce_f32(ax_comm *c, float *buf, size_t n);
void ax_allreduce_f64(ax_comm *c, double *buf, size_t n);
void ax_allreduce_max_f32(ax_comm *c, float *buf, size_t n);
/* recv (size*n) = concatenation of each rank's send (n) in rank order */
void ax_allgather_f32(ax_comm *c, const float *send, float *recv, size_t n);
/* recv (n) = rank's block of the elementwise sum of every send (size*n) */
void ax_reduce_scatter_f32(ax_comm *c, const float *send, float *recv, size_t n);

#endif
