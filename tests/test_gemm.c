/* The backend's GEMM and casts against references computed here in double.
 *
 * GEMM: every combination of transposes, dtypes (fp32 or bf16 inputs; fp32 or
 * bf16 output), alpha, beta 0 and 1, leading dimensions wider than the rows
 * and strided batches, on each CPU path: OpenBLAS (bf16 widened) and oneDNN
 * (fp32 always, which checks the descriptors, strides and post-ops; bf16
 * where this CPU has a native kernel, else reported as skipped). The
 * reference multiplies the bf16 values exactly, so an fp32 result is held to
 * fp32 rounding (1e-5 relative) and a bf16 result, element by element, to
 * one rounding (2^-8 relative) plus the fp32 slack (1e-5 of the rms result:
 * where terms cancel, fp32 accumulation error is large next to the result).
 *
 * Tiling: while communication is in flight, a single-threaded ax_gemm cuts a
 * long GEMM into bands of C's rows and polls between them; each
 * layout and dtype must give the bits of the uncut
 * call (the sum over k is never split), also when the poll reports nothing
 * left halfway. With 2 threads it must not cut (and keep the bits).
 *
 * Casts: bf16 rounding against a definition independent of the bit trick
 * (the nearer of the two neighbouring bf16 values, ties to the even one),
 * plus infinities, NaN, overflow to infinity and denormals.
 *
 * Memory: the backend's blocks are zeroed and 64-byte aligned (the model
 * carves its buffers at 64-byte offsets from one: a vector load must not split
 * a cache line), and its free takes them back (ASan's run checks the pair). */
#include "test.h"
#include "backend/bf16.h"
#include "backend/cpu/cpu.h"
#include "util/err.h"
#include "util/rng.h"
#include <float.h>
#include <stdint.h>

static ax_rng rng = {2024, 1, 0};

static double elem(ax_mat m, int64_t b, int r, int c) {
    int64_t i = b * m.stride + (int64_t)r * m.ld + c;
    return m.dtype == AX_BF16 ? ax_bf16_widen(((uint16_t *)m.data)[i]) : ((float *)m.data)[i];
}

/* a batch of rows x cols matrices, ld >= cols, random values, padding NaN (must not be read) */
static ax_mat make(ax_dtype t, int batch, int rows, int cols, int pad) {
    int ld = cols + pad;
    int64_t stride = (int64_t)rows * ld + 3;
    size_t n = (size_t)(stride * batch);
    ax_mat m = {ax_malloc(n * ax_dtype_size(t) + 4), t, rows, cols, ld, stride};
    for (size_t i = 0; i < n; i++) {
        int64_t in_m = (int64_t)(i % stride);
        int pad_el = in_m >= (int64_t)rows * ld || in_m % ld >= cols;
        float v = pad_el ? NAN : (float)ax_rng_normal(7, 3, ax_rng_next(&rng));
        if (t == AX_BF16) ((uint16_t *)m.data)[i] = ax_bf16_round(v);
        else ((float *)m.data)[i] = v;
    }
    return m;
}

static int run(const char *path, int batch, int tA, int tB, ax_dtype ti, ax_dtype to, float alpha, float beta, int M,
               int N, int K, int pad) {
    ax_mat A = tA ? make(ti, batch, K, M, pad) : make(ti, batch, M, K, pad);
    ax_mat B = tB ? make(ti, batch, N, K, pad) : make(ti, batch, K, N, pad);
    ax_mat C = make(to, batch, M, N, pad);
    double *ref = ax_malloc(sizeof(double) * batch * M * N), num = 0, den = 0, worst = 0;
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < K; k++)
                    s += (tA ? elem(A, b, k, i) : elem(A, b, i, k)) * (tB ? elem(B, b, j, k) : elem(B, b, k, j));
                ref[((size_t)b * M + i) * N + j] = alpha * s + (beta != 0 ? beta * elem(C, b, i, j) : 0);
            }
    ax_gemm_batched(batch, alpha, A, tA, B, tB, beta, C);
    int nan_pad = 1;
    double rms = 0;
    for (size_t i = 0; i < (size_t)batch * M * N; i++) rms += ref[i] * ref[i] / ((double)batch * M * N);
    rms = sqrt(rms);
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < M; i++) {
            for (int j = 0; j < N; j++) {
                double r = ref[((size_t)b * M + i) * N + j], d = elem(C, b, i, j) - r;
                num += d * d;
                den += r * r;
                if (to == AX_BF16 && fabs(d) > fabs(r) * 0x1p-8 + 1e-5 * rms) worst = fmax(worst, fabs(d) / fabs(r));
            }
            for (int j = N; j < C.ld; j++) nan_pad &= isnan(elem(C, b, i, j));
        }
    double rel = sqrt(num / (den > 0 ? den : 1));
    int ok = (to == AX_F32 ? rel < 1e-5 : worst == 0) && nan_pad;
    CHECK(ok,
          "%s gemm batch %d %c%c %s->%s alpha %g beta %g M %d N %d K %d pad %d: rel diff %.3g, "
          "worst bf16 element %.3g, padding untouched %d",
          path, batch, tA ? 'T' : 'N', tB ? 'T' : 'N', ax_dtype_name(ti), ax_dtype_name(to), alpha, beta, M, N, K, pad,
          rel, worst, nan_pad);
    free(A.data);
    free(B.data);
    free(C.data);
    free(ref);
    return ok;
}

