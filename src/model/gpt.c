/* The transformer on the 4D grid (GPT-2 or Llama): its configuration, parameter table, activations and settings; the
 * step that runs it is gpt_step.c. */
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
#include "util/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/* The one place the zero fields of a config get their values (axonn.h states them). */
void ax_gpt_config_defaults(ax_gpt_config *c) {
    if (!c->n_kv_head) c->n_kv_head = c->n_head;
    if (!c->n_inner) c->n_inner = 4 * c->n_embd;
    if (!(c->norm_eps > 0)) c->norm_eps = 1e-5f;
    if (c->arch == AX_ARCH_LLAMA && !(c->rope_theta > 0)) c->rope_theta = 10000.0;
}

int64_t ax_gpt_num_params(const ax_gpt_config *given) {
    ax_gpt_config d = *given, *c = &d;
    ax_gpt_config_defaults(c);
    int64_t C = c->n_embd, F = c->n_inner, V = c->vocab_size, hd = C / (c->n_head ? c->n_head : 1);
    int64_t qkv = (c->n_head + 2 * c->n_kv_head) * hd;
    if (c->arch == AX_ARCH_LLAMA) /* RMSNorm weights, no biases, SwiGLU's three matrices */
        return V * C * (c->untied ? 2 : 1) + C + c->n_layer * (2 * C + C * qkv + C * C + 3 * C * F);
    return V * C + (int64_t)c->block_size * C + 2 * C +
           c->n_layer * (4 * C + C * qkv + qkv + C * C + C + 2 * C * F + F + C);
}

int ax_gpt_check_grid(const ax_gpt_config *given, const ax_grid *g) {
    ax_gpt_config d = *given, *c = &d;
    ax_gpt_config_defaults(c);
    int C = c->n_embd, KV = c->n_kv_head, F = c->n_inner, llama = c->arch == AX_ARCH_LLAMA;
    if (c->n_layer < 1 || c->n_head < 1 || C < 1 || c->block_size < 1 || c->vocab_size < 2 || KV < 1 || F < 1)
        return AX_ERR(
            "model: n_layer, n_head, n_kv_head, n_embd, n_inner, n_positions must be >= 1 and vocab_size >= 2");
    if (c->arch != AX_ARCH_GPT2 && !llama) return AX_ERR("model: unknown architecture %d", c->arch);
    if (C % c->n_head) return AX_ERR("model: n_embd %d is not divisible by n_head %d", C, c->n_head);
    if (c->n_head % KV)
        return AX_ERR("model: n_head %d is not divisible by n_kv_head %d (grouped-query attention)", c->n_head, KV);
    if (llama && (C / c->n_head) % 2)
        return AX_ERR("model: head size %d is odd (rotary embeddings rotate pairs)", C / c->n_head);
    if (c->n_head % g->gy)
        return AX_ERR("--grid: n_head %d is not divisible by G_y = %d (heads are split over Y)", c->n_head, g->gy);
    /* Split over Y, or (fewer than G_y) each replicated over G_y / KV shards.
     * A shard's n_head / G_y query heads then read one key/value head: a
     * group of n_head / KV = (n_head / G_y) (G_y / KV) query heads never
     * straddles two shards. Any other count would give shards unequal heads. */
    if (KV % g->gy && g->gy % KV)
        return AX_ERR("--grid: n_kv_head %d and G_y = %d: one must divide the other (key/value heads are split "
                      "over Y, or each replicated over G_y / n_kv_head Y shards)",
                      KV, g->gy);
    if (F % g->gy) return AX_ERR("--grid: n_inner %d is not divisible by G_y = %d", F, g->gy);
    if (C % g->gx) return AX_ERR("--grid: n_embd %d is not divisible by G_x = %d", C, g->gx);
    return 0;
}

/* How a parameter is stored, optimised and initialised (ax_param's fields):
 * a bitmask. Random init is N(0, std) when std > 0, else INIT_ONES or zeros. */
