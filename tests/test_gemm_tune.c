/* GEMM layout tuning (backend/gemm_tune.h).
 *
 * Layouts: each one, forced in turn, against the untuned GEMM (the stored
 * layout through the backend) on every transpose pair, fp32 and bf16 inputs,
 * fp32 and bf16 outputs, alpha, beta 0 and 1, leading dimensions wider than
 * the rows (the padding must stay untouched), K past OpenBLAS's K-block and a C
 * large enough for the threaded transpose (run with 1 and 2 threads).
 * Tolerance, element by element: every layout forms the same fp32 products
 * (bf16 products are exact in fp32) and adds the same K + 1 terms (beta C
 * among them) in fp32, only in another order (the kernel's k-blocking, and
 * swap adds beta C after the product). Each order is within (K+1) u sum|terms|
 * of the exact sum (u = 2^-24), so two orders differ by at most twice that;
 * a bf16 output may then round to the neighbouring bf16 value: one more bf16
 * ulp, 2^-7 of the value.
 *
 * Tuning and the cache file: with tuning on, new problems are timed and
 * written to the cache; after a reset they come from the file (none timed),
 * including a layout edited into it, whose result is still right; entries of
 * another machine survive a rewrite; a truncated file and one of the wrong
 * shape are rejected with a warning (the problems are timed again) and
 * rewritten valid (well-formed entries of the file kept, malformed ones dropped). */
#include "test.h"
#include "backend/bf16.h"
#include "backend/gemm_tune.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/rng.h"
#include <jansson.h>
#include <stdint.h>
#include <unistd.h>

static ax_rng rng = {77, 1, 0};

static double elem(ax_mat m, int r, int c) {
    size_t i = (size_t)r * m.ld + c;
    return m.dtype == AX_BF16 ? ax_bf16_widen(((uint16_t *)m.data)[i]) : ((float *)m.data)[i];
}

/* rows x cols, ld = cols + pad, random values, padding NaN */
static ax_mat make(ax_dtype t, int rows, int cols, int pad) {
    int ld = cols + pad;
    ax_mat m = {ax_malloc((size_t)rows * ld * ax_dtype_size(t)), t, rows, cols, ld, (int64_t)rows * ld};
    for (size_t i = 0; i < (size_t)rows * ld; i++) {
        float v = (int)(i % ld) >= cols ? NAN : (float)ax_rng_normal(7, 3, ax_rng_next(&rng));
        if (t == AX_BF16) ((uint16_t *)m.data)[i] = ax_bf16_round(v);
        else ((float *)m.data)[i] = v;
    }
    return m;
}

static ax_mat copy(ax_mat m) {
    ax_mat c = m;
    size_t n = (size_t)m.rows * m.ld * ax_dtype_size(m.dtype);
    c.data = ax_malloc(n);
    memcpy(c.data, m.data, n);
    return c;
}

static void layout_case(int L, int tA, int tB, ax_dtype ti, ax_dtype to, float alpha, float beta, int M, int N, int K,
                        int pad) {
    ax_mat A = tA ? make(ti, K, M, pad) : make(ti, M, K, pad);
    ax_mat B = tB ? make(ti, N, K, pad) : make(ti, K, N, pad);
    ax_mat C0 = make(to, M, N, pad), C = copy(C0), R = copy(C0);
    ax_gemm_tune_force(AX_GT_STORED);
    ax_gemm(alpha, A, tA, B, tB, beta, R);
    ax_gemm_tune_force(L);
    ax_gemm(alpha, A, tA, B, tB, beta, C);
    ax_gemm_tune_force(-1);
    int bad = 0, nan_pad = 1;
    double worst = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double s = beta != 0 ? fabs(beta * elem(C0, i, j)) : 0;
            for (int k = 0; k < K; k++)
                s += fabs(alpha * (tA ? elem(A, k, i) : elem(A, i, k)) * (tB ? elem(B, j, k) : elem(B, k, j)));
            double r = elem(R, i, j), d = fabs(elem(C, i, j) - r);
            double tol = 2.0 * (K + 1) * 0x1p-24 * s + (to == AX_BF16 ? 0x1p-7 * fabs(r) : 0);
            if (!(d <= tol)) bad++;
            if (s > 0 && d / s > worst) worst = d / s;
        }
        for (int j = N; j < C.ld; j++) nan_pad &= isnan(elem(C, i, j));
    }
    CHECK(bad == 0 && nan_pad,
          "layout %s %c%c %s->%s alpha %g beta %g M %d N %d K %d pad %d: %d elements beyond "
          "the reassociation bound (worst |diff|/sum|terms| %.3g), padding untouched %d",
          ax_gemm_layout_names[L], tA ? 'T' : 'N', tB ? 'T' : 'N', ax_dtype_name(ti), ax_dtype_name(to), alpha, beta, M,
          N, K, pad, bad, worst, nan_pad);
    free(A.data);
    free(B.data);
    free(C0.data);
    free(C.data);
    free(R.data);
}

static void layouts(void) {
    /* K past a K-block; C large enough for the threaded transpose */
    int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {40, 24, 700}, {300, 260, 24}};
    for (int L = 0; L < AX_GT_N; L++)
        for (int s = 0; s < 5; s++)
            for (int t = 0; t < 4; t++)
                for (int d = 0; d < 3; d++) {
                    ax_dtype ti = d ? AX_BF16 : AX_F32, to = d == 2 ? AX_BF16 : AX_F32;
                    int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                    layout_case(L, t & 1, t >> 1, ti, to, 1.0f, 0.0f, M, N, K, 0);
                    layout_case(L, t & 1, t >> 1, ti, to, 0.5f, 1.0f, M, N, K, 3);
                }
}