static void gemm_path(const char *path, ax_gemm_path p, int bf16) {
    ax_cpu_gemm_force(p);
    int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {64, 96, 130}};
    for (int s = 0; s < 4; s++)
        for (int t = 0; t < 4; t++)
            for (int d = 0; d < (bf16 ? 3 : 1); d++) {
                ax_dtype ti = d ? AX_BF16 : AX_F32, to = d == 2 ? AX_BF16 : AX_F32;
                int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                run(path, 1, t & 1, t >> 1, ti, to, 1.0f, 0.0f, M, N, K, 0);
                run(path, 1, t & 1, t >> 1, ti, to, 0.5f, 1.0f, M, N, K, 3);
                run(path, 3, t & 1, t >> 1, ti, to, 1.0f, 1.0f, M, N, K, 2);
            }
    ax_cpu_gemm_force(AX_GEMM_AUTO);
}

static int polls, polls_busy; /* a fake poll: busy for polls_busy calls */
static int fake_poll(void) { return ++polls <= polls_busy; }

static void tiled(const char *path, ax_gemm_path p, int threads) {
    ax_cpu_gemm_force(p);
    int was = ax_be()->threads();
    ax_be()->set_threads(threads);
    int shapes[][3] = {{517, 96, 256}, {300, 701, 128}};
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < 4; t++)
            for (int d = 0; d < 3; d++)
                for (int busy = 2; busy <= 1000; busy += 998) {
                    ax_dtype ti = d ? AX_BF16 : AX_F32, to = d == 2 ? AX_BF16 : AX_F32;
                    int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], tA = t & 1, tB = t >> 1;
                    ax_mat A = tA ? make(ti, 1, K, M, 1) : make(ti, 1, M, K, 1);
                    ax_mat B = tB ? make(ti, 1, N, K, 2) : make(ti, 1, K, N, 2);
                    ax_mat C1 = make(to, 1, M, N, 3), C2 = C1;
                    size_t bytes = (size_t)C1.stride * ax_dtype_size(to);
                    C2.data = ax_malloc(bytes + 4);
                    memcpy(C2.data, C1.data, bytes);
                    ax_backend_set_progress(NULL);
                    ax_gemm(0.5f, A, tA, B, tB, 1.0f, C1);
                    polls = 0;
                    polls_busy = busy;
                    ax_backend_set_progress(fake_poll);
                    ax_gemm(0.5f, A, tA, B, tB, 1.0f, C2);
                    ax_backend_set_progress(NULL);
                    int cut = threads == 1 ? polls >= 3 : polls == 1; /* 1 before, then one per tile */
                    CHECK(!memcmp(C1.data, C2.data, bytes) && cut,
                          "%s tiled gemm %c%c %s->%s M %d N %d K %d busy %d: "
                          "%s (%d polls)",
                          path, tA ? 'T' : 'N', tB ? 'T' : 'N', ax_dtype_name(ti), ax_dtype_name(to), M, N, K, busy,
                          cut            ? "bits differ from one call"
                          : threads == 1 ? "not cut into tiles"
                                         : "cut with 2 threads",
                          polls);
                    free(A.data);
                    free(B.data);
                    free(C1.data);
                    free(C2.data);
                }
    ax_be()->set_threads(was);
    ax_cpu_gemm_force(AX_GEMM_AUTO);
}

