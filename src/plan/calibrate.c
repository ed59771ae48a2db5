#define _GNU_SOURCE 1
#include "plan/calibrate.h"
#include "backend/backend.h"
#include "plan/model.h"
#include "plan/shared_cores.h"
#include "comm/comm.h"
#include "comm/devices.h"
#include "measure/timing.h"
#include "util/err.h"
#include "util/stats.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The kernels' operands in the backend's memory, laid out as the model's are
 * (64-byte aligned on the CPU: misaligned, the elementwise kernels run
 * slower; docs/planner-shared-cores.md), collectives' buffers included: on a
 * device the measured collectives are the device path's (NCCL, or staged
 * through the host where ranks share a GPU: comm/devices.h). The host
 * reaches them only through the backend's copy (put). */
static float *operand(size_t n) { return ax_be()->alloc(n * sizeof(float)); }
static void operand_free(void *p) { ax_be()->free(p); }

/* dst[i] = value(i) for n floats of the backend's memory, sent in pieces from one host buffer */
static void put(float *dst, size_t n, float (*value)(size_t i)) {
    size_t piece = (size_t)1 << 16;
    float *h = ax_malloc((n < piece ? n : piece) * sizeof(float) + 1);
    for (size_t o = 0; o < n; o += piece) {
        size_t k = n - o < piece ? n - o : piece;
        for (size_t i = 0; i < k; i++) h[i] = value(o + i);
        ax_be()->copy(dst + o, h, k * sizeof(float));
    }
    free(h);
}
static float wave(size_t i) { return (float)(i % 601) / 100.0f - 3.0f; }
static float one(size_t i) { return (void)i, 1.0f; }
static float sevenths(size_t i) { return (float)(i % 7) * 0.125f; }
static float fifths(size_t i) { return (float)(i % 5) * 0.25f; }
static float hashed(size_t i) { return (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f; }
static float thirteenths(size_t i) { return (float)(i % 13) / 13.0f; }
static float small_grad(size_t i) { return (float)((int)(i % 13) - 6) * 1e-3f; }

void ax_calib_defaults(ax_calib_opts *o) {
    memset(o, 0, sizeof *o);
    o->min_bytes = 4 << 10;
    o->max_bytes = 64 << 20;
    o->gemm_max = 2048;
    o->min_s = 0.05;
    o->verbose = 1;
}

void ax_fit_alpha_beta(const double *x, const double *t, int n, double *a, double *b) {
    /* minimise sum ((a + b x_i - t_i) / t_i)^2: the normal equations with weights 1/t^2 */
    double s0 = 0, s1 = 0, s2 = 0, r0 = 0, r1 = 0;
    for (int i = 0; i < n; i++) {
        double w = 1.0 / (t[i] * t[i]);
        s0 += w;
        s1 += w * x[i];
        s2 += w * x[i] * x[i];
        r0 += w * t[i];
        r1 += w * x[i] * t[i];
    }
    double det = s0 * s2 - s1 * s1;
    *a = det != 0 ? (s2 * r0 - s1 * r1) / det : 0;
    *b = det != 0 ? (s0 * r1 - s1 * r0) / det : 0;
    if (*a < 0 || det == 0) {
        *a = 0;
        *b = s2 > 0 ? r1 / s2 : 0;
    } /* through the origin */
    if (*b < 0) {
        *b = 0;
        *a = s0 > 0 ? r0 / s0 : 0;
    }
}

typedef struct {
    ax_comm *c;
    int op;
    float *a, *b;
    size_t n;
} coll_ctx; /* n: the full buffer */

static void run_coll(void *p) {
    coll_ctx *x = p;
    size_t blk = x->n / x->c->size;
    if (x->op == AX_COLL_AR) ax_allreduce_f32(x->c, x->a, x->n);
    else if (x->op == AX_COLL_AG) ax_allgather_f32(x->c, x->a, x->b, blk);
    else ax_reduce_scatter_f32(x->c, x->a, x->b, blk);
}

static double ring_factor(int op, int p) { return (op == AX_COLL_AR ? 2.0 : 1.0) * (p - 1) / p; }

/* one layout of groups of p ranks: consecutive (stride 1) or strided (stride
 * W/p), measured unless a layout of the same placement was: across nodes
 * where any group's members are on two nodes, on one core where every
 * group's members are bound to one core (plan/shared_cores.h), else within a
 * node */
static int measure_groups(ax_machine *m, const ax_calib_opts *o, MPI_Comm w, int p, int strided, const int *node_of,
                          const ax_cores *k, int *done_place) {
    int W, r;
    MPI_Comm_size(w, &W);
    MPI_Comm_rank(w, &r);
    int color = strided ? r % (W / p) : r / p, s = strided ? W / p : 1;
    int first = strided ? color : color * p, inter = 0, one_core = ax_cores_group_on_one(k, first, s, p);
    for (int i = 0; i < p; i++) inter |= node_of[first + i * s] != node_of[first];
    MPI_Allreduce(MPI_IN_PLACE, &inter, 1, MPI_INT, MPI_MAX, w);
    MPI_Allreduce(MPI_IN_PLACE, &one_core, 1, MPI_INT, MPI_MIN, w);
    int place = inter ? AX_PLACE_INTER : one_core ? AX_PLACE_CORE : AX_PLACE_INTRA;
    if (done_place[place]) return 0;
    done_place[place] = 1;
    MPI_Comm gc;
    MPI_Comm_split(w, color, r, &gc);
    ax_comm c;
    ax_comm_from(&c, gc);
    ax_comm_use_devices(&c);
    size_t nmax = o->max_bytes / 4 + p;
    float *a = operand(nmax), *b = operand(nmax);
    ax_be()->zero(a, nmax * sizeof(float));
    ax_be()->zero(b, nmax * sizeof(float));
    for (int op = 0; op < AX_COLL_N; op++) {
        double xs[64], ts[64];
        int k = 0;
        for (size_t bytes = o->min_bytes; bytes <= o->max_bytes && k < 64; bytes *= 4) {
            size_t n = bytes / 4 / p * p;
            if (n == 0) continue;
            coll_ctx x = {&c, op, a, b, n};
            ts[k] = ax_time_all(run_coll, &x, o->min_s, w);
            xs[k] = 4.0 * n * ring_factor(op, p);
            if (o->verbose && r == 0)
                printf("  %-14s group %3d %-5s %10zu bytes  %10.1f us  %8.3f GB/s\n", ax_coll_names[op], p,
                       ax_place_names[place], 4 * n, ts[k] * 1e6, xs[k] / ts[k] / 1e9);
            k++;
        }
        /* a message never costs less than a smaller one: a smaller message timed slower was
         * descheduled (ranks outnumbering cores, other jobs), so each point takes the least time
         * of itself and every larger one, and the fit and the points stay non-decreasing */
        for (int i = k - 2; i >= 0; i--) ts[i] = fmin(ts[i], ts[i + 1]);
        if (m->nfit == AX_MACHINE_FITS) break;
        ax_coll_fit *f = &m->fit[m->nfit++];
        f->op = op;
        f->group = p;
        f->place = place;
        ax_fit_alpha_beta(xs, ts, k, &f->alpha, &f->beta);
        f->npt = k < AX_COLL_POINTS ? k : AX_COLL_POINTS;
        memcpy(f->pt_bytes, xs, f->npt * sizeof(double));
        memcpy(f->pt_s, ts, f->npt * sizeof(double));
    }
    operand_free(a);
    operand_free(b);
    ax_comm_free(&c);
    return 0;
}

typedef struct {
    float *out, *lse, *qkv, *dqkv, *dout, *scr;
    int B, T, H, hd, nthr;
} attn_ctx;

static void run_attn(void *p) {
    attn_ctx *a = p;
    const ax_backend *be = ax_be();
    be->attention_forward(a->out, a->lse, a->qkv, a->B, a->T, a->H, a->H, a->hd, AX_F32, a->scr, a->nthr);
    be->attention_backward(a->dqkv, a->dout, a->out, a->lse, a->qkv, a->B, a->T, a->H, a->H, a->hd, AX_F32, a->scr,
                           a->nthr);
}

typedef struct {
    float *y, *x, *d;
    size_t n;
} add_ctx;
static void run_add(void *p) {
    add_ctx *a = p;
    ax_be()->add(a->y, a->x, a->n);
}
static void run_gelu_fwd(void *p) {
    add_ctx *a = p;
    ax_be()->bias_gelu_forward(a->y, AX_F32, NULL, AX_F32, a->x, NULL, 1, (int)a->n);
}
static void run_gelu_bwd(void *p) {
    add_ctx *a = p;
    ax_be()->gelu_backward(a->y, AX_F32, NULL, a->x, AX_F32, a->d, 1, (int)a->n);
}

/* LayerNorm and the cross-entropy as the layers run them, in a group of one */
static void no_reduce(void *ctx, float *buf, size_t n) {
    (void)ctx;
    (void)buf;
    (void)n;
}
static const ax_reducer solo = {no_reduce, no_reduce, NULL};
typedef struct {
    float *out, *x, *w, *b, *mean, *rstd, *dx, *dw, *db, *scr;
    int32_t *tgt;
    int M, C;
} row_ctx;
static void run_ln_fwd(void *p) {
    row_ctx *a = p;
    ax_be()->layernorm_forward(a->out, AX_F32, a->mean, a->rstd, a->x, NULL, NULL, a->w, a->b, a->M, a->C, a->C, 1e-5f,
                               a->scr, &solo);
}
static void run_ln_bwd(void *p) {
    row_ctx *a = p;
    ax_be()->layernorm_backward(a->dx, a->dw, a->db, a->out, a->x, a->w, a->mean, a->rstd, a->M, a->C, a->C, a->scr,
                                &solo);
}
static void run_xent(void *p) { /* C: the local vocabulary; out: the logits, made their gradient; w: 1s */
    row_ctx *a = p;
    ax_be()->xent(a->out, a->mean, a->tgt, NULL, a->M, a->C, 0, a->C, a->w, a->out, AX_F32, a->scr, &solo);
}

static void fill(float *x, size_t n) { put(x, n, wave); }

/* Seconds per element of LayerNorm forward and backward at rows of C (M of
 * them), and of the cross-entropy with its gradient (1024 rows of 4096
 * logits). Forward x hot (the residual add just wrote it), out in turn;
 * backward dy (out's first slice) hot, the saved x and dx in turn. */
static void row_kernels(ax_machine *m, const ax_calib_opts *o, int M, int C, size_t span, MPI_Comm w) {
    int V = 4096, Mx = 1024, R = M > Mx ? M : Mx;
    size_t slice = (size_t)M * C, n = (size_t)Mx * V;
    int fsets = ax_operand_sets(span, slice * sizeof(float), 64);
    int bsets = ax_operand_sets(span, 2 * slice * sizeof(float), 64), ns = fsets > bsets ? fsets : bsets;
    row_ctx a = {.M = M, .C = C};
    a.out = operand(slice * ns);
    a.x = operand(slice * ns);
    a.dx = operand(slice * ns);
    a.w = operand(C);
    a.b = operand(C);
    a.dw = operand(C);
    a.db = operand(C);
    a.mean = operand(R);
    a.rstd = operand(R);
    a.scr = operand(3 * (size_t)R);
    a.tgt = (int32_t *)operand(R);
    fill(a.x, slice * ns);
    ax_be()->zero(a.out, slice * ns * 4);
    ax_be()->zero(a.dx, slice * ns * 4); /* every page touched before the timing */
    put(a.w, C, one);
    row_ctx *f = ax_malloc(2 * ns * sizeof *f), *b = f + ns;
    for (int s = 0; s < ns; s++) {
        f[s] = a;
        f[s].out = a.out + s * slice;
        b[s] = a;
        b[s].x = a.x + s * slice;
        b[s].dx = a.dx + s * slice;
    }
    m->ln_fwd_s = ax_time_sets(run_ln_fwd, f, sizeof *f, fsets, o->min_s, w) / (double)slice;
    m->ln_bwd_s = ax_time_sets(run_ln_bwd, b, sizeof *b, bsets, o->min_s, w) / (double)slice;
    free(f);
    /* Mx x V logits, one set of 16 MB: beyond a core's caches alone; they go to gradients and back, at the same cost */
    row_ctx x = {.M = Mx, .C = V, .w = a.w, .mean = a.mean, .scr = a.scr, .tgt = a.tgt, .out = operand(n)};
    fill(x.out, n);
    int32_t *tgt = ax_malloc(Mx * sizeof(int32_t));
    for (int i = 0; i < Mx; i++) tgt[i] = (int32_t)(i * 37 % V);
    ax_be()->copy(a.tgt, tgt, Mx * sizeof(int32_t));
    free(tgt);
    m->loss_s = ax_time_all(run_xent, &x, o->min_s, w) / (double)n;
    void *all[] = {a.out, a.x, a.dx, a.w, a.b, a.dw, a.db, a.mean, a.rstd, a.scr, a.tgt, x.out};
    for (int i = 0; i < 12; i++) operand_free(all[i]);
}

/* the optimizer's per-parameter work: AdamW as the trainer calls it (one adamw_all over
 * the buffer; here one decay range covering it, every element decayed), plus the gradient
 * norm's pass. No bf16 copy: fp32's work, the cost per parameter the planner charges. */
typedef struct {
    float *w, *g, *m, *v;
    int64_t n;
    const int64_t *ranges; /* {0, n}, the backend's memory */
    double norm2;
} adam_ctx;
static void run_adam(void *p) {
    adam_ctx *a = p;
    ax_adamw_step s = {1.0f, 0.9f, 0.95f, 0.1f, 0.05f, 1e-4f, 1e-8f, 0.9999f};
    ax_be()->adamw_all(a->w, a->g, a->m, a->v, a->n, a->ranges, 1, NULL, 0, s);
    const float *g = a->g;
    size_t n = (size_t)a->n;
    a->norm2 = ax_be()->sumsq(1, &g, &n); /* the backend's pass, as the trainer takes the norm */
}

/* The job's sizes, the median over its legal grids of W ranks: mem, the
 * planner's memory per rank (weights, gradients, AdamW state, activations,
 * workspaces); params, the parameters a rank updates; and the MLP's first FC
 * forward, the GEMM (rows, F / Y, C / X; 2F, gate and up, for SwiGLU) whose
 * weight block the Z group gathers while the FC before it runs. Zero without
 * a job or a legal grid. */
typedef struct {
    double mem, params, rows, fy, cx;
} job_sizes;

static void job_sizes_of(const ax_machine *m, const ax_calib_opts *o, int W, job_sizes *z) {
    double v[5][512];
    int n = 0;
    const ax_plan_job *j = o->job;
    for (int D = 1; j && D <= W; D++)
        for (int X = 1; D * X <= W; X++)
            for (int Y = 1; D * X * Y <= W && n < 512; Y++) {
                if (W % (D * X * Y)) continue;
                int g[4] = {D, X, Y, W / (D * X * Y)};
                ax_plan_cost c;
                ax_plan_estimate_part(j, g, m, &c, 0);
                if (!c.legal) continue;
                double F =
                    (j->cfg.n_inner ? j->cfg.n_inner : 4.0 * j->cfg.n_embd) * (j->cfg.arch == AX_ARCH_LLAMA ? 2 : 1);
                double row[5] = {c.mem_bytes, (double)c.n_local, (double)j->batch / j->grad_accum / (D * g[3]) * j->seq,
                                 F / Y, (double)j->cfg.n_embd / X};
                for (int k = 0; k < 5; k++) v[k][n] = row[k];
                n++;
            }
    memset(z, 0, sizeof *z);
    if (n)
        *z = (job_sizes){ax_median(v[0], n), ax_median(v[1], n), ax_median(v[2], n), ax_median(v[3], n),
                         ax_median(v[4], n)};
}

/* How much of a collective a GEMM hides, as the trainer overlaps them: an
 * all-gather over every rank started, a GEMM run (the backend tests the
 * collectives in flight between its bands), then waited for; against the two
 * one after the other. (t_gemm + t_coll - t_both) / min(t_gemm, t_coll),
 * clamped to [-1, 1]. At the job's sizes (its MLP's forward GEMM and the
 * gather of that FC's weight block), else each part about a millisecond.
 * Negative where overlapping costs more than not, as where ranks outnumber the
 * cores (plan/shared_cores.h): the progress tests between the GEMM's bands
 * hand the core to the rank's core-mates, and the collective, whose peers
 * wait for a turn on a core, stays in flight the whole GEMM; the planner then
 * charges that share of the overlapped collectives on top (measured:
 * docs/planner-shared-cores.md). The job's rows are cut to keep the GEMM near
 * 20 ms at the fit. */
typedef struct {
    ax_comm *c;
    float *a, *b, *y, *s, *r;
    int M, N, K;
    size_t blk;
    int what;
} ov_ctx;
static void run_ov(void *p) {
    ov_ctx *x = p;
    ax_req q;
    if (x->what != 0) ax_iallgather_f32(x->c, x->s, x->r, x->blk, &q);
    if (x->what != 1)
        ax_gemm(1.0f, ax_mat_f32(x->a, x->M, x->K), 0, ax_mat_f32(x->b, x->N, x->K), 1, 0.0f,
                ax_mat_f32(x->y, x->M, x->N));
    if (x->what != 0) ax_wait(&q);
}

static double overlap_efficiency(const ax_machine *m, const ax_calib_opts *o, const job_sizes *z, MPI_Comm w) {
    int W, r;
    MPI_Comm_size(w, &W);
    MPI_Comm_rank(w, &r);
    if (W == 1) return 1;
    int n = (int)cbrt(1e-3 * m->gemm_flops / 2);
    n = n < 64 ? 64 : n > 1024 ? 1024 : n;
    double beta = 0; /* the all-gather of W ranks just fitted */
    for (int i = 0; i < m->nfit; i++)
        if (m->fit[i].op == AX_COLL_AG && m->fit[i].group == W) beta = m->fit[i].beta;
    size_t bytes = beta > 0 ? (size_t)(1e-3 / beta) : (size_t)16 << 20;
    if (bytes > o->max_bytes) bytes = o->max_bytes;
    int M = n, N = n, K = n;
    if (z->rows > 0) {
        N = (int)z->fy;
        K = (int)z->cx;
        bytes = (size_t)N * K * 4;
        double cap = 0.02 * m->gemm_flops / (2.0 * N * K);
        M = (int)(z->rows < cap ? z->rows : cap > 64 ? cap : 64);
    }
    MPI_Comm dup;
    MPI_Comm_dup(w, &dup);
    ax_comm c;
    ax_comm_from(&c, dup);
    ax_comm_use_devices(&c);
    size_t na = (size_t)M * K, nb = (size_t)N * K, blk = bytes / 4 / W ? bytes / 4 / W : 1;
    ov_ctx x = {&c, operand(na), operand(nb), operand((size_t)M * N), operand(blk), operand(blk * W), M, N, K, blk, 0};
    put(x.a, na, sevenths);
    put(x.b, nb, fifths);
    ax_be()->zero(x.y, (size_t)M * N * 4);
    ax_be()->zero(x.s, blk * 4);
    ax_be()->zero(x.r, blk * W * 4);
    double t[3];
    for (x.what = 0; x.what < 3; x.what++) t[x.what] = ax_time_all(run_ov, &x, 2 * o->min_s, w);
    void *all[] = {x.a, x.b, x.y, x.s, x.r};
    for (int i = 0; i < 5; i++) operand_free(all[i]);
    ax_comm_free(&c);
    double e = (t[0] + t[1] - t[2]) / (t[0] < t[1] ? t[0] : t[1]);
    if (o->verbose && r == 0)
        printf(
            "overlap: gemm %d x %d x %d %.3f ms, all-gather of %zu bytes %.3f ms, overlapped %.3f ms: %.0f%% hidden\n",
            M, N, K, t[0] * 1e3, x.blk * 4 * W, t[1] * 1e3, t[2] * 1e3, 100 * e);
    return e < -1 ? -1 : e > 1 ? 1 : e;
}

/* FLOP/s of the attention kernel forward + backward at (T, hd), 7 T^2 hd FLOPs per
 * (sequence, head) as plan/model.c counts them; every rank at once. Heads enough for
 * the threads, fewer sequences where T is long. */
static double attn_rate(int T, int hd, size_t span, double min_s, MPI_Comm w) {
    attn_ctx a = {.B = 2, .T = T, .H = 4, .hd = hd, .nthr = ax_be()->threads()};
    if (a.H < a.nthr) a.H = a.nthr;
    if (7.0 * a.B * a.H * T * T * hd > 2e9) a.B = 1;
    size_t rows = (size_t)a.B * a.T, wd = (size_t)a.H * a.hd, nq = rows * 3 * wd, no = rows * wd;
    size_t nl = (size_t)a.B * a.H * a.T;
    int sets = ax_operand_sets(span, (2 * nq + 2 * no + nl) * sizeof(float), 64);
    float *qkv = operand(nq * sets), *dqkv = operand(nq * sets), *out = operand(no * sets);
    float *dout = operand(no * sets), *lse = operand(nl * sets);
    a.scr = operand(ax_be()->attention_scratch(a.T, a.hd) * a.nthr); /* per thread: hot in a step too */
    put(qkv, nq * sets, hashed);
    put(dout, no * sets, thirteenths);
    ax_be()->zero(dqkv, nq * sets * sizeof(float)); /* every page touched before the timing */
    ax_be()->zero(out, no * sets * sizeof(float));
    ax_be()->zero(lse, nl * sets * sizeof(float));
    attn_ctx c[64];
    for (int s = 0; s < sets; s++) {
        c[s] = a;
        c[s].qkv = qkv + s * nq;
        c[s].dqkv = dqkv + s * nq;
        c[s].out = out + s * no;
        c[s].dout = dout + s * no;
        c[s].lse = lse + s * nl;
    }
    double t = ax_time_sets(run_attn, c, sizeof *c, sets, min_s, w);
    operand_free(qkv);
    operand_free(dqkv);
    operand_free(out);
    operand_free(dout);
    operand_free(lse);
    operand_free(a.scr);
    return 7.0 * a.B * a.H * (double)a.T * a.T * a.hd / t;
}

/* The share of a GEMM's time its first operand (x forward, dY backward: the
 * output of the kernel just before) spends hot, from the GEMM's operand bytes
 * times the ranks sharing the core (1 on a cluster; where ranks outnumber
 * cores, core-mates run their own kernels between a rank's two, at the
 * blocking collectives that hand the core over: plan/shared_cores.h): all of
 * it within half the core's L2 (the kernel before and MPI's buffers take the
 * rest), none beyond the whole L2, linear between (the step times behind the
 * rule: docs/planner-shared-cores.md). 0 where the L2 size is not known. */
double ax_gemm_hot_share(const ax_gemm_point *p, const ax_cores *k) {
    double bytes = ((double)p->m * p->k + (double)p->n * p->k) * (p->bf16 ? 2 : 4) + 4.0 * p->m * p->n;
    double f = k->l2 > 0 ? 2 - 2 * k->share * bytes / k->l2 : 0;
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* The job's own kernels at its shapes, on the grids of W ranks (the planner's
 * candidates): every distinct GEMM (shape, layout, dtype) of their steps,
 * timed cold (every operand in turn over the pool) and, for the share of its
 * time ax_gemm_hot_share gives, with its first operand hot; and the attention at its
 * T and head size. Every rank at once, as in training. */
static void measure_job(ax_machine *m, const ax_calib_opts *o, const ax_operand_pool *pool, const ax_cores *k,
                        MPI_Comm w) {
    const ax_plan_job *j = o->job;
    int W, r;
    MPI_Comm_size(w, &W);
    MPI_Comm_rank(w, &r);
    int n0 = m->ngemm, n = n0, nhot = 0;
    for (int D = 1; D <= W; D++)
        for (int X = 1; D * X <= W; X++)
            for (int Y = 1; D * X * Y <= W; Y++) {
                if (W % (D * X * Y)) continue;
                int g[4] = {D, X, Y, W / (D * X * Y)};
                n = ax_plan_gemm_shapes(j, g, m->gemm, n, AX_MACHINE_GEMMS);
            }
    double t0 = MPI_Wtime();
    ax_operand_pool hot = *pool;
    hot.hot_first = 1;
    /* Two passes, the second in reverse order, each shape keeping its faster
     * one: a burst of other work on a shared machine slows every shape timed
     * within it, and the grids using those shapes are predicted slow; the
     * passes time a shape seconds apart (docs/planner-shared-cores.md). The
     * attention likewise. */
    int T = j->seq, hd = j->cfg.n_embd / j->cfg.n_head;
    double attn = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int q = 0; q < n - n0; q++) {
            ax_gemm_point *p = &m->gemm[pass ? n - 1 - q : n0 + q];
            ax_dtype t = p->bf16 ? AX_BF16 : AX_F32;
            double f = ax_gemm_hot_share(p, k), fl = 2.0 * p->m * p->n * p->k;
            double s = fl / ax_gemm_rate(t, p->m, p->n, p->k, p->ta, p->tb, pool, o->min_s, w);
            if (f > 0.05) { /* below, not worth a second timing */
                s = (1 - f) * s + f * fl / ax_gemm_rate(t, p->m, p->n, p->k, p->ta, p->tb, &hot, o->min_s, w);
                nhot += !pass;
            }
            if (!pass || fl / s > p->flops) p->flops = fl / s;
        }
        double a = attn_rate(T, hd, pool->bytes, o->min_s, w);
        if (a > attn) attn = a;
    }
    m->ngemm = n;
    m->attn[m->nattn++] = (ax_attn_point){T, hd, attn};
    if (o->verbose && r == 0)
        printf("the model's kernels: %d GEMM shapes of its grids of %d ranks, %d with their first operand partly hot "
               "(L2 %.1f MiB a core) (two passes, the faster kept: %.1f s)%s, attention at T %d, head %d: "
               "%.2f GFLOP/s\n",
               n - n0, W, nhot, k->l2 / 1048576.0, MPI_Wtime() - t0,
               n == AX_MACHINE_GEMMS ? " -- the file's limit: any further shapes are charged at the fit" : "", T, hd,
               m->attn[m->nattn - 1].flops / 1e9);
}

