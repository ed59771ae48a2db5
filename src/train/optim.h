/* AdamW (decoupled weight decay, as torch.optim.AdamW) on the flat local
 * parameter shards, and the learning-rate schedule; one optimizer step of
 * training, which runs them: train/step.h. */
#ifndef AX_TRAIN_OPTIM_H
#define AX_TRAIN_OPTIM_H
#include <stdint.h>
#include "model/gpt.h"

typedef struct {
    double lr, min_lr_frac, beta1, beta2, eps, weight_decay, clip;
    int warmup, steps;
} ax_hparams;

typedef struct {
    float *m, *v;
    int64_t n;
    /* called before an update changes m, v or the parameters (NULL: none): a
     * reader of the state (a checkpoint's background copy) finishes first */
    void (*before_update)(void *ctx);
    void *before_ctx;
} ax_adamw;

void ax_adamw_init(ax_adamw *o, int64_t n);
void ax_adamw_free(ax_adamw *o);
/* t: 1-based update count; gscale multiplies every gradient (clipping) */
void ax_adamw_update(ax_adamw *o, ax_gpt *m, const ax_hparams *h, double lr, int64_t t, float gscale);

/* Linear warm-up over `warmup` steps, then cosine decay to lr * min_lr_frac at `steps`. */
double ax_lr_at(const ax_hparams *h, int step);
#endif
