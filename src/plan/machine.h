/* A machine description: what the performance model (plan/model.h) needs to
 * know about the hardware, per rank. Written by `axonn bench comm` (measured)
 * or taken from a built-in preset (nominal datasheet figures, docs/planner.md).
 *
 * Collectives follow the alpha-beta model: t = alpha + beta * bytes, where
 * bytes is the per-rank volume of docs/algorithm.md §2 with its ring factor ((p-1)/p for
 * all-gather and reduce-scatter, 2(p-1)/p for all-reduce) already applied, so
 * one fit serves every group size; a fit is kept per (collective, group size,
 * placement), group 0 standing for any size. Where bench comm measured the
 * collective, the fit keeps its points too, and a volume within their range
 * costs the line between its two neighbours: on a CPU node the bandwidth peaks
 * where the buffers fit the caches and falls beyond them, which no one line
 * follows (measured: docs/planner-shared-cores.md).
 *
 *   ax_machine mc;
 *   if (ax_machine_read(&mc, "machine.json")) ...      // or ax_machine_preset(&mc, "perlmutter")
 *   double t = ax_machine_coll(&mc, AX_COLL_AR, 4, 0, 2.0 * 3 / 4 * bytes);
 */
#ifndef AX_PLAN_MACHINE_H
#define AX_PLAN_MACHINE_H
#include "plan/shared_cores.h" /* ax_core_map: ranks outnumbering cores */

typedef enum { AX_COLL_AR, AX_COLL_AG, AX_COLL_RS, AX_COLL_N } ax_coll_op;
extern const char *const ax_coll_names[AX_COLL_N]; /* allreduce, allgather, reduce_scatter */
/* Where a group's ranks are: within one node, across nodes, or all on one
 * core, where ranks outnumber the cores (plan/shared_cores.h): such a group's
 * ranks take turns and copy through that core's caches, no peer waiting on
 * another core, and cost less than a group across cores. */
typedef enum { AX_PLACE_INTRA, AX_PLACE_INTER, AX_PLACE_CORE, AX_PLACE_N } ax_place;
extern const char *const ax_place_names[AX_PLACE_N]; /* intra, inter, core */

#define AX_COLL_POINTS 16
typedef struct {
    int op, group, place; /* group 0: any size; place: ax_place */
    double alpha, beta;   /* seconds, seconds per byte */
    int npt;              /* measured points, bytes (ring factor applied) ascending, and seconds */
    double pt_bytes[AX_COLL_POINTS], pt_s[AX_COLL_POINTS];
} ax_coll_fit;

/* a GEMM measured at one shape: C (m x n) = op(A) op(B) over k, A transposed
 * when ta, B when tb, its inputs bf16 or fp32 */
typedef struct {
    int m, n, k, ta, tb, bf16;
    double flops;
} ax_gemm_point;
/* the causal attention kernel measured at one sequence length and head size */
typedef struct {
    int T, hd;
    double flops;
} ax_attn_point;

#define AX_MACHINE_FITS  256
#define AX_MACHINE_GEMMS 1024
#define AX_MACHINE_ATTNS 64
typedef struct {
    char name[128], source[256];
    int ranks_per_node;
    int cores_per_node, core_map;            /* where ranks outnumber cores (plan/shared_cores.h), else 0 */
    double mem_bytes;                        /* memory per rank */
    double gemm_flops;                       /* GEMM rate of large shapes, per rank */
    double gemm_alpha;                       /* fixed seconds per GEMM call (small shapes fall short of the rate) */
    double gemm_bf16_flops, gemm_bf16_alpha; /* the same for bf16 inputs (fp32 accumulation); 0: as fp32 */
    /* measured shapes: the squares of the fits, and with bench comm's model options every GEMM
     * of that job's grids; a GEMM of a listed shape costs what was measured, others the fit */
    int ngemm;
    ax_gemm_point gemm[AX_MACHINE_GEMMS];
    double attn_flops; /* causal attention kernel, FLOPs as counted in plan/model.c */
    int nattn;
    ax_attn_point attn[AX_MACHINE_ATTNS]; /* at listed (T, hd); others attn_flops */
    double mem_bw;                        /* bytes/s per rank of the elementwise kernels */
    double optim_s_per_param; /* AdamW update + gradient norm, seconds per local parameter (0: 36 bytes at mem_bw) */
    /* the MLP's activation (GELU; SwiGLU taken alike), seconds per element forward and backward: on a CPU it is
     * transcendental arithmetic, not memory traffic (0: its bytes at mem_bw) */
    double act_fwd_s, act_bwd_s;
    /* LayerNorm (RMSNorm taken alike) forward and backward, seconds per element of its input, and
     * the vocabulary-parallel cross-entropy (forward and gradient), seconds per logit: rows
     * reduced, square roots and exponentials, more than their bytes on a CPU (0: bytes at mem_bw) */
    double ln_fwd_s, ln_bwd_s, loss_s;
    /* share of an overlapped collective that its compute actually hides (-1..1; 1 where the
     * collectives have their own engine, e.g. NCCL on a GPU; on CPU cores that both copy and
     * compute, less, and negative where overlapping costs that share on top): measured by
     * bench comm, 1 when absent */
    double overlap_eff;
    int nfit;
    ax_coll_fit fit[AX_MACHINE_FITS];
} ax_machine;

/* One line naming the file and the missing or bad field on error. */
int ax_machine_read(ax_machine *m, const char *path);
int ax_machine_write(const ax_machine *m, const char *path);
/* perlmutter, frontier, alps, h100x8, h200x8, cpu (an estimate for this kind of machine) */
int ax_machine_preset(ax_machine *m, const char *name);
extern const char *const ax_machine_preset_list;
/* Seconds of one collective of `bytes` (ring factor applied) over p ranks
 * placed as `place`; 0 for p = 1. Takes the fit of that group size and
 * placement, else the nearest group size, else the nearest placement (one
 * core, within a node, across nodes, in that order); between its measured
 * points their interpolation, beyond the last one the last segment's slope. */
double ax_machine_coll(const ax_machine *m, int op, int p, int place, double bytes);
/* The placement of a group of p ranks at stride s among P (ranks in node
 * blocks of ranks_per_node; on one core by ax_cores_one_core where ranks
 * outnumber cores). */
int ax_machine_place(const ax_machine *m, int s, int p, int P);
/* Seconds of a GEMM of `flops`, its inputs in bf16 or fp32, at the fit */
static inline double ax_machine_gemm(const ax_machine *m, double flops, int bf16) {
    if (bf16 && m->gemm_bf16_flops > 0) return m->gemm_bf16_alpha + flops / m->gemm_bf16_flops;
    return m->gemm_alpha + flops / m->gemm_flops;
}
/* Seconds of the GEMM C (M x N) = op(A) op(B) over K: measured at that shape, layout and dtype
 * if listed, else the fit */
double ax_machine_gemm_at(const ax_machine *m, int M, int N, int K, int ta, int tb, int bf16);
/* FLOP/s of the attention kernel at sequence length T and head size hd: measured there if
 * listed, else attn_flops */
double ax_machine_attn_rate(const ax_machine *m, int T, int hd);
#endif