/* the nearer bf16 neighbour of x, ties to the even mantissa, from doubles */
static uint16_t round_ref(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1); /* truncation and the next value away from 0 */
    double dl = fabs((double)x - ax_bf16_widen(lo)), dh = fabs((double)ax_bf16_widen(hi) - x);
    if ((u & 0xffff) == 0) return lo;
    if (dl < dh) return lo;
    if (dh < dl) return hi;
    return (lo & 1) ? hi : lo;
}

static void casts(void) {
    enum { N = 200000 };
    float *x = ax_malloc(N * sizeof(float)), *back = ax_malloc(N * sizeof(float));
    uint16_t *h = ax_malloc(N * 2);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)ax_rng_next(&rng);
        if (i % 4 == 0) u = (u & 0xffff0000u) | 0x8000u; /* exact ties */
        memcpy(&x[i], &u, 4);
        if (!isfinite(x[i]) || fabsf(x[i]) > 3e38f) x[i] = (float)i; /* overflow and NaN apart below */
    }
    ax_cpu_cast(h, AX_BF16, x, AX_F32, N);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += h[i] != round_ref(x[i]);
    CHECK(bad == 0, "cast fp32->bf16: %d of %d differ from the nearest-even definition", bad, N);
    ax_cpu_cast(back, AX_F32, h, AX_BF16, N);
    bad = 0;
    for (int i = 0; i < N; i++) /* half an ulp: relative, or absolute for denormals */
        bad += back[i] != ax_bf16_widen(h[i]) || fabsf(back[i] - x[i]) > fmaxf(fabsf(x[i]) * 0x1p-8f, 0x1p-134f);
    CHECK(bad == 0, "cast bf16->fp32: %d of %d wrong or further than half a bf16 ulp", bad, N);
    float sp[] = {INFINITY, -INFINITY, NAN, FLT_MAX, 1e-40f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -0.0f};
    uint16_t want[] = {0x7f80, 0xff80, 0, 0x7f80, 0, 0x3f80, 0x3f82, 0x8000};
    uint16_t got[8];
    ax_cpu_cast(got, AX_BF16, sp, AX_F32, 8);
    CHECK(isnan(ax_bf16_widen(got[2])), "NaN rounds to %#x, not a NaN", got[2]);
    want[4] = round_ref(1e-40f);
    for (int i = 0; i < 8; i++)
        if (i != 2) CHECK(got[i] == want[i], "cast of %g: %#x, expected %#x", sp[i], got[i], want[i]);
    free(x);
    free(back);
    free(h);
}

static void memory(void) {
    const ax_backend *be = ax_be();
    size_t sizes[] = {1, 3, 64, 4095, 4096, (1 << 20) + 7};
    for (int i = 0; i < 6; i++) {
        unsigned char *p[3];
        for (int j = 0; j < 3; j++) { /* several live at once: malloc's blocks land at differing alignments */
            p[j] = be->alloc(sizes[i]);
            size_t nz = 0;
            for (size_t b = 0; b < sizes[i]; b++) nz += p[j][b] != 0;
            CHECK((uintptr_t)p[j] % 64 == 0 && nz == 0, "alloc(%zu): address %% 64 = %u, %zu nonzero bytes", sizes[i],
                  (unsigned)((uintptr_t)p[j] % 64), nz);
            memset(p[j], 0xff, sizes[i]);
        }
        for (int j = 0; j < 3; j++) be->free(p[j]);
    }
    be->free(NULL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    memory();
    casts();
    gemm_path("OpenBLAS", AX_GEMM_BLAS, 1);
    tiled("OpenBLAS", AX_GEMM_BLAS, 1);
    tiled("OpenBLAS", AX_GEMM_BLAS, 2);
    int emulated;
    const char *k = ax_cpu_gemm_kernel(AX_BF16, &emulated);
    if (ax_dnnl_available()) {
        gemm_path("oneDNN", AX_GEMM_DNNL, ax_dnnl_bf16_kernel() != NULL);
        if (ax_dnnl_bf16_kernel()) tiled("oneDNN", AX_GEMM_DNNL, 1);
        printf("gemm: oneDNN %s checked in fp32%s\n", ax_dnnl_version(),
               ax_dnnl_bf16_kernel() ? " and bf16" : "; its bf16 matmul SKIPPED (none for this CPU)");
    } else printf("gemm: oneDNN SKIPPED (not in this build)\n");
    printf("gemm: bf16 kernels here: %s\n", k ? k : "none");
    int rc = ax_test_done("gemm");
    MPI_Finalize();
    return rc;
}
