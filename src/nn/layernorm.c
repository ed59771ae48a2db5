#include "nn/layernorm.h"

void ax_layernorm_forward(ax_comm *X, void *out, ax_dtype ot, float *mean, float *rstd, float *x, const float *bias,
                          const float *res, const float *w, const float *b, int M, int Cl, int C, float eps,
                          float *scratch) {
    ax_reducer r = ax_comm_reducer(X);
    ax_be()->layernorm_forward(out, ot, mean, rstd, x, bias, res, w, b, M, Cl, C, eps, scratch, &r);
}

void ax_layernorm_backward(ax_comm *X, float *dx, float *dw, float *db, const float *dout, const float *x,
                           const float *w, const float *mean, const float *rstd, int M, int Cl, int C, float *scratch) {
    ax_reducer r = ax_comm_reducer(X);
    ax_be()->layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, M, Cl, C, scratch, &r);
}

void ax_rmsnorm_forward(ax_comm *X, void *out, ax_dtype ot, float *rstd, float *x, const float *bias, const float *res,
                        const float *w, int M, int Cl, int C, float eps) {
    ax_reducer r = ax_comm_reducer(X);
    ax_be()->rmsnorm_forward(out, ot, rstd, x, bias, res, w, M, Cl, C, eps, &r);
}

void ax_rmsnorm_backward(ax_comm *X, float *dx, float *dw, const float *dout, const float *x, const float *w,
                         const float *rstd, int M, int Cl, int C, float *scratch) {
    ax_reducer r = ax_comm_reducer(X);
    ax_be()->rmsnorm_backward(dx, dw, dout, x, w, rstd, M, Cl, C, scratch, &r);
}
