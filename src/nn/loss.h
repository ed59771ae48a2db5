/* Vocabulary-parallel cross-entropy (docs/algorithm.md §3). Logits of this rank cover the
 * vocabulary columns [v0, v0 + Vl); columns >= V (padding) are ignored. The row
 * max, the sum of exponentials and the target logit are all-reduced over Y.
 *   logits (M, Vl); targets (M); weight (M): 1 for tokens that count, 0 not
 *   losses (M): per-row -log p(target), replicated over Y
 * With dscale != 0 the logits are overwritten in place by their gradient
 *   dlogits = weight * dscale * (softmax - onehot(target)). */
#ifndef AX_NN_LOSS_H
#define AX_NN_LOSS_H
#include <stdint.h>
#include "comm/comm.h"

void ax_xent_forward_backward(ax_comm *Y, float *logits, float *losses, const int32_t *targets, const float *weight,
                              int M, int Vl, int v0, int V, float dscale, float *scratch /* 3*M */);
#endif
