/* Kernels timed every rank at once, on operand sets in turn (measure/timing.h). */
#include "measure/timing.h"
#include "util/err.h"
#include "util/stats.h"
#include <stdlib.h>

double ax_time_all(ax_op_fn f, void *ctx, double min_s, MPI_Comm w) {
    f(ctx); /* warm-up: pages, BLAS buffers, a kernel's first call */
    double t, trial[5];
    int reps = 1;
    for (int k = -1; k < 5; k++) { /* k = -1: the pilot */
        MPI_Barrier(w);
        t = MPI_Wtime();
        for (int i = 0; i < reps; i++) f(ctx);
        ax_backend_sync(); /* a device only queued them */
        MPI_Barrier(w);
        t = (MPI_Wtime() - t) / reps;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, w);
        if (k < 0) {
            reps = t > 0 ? (int)(min_s / 5 / t) : 1000;
            reps = reps < 1 ? 1 : reps > 1000 ? 1000 : reps;
            continue;
        }
        trial[k] = t;
    }
    return ax_median(trial, 5);
}

int ax_operand_sets(size_t span, size_t set_bytes, int max) {
    size_t n = set_bytes ? span / set_bytes : 1;
    return n < 1 ? 1 : n > (size_t)max ? max : (int)n;
}

typedef struct {
    ax_op_fn f;
    char *ctxs;
    size_t size;
    int n, i;
} sets_ctx;
static void run_sets(void *p) {
    sets_ctx *s = p;
    s->f(s->ctxs + (size_t)s->i * s->size);
    s->i = (s->i + 1) % s->n;
}

double ax_time_sets(ax_op_fn f, void *ctxs, size_t ctx_size, int nsets, double min_s, MPI_Comm w) {
    sets_ctx s = {f, ctxs, ctx_size, nsets, 0};
    return ax_time_all(run_sets, &s, min_s, w);
}

typedef struct {
    ax_mat A, B, C;
    int ta, tb;
} gemm_ctx;
static void run_gemm(void *p) {
    gemm_ctx *g = p;
    ax_gemm(1.0f, g->A, g->ta, g->B, g->tb, 0.0f, g->C);
}

static size_t up64(size_t b) { return (b + 63) / 64 * 64; }

double ax_gemm_rate(ax_dtype t, int m, int n, int k, int ta, int tb, const ax_operand_pool *pool, double min_s,
                    MPI_Comm w) {
    const ax_backend *be = ax_be();
    size_t na = (size_t)m * k, nb = (size_t)n * k, nc = (size_t)m * n, ws = ax_dtype_size(t);
    size_t sa = up64(na * ws), sb = up64(nb * ws), sc = up64(nc * sizeof(float));
    int hot = pool && pool->hot_first;
    size_t set = (hot ? 0 : sa) + sb + sc; /* a hot first operand: one copy beside the sets */
    int sets = pool ? ax_operand_sets(pool->bytes, set, 64) : 1;
    char *mem = sets > 1 ? pool->base : be->alloc(set); /* one set: its own, hot or beyond the pool */
    char *a1 = hot ? be->alloc(sa) : NULL;
    float *a32 = be->alloc(na * sizeof(float)), *b32 = be->alloc(nb * sizeof(float));
    float *h = ax_malloc((na > nb ? na : nb) * sizeof(float)); /* filled here, sent to the backend's memory */
    for (size_t i = 0; i < na; i++) h[i] = (float)(i % 7) * 0.125f;
    be->copy(a32, h, na * sizeof(float));
    for (size_t i = 0; i < nb; i++) h[i] = (float)(i % 5) * 0.25f;
    be->copy(b32, h, nb * sizeof(float));
    free(h);
    if (hot) be->cast(a1, t, a32, AX_F32, na);
    gemm_ctx *g = ax_malloc(sets * sizeof *g);
    for (int s = 0; s < sets; s++) {
        char *as = hot ? a1 : mem + s * set, *bs = mem + s * set + (hot ? 0 : sa);
        if (!hot) be->cast(as, t, a32, AX_F32, na);
        be->cast(bs, t, b32, AX_F32, nb);
        g[s] = (gemm_ctx){ta ? ax_mat_of(as, t, k, m) : ax_mat_of(as, t, m, k),
                          tb ? ax_mat_of(bs, t, n, k) : ax_mat_of(bs, t, k, n), ax_mat_f32((float *)(bs + sb), m, n),
                          ta, tb};
    }
    double sec = ax_time_sets(run_gemm, g, sizeof *g, sets, min_s, w);
    be->free(a32);
    be->free(b32);
    if (sets == 1) be->free(mem);
    if (hot) be->free(a1);
    free(g);
    return 2.0 * m * n * k / sec;
}
