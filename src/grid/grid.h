/* The 4D process grid (docs/algorithm.md §1): P = Gd x Gx x Gy x Gz ranks, x fastest:
 *   world_rank = ((d * Gz + z) * Gy + y) * Gx + x
 * All groups are split from a private duplicate of the user's communicator. */
#ifndef AX_GRID_GRID_H
#define AX_GRID_GRID_H
#include <mpi.h>
#include <stddef.h>
#include "comm/comm.h"

typedef struct {
    int gd, gx, gy, gz;  /* group sizes */
    int d, x, y, z;      /* this rank's coordinates */
    int rank, size;      /* in the private world */
    MPI_Comm world;      /* duplicate of the user's communicator */
    ax_comm X, Y, Z, Zg; /* Zg: a second Z group for all-gathers (docs/algorithm.md §4) */
    ax_comm data;        /* ranks differing only in d */
    ax_comm dz;          /* data x Z: the ranks that split the rows */
    ax_comm tp;          /* X x Y x Z: one model replica */
} ax_grid;

/* Fails (same message on every rank) when gd*gx*gy*gz != size of comm. */
int ax_grid_init(ax_grid *g, MPI_Comm user, int gd, int gx, int gy, int gz);
void ax_grid_free(ax_grid *g);
/* Under a device backend, how each kind of group communicates ("collectives:
 * NCCL for X, Y; host-staged MPI for Z (their ranks share a GPU)"), over every
 * group of the grid (collective); "" under a host backend. */
int ax_grid_comm_line(ax_grid *g, char *line, size_t cap);
/* Parses "D,X,Y,Z". */
int ax_grid_parse(const char *s, int dims[4]);
#endif
