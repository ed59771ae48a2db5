#include "train/optim.h"
#include "backend/backend.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void ax_adamw_init(ax_adamw *o, int64_t n) {
    *o = (ax_adamw){.n = n, .m = ax_be()->alloc(n * sizeof(float)), .v = ax_be()->alloc(n * sizeof(float))};
}

void ax_adamw_free(ax_adamw *o) {
    ax_be()->free(o->m);
    ax_be()->free(o->v);
    memset(o, 0, sizeof *o);
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

void *ax_train_scratch_alloc(int accum, int Bl, int T) {
    size_t bytes = (size_t)accum * 3 * Bl * T * sizeof(int32_t);
    return ax_be()->host_alloc ? ax_be()->host_alloc(bytes) : ax_malloc(bytes);
}

void ax_train_scratch_free(void *p) {
    if (ax_be()->host_free) ax_be()->host_free(p);
    else free(p);
}

double ax_seq_rows(const ax_grid *g, const int32_t *s, const float *w, int T, int32_t *in, int32_t *tg, float *wo) {
    int Tl = T / g->gc;
    double n = 0;
    for (int i = 0; i < Tl; i++) {
        int p = ax_grid_cp_pos(g, T, i);
        in[i] = s[p];
        tg[i] = s[p + 1];
        if (w) n += wo[i] = w[p];
    }
    return w ? n : Tl;
}

void ax_train_step(ax_gpt *m, ax_adamw *o, const ax_hparams *h, int step, const int32_t *seqs, const float *weights,
                   int accum, int Bl, int T, ax_step_stats *st, void *scratch) {
    ax_grid *g = m->g;
    int Tl = T / g->gc, M = Bl * Tl; /* rows of a micro-batch on this rank */
    /* tokens that count, over the whole global batch (the loss's
     * denominator): each rank counts the rows it computes */
    double ntok = 0;
    for (int a = 0; a < accum; a++) {
        /* a slot of its own per micro-batch: a device may still be copying the last one's */
        int32_t *in = (int32_t *)scratch + (size_t)a * 3 * M, *tg = in + M;
        float *w = weights ? (float *)(tg + M) : NULL;
        for (int b = 0; b < Bl; b++)
            ntok += ax_seq_rows(g, seqs + ((int64_t)a * Bl + b) * (T + 1),
                                weights ? weights + ((int64_t)a * Bl + b) * T : NULL, T, in + b * Tl, tg + b * Tl,
                                w ? w + b * Tl : NULL);
    }
    ax_allreduce_f64(&g->dz, &ntok, 1);
    ax_be()->zero(m->grads, m->n_local * sizeof(float));
    ax_gpt_loss_begin(m);
    for (int a = 0; a < accum; a++) {
        int32_t *in = (int32_t *)scratch + (size_t)a * 3 * M, *tg = in + M;
        float *w = weights ? (float *)(tg + M) : NULL;
        ax_gpt_forward_queue(m, in, tg, w, Bl, T, ntok > 0 ? (float)(1.0 / ntok) : 0.0f);
        if (a == accum - 1) ax_gpt_grad_sync_begin(m); /* its backward may start the reductions */
        ax_gpt_backward(m, in, Bl, T);
        ax_gpt_loss_add(m, M); /* summed where the kernels are: no wait here */
    }
    ax_gpt_grad_sync(m);
    double loss = ax_gpt_loss_read(m); /* the step's first wait for the device: its backward is done */
    ax_allreduce_f64(&g->dz, &loss, 1);
    double t_opt = MPI_Wtime();
    double gnorm = sqrt(ax_gpt_sumsq(m, m->grads));
    st->loss = ntok > 0 ? loss / ntok : 0.0;
    st->gnorm = gnorm;
    st->tokens = ntok;
    st->lr = ax_lr_at(h, step);
    /* the reductions above give every rank the same values, but the decision
     * must be one: a rank that updated while another skipped would diverge silently */
    int bad = !isfinite(st->loss) || !isfinite(gnorm);
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, g->world));
    st->skipped = bad;
    if (bad) {
        st->optim_s = MPI_Wtime() - t_opt;
        return;
    }
    float gscale = 1.0f;
    if (h->clip > 0) {
        double coef = h->clip / (gnorm + 1e-6);
        if (coef < 1.0) gscale = (float)coef;
    }
    ax_adamw_update(o, m, h, st->lr, (int64_t)step + 1, gscale);
    ax_backend_sync(); /* the update queued on a device, run */
    st->optim_s = MPI_Wtime() - t_opt;
}
