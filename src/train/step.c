/* One optimizer step of training (train/step.h). */
#include "train/step.h"
#include "backend/backend.h"
#include "util/err.h"
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

struct ax_train_scratch {
    void *host; /* staged: the loss gradient's scale (16 bytes, keeping the slots aligned), then the slots */
    float *scale;
    int32_t *slots; /* a slot per micro-batch */
    int graph;      /* capture the step (ax_train_scratch_alloc) */
    int ran;        /* steps queued so far */
    bool weighted;  /* the captured step's micro-batches have loss weights */
    void *captured; /* the backend's graph of the step, or NULL */
};

ax_train_scratch *ax_train_scratch_alloc(int accum, int Bl, int T, int graph) {
    ax_train_scratch *s = ax_calloc(1, sizeof *s);
    size_t bytes = 16 + (size_t)accum * 3 * Bl * T * sizeof(int32_t);
    s->host = ax_be()->host_alloc ? ax_be()->host_alloc(bytes) : ax_malloc(bytes);
    s->scale = s->host;
    s->slots = (int32_t *)((char *)s->host + 16);
    s->graph = graph;
    return s;
}

void ax_train_scratch_free(ax_train_scratch *s) {
    if (!s) return;
    if (s->captured) ax_be()->graph_free(s->captured);
    if (ax_be()->host_free) ax_be()->host_free(s->host);
    else free(s->host);
    free(s);
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

/* The step's forward and backward over every micro-batch, the gradients
 * reduced: work queued on the backend from the staged slots, no wait. */
static void step_queue(ax_gpt *m, const ax_train_scratch *sc, bool weighted, int accum, int Bl, int T) {
    int M = Bl * (T / m->g->gc);
    ax_be()->zero(m->grads, m->n_local * sizeof(float));
    ax_gpt_loss_begin(m);
    for (int a = 0; a < accum; a++) {
        int32_t *in = sc->slots + (size_t)a * 3 * M, *tg = in + M;
        ax_gpt_forward_queue(m, in, tg, weighted ? (float *)(tg + M) : NULL, Bl, T, sc->scale);
        if (a == accum - 1) ax_gpt_grad_sync_begin(m); /* its backward may start the reductions */
        ax_gpt_backward(m, in, Bl, T);
        ax_gpt_loss_add(m, M); /* summed where the kernels are: no wait here */
    }
    ax_gpt_grad_sync(m);
}

/* step_queue, run as it is called or (sc->graph) from its graph: captured
 * at the second step, after the first has allocated and tuned all that the
 * step uses (nothing may allocate inside a capture), and again when the
 * backend's memory changed since (replay refuses) or the weighting did.
 * Returns true when this step captured. */
static bool step_run(ax_gpt *m, ax_train_scratch *sc, bool weighted, int accum, int Bl, int T) {
    const ax_backend *be = ax_be();
    if (!sc->graph || sc->ran++ == 0) {
        step_queue(m, sc, weighted, accum, Bl, T);
        return false;
    }
    if (sc->captured && sc->weighted == weighted && be->replay(sc->captured) == 0) return false;
    if (sc->captured) be->graph_free(sc->captured);
    be->capture_begin();
    step_queue(m, sc, weighted, accum, Bl, T);
    sc->captured = be->capture_end();
    sc->weighted = weighted;
    if (be->replay(sc->captured) != 0) ax_fatal(__FILE__, __LINE__, "CUDA graph: memory changed during the capture");
    return true;
}

void ax_train_step(ax_gpt *m, ax_adamw *o, const ax_hparams *h, int step, const int32_t *seqs, const float *weights,
                   int accum, int Bl, int T, ax_step_stats *st, ax_train_scratch *sc) {
    ax_grid *g = m->g;
    int Tl = T / g->gc, M = Bl * Tl; /* rows of a micro-batch on this rank */
    /* tokens that count, over the whole global batch (the loss's
     * denominator): each rank counts the rows it computes */
    double ntok = 0;
    for (int a = 0; a < accum; a++) {
        /* a slot of its own per micro-batch: a device may still be copying the last one's */
        int32_t *in = sc->slots + (size_t)a * 3 * M, *tg = in + M;
        float *w = weights ? (float *)(tg + M) : NULL;
        for (int b = 0; b < Bl; b++)
            ntok += ax_seq_rows(g, seqs + ((int64_t)a * Bl + b) * (T + 1),
                                weights ? weights + ((int64_t)a * Bl + b) * T : NULL, T, in + b * Tl, tg + b * Tl,
                                w ? w + b * Tl : NULL);
    }
    ax_allreduce_f64(&g->dz, &ntok, 1);
    *sc->scale = ntok > 0 ? (float)(1.0 / ntok) : 0.0f; /* no token counts: zero gradients */
    st->captured = step_run(m, sc, weights != NULL, accum, Bl, T);
    double loss = ax_gpt_loss_read(m); /* the step's first wait for the device: its backward is done */
    ax_allreduce_f64(&g->dz, &loss, 1);
    double t_opt = MPI_Wtime();
    double gnorm = sqrt(ax_gpt_grad_sumsq(m));
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
