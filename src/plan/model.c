#include "plan/model.h"
#include "grid/grid.h"
#include "model/gpt.h"
#include "util/err.h"
#include <stdio.h>
#include <string.h>

const char *const ax_plan_group_names[AX_PG_N] = {"X", "Y", "Z", "data", "data_z", "xyz", "C"};

void ax_plan_job_defaults(ax_plan_job *j) {
    memset(j, 0, sizeof *j);
    j->grad_accum = 1;
    j->act_bytes = 4;
    j->mem_reserve = 0.1;
    j->ov_flags = AX_OV_ALL; /* as axonn train */
    j->cp = 1;
}

static int job_cp(const ax_plan_job *j) { return j->cp > 0 ? j->cp : 1; }
static int job_zero(const ax_plan_job *j) { return j->zero == 1; }

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Why the grid cannot run the job, or NULL: the model's rules (ax_gpt_check_grid, on a grid
 * of sizes only) and the context split's (ax_cp_check), then the trainer's (the batch splits
 * into grad_accum micro-batches, and a micro-batch's sequences over D x Z). */
static const char *illegal(const ax_plan_job *j, const int g[4], char *buf, size_t n) {
    int D = g[0], Z = g[3], cp = job_cp(j);
    ax_grid sizes = {.gd = D, .gx = g[1], .gy = g[2], .gz = Z, .gc = cp, .size = D * g[1] * g[2] * Z * cp};
    if (ax_gpt_check_grid(&j->cfg, &sizes) || ax_cp_check(j->seq, cp)) {
        const char *msg = ax_err_msg();
        snprintf(buf, n, "%s", strncmp(msg, "--grid: ", 8) ? msg : msg + 8); /* here every reason is a grid's */
        ax_err_clear();
    } else if (j->batch % j->grad_accum)
        snprintf(buf, n, "batch %d is not a multiple of grad_accum %d", j->batch, j->grad_accum);
    else if ((j->batch / j->grad_accum) % (D * Z))
        snprintf(buf, n, "micro-batch of %d sequences does not divide over D*Z = %d", j->batch / j->grad_accum, D * Z);
    else return NULL;
    return buf;
}

typedef struct {
    ax_gemm_point *p;
    int n, max;
} ax_shapes; /* the distinct GEMMs met */

/* one FC layer's weight: in x out, split (in / X, out / Y), or transposed (in / Y, out / X) */
typedef struct {
    int64_t in, out;
    int transposed;
} ax_fc;

/* The job on one grid, in the model's terms (model/gpt.c): sizes per rank and micro-batch. */
typedef struct {
    int D, X, Y, Z, cp, P; /* cp: the context split C */
    int zero;              /* AdamW's state sharded over the data groups (plan/model.h) */
    int64_t C, L, T, nh, hd, F;
    int tables;               /* the token table, and an untied LM head */
    int64_t Q;                /* fused q|k|v width */
    int64_t Bl, M;            /* sequences and rows (Bl T / cp) of a micro-batch on a rank */
    double kvc;               /* the ring's transfer: a rank's key/value chunks, Bl x T/cp rows of k|v */
    int64_t Vl, Cx, Cy, Hl;   /* local vocabulary, hidden per X and Y shard, local heads */
    int block, attn;          /* recomputed: whole blocks; attention (also under block) */
    double ab;                /* bytes per activation element, and per FC weight element gathered over Z */
    ax_fc fcs[4];             /* qkv, proj, fc, fcproj */
    int64_t zchunk, repl, nw; /* parameters per rank: Z-chunked, replicated; a token table's chunk */
} ax_dims;

static void dims_of(const ax_plan_job *j, const int g[4], ax_dims *d) {
    const ax_gpt_config *cf = &j->cfg;
    int D = g[0], X = g[1], Y = g[2], Z = g[3], cp = job_cp(j);
    int64_t C = cf->n_embd, nh = cf->n_head, hd = C / nh;
    int64_t KV = cf->n_kv_head ? cf->n_kv_head : nh, F = cf->n_inner ? cf->n_inner : 4 * C;
    int64_t KVl = KV >= Y ? KV / Y : 1; /* key/value heads per rank (model/gpt_layout.c) */
    int llama = cf->arch == AX_ARCH_LLAMA;
    /* fused q|k|v (key/value heads fewer than Y: one copy per Y shard); the MLP's first FC
     * ([gate|up] under SwiGLU) */
    int64_t Q = (nh + 2 * (KV >= Y ? KV : Y)) * hd, Fo = llama ? 2 * F : F;
    int64_t Bl = j->batch / j->grad_accum / (D * Z), Vp = cdiv(cf->vocab_size, 64 * Y) * 64 * Y;
    *d = (ax_dims){.D = D,
                   .X = X,
                   .Y = Y,
                   .Z = Z,
                   .cp = cp,
                   .P = D * X * Y * Z * cp,
                   .zero = job_zero(j),
                   .C = C,
                   .L = cf->n_layer,
                   .T = j->seq,
                   .nh = nh,
                   .hd = hd,
                   .F = F,
                   .tables = cf->untied ? 2 : 1,
                   .Q = Q,
                   .Bl = Bl,
                   .M = Bl * (j->seq / cp),
                   .kvc = (double)Bl * (j->seq / cp) * 2 * KVl * hd,
                   .Vl = Vp / Y,
                   .Cx = C / X,
                   .Cy = C / Y,
                   .Hl = nh / Y,
                   .block = j->recompute == AX_RECOMPUTE_BLOCK,
                   .attn = j->recompute != AX_RECOMPUTE_NONE,
                   .ab = j->act_bytes,
                   .fcs = {{C, Q, 0}, {C, C, 1}, {C, Fo, 0}, {F, C, 1}}};
}

/* ---- memory: the sizes the model lays out (model/gpt_layout.c) ---- */

/* Parameters per rank (the zchunk region of the FC weights and token tables, then the
 * replicated vectors), a token table's chunk and the largest gathered FC weight (cap) */
static void params_of(const ax_plan_job *j, ax_dims *d, int64_t *cap) {
    ax_gpt_params s;
    ax_gpt_param_sizes(&j->cfg, (int[]){d->D, d->X, d->Y, d->Z}, &s);
    *cap = s.gathered;
    d->nw = s.table;
    d->zchunk = s.n_zchunk;
    d->repl = s.n_local - s.n_zchunk;
}

/* The share of each region's parameters whose AdamW state a rank holds: 1, or under
 * zero 1 1/p of the group its gradients are summed over (plan/model.h) */
static double zchunk_share(const ax_dims *d) { return d->zero ? 1.0 / (d->D * d->cp) : 1; }
static double repl_share(const ax_dims *d) { return d->zero ? 1.0 / (d->D * d->cp * d->Z) : 1; }

static void estimate_memory(const ax_plan_job *j, ax_dims *d, const ax_machine *m, ax_plan_cost *c) {
    int64_t cap, Z = d->Z, L = d->L;
    params_of(j, d, &cap);
    c->n_local = d->zchunk + d->repl;
    c->n_update = d->zchunk * zchunk_share(d) + d->repl * repl_share(d);
    c->param_bytes = 4.0 * c->n_local;
    c->grad_bytes = 4.0 * c->n_local;
    c->optim_bytes = 8.0 * c->n_update;
    c->share_bytes = d->zero ? 4.0 * c->n_update : 0;
    /* nn/zcomm.h: gather buffers (1, 2 with prefetch, one per FC kept) in the GEMMs'
     * dtype, reduce-scatter slots (1, 4 with ORS) of a block and a chunk; the token table's two blocks */
    int64_t nbuf = j->keep_gathered ? 4 * L : j->ov_flags & AX_OV_OAG ? 2 : 1, slots = j->ov_flags & AX_OV_ORS ? 4 : 1;
    int64_t nw = d->nw, chunk = cap / Z > nw ? cap / Z : nw;
    double ab = d->ab;
    c->ws_bytes = Z > 1 ? ab * nbuf * cap + 4.0 * (slots * (cap + chunk) + 2 * d->tables * nw * Z) : 0;
    /* the model's layout in the job's dtype (model/gpt_layout.c: bf16 buffers
     * counted two to a float) without its alignment or the attention scratch */
    ax_gpt_acts acts;
    ax_gpt_act_sizes(&j->cfg, (int[]){d->D, d->X, d->Y, d->Z}, d->cp, (int)d->Bl, (int)d->T, j->recompute,
                     ab == 2 ? AX_BF16 : AX_F32, &acts);
    c->act_bytes = 4.0 * (double)ax_gpt_act_floats(&acts);
    c->mem_bytes = c->param_bytes + c->grad_bytes + c->optim_bytes + c->share_bytes + c->act_bytes + c->ws_bytes;
    double avail = m->mem_bytes * (1 - j->mem_reserve);
    c->fits = c->mem_bytes <= avail;
    if (!c->fits)
        snprintf(c->why, sizeof c->why, "needs %.2f GiB per rank, %.2f GiB available (%.0f%% of %.2f GiB)",
                 c->mem_bytes / (1 << 30), avail / (1 << 30), 100 * (1 - j->mem_reserve), m->mem_bytes / (1 << 30));
}

/* ---- time ---- */

/* The step's tally: scale, the repetitions of what is charged; rec, where the GEMMs are listed
 * (NULL: nowhere); elem, the bytes through the elementwise kernels; kern, the seconds of those
 * charged per element instead; hidden, the collectives' seconds the overlaps can hide; bwd, the
 * backward GEMMs' seconds (the window of the data-parallel reductions). */
typedef struct {
    const ax_machine *m;
    ax_plan_cost *c;
    double scale;
    int bf16;
    ax_shapes *rec;
    double elem, kern, hidden, bwd;
} ax_acc;

/* each returns the seconds it added */
static double coll(ax_acc *a, int group, int op, int p, double elems, double bytes_per) {
    if (p <= 1 || elems <= 0) return 0;
    double f = (op == AX_COLL_AR ? 2.0 : 1.0) * (p - 1) / p, bytes = f * elems * bytes_per;
    double t = a->scale * ax_machine_coll(a->m, op, p, a->c->place[group], bytes);
    a->c->comm_s[group] += t;
    a->c->comm_bytes[group] += a->scale * bytes;
    a->c->n_coll[group] += a->scale;
    return t;
}

/* C (M x N) = op(A) op(B) over K; the FC layers' layouts (nn/linear.c): forward x W^T
 * (ta 0, tb 1), dX dY W (0, 0), dW dY^T x (1, 0) */
static double gemm(ax_acc *a, int64_t M, int64_t N, int64_t K, int ta, int tb) {
    ax_shapes *r = a->rec;
    if (r) {
        ax_gemm_point p = {(int)M, (int)N, (int)K, ta, tb, a->bf16, 0};
        int seen = 0;
        for (int i = 0; i < r->n && !seen; i++) seen = !memcmp(&r->p[i], &p, sizeof p);
        if (!seen && r->n < r->max) r->p[r->n++] = p;
    }
    double t = a->scale * ax_machine_gemm_at(a->m, (int)M, (int)N, (int)K, ta, tb, a->bf16);
    a->c->gemm_s += t;
    return t;
}

static double fmin2(double a, double b) { return a < b ? a : b; }

/* Seconds of n LayerNorm elements at their measured cost, forward (and backward
 * when bwd); their bytes (2 forward, 3 backward) taken out of *elem */
static double layernorm(double n, int bwd, const ax_machine *m, double ab, double *elem) {
    *elem -= n * ab * (bwd ? 5 : 2);
    return n * (m->ln_fwd_s + (bwd ? m->ln_bwd_s : 0));
}

/* The placement of each group (rank order (((d C + c) Z + z) Y + y) X + x, grid/grid.h):
 * data spans d and c, data x Z d, c and z */
static void place_groups(const ax_dims *d, const ax_machine *m, ax_plan_cost *c) {
    int X = d->X, Y = d->Y, Z = d->Z, DC = d->D * d->cp;
    int size[AX_PG_N] = {X, Y, Z, DC, DC * Z, X * Y * Z, d->cp};
    int stride[AX_PG_N] = {1, X, X * Y, X * Y * Z, X * Y, 1, X * Y * Z};
    for (int i = 0; i < AX_PG_N; i++) c->place[i] = ax_machine_place(m, stride[i], size[i], d->P);
}

/* One FC layer on a micro-batch: forward, and on pass 0 backward. Overlap (model/gpt.h
 * AX_OV_*): a collective left in flight hides behind the compute it runs with, up to that
 * compute's time: OAG a weight's gather behind the GEMMs of the weight before it (taken as
 * its own), OAR the dX all-reduce behind the dW GEMM, ORS the reduce-scatter behind the next
 * FC's backward GEMMs (taken as its own). */
static void fc_time(ax_acc *a, const ax_plan_job *j, const ax_dims *d, const ax_fc *f, int pass) {
    int X = d->X, Y = d->Y, Z = d->Z, ov = j->ov_flags;
    int64_t M = d->M;
    double ab = d->ab;
    int fx = f->transposed ? AX_PG_Y : AX_PG_X, bx = f->transposed ? AX_PG_X : AX_PG_Y;
    int pf = f->transposed ? Y : X, pb = f->transposed ? X : Y;
    double in_l = f->in / (f->transposed ? Y : X), out_l = f->out / (f->transposed ? X : Y);
    double wblk = in_l * out_l;
    double tf = gemm(a, M, out_l, in_l, 0, 1);
    if (!(pass && j->keep_gathered)) {                         /* kept from forward: no gather */
        double tg = coll(a, AX_PG_Z, AX_COLL_AG, Z, wblk, ab); /* gather the weight */
        if (ov & AX_OV_OAG) a->hidden += fmin2(tg, tf);
    }
    coll(a, fx, AX_COLL_AR, pf, M * out_l, 4); /* forward partial sums: fp32 in either dtype */
    if (pass) return;
    double tdx = gemm(a, M, in_l, out_l, 0, 0), tdw = gemm(a, out_l, in_l, M, 1, 0); /* dX, dW */
    a->bwd += tdx + tdw;
    if (!j->keep_gathered) {
        double tg = coll(a, AX_PG_Z, AX_COLL_AG, Z, wblk, ab); /* gathered again */
        if (ov & AX_OV_OAG) a->hidden += fmin2(tg, tdx + tdw);
    }
    double tar = coll(a, bx, AX_COLL_AR, pb, M * in_l, 4); /* dX partial sums (fp32) */
    if (ov & AX_OV_OAR) a->hidden += fmin2(tar, tdw);
    double trs = coll(a, AX_PG_Z, AX_COLL_RS, Z, wblk, 4); /* dW to its chunk owner */
    if (ov & AX_OV_ORS) a->hidden += fmin2(trs, tdx + tdw);
    if (Z > 1) a->elem += a->scale * 12.0 * cdiv((int64_t)wblk, Z); /* chunk accumulation */
}

/* The ring attention's transfers in one pass over the layers (nn/ring_attention.h; C > 1):
 * per layer nkv of a rank's key/value chunks, stored as q|k|v is (ab bytes an element),
 * and ngrad of their gradients (fp32), to the next rank of the C group. A transfer is one
 * step of a ring all-gather: charged as a 2-rank all-gather of its bytes at the C group's
 * placement. The ring keeps them in flight behind the attention of the chunks in hand:
 * they hide up to `window`, the attention seconds of the steps that run with a transfer
 * in flight. */
static void ring_time(ax_acc *a, const ax_dims *d, int nkv, int ngrad, double window) {
    if (d->cp <= 1) return;
    ax_plan_cost *c = a->c;
    int at = c->place[AX_PG_C];
    double kv = d->ab * d->kvc, g = 4.0 * d->kvc;
    double t = a->scale * (nkv * ax_machine_coll(a->m, AX_COLL_AG, 2, at, kv) +
                           ngrad * ax_machine_coll(a->m, AX_COLL_AG, 2, at, g));
    c->comm_s[AX_PG_C] += t;
    c->comm_bytes[AX_PG_C] += a->scale * (nkv * kv + ngrad * g);
    c->n_coll[AX_PG_C] += a->scale * (nkv + ngrad);
    a->hidden += fmin2(t, window);
}

/* A pass's attention seconds `att` (forward only when fwd_only) and its ring: forward
 * C - 1 transfers of key/value chunks behind C - 1 of the C steps; backward the key/value
 * chunks again and their gradients' lap back to their owners (C - 1 + C) behind all of it */
static void attention_time(ax_acc *a, const ax_dims *d, double att, int fwd_only) {
    int cp = d->cp;
    a->c->attn_s += att;
    double fwd = fwd_only ? att : att * 2 / 7; /* 2 of the 7 T^2 hd FLOPs (plan/model.h) */
    ring_time(a, d, cp - 1, 0, fwd * (cp - 1) / cp);
    if (!fwd_only) ring_time(a, d, cp - 1, cp, att - fwd);
}

/* The transformer blocks of a micro-batch, grad_accum times: pass 0 forward and backward of
 * every layer; pass 1 the forward rerun of block recomputation (L - 1 layers). Attention:
 * a rank's 1/C of the causal total (the load-balanced chunks), at the rate for its T/C rows */
static void layers_time(ax_acc *a, const ax_plan_job *j, const ax_dims *d) {
    const ax_machine *m = a->m;
    int64_t L = d->L, M = d->M, T = d->T, hd = d->hd, Bl = d->Bl, Hl = d->Hl, Cx = d->Cx, Cy = d->Cy;
    double ab = d->ab, attn_rate = ax_machine_attn_rate(m, (int)(T / d->cp), (int)hd);
    int act = m->act_fwd_s > 0 && m->act_bwd_s > 0, ln = m->ln_fwd_s > 0 && m->ln_bwd_s > 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && !d->block) break;
        a->scale = j->grad_accum * (double)(pass ? L - 1 : L);
        for (int i = 0; i < 4; i++) fc_time(a, j, d, &d->fcs[i], pass);
        /* LayerNorm statistics: two per row, over X; twice per layer (backward again) */
        for (int k = 0; k < (pass ? 2 : 4); k++) coll(a, AX_PG_X, AX_COLL_AR, d->X, 2.0 * M, 4);
        attention_time(a, d, a->scale * Bl * Hl * (pass ? 2.0 : 7.0) * T * T * hd / attn_rate / d->cp, pass);
        a->elem += a->scale * ab * M * (pass ? 14.0 * Cx + 22.0 * Cy : 24.0 * Cx + 41.0 * Cy);
        /* the activation's elements at their measured cost, instead of its bytes (2 forward, 3 backward) */
        if (act) {
            double n = a->scale * (double)M * d->F / d->Y;
            a->elem -= n * ab * (pass ? 2 : 5);
            a->kern += n * (pass ? m->act_fwd_s : m->act_fwd_s + m->act_bwd_s);
        }
        if (ln) /* the two LayerNorms' M x Cx elements likewise (their bytes: x, y forward; dy, x, dx backward) */
            a->kern += layernorm(a->scale * 2.0 * M * Cx, !pass, m, ab, &a->elem);
    }
    if (d->attn && !d->block) { /* attention recomputed: its forward rerun in L - 1 layers' backward */
        a->scale = j->grad_accum * (double)(L - 1);
        attention_time(a, d, a->scale * Bl * Hl * 2.0 * T * T * hd / attn_rate / d->cp, 1);
    }
}

