/* The model's training step on the grid: the forward (embedding, layers,
 * classifier and loss) and the backward, with the weights' gathers and the
 * gradients' reductions they start (model/gpt.h). The parameter table, the
 * activations' layout and the settings are gpt.c's. */
#include "model/gpt.h"
#include "backend/backend.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/layernorm.h"
#include "nn/loss.h"
#include "nn/rope.h"
#include "nn/ring_attention.h"
#include "util/err.h"
#include <stdlib.h>

/* a layer's FC weights' parameter slots; a weight's prefetch key (fc_key) */
static const int fc_ids[AX_LW_N] = {AX_P_QKVW, AX_P_PROJW, AX_P_FCW, AX_P_FCPW};
enum { AX_PHASE_FWD, AX_PHASE_BWD, AX_PHASE_RECOMPUTE };

static const ax_linear *fc_layer(const ax_gpt *m, ax_layer_weight i) {
    const ax_linear *all[AX_LW_N] = {&m->qkv, &m->proj, &m->fc, &m->fcproj};
    return all[i];
}

static int fc_key(int l, ax_layer_weight i) { return AX_LW_N * l + i; }

/* Under context parallelism the global positions of the rows of Bl
 * sequences of T tokens (grid.h: ax_grid_cp_pos), where the kernels read
 * them, written when T changes; NULL (row i at i % T) without it. */
static const int32_t *positions(ax_gpt *m, int Bl, int T) {
    ax_grid *g = m->g;
    if (g->gc == 1) return NULL;
    if (m->cp_pos_T != T || m->cp_pos_B < Bl) {
        int Tl = T / g->gc;
        int32_t *pos = ax_malloc((size_t)Bl * Tl * sizeof(int32_t));
        for (int i = 0; i < Bl * Tl; i++) pos[i] = ax_grid_cp_pos(g, T, i % Tl);
        ax_be()->copy(m->cp_pos, pos, (size_t)Bl * Tl * sizeof(int32_t));
        free(pos);
        m->cp_pos_T = T;
        m->cp_pos_B = Bl;
    }
    return m->cp_pos;
}

const float *ax_gpt_gather_wte(ax_gpt *m) {
    ax_grid *g = m->g;
    const float *w = ax_linear_weight(&m->lmhead, g, ax_gpt_param(m, 0), AX_F32, m->wte_block).data, *head = w;
    if (m->cfg.untied)
        head = ax_linear_weight(&m->lmhead, g, ax_gpt_param(m, AX_PID_HEAD(m)), AX_F32, m->head_block).data;
    if (m->dtype == AX_BF16 && g->gz > 1)
        ax_be()->cast(m->head_block_h, AX_BF16, head, AX_F32, ax_shard_numel(&m->lmhead.w, g) * g->gz);
    return w;
}

ax_mat ax_gpt_lm_weight(const ax_gpt *m) {
    int64_t off = m->p[m->cfg.untied ? AX_PID_HEAD(m) : 0].offset;
    const void *w = m->g->gz > 1          ? (m->dtype == AX_BF16 ? (void *)m->head_block_h : (void *)m->head_block)
                    : m->dtype == AX_BF16 ? (void *)(m->params_h + off)
                                          : (void *)(m->params + off);
    return ax_mat_of(w, m->dtype, m->lmhead.out_l, m->lmhead.in_l);
}

/* The weight after FC i of layer l in this phase's order: forward order, or
 * reversed in backward, where under block recomputation each layer's
 * forward runs again first. 0: none. */
