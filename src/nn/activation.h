/* Elementwise ops. GELU, tanh approximation (GPT-2's "gelu_new"); SwiGLU
 * (Llama's MLP). Activations a GEMM reads, and the GEMM outputs kept for
 * pointwise work, are void pointers in the dtype given beside them (fp32, or
 * bf16 under mixed precision); arithmetic is fp32.
 *   ax_bias_gelu_forward(act, AX_BF16, pre, AX_BF16, y, bias, M, n);  // pre = y + bias, act = gelu(pre)
 *   ax_gelu_backward(d, AX_BF16, dbias, pre, AX_BF16, dact, M, n);      // d = gelu'(pre) dact, dbias += colsum */
#ifndef AX_NN_ACTIVATION_H
#define AX_NN_ACTIVATION_H
#include "backend/backend.h"
#include <stddef.h>
/* y (M, n) fp32: pre = y + bias (bias NULL: none; pre NULL: not kept), out = gelu(y + bias) */
void ax_bias_gelu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *y, const float *bias, int M,
                          int n);
/* dx = dout * gelu'(x) (overwrites dx; dx may alias dout when both fp32);
 * db += its column sums (NULL: none) */
void ax_gelu_backward(void *dx, ax_dtype dt, float *db, const void *x, ax_dtype xt, const float *dout, int M, int n);
/* SwiGLU: gu (M, 2F) fp32 rows [gate | up], out (M, F) = silu(gate) * up; pre = gu kept in pt (NULL: not kept) */
void ax_swiglu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *gu, int M, int F);
/* dgu (M, 2F), overwritten; gu in dtype gt */
void ax_swiglu_backward(void *dgu, ax_dtype dt, const void *gu, ax_dtype gt, const float *dout, int M, int F);
/* y (M, n) += bias (NULL: none), kept as out in dtype ot; y then holds out's
 * value (rounded under bf16); out may be y when fp32 */
void ax_bias_round(float *y, void *out, ax_dtype ot, const float *bias, int M, int n);
/* y += x (the residual connections) */
void ax_add_inplace(float *y, const float *x, size_t n);
#endif
