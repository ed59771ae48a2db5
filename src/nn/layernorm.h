/* Exact LayerNorm over features split across the X group (SPEC §3): the row
 * mean and variance are all-reduced over X (two passes: mean, then centred
 * squares), so any Gx gives the serial result.
 *   x, out (M, Cl); w, b (Cl); mean, rstd (M); C = Cl * Gx; eps 1e-5. */
#ifndef AX_NN_LAYERNORM_H
#define AX_NN_LAYERNORM_H
#include "comm/comm.h"

void ax_layernorm_forward(ax_comm *X, float *out, float *mean, float *rstd, const float *x,
                          const float *w, const float *b, int M, int Cl, int C, float *scratch);
/* dx (+=), dw (+=), db (+=); scratch holds 2*M floats */
void ax_layernorm_backward(ax_comm *X, float *dx, float *dw, float *db, const float *dout, const float *x,
                           const float *w, const float *mean, const float *rstd, int M, int Cl, int C, float *scratch);
#endif
