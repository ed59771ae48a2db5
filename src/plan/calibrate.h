/* axonn bench comm: measures this machine into a machine description
 * (plan/machine.h). Collectives of every group size that divides the world,
 * in each placement the ranks allow (groups of consecutive ranks, and groups
 * strided across them; inside one node or spanning nodes), over a sweep of
 * message sizes, each fitted by least squares to alpha + beta * bytes; GEMM
 * rates at a few shapes, the attention kernel's rate, the elementwise
 * bandwidth, the per-element costs of the activation, LayerNorm and loss, the
 * optimizer's per-parameter cost, ranks per node and memory per rank; with a
 * job, also its GEMMs and attention at their shapes. Each figure is the median
 * of five trials. Only on private duplicates of the caller's communicator. */
#ifndef AX_PLAN_CALIBRATE_H
#define AX_PLAN_CALIBRATE_H
#include <mpi.h>
#include <stddef.h>
#include "plan/model.h"

typedef struct {
    size_t min_bytes, max_bytes; /* message sweep, x4 steps (default 4 KiB .. 64 MiB) */
    int gemm_max;                /* largest square GEMM measured (default 2048) */
    double min_s;                /* time per measurement (default 0.05 s) */
    int verbose;                 /* rank 0 prints each measurement */
    const ax_plan_job *job;      /* optional: also this job's kernels at its shapes */
} ax_calib_opts;

void ax_calib_defaults(ax_calib_opts *o);
/* Collective over comm. */
int ax_calibrate(ax_machine *m, const ax_calib_opts *o, MPI_Comm comm);
/* The share of a job GEMM's time its first operand (x, dY) spends hot in a
 * step, with k->share ranks to a core of k->l2 bytes of L2 (not known: none). */
double ax_gemm_hot_share(const ax_gemm_point *p, const ax_cores *k);
/* Weighted least squares of t = a + b x minimising the relative error; a, b >= 0. */
void ax_fit_alpha_beta(const double *x, const double *t, int n, double *a, double *b);
#endif
