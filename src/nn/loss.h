/* Vocabulary-parallel cross-entropy (docs/algorithm.md §3). Logits of this rank cover the
 * vocabulary columns [v0, v0 + Vl); columns >= V (padding) are ignored. The row
 * max, the sum of exponentials and the target logit are all-reduced over Y.
 *   logits (M, Vl); targets (M); weight (M): 1 for tokens that count, 0 not
 *   losses (M): per-row -log p(target), replicated over Y
 * With dscale != 0 their gradient
 *   dlogits = weight * dscale * (softmax - onehot(target))
 * is written to dgrad (M, Vl) in dt, the dtype of the GEMMs that read it (a
 * bf16 one rounded once from fp32); dgrad may be logits when fp32: in place. */
#ifndef AX_NN_LOSS_H
#define AX_NN_LOSS_H
#include <stdint.h>
#include "comm/comm.h"

void ax_xent_forward_backward(ax_comm *Y, const float *logits, float *losses, const int32_t *targets,
                              const float *weight, int M, int Vl, int v0, int V, float dscale, void *dgrad, ax_dtype dt,
                              float *scratch /* 3*M */);
#endif
