#include "grid/grid.h"
#ifdef AX_HAVE_CUDA
#include "comm/nccl.h"
#endif
#include "comm/devices.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* every group of the grid, in the order ax_grid_comm_line names them */
enum { N_GROUPS = 8 };
static void groups(ax_grid *g, ax_comm *all[N_GROUPS]) {
    ax_comm *list[N_GROUPS] = {&g->X, &g->Y, &g->Z, &g->Zg, &g->C, &g->data, &g->dz, &g->tp};
    memcpy(all, list, sizeof list);
}

static void split(ax_grid *g, ax_comm *c, int color, int key) {
    MPI_Comm m;
    AX_CHECK_MPI(MPI_Comm_split(g->world, color, key, &m));
    ax_comm_from(c, m);
}

int ax_cp_fits(int T, int cp) { return cp == 1 || (cp > 1 && T % (2 * cp) == 0); }

int ax_cp_check(int T, int cp) {
    if (cp < 1) return AX_ERR("--cp %d: expected >= 1", cp);
    if (!ax_cp_fits(T, cp))
        return AX_ERR("--cp %d: the sequence length %d must be a multiple of 2C = %d (each sequence is cut into 2C "
                      "chunks)",
                      cp, T, 2 * cp);
    return 0;
}

int ax_grid_init(ax_grid *g, MPI_Comm user, int gd, int gx, int gy, int gz) {
    return ax_grid_init_cp(g, user, gd, gx, gy, gz, 1);
}

int ax_grid_init_cp(ax_grid *g, MPI_Comm user, int gd, int gx, int gy, int gz, int gc) {
    memset(g, 0, sizeof *g);
    int size;
    MPI_Comm_size(user, &size);
    if (gc < 1) return AX_ERR("--cp %d: expected >= 1", gc);
    if (gd < 1 || gx < 1 || gy < 1 || gz < 1)
        return AX_ERR("--grid %d,%d,%d,%d: every dimension must be >= 1", gd, gx, gy, gz);
    long P = (long)gd * gx * gy * gz * gc;
    if (P != size) {
        if (gc == 1)
            return AX_ERR("--grid %d,%d,%d,%d: D*X*Y*Z = %ld, expected the number of ranks %d", gd, gx, gy, gz, P,
                          size);
        return AX_ERR("--grid %d,%d,%d,%d --cp %d: D*X*Y*Z*C = %ld, expected the number of ranks %d", gd, gx, gy, gz,
                      gc, P, size);
    }
    AX_CHECK_MPI(MPI_Comm_dup(user, &g->world));
    MPI_Comm_rank(g->world, &g->rank);
    g->size = size;
    g->gd = gd;
    g->gx = gx;
    g->gy = gy;
    g->gz = gz;
    g->gc = gc;
    int r = g->rank;
    g->x = r % gx;
    r /= gx;
    g->y = r % gy;
    r /= gy;
    g->z = r % gz;
    r /= gz;
    g->c = r % gc;
    g->d = r / gc;
    /* colour = the coordinates that stay fixed inside the group; key = the
     * group's own coordinates (data: d-major, then c) */
    int d = g->d, x = g->x, y = g->y, z = g->z, c = g->c, xy = y * gx + x;
    int dcz = (d * gc + c) * gz + z;
    split(g, &g->X, dcz * gy + y, x);
    split(g, &g->Y, dcz * gx + x, y);
    split(g, &g->Z, ((d * gc + c) * gy + y) * gx + x, z);
    split(g, &g->Zg, ((d * gc + c) * gy + y) * gx + x, z);
    split(g, &g->C, (d * gz + z) * gy * gx + xy, c);
    split(g, &g->data, z * gy * gx + xy, d * gc + c);
    split(g, &g->dz, xy, dcz);
    split(g, &g->tp, d * gc + c, (z * gy + y) * gx + x);
#ifdef AX_HAVE_CUDA
    /* a GPU backend: NCCL beside the MPI groups, on every group of more
     * than one rank whose ranks drive distinct GPUs; a group of one copies,
     * the others stage their collectives through the host (comm.h) */
    if (!ax_be()->host_memory) {
        AX_TRY(ax_nccl_ready(g->world));
        ax_comm *all[N_GROUPS];
        groups(g, all);
        for (int i = 0; i < N_GROUPS; i++) ax_nccl_group(all[i]);
    }
#endif
    return 0;
}

static const char *const group_names[N_GROUPS] = {"X", "Y", "Z", "Z gathers", "C", "data", "data x Z", "X x Y x Z"};

/* per kind of group, over every group of the kind (collective): 1 some on
 * NCCL, 2 some staged, 0 none of more than one rank */
static void group_ways(ax_grid *g, int how[N_GROUPS]) {
    ax_comm *all[N_GROUPS];
    groups(g, all);
    for (int i = 0; i < N_GROUPS; i++) how[i] = all[i]->size < 2 ? 0 : all[i]->nccl ? 1 : 2;
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, how, N_GROUPS, MPI_INT, MPI_BOR, g->world));
}

static const char *staged_why(void) {
    return ax_get_device_comm() == AX_DEVICE_COMM_MPI ? "--device-comm mpi" : "their ranks share a GPU";
}

int ax_grid_staged(ax_grid *g, char *names, size_t cap) {
    names[0] = 0;
    if (ax_be()->host_memory) return 0;
    int how[N_GROUPS], n = 0;
    group_ways(g, how);
    size_t k = 0;
    for (int i = 0; i < N_GROUPS; i++)
        if (how[i] & 2 && k < cap) k += (size_t)snprintf(names + k, cap - k, "%s%s", n++ ? ", " : "", group_names[i]);
    if (n && k < cap) snprintf(names + k, cap - k, " (%s)", staged_why());
    return n;
}

int ax_grid_comm_line(ax_grid *g, char *line, size_t cap) {
    line[0] = 0;
    if (ax_be()->host_memory) return 0;
    int how[N_GROUPS];
    group_ways(g, how);
    size_t k = (size_t)snprintf(line, cap, "collectives:");
    int nccl = 0; /* the NCCL part was written: a staged part follows it after "; " */
    for (int pass = 1; pass <= 2; pass++) {
        int first = 1;
        for (int i = 0; i < N_GROUPS && k < cap; i++) {
            if (!(how[i] & pass)) continue;
            const char *head = pass == 1 ? " NCCL for " : nccl ? "; host-staged MPI for " : " host-staged MPI for ";
            k += (size_t)snprintf(line + k, cap - k, "%s%s", first ? head : ", ", group_names[i]);
            first = 0;
        }
        if (!first && pass == 2 && k < cap) k += (size_t)snprintf(line + k, cap - k, " (%s)", staged_why());
        if (pass == 1) nccl = !first;
    }
    if (k == strlen("collectives:")) snprintf(line + k, cap - k, " none (one rank)");
    return 0;
}

void ax_grid_free(ax_grid *g) {
    ax_comm *all[N_GROUPS];
    groups(g, all);
    for (int i = 0; i < N_GROUPS; i++) ax_comm_free(all[i]);
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