/* three problems (distinct keys) through ax_gemm with tuning on */
static void three_gemms(void) {
    static ax_mat a, b, c;
    if (!a.data) {
        a = make(AX_F32, 64, 64, 0);
        b = make(AX_F32, 64, 64, 0);
        c = make(AX_F32, 64, 64, 0);
    }
    ax_mat C = ax_mat_f32(c.data, 64, 32);
    ax_gemm(1.0f, ax_mat_f32(a.data, 64, 48), 0, ax_mat_f32(b.data, 32, 48), 1, 0.0f, C);
    ax_gemm(1.0f, ax_mat_f32(a.data, 48, 64), 1, ax_mat_f32(b.data, 48, 32), 0, 0.0f, C);
    ax_gemm(1.0f, ax_mat_f32(a.data, 64, 48), 0, ax_mat_f32(b.data, 48, 32), 0, 1.0f, C);
}

static void counts_are(const char *what, int want_timed, int want_hits) {
    int timed, hits;
    ax_gemm_tune_counts(&timed, &hits);
    CHECK(timed == want_timed && hits == want_hits, "%s: %d timed, %d from the cache; expected %d and %d", what, timed,
          hits, want_timed, want_hits);
}

static json_t *entries(const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e), *a = json_object_get(j, "entries");
    CHECK(json_is_array(a), "%s: no entries array (%s)", path, j ? "wrong shape" : e.text);
    json_incref(a);
    json_decref(j);
    return a;
}

static void write_text(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, n, f);
    fclose(f);
}

static void cache(void) {
    char path[64];
    snprintf(path, sizeof path, "gemm-tune-test-%d.json", (int)getpid());
    unlink(path);
    ax_gemm_tune_set(1, path, 1);
    three_gemms();
    counts_are("a new cache", 3, 0);
    json_t *a = entries(path);
    CHECK(json_array_size(a) == 3, "%zu entries written, expected 3", json_array_size(a));
    /* edit a layout in, add another machine's entry: both must be honoured */
    json_t *e0 = json_array_get(a, 0), *other = json_deep_copy(e0);
    json_object_set_new(e0, "layout", json_string("swap"));
    json_object_set_new(other, "machine", json_string("some other machine"));
    json_array_append_new(a, other);
    json_t *doc = json_pack("{s:s, s:O}", "format", "axonn-gemm-tune-1", "entries", a);
    json_dump_file(doc, path, 0);
    json_decref(doc);
    ax_gemm_tune_reset();
    three_gemms();
    counts_are("a second run on the cache", 0, 3);
    ax_mat A = make(AX_F32, 64, 48, 0), B = make(AX_F32, 32, 48, 0), C = make(AX_F32, 64, 32, 0);
    CHECK(ax_gemm_tune_choice(ax_be(), 1.0f, A, 0, B, 1, 0.0f, C) == AX_GT_SWAP,
          "the layout edited into the cache is not used");
    free(A.data);
    free(B.data);
    free(C.data);
    /* a new problem rewrites the file: the other machine's entry stays */
    A = make(AX_F32, 9, 8, 0);
    B = make(AX_F32, 8, 7, 0);
    C = make(AX_F32, 9, 7, 0);
    ax_gemm(1.0f, A, 0, B, 0, 0.0f, C);
    json_decref(a);
    a = entries(path);
    int others = 0;
    for (size_t i = 0; i < json_array_size(a); i++)
        others += !strcmp(json_string_value(json_object_get(json_array_get(a, i), "machine")), "some other machine");
    CHECK(json_array_size(a) == 5 && others == 1, "after a rewrite: %zu entries (expected 5), %d of another machine",
          json_array_size(a), others);
    json_decref(a);
    /* truncated, then valid JSON of the wrong shape: ignored, timed again, rewritten valid */
    char *text;
    size_t n;
    ax_read_file(path, &text, &n);
    json_t *valid = json_loads(text, 0, NULL); /* good entries and one malformed: the whole file is rejected */
    json_array_append_new(json_object_get(valid, "entries"), json_pack("{s:i}", "m", 1));
    char *shape = json_dumps(valid, 0);
    json_decref(valid);
    const char *bad[] = {text, shape, "[1, 2]"};
    size_t len[] = {n / 2, strlen(bad[1]), strlen(bad[2])};
    for (int b = 0; b < 3; b++) {
        write_text(path, bad[b], len[b]);
        ax_gemm_tune_set(1, path, 1); /* says so in one line on stderr */
        three_gemms();
        counts_are(b == 0 ? "a truncated cache" : "a cache of the wrong shape", 3, 0);
        ax_gemm_tune_reset(); /* rewritten valid: read back without a warning, nothing timed */
        three_gemms();
        counts_are("the rewritten cache", 0, 3);
    }
    free(text);
    free(shape);
    free(A.data);
    free(B.data);
    free(C.data);
    ax_gemm_tune_set(0, "none", 0);
    unlink(path);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    layouts();
    cache();
    int rc = ax_test_done("gemm_tune");
    MPI_Finalize();
    return rc;
}
