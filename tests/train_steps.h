/* The training loop of the model tests: steps of ax_train_step on the
 * synthetic token source, each rank taking its own sequences of the global
 * batch as the trainer does. */
#ifndef AX_TESTS_TRAIN_STEPS_H
#define AX_TESTS_TRAIN_STEPS_H
#include "memo/goldfish.h"
#include "model/gpt.h"
#include "train/step.h"
#include "train/source.h"
#include "util/err.h"
#include <stdlib.h>

/* The optimizer settings of these tests, over n steps: warm-up, cosine decay,
 * weight decay and clipping all active.
 *   static const ax_hparams hp = AX_T_HPARAMS(STEPS); */
#define AX_T_HPARAMS(n)                                                                                             \
    {                                                                                                               \
        .lr = 1e-2, .min_lr_frac = 0.1, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 0.5, \
        .warmup = 1, .steps = (n)                                                                                   \
    }

/* steps steps of accum micro-batches, global batch B sequences of T tokens
 * from the synthetic source of seed src_seed; at step goldfish_step (-1:
 * none) the goldfish mask (k 3, h 3) weights the targets. Losses and
 * pre-clip gradient norms out (AdamW would hide a gradient scaled k times). */
static inline void ax_t_train(ax_gpt *m, ax_adamw *o, const ax_hparams *hp, uint64_t src_seed, int B, int accum, int T,
                              int steps, int goldfish_step, double *losses, double *gnorms) {
    ax_grid *g = m->g;
    ax_source src;
    ax_source_open(&src, NULL, NULL, T, m->cfg.vocab_size, 0, src_seed);
    int Bl = B / accum / (g->gd * g->gz);
    int32_t *seqs = ax_malloc((size_t)accum * Bl * (T + 1) * 4);
    ax_train_scratch *scr = ax_train_scratch_alloc(accum, Bl, T, 0);
    float *w = ax_malloc((size_t)accum * Bl * T * sizeof(float));
    for (int s = 0; s < steps; s++) {
        for (int a = 0; a < accum; a++)
            for (int b = 0; b < Bl; b++) {
                int32_t *q = seqs + ((size_t)a * Bl + b) * (T + 1);
                ax_source_get(&src, ax_seq_pos(g, B, accum, s, a, b), 0, q);
                ax_goldfish_mask(q, 0, T, 3, 3, w + ((size_t)a * Bl + b) * T);
            }
        ax_step_stats st;
        ax_train_step(m, o, hp, s, seqs, s == goldfish_step ? w : NULL, accum, Bl, T, &st, scr);
        losses[s] = st.loss;
        gnorms[s] = st.gnorm;
    }
    ax_source_close(&src);
    free(seqs);
    ax_train_scratch_free(scr);
    free(w);
}
#endif
