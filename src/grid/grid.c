#include "grid/grid.h"
#ifdef AX_HAVE_CUDA
#include "comm/nccl.h"
#endif
#include "comm/devices.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void split(ax_grid *g, ax_comm *c, int color, int key) {
    MPI_Comm m;
    AX_CHECK_MPI(MPI_Comm_split(g->world, color, key, &m));
    ax_comm_from(c, m);
}

int ax_grid_init(ax_grid *g, MPI_Comm user, int gd, int gx, int gy, int gz) {
    memset(g, 0, sizeof *g);
    int size;
    MPI_Comm_size(user, &size);
    if (gd < 1 || gx < 1 || gy < 1 || gz < 1)
        return AX_ERR("--grid %d,%d,%d,%d: every dimension must be >= 1", gd, gx, gy, gz);
    if ((long)gd * gx * gy * gz != size)
        return AX_ERR("--grid %d,%d,%d,%d: D*X*Y*Z = %ld, expected the number of ranks %d", gd, gx, gy, gz,
                      (long)gd * gx * gy * gz, size);
    AX_CHECK_MPI(MPI_Comm_dup(user, &g->world));
    MPI_Comm_rank(g->world, &g->rank);
    g->size = size;
    g->gd = gd;
    g->gx = gx;
    g->gy = gy;
    g->gz = gz;
    int r = g->rank;
    g->x = r % gx;
    r /= gx;
    g->y = r % gy;
    r /= gy;
    g->z = r % gz;
    r /= gz;
    g->d = r;
    /* colour = the coordinates that stay fixed inside the group */
    int d = g->d, x = g->x, y = g->y, z = g->z;
    split(g, &g->X, ((d * gz + z) * gy + y), x);
    split(g, &g->Y, ((d * gz + z) * gx + x), y);
    split(g, &g->Z, ((d * gy + y) * gx + x), z);
    split(g, &g->Zg, ((d * gy + y) * gx + x), z);
    split(g, &g->data, ((z * gy + y) * gx + x), d);
    split(g, &g->dz, y * gx + x, d * gz + z);
    split(g, &g->tp, d, (z * gy + y) * gx + x);
#ifdef AX_HAVE_CUDA
    if (!ax_be()->host_memory) return ax_nccl_init(g); /* a GPU backend: NCCL beside the MPI groups */
#endif
    return 0;
}

int ax_grid_comm_line(ax_grid *g, char *line, size_t cap) {
    line[0] = 0;
    if (ax_be()->host_memory) return 0;
    ax_comm *all[] = {&g->X, &g->Y, &g->Z, &g->Zg, &g->data, &g->dz, &g->tp};
    static const char *const names[] = {"X", "Y", "Z", "Z gathers", "data", "data x Z", "X x Y x Z"};
    enum { N = sizeof all / sizeof *all };
    int how[N]; /* per kind of group, over every group of the kind: 1 some on NCCL, 2 some staged */
    for (int i = 0; i < N; i++) how[i] = all[i]->size < 2 ? 0 : all[i]->nccl ? 1 : 2;
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, how, N, MPI_INT, MPI_BOR, g->world));
    size_t k = (size_t)snprintf(line, cap, "collectives:");
    for (int pass = 1; pass <= 2; pass++) {
        int first = 1;
        for (int i = 0; i < N && k < cap; i++) {
            if (!(how[i] & pass)) continue;
            k += (size_t)snprintf(line + k, cap - k, "%s%s",
                                  first ? (pass == 1 ? " NCCL for " : " host-staged MPI for ") : ", ", names[i]);
            first = 0;
        }
        if (!first && pass == 2 && k < cap)
            k += (size_t)snprintf(line + k, cap - k, " (%s)",
                                  ax_get_device_comm() == AX_DEVICE_COMM_MPI ? "--device-comm mpi"
                                                                             : "their ranks share a GPU");
        if (!first && pass == 1 && k < cap) k += (size_t)snprintf(line + k, cap - k, ";");
    }
    if (k == strlen("collectives:")) snprintf(line + k, cap - k, " none (one rank)");
    return 0;
}

void ax_grid_free(ax_grid *g) {
    ax_comm *all[] = {&g->X, &g->Y, &g->Z, &g->Zg, &g->data, &g->dz, &g->tp};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ax_comm_free(all[i]);
    if (g->world != MPI_COMM_NULL && g->world) MPI_Comm_free(&g->world);
}

int ax_grid_parse(const char *s, int dims[4]) {
    char tail;
    if (sscanf(s, "%d,%d,%d,%d%c", &dims[0], &dims[1], &dims[2], &dims[3], &tail) != 4)
        return AX_ERR("--grid '%s': expected four integers D,X,Y,Z", s);
    for (int i = 0; i < 4; i++)
        if (dims[i] < 1) return AX_ERR("--grid '%s': every dimension must be >= 1", s);
    return 0;
}
