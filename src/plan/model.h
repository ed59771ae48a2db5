/* The performance model (docs/algorithm.md §6): for a GPT model, a job (global batch,
 * sequence, micro-batches, recompute mode, activation dtype, context split C),
 * a grid (D, X, Y, Z) and a machine description, the predicted step time, its
 * parts and the memory per rank. Pure arithmetic: nothing is allocated or run.
 *
 * Step time = accum x (GEMMs + attention + elementwise + communication of one
 * micro-batch) + data-parallel reductions + optimizer, where
 *  - GEMMs are the local shapes this code runs on the grid (every FC layer's
 *    forward, dX and dW, the LM head over the local vocabulary rows), each
 *    measured at that shape and layout where the machine lists it, else
 *    alpha_gemm + FLOPs / gemm_flops;
 *  - attention counts 7 T^2 hd FLOPs per (sequence, local head) for forward and
 *    backward (2 + 5 causal half-products), at the machine's attention rate
 *    (measured at the job's T and head size where listed); with C > 1 a rank
 *    does 1/C of it (the causal load balance) at the rate for its T/C rows;
 *  - C > 1: every per-token op on B T / C rows; the ring's transfers of key/value
 *    chunks (and their gradients) between neighbours of the C group, each
 *    charged as one step of a ring all-gather, hidden behind the attention
 *    steps they run with; the gradients reduced over data x C (C like data);
 *  - elementwise kernels (LayerNorm, GELU, bias, residual, cross-entropy)
 *    are bytes moved at the machine's elementwise bandwidth, except the
 *    activation, LayerNorm and cross-entropy where the machine has their
 *    measured cost per element; AdamW per parameter;
 *  - every collective is alpha + beta x its docs/algorithm.md §2 volume (ring factor
 *    included), the fit of its group size and placement (x fastest: a group of
 *    stride s and size p stays in a node when s p divides the ranks per node);
 *  - the overlaps in force (ov_flags) hide each collective behind the compute
 *    it runs with, up to that compute and scaled by the machine's measured
 *    overlap efficiency; exposed = (1 - overlap) x (total - hidden), overlap
 *    a further what-if share (default 0).
 * Memory per rank mirrors model/gpt.c: parameters, gradients and both AdamW
 * moments in fp32, the activations its layout keeps in the recompute mode,
 * the Z gather/scatter workspaces (not the attention kernel's per-thread scratch).
 *
 * ZeRO-1 (zero 1): the data-parallel gradients are summed over a group of p ranks, the
 * Z-chunked region (FC weights, token table, LM head) over data x C (p = D C), the
 * replicated region (norms, biases) over data x C x Z (p = D C Z). Each region's
 * all-reduce becomes a reduce-scatter over the same group, started where the all-reduce
 * was and hidden the same way (DP); AdamW updates a rank's 1/p block, so the optimizer
 * time and both moments scale by 1/p; then an all-gather of the updated fp32 parameters
 * over the group (reduce-scatter + all-gather volume = the all-reduce's), run bucket by
 * bucket after the update: exposed, except (DP) up to the update of the buckets after the
 * first. Memory per parameter: weights 4 + gradients 4 (both stay whole) + the reduced
 * gradient's block 4/p + m, v 8/p bytes. A range's < p leftover elements (all-reduced,
 * updated by every rank) are left out: at most p - 1 per bucket. */
#ifndef AX_PLAN_MODEL_H
#define AX_PLAN_MODEL_H
#include <stdint.h>
#include "axonn/axonn.h"
#include "plan/machine.h"

typedef struct {
    ax_gpt_config cfg;
    int batch, seq, grad_accum;  /* global batch in sequences, tokens per sequence, micro-batches */
    int recompute;               /* ax_recompute (model/gpt.h): AX_RECOMPUTE_NONE, _ATTN, _BLOCK */
    int act_bytes;               /* bytes per activation element and per gathered FC weight one: 4 fp32,
                                    2 bf16 (activations' all-reduces and the token table stay fp32) */
    double overlap;              /* share of communication hidden behind compute (0..1) */
    int ov_flags, keep_gathered; /* the trainer's --overlap (AX_OV_*, default all) and --keep-gathered: their buffers */
    double mem_reserve;          /* share of memory kept free for the runtime (default 0.1) */
    int cp;   /* the context split C (default 1, as the trainer); ax_plan_run: 0 tries every C (ax_cp_fits) */
    int zero; /* the trainer's --zero: 0 (default) or 1; ax_plan_run: AX_PLAN_ZERO_ANY tries both */
} ax_plan_job;

/* ax_plan_job.zero: every setting (ax_plan_run, ax_plan_min_ranks); ax_plan_cost.zero: a grid the
 * model's rules reject under either setting (listed once) */
enum { AX_PLAN_ZERO_ANY = -1 };

/* groups: X, Y, Z (gathers and reduce-scatters), data (x C), data x C x Z, X x Y x Z, C (the ring's transfers) */
enum { AX_PG_X, AX_PG_Y, AX_PG_Z, AX_PG_DATA, AX_PG_DZ, AX_PG_TP, AX_PG_C, AX_PG_N };
extern const char *const ax_plan_group_names[AX_PG_N];

typedef struct {
    int grid[4];   /* D, X, Y, Z */
    int cp;        /* C: the job's (ax_plan_run: the one this grid was estimated with) */
    int zero;      /* the ZeRO setting it was estimated with (0, 1; AX_PLAN_ZERO_ANY above) */
    int legal;     /* the grid divides the model and the batch */
    int fits;      /* and its memory fits */
    char why[200]; /* why not, when !legal or !fits */
    double step_s, compute_s, gemm_s, attn_s, elem_s, optim_s;
    double comm_s[AX_PG_N], comm_total_s, hidden_s, exposed_s; /* hidden by the overlaps in force */
    int place[AX_PG_N];                                        /* ax_place: within a node, across nodes, on one core */
    double comm_bytes[AX_PG_N];                                /* per rank per step */
    double n_coll[AX_PG_N];                                    /* collectives per step */
    int64_t n_local;                                           /* parameters per rank */
    double n_update; /* of which the rank's AdamW updates: n_local, or its 1/p blocks under zero 1 */
    /* mem = weights + gradients (4 B each per parameter) + AdamW's m, v (8 B per updated one) +
     * the reduced gradient's block (zero 1: 4 B per updated one) + activations + workspaces */
    double param_bytes, grad_bytes, optim_bytes, share_bytes, act_bytes, ws_bytes, mem_bytes;
} ax_plan_cost;

void ax_plan_job_defaults(ax_plan_job *j);
/* Fills c for grid (D, X, Y, Z), the job's C (0 taken as 1) and zero (AX_PLAN_ZERO_ANY taken as 0);
 * c->legal and c->fits say the rest. */
void ax_plan_estimate(const ax_plan_job *j, const int grid[4], const ax_machine *m, ax_plan_cost *c);
/* with_time 0: legality and memory only (the minimum-rank search) */
void ax_plan_estimate_part(const ax_plan_job *j, const int grid[4], const ax_machine *m, ax_plan_cost *c,
                           int with_time);
/* The distinct GEMMs of a step on the grid (shape, layout, dtype; flops 0) appended to
 * shapes[n..max); returns the new count. For measuring them (bench comm's model options). */
int ax_plan_gemm_shapes(const ax_plan_job *j, const int grid[4], ax_gemm_point *shapes, int n, int max);
#endif
