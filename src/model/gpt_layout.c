/* A rank's shapes, parameter counts and activation buffer sizes, from the
 * config and the grid's sizes alone: gpt.c lays the model out from them, and
 * the planner (plan/model.c) counts its memory from them. */
#include "model/gpt.h"
#include "nn/ring_attention.h"
#include <stdlib.h>
#include <string.h>

static int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

int ax_gpt_logit_rows_in(int64_t M, int64_t Vl, int64_t bytes) {
    int64_t r = bytes / (4 * (Vl > 0 ? Vl : 1)) / 64 * 64;
    if (r < 64) r = 64;
    return (int)(r < M ? r : M);
}

int ax_gpt_logit_rows(int64_t M, int64_t Vl) { return ax_gpt_logit_rows_in(M, Vl, AX_LOGITS_CHUNK_BYTES); }

int64_t ax_gpt_logit_budget(void) {
    const ax_backend *be = ax_be();
    int64_t q = be->mem_free ? (int64_t)(be->mem_free() / 4) : 0;
    return q > AX_LOGITS_CHUNK_BYTES ? q : AX_LOGITS_CHUNK_BYTES;
}

void ax_gpt_act_sizes(const ax_gpt_config *given, const int g[4], int cp, int B, int T, ax_recompute recompute,
                      ax_dtype dtype, ax_gpt_acts *s) {
    ax_gpt_act_sizes_in(given, g, cp, B, T, recompute, dtype, AX_LOGITS_CHUNK_BYTES, s);
}

void ax_gpt_act_sizes_in(const ax_gpt_config *given, const int g[4], int cp, int B, int T, ax_recompute recompute,
                         ax_dtype dtype, int64_t logit_bytes, ax_gpt_acts *s) {
    ax_grid sizes = {.gd = g[0], .gx = g[1], .gy = g[2], .gz = g[3], .gc = 1, .size = g[0] * g[1] * g[2] * g[3]};
    ax_gpt m; /* only its shapes are set: the FC layers' splits as ax_gpt_init makes them */
    memset(&m, 0, sizeof m);
    m.cfg = *given;
    ax_gpt_config_defaults(&m.cfg);
    m.g = &sizes;
    ax_gpt_shapes(&m);
    /* q|k|v, the MLP's first FC and its activation's widths per rank */
    int64_t Tl = T / cp, M = (int64_t)B * Tl, Cx = m.Cx, Cy = m.Cy, Q = m.qkv.out_l, Fc = m.fc.out_l,
            Fa = m.fcproj.in_l, Vl = m.Vl;
    int64_t wide = Cx; /* widest row a backward scratch holds */
    if (Q > wide) wide = Q;
    if (Fc > wide) wide = Fc;
    int64_t R = ax_gpt_logit_rows_in(M, Vl, logit_bytes); /* the classifier's chunk of rows */
    int64_t dy = M * wide > R * Vl ? M * wide : R * Vl;   /* a backward GEMM's dy, or a chunk's bf16 logits */
    int block = recompute == AX_RECOMPUTE_BLOCK, attn = recompute != AX_RECOMPUTE_NONE, h = dtype == AX_BF16;
    /* DHIDDEN holds the fp32 q|k|v gradient, or the MLP hidden's in the GEMMs' dtype */
    int64_t dhidden = M * (Q > Cx ? Q : Cx), dfc = h ? (M * Fc + 1) / 2 : M * Fc;
    if (dfc > dhidden) dhidden = dfc;
#define F32(n, k)  ((ax_gpt_act_buf){(n), (k)})
#define BF16(n, k) ((ax_gpt_act_buf){((n) + 1) / 2, (k)}) /* two bf16 to a float */
#define ACT(n, k)  (h ? BF16(n, k) : F32(n, k))           /* in the GEMMs' dtype */
    *s = (ax_gpt_acts){
        .n_layer = m.cfg.n_layer,
        .buf[AX_ACT_ENCODED] = F32(M * Cx, 0),
        .buf[AX_ACT_LN1] = ACT(M * Cx, !block),
        .buf[AX_ACT_LN1_MEAN] = F32(M, !block),
        .buf[AX_ACT_LN1_RSTD] = F32(M, !block),
        .buf[AX_ACT_QKV] = ACT(M * Q, !block),
        .buf[AX_ACT_LSE] = F32((int64_t)B * m.Hl * Tl, !attn),
        .buf[AX_ACT_ATTY] = ACT(M * Cy, !attn),
        .buf[AX_ACT_RES2] = F32(M * Cx, !block),
        .buf[AX_ACT_LN2] = ACT(M * Cx, !block),
        .buf[AX_ACT_LN2_MEAN] = F32(M, !block),
        .buf[AX_ACT_LN2_RSTD] = F32(M, !block),
        /* under bf16 the up-projection's fp32 output goes to DX (forward does
         * not use it), its fused bias + activation writes these two */
        .buf[AX_ACT_FCH] = ACT(M * Fc, !block),
        .buf[AX_ACT_FCH_ACT] = ACT(M * Fa, !block),
        .buf[AX_ACT_RES3] = F32(M * Cx, 1), /* the next layer's input: always kept */
        /* bf16 under context parallelism: ring attention's output, fp32 as
         * its chunks merge, one for all layers (the attention reads the kept
         * bf16 q|k|v, and without a ring writes the bf16 output itself; the
         * q|k|v GEMM's fp32 output goes to DX) */
        .buf[AX_ACT_ATTY32] = F32(h && cp > 1 ? M * Cy : 0, 0),
        .buf[AX_ACT_DY_H] = BF16(h ? dy : 0, 0),
        .buf[AX_ACT_LNF] = ACT(M * Cx, 0),
        .buf[AX_ACT_LNF_MEAN] = F32(M, 0),
        .buf[AX_ACT_LNF_RSTD] = F32(M, 0),
        /* bf16: only the fp32 sum of the LM head's all-reduce, over X (ax_linear_forward_to) */
        .buf[AX_ACT_LOGITS] = F32(h && g[1] == 1 ? 0 : R * Vl, 0),
        .buf[AX_ACT_LOSSES] = F32(M, 0),
        .buf[AX_ACT_DRES] = F32(M * Cx, 0),
        .buf[AX_ACT_DX] = F32(M * wide, 0),
        .buf[AX_ACT_DHIDDEN] = F32(dhidden, 0),
        .buf[AX_ACT_SCRATCH] = F32(4 * M, 0),
        /* the key/value chunks in flight and their gradients, shared by all layers */
        .buf[AX_ACT_RING] = F32(cp > 1 ? (int64_t)ax_ring_workspace_floats(B, T / (2 * cp), m.KVl, m.hd) : 0, 0),
        .buf[AX_ACT_CP_POS] = F32(cp > 1 ? M : 0, 0),
    };
#undef ACT
#undef BF16
#undef F32
}