static int next_fc(const ax_gpt *m, int l, ax_layer_weight i, int *nl, ax_layer_weight *ni) {
    *nl = l;
    if (m->phase != AX_PHASE_BWD) {
        if (i < AX_LW_FCPROJ) {
            *ni = i + 1;
            return 1;
        }
        if (m->phase == AX_PHASE_RECOMPUTE) {
            *ni = AX_LW_FCPROJ;
            return 1;
        } /* its backward starts with it */
        *nl = l + 1;
        *ni = AX_LW_QKV;
        return l + 1 < m->cfg.n_layer;
    }
    if (i > AX_LW_QKV) {
        *ni = i - 1;
        return 1;
    }
    *nl = l - 1;
    *ni = m->recompute == AX_RECOMPUTE_BLOCK ? AX_LW_QKV : AX_LW_FCPROJ;
    return l > 0;
}

static const void *fc_chunk(const ax_gpt *m, int l, ax_layer_weight i) {
    int64_t off = m->p[AX_PID(l, fc_ids[i])].offset;
    return m->dtype == AX_BF16 ? (const void *)(m->params_h + off) : (const void *)(m->params + off);
}

/* FC i of layer l, gathered over Z in the dtype the GEMMs read; with OAG the
 * next weight's gather starts now, to run behind this one's GEMMs */
static ax_mat layer_weight(ax_gpt *m, int l, ax_layer_weight i) {
    const ax_linear *L = fc_layer(m, i);
    ax_mat W = ax_zfetch_get(&m->wf, fc_key(l, i), fc_chunk(m, l, i), ax_shard_numel(&L->w, m->g), L->out_l, L->in_l);
    int nl;
    ax_layer_weight ni;
    if ((m->overlap & AX_OV_OAG) && next_fc(m, l, i, &nl, &ni))
        ax_zfetch_start(&m->wf, fc_key(nl, ni), fc_chunk(m, nl, ni), ax_shard_numel(&fc_layer(m, ni)->w, m->g));
    return W;
}

/* the architecture's norm, LayerNorm (weight, bias) or RMSNorm (weight),
 * writing out in the model's dtype; with bias and/or res, the residual add
 * before it, x = (x + bias) + res, fused in (backend.h) */
static void norm_forward(ax_gpt *m, void *out, float *mean, float *rstd, float *x, const float *bias, const float *res,
                         const float *w, const float *b, int M, float *scratch) {
    if (m->rms) ax_rmsnorm_forward(&m->g->X, out, m->dtype, rstd, x, bias, res, w, M, m->Cx, m->cfg.n_embd, m->eps);
    else
        ax_layernorm_forward(&m->g->X, out, m->dtype, mean, rstd, x, bias, res, w, b, M, m->Cx, m->cfg.n_embd, m->eps,
                             scratch);
}

static void norm_backward(ax_gpt *m, float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                          const float *mean, const float *rstd, int M) {
    if (m->rms) ax_rmsnorm_backward(&m->g->X, dx, dw, dout, x, w, rstd, M, m->Cx, m->cfg.n_embd, m->scratch);
    else ax_layernorm_backward(&m->g->X, dx, dw, db, dout, x, w, mean, rstd, M, m->Cx, m->cfg.n_embd, m->scratch);
}

void ax_gpt_final_norm(ax_gpt *m, void *out, float *mean, float *rstd, const float *x, int M, float *scratch) {
    norm_forward(m, out, mean, rstd, (float *)x, NULL, NULL, ax_gpt_param(m, AX_PID_LNFW(m)),
                 ax_gpt_param(m, AX_PID_LNFB(m)), M, scratch); /* no residual: x only read */
}

/* Causal attention over Bl sequences of T rows on this rank, from the kept
 * q|k|v into a->atty and a->lse. Whole sequences: the kernels write atty in
 * the model's dtype. Under context parallelism the rank's two chunks of
 * each, the other chunks' keys and values coming around the C ring
 * (nn/ring_attention.h), whose chunks merge in fp32: into a->atty32, then
 * kept in dt as a GEMM output would be. */
