/* axonn bench (docs/algorithm.md §5): the training step of `axonn train`, timed the way the
 * AxoNN paper does (N iterations, the mean of the last N-2), with the time
 * split into data, compute, exposed communication per group and optimizer,
 * and a GEMM ceiling measured in the same run on the model's largest local
 * GEMM shape. */
#ifndef AX_TRAIN_BENCH_H
#define AX_TRAIN_BENCH_H
#include "axonn/axonn.h"
#include "backend/backend.h"
#include "backend/gemm_tune.h"
#include <stdbool.h>

/* groups whose blocked time is reported: X, Y, Z (with its all-gather twin),
 * data, data x Z (replicated gradients, token counts), X x Y x Z (norm) */
enum { AX_BG_X, AX_BG_Y, AX_BG_Z, AX_BG_C, AX_BG_DATA, AX_BG_DZ, AX_BG_TP, AX_BG_N };
extern const char *const ax_bench_group_names[AX_BG_N];

typedef struct {
    int ranks, threads, grid[4], cp; /* grid: D, X, Y, Z; cp: C */
    ax_gpt_config cfg;
    int batch, seq, grad_accum;
    const char *recompute, *dtype, *overlap, *gemm_tune;
    int keep_gathered;
    int zero;         /* ZeRO-1 (--zero): AdamW's state sharded over the data group */
    int cuda_graph;   /* the timed steps are replays of a CUDA graph: GEMM and blocked time not measured */
    int iters, timed; /* timed = iters - 2 */
    /* seconds per iteration: the step is the slowest rank's (mean, median,
     * min, max over the timed iterations: the mean as the paper reports it,
     * the median what a burst of other work on a shared machine moves least);
     * its parts are means over ranks, so they sum to at most the step */
    double step_s, step_med_s, step_min_s, step_max_s;
    double data_s, compute_s, gemm_s, optim_s, comm_s[AX_BG_N];
    double tokens, model_flops, hardware_flops; /* per iteration */
    int gemm_m, gemm_n, gemm_k;                 /* the ceiling's shape */
    double gemm_flops;                          /* its FLOP/s per rank, every rank at once */
    double peak, mfu;                           /* a rank's peak, and model FLOP/s per rank over it (0: unknown) */
    char peak_from[200];                        /* whence (measure/peak.h), or why none */
    double param_bytes, act_bytes, ws_bytes;    /* per rank, rank 0 */
    double opt_bytes;                           /* AdamW's moments per rank, rank 0 (its share under --zero 1) */
} ax_bench_result;

/* Sets up the run of o (o->out, checkpoints and metrics are ignored) and times
 * iters >= 3 steps. silent: no start-up lines. Collective over comm. */
int ax_bench(const ax_train_opts *o, int iters, bool silent, MPI_Comm comm, ax_bench_result *res);

/* axonn bench gemm: each local GEMM of a training step (forward, dX and dW of
 * the block's qkv, proj, fc, fcproj and the LM head), every tuner layout timed
 * (backend/gemm_tune.h) on operands of its shape. */
typedef struct {
    const char *layer, *pass; /* "qkv" ... "lmhead"; "forward", "dX", "dW" */
    int m, n, k, tA, tB;
    float beta;          /* 1 where the gradient accumulates */
    int per_step;        /* calls per step: layers x micro-batches, or micro-batches */
    double sec[AX_GT_N]; /* best of the timed rounds; -1: layout not available */
    int chosen;
} ax_bench_gemm_row;

enum { AX_BENCH_GEMM_ROWS = 15 };
typedef struct {
    int ranks, threads, grid[4];
    const char *dtype, *kernel;
    ax_bench_gemm_row row[AX_BENCH_GEMM_ROWS];
    double step_stored_s, step_tuned_s; /* sum over a step's calls */
} ax_bench_gemm_result;

/* Sets up the run of o (as ax_bench) and times each row's layouts as the
 * tuner does (ax_gemm_tune_time), on every rank at once (they share the node in a
 * step); the figures are rank 0's. Collective over comm. */
int ax_bench_gemm(const ax_train_opts *o, bool silent, MPI_Comm comm, ax_bench_gemm_result *res);
#endif