int64_t ax_gpt_act_floats(const ax_gpt_acts *s) {
    int64_t n = 0;
    for (int i = 0; i < AX_ACT_N; i++) n += s->buf[i].floats * (s->buf[i].per_layer ? s->n_layer : 1);
    return n;
}

/* m->cfg (defaulted) and m->g set: the FC layers' splits and the sizes they
 * imply; reads only the grid's sizes (and its coordinates for v0) */
void ax_gpt_shapes(ax_gpt *m) {
    const ax_gpt_config *c = &m->cfg;
    ax_grid *g = m->g;
    int C = c->n_embd, H = c->n_head, KV = c->n_kv_head, F = c->n_inner, llama = c->arch == AX_ARCH_LLAMA;
    m->rms = m->swiglu = m->rope_on = llama;
    m->bias = !llama;
    m->eps = c->norm_eps;
    m->Vp = (int)round_up(c->vocab_size, 64 * g->gy);
    m->Vl = m->Vp / g->gy;
    m->v0 = g->y * m->Vl;
    m->Cx = C / g->gx;
    m->Cy = C / g->gy;
    m->hd = C / H;
    m->Hl = H / g->gy;
    m->KVl = KV >= g->gy ? KV / g->gy : 1;
    int64_t qkv_parts[3] = {(int64_t)H * m->hd, (int64_t)KV * m->hd, (int64_t)KV * m->hd}, fc_parts[2] = {F, F};
    int64_t heads[3] = {m->hd, m->hd, m->hd}; /* q, k and v are cut only between heads */
    ax_linear_init(&m->qkv, g, C, (H + 2 * KV) * m->hd,
                   (ax_linear_opts){.nparts = 3, .part = qkv_parts, .unit = heads});
    ax_linear_init(&m->proj, g, C, C, (ax_linear_opts){.transposed = 1});
    if (m->swiglu) ax_linear_init(&m->fc, g, C, 2 * F, (ax_linear_opts){.nparts = 2, .part = fc_parts});
    else ax_linear_init(&m->fc, g, C, F, (ax_linear_opts){0});
    ax_linear_init(&m->fcproj, g, F, C, (ax_linear_opts){.transposed = 1});
    ax_linear_init(&m->lmhead, g, C, c->vocab_size, (ax_linear_opts){.out_pad = m->Vp});
}

void ax_gpt_param_sizes(const ax_gpt_config *given, const int g[4], ax_gpt_params *s) {
    ax_grid sizes = {.gd = g[0], .gx = g[1], .gy = g[2], .gz = g[3], .gc = 1, .size = g[0] * g[1] * g[2] * g[3]};
    ax_gpt m; /* only its shapes and parameter table are set */
    memset(&m, 0, sizeof m);
    m.cfg = *given;
    ax_gpt_config_defaults(&m.cfg);
    m.g = &sizes;
    ax_gpt_shapes(&m);
    ax_gpt_build_table(&m);
    const ax_linear *fcs[AX_LW_N] = {&m.qkv, &m.proj, &m.fc, &m.fcproj};
    *s = (ax_gpt_params){.n_local = m.n_local, .n_zchunk = m.n_zchunk, .table = ax_shard_numel(&m.lmhead.w, &sizes)};
    for (int i = 0; i < AX_LW_N; i++)
        if (ax_shard_numel(&fcs[i]->w, &sizes) * sizes.gz > s->gathered)
            s->gathered = ax_shard_numel(&fcs[i]->w, &sizes) * sizes.gz;
    free(m.p);
}
