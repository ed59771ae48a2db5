/* The CPU backend's kernels (OpenBLAS + OpenMP); see backend/backend.h for
 * what each computes. Only backend/cpu/cpu.c, which fills the table, and the
 * backend's own tests call them by name. */
#ifndef AX_BACKEND_CPU_CPU_H
#define AX_BACKEND_CPU_CPU_H
#include "backend/backend.h"

extern const ax_backend ax_cpu_backend;

void ax_cpu_set_threads(int n);
int ax_cpu_threads(void);
/* plain fp32 sgemm (row-major), e.g. for attention's tiles inside a parallel region */
void ax_cpu_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                  int ldb, float beta, float *C, int ldc);
void ax_cpu_gemm(int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C);
const char *ax_cpu_gemm_kernel(ax_dtype t, int *emulated);
/* Which library runs GEMMs: AUTO is OpenBLAS for fp32 and oneDNN for bf16
 * where it has a native kernel (else bf16 widened for OpenBLAS); tests force
 * one to check each against a reference. A forced DNNL falls back to
 * OpenBLAS for a problem oneDNN cannot run. */
typedef enum { AX_GEMM_AUTO, AX_GEMM_BLAS, AX_GEMM_DNNL } ax_gemm_path;
void ax_cpu_gemm_force(ax_gemm_path p);
/* oneDNN (gemm_dnnl.c): -1 when oneDNN is absent or has no kernel for the problem */
int ax_dnnl_gemm(int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C);
int ax_dnnl_available(void);
const char *ax_dnnl_version(void);
const char *ax_dnnl_isa(void);
const char *ax_dnnl_bf16_kernel(void); /* NULL: no native bf16 matmul on this CPU */
void ax_cpu_cast(void *dst, ax_dtype dt, const void *src, ax_dtype st, size_t n);
void ax_cpu_transpose(ax_mat dst, ax_mat src, float beta);
void ax_cpu_gemm_timing(int on);
void ax_cpu_gemm_stats(double *seconds, double *flops);
void ax_cpu_layernorm_forward(void *out, ax_dtype ot, float *mean, float *rstd, float *x, const float *bias,
                              const float *r, const float *w, const float *b, int M, int Cl, int C, float eps,
                              float *scratch, const ax_reducer *X);
void ax_cpu_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                               const float *mean, const float *rstd, int M, int Cl, int C, float *scratch,
                               const ax_reducer *X);
void ax_cpu_rmsnorm_forward(void *out, ax_dtype ot, float *rstd, float *x, const float *bias, const float *r,
                            const float *w, int M, int Cl, int C, float eps, const ax_reducer *X);
void ax_cpu_rmsnorm_backward(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                             int M, int Cl, int C, float *scratch, const ax_reducer *X);
void ax_cpu_swiglu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *gu, int M, int F);
void ax_cpu_swiglu_backward(void *dgu, ax_dtype dt, const void *gu, ax_dtype gt, const float *dout, int M, int F);
void ax_cpu_rope(float *x, int ld, int M, int T, const int32_t *pos, int nh, int hd, const float *cs, float sign);
void ax_cpu_bias_gelu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *y, const float *bias, int M,
                              int n);
void ax_cpu_gelu_backward(void *dx, ax_dtype dt, float *db, const void *x, ax_dtype xt, const float *dout, int M,
                          int n);
void ax_cpu_add(float *y, const float *x, size_t n);
void ax_cpu_bias_add(float *y, const float *bias, int M, int n);
void ax_cpu_bias_round(float *y, void *out, ax_dtype ot, const float *bias, int M, int n);
void ax_cpu_bias_grad(float *db, const float *dy, int M, int n);
void ax_cpu_embedding_forward(float *out, const int32_t *tokens, const int32_t *pos, const float *wte, const float *wpe,
                              int M, int T, int v0, int Vl, int Cl, const ax_reducer *Y);
void ax_cpu_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                               int M, int T, int v0, int Vl, int Cl);
void ax_cpu_xent(const void *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl, int v0,
                 int V, const float *dscale, void *dgrad, ax_dtype dt, float *scratch, const ax_reducer *Y);
size_t ax_cpu_attention_scratch(int T, int hd);
void ax_cpu_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd,
                              ax_dtype dt, float *scratch, int nthr);
void ax_cpu_attention_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                               int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr);
void ax_cpu_attention_block_forward(const ax_attn_block *a, float *out, float *lse, int merge, float *scratch,
                                    int nthr);
void ax_cpu_attention_block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                     const float *out, const float *lse, float *scratch, int nthr);
void ax_cpu_attention_decode(float *out, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl,
                             int KVl, int hd, int Tmax);
void ax_cpu_adamw_all(float *w, const float *g, float *m, float *v, int64_t n, const int64_t *ranges, int nr,
                      ax_bf16 *wh, int64_t nh, ax_adamw_step s);
#endif
