/* Every grid of P ranks, one at a time, for the tests that run on all of them:
 *   for (ax_t_grids q = {.P = P, .cp = cp, .T = T}; ax_t_grids_next(&q);)
 *       ax_grid_init_cp(&g, MPI_COMM_WORLD, q.d, q.x, q.y, q.z, q.c) ...
 * yields each ordered factorisation d * x * y * z * c = P, with c from 2 to P
 * when cp is set (context parallelism) and c = 1 otherwise; z varies
 * fastest, then y, x, d, and c slowest. Where T (the sequence length) is
 * given, a c that does not cut T into 2c equal chunks is passed over (so is
 * every grid for an odd T, c = 1 included); T = 0 places no such rule. */
#ifndef AX_TESTS_GRIDS_H
#define AX_TESTS_GRIDS_H
#include <string.h>
#include "grid/grid.h"
#include "util/err.h"

/* The grid a test's arguments "--grid D,X,Y,Z" name (1,1,1,1 without them),
 * on MPI_COMM_WORLD, its sizes into dims; bad input exits.
 *   ax_grid g; int dims[4]; ax_t_grid_args(argc, argv, &g, dims); */
static inline void ax_t_grid_args(int argc, char **argv, ax_grid *g, int dims[4]) {
    dims[0] = dims[1] = dims[2] = dims[3] = 1;
    if (argc > 2 && strcmp(argv[1], "--grid") == 0 && ax_grid_parse(argv[2], dims)) ax_err_exit(1);
    if (ax_grid_init(g, MPI_COMM_WORLD, dims[0], dims[1], dims[2], dims[3])) ax_err_exit(1);
}

typedef struct {
    int P, cp, T;      /* what to enumerate: ranks, context parallel (0/1), sequence length (0: any) */
    int d, x, y, z, c; /* the current grid; all 0 before the first call */
} ax_t_grids;

/* advances q to the next grid: 1, or 0 when there is none left */
static inline int ax_t_grids_next(ax_t_grids *q) {
    int P = q->P, cmax = q->cp ? P : 1;
    if (!q->c) q->c = q->cp ? 2 : 1, q->d = q->x = q->y = 1, q->z = 0;
    while (q->c <= cmax) {
        /* an odometer over (c, d, x, y, z), each digit from 1 to P */
        if (++q->z > P) q->z = 1, q->y++;
        if (q->y > P) q->y = 1, q->x++;
        if (q->x > P) q->x = 1, q->d++;
        if (q->d > P) q->d = 1, q->c++;
        if (q->c <= cmax && q->d * q->x * q->y * q->z * q->c == P && !(q->T && q->T % (2 * q->c))) return 1;
    }
    return 0;
}

#endif
