/* The process grid (docs/algorithm.md §1): P = Gd x Gc x Gz x Gy x Gx ranks,
 * x fastest:
 *   world_rank = (((d * Gc + c) * Gz + z) * Gy + y) * Gx + x
 * data (d) x the 3D tensor-parallel split (x, y, z), and the context split
 * (c, docs/design.md "Context parallelism"): the Gc ranks of a C group hold
 * other tokens of the same sequences, so for the weights they are like data
 * ranks. All groups are split from a private duplicate of the user's
 * communicator.
 *
 *   ax_grid g;
 *   ax_grid_init_cp(&g, MPI_COMM_WORLD, 2, 1, 2, 1, 2);   // D=2, X=1, Y=2, Z=1, C=2: 8 ranks
 *   ax_allreduce_f32(&g.data, grads, n);                  // over d and c
 *   ax_grid_free(&g); */
#ifndef AX_GRID_GRID_H
#define AX_GRID_GRID_H
#include <mpi.h>
#include <stddef.h>
#include "comm/comm.h"

typedef struct {
    int gd, gx, gy, gz, gc; /* group sizes */
    int d, x, y, z, c;      /* this rank's coordinates */
    int rank, size;         /* in the private world */
    MPI_Comm world;         /* duplicate of the user's communicator */
    ax_comm X, Y, Z, Zg;    /* Zg: a second Z group for all-gathers (docs/algorithm.md §4) */
    ax_comm C;              /* ranks differing only in c: one sequence's chunks (ring attention) */
    ax_comm data;           /* ranks differing only in d and c: the same weight shards, other tokens */
    ax_comm dz;             /* data x Z (d, c, z): the ranks that split the rows */
    ax_comm tp;             /* X x Y x Z: one model replica */
} ax_grid;

/* Fails (same message on every rank) when gd*gx*gy*gz*gc != size of comm. */
int ax_grid_init_cp(ax_grid *g, MPI_Comm user, int gd, int gx, int gy, int gz, int gc);
/* the 4D grid: Gc = 1 */
int ax_grid_init(ax_grid *g, MPI_Comm user, int gd, int gx, int gy, int gz);
void ax_grid_free(ax_grid *g);
/* Context parallelism cuts a sequence of T tokens into 2 Gc chunks of
 * T / (2 Gc) and gives rank c chunks c and 2 Gc - 1 - c, in that order, so
 * that every rank has the same share of causal attention's work. Local row i
 * of a sequence (i < T / Gc) is at position ax_grid_cp_pos (Gc = 1: i). */
static inline int ax_grid_cp_pos(const ax_grid *g, int T, int i) {
    if (g->gc == 1) return i;
    int Tc = T / (2 * g->gc), slot = i / Tc;
    return (slot ? 2 * g->gc - 1 - g->c : g->c) * Tc + i % Tc;
}
/* Under a device backend, how each kind of group communicates ("collectives:
 * NCCL for X, Y; host-staged MPI for Z (their ranks share a GPU)"), over every
 * group of the grid (collective); "" under a host backend. */
int ax_grid_comm_line(ax_grid *g, char *line, size_t cap);
/* Under a device backend, the number of kinds of group of more than one rank
 * whose collectives are staged through the host by MPI, named in names with
 * the reason ("Z, data (their ranks share a GPU)"); 0 when every such group
 * is on NCCL, and under a host backend (collective). */
int ax_grid_staged(ax_grid *g, char *names, size_t cap);
/* Parses "D,X,Y,Z". */
int ax_grid_parse(const char *s, int dims[4]);
/* The context split's rule (nn/ring_attention.h): every sequence is cut into
 * 2C chunks, so with C > 1 the sequence length T must be a multiple of 2C
 * (C = 1 cuts nothing). ax_cp_fits says whether (T, C) may run; ax_cp_check
 * returns 0, or an error naming both ("--cp C: the sequence length T must be
 * a multiple of 2C = ..."). */
int ax_cp_fits(int T, int cp);
int ax_cp_check(int T, int cp);
#endif