/* Square GEMMs 128 .. gemm_max, every rank at once as in training, fitted to
 * alpha + FLOPs / rate; the points are kept in the file as measured shapes. */
static void fit_gemm(ax_machine *m, const ax_calib_opts *o, const ax_operand_pool *pool, MPI_Comm w, ax_dtype t,
                     double *alpha, double *rate) {
    int r, k = 0;
    MPI_Comm_rank(w, &r);
    double fx[32], ft[32];
    for (int n = 128; n <= o->gemm_max && k < 32; n *= 2, k++) {
        double f = ax_gemm_rate(t, n, n, n, 0, 1, pool, o->min_s, w);
        if (m->ngemm < AX_MACHINE_GEMMS) m->gemm[m->ngemm++] = (ax_gemm_point){n, n, n, 0, 1, t == AX_BF16, f};
        fx[k] = 2.0 * n * n * n;
        ft[k] = fx[k] / f;
        if (o->verbose && r == 0) printf("gemm %s %5d^3: %.2f GFLOP/s per rank\n", ax_dtype_name(t), n, f / 1e9);
    }
    double inv;
    ax_fit_alpha_beta(fx, ft, k, alpha, &inv);
    *rate = inv > 0 ? 1.0 / inv : fx[k - 1] / ft[k - 1];
}

