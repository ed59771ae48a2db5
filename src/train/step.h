/* One optimizer step of training: micro-batches, gradient sync, clipping,
 * update (AdamW and its schedule: train/optim.h); and which rows of the run's
 * sequences each rank computes. */
#ifndef AX_TRAIN_STEP_H
#define AX_TRAIN_STEP_H
#include <stdint.h>
#include "model/gpt.h"
#include "train/optim.h"

/* optim_s: seconds from the synchronised gradients to the end of the update
 * (global norm, clipping, AdamW), for axonn bench's time split */
typedef struct {
    double loss, gnorm, lr, tokens, optim_s;
    int skipped;
    int captured; /* this step captured its graph (ax_train_scratch_alloc) */
} ax_step_stats;
typedef struct ax_train_scratch ax_train_scratch;

/* Position in the run's sequence order of local sequence b of micro-batch a of
 * `step`: a global batch of B sequences is `accum` micro-batches of B/accum,
 * each split into contiguous runs of Bl over the data x Z ranks (d-major).
 * Which sequences form a step, and their order, do not depend on the grid. */
static inline int64_t ax_seq_pos(const ax_grid *g, int B, int accum, int step, int a, int b) {
    int Bm = B / accum, Bl = Bm / (g->gd * g->gz);
    return (int64_t)step * B + (int64_t)a * Bm + (int64_t)(g->d * g->gz + g->z) * Bl + b;
}

/* The rows of sequence s (T + 1 tokens) this rank computes: its inputs,
 * targets (the next tokens) and, with w (T weights) given, their weights,
 * into in, tg and wo (T / Gc each): all T rows, or under context parallelism
 * the rank's two chunks (grid.h: ax_grid_cp_pos). Returns the sum of the
 * weights taken (the counted tokens; T / Gc without w). */
double ax_seq_rows(const ax_grid *g, const int32_t *s, const float *w, int T, int32_t *in, int32_t *tg, float *wo);

/* One optimizer step (0-based `step`) over this rank's rows: `accum`
 * micro-batches of Bl sequences of T+1 tokens each, seqs[(a*Bl + b)*(T+1) + t]
 * (whole sequences: under context parallelism the step takes the rank's
 * chunks itself). weights (same layout as targets, NULL = all count) marks
 * tokens that count.
 * The loss is the mean over every counted token of the global batch.
 * A non-finite loss or gradient norm on any rank skips the update on every
 * rank (st->skipped; parameters and moments unchanged). */
void ax_train_step(ax_gpt *m, ax_adamw *o, const ax_hparams *h, int step, const int32_t *seqs, const float *weights,
                   int accum, int Bl, int T, ax_step_stats *st, ax_train_scratch *scratch);
/* ax_train_step's scratch, allocated once per run: the loss gradient's
 * scale and each micro-batch's inputs, targets and weights staged where a
 * device copies from at full speed (the backend's host_alloc, page-locked;
 * ordinary memory on the CPU), a slot per micro-batch so that none is
 * overwritten while a device may still be copying it. With graph (a backend
 * with capture_begin), the steps' forward and backward, from the second
 * step on, run as one captured graph (docs/gpu.md, "CUDA graphs"). */
ax_train_scratch *ax_train_scratch_alloc(int accum, int Bl, int T, int graph);
void ax_train_scratch_free(ax_train_scratch *s);
#endif
