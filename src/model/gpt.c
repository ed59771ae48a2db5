/* GPT-2 model on the 4D grid: parameter table, forward and backward. */
#include "model/gpt.h"
#include "backend/backend.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/layernorm.h"
#include "nn/loss.h"
#include "util/err.h"
#include "util/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

int64_t ax_gpt_num_params(const ax_gpt_config *c) {
    int64_t C = c->n_embd;
    return (int64_t)c->vocab_size * C + (int64_t)c->block_size * C + 2 * C +
           (int64_t)c->n_layer * (12 * C * C + 13 * C);
}

int ax_gpt_check_grid(const ax_gpt_config *c, const ax_grid *g) {
    int C = c->n_embd;
    if (c->n_layer < 1 || c->n_head < 1 || C < 1 || c->block_size < 1 || c->vocab_size < 2)
        return AX_ERR("model: n_layer, n_head, n_embd, n_positions must be >= 1 and vocab_size >= 2");
    if (C % c->n_head)
        return AX_ERR("model: n_embd %d is not divisible by n_head %d", C, c->n_head);
    if (c->n_head % g->gy)
        return AX_ERR("--grid: n_head %d is not divisible by G_y = %d (heads are split over Y)", c->n_head, g->gy);
    if (C % g->gx)
        return AX_ERR("--grid: n_embd %d is not divisible by G_x = %d", C, g->gx);
    return 0;
}

static void add_param(ax_gpt *m, int id, const char *name, ax_shard s, int hf_t, int decay) {
    ax_param *p = &m->p[id];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->shard = s; p->hf_transposed = hf_t; p->decay = decay;
    p->numel = ax_shard_numel(&s, m->g);
}

static void build_table(ax_gpt *m) {
    const ax_gpt_config *c = &m->cfg;
    int C = c->n_embd, L = c->n_layer;
    char n[64];
    m->np = 4 + L * AX_P_PER_LAYER;
    m->p = ax_calloc(m->np, sizeof(ax_param));
    ax_shard vec_x = {.rows = 1, .cols = C, .col_axis = AX_AXIS_X};
    add_param(m, 0, "wte.weight", m->lmhead.w, 0, 1);
    add_param(m, 1, "wpe.weight", (ax_shard){.rows = c->block_size, .cols = C, .col_axis = AX_AXIS_X}, 0, 1);
    for (int l = 0; l < L; l++) {
        struct { int k; const char *s; ax_shard sh; int t, d; } e[AX_P_PER_LAYER] = {
            {AX_P_LN1W, "ln_1.weight", vec_x, 0, 0}, {AX_P_LN1B, "ln_1.bias", vec_x, 0, 0},
            {AX_P_QKVW, "attn.c_attn.weight", m->qkv.w, 1, 1}, {AX_P_QKVB, "attn.c_attn.bias", m->qkv.b, 0, 0},
            {AX_P_PROJW, "attn.c_proj.weight", m->proj.w, 1, 1}, {AX_P_PROJB, "attn.c_proj.bias", m->proj.b, 0, 0},
            {AX_P_LN2W, "ln_2.weight", vec_x, 0, 0}, {AX_P_LN2B, "ln_2.bias", vec_x, 0, 0},
            {AX_P_FCW, "mlp.c_fc.weight", m->fc.w, 1, 1}, {AX_P_FCB, "mlp.c_fc.bias", m->fc.b, 0, 0},
            {AX_P_FCPW, "mlp.c_proj.weight", m->fcproj.w, 1, 1}, {AX_P_FCPB, "mlp.c_proj.bias", m->fcproj.b, 0, 0},
        };
        for (int k = 0; k < AX_P_PER_LAYER; k++) {
            snprintf(n, sizeof n, "h.%d.%s", l, e[k].s);
            add_param(m, AX_PID(l, e[k].k), n, e[k].sh, e[k].t, e[k].d);
        }
    }
    add_param(m, m->np - 2, "ln_f.weight", vec_x, 0, 0);
    add_param(m, m->np - 1, "ln_f.bias", vec_x, 0, 0);
    /* zchunk tensors first, then the replicated ones */
    int64_t off = 0;
    for (int pass = 1; pass >= 0; pass--)
        for (int i = 0; i < m->np; i++)
            if (m->p[i].shard.zchunk == pass) { m->p[i].offset = off; off += m->p[i].numel; }
    m->n_local = off;
    m->n_zchunk = 0;
    for (int i = 0; i < m->np; i++) if (m->p[i].shard.zchunk) m->n_zchunk += m->p[i].numel;
}

