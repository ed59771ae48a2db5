/* axonn bench: the training run's setup and step (train/run.h), timed. */
#include "train/bench.h"
#include "backend/backend.h"
#include "measure/timing.h"
#include "train/flops.h"
#include "train/run.h"
#include "util/err.h"
#include "util/stats.h"
#include <stdlib.h>
#include <string.h>

const char *const ax_bench_group_names[AX_BG_N] = {"X", "Y", "Z", "C", "data", "data_z", "xyz"};

/* after a step, where the host has waited for it (a device's joins are read then) */
static void group_seconds(ax_grid *g, double s[AX_BG_N]) {
    s[AX_BG_X] = ax_comm_seconds(&g->X);
    s[AX_BG_Y] = ax_comm_seconds(&g->Y);
    s[AX_BG_Z] = ax_comm_seconds(&g->Z) + ax_comm_seconds(&g->Zg);
    s[AX_BG_C] = ax_comm_seconds(&g->C);
    s[AX_BG_DATA] = ax_comm_seconds(&g->data);
    s[AX_BG_DZ] = ax_comm_seconds(&g->dz);
    s[AX_BG_TP] = ax_comm_seconds(&g->tp);
}

/* The largest local GEMM of a step, by FLOPs: the FC layers' and the LM head's (rows x out_l x in_l). */
static void largest_gemm(const ax_gpt *m, int rows, int *M, int *N, int *K) {
    const ax_linear *all[] = {&m->qkv, &m->proj, &m->fc, &m->fcproj, &m->lmhead};
    double best = -1;
    for (int i = 0; i < 5; i++) {
        double f = (double)all[i]->out_l * all[i]->in_l;
        if (f > best) {
            best = f;
            *N = all[i]->out_l;
            *K = all[i]->in_l;
        }
    }
    *M = rows;
}

/* What was run: the grid, the model, the job and its FLOPs, the memory per rank. */
static void describe_run(const ax_run *r, const ax_train_opts *o, int iters, ax_bench_result *res) {
    const ax_train_opts *ro = r->o;
    const ax_grid *g = &r->g;
    memset(res, 0, sizeof *res);
    res->ranks = g->size;
    res->threads = ax_be()->threads();
    res->grid[0] = g->gd;
    res->grid[1] = g->gx;
    res->grid[2] = g->gy;
    res->grid[3] = g->gz;
    res->cp = g->gc;
    res->cfg = r->m.cfg;
    res->batch = ro->batch;
    res->seq = ro->seq;
    res->grad_accum = ro->grad_accum;
    res->recompute = o->recompute;
    res->dtype = o->dtype;
    res->overlap = o->overlap;
    res->keep_gathered = o->keep_gathered;
    res->zero = r->m.zero;
    res->cuda_graph = o->cuda_graph;
    res->peak = r->peak;
    snprintf(res->peak_from, sizeof res->peak_from, "%s", r->peak_from);
    res->gemm_tune = o->gemm_tune;
    res->iters = iters;
    res->timed = iters - 2;
    res->tokens = (double)ro->batch * ro->seq;
    res->model_flops = ax_model_flops(&r->m.cfg, ro->batch, ro->seq);
    res->hardware_flops = ax_hardware_flops(&r->m.cfg, ro->batch, ro->seq);
    res->param_bytes = 4.0 * r->m.n_local;
    res->act_bytes = r->m.act_bytes;
    res->ws_bytes = r->m.ws_bytes;
    res->opt_bytes = 2 * 4.0 * ax_gpt_opt_numel(&r->m);
}

/* Local sums over the timed iterations, indexed as below; t_all[i]: timed step i, the slowest rank's. */
enum { SUM_DATA, SUM_OPTIM, SUM_STEP, SUM_GEMM, SUM_GROUP0, SUM_N = SUM_GROUP0 + AX_BG_N };