enum {
    INIT_ZEROS = 0, /* biases */
    HF_T = 1,       /* stored [in, out] in Hugging Face files (GPT-2's Conv1D) */
    DECAY = 2,      /* AdamW weight decay applies (matrices) */
    INIT_ONES = 4,  /* norm weights */
};

typedef struct {
    int k;
    const char *name;
    const ax_shard *sh;
    int flags;
    double std;
} slot;

static void add_param(ax_gpt *m, int id, const char *name, const ax_shard *s, int flags, double std) {
    ax_param *p = &m->p[id];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->present = 1;
    p->shard = *s;
    p->hf_transposed = !!(flags & HF_T);
    p->decay = !!(flags & DECAY);
    p->init_std = std;
    p->init_one = !!(flags & INIT_ONES);
    p->numel = ax_shard_numel(s, m->g);
}

/* a fused tensor stored as parts: rows of each source tensor, in order */
static void add_sources(ax_param *p, const char *fmt, int l, const char *const *names, const int64_t *rows, int n) {
    p->nsrc = n;
    for (int i = 0; i < n; i++) {
        snprintf(p->src[i], sizeof p->src[i], fmt, l, names[i]);
        p->src_rows[i] = rows[i];
    }
}

void ax_gpt_build_table(ax_gpt *m) {
    const ax_gpt_config *c = &m->cfg;
    int C = c->n_embd, L = c->n_layer, llama = c->arch == AX_ARCH_LLAMA;
    double std = 0.02, res_std = llama ? 0.02 : 0.02 / sqrt(2.0 * L); /* GPT-2 scales residual projections */
    char n[64];
    m->np = 5 + L * AX_P_PER_LAYER;
    m->p = ax_calloc(m->np, sizeof(ax_param));
    ax_shard vec_x = {.rows = 1, .cols = C, .col_axis = AX_AXIS_X};
    add_param(m, 0, llama ? "model.embed_tokens.weight" : "wte.weight", &m->lmhead.w, DECAY, std);
    if (!llama) {
        ax_shard wpe = {.rows = c->block_size, .cols = C, .col_axis = AX_AXIS_X};
        add_param(m, 1, "wpe.weight", &wpe, DECAY, std);
    }
    for (int l = 0; l < L; l++) {
        slot gpt2[] =
            {
                {AX_P_LN1W, "ln_1.weight", &vec_x, INIT_ONES},
                {AX_P_LN1B, "ln_1.bias", &vec_x, INIT_ZEROS},
                {AX_P_QKVW, "attn.c_attn.weight", &m->qkv.w, HF_T | DECAY, std},
                {AX_P_QKVB, "attn.c_attn.bias", &m->qkv.b, INIT_ZEROS},
                {AX_P_PROJW, "attn.c_proj.weight", &m->proj.w, HF_T | DECAY, res_std},
                {AX_P_PROJB, "attn.c_proj.bias", &m->proj.b, INIT_ZEROS},
                {AX_P_LN2W, "ln_2.weight", &vec_x, INIT_ONES},
                {AX_P_LN2B, "ln_2.bias", &vec_x, INIT_ZEROS},
                {AX_P_FCW, "mlp.c_fc.weight", &m->fc.w, HF_T | DECAY, std},
                {AX_P_FCB, "mlp.c_fc.bias", &m->fc.b, INIT_ZEROS},
                {AX_P_FCPW, "mlp.c_proj.weight", &m->fcproj.w, HF_T | DECAY, res_std},
                {AX_P_FCPB, "mlp.c_proj.bias", &m->fcproj.b, INIT_ZEROS},
            },
             llama_slots[] = {
                 {AX_P_LN1W, "input_layernorm.weight", &vec_x, INIT_ONES},
                 {AX_P_QKVW, "self_attn.qkv_proj.weight", &m->qkv.w, DECAY, std},
                 {AX_P_PROJW, "self_attn.o_proj.weight", &m->proj.w, DECAY, std},
                 {AX_P_LN2W, "post_attention_layernorm.weight", &vec_x, INIT_ONES},
                 {AX_P_FCW, "mlp.gate_up_proj.weight", &m->fc.w, DECAY, std},
                 {AX_P_FCPW, "mlp.down_proj.weight", &m->fcproj.w, DECAY, std},
             };
        const slot *e = llama ? llama_slots : gpt2;
        int ns = llama ? (int)(sizeof llama_slots / sizeof *llama_slots) : AX_P_PER_LAYER;
        for (int k = 0; k < ns; k++) {
            snprintf(n, sizeof n, llama ? "model.layers.%d.%s" : "h.%d.%s", l, e[k].name);
            add_param(m, AX_PID(l, e[k].k), n, e[k].sh, e[k].flags, e[k].std);
        }
        if (llama) { /* files keep q, k, v and gate, up apart */
            static const char *const qkv[] = {"q_proj", "k_proj", "v_proj"}, *const gu[] = {"gate_proj", "up_proj"};
            add_sources(&m->p[AX_PID(l, AX_P_QKVW)], "model.layers.%d.self_attn.%s.weight", l, qkv, m->qkv.w.part, 3);
            add_sources(&m->p[AX_PID(l, AX_P_FCW)], "model.layers.%d.mlp.%s.weight", l, gu, m->fc.w.part, 2);
        }
    }
    add_param(m, AX_PID_LNFW(m), llama ? "model.norm.weight" : "ln_f.weight", &vec_x, INIT_ONES, 0);
    if (!llama) add_param(m, AX_PID_LNFB(m), "ln_f.bias", &vec_x, INIT_ZEROS, 0);
    if (c->untied) add_param(m, AX_PID_HEAD(m), "lm_head.weight", &m->lmhead.w, DECAY, std);
    /* zchunk tensors first, then the replicated ones */
    int64_t off = 0;
    for (int pass = 1; pass >= 0; pass--)
        for (int i = 0; i < m->np; i++)
            if (m->p[i].present && m->p[i].shard.zchunk == pass) {
                m->p[i].offset = off;
                off += m->p[i].numel;
            }
    m->n_local = off;
    m->n_zchunk = 0;
    for (int i = 0; i < m->np; i++)
        if (m->p[i].shard.zchunk) m->n_zchunk += m->p[i].numel;
}

