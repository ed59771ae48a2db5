/* Timing kernels as a training step runs them: every rank of a group at
 * once, on operands laid out where a step leaves them. What `axonn bench`
 * (src/train) and `axonn bench comm`'s calibration (src/plan) both time
 * with, below both: it knows the backend table and MPI, nothing above. */
#ifndef AX_MEASURE_TIMING_H
#define AX_MEASURE_TIMING_H
#include <mpi.h>
#include <stddef.h>
#include "backend/backend.h"

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