int ax_gpt_init(ax_gpt *m, const ax_gpt_config *c, ax_grid *g) {
    memset(m, 0, sizeof *m);
    AX_TRY(ax_gpt_check_grid(c, g));
    m->cfg = *c; m->g = g;
    int C = c->n_embd;
    m->Vp = (int)round_up(c->vocab_size, 64 * g->gy);
    m->Vl = m->Vp / g->gy; m->v0 = g->y * m->Vl;
    m->Cx = C / g->gx; m->Cy = C / g->gy;
    m->Hl = c->n_head / g->gy; m->hd = C / c->n_head;
    ax_linear_init(&m->qkv, g, C, 3 * C, 0, 0, c->n_head);
    ax_linear_init(&m->proj, g, C, C, 0, 1, 0);
    ax_linear_init(&m->fc, g, C, 4 * C, 0, 0, 0);
    ax_linear_init(&m->fcproj, g, 4 * C, C, 0, 1, 0);
    ax_linear_init(&m->lmhead, g, C, c->vocab_size, m->Vp, 0, 0);
    build_table(m);
    m->params = ax_calloc(m->n_local, sizeof(float));
    m->grads = ax_calloc(m->n_local, sizeof(float));
    int64_t cap = 0;
    ax_linear *all[] = {&m->qkv, &m->proj, &m->fc, &m->fcproj};
    for (int i = 0; i < 4; i++) {
        int64_t n = ax_shard_numel(&all[i]->w, g) * g->gz;
        cap = n > cap ? n : cap;
    }
    if (g->gz > 1) {
        m->ws.wblock = ax_calloc(cap, sizeof(float));
        m->ws.gblock = ax_calloc(cap, sizeof(float));
        int64_t nw = ax_shard_numel(&m->lmhead.w, g);
        m->ws.gchunk = ax_calloc(nw > cap ? nw : cap, sizeof(float));
        m->wte_block = ax_calloc(nw * g->gz, sizeof(float));
        m->wte_gblock = ax_calloc(nw * g->gz, sizeof(float));
        m->ws_bytes = 4.0 * (2 * cap + (nw > cap ? nw : cap) + 2 * nw * g->gz);
    }
    return 0;
}

void ax_gpt_free(ax_gpt *m) {
    free(m->p); free(m->params); free(m->grads);
    free(m->ws.wblock); free(m->ws.gblock); free(m->ws.gchunk);
    free(m->wte_block); free(m->wte_gblock); free(m->params_h); free(m->wte_block_h);
    ax_be()->free(m->act_mem); free(m->L);
    memset(m, 0, sizeof *m);
}

/* GPT-2 initialisation: N(0, 0.02) matrices and embeddings, residual
 * projections scaled by 1/sqrt(2 n_layer), zero biases, unit LayerNorm.
 * Element j of tensor i is a pure function of (seed, i, j): grid-independent. */
void ax_gpt_init_random(ax_gpt *m, uint64_t seed) {
    ax_grid *g = m->g;
    for (int i = 0; i < m->np; i++) {
        ax_param *p = &m->p[i];
        float *dst = m->params + p->offset;
        const char *n = p->name;
        int is_ln_w = strstr(n, "ln_") && strstr(n, ".weight");
        int is_matrix = p->decay;
        double std = 0.02;
        if (strstr(n, "c_proj.weight")) std = 0.02 / sqrt(2.0 * m->cfg.n_layer);
        for (int64_t k = 0; k < p->numel; k++) {
            int64_t j = ax_shard_logical_index(&p->shard, g, g->x, g->y, g->z, k);
            if (j < 0) { dst[k] = 0; continue; }
            if (is_matrix) dst[k] = (float)(std * ax_rng_normal(seed, (uint64_t)i, (uint64_t)j));
            else dst[k] = is_ln_w ? 1.0f : 0.0f;
        }
    }
}