/* Embedding, final norm, LM head (the token table, and an untied head, gathered once per
 * forward, in fp32: the embedding reads it so) and loss of a micro-batch, grad_accum times;
 * every collective here moves fp32 */
static void head_time(ax_acc *a, const ax_plan_job *j, const ax_dims *d) {
    const ax_machine *m = a->m;
    int X = d->X, Y = d->Y, Z = d->Z, tables = d->tables;
    int64_t M = d->M, Vl = d->Vl, Cx = d->Cx;
    double ab = d->ab;
    a->scale = j->grad_accum;
    for (int t = 0; t < tables; t++) coll(a, AX_PG_Z, AX_COLL_AG, Z, (double)Vl * Cx, 4);
    coll(a, AX_PG_Y, AX_COLL_AR, Y, (double)M * Cx, 4); /* embedding rows over the vocabulary */
    for (int k = 0; k < 2; k++) coll(a, AX_PG_X, AX_COLL_AR, X, 2.0 * M, 4);
    gemm(a, M, Vl, Cx, 0, 1);
    gemm(a, M, Cx, Vl, 0, 0);
    gemm(a, Vl, Cx, M, 1, 0);
    int64_t R = ax_gpt_logit_rows(M, Vl); /* the classifier's chunks of rows, each with its collectives */
    for (int64_t r0 = 0; r0 < M; r0 += R) {
        double n = (double)(M - r0 < R ? M - r0 : R);
        coll(a, AX_PG_X, AX_COLL_AR, X, n * Vl, 4);  /* logits' partial sums */
        coll(a, AX_PG_Y, AX_COLL_AR, Y, n, 4);       /* loss: row max */
        coll(a, AX_PG_Y, AX_COLL_AR, Y, 2.0 * n, 4); /* sum of exponentials, target logit */
    }
    coll(a, AX_PG_Y, AX_COLL_AR, Y, (double)M * Cx, 4); /* LM head dX */
    for (int t = 0; t < tables; t++) coll(a, AX_PG_Z, AX_COLL_RS, Z, (double)Vl * Cx, 4);
    a->elem += a->scale * (ab * (4.0 * M * Vl + 17.0 * M * Cx) + (Z > 1 ? 12.0 * tables * d->nw : 0));
    if (m->ln_fwd_s > 0 && m->ln_bwd_s > 0) /* the final LayerNorm */
        a->kern += layernorm(a->scale * (double)M * Cx, 1, m, ab, &a->elem);
    if (m->loss_s > 0) { /* the cross-entropy's logits at their measured cost, instead of 4 element passes */
        a->elem -= a->scale * 4.0 * M * Vl * ab;
        a->kern += a->scale * (double)M * Vl * m->loss_s;
    }
}