/* the parameters AdamW decays, as ranges of the flat buffer (neighbours
 * merged), sent where the optimizer's kernel reads them */
static void decay_ranges_init(ax_gpt *m) {
    int64_t *r = ax_malloc(2 * (size_t)m->np * sizeof(int64_t));
    int n = 0;
    for (int pass = 1; pass >= 0; pass--) /* the flat order of ax_gpt_build_table */
        for (int i = 0; i < m->np; i++) {
            const ax_param *p = &m->p[i];
            if (!p->present || p->shard.zchunk != pass || !p->decay || !p->numel) continue;
            if (n && r[2 * n - 1] == p->offset) r[2 * n - 1] += p->numel;
            else {
                r[2 * n] = p->offset;
                r[2 * n + 1] = p->offset + p->numel;
                n++;
            }
        }
    m->n_decay_ranges = n;
    m->decay_ranges = ax_be()->alloc((n ? n : 1) * 2 * sizeof(int64_t));
    ax_be()->copy(m->decay_ranges, r, (size_t)n * 2 * sizeof(int64_t));
    free(r);
}

int ax_gpt_init(ax_gpt *m, const ax_gpt_config *c, ax_grid *g) {
    memset(m, 0, sizeof *m);
    AX_TRY(ax_gpt_check_grid(c, g));
    m->cfg = *c;
    m->g = g;
    ax_gpt_config_defaults(&m->cfg);
    c = &m->cfg;
    ax_gpt_shapes(m);
    /* fewer key/value heads than G_y: the Y shards holding copies of one head
     * (consecutive y) sum their gradients; a subgroup of Y, split once */
    int64_t lo, hi;
    m->kv_copies = ax_shard_copies(&m->qkv.w, g, g->z, &lo, &hi);
    if (m->kv_copies > 1) ax_comm_split(&g->Y, g->y / m->kv_copies, g->y, &m->kv_group);
    if (m->rope_on) ax_rope_init(&m->rope, c, m->hd);
    ax_gpt_build_table(m);
    const ax_backend *be = ax_be();
    m->params = be->alloc(m->n_local * sizeof(float));
    m->loss_acc = be->alloc(sizeof(double));
    m->grads = be->alloc(m->n_local * sizeof(float));
    if (g->gz > 1) {
        size_t nb = ax_shard_numel(&m->lmhead.w, g) * g->gz * sizeof(float);
        m->wte_block = be->alloc(nb);
        m->wte_gblock = be->alloc(nb);
        m->head_block = c->untied ? be->alloc(nb) : m->wte_block;
        m->head_gblock = c->untied ? be->alloc(nb) : m->wte_gblock;
    }
    ax_gpt_set_overlap(m, AX_OV_NONE, 0, 0); /* no gathered weights kept; buckets of the default size */
    decay_ranges_init(m);
    return 0;
}

