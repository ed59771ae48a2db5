/* axonn bench gemm: the layouts of a step's GEMMs, timed by the tuner. */
#include "backend/gemm_tune.h"
#include "train/bench.h"
#include "util/err.h"
#include "train/run.h"
#include <string.h>

/* the GEMMs of ax_linear_forward/backward and of the LM head (model/gpt_step.c) */
static void model_rows(const ax_run *r, ax_bench_gemm_result *res) {
    const ax_gpt *m = &r->m;
    const ax_linear *lin[] = {&m->qkv, &m->proj, &m->fc, &m->fcproj, &m->lmhead};
    static const char *names[] = {"qkv", "proj", "fc", "fcproj", "lmhead"};
    int M = r->Bl * r->o->seq, acc = r->o->grad_accum, n = 0;
    for (int i = 0; i < 5; i++) {
        int in = lin[i]->in_l, out = lin[i]->out_l, per = acc * (i < 4 ? m->cfg.n_layer : 1);
        /* dW accumulates into the gradient unless Z splits it (a block to reduce-scatter); the head's always */
        float bw = i == 4 || r->g.gz == 1 ? 1.0f : 0.0f;
        res->row[n++] = (ax_bench_gemm_row){names[i], "forward", M, out, in, 0, 1, 0.0f, per};
        res->row[n++] = (ax_bench_gemm_row){names[i], "dX", M, in, out, 0, 0, 0.0f, per};
        res->row[n++] = (ax_bench_gemm_row){names[i], "dW", out, in, M, 1, 0, bw, per};
    }
}

static void *filled(const ax_backend *be, ax_dtype t, size_t n, float *tmp) {
    void *p = be->alloc(n * ax_dtype_size(t));
    for (size_t i = 0; i < n; i++) tmp[i] = (float)(i % 7) * 0.125f - 0.375f;
    be->cast(p, t, tmp, AX_F32, n);
    return p;
}

int ax_bench_gemm(const ax_train_opts *o, bool silent, MPI_Comm comm, ax_bench_gemm_result *res) {
    ax_run r;
    int flags = (o->profile ? AX_MEASURE_PROFILE : 0) | (silent ? AX_MEASURE_SILENT : 0);
    AX_TRY(ax_run_setup_measure(&r, o, 1, flags, comm));
    const ax_backend *be = ax_be();
    ax_dtype t = r.m.dtype;
    int emulated;
    memset(res, 0, sizeof *res);
    res->ranks = r.g.size;
    res->threads = be->threads();
    res->grid[0] = r.g.gd;
    res->grid[1] = r.g.gx;
    res->grid[2] = r.g.gy;
    res->grid[3] = r.g.gz;
    res->dtype = ax_dtype_name(t);
    res->kernel = be->gemm_kernel(t, &emulated);
    model_rows(&r, res);
    size_t na = 0, nb = 0, nc = 0;
    for (int i = 0; i < AX_BENCH_GEMM_ROWS; i++) {
        const ax_bench_gemm_row *w = &res->row[i];
        if ((size_t)w->m * w->k > na) na = (size_t)w->m * w->k;
        if ((size_t)w->n * w->k > nb) nb = (size_t)w->n * w->k;
        if ((size_t)w->m * w->n > nc) nc = (size_t)w->m * w->n;
    }
    float *tmp = be->alloc((na > nb ? na : nb) * sizeof(float)), *c = be->alloc(nc * sizeof(float));
    void *pa = filled(be, t, na, tmp), *pb = filled(be, t, nb, tmp);
    for (int i = 0; i < AX_BENCH_GEMM_ROWS; i++) {
        ax_bench_gemm_row *w = &res->row[i];
        ax_mat A = w->tA ? ax_mat_of(pa, t, w->k, w->m) : ax_mat_of(pa, t, w->m, w->k);
        ax_mat B = w->tB ? ax_mat_of(pb, t, w->n, w->k) : ax_mat_of(pb, t, w->k, w->n);
        MPI_Barrier(r.g.world);
        w->chosen = ax_gemm_tune_time(be, 1.0f, A, w->tA, B, w->tB, w->beta, ax_mat_f32(c, w->m, w->n), 0, w->sec);
        res->step_stored_s += w->per_step * w->sec[AX_GT_STORED];
        res->step_tuned_s += w->per_step * w->sec[w->chosen];
    }
    be->free(tmp);
    be->free(c);
    be->free(pa);
    be->free(pb);
    ax_run_teardown(&r);
    return 0;
}
