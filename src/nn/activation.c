#include "nn/activation.h"
#include "backend/backend.h"

void ax_gelu_forward(float *out, const float *x, size_t n) { ax_be()->gelu_forward(out, x, n); }
void ax_gelu_backward(float *dx, const float *x, const float *dout, size_t n) {
    ax_be()->gelu_backward(dx, x, dout, n);
}
void ax_add_inplace(float *y, const float *x, size_t n) { ax_be()->add(y, x, n); }
void ax_swiglu_forward(float *out, const float *gu, int M, int F) { ax_be()->swiglu_forward(out, gu, M, F); }
void ax_swiglu_backward(float *dgu, const float *gu, const float *dout, int M, int F) {
    ax_be()->swiglu_backward(dgu, gu, dout, M, F);
}
