#include "backend/gemm_tune.h"
#include "backend/gemm_tune_cache.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const ax_gemm_layout_names[AX_GT_N] = {"stored", "tA", "tB", "tAB", "swap"};

/* a stored layout must lose by this much before another replaces it: the
 * timings are noisy, and the stored one needs no workspace */
#define MARGIN 0.05

static struct {
    int on, warn, loaded, forced, timed, hits;
    char cache[4096];
    ax_gt_entry *e;
    int n, cap;
} st = {.forced = -1};

/* Workspaces of the copies and of swap's transposed result, grown on first
 * use: once the layouts are chosen, a training step allocates nothing. */
typedef struct {
    void *p;
    size_t bytes;
    const ax_backend *be;
} ws;
static ws ws_a, ws_b, ws_t, ws_save;

static void *ws_get(ws *w, const ax_backend *be, size_t bytes) {
    if (bytes > w->bytes || be != w->be) {
        if (w->p) w->be->free(w->p);
        w->p = be->alloc(bytes);
        w->bytes = bytes;
        w->be = be;
    }
    return w->p;
}

static void ws_release(ws *w) {
    if (w->p) w->be->free(w->p);
    memset(w, 0, sizeof *w);
}

int ax_gemm_tune_parse(const char *s, int *on) {
    if (!strcmp(s, "off")) {
        *on = 0;
        return 0;
    }
    if (!strcmp(s, "on")) {
        *on = 1;
        return 0;
    }
    return AX_ERR("--gemm-tune %s: expected off or on", s);
}