static void attention_forward(ax_gpt *m, ax_layer_acts *a, int Bl, int T) {
    if (m->g->gc == 1) {
        ax_attention_forward(a->atty, a->lse, a->qkv, Bl, T, m->Hl, m->KVl, m->hd, m->dtype, m->att_scratch,
                             m->att_threads);
        return;
    }
    ax_ring_attention_forward(&m->g->C, a->atty32, a->lse, a->qkv, Bl, T / 2, m->Hl, m->KVl, m->hd, m->dtype,
                              m->ring_ws, m->att_scratch, m->att_threads);
    ax_bias_round(a->atty32, a->atty, m->dtype, NULL, Bl * T, m->proj.in_l);
}

/* its backward: dout (Bl*T, Cl) into dqkv (Bl*T, qkv width) */
static void attention_backward(ax_gpt *m, ax_layer_acts *a, float *dqkv, const float *dout, int Bl, int T) {
    if (m->g->gc > 1)
        ax_ring_attention_backward(&m->g->C, dqkv, dout, a->atty32, a->lse, a->qkv, Bl, T / 2, m->Hl, m->KVl, m->hd,
                                   m->dtype, m->ring_ws, m->att_scratch, m->att_threads);
    else
        ax_attention_backward(dqkv, dout, a->atty, a->lse, a->qkv, Bl, T, m->Hl, m->KVl, m->hd, m->dtype,
                              m->att_scratch, m->att_threads);
}

void ax_gpt_layer_forward(ax_gpt *m, int l, ax_layer_acts *a, const float *h, int Bl, int T, const int32_t *pos,
                          float *scratch, ax_attend_fn attend, void *ctx) {
    int M = Bl * T;
    ax_dtype dt = m->dtype;
#define P(k) ax_gpt_param(m, AX_PID(l, k))
    norm_forward(m, a->ln1, a->ln1_mean, a->ln1_rstd, (float *)h, NULL, NULL, P(AX_P_LN1W), P(AX_P_LN1B), M, scratch);
    /* q|k|v: the GEMM's product, its bias, rotary embedding, then kept in dt
     * (the bias in the GEMM's epilogue, no fp32 copy, where no rotary
     * embedding or decoding attention needs one); the attention reads the
     * kept values and writes its output in dt */
    const float *qb = P(AX_P_QKVB);
    ax_mat ln1 = ax_gpt_act(m, a->ln1, M, m->qkv.in_l), qkvw = layer_weight(m, l, AX_LW_QKV);
    if (m->rope_on || attend) { /* rotary embedding, or a decoding attention, on the fp32 values */
        ax_linear_forward(&m->qkv, qkvw, NULL, ln1, a->qkv32);
        if (m->rope_on) {
            if (qb) ax_be()->bias_add(a->qkv32, qb, M, m->qkv.out_l);
            qb = NULL;
            ax_rope_forward(&m->rope, a->qkv32, m->qkv.out_l, M, T, pos, m->Hl + m->KVl); /* q and k heads */
        }
        ax_bias_round(a->qkv32, a->qkv, dt, qb, M, m->qkv.out_l);
    } else ax_linear_forward_bias_to(&m->qkv, qkvw, qb, ln1, ax_mat_of(a->qkv, dt, M, m->qkv.out_l), a->qkv32);
    if (attend) { /* it writes fp32 into atty32 */
        attend(ctx, m, l, a);
        ax_bias_round(a->atty32, a->atty, dt, NULL, M, m->proj.in_l);
    } else attention_forward(m, a, Bl, T);
    /* res2 = (proj + bias) + h and ln2 = norm(res2) in one kernel */
    ax_linear_forward(&m->proj, layer_weight(m, l, AX_LW_PROJ), NULL, ax_gpt_act(m, a->atty, M, m->proj.in_l), a->res2);
    norm_forward(m, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, P(AX_P_PROJB), h, P(AX_P_LN2W), P(AX_P_LN2B), M,
                 scratch);
    /* fch = fcy + bias and fch_act = act(fch), both in dt: GELU's in fc's
     * epilogue where the backend has one, else in one kernel after it */
    ax_mat ln2 = ax_gpt_act(m, a->ln2, M, m->fc.in_l), fcw = layer_weight(m, l, AX_LW_FC);
    if (m->swiglu) {
        ax_linear_forward(&m->fc, fcw, NULL, ln2, a->fcy);
        ax_swiglu_forward(a->fch_act, dt, a->fch, dt, a->fcy, M, m->fcproj.in_l);
    } else
        ax_linear_forward_gelu(&m->fc, fcw, P(AX_P_FCB), ln2, ax_mat_of(a->fch_act, dt, M, m->fc.out_l), a->fch,
                               a->fcy);
    ax_linear_forward(&m->fcproj, layer_weight(m, l, AX_LW_FCPROJ), P(AX_P_FCPB),
                      ax_gpt_act(m, a->fch_act, M, m->fcproj.in_l), a->res3);
    ax_add_inplace(a->res3, a->res2, (size_t)M * m->Cx);
#undef P
}