void ax_gpt_free(ax_gpt *m) {
    const ax_backend *be = ax_be();
    free(m->p);
    be->free(m->params);
    be->free(m->loss_acc);
    be->free(m->grads);
    ax_linear_ws_free(&m->ws);
    ax_zfetch_free(&m->wf);
    free(m->buckets);
    ax_gpt_zero_free(m);
    if (m->head_block != m->wte_block) {
        be->free(m->head_block);
        be->free(m->head_gblock);
    }
    be->free(m->wte_block);
    be->free(m->wte_gblock);
    be->free(m->params_h);
    be->free(m->head_block_h);
    ax_rope_free(&m->rope);
    if (m->kv_copies > 1) ax_comm_free(&m->kv_group);
    be->free(m->act_mem);
    be->free(m->decay_ranges);
    free(m->L);
    memset(m, 0, sizeof *m);
}

/* Initialisation as the architecture's reference (GPT-2: N(0, 0.02), residual
 * projections scaled by 1/sqrt(2 n_layer); Llama: N(0, 0.02)), zero biases,
 * unit norm weights. Element j of tensor i is a pure function of (seed, i,
 * j): grid-independent. */
typedef struct {
    const ax_param *p;
    const ax_grid *g;
    float *dst;
    uint64_t seed;
    int i;
} init_ctx;

static void init_range(void *ctx, int64_t lo, int64_t hi) {
    const init_ctx *c = ctx;
    const ax_param *p = c->p;
    const ax_grid *g = c->g;
    for (int64_t k = lo, n; k < hi; k += n) { /* a run of consecutive logical elements at a time */
        int64_t j = ax_shard_logical_index(&p->shard, g, g->x, g->y, g->z, k);
        n = ax_shard_run(&p->shard, g, g->x, g->y, g->z, k);
        n = n < hi - k ? n : hi - k;
        for (int64_t t = 0; t < n; t++) {
            if (j < 0) c->dst[k + t] = 0;
            else if (p->init_std > 0)
                c->dst[k + t] = (float)(p->init_std * ax_rng_normal(c->seed, (uint64_t)c->i, (uint64_t)(j + t)));
            else c->dst[k + t] = p->init_one ? 1.0f : 0.0f;
        }
    }
}

void ax_gpt_init_random(ax_gpt *m, uint64_t seed) {
    float *params = ax_host_view(m->params, m->n_local * sizeof(float), 0);
    for (int i = 0; i < m->np; i++) {
        init_ctx c = {&m->p[i], m->g, params + m->p[i].offset, seed, i};
        ax_host_parallel(m->p[i].numel, init_range, &c); /* threaded: large models are slow on one core */
    }
    ax_host_release(params, m->params, m->n_local * sizeof(float), 1);
    m->params_h_current = 0;
}

/* Lays the activations out from base (NULL: only counts) and returns their
 * floats, each buffer 64-byte aligned: the buffers ax_gpt_act_sizes lists,
 * in its order, then the attention scratch and a GPU's micro-batch copies. */