/* Runs iters steps, the first two untimed (warm-up), every rank starting each step together. */
static void time_steps(ax_run *r, int iters, double loc[SUM_N], double *t_all) {
    const ax_train_opts *ro = r->o;
    ax_grid *g = &r->g;
    double c0[AX_BG_N], c1[AX_BG_N];
    for (int step = 0; step < iters; step++) {
        if (step == 2) {
            ax_be()->gemm_timing(1);
            group_seconds(g, c0);
        }
        MPI_Barrier(g->world);
        double t0 = MPI_Wtime();
        ax_run_load_step(r, step);
        double t1 = MPI_Wtime();
        ax_step_stats st;
        ax_train_step(&r->m, &r->opt, &r->h, step, r->seqs, r->weights, ro->grad_accum, r->Bl, ro->seq, &st,
                      r->scratch);
        double dt = MPI_Wtime() - t0, dmax = dt;
        MPI_Allreduce(MPI_IN_PLACE, &dmax, 1, MPI_DOUBLE, MPI_MAX, g->world);
        if (step < 2) continue;
        loc[SUM_DATA] += t1 - t0;
        loc[SUM_OPTIM] += st.optim_s;
        loc[SUM_STEP] += dt;
        t_all[step - 2] = dmax;
    }
    group_seconds(g, c1);
    double gflops;
    ax_be()->gemm_stats(&loc[SUM_GEMM], &gflops);
    for (int i = 0; i < AX_BG_N; i++) loc[SUM_GROUP0 + i] = c1[i] - c0[i];
    /* the norm's reduction over X x Y x Z falls inside the optimizer's window: count it once, as communication */
    loc[SUM_OPTIM] -= loc[SUM_GROUP0 + AX_BG_TP];
}

/* The step's statistics over the slowest rank's times, and each part's mean over ranks and timed steps. */
static void summarize(const double *t_all, double loc[SUM_N], MPI_Comm world, ax_bench_result *res) {
    int size;
    MPI_Comm_size(world, &size);
    double t_sum = 0, t_min = 1e300, t_max = 0;
    for (int i = 0; i < res->timed; i++) {
        t_sum += t_all[i];
        if (t_all[i] < t_min) t_min = t_all[i];
        if (t_all[i] > t_max) t_max = t_all[i];
    }
    res->step_s = t_sum / res->timed;
    res->step_min_s = t_min;
    res->step_max_s = t_max;
    MPI_Allreduce(MPI_IN_PLACE, loc, SUM_N, MPI_DOUBLE, MPI_SUM, world);
    double n = (double)res->timed * size;
    res->data_s = loc[SUM_DATA] / n;
    res->optim_s = loc[SUM_OPTIM] / n;
    res->gemm_s = loc[SUM_GEMM] / n;
    double comm_total = 0;
    for (int i = 0; i < AX_BG_N; i++) {
        res->comm_s[i] = loc[SUM_GROUP0 + i] / n;
        comm_total += res->comm_s[i];
    }
    res->compute_s = loc[SUM_STEP] / n - res->data_s - res->optim_s - comm_total;
    if (res->compute_s < 0) res->compute_s = 0;
}

int ax_bench(const ax_train_opts *o, int iters, bool silent, MPI_Comm comm, ax_bench_result *res) {
    if (iters < 3) return AX_ERR("--iters %d: expected >= 3 (the first two are warm-up)", iters);
    ax_run r;
    AX_TRY(ax_run_setup_measure(&r, o, iters, AX_MEASURE_PROFILE | (silent ? AX_MEASURE_SILENT : 0), comm));
    describe_run(&r, o, iters, res);
    double loc[SUM_N] = {0};
    double *t_all = ax_malloc(sizeof(double) * (size_t)iters); /* before the loop: no allocation between steps */
    time_steps(&r, iters, loc, t_all);
    summarize(t_all, loc, r.g.world, res);
    res->mfu = res->peak > 0 ? res->model_flops / res->step_s / res->ranks / res->peak : 0;
    /* sorts t_all: after the sums above */
    res->step_med_s = ax_median(t_all, res->timed);
    free(t_all);
    /* the ceiling: every rank at once, as the ranks share the node in the step; operands hot, the kernel's best */
    largest_gemm(&r.m, r.Bl * r.o->seq, &res->gemm_m, &res->gemm_n, &res->gemm_k);
    res->gemm_flops = ax_gemm_rate(r.m.dtype, res->gemm_m, res->gemm_n, res->gemm_k, 0, 1, NULL, 0.2, r.g.world);
    ax_run_teardown(&r);
    return 0;
}
