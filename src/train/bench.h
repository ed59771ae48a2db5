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
    char peak_from[200];                        /* whence (train/peak.h), or why none */
    double param_bytes, act_bytes, ws_bytes;    /* per rank, rank 0 */
} ax_bench_result;

/* Sets up the run of o (o->out, checkpoints and metrics are ignored) and times
 * iters >= 3 steps. silent: no start-up lines. Collective over comm. */
int ax_bench(const ax_train_opts *o, int iters, int silent, MPI_Comm comm, ax_bench_result *res);

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
int ax_bench_gemm(const ax_train_opts *o, int silent, MPI_Comm comm, ax_bench_gemm_result *res);

/* Seconds of one call of f with every rank of w calling it at once: a warm-up,
 * a pilot that sets the repetitions (all ranks agree), then five trials, each
 * from a barrier to the backend's queue drained on every rank and a second
 * barrier (the first rank's start to the last rank's end, as a step between
 * two collectives), the median kept (a burst of other work on a shared machine
 * moves one trial). Each trial lasts about min_s / 5. Where ranks share cores,
 * timing each rank alone would count the stretches it ran while its core-mates
 * waited in the barrier: too high a rate, and the planner's step times too
 * short (measured: docs/planner-shared-cores.md). Collective over w. */
typedef void (*ax_op_fn)(void *ctx);
double ax_time_all(ax_op_fn f, void *ctx, double min_s, MPI_Comm w);

/* A training step finds a kernel's operands where the step left them: its
 * input was the last kernel's output, its weights and saved activations were
 * touched a layer or a step before, with the rest of the rank's memory in
 * between. Timed on one set of operands over and over, a kernel runs from the
 * caches, faster than in the step (docs/planner-shared-cores.md). So the calibration
 * times a kernel on copies of its operands in turn, each call on the next, as
 * many as fill the bytes a rank of the job holds (its span, ax_calibrate):
 * between two uses of a copy the caches see as much other data as in a step,
 * and every rank does the same at once, as they share the node's caches in a
 * step. ax_operand_sets: how many sets of set_bytes a span holds, within
 * [1, max]. The GEMMs' sets are carved from one pool of span bytes of the
 * backend's memory, touched once (a fresh page is slow to fault in).
 * ax_time_sets is ax_time_all over the contexts ctxs[0 .. nsets-1], each
 * ctx_size bytes. */
typedef struct {
    char *base;
    size_t bytes;
    int hot_first; /* ax_gemm_rate: the first operand (x, dY) one copy, hot, as the kernel before left it */
} ax_operand_pool;
int ax_operand_sets(size_t span, size_t set_bytes, int max);
double ax_time_sets(ax_op_fn f, void *ctxs, size_t ctx_size, int nsets, double min_s, MPI_Comm w);

/* FLOP/s per rank of C (m x n) = op(A) op(B) over k through the backend's GEMM
 * (A stored k x m when ta, else m x k; B n x k when tb, else k x n), every rank
 * of w at once (ax_time_all): on as many operand sets as pool holds, as a step
 * finds them (with pool->hot_first, the second operand and the output only);
 * pool NULL: on one set, hot (the kernel's ceiling). Collective
 * over w; the same figure on every rank. */
double ax_gemm_rate(ax_dtype t, int m, int n, int k, int ta, int tb, const ax_operand_pool *pool, double min_s,
                    MPI_Comm w);
#endif