static int64_t layout_acts(ax_gpt *m, int B, int T, float *base) {
    ax_grid *g = m->g;
    int64_t M = (int64_t)B * (T / g->gc), off = 0; /* this rank's rows */
    ax_gpt_acts s;
    ax_gpt_act_sizes_in(&m->cfg, (int[]){g->gd, g->gx, g->gy, g->gz}, g->gc, B, T, m->recompute, m->dtype,
                        m->logit_bytes, &s);
    const ax_gpt_act_buf *b = s.buf;
#define TAKE(n)   (off = round_up(off, 16) + (n), base ? base + off - (n) : NULL)
#define ONE(id)   TAKE(b[id].floats)
#define ONE_H(id) (ax_bf16 *)ONE(id)
#define LAYERS(field, id, one) \
    for (int l = 0; l < m->cfg.n_layer; l++) m->L[l].field = b[id].per_layer || l == 0 ? one(id) : m->L[0].field
    m->encoded = ONE(AX_ACT_ENCODED);
    LAYERS(ln1, AX_ACT_LN1, ONE);
    LAYERS(ln1_mean, AX_ACT_LN1_MEAN, ONE);
    LAYERS(ln1_rstd, AX_ACT_LN1_RSTD, ONE);
    LAYERS(qkv, AX_ACT_QKV, ONE);
    LAYERS(lse, AX_ACT_LSE, ONE);
    LAYERS(atty, AX_ACT_ATTY, ONE);
    LAYERS(res2, AX_ACT_RES2, ONE);
    LAYERS(ln2, AX_ACT_LN2, ONE);
    LAYERS(ln2_mean, AX_ACT_LN2_MEAN, ONE);
    LAYERS(ln2_rstd, AX_ACT_LN2_RSTD, ONE);
    LAYERS(fch, AX_ACT_FCH, ONE);
    LAYERS(fch_act, AX_ACT_FCH_ACT, ONE);
    LAYERS(res3, AX_ACT_RES3, ONE);
    float *atty32 = ONE(AX_ACT_ATTY32);
    if (m->dtype == AX_BF16) m->dy_h = ONE_H(AX_ACT_DY_H);
    m->lnf = ONE(AX_ACT_LNF);
    m->lnf_mean = ONE(AX_ACT_LNF_MEAN);
    m->lnf_rstd = ONE(AX_ACT_LNF_RSTD);
    m->logits = ONE(AX_ACT_LOGITS);
    m->losses = ONE(AX_ACT_LOSSES);
    m->dres = ONE(AX_ACT_DRES);
    m->dx = ONE(AX_ACT_DX);
    m->dhidden = ONE(AX_ACT_DHIDDEN);
    m->scratch = ONE(AX_ACT_SCRATCH);
    float *ring = ONE(AX_ACT_RING);
    m->ring_ws = b[AX_ACT_RING].floats ? ring : NULL;
    m->cp_pos = (int32_t *)ONE(AX_ACT_CP_POS);
    for (int l = 0; base && l < m->cfg.n_layer; l++) { /* the fp32 working copies (gpt.h) */
        ax_layer_acts *a = &m->L[l];
        int h = m->dtype == AX_BF16, ring = g->gc > 1;
        a->qkv32 = h ? m->dx : (float *)a->qkv; /* dx: backward's, free in forward */
        a->atty32 = !h ? (float *)a->atty : ring ? atty32 : NULL;
        a->fcy = h ? m->dx : (float *)a->fch;
    }
    /* the attention's rows: the sequence, or under the ring the rank's two chunks (nn/ring_attention.h) */
    m->att_scratch = TAKE((int64_t)m->att_threads * ax_attention_scratch(T / g->gc, m->hd));
    if (!ax_be()->host_memory) { /* the micro-batch, sent where the kernels read */
        m->dev_inputs = (int32_t *)TAKE(M);
        m->dev_targets = (int32_t *)TAKE(M);
        m->dev_weights = TAKE(M);
        m->dev_scale = TAKE(1);
    }
#undef LAYERS
#undef ONE_H
#undef ONE
#undef TAKE
    return off;
}

