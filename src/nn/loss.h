/* Vocabulary-parallel cross-entropy (docs/algorithm.md §3). Logits of this rank cover the
 * vocabulary columns [v0, v0 + Vl); columns >= V (padding) are ignored. The row
 * max, the sum of exponentials and the target logit are all-reduced over Y.
 *   logits (M, Vl); targets (M); weight (M): 1 for tokens that count, 0 not
 *   losses (M): per-row -log p(target), replicated over Y
 * The logits are in dt, the dtype of the LM head's GEMMs; the max, the
 * softmax, the loss and the gradient are fp32 arithmetic. With dscale (one
 * float in the backend's memory, read when the work runs) not NULL the gradient
 *   dlogits = weight * *dscale * (softmax - onehot(target))
 * is written to dgrad (M, Vl) in dt (a bf16 one rounded once from fp32);
 * dgrad may be logits: in place. */
#ifndef AX_NN_LOSS_H
#define AX_NN_LOSS_H
#include <stdint.h>
#include "comm/comm.h"

void ax_xent_forward_backward(ax_comm *Y, const void *logits, float *losses, const int32_t *targets,
                              const float *weight, int M, int Vl, int v0, int V, const float *dscale, void *dgrad,
                              ax_dtype dt, float *scratch /* 3*M */);
#endif