void ax_gemm_tune_set(int on, const char *cache, int warn) {
    const char *env = getenv("AXONN_GEMM_TUNE_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (!cache) cache = env && *env ? env : NULL;
    if (cache && !strcmp(cache, "none")) st.cache[0] = 0;
    else if (cache) snprintf(st.cache, sizeof st.cache, "%s", cache);
    else if (xdg && *xdg) snprintf(st.cache, sizeof st.cache, "%s/axonn/gemm-tune.json", xdg);
    else if (home && *home) snprintf(st.cache, sizeof st.cache, "%s/.cache/axonn/gemm-tune.json", home);
    else st.cache[0] = 0;
    st.on = on;
    st.warn = warn;
    ax_gemm_tune_reset();
}

const char *ax_gemm_tune_cache_path(void) { return st.cache; }
void ax_gemm_tune_force(int layout) { st.forced = layout; }
void ax_gemm_tune_reset(void) { st.n = st.loaded = st.timed = st.hits = 0; }
void ax_gemm_tune_counts(int *timed, int *from_cache) {
    *timed = st.timed;
    *from_cache = st.hits;
}

static void warn(const char *what) {
    if (st.warn) fprintf(stderr, "axonn: warning: gemm-tune cache %s; %s\n", ax_err_msg(), what);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* m transposed into w (dense, m's dtype) */
static ax_mat transposed(const ax_backend *be, ws *w, ax_mat m) {
    ax_mat t = ax_mat_of(ws_get(w, be, (size_t)m.rows * m.cols * ax_dtype_size(m.dtype)), m.dtype, m.cols, m.rows);
    be->transpose(t, m, 0.0f);
    return t;
}

static void run_layout(const ax_backend *be, int L, float alpha, ax_mat A, int tA, ax_mat B, int tB, float beta,
                       ax_mat C) {
    if (L == AX_GT_SWAP) { /* fp32 T, so a bf16 C is rounded once, as the stored layout rounds it */
        ax_mat T = ax_mat_f32(ws_get(&ws_t, be, (size_t)C.rows * C.cols * sizeof(float)), C.cols, C.rows);
        be->gemm(1, alpha, B, !tB, A, !tA, 0.0f, T);
        be->transpose(C, T, beta);
        return;
    }
    if (L == AX_GT_TA || L == AX_GT_TAB) {
        A = transposed(be, &ws_a, A);
        tA = !tA;
    }
    if (L == AX_GT_TB || L == AX_GT_TAB) {
        B = transposed(be, &ws_b, B);
        tB = !tB;
    }
    be->gemm(1, alpha, A, tA, B, tB, beta, C);
}

int ax_gemm_tune_time(const ax_backend *be, float alpha, ax_mat A, int tA, ax_mat B, int tB, float beta, ax_mat C,
                      int rounds, double sec[AX_GT_N]) {
    int nl = be->transpose ? AX_GT_N : 1;
    size_t span = (size_t)(C.rows - 1) * C.ld + C.cols; /* C's elements, padding between rows included */
    void *saved = beta != 0.0f ? ws_get(&ws_save, be, span * ax_dtype_size(C.dtype)) : NULL;
    if (saved) be->cast(saved, C.dtype, C.data, C.dtype, span);
    for (int L = 0; L < AX_GT_N; L++) sec[L] = L < nl ? 1e300 : -1;
    for (int r = 0; r <= (rounds ? rounds : 3); r++) /* round 0 warms up: pages, buffers, packing */
        for (int L = 0; L < nl; L++) {
            if (saved) be->cast(C.data, C.dtype, saved, C.dtype, span);
            double t0 = now();
            run_layout(be, L, alpha, A, tA, B, tB, beta, C);
            double dt = now() - t0;
            /* the best of many short runs resists other processes taking a core now and then */
            if (r == 0 && L == AX_GT_STORED && !rounds) rounds = dt > 0.25 ? 1 : dt * 20 > 0.03 ? 3 : 20;
            if (r > 0 && dt < sec[L]) sec[L] = dt;
        }
    if (saved) be->cast(C.data, C.dtype, saved, C.dtype, span);
    int best = AX_GT_STORED;
    for (int L = 1; L < nl; L++)
        if (sec[L] < sec[best] && sec[L] < sec[AX_GT_STORED] * (1 - MARGIN)) best = L;
    return best;
}

int ax_gemm_tune_choice(const ax_backend *be, float alpha, ax_mat A, int tA, ax_mat B, int tB, float beta, ax_mat C) {
    ax_gt_key k;
    memset(&k, 0, sizeof k); /* keys are compared bytewise */
    k.m = C.rows;
    k.n = C.cols;
    k.k = tA ? A.rows : A.cols;
    k.tA = tA;
    k.tB = tB;
    k.threads = be->threads();
    k.ta = A.dtype;
    k.tb = B.dtype;
    k.tc = C.dtype;
    if (!st.loaded) {
        st.loaded = 1;
        if (st.cache[0] && ax_gt_cache_load(st.cache, be, &st.e, &st.n, &st.cap)) {
            warn("ignored, tuning again");
            st.n = 0;
        }
    }
    for (int i = 0; i < st.n; i++)
        if (!memcmp(&st.e[i].k, &k, sizeof k)) {
            if (st.e[i].from_file) {
                st.e[i].from_file = 0;
                st.hits++;
            }
            return st.e[i].layout;
        }
    ax_gt_entry *e = ax_gt_push(&st.e, &st.n, &st.cap);
    e->k = k;
    e->from_file = 0;
    st.timed++;
    e->layout = ax_gemm_tune_time(be, alpha, A, tA, B, tB, beta, C, 0, e->sec);
    /* the other layouts' workspaces are not needed again; the chosen one's regrows at its next use */
    ws_release(&ws_a);
    ws_release(&ws_b);
    ws_release(&ws_t);
    ws_release(&ws_save);
    if (st.cache[0] && ax_gt_cache_save(st.cache, be, st.e, st.n)) {
        warn("not written");
        st.cache[0] = 0; /* said once */
    }
    return e->layout;
}

void ax_gemm_tuned(const ax_backend *be, int batch, float alpha, ax_mat A, int tA, ax_mat B, int tB, float beta,
                   ax_mat C) {
    int L = AX_GT_STORED;
    if (batch == 1 && be->transpose) { /* no model GEMM is batched: a batch runs as stored */
        if (st.forced >= 0) L = st.forced;
        else if (st.on) L = ax_gemm_tune_choice(be, alpha, A, tA, B, tB, beta, C);
    }
    if (L == AX_GT_STORED) be->gemm(batch, alpha, A, tA, B, tB, beta, C);
    else run_layout(be, L, alpha, A, tA, B, tB, beta, C);
}
