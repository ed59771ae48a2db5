/* AdamW and the learning-rate schedule (train/optim.h). */
#include "train/optim.h"
#include "backend/backend.h"
#include <math.h>
#include <string.h>

void ax_adamw_init(ax_adamw *o, int64_t n) {
    *o = (ax_adamw){.n = n, .m = ax_be()->alloc(n * sizeof(float)), .v = ax_be()->alloc(n * sizeof(float))};
}

void ax_adamw_free(ax_adamw *o) {
    ax_be()->free(o->m);
    ax_be()->free(o->v);
    memset(o, 0, sizeof *o);
}

/* ZeRO-1 (model/gpt.h, ax_gpt_set_zero): the rank's share of each bucket
 * updated, then its parameters gathered while the next bucket's update
 * runs; o->m, o->v hold the share's moments in the share's order */
static void zero_update(ax_adamw *o, ax_gpt *m, ax_adamw_step s) {
    const ax_backend *be = ax_be();
    for (int b = 0; b < m->nbuckets; b++) {
        const ax_bucket *bk = &m->buckets[b];
        for (int k = bk->seg0; k < bk->seg0 + bk->nseg; k++) {
            const ax_zero_seg *z = &m->zsegs[k];
            be->adamw_all(m->params + z->flat, m->gshare + z->share, o->m + z->share, o->v + z->share, z->n,
                          m->zdecay + 2 * z->dr0, z->ndr, NULL, 0, s);
        }
        ax_gpt_zero_gather_start(m, b, m->params);
    }
    ax_gpt_zero_gather_wait(m);
}

void ax_adamw_update(ax_adamw *o, ax_gpt *m, const ax_hparams *h, double lr, int64_t t, float gscale) {
    ax_adamw_step s = {
        .gscale = gscale,
        .b1 = (float)h->beta1,
        .b2 = (float)h->beta2,
        .c1 = (float)(1.0 - pow(h->beta1, (double)t)),
        .c2 = (float)(1.0 - pow(h->beta2, (double)t)),
        .lr = (float)lr,
        .eps = (float)h->eps,
        .decay = (float)(1.0 - lr * h->weight_decay),
    };
    if (o->before_update) o->before_update(o->before_ctx);
    if (m->zero) {
        zero_update(o, m, s);
        return;
    }
    /* one call over the flat buffer; under bf16 it also writes the rounded
     * copy the next forward's GEMMs read, which then need not round it */
    int bf16 = m->dtype == AX_BF16 && m->params_h;
    ax_be()->adamw_all(m->params, m->grads, o->m, o->v, m->n_local, m->decay_ranges, m->n_decay_ranges,
                       bf16 ? m->params_h : NULL, m->n_zchunk, s);
    m->params_h_current = bf16;
}

double ax_lr_at(const ax_hparams *h, int step) {
    double min_lr = h->lr * h->min_lr_frac;
    if (step < h->warmup) return h->lr * (step + 1) / h->warmup;
    if (h->steps <= h->warmup) return h->lr;
    double progress = (double)(step - h->warmup) / (h->steps - h->warmup);
    if (progress > 1) progress = 1;
    return min_lr + 0.5 * (h->lr - min_lr) * (1.0 + cos(M_PI * progress));
}
