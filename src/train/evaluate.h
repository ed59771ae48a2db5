/* Mean cross-entropy of a model over a range of sequences, batched like
 * training (B sequences per batch split over data x Z, `accum` micro-batches);
 * a last partial batch is padded with zero-weight rows, so every sequence
 * counts exactly once whatever the grid. Collective. */
#ifndef AX_TRAIN_EVALUATE_H
#define AX_TRAIN_EVALUATE_H
#include "model/gpt.h"
#include "train/source.h"

void ax_evaluate(ax_gpt *m, ax_source *src, int64_t nseq, int B, int accum, int T, double *loss_sum, double *ntok);
#endif