/* a host array of the micro-batch where the kernels read it: itself on a
 * backend of host memory, else copied into the backend's buffer dev, queued
 * behind the work before it where the backend can (no wait for the device) */
static const void *to_kernels(void *dev, const void *host, size_t bytes) {
    const ax_backend *be = ax_be();
    if (!host || be->host_memory) return host;
    (be->copy_async ? be->copy_async : be->copy)(dev, host, bytes);
    return dev;
}

/* rows [r0, r0 + n) of the final norm's output as the LM head's GEMMs read them */
static ax_mat lnf_rows(const ax_gpt *m, int r0, int n) {
    return ax_gpt_act(m, (const char *)m->lnf + (size_t)r0 * m->Cx * ax_dtype_size(m->dtype), n, m->Cx);
}

static int chunk_rows(const ax_gpt *m, int M) {
    int R = ax_gpt_logit_rows_in(M, m->Vl, m->logit_bytes);
    return m->logit_rows_max > 0 && m->logit_rows_max < R ? m->logit_rows_max : R;
}

void ax_gpt_logits(ax_gpt *m, float *out, int r0, int n) {
    ax_linear_forward(&m->lmhead, ax_gpt_lm_weight(m), NULL, lnf_rows(m, r0, n), out);
}

/* The LM head's weight gradient, ready to accumulate into: its own chunk
 * (Gz = 1), or the gathered block (Gz > 1), zeroed once the last
 * micro-batch's reduce-scatters have left it. The token table's block too
 * (the embedding's backward adds to it). */
static float *head_grad_begin(ax_gpt *m) {
    ax_grid *g = m->g;
    int untied = m->cfg.untied;
    int64_t nt = ax_shard_numel(&m->lmhead.w, g);
    ax_zscatter_drain(&m->ws.rs); /* the last micro-batch's, before their blocks are reused */
    if (g->gz == 1) return ax_gpt_grad(m, untied ? AX_PID_HEAD(m) : 0);
    ax_be()->zero(m->wte_gblock, nt * g->gz * sizeof(float));
    if (untied) ax_be()->zero(m->head_gblock, nt * g->gz * sizeof(float));
    return m->head_gblock;
}

/* Logits, loss and (dscale, in the backend's memory, not NULL) the LM
 * head's backward, chunk of rows by chunk: dlnf (M, Cx) into dx, completed
 * over Y once at the end, and the head's gradient += dlogits^T lnf. Every row's arithmetic is the one of a
 * single pass over all rows; only the head gradient's sum over rows is cut
 * at chunk boundaries. */
