/* Elementwise ops. GELU, tanh approximation (GPT-2's "gelu_new"), elementwise on n values. */
#ifndef AX_NN_ACTIVATION_H
#define AX_NN_ACTIVATION_H
#include <stddef.h>
void ax_gelu_forward(float *out, const float *x, size_t n);
/* dx = dout * gelu'(x) (overwrites dx; dx may alias dout) */
void ax_gelu_backward(float *dx, const float *x, const float *dout, size_t n);
/* SwiGLU (Llama's MLP): gu (M, 2F) rows [gate | up], out (M, F) = silu(gate) * up */
void ax_swiglu_forward(float *out, const float *gu, int M, int F);
/* dgu (M, 2F), overwritten */
void ax_swiglu_backward(float *dgu, const float *gu, const float *dout, int M, int F);
/* y += x (the residual connections) */
void ax_add_inplace(float *y, const float *x, size_t n);
#endif