/* Lays the activations out from base (NULL: only counts) and returns their
 * floats, each buffer 64-byte aligned. A per-layer buffer is either kept for
 * every layer or, when the recompute mode rebuilds it in backward (or under
 * bf16, where only its rounded copy is read later), one buffer that all
 * layers share. */
static int64_t layout_acts(ax_gpt *m, int B, int T, float *base) {
    int64_t M = (int64_t)B * T, Cx = m->Cx, Cy = m->Cy, off = 0;
    int64_t wide = 4 * Cy > Cx ? 4 * Cy : Cx;
    int block = m->recompute == AX_RECOMPUTE_BLOCK, attn = m->recompute != AX_RECOMPUTE_NONE;
    int h = m->dtype == AX_BF16;
#define TAKE(n) (off = round_up(off, 16) + (n), base ? base + off - (n) : NULL)
#define TAKE_H(n) (ax_bf16 *)TAKE(((n) + 1) / 2)
#define LAYERS(field, take, n, kept) \
    for (int l = 0; l < m->cfg.n_layer; l++) m->L[l].field = (kept) || l == 0 ? take(n) : m->L[0].field
    m->encoded = TAKE(M * Cx);
    LAYERS(ln1, TAKE, M * Cx, !block && !h); LAYERS(ln1_mean, TAKE, M, !block); LAYERS(ln1_rstd, TAKE, M, !block);
    LAYERS(qkv, TAKE, 3 * M * Cy, !block);
    LAYERS(lse, TAKE, (int64_t)B * m->Hl * T, !attn); LAYERS(atty, TAKE, M * Cy, !attn);
    LAYERS(res2, TAKE, M * Cx, !block);
    LAYERS(ln2, TAKE, M * Cx, !block && !h); LAYERS(ln2_mean, TAKE, M, !block); LAYERS(ln2_rstd, TAKE, M, !block);
    LAYERS(fch, TAKE, 4 * M * Cy, !block); LAYERS(fch_gelu, TAKE, 4 * M * Cy, !block && !h);
    LAYERS(res3, TAKE, M * Cx, 1);                 /* the next layer's input: always kept */
    if (h) {
        LAYERS(ln1_h, TAKE_H, M * Cx, !block); LAYERS(atty_h, TAKE_H, M * Cy, !attn);
        LAYERS(ln2_h, TAKE_H, M * Cx, !block); LAYERS(fch_gelu_h, TAKE_H, 4 * M * Cy, !block);
        m->lnf_h = TAKE_H(M * Cx);
        m->dy_h = TAKE_H(M * (wide > m->Vl ? wide : m->Vl));
    }
    m->lnf = TAKE(M * Cx); m->lnf_mean = TAKE(M); m->lnf_rstd = TAKE(M);
    m->logits = TAKE(M * m->Vl); m->losses = TAKE(M);
    m->dres = TAKE(M * Cx); m->s1 = TAKE(M * wide); m->s2 = TAKE(M * wide);
    m->scratch = TAKE(4 * M);
    m->att_scratch = TAKE((int64_t)m->att_threads * ax_attention_scratch(T));
#undef LAYERS
#undef TAKE_H
#undef TAKE
    return off;
}

void ax_gpt_set_recompute(ax_gpt *m, ax_recompute mode) {
    if (mode == m->recompute) return;
    m->recompute = mode;
    m->cap_B = m->cap_T = 0;                       /* laid out anew on next use */
}

void ax_gpt_set_dtype(ax_gpt *m, ax_dtype t) {
    if (t == m->dtype) return;
    m->dtype = t;
    m->cap_B = m->cap_T = 0;
    if (t == AX_BF16 && !m->params_h) {
        m->params_h = ax_calloc(m->n_zchunk ? m->n_zchunk : 1, sizeof(ax_bf16));
        if (m->g->gz > 1) m->wte_block_h = ax_calloc(ax_shard_numel(&m->lmhead.w, m->g) * m->g->gz, sizeof(ax_bf16));
    }
}