static void classifier(ax_gpt *m, const int32_t *targets, const float *weights, int M, const float *dscale) {
    ax_grid *g = m->g;
    int R = chunk_rows(m, M), Cx = m->Cx, Vl = m->Vl, train = dscale != NULL;
    ax_mat head = ax_gpt_lm_weight(m);
    float *dhead = train ? head_grad_begin(m) : NULL;
    for (int r0 = 0; r0 < M; r0 += R) {
        int n = M - r0 < R ? M - r0 : R;
        ax_mat x = lnf_rows(m, r0, n);
        /* the logits in the GEMMs' dtype (bf16: in dy_h, from an fp32 sum in
         * m->logits where G_x > 1 reduces one), then their gradient in place */
        ax_mat dl = ax_mat_of(m->dtype == AX_BF16 ? (void *)m->dy_h : (void *)m->logits, m->dtype, n, Vl);
        ax_linear_forward_to(&m->lmhead, head, x, dl, m->logits);
        ax_xent_forward_backward(&g->Y, dl.data, m->losses + r0, targets + r0, weights ? weights + r0 : NULL, n, Vl,
                                 m->v0, m->cfg.vocab_size, dscale, dl.data, m->dtype, m->scratch);
        if (!train) continue;
        ax_gemm(1.0f, dl, 0, head, 0, 0.0f, ax_mat_f32(m->dx + (size_t)r0 * Cx, n, Cx));
        ax_gemm(1.0f, dl, 1, x, 0, 1.0f, ax_mat_f32(dhead, Vl, Cx));
    }
    if (train) ax_allreduce_f32(&g->Y, m->dx, (size_t)M * Cx);
}

void ax_gpt_forward_queue(ax_gpt *m, const int32_t *inputs, const int32_t *targets, const float *weights, int Bl, int T,
                          const float *dscale) {
    ax_gpt_alloc_acts(m, Bl, T);
    ax_grid *g = m->g;
    const int32_t *pos = positions(m, Bl, T);
    int Tseq = T; /* the positions of a sequence, this rank's rows among them */
    T /= g->gc;   /* from here the rows of a sequence on this rank */
    int M = Bl * T, Cx = m->Cx;
    inputs = to_kernels(m->dev_inputs, inputs, (size_t)M * sizeof(int32_t));
    m->phase = AX_PHASE_FWD;
    ax_zfetch_reset(&m->wf); /* the weights may have changed since the last gather */
    if (m->dtype == AX_BF16 && !m->params_h_current)
        ax_be()->cast(m->params_h, AX_BF16, m->params, AX_F32, m->n_zchunk);
    m->params_h_current = m->dtype == AX_BF16;
    const float *wte = ax_gpt_gather_wte(m);
    ax_embedding_forward(&g->Y, m->encoded, inputs, pos, wte, ax_gpt_param(m, 1), M, Tseq, m->v0, m->Vl, Cx);
    const float *h = m->encoded;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        ax_gpt_layer_forward(m, l, &m->L[l], h, Bl, T, pos, m->scratch, NULL, NULL);
        h = m->L[l].res3;
    }
    ax_gpt_final_norm(m, m->lnf, m->lnf_mean, m->lnf_rstd, h, M, m->scratch);
    if (!targets) return;
    m->kweights = to_kernels(m->dev_weights, weights, (size_t)M * 4);
    classifier(m, to_kernels(m->dev_targets, targets, (size_t)M * 4), m->kweights, M,
               to_kernels(m->dev_scale, dscale, sizeof(float)));
}

void ax_gpt_loss_begin(ax_gpt *m) { ax_be()->zero(m->loss_acc, sizeof(double)); }

void ax_gpt_loss_add(ax_gpt *m, int M) { ax_be()->wsum(m->loss_acc, m->losses, m->kweights, M); }

double ax_gpt_loss_read(ax_gpt *m) {
    double s;
    ax_be()->copy(&s, m->loss_acc, sizeof s);
    return s;
}

double ax_gpt_forward(ax_gpt *m, const int32_t *inputs, const int32_t *targets, const float *weights, int Bl, int T,
                      float dscale) {
    ax_gpt_forward_queue(m, inputs, targets, weights, Bl, T, dscale != 0.0f ? &dscale : NULL);
    if (!targets) return 0.0;
    ax_gpt_loss_begin(m);
    ax_gpt_loss_add(m, Bl * (T / m->g->gc)); /* this rank's rows */
    return ax_gpt_loss_read(m);
}

