/* Shared cores: ranks that outnumber their node's cores.
 *
 * What it models. Where a node runs more ranks than it has cores (ranks per node > cores per
 * node, as 4 or 8 ranks on a 2-core test VM), the ranks bound to one core take turns on it,
 * handing it over at every collective that waits. Three figures change, and only then:
 *  - placement: a group whose ranks all sit on one core (AX_PLACE_CORE, plan/machine.h)
 *    copies through that core's caches with no peer on another core to wait for: cheaper
 *    than a group across cores. bench comm measures such groups apart; the planner finds
 *    them from the node's core map (how its ranks, in rank order, fill its cores);
 *  - operand spans: between two uses of a rank's operands its core's caches also see its
 *    core-mates', so the calibration times kernels over (ranks a core) x a rank's bytes;
 *  - hot operands: a GEMM's first operand stays in L2 only if (ranks a core) x the GEMM's
 *    operands fit (ax_gemm_hot_share, plan/calibrate.h).
 * When it applies: at calibration, share > 1 (ax_cores_detect); in the planner, a machine
 * whose cores_per_node is set (bench comm writes it only where ranks outnumbered cores).
 * On a cluster, one rank a core or fewer: share is 1, the machine file has no
 * cores_per_node, no group is placed on one core, and nothing here changes a figure.
 *
 * Example: 8 ranks on 2 cores, bound round robin (mpirun --bind-to core:overload-allowed:
 * node rank l on core l mod 2): share 4, core map round_robin. The Z group of grid 1,1,2,4
 * (stride X Y = 2: ranks 0, 2, 4, 6) is on core 0, so the planner charges its collectives at
 * the "core" fits; its Y group (ranks 0, 1) spans both cores: "intra".
 *
 * Measurements behind these rules: docs/planner-shared-cores.md. */
#ifndef AX_PLAN_SHARED_CORES_H
#define AX_PLAN_SHARED_CORES_H
#include <mpi.h>

/* How a node's ranks, in rank order, fill its cores when they outnumber them: unknown (no
 * group is taken as one core's), round robin (node rank l on core l mod cores: Open MPI's
 * --bind-to core), or in blocks (l / ranks per core). A machine file names it by
 * ax_core_map_names ("core_map", beside "cores_per_node": plan/machine.c). */
typedef enum { AX_CORES_UNKNOWN, AX_CORES_ROUND_ROBIN, AX_CORES_BLOCK, AX_CORES_N } ax_core_map;
extern const char *const ax_core_map_names[AX_CORES_N]; /* unknown, round_robin, block */

/* ---- the planner ---- */
/* 1 where a group of p > 1 ranks at stride s within a node sits on one core, the node's
 * ranks_per_node ranks filling its cores_per_node cores as core_map says; 0 where the ranks
 * do not outnumber the cores (cores_per_node 0: a machine file without it). */
int ax_cores_one_core(int ranks_per_node, int cores_per_node, int core_map, int s, int p);

/* ---- the calibration (axonn bench comm) ---- */
/* The node's cores as the calibration finds them: every figure above that depends on them
 * is taken from this one description. */
typedef struct {
    int share;          /* ranks (times their threads) to a core of the node, rounded up; 1: a core each */
    long l2;            /* bytes of a core's L2 cache (0 or less: not known) */
    int cores_per_node; /* where a node's ranks outnumber its cores: the cores (the fewest of any node); else 0 */
    int core_map;       /* then how the ranks fill them (ax_core_map); else AX_CORES_UNKNOWN */
    int *core_of;       /* per rank of the world: the core it is bound to alone, -1 where not bound to one */
} ax_cores;
/* Collective over w (node: w's ranks sharing this one's memory; ranks_per_node: the most
 * ranks of any node): reads every rank's binding and the L2's size into k. ax_cores_free
 * releases k. */
void ax_cores_detect(ax_cores *k, int ranks_per_node, MPI_Comm w, MPI_Comm node);
void ax_cores_free(ax_cores *k);
/* 1 where the p ranks first, first + s, ... are all bound to one core (local; no communication) */
int ax_cores_group_on_one(const ax_cores *k, int first, int s, int p);
#endif