void ax_gpt_alloc_acts(ax_gpt *m, int B, int T) {
    if (B <= m->cap_B && T <= m->cap_T) return;
    ax_be()->free(m->act_mem); free(m->L);
    m->cap_B = B; m->cap_T = T;
    /* attention scratch for the threads of this moment; attention never runs more */
    m->att_threads = ax_be()->threads();
    m->L = ax_calloc(m->cfg.n_layer, sizeof(ax_layer_acts));
    int64_t total = layout_acts(m, B, T, NULL);
    m->act_mem = ax_be()->alloc(total * sizeof(float));
    m->act_bytes = 4.0 * total;
    layout_acts(m, B, T, m->act_mem);
}

const float *ax_gpt_wte(ax_gpt *m) {
    const float *w = ax_linear_weight(&m->lmhead, m->g, ax_gpt_param(m, 0), AX_F32, m->wte_block).data;
    if (m->dtype == AX_BF16 && m->g->gz > 1)
        ax_be()->cast(m->wte_block_h, AX_BF16, w, AX_F32, ax_shard_numel(&m->lmhead.w, m->g) * m->g->gz);
    return w;
}

ax_mat ax_gpt_lm_weight(const ax_gpt *m) {
    const void *w = m->g->gz > 1 ? (m->dtype == AX_BF16 ? (void *)m->wte_block_h : (void *)m->wte_block)
                  : m->dtype == AX_BF16 ? (void *)(m->params_h + m->p[0].offset) : (void *)(m->params + m->p[0].offset);
    return ax_mat_of(w, m->dtype, m->lmhead.out_l, m->lmhead.in_l);
}

ax_mat ax_gpt_gemm_input(const ax_gpt *m, const float *x, ax_bf16 *h, int rows, int cols) {
    if (m->dtype == AX_F32) return ax_mat_f32(x, rows, cols);
    ax_be()->cast(h, AX_BF16, x, AX_F32, (size_t)rows * cols);
    return ax_mat_of(h, AX_BF16, rows, cols);
}

/* a GEMM input kept from forward: the fp32 buffer, or its bf16 copy */
static ax_mat saved_input(const ax_gpt *m, const float *x, const ax_bf16 *h, int rows, int cols) {
    return m->dtype == AX_F32 ? ax_mat_f32(x, rows, cols) : ax_mat_of(h, AX_BF16, rows, cols);
}

/* layer l's weight k, gathered over Z, in the dtype the GEMMs read */
static ax_mat layer_weight(ax_gpt *m, const ax_linear *L, int l, int k) {
    int64_t off = m->p[AX_PID(l, k)].offset;
    const void *chunk = m->dtype == AX_BF16 ? (void *)(m->params_h + off) : (void *)(m->params + off);
    return ax_linear_weight(L, m->g, chunk, m->dtype, m->ws.wblock);
}

void ax_gpt_layer_forward(ax_gpt *m, int l, ax_layer_acts *a, const float *h, int Bl, int T, float *scratch,
                          ax_attend_fn attend, void *ctx) {
    ax_grid *g = m->g;
    int M = Bl * T, C = m->cfg.n_embd, Cx = m->Cx;
#define P(k) ax_gpt_param(m, AX_PID(l, k))
#define IN(x, L) ax_gpt_gemm_input(m, a->x, a->x##_h, M, (L).in_l)
    ax_layernorm_forward(&g->X, a->ln1, a->ln1_mean, a->ln1_rstd, h, P(AX_P_LN1W), P(AX_P_LN1B), M, Cx, C, scratch);
    ax_linear_forward(&m->qkv, layer_weight(m, &m->qkv, l, AX_P_QKVW), P(AX_P_QKVB), IN(ln1, m->qkv), a->qkv);
    if (attend) attend(ctx, m, l, a);
    else ax_attention_forward(a->atty, a->lse, a->qkv, Bl, T, m->Hl, m->hd, m->att_scratch, m->att_threads);
    ax_linear_forward(&m->proj, layer_weight(m, &m->proj, l, AX_P_PROJW), P(AX_P_PROJB), IN(atty, m->proj), a->res2);
    ax_add_inplace(a->res2, h, (size_t)M * Cx);
    ax_layernorm_forward(&g->X, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, P(AX_P_LN2W), P(AX_P_LN2B), M, Cx, C, scratch);
    ax_linear_forward(&m->fc, layer_weight(m, &m->fc, l, AX_P_FCW), P(AX_P_FCB), IN(ln2, m->fc), a->fch);
    ax_gelu_forward(a->fch_gelu, a->fch, (size_t)M * m->fc.out_l);
    ax_linear_forward(&m->fcproj, layer_weight(m, &m->fcproj, l, AX_P_FCPW), P(AX_P_FCPB), IN(fch_gelu, m->fcproj), a->res3);
    ax_add_inplace(a->res3, a->res2, (size_t)M * Cx);
#undef IN
#undef P
}