/* Once per step: token count and loss over data x Z, the gradients' reductions (DP: behind
 * the backward of the layers still to run, the last bucket waiting), the norm. Under zero 1
 * (plan/model.h) the reductions are reduce-scatters, hidden alike, and the updated parameters
 * are all-gathered over the same groups after the update (DP: behind the update of the next
 * bucket, the first bucket's update and the last gather exposed; c->optim_s set before). */
static void reductions_time(ax_acc *a, const ax_plan_job *j, const ax_dims *d) {
    int D = d->D * d->cp, Z = d->Z; /* C holds the same weights, other tokens: like data */
    int64_t L = d->L;
    int dp = j->ov_flags & AX_OV_DP, red = d->zero ? AX_COLL_RS : AX_COLL_AR;
    double zc = (double)d->zchunk, rp = (double)d->repl, ov = (L - 1.0) / L;
    a->scale = 1;
    coll(a, AX_PG_DZ, AX_COLL_AR, D * Z, 2, 8);
    coll(a, AX_PG_DZ, AX_COLL_AR, D * Z, 1, 8);
    double tdp = coll(a, AX_PG_DATA, red, D, zc, 4) + coll(a, AX_PG_DZ, red, D * Z, rp, 4);
    if (dp) a->hidden += fmin2(tdp * ov, a->bwd / j->grad_accum * ov);
    if (d->zero) {
        double tag = coll(a, AX_PG_DATA, AX_COLL_AG, D, zc, 4) + coll(a, AX_PG_DZ, AX_COLL_AG, D * Z, rp, 4);
        if (dp) a->hidden += fmin2(tag * ov, a->c->optim_s * ov);
    }
    coll(a, AX_PG_TP, AX_COLL_AR, d->X * d->Y * Z, 1, 8);
}

