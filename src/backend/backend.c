#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#ifdef AX_HAVE_CUDA
#include "backend/cuda/cuda_table.h"
#endif
#include "util/err.h"
#include <string.h>

static const ax_backend *const compiled[] = {
    &ax_cpu_backend,
#ifdef AX_HAVE_CUDA
    &ax_cuda_backend,
#endif
};
static const ax_backend *current = &ax_cpu_backend;

const ax_backend *ax_be(void) { return current; }

const char *ax_backend_names(void) {
#ifdef AX_HAVE_CUDA
    return "cpu, cuda";
#else
    return "cpu";
#endif
}

int ax_backend_use(const char *name) {
    for (size_t i = 0; i < sizeof compiled / sizeof *compiled; i++)
        if (!strcmp(compiled[i]->name, name)) {
            if (compiled[i]->open && compiled[i]->open() != 0) return -1;
            current = compiled[i];
            return 0;
        }
    return AX_ERR("--backend %s: expected one of the compiled backends (%s)", name, ax_backend_names());
}

const char *ax_dtype_name(ax_dtype t) { return t == AX_BF16 ? "bf16" : "fp32"; }

int ax_dtype_parse(const char *s, ax_dtype *t) {
    if (!strcmp(s, "fp32")) { *t = AX_F32; return 0; }
    if (!strcmp(s, "bf16")) { *t = AX_BF16; return 0; }
    return AX_ERR("--dtype %s: expected fp32 or bf16", s);
}

void ax_gemm_batched(int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C) {
    int am = transA ? A.cols : A.rows, ak = transA ? A.rows : A.cols;
    int bk = transB ? B.cols : B.rows, bn = transB ? B.rows : B.cols;
    if (am != C.rows || bn != C.cols || ak != bk || A.ld < A.cols || B.ld < B.cols || C.ld < C.cols)
        ax_fatal(__FILE__, __LINE__, "gemm: op(A) %dx%d, op(B) %dx%d, C %dx%d (ld %d, %d, %d) do not agree",
                 am, ak, bk, bn, C.rows, C.cols, A.ld, B.ld, C.ld);
    if (C.rows == 0 || C.cols == 0 || batch == 0) return;
    current->gemm(batch, alpha, A, transA, B, transB, beta, C);
}
