/* Elementwise ops. GELU, tanh approximation (GPT-2's "gelu_new"), elementwise on n values. */
#ifndef AX_NN_ACTIVATION_H
#define AX_NN_ACTIVATION_H
#include <stddef.h>
void ax_gelu_forward(float *out, const float *x, size_t n);
/* dx = dout * gelu'(x) (overwrites dx; dx may alias dout) */
void ax_gelu_backward(float *dx, const float *x, const float *dout, size_t n);
/* y += x (the residual connections) */
void ax_add_inplace(float *y, const float *x, size_t n);
#endif