/* Layer l's backward: dres (the gradient of its output) becomes that of its
 * input, and its parameters' gradients accumulate. Its activations are
 * rebuilt first, bit for bit, where the recompute mode did not keep them. */
static void layer_backward(ax_gpt *m, int l, int Bl, int T, const int32_t *pos) {
    ax_grid *g = m->g;
    int M = Bl * T;
    ax_layer_acts *a = &m->L[l];
    const float *h = l ? m->L[l - 1].res3 : m->encoded;
    /* shared buffers hold the last layer's activations after forward; the
     * others are rebuilt, bit for bit, from what was kept */
    int last = l == m->cfg.n_layer - 1, fresh = last || m->recompute == AX_RECOMPUTE_BLOCK;
    if (m->recompute == AX_RECOMPUTE_BLOCK && !last) {
        m->phase = AX_PHASE_RECOMPUTE;
        ax_gpt_layer_forward(m, l, a, h, Bl, T, pos, m->scratch, NULL, NULL);
    }
    m->phase = AX_PHASE_BWD;
    /* under bf16 the ring's fp32 output is one buffer for all layers: this
     * layer's kept output widened into it, unless its forward just ran
     * (whole sequences read the kept output itself) */
    if (m->recompute == AX_RECOMPUTE_ATTN && !last) attention_forward(m, a, Bl, T);
    else if (m->dtype == AX_BF16 && g->gc > 1 && !fresh)
        ax_be()->cast(a->atty32, AX_F32, a->atty, AX_BF16, (size_t)M * m->proj.in_l);
#define P(k) ax_gpt_param(m, AX_PID(l, k))
#define G(k) ax_gpt_grad(m, AX_PID(l, k))
    ax_dtype dt = m->dtype;
    /* MLP: res3 = res2 + fcproj(act(fc(norm2(res2)))) */
    ax_linear_backward(&m->fcproj, g, layer_weight(m, l, AX_LW_FCPROJ), ax_gpt_act(m, a->fch_act, M, m->fcproj.in_l),
                       ax_mat_f32(m->dres, M, m->Cx), m->dx, G(AX_P_FCPW), G(AX_P_FCPB), &m->ws, m->dy_h);
    /* the MLP hidden's gradient, written in dt for the GEMMs (GELU's fused
     * with fc's bias gradient), then the norm output's; out of place, which
     * is faster than in place (figures: docs/design.md, Choices and why) */
    void *dfc = m->dhidden;
    float *dln2 = m->dx;
    if (m->swiglu) ax_swiglu_backward(dfc, dt, a->fch, dt, m->dx, M, m->fcproj.in_l);
    else ax_gelu_backward(dfc, dt, G(AX_P_FCB), a->fch, dt, m->dx, M, m->fc.out_l);
    ax_linear_backward(&m->fc, g, layer_weight(m, l, AX_LW_FC), ax_gpt_act(m, a->ln2, M, m->fc.in_l),
                       ax_mat_of(dfc, dt, M, m->fc.out_l), dln2, G(AX_P_FCW), NULL, &m->ws, m->dy_h);
    norm_backward(m, m->dres, G(AX_P_LN2W), G(AX_P_LN2B), dln2, a->res2, P(AX_P_LN2W), a->ln2_mean, a->ln2_rstd, M);
    /* attention: res2 = h + proj(attend(rope(qkv(norm1(h))))) */
    ax_linear_backward(&m->proj, g, layer_weight(m, l, AX_LW_PROJ), ax_gpt_act(m, a->atty, M, m->proj.in_l),
                       ax_mat_f32(m->dres, M, m->Cx), m->dx, G(AX_P_PROJW), G(AX_P_PROJB), &m->ws, m->dy_h);
    attention_backward(m, a, m->dhidden, m->dx, Bl, T);
    if (m->rope_on) ax_rope_backward(&m->rope, m->dhidden, m->qkv.out_l, M, T, pos, m->Hl + m->KVl);
    ax_linear_backward(&m->qkv, g, layer_weight(m, l, AX_LW_QKV), ax_gpt_act(m, a->ln1, M, m->qkv.in_l),
                       ax_mat_f32(m->dhidden, M, m->qkv.out_l), m->dx, G(AX_P_QKVW), G(AX_P_QKVB), &m->ws, m->dy_h);
    norm_backward(m, m->dres, G(AX_P_LN1W), G(AX_P_LN1B), m->dx, h, P(AX_P_LN1W), a->ln1_mean, a->ln1_rstd, M);
    ax_gpt_buckets_layer_done(m, l);
#undef P
#undef G
}

