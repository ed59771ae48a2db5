#include "model/gpt_decode.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/layernorm.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t kv_index(const ax_kvcache *c, const ax_gpt *m, int l, int b, int h, int t) {
    return ((((size_t)l * c->B + b) * m->KVl + h) * c->Tmax + t) * m->hd;
}

void ax_kv_init(ax_kvcache *c, ax_gpt *m, int B, int Tmax) {
    memset(c, 0, sizeof *c);
    c->B = B;
    c->Tmax = Tmax;
    size_t kv = (size_t)m->cfg.n_layer * B * m->KVl * Tmax * m->hd;
    const ax_backend *be = ax_be();
    c->k = be->alloc(kv * sizeof(float));
    c->v = be->alloc(kv * sizeof(float));
    c->len = be->alloc(B * sizeof(int));
    c->tokens = be->alloc(B * sizeof(int32_t));
    c->len_host = ax_calloc(B, sizeof(int));
    size_t Cx = m->Cx, Cy = m->Cy, Q = m->qkv.out_l, Fc = m->fc.out_l, Fa = m->fcproj.in_l;
    size_t wide = Fc > Cx ? Fc : Cx;
    size_t total = B * (3 * Cx + Q + Cy + wide + 2 * Fc + Fa + 2 + 4 + (size_t)m->Vl) + B * (Q + Cy) / 2 + 4;
    float *p = c->mem = be->alloc(total * sizeof(float));
#define TAKE(n) (p += (n), p - (n))
    c->x = TAKE(B * Cx);
    c->ln = TAKE(B * Cx);
    c->qkv = TAKE(B * Q);
    c->atty = TAKE(B * Cy);
    c->tmp = TAKE(B * wide);
    c->fch = TAKE(B * Fc);
    c->fch_act = TAKE(B * Fa);
    c->fcy = TAKE(B * Fc);
    c->mean = TAKE(B);
    c->rstd = TAKE(B);
    c->scratch = TAKE(4 * (size_t)B);
    c->logits = TAKE((size_t)B * m->Vl);
    c->qkv_h = TAKE((B * Q + 1) / 2);
    c->atty_h = TAKE((B * Cy + 1) / 2);
#undef TAKE
}

void ax_kv_free(ax_kvcache *c) {
    const ax_backend *be = ax_be();
    be->free(c->k);
    be->free(c->v);
    be->free(c->len);
    be->free(c->tokens);
    be->free(c->mem);
    free(c->len_host);
    memset(c, 0, sizeof *c);
}

/* the host's lengths to where the kernels read them */
static void send_lengths(ax_kvcache *c) { ax_be()->copy(c->len, c->len_host, c->B * sizeof(int)); }

void ax_kv_prefill(ax_kvcache *c, ax_gpt *m, int b, const int32_t *prompt, int n) {
    ax_gpt_forward(m, prompt, NULL, NULL, 1, n, 0.0f);
    int hd = m->hd, kq = m->Hl * hd, kvw = m->KVl * hd, Q = m->qkv.out_l; /* a qkv row: [q (kq) | k (kvw) | v (kvw)] */
    size_t row = (size_t)hd * sizeof(float);
    /* each key and value head's n rows (Q floats apart in the layer's qkv) to
     * its (n, hd) block of the cache, on the backend: no trip through the host.
     * Under bf16 the layer's kept q|k|v is widened first into the fp32 working
     * copy, the values its attention read. */
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const float *qkv = m->L[l].qkv32;
        if (m->dtype == AX_BF16) ax_be()->cast(m->L[l].qkv32, AX_F32, m->L[l].qkv, AX_BF16, (size_t)n * Q);
        for (int h = 0; h < m->KVl; h++)
            for (int kv = 0; kv < 2; kv++)
                ax_be()->copy_rows((kv ? c->v : c->k) + kv_index(c, m, l, b, h, 0), row, qkv + kq + kv * kvw + h * hd,
                                   (size_t)Q * sizeof(float), row, n);
    }
    c->len_host[b] = n;
    send_lengths(c);
    ax_gpt_logits(m, c->logits + (size_t)b * m->Vl, n - 1, 1);
}

/* the decoding layer's attention: each row's new query over its cached keys and values */
static void attend_cached(void *ctx, ax_gpt *m, int l, ax_layer_acts *a) {
    ax_kvcache *c = ctx;
    ax_attention_decode(a->atty32, a->qkv32, c->k + kv_index(c, m, l, 0, 0, 0), c->v + kv_index(c, m, l, 0, 0, 0),
                        c->len, c->nb, m->Hl, m->KVl, m->hd, c->Tmax);
}

void ax_kv_step(ax_kvcache *c, ax_gpt *m, const int32_t *tokens, int nb) {
    ax_grid *g = m->g;
    int Cx = m->Cx;
    const float *wte = ax_gpt_gather_wte(m); /* under bf16, the weights as the prefill's forward rounded them */
    ax_be()->copy(c->tokens, tokens, nb * sizeof(int32_t));
    ax_embedding_forward(&g->Y, c->x, c->tokens, c->len, wte, ax_gpt_param(m, 1), nb, c->Tmax, m->v0, m->Vl, Cx);
    /* one row per sequence; the layer's output overwrites its input x */
    int h = m->dtype == AX_BF16;
    ax_layer_acts a = {.ln1 = c->ln,
                       .ln1_mean = c->mean,
                       .ln1_rstd = c->rstd,
                       .qkv = h ? c->qkv_h : c->qkv,
                       .atty = h ? c->atty_h : c->atty,
                       .qkv32 = c->qkv,
                       .atty32 = c->atty,
                       .res2 = c->tmp,
                       .ln2 = c->ln,
                       .ln2_mean = c->mean,
                       .ln2_rstd = c->rstd,
                       .fch = c->fch,
                       .fch_act = c->fch_act,
                       .fcy = h ? c->fcy : c->fch,
                       .res3 = c->x};
    c->nb = nb;
    for (int l = 0; l < m->cfg.n_layer; l++)
        ax_gpt_layer_forward(m, l, &a, c->x, nb, 1, c->len, c->scratch, attend_cached, c);
    ax_gpt_final_norm(m, c->ln, c->mean, c->rstd, c->x, nb, c->scratch);
    ax_linear_forward(&m->lmhead, ax_gpt_lm_weight(m), NULL, ax_gpt_act(m, c->ln, nb, Cx), c->logits);
    for (int b = 0; b < nb; b++) c->len_host[b]++;
    send_lengths(c);
}

void ax_kv_argmax(ax_kvcache *c, ax_gpt *m, int nb, int32_t *out) {
    int V = m->cfg.vocab_size;
    struct {
        float v;
        int i;
    } *best = ax_malloc(nb * sizeof *best);
    size_t bytes = (size_t)nb * m->Vl * sizeof(float);
    const float *logits = ax_host_view(c->logits, bytes, 1);
    for (int b = 0; b < nb; b++) {
        const float *r = logits + (size_t)b * m->Vl;
        best[b].v = -INFINITY;
        best[b].i = 0;
        for (int j = 0; j < m->Vl && m->v0 + j < V; j++)
            if (r[j] > best[b].v) {
                best[b].v = r[j];
                best[b].i = m->v0 + j;
            }
    }
    ax_host_release((void *)logits, c->logits, bytes, 0);
    /* MAXLOC keeps the lowest index among equal values, as a serial argmax does */
    if (m->g->Y.size > 1) AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, best, nb, MPI_FLOAT_INT, MPI_MAXLOC, m->g->Y.comm));
    for (int b = 0; b < nb; b++) out[b] = best[b].i;
    free(best);
}
