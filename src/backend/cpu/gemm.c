/* GEMM through OpenBLAS (its OpenMP build shares our thread pool) and the
 * backend's thread count. */
#include "backend/cpu/cpu.h"
#include <cblas.h>
#include <omp.h>

static int timing_on;
static double g_seconds, g_flops;

void ax_cpu_gemm(int transA, int transB, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (M == 0 || N == 0) return;
    double t = timing_on ? omp_get_wtime() : 0;
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (timing_on && !omp_in_parallel()) { g_seconds += omp_get_wtime() - t; g_flops += 2.0 * M * N * K; }
}

/* turning timing on also starts a new count */
void ax_cpu_gemm_timing(int on) { timing_on = on; g_seconds = g_flops = 0; }
void ax_cpu_gemm_stats(double *seconds, double *flops) { *seconds = g_seconds; *flops = g_flops; }
void ax_cpu_set_threads(int n) { openblas_set_num_threads(n); omp_set_num_threads(n); }
int ax_cpu_threads(void) { return omp_get_max_threads(); }
