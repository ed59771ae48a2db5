/* Row-major single-precision GEMM: C = alpha * op(A) * op(B) + beta * C,
 * op(A) is M x K, op(B) is K x N. The one entry point through which every
 * matrix product of the model goes (BLAS on the CPU). */
#ifndef AX_BACKEND_CPU_GEMM_H
#define AX_BACKEND_CPU_GEMM_H
void ax_gemm(int transA, int transB, int M, int N, int K, float alpha,
             const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* Seconds and FLOPs spent in ax_gemm since the last reset (for the bench). */
void ax_gemm_stats(double *seconds, double *flops);
void ax_gemm_stats_reset(void);
void ax_gemm_timing(int on);
void ax_blas_threads(int n);
#endif
