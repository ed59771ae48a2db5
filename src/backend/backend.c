#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#include "backend/gemm_tune.h"
#ifdef AX_HAVE_CUDA
#include "backend/cuda/cuda_table.h"
#endif
#include "util/err.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ax_backend *const compiled[] = {
    &ax_cpu_backend,
#ifdef AX_HAVE_CUDA
    &ax_cuda_backend,
#endif
};
static const ax_backend *current = &ax_cpu_backend;

const ax_backend *ax_be(void) { return current; }
void ax_backend_install(const ax_backend *b) { current = b; }

void *ax_host_view(void *p, size_t bytes, int read) {
    if (current->host_memory) return p;
    void *h = ax_malloc(bytes ? bytes : 1);
    if (read) current->copy(h, p, bytes);
    return h;
}

void ax_host_release(void *view, void *p, size_t bytes, int write) {
    if (view == p) return;
    if (write) current->copy(p, view, bytes);
    free(view);
}

const char *ax_backend_names(void) {
#ifdef AX_HAVE_CUDA
    return "cpu, cuda";
#else
    return "cpu";
#endif
}

int ax_backend_use(const char *name, int local_rank) {
    for (size_t i = 0; i < sizeof compiled / sizeof *compiled; i++)
        if (!strcmp(compiled[i]->name, name)) {
            if (compiled[i]->open && compiled[i]->open(local_rank) != 0) return -1;
            current = compiled[i];
            return 0;
        }
    return AX_ERR("--backend %s: expected one of the compiled backends (%s)", name, ax_backend_names());
}

const char *ax_dtype_name(ax_dtype t) { return t == AX_BF16 ? "bf16" : "fp32"; }

int ax_dtype_parse(const char *s, ax_dtype *t) {
    if (!strcmp(s, "fp32")) {
        *t = AX_F32;
        return 0;
    }
    if (!strcmp(s, "bf16")) {
        *t = AX_BF16;
        return 0;
    }
    return AX_ERR("--dtype %s: expected fp32 or bf16", s);
}

static int (*progress)(void);

void ax_backend_set_progress(int (*poll)(void)) { progress = poll; }

int ax_backend_poll(void) { return progress ? progress() : 0; }

/* Row-major element offset of (r, c) of M, as a pointer of M's dtype */
static void *at(ax_mat M, int r, int c) { return (char *)M.data + ((size_t)r * M.ld + c) * ax_dtype_size(M.dtype); }

/* Below this many multiply-adds a GEMM is not cut: the tests between tiles
 * would cost more than the communication gains (docs/design.md, Choices and why).
 * Tiles are bands of C's rows starting at multiples of 96: a BLAS kernel
 * works in blocks of a few rows from the start of a call and takes the
 * remainder with other kernels, which sum in another order; bands aligned
 * to every such block size (4..48) compute each element as the whole call
 * does. Measured with OpenBLAS: any other cut, or a cut of the columns,
 * changes bits. A band of only a few rows may go to another kernel
 * altogether (measured: oneDNN 2.6's fp32 matmul on AVX-512 sums a 12-row
 * call in another order), so the last band takes the remainder: one to two
 * steps long. */
#define TILE_MIN_MACS 2e6
#define TILE_MAX      16
#define TILE_ALIGN    96

/* One GEMM as bands of C's rows, testing the collectives in flight after
 * each: MPI moves a non-blocking collective only inside MPI calls. Once
 * nothing is in flight the rest runs as one call; the bits do not depend on
 * where the cuts fall. */
static void gemm_tiled(float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C, int K) {
    int tiles = (int)fmin((double)C.rows * C.cols * K / TILE_MIN_MACS, TILE_MAX);
    int step = tiles < 2 ? C.rows : ((C.rows + tiles - 1) / tiles + TILE_ALIGN - 1) / TILE_ALIGN * TILE_ALIGN;
    for (int o = 0; o < C.rows;) {
        int n = C.rows - o < 2 * step ? C.rows - o : step;
        ax_mat a = A, c = C; /* rows o.. of C and of op(A) */
        a.data = transA ? at(A, 0, o) : at(A, o, 0);
        if (transA) a.cols = n;
        else a.rows = n;
        c.data = at(C, o, 0);
        c.rows = n;
        current->gemm(1, alpha, a, transA, B, transB, beta, c);
        o += n;
        if (!progress()) step = C.rows;
    }
}

void ax_gemm_batched(int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C) {
    int am = transA ? A.cols : A.rows, ak = transA ? A.rows : A.cols;
    int bk = transB ? B.cols : B.rows, bn = transB ? B.rows : B.cols;
    if (am != C.rows || bn != C.cols || ak != bk || A.ld < A.cols || B.ld < B.cols || C.ld < C.cols)
        ax_fatal(__FILE__, __LINE__, "gemm: op(A) %dx%d, op(B) %dx%d, C %dx%d (ld %d, %d, %d) do not agree", am, ak, bk,
                 bn, C.rows, C.cols, A.ld, B.ld, C.ld);
    if (C.rows == 0 || C.cols == 0 || batch == 0) return;
    /* cut only single-threaded GEMMs: a threaded BLAS call splits C among its
     * threads by the call's shape, so a tile's bits would differ from the
     * whole call's (measured with OpenBLAS); there each GEMM polls once.
     * Never a device's (host_memory 0): its collectives progress on their
     * own streams, and bands would only leave the GPU part idle. */
    if (progress && progress() && batch == 1 && current->host_memory && current->threads() == 1)
        gemm_tiled(alpha, A, transA, B, transB, beta, C, ak);
    else ax_gemm_tuned(current, batch, alpha, A, transA, B, transB, beta, C);
}
