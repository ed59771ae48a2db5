/* GEMM on the CPU: fp32 through OpenBLAS (its OpenMP build shares our thread
 * pool); bf16 inputs through oneDNN's matmul where this CPU has a bf16 kernel
 * (AVX512_BF16, AMX), and otherwise emulated: the bf16 operands are widened to
 * fp32 (exactly) and multiplied by sgemm, which gives the same products and
 * fp32 accumulation a bf16 unit gives, at fp32 speed. */
#include "backend/bf16.h"
#include "backend/cpu/cpu.h"
#include "util/err.h"
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

void ax_cpu_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                  int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, M, N, K, alpha,
                A, lda, B, ldb, beta, C, ldc);
}

static int timing_on;
static double g_seconds, g_flops;
static ax_gemm_path forced = AX_GEMM_AUTO;

void ax_cpu_gemm_force(ax_gemm_path p) { forced = p; }

/* Grown on first use to the largest operand seen, then reused: the steady
 * state of a training step allocates nothing. */
typedef struct {
    float *p;
    size_t n;
} scratch;
static scratch sa, sb, sc;

static float *scratch_get(scratch *s, size_t n) {
    if (n > s->n) {
        free(s->p);
        s->p = ax_malloc(n * sizeof(float));
        s->n = n;
    }
    return s->p;
}

/* the rows x cols matrix m as dense fp32 (m itself when it is fp32) */
static const float *as_f32(ax_mat m, int64_t i, scratch *s, int *ld) {
    if (m.dtype == AX_F32) {
        *ld = m.ld;
        return (const float *)m.data + i * m.stride;
    }
    const uint16_t *src = (const uint16_t *)m.data + i * m.stride;
    float *d = scratch_get(s, (size_t)m.rows * m.cols);
#pragma omp parallel for schedule(static) if ((int64_t)m.rows * m.cols > 65536)
    for (int r = 0; r < m.rows; r++)
        for (int c = 0; c < m.cols; c++) d[(size_t)r * m.cols + c] = ax_bf16_widen(src[(size_t)r * m.ld + c]);
    *ld = m.cols;
    return d;
}

static void sgemm_path(int batch, float alpha, ax_mat A, int tA, ax_mat B, int tB, float beta, ax_mat C) {
    int K = tA ? A.rows : A.cols;
    for (int64_t i = 0; i < batch; i++) {
        int lda, ldb, ldc = C.ld;
        const float *a = as_f32(A, i, &sa, &lda), *b = as_f32(B, i, &sb, &ldb);
        float *c = (float *)C.data + i * C.stride;
        if (C.dtype == AX_BF16) { /* fp32 result, rounded once */
            c = scratch_get(&sc, (size_t)C.rows * C.cols);
            ldc = C.cols;
            const uint16_t *h = (const uint16_t *)C.data + i * C.stride;
            for (int r = 0; beta != 0.0f && r < C.rows; r++)
                for (int j = 0; j < C.cols; j++) c[(size_t)r * ldc + j] = ax_bf16_widen(h[(size_t)r * C.ld + j]);
        }
        ax_cpu_sgemm(tA, tB, C.rows, C.cols, K, alpha, a, lda, b, ldb, beta, c, ldc);
        if (C.dtype == AX_BF16) {
            uint16_t *h = (uint16_t *)C.data + i * C.stride;
            for (int r = 0; r < C.rows; r++)
                for (int j = 0; j < C.cols; j++) h[(size_t)r * C.ld + j] = ax_bf16_round(c[(size_t)r * ldc + j]);
        }
    }
}

static int native_bf16(void) {
    static int known = -1;
    if (known < 0) known = ax_dnnl_bf16_kernel() != NULL;
    return known;
}

void ax_cpu_gemm(int batch, float alpha, ax_mat A, int tA, ax_mat B, int tB, float beta, ax_mat C) {
    double t = timing_on ? omp_get_wtime() : 0;
    int bf16 = A.dtype == AX_BF16 || B.dtype == AX_BF16 || C.dtype == AX_BF16;
    ax_gemm_path p = forced;
    if (p == AX_GEMM_AUTO) p = bf16 && native_bf16() ? AX_GEMM_DNNL : AX_GEMM_BLAS;
    if (p != AX_GEMM_DNNL || ax_dnnl_gemm(batch, alpha, A, tA, B, tB, beta, C) != 0)
        sgemm_path(batch, alpha, A, tA, B, tB, beta, C);
    if (timing_on && !omp_in_parallel()) {
        g_seconds += omp_get_wtime() - t;
        g_flops += 2.0 * batch * C.rows * C.cols * (tA ? A.rows : A.cols);
    }
}

const char *ax_cpu_gemm_kernel(ax_dtype t, int *emulated) {
    static char f32[96], bf16[192];
    *emulated = 0;
    char version[32] = ""; /* the config string starts "OpenBLAS 0.3.21 ..." */
    sscanf(openblas_get_config(), "OpenBLAS %31s", version);
    snprintf(f32, sizeof f32, "OpenBLAS %s %s sgemm", version, openblas_get_corename());
    if (t == AX_F32) return f32;
    if (!ax_dnnl_available()) return NULL;
    const char *k = ax_dnnl_bf16_kernel();
    if (k) snprintf(bf16, sizeof bf16, "oneDNN %s bf16 matmul (%s)", ax_dnnl_version(), k);
    else
        snprintf(bf16, sizeof bf16,
                 "bf16 emulated: oneDNN %s has no bf16 matmul for this CPU (%s), "
                 "inputs widened to fp32 for %s",
                 ax_dnnl_version(), ax_dnnl_isa(), f32);
    *emulated = !k;
    return bf16;
}

/* turning timing on also starts a new count */
void ax_cpu_gemm_timing(int on) {
    timing_on = on;
    g_seconds = g_flops = 0;
}
void ax_cpu_gemm_stats(double *seconds, double *flops) {
    *seconds = g_seconds;
    *flops = g_flops;
}
void ax_cpu_set_threads(int n) {
    openblas_set_num_threads(n);
    omp_set_num_threads(n);
}
int ax_cpu_threads(void) { return omp_get_max_threads(); }