double ax_gpt_forward(ax_gpt *m, const int32_t *inputs, const int32_t *targets, const float *weights,
                      int Bl, int T, float dscale) {
    ax_gpt_alloc_acts(m, Bl, T);
    ax_grid *g = m->g;
    int M = Bl * T, C = m->cfg.n_embd, Cx = m->Cx;
    if (m->dtype == AX_BF16) ax_be()->cast(m->params_h, AX_BF16, m->params, AX_F32, m->n_zchunk);
    const float *wte = ax_gpt_wte(m);
    ax_embedding_forward(&g->Y, m->encoded, inputs, NULL, wte, ax_gpt_param(m, 1), M, T, m->v0, m->Vl, Cx);
    const float *h = m->encoded;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        ax_gpt_layer_forward(m, l, &m->L[l], h, Bl, T, m->scratch, NULL, NULL);
        h = m->L[l].res3;
    }
    ax_layernorm_forward(&g->X, m->lnf, m->lnf_mean, m->lnf_rstd, h, ax_gpt_param(m, m->np - 2),
                         ax_gpt_param(m, m->np - 1), M, Cx, C, m->scratch);
    ax_linear_forward(&m->lmhead, ax_gpt_lm_weight(m), NULL, ax_gpt_gemm_input(m, m->lnf, m->lnf_h, M, Cx), m->logits);
    if (!targets) return 0.0;
    ax_xent_forward_backward(&g->Y, m->logits, m->losses, targets, weights, M, m->Vl, m->v0,
                             m->cfg.vocab_size, dscale, m->scratch);
    double sum = 0;
    for (int i = 0; i < M; i++) sum += (double)(weights ? weights[i] : 1.0f) * m->losses[i];
    return sum;
}