/* The step: compute, the optimizer, and the communication the overlaps leave exposed */
static void step_total(ax_acc *a, const ax_plan_job *j, ax_plan_cost *c) {
    const ax_machine *m = a->m;
    c->elem_s = a->elem / m->mem_bw + a->kern;
    c->compute_s = c->gemm_s + c->attn_s + c->elem_s;
    for (int i = 0; i < AX_PG_N; i++) c->comm_total_s += c->comm_s[i];
    /* the overlaps' windows capped by the compute, times the measured share hidden (negative:
     * overlapping costs that share on top); then the hidden share of what is left (a what-if) */
    double ov = j->overlap < 0 ? 0 : j->overlap > 1 ? 1 : j->overlap;
    double hidden = m->overlap_eff * fmin2(a->hidden, fmin2(c->compute_s, c->comm_total_s));
    c->hidden_s = hidden;
    c->exposed_s = (1 - ov) * (c->comm_total_s - hidden);
    c->step_s = c->compute_s + c->exposed_s + c->optim_s;
}

static void estimate(const ax_plan_job *j, const int g[4], const ax_machine *m, ax_plan_cost *c, int with_time,
                     ax_shapes *rec) {
    memset(c, 0, sizeof *c);
    memcpy(c->grid, g, sizeof c->grid);
    c->cp = job_cp(j);
    c->zero = job_zero(j);
    if (illegal(j, g, c->why, sizeof c->why)) return;
    c->legal = 1;
    ax_dims d;
    dims_of(j, g, &d);
    estimate_memory(j, &d, m, c);
    if (!with_time) return;
    place_groups(&d, m, c);
    ax_acc a = {m, c, j->grad_accum, j->act_bytes == 2, rec, 0, 0, 0, 0}; /* --dtype bf16: the GEMMs read bf16 */
    /* AdamW reads w, g, m, v and writes w, m, v; the norm reads g; the gradients are zeroed:
     * charged per parameter the rank updates (under zero 1 the zeroing of the whole gradient
     * buffer too: its 4 of the 36 bytes are left short) */
    c->optim_s = c->n_update * (m->optim_s_per_param > 0 ? m->optim_s_per_param : 36.0 / m->mem_bw);
    layers_time(&a, j, &d);
    head_time(&a, j, &d);
    reductions_time(&a, j, &d);
    step_total(&a, j, c);
}

void ax_plan_estimate(const ax_plan_job *j, const int g[4], const ax_machine *m, ax_plan_cost *c) {
    estimate(j, g, m, c, 1, NULL);
}

void ax_plan_estimate_part(const ax_plan_job *j, const int g[4], const ax_machine *m, ax_plan_cost *c, int with_time) {
    estimate(j, g, m, c, with_time, NULL);
}

int ax_plan_gemm_shapes(const ax_plan_job *j, const int g[4], ax_gemm_point *shapes, int n, int max) {
    ax_machine m = {.ranks_per_node = 1, .mem_bytes = 1e30, .gemm_flops = 1, .attn_flops = 1, .mem_bw = 1, .nfit = 1};
    ax_plan_cost c;
    ax_shapes rec = {shapes, n, max};
    estimate(j, g, &m, &c, 1, &rec);
    return rec.n;
}
