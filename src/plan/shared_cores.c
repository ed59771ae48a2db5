/* Shared cores: ranks that outnumber their node's cores (plan/shared_cores.h). */
#define _GNU_SOURCE 1
#include "plan/shared_cores.h"
#include "backend/backend.h"
#include "util/err.h"
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

const char *const ax_core_map_names[AX_CORES_N] = {"unknown", "round_robin", "block"};

int ax_cores_one_core(int ranks_per_node, int cores_per_node, int core_map, int s, int p) {
    int R = ranks_per_node, C = cores_per_node;
    if (p < 2 || C < 1 || R <= C) return 0;
    if (core_map == AX_CORES_ROUND_ROBIN && s % C == 0) return 1; /* stride a multiple of the cores */
    int per = R / C;                                              /* in blocks: s*p ranks tile a core's */
    return core_map == AX_CORES_BLOCK && R % C == 0 && s * p <= per && per % (s * p) == 0;
}

void ax_cores_detect(ax_cores *k, int ranks_per_node, MPI_Comm w, MPI_Comm node) {
    int W, local, lr;
    MPI_Comm_size(w, &W);
    MPI_Comm_size(node, &local);
    MPI_Comm_rank(node, &lr);
    /* ranks (times their threads) to a core of the node: the cores any rank of it may run on */
    cpu_set_t mine, cores;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine)) CPU_SET(0, &mine);
    cores = mine;
    MPI_Allreduce(MPI_IN_PLACE, &cores, sizeof cores, MPI_BYTE, MPI_BOR, node);
    int ncores = CPU_COUNT(&cores);
    k->share = (local * ax_be()->threads() + ncores - 1) / ncores;
    k->l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    /* a rank bound to one core: that core, and its place among the node's (-1: not bound to one) */
    int core = -1, pos = -1;
    for (int c = 0; c < CPU_SETSIZE && CPU_COUNT(&mine) == 1; c++)
        if (CPU_ISSET(c, &cores)) {
            pos++;
            if (CPU_ISSET(c, &mine)) {
                core = c;
                break;
            }
        }
    k->core_of = ax_malloc(W * sizeof(int));
    MPI_Allgather(&core, 1, MPI_INT, k->core_of, 1, MPI_INT, w);
    /* how the node's ranks fill its cores, where they outnumber them: every rank bound to one,
     * the node's l-th on its l mod cores-th (round robin) or its l / (ranks per core)-th (blocks) */
    int fit[2] = {core >= 0 && pos == lr % ncores, core >= 0 && local % ncores == 0 && pos == lr / (local / ncores)};
    MPI_Allreduce(MPI_IN_PLACE, fit, 2, MPI_INT, MPI_MIN, w);
    MPI_Allreduce(MPI_IN_PLACE, &ncores, 1, MPI_INT, MPI_MIN, w);
    int over = ranks_per_node > ncores;
    k->cores_per_node = over ? ncores : 0;
    k->core_map = !over ? AX_CORES_UNKNOWN : fit[0] ? AX_CORES_ROUND_ROBIN : fit[1] ? AX_CORES_BLOCK : AX_CORES_UNKNOWN;
}

void ax_cores_free(ax_cores *k) {
    free(k->core_of);
    k->core_of = NULL;
}

int ax_cores_group_on_one(const ax_cores *k, int first, int s, int p) {
    int one = k->core_of[first] >= 0;
    for (int i = 0; i < p; i++) one &= k->core_of[first + i * s] == k->core_of[first];
    return one;
}