void ax_gpt_backward(ax_gpt *m, const int32_t *inputs, int Bl, int T) {
    ax_grid *g = m->g;
    const int32_t *pos = positions(m, Bl, T); /* as the forward left them */
    int Tseq = T;                             /* the positions of a sequence */
    T /= g->gc;                               /* the rows of a sequence on this rank */
    int M = Bl * T, Cx = m->Cx, untied = m->cfg.untied;
    /* the LM head's and the embedding's gradients: the same table when tied, a
     * full block to reduce-scatter over Z when Gz > 1; the classifier in
     * forward has left dlnf in dx and readied the blocks (head_grad_begin) */
    float *dhead = g->gz == 1 ? ax_gpt_grad(m, untied ? AX_PID_HEAD(m) : 0) : m->head_gblock;
    float *dwte = g->gz == 1 ? ax_gpt_grad(m, 0) : m->wte_gblock;
    if (!ax_be()->host_memory) inputs = m->dev_inputs; /* sent by this micro-batch's forward */
    const float *hlast = m->L[m->cfg.n_layer - 1].res3;
    ax_be()->zero(m->dres, (size_t)M * Cx * sizeof(float));
    norm_backward(m, m->dres, ax_gpt_grad(m, AX_PID_LNFW(m)), ax_gpt_grad(m, AX_PID_LNFB(m)), m->dx, hlast,
                  ax_gpt_param(m, AX_PID_LNFW(m)), m->lnf_mean, m->lnf_rstd, M);
    for (int l = m->cfg.n_layer - 1; l >= 0; l--) layer_backward(m, l, Bl, T, pos);
    ax_embedding_backward(dwte, ax_gpt_grad(m, 1), m->dres, inputs, pos, M, Tseq, m->v0, m->Vl, Cx);
    if (g->gz > 1) {
        ax_linear_reduce_grad(&m->lmhead, g, dwte, ax_gpt_grad(m, 0), &m->ws);
        if (untied) ax_linear_reduce_grad(&m->lmhead, g, dhead, ax_gpt_grad(m, AX_PID_HEAD(m)), &m->ws);
    }
    ax_gpt_buckets_layer_done(m, -1); /* the lowest layers' bucket (its reduce-scatters had the embedding's time) */
}

double ax_gpt_sumsq(ax_gpt *m, const float *flat) {
    double s = 0;
    const float *x[AX_SUMSQ_RANGES];
    size_t len[AX_SUMSQ_RANGES];
    int k = 0;
    for (int i = 0; i < m->np; i++) {
        if (!m->p[i].present) continue;
        k += ax_shard_sumsq_ranges(&m->p[i].shard, m->g, flat + m->p[i].offset, x + k, len + k);
        if (k > AX_SUMSQ_RANGES - 2) {
            s += ax_be()->sumsq(k, x, len);
            k = 0;
        }
    }
    if (k) s += ax_be()->sumsq(k, x, len);
    ax_allreduce_f64(&m->g->tp, &s, 1);
    return s;
}
