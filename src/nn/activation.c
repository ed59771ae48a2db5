#include "nn/activation.h"

void ax_bias_gelu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *y, const float *bias, int M,
                          int n) {
    ax_be()->bias_gelu_forward(out, ot, pre, pt, y, bias, M, n);
}
void ax_gelu_backward(void *dx, ax_dtype dt, float *db, const void *x, ax_dtype xt, const float *dout, int M, int n) {
    ax_be()->gelu_backward(dx, dt, db, x, xt, dout, M, n);
}
void ax_bias_round(float *y, void *out, ax_dtype ot, const float *bias, int M, int n) {
    ax_be()->bias_round(y, out, ot, bias, M, n);
}
void ax_add_inplace(float *y, const float *x, size_t n) { ax_be()->add(y, x, n); }
void ax_swiglu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *gu, int M, int F) {
    ax_be()->swiglu_forward(out, ot, pre, pt, gu, M, F);
}
void ax_swiglu_backward(void *dgu, ax_dtype dt, const void *gu, ax_dtype gt, const float *dout, int M, int F) {
    ax_be()->swiglu_backward(dgu, dt, gu, gt, dout, M, F);
}