int ax_recompute_parse(const char *s, ax_recompute *mode) {
    static const char *names[] = {"none", "attn", "block"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *mode = (ax_recompute)i;
            return 0;
        }
    return AX_ERR("--recompute %s: expected none, attn or block", s);
}

void ax_gpt_set_recompute(ax_gpt *m, ax_recompute mode) {
    if (mode == m->recompute) return;
    m->recompute = mode;
    m->cap_B = m->cap_T = 0; /* laid out anew on next use */
}

void ax_gpt_set_dtype(ax_gpt *m, ax_dtype t) {
    if (t == m->dtype) return;
    m->dtype = t;
    m->cap_B = m->cap_T = 0;
    m->params_h_current = 0;
    if (t == AX_BF16 && !m->params_h) {
        m->params_h = ax_be()->alloc((m->n_zchunk ? m->n_zchunk : 1) * sizeof(ax_bf16));
        if (m->g->gz > 1)
            m->head_block_h = ax_be()->alloc(ax_shard_numel(&m->lmhead.w, m->g) * m->g->gz * sizeof(ax_bf16));
    }
    ax_gpt_set_overlap(m, m->overlap, m->keep_gathered, m->bucket_bytes); /* gathers in the new dtype */
}

void ax_gpt_set_overlap(ax_gpt *m, int flags, int keep_gathered, int64_t bucket_bytes) {
    ax_grid *g = m->g;
    m->overlap = flags;
    m->keep_gathered = keep_gathered;
    m->bucket_bytes = bucket_bytes > 0 ? bucket_bytes : AX_BUCKET_BYTES_DEFAULT;
    ax_linear_ws_free(&m->ws);
    ax_zfetch_free(&m->wf);
    const ax_linear *fcs[AX_LW_N] = {&m->qkv, &m->proj, &m->fc, &m->fcproj};
    int64_t nw = ax_shard_numel(&m->lmhead.w, g);
    /* one reduce-scatter slot per FC of a layer: a layer's complete while the next one computes */
    ax_linear_ws_init(&m->ws, g, fcs, AX_LW_N, flags & AX_OV_ORS ? AX_LW_N : 1, nw);
    m->ws.oar = !!(flags & AX_OV_OAR);
    m->ws.ors = !!(flags & AX_OV_ORS);
    size_t cap = 0;
    for (int i = 0; i < AX_LW_N; i++)
        if ((size_t)(ax_shard_numel(&fcs[i]->w, g) * g->gz) > cap)
            cap = (size_t)(ax_shard_numel(&fcs[i]->w, g) * g->gz);
    int nbuf = keep_gathered ? AX_LW_N * m->cfg.n_layer : flags & AX_OV_OAG ? 2 : 1;
    ax_zfetch_init(&m->wf, g, m->dtype, cap, nbuf, keep_gathered);
    m->ws_bytes = ax_zscatter_bytes(&m->ws.rs) + ax_zfetch_bytes(&m->wf) +
                  (g->gz > 1 ? 4.0 * 2 * (m->cfg.untied ? 2 : 1) * nw * g->gz : 0);
    ax_gpt_buckets_init(m);
}

void ax_gpt_alloc_acts(ax_gpt *m, int B, int T) {
    if (B <= m->cap_B && T <= m->cap_T) return;
    ax_be()->free(m->act_mem);
    free(m->L);
    m->cap_B = B;
    m->cap_T = T;
    /* attention scratch for the threads of this moment; attention never runs more */
    m->att_threads = ax_be()->threads();
    m->L = ax_calloc(m->cfg.n_layer, sizeof(ax_layer_acts));
    m->logit_bytes = ax_gpt_logit_budget(); /* once: the layout and the classifier's chunks agree */
    int64_t total = layout_acts(m, B, T, NULL);
    m->act_mem = ax_be()->alloc(total * sizeof(float));
    m->act_bytes = 4.0 * total;
    layout_acts(m, B, T, m->act_mem);
    m->cp_pos_T = 0;
}
