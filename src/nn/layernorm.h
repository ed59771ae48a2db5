/* Exact LayerNorm and RMSNorm over features split across the X group (docs/algorithm.md
 * §3): the row statistics are all-reduced over X (LayerNorm: two passes,
 * mean then centred squares), so any Gx gives the serial result.
 *   x, out (M, Cl); w, b (Cl); mean, rstd (M); C = Cl * Gx. out is in dtype ot
 * (a GEMM's input: bf16 under mixed precision), x and statistics fp32. The
 * residual add before a norm is fused into it: given bias and/or res (else
 * NULL), x = (x + bias) + res first, stored back in x (the residual stream).
 *   ax_layernorm_forward(X, ln2, AX_BF16, mean, rstd, res2, proj_bias, h, w, b, M, Cl, C, eps, scratch); */
#ifndef AX_NN_LAYERNORM_H
#define AX_NN_LAYERNORM_H
#include "comm/comm.h"

void ax_layernorm_forward(ax_comm *X, void *out, ax_dtype ot, float *mean, float *rstd, float *x, const float *bias,
                          const float *res, const float *w, const float *b, int M, int Cl, int C, float eps,
                          float *scratch);
/* dx (+=), dw (+=), db (+=); scratch holds 2*M floats */
void ax_layernorm_backward(ax_comm *X, float *dx, float *dw, float *db, const float *dout, const float *x,
                           const float *w, const float *mean, const float *rstd, int M, int Cl, int C, float *scratch);
/* RMSNorm (Llama): out = x / sqrt(mean(x^2) + eps) * w; no mean, no bias */
void ax_rmsnorm_forward(ax_comm *X, void *out, ax_dtype ot, float *rstd, float *x, const float *bias, const float *res,
                        const float *w, int M, int Cl, int C, float eps);
/* dx (+=), dw (+=); scratch holds M floats */
void ax_rmsnorm_backward(ax_comm *X, float *dx, float *dw, const float *dout, const float *x, const float *w,
                         const float *rstd, int M, int Cl, int C, float *scratch);
#endif