void ax_gpt_backward(ax_gpt *m, const int32_t *inputs, int Bl, int T) {
    ax_grid *g = m->g;
    int M = Bl * T, C = m->cfg.n_embd, Cx = m->Cx;
    ax_mat wte = ax_gpt_lm_weight(m);          /* gathered (and rounded) in forward */
    float *dwte = g->gz == 1 ? ax_gpt_grad(m, 0) : m->wte_gblock;
    if (g->gz > 1) memset(dwte, 0, ax_shard_numel(&m->lmhead.w, g) * g->gz * sizeof(float));
    /* LM head: dlogits are in m->logits; its dW goes to the shared token-table gradient */
    ax_mat dl = ax_gpt_gemm_input(m, m->logits, m->dy_h, M, m->Vl);
    ax_gemm(1.0f, dl, 0, wte, 0, 0.0f, ax_mat_f32(m->s1, M, Cx));
    ax_allreduce_f32(&g->Y, m->s1, (size_t)M * Cx);
    ax_gemm(1.0f, dl, 1, saved_input(m, m->lnf, m->lnf_h, M, Cx), 0, 1.0f, ax_mat_f32(dwte, m->Vl, Cx));
    const float *hlast = m->cfg.n_layer ? m->L[m->cfg.n_layer - 1].res3 : m->encoded;
    memset(m->dres, 0, (size_t)M * Cx * sizeof(float));
    ax_layernorm_backward(&g->X, m->dres, ax_gpt_grad(m, m->np - 2), ax_gpt_grad(m, m->np - 1), m->s1, hlast,
                          ax_gpt_param(m, m->np - 2), m->lnf_mean, m->lnf_rstd, M, Cx, C, m->scratch);
    for (int l = m->cfg.n_layer - 1; l >= 0; l--) {
        ax_layer_acts *a = &m->L[l];
        const float *h = l ? m->L[l - 1].res3 : m->encoded;
        /* shared buffers hold the last layer's activations after forward; the
         * others are rebuilt, bit for bit, from what was kept */
        if (m->recompute == AX_RECOMPUTE_BLOCK && l < m->cfg.n_layer - 1)
            ax_gpt_layer_forward(m, l, a, h, Bl, T, m->scratch, NULL, NULL);
        if (m->recompute == AX_RECOMPUTE_ATTN && l < m->cfg.n_layer - 1) {
            ax_attention_forward(a->atty, a->lse, a->qkv, Bl, T, m->Hl, m->hd, m->att_scratch, m->att_threads);
            ax_gpt_gemm_input(m, a->atty, a->atty_h, M, m->proj.in_l);
        }
#define P(k) ax_gpt_param(m, AX_PID(l, k))
#define G(k) ax_gpt_grad(m, AX_PID(l, k))
#define IN(x, L) saved_input(m, a->x, a->x##_h, M, (L).in_l)
        /* MLP: res3 = res2 + fcproj(gelu(fc(ln2(res2)))) */
        ax_linear_backward(&m->fcproj, g, layer_weight(m, &m->fcproj, l, AX_P_FCPW), IN(fch_gelu, m->fcproj),
                           m->dres, m->s1, G(AX_P_FCPW), G(AX_P_FCPB), &m->ws, m->dy_h);
        ax_gelu_backward(m->s1, a->fch, m->s1, (size_t)M * m->fc.out_l);
        ax_linear_backward(&m->fc, g, layer_weight(m, &m->fc, l, AX_P_FCW), IN(ln2, m->fc),
                           m->s1, m->s2, G(AX_P_FCW), G(AX_P_FCB), &m->ws, m->dy_h);
        ax_layernorm_backward(&g->X, m->dres, G(AX_P_LN2W), G(AX_P_LN2B), m->s2, a->res2, P(AX_P_LN2W),
                              a->ln2_mean, a->ln2_rstd, M, Cx, C, m->scratch);
        /* attention: res2 = h + proj(attn(qkv(ln1(h)))) */
        ax_linear_backward(&m->proj, g, layer_weight(m, &m->proj, l, AX_P_PROJW), IN(atty, m->proj),
                           m->dres, m->s1, G(AX_P_PROJW), G(AX_P_PROJB), &m->ws, m->dy_h);
        ax_attention_backward(m->s2, m->s1, a->atty, a->lse, a->qkv, Bl, T, m->Hl, m->hd, m->att_scratch, m->att_threads);
        ax_linear_backward(&m->qkv, g, layer_weight(m, &m->qkv, l, AX_P_QKVW), IN(ln1, m->qkv),
                           m->s2, m->s1, G(AX_P_QKVW), G(AX_P_QKVB), &m->ws, m->dy_h);
        ax_layernorm_backward(&g->X, m->dres, G(AX_P_LN1W), G(AX_P_LN1B), m->s1, h, P(AX_P_LN1W),
                              a->ln1_mean, a->ln1_rstd, M, Cx, C, m->scratch);
#undef IN
#undef P
#undef G
    }
    ax_embedding_backward(dwte, ax_gpt_grad(m, 1), m->dres, inputs, NULL, M, T, m->v0, m->Vl, Cx);
    if (g->gz > 1) ax_linear_reduce_grad(&m->lmhead, g, dwte, ax_gpt_grad(m, 0), &m->ws);
}

void ax_gpt_grad_sync(ax_gpt *m) {
    ax_req a, b;                  /* the two regions' reductions in flight together */
    ax_iallreduce_f32(&m->g->data, m->grads, m->n_zchunk, &a);
    ax_iallreduce_f32(&m->g->dz, m->grads + m->n_zchunk, m->n_local - m->n_zchunk, &b);
    ax_wait(&a);
    ax_wait(&b);
}

double ax_gpt_sumsq(ax_gpt *m, const float *flat) {
    ax_grid *g = m->g;
    double s = 0;
    for (int i = 0; i < m->np; i++) {
        ax_param *p = &m->p[i];
        int rep = ax_shard_replicated(&p->shard, g);
        if (((rep & 1) && g->x) || ((rep & 2) && g->y) || ((rep & 4) && g->z)) continue;
        const float *v = flat + p->offset;
        double t = 0;
        for (int64_t k = 0; k < p->numel; k++) t += (double)v[k] * v[k];
        s += t;
    }
    ax_allreduce_f64(&g->tp, &s, 1);
    return s;
}