/* The span of the kernels' operand sets (measure/timing.h): the bytes a rank of
 * the job holds (job_sizes' mem); 64 MiB without a job; times the ranks that
 * share a core (k->share: 1 on a cluster; plan/shared_cores.h): in a step they
 * take turns on it at every collective that waits, each through its own
 * memory, so between two uses of a rank's operands the core's caches see all
 * of theirs; at most 1 GiB, beyond any cache. */
static size_t operand_span(const job_sizes *z, const ax_cores *k) {
    double span = (z->mem > 0 ? z->mem : 64 << 20) * k->share;
    return span > (1 << 30) ? (size_t)1 << 30 : (size_t)span;
}

/* The world's nodes: each rank's node (node_of[r], its node's first rank; the caller frees),
 * ranks per node, memory per rank, the name; and where ranks outnumber the node's cores,
 * which share them (k: plan/shared_cores.h) */
static int *measure_nodes(ax_machine *m, MPI_Comm w, ax_cores *k) {
    int W, r, local;
    MPI_Comm_size(w, &W);
    MPI_Comm_rank(w, &r);
    MPI_Comm node;
    MPI_Comm_split_type(w, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    int leader = r;
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
    int *node_of = ax_malloc(W * sizeof(int));
    MPI_Allgather(&leader, 1, MPI_INT, node_of, 1, MPI_INT, w);
    MPI_Allreduce(&local, &m->ranks_per_node, 1, MPI_INT, MPI_MAX, w);
    ax_cores_detect(k, m->ranks_per_node, w, node);
    m->cores_per_node = k->cores_per_node;
    m->core_map = k->core_map;
    MPI_Comm_free(&node);
    double mem = (double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / local;
    MPI_Allreduce(&mem, &m->mem_bytes, 1, MPI_DOUBLE, MPI_MIN, w);
    char host[64] = "this machine";
    gethostname(host, sizeof host);
    snprintf(m->name, sizeof m->name, "%s (%d ranks, %d per node, %d threads per rank)", host, W, m->ranks_per_node,
             ax_be()->threads());
    snprintf(m->source, sizeof m->source, "axonn bench comm, backend %s", ax_be()->name);
    return node_of;
}

/* Every group size that divides the world, consecutive and strided, in each placement met */
static void measure_collectives(ax_machine *m, const ax_calib_opts *o, MPI_Comm w, const int *node_of,
                                const ax_cores *k) {
    int W, r;
    MPI_Comm_size(w, &W);
    MPI_Comm_rank(w, &r);
    if (o->verbose && r == 0) printf("collectives (the slowest rank's time per call; GB/s of the ring volume):\n");
    for (int p = 2; p <= W; p++) {
        if (W % p) continue;
        int done[AX_PLACE_N] = {0};
        measure_groups(m, o, w, p, 0, node_of, k, done);
        if (p < W) measure_groups(m, o, w, p, 1, node_of, k, done);
    }
    if (W == 1) /* nothing to measure: a group of one costs nothing, but the file needs an entry */
        for (int op = 0; op < AX_COLL_N; op++) m->fit[m->nfit++] = (ax_coll_fit){op, 0, 0, 0, 0};
}

/* The GEMM fits (fp32, and bf16 where the build has it), the overlap efficiency and the job's
 * own kernels, on a pool of operands over the span; returns the span */
static size_t measure_gemms(ax_machine *m, const ax_calib_opts *o, const job_sizes *z, const ax_cores *k, MPI_Comm w) {
    int r;
    MPI_Comm_rank(w, &r);
    ax_operand_pool pool = {NULL, operand_span(z, k), 0};
    pool.base = ax_be()->alloc(pool.bytes);
    ax_be()->zero(pool.base, pool.bytes); /* every page touched once, before any timing */
    if (o->verbose && r == 0)
        printf("kernels timed on operand sets in turn over %.1f MiB per rank (%s, times %d rank%s to a core)\n",
               pool.bytes / 1048576.0,
               o->job ? "the median of the job's memory per rank over its grids" : "no job given", k->share,
               k->share > 1 ? "s" : "");
    fit_gemm(m, o, &pool, w, AX_F32, &m->gemm_alpha, &m->gemm_flops);
    int emulated;
    if (ax_be()->gemm_kernel(AX_BF16, &emulated)) /* NULL: this build has no bf16 GEMMs */
        fit_gemm(m, o, &pool, w, AX_BF16, &m->gemm_bf16_alpha, &m->gemm_bf16_flops);
    m->overlap_eff = overlap_efficiency(m, o, z, w);
    if (o->job) measure_job(m, o, &pool, k, w);
    ax_be()->free(pool.base); /* the other kernels' sets are slices of their own arrays */
    return pool.bytes;
}

/* elementwise: y += x at a residual add's size (rows x C / X; 1M elements without a job),
 * 12 bytes per element, x hot (the kernel before wrote it), y in turn; both written first
 * (an untouched x would be read from the kernel's one zero page) */
static void measure_add(ax_machine *m, const ax_calib_opts *o, int rows, int cx, size_t span, MPI_Comm w) {
    size_t nr = (size_t)rows * cx;
    int sets = ax_operand_sets(span, nr * sizeof(float), 64);
    float *y = operand(nr * sets), *x = operand(nr);
    fill(x, nr);
    ax_be()->zero(y, nr * sets * sizeof(float));
    add_ctx *ad = ax_malloc(sets * sizeof *ad);
    for (int s = 0; s < sets; s++) ad[s] = (add_ctx){y + s * nr, x, NULL, nr};
    m->mem_bw = 12.0 * nr / ax_time_sets(run_add, ad, sizeof *ad, sets, o->min_s, w);
    free(ad);
    operand_free(y);
    operand_free(x);
}

/* the MLP's activation at the job's size (rows x F / Y; 1M elements without a job), out of
 * place as the layer runs it: y = gelu(x) forward, x hot (the GEMM just wrote it), y in
 * turn; y = gelu'(x) d backward, d hot (x's last slice), the saved x and y in turn.
 * Nothing timed writes x: no values shrink call after call into subnormals, which cost
 * many times a normal number's arithmetic. */
static void measure_activation(ax_machine *m, const ax_calib_opts *o, size_t na, size_t span, MPI_Comm w) {
    int fsets = ax_operand_sets(span, na * sizeof(float), 64);
    int bsets = ax_operand_sets(span, 2 * na * sizeof(float), 64), ns = fsets > bsets ? fsets : bsets;
    float *y = operand(na * ns), *x = operand(na * (bsets + 1));
    fill(x, na * (bsets + 1));
    ax_be()->zero(y, na * ns * sizeof(float));
    add_ctx *gf = ax_malloc(2 * ns * sizeof *gf), *gb = gf + ns;
    for (int s = 0; s < ns; s++) {
        gf[s] = (add_ctx){y + s * na, x, NULL, na};
        gb[s] = (add_ctx){y + s * na, x + (s % bsets) * na, x + bsets * na, na};
    }
    m->act_fwd_s = ax_time_sets(run_gelu_fwd, gf, sizeof *gf, fsets, o->min_s, w) / na;
    m->act_bwd_s = ax_time_sets(run_gelu_bwd, gb, sizeof *gb, bsets, o->min_s, w) / na;
    free(gf);
    operand_free(y);
    operand_free(x);
}

/* AdamW over the job's parameters per rank (4M without a job; its state in the caches or
 * not, as in the step), on copies over the span */
static void measure_optimizer(ax_machine *m, const ax_calib_opts *o, const job_sizes *z, size_t span, MPI_Comm w) {
    adam_ctx ac[16];
    int64_t np = z->params > 0 ? (int64_t)z->params : 4 << 20;
    int asets = ax_operand_sets(span, 16 * (size_t)np, 16);
    float *st = operand(4 * (size_t)np * asets); /* every set's w, g, m, v */
    int64_t whole[2] = {0, np}, *ranges = ax_be()->alloc(sizeof whole);
    ax_be()->copy(ranges, whole, sizeof whole);
    for (int s = 0; s < asets; s++) {
        float *b = st + 4 * (size_t)np * s;
        ac[s] = (adam_ctx){b, b + np, b + 2 * np, b + 3 * np, np, ranges, 0};
        ax_be()->zero(b, 4 * (size_t)np * sizeof(float)); /* w, m, v zero */
        put(b + np, (size_t)np, small_grad);
    }
    m->optim_s_per_param = ax_time_sets(run_adam, ac, sizeof *ac, asets, o->min_s, w) / np;
    operand_free(st);
    operand_free(ranges);
}

static void print_summary(const ax_machine *m) {
    printf("gemm fit: %.2f GFLOP/s + %.1f us per call (bf16 %.2f + %.1f us); attention %.2f GFLOP/s; "
           "elementwise %.2f GB/s; activation %.2f + %.2f ns per element; LayerNorm %.2f + %.2f ns per "
           "element; loss %.2f ns per logit; optimizer %.2f ns per parameter; %d ranks per node, %.2f GiB "
           "per rank\n",
           m->gemm_flops / 1e9, m->gemm_alpha * 1e6, m->gemm_bf16_flops / 1e9, m->gemm_bf16_alpha * 1e6,
           m->attn_flops / 1e9, m->mem_bw / 1e9, m->act_fwd_s * 1e9, m->act_bwd_s * 1e9, m->ln_fwd_s * 1e9,
           m->ln_bwd_s * 1e9, m->loss_s * 1e9, m->optim_s_per_param * 1e9, m->ranks_per_node, m->mem_bytes / (1 << 30));
}

int ax_calibrate(ax_machine *m, const ax_calib_opts *o, MPI_Comm comm) {
    memset(m, 0, sizeof *m);
    MPI_Comm w;
    MPI_Comm_dup(comm, &w);
    int W, r;
    MPI_Comm_size(w, &W);
    MPI_Comm_rank(w, &r);
    if (ax_device_comm_ready(w)) { /* NCCL's library under the cuda backend: the same line on every rank */
        MPI_Comm_free(&w);
        return -1;
    }
    ax_cores k;
    int *node_of = measure_nodes(m, w, &k);
    measure_collectives(m, o, w, node_of, &k);
    job_sizes z;
    job_sizes_of(m, o, W, &z);
    size_t span = measure_gemms(m, o, &z, &k, w);
    m->attn_flops = attn_rate(256, 64, span, o->min_s, w); /* the kernel's rate at T 256, head size 64 */
    int rows = z.rows > 0 ? (int)z.rows : 1024, cx = z.rows > 0 ? (int)z.cx : 1024;
    measure_add(m, o, rows, cx, span, w);
    measure_activation(m, o, z.rows > 0 ? (size_t)(z.rows * z.fy) : (size_t)1 << 20, span, w);
    row_kernels(m, o, rows, z.rows > 0 ? cx : 256, span, w);
    measure_optimizer(m, o, &z, span, w);
    if (o->verbose && r == 0) print_summary(m);
    free(node_of);
    ax_cores_free(&k);
    MPI_Comm_free(&w);
    return 0;
}
