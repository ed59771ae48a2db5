#include "nn/loss.h"

void ax_xent_forward_backward(ax_comm *Y, const void *logits, float *losses, const int32_t *targets,
                              const float *weight, int M, int Vl, int v0, int V, const float *dscale, void *dgrad,
                              ax_dtype dt, float *scratch) {
    ax_reducer r = ax_comm_reducer(Y);
    ax_be()->xent(logits, losses, targets, weight, M, Vl, v0, V, dscale, dgrad, dt, scratch, &r);
}
