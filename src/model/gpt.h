/* A decoder-only transformer on the 4D grid (docs/algorithm.md §3): GPT-2, or Llama by
 * configuration (axonn.h: ax_gpt_config.arch). Every rank holds only its
 * shards; one flat allocation per role (parameters, gradients), pointed into
 * by a table of parameters in Hugging Face order. Zchunk tensors (wte and the FC weights)
 * come first in the flat buffers and the replicated ones after, so gradient
 * synchronisation is one all-reduce per region.
 *
 *   ax_gpt m; ax_gpt_init(&m, &cfg, g);          // layout, parameters allocated
 *   ax_gpt_init_random(&m, seed);                // or ax_gpt_load(&m, "model.safetensors")
 *   ax_gpt_alloc_acts(&m, Bl, T);                // activations for Bl local sequences
 *   double l = ax_gpt_forward(&m, in, tgt, w, Bl, T, 1.0f / ntok);   // local loss sum; LM head's gradient
 *   ax_gpt_backward(&m, in, Bl, T);              // the rest, accumulated into m.grads
 */
#ifndef AX_MODEL_GPT_H
#define AX_MODEL_GPT_H
#include <stdint.h>
#include "axonn/axonn.h"
#include "grid/grid.h"
#include "nn/linear.h"
#include "nn/rope.h"
#include "io/safetensors.h"

enum {
    AX_P_LN1W,
    AX_P_LN1B,
    AX_P_QKVW,
    AX_P_QKVB,
    AX_P_PROJW,
    AX_P_PROJB,
    AX_P_LN2W,
    AX_P_LN2B,
    AX_P_FCW,
    AX_P_FCB,
    AX_P_FCPW,
    AX_P_FCPB,
    AX_P_PER_LAYER
};
/* table index of a per-layer parameter; wte = 0, wpe = 1, then the layers,
 * the final norm's weight and bias and the LM head (untied) at the end. A
 * slot the architecture lacks (Llama's biases) is in the table, not present. */
#define AX_PID(l, k)   (2 + (l)*AX_P_PER_LAYER + (k))
#define AX_PID_LNFW(m) ((m)->np - 3)
#define AX_PID_LNFB(m) ((m)->np - 2)
#define AX_PID_HEAD(m) ((m)->np - 1)

/* A layer's four FC weights, in forward's order of execution: the index of
 * their parameter slots (AX_P_QKVW ...), of ax_gpt's linear layers (qkv ...)
 * and of their gathers over Z, keyed AX_LW_N * layer + weight. */
typedef enum { AX_LW_QKV, AX_LW_PROJ, AX_LW_FC, AX_LW_FCPROJ, AX_LW_N } ax_layer_weight;

typedef struct {
    char name[64];     /* Hugging Face name, e.g. "h.3.attn.c_attn.weight" */
    int present;       /* 0: a slot this architecture lacks (numel 0, no name) */
    ax_shard shard;    /* logical [rows, cols] = PyTorch layout [out, in] */
    int hf_transposed; /* stored [in, out] in HF files (GPT-2 Conv1D) */
    int decay;         /* AdamW weight decay applies (matrices) */
    double init_std;   /* random init: N(0, std); 0: the constant init_one */
    int init_one;
    /* Stored in files as nsrc tensors stacked by rows (Llama's q, k, v
     * projections fused into one; gate and up); nsrc 0: as name. */
    int nsrc;
    char src[3][64];
    int64_t src_rows[3];
    int64_t offset, numel; /* in the flat local buffers */
} ax_param;

typedef struct {
    /* per layer, fp32: the residual stream (res2, res3), norm statistics and
     * the attention's log-sum-exp */
    float *ln1_mean, *ln1_rstd, *lse, *res2;
    float *ln2_mean, *ln2_rstd, *res3;
    /* in the model's dtype (bf16 under mixed precision: written so by the
     * norms, the fused bias + activation and bias + round kernels, read so by
     * the GEMMs and the activation's backward): the norms' outputs, q|k|v, the
     * attention output, the MLP hidden before (fch) and after (fch_act) its
     * activation, GELU or SwiGLU */
    void *ln1, *qkv, *atty, *ln2, *fch, *fch_act;
    /* fp32 working copies: the buffers above themselves under fp32; under
     * bf16 shared scratch. qkv32 and fcy: the GEMMs' fp32 outputs (bias,
     * rotary embedding and activation applied before they are kept in dt);
     * atty32: the attention output of ring attention, whose chunks merge in
     * fp32, and of KV-cache decoding, which reads qkv32 too (NULL under bf16
     * without a ring: the attention kernels write the bf16 atty) */
    float *qkv32, *atty32, *fcy;
} ax_layer_acts;

/* Activations rebuilt in backward instead of kept for every layer:
 * NONE keeps all; ATTN rebuilds each layer's attention output (and its
 * log-sum-exp) from the kept qkv; BLOCK keeps only each layer's output and
 * runs the layer's forward again (its collectives included) before its
 * backward. Results are bitwise the same in every mode. */
typedef enum { AX_RECOMPUTE_NONE, AX_RECOMPUTE_ATTN, AX_RECOMPUTE_BLOCK } ax_recompute;
/* "none", "attn" or "block" */
int ax_recompute_parse(const char *s, ax_recompute *mode);

/* Communication left running behind compute (docs/algorithm.md §4), each switchable:
 * OAR the backward dX all-reduces during the dW GEMMs; ORS the Z
 * reduce-scatters of weight gradients until their buffers are reused or the
 * gradients are needed; OAG each FC weight's Z all-gather one weight ahead in
 * execution order (reversed in backward); DP each bucket of layers'
 * data-parallel (and data x Z) all-reduce as soon as backward has finished
 * those layers. The same collectives run on the same buffers in every
 * setting, so the results are the same bits. */
enum { AX_OV_NONE = 0, AX_OV_OAR = 1, AX_OV_ORS = 2, AX_OV_OAG = 4, AX_OV_DP = 8, AX_OV_ALL = 15 };
/* "none", "all" or a comma list of oar, ors, oag, dp */
int ax_overlap_parse(const char *s, int *flags);
/* the flags as "oar,ors,oag,dp" / "none" into buf */
const char *ax_overlap_name(int flags, char *buf, size_t n);

/* Gradient buckets: a range of layers (or the rest: embeddings, final norm,
 * LM head), reduced by up to four all-reduces (the zchunk region over data,
 * the replicated one over data x Z; the rest has two pieces of each). */
typedef struct {
    int l0, l1; /* layers [l0, l1]; l0 > l1: the rest */
    int n;
    struct {
        int64_t off, len;
        int zchunk;
        /* ZeRO-1 (ax_gpt_set_zero): the range's P ranks (its group) own blocks
         * of blk = len / P elements, rank k [off + k blk, off + (k+1) blk); the
         * tail [off + P blk, off + len), fewer than P, is all-reduced and
         * updated by every rank. sh: where the rank's block, then the tail,
         * start in the share buffers. */
        int64_t blk, tail, sh;
    } r[4];
    ax_req req[4], treq[4]; /* treq: the tails' all-reduces */
    int started;
    int seg0, nseg; /* ZeRO-1: the bucket's segments in ax_gpt.zsegs */
} ax_bucket;

/* ZeRO-1: a contiguous part of the rank's share, flat [flat, flat + n) =
 * share [share, share + n); AdamW decays its elements in the ranges
 * zdecay[2 dr0 ..] (ndr pairs, relative to flat) */
typedef struct {
    int64_t flat, share, n;
    int dr0, ndr;
} ax_zero_seg;
/* ZeRO-1: flat [flat, flat + n) = share [share, share + n), a part of the
 * share this rank alone stands for (its blocks; a tail, on every rank of the
 * group, on its rank 0): what it counts in the gradient norm and writes of a
 * checkpoint */
typedef struct {
    int64_t flat, share, n;
} ax_zero_own;

typedef struct {
    ax_gpt_config cfg;
    ax_grid *g;
    int Vp, Vl, v0;                 /* padded vocab, local vocab rows, first local row */
    int Cx, Cy, Hl, hd;             /* hidden per X shard, per Y shard, local heads, head size */
    int KVl;                        /* local key/value heads (Hl without grouped-query attention) */
    int kv_copies;                  /* Y shards holding each key/value head (1: split, not replicated) */
    ax_comm kv_group;               /* kv_copies > 1: the Y shards holding this rank's key/value head */
    int rms, swiglu, rope_on, bias; /* the layer's kinds, from cfg.arch */
    float eps;                      /* of the norms */
    ax_rope rope;
    int np;
    ax_param *p;
    int64_t n_local, n_zchunk; /* flat sizes: all, zchunk region (first) */
    float *params, *grads;
    ax_dtype dtype;    /* of GEMM inputs: fp32, or bf16 (mixed precision) */
    ax_bf16 *params_h; /* bf16: the zchunk region (wte, FC weights) rounded */
    /* params_h holds params rounded: set by the forward that rounds them and
     * by the optimizer's update, which writes both; cleared by whatever else
     * writes params (random init, loading, set_dtype). The one source of truth
     * for whether a forward must round them first. */
    int params_h_current;
    int64_t *decay_ranges; /* the backend's memory: [begin, end) pairs of the flat buffer where AdamW decays */
    int n_decay_ranges;
    ax_bf16 *head_block_h; /* bf16, Gz > 1: the gathered LM head weight rounded */
    ax_linear qkv, proj, fc, fcproj, lmhead;
    ax_linear_ws ws;            /* weight-gradient reduce-scatters over Z */
    ax_zfetch wf;               /* the FC weights gathered over Z */
    int overlap, keep_gathered; /* AX_OV_* */
    int phase;                  /* forward, backward or a layer's recomputation: orders the prefetch */
    ax_bucket *buckets;
    int nbuckets;
    int64_t bucket_bytes;
    int sync_armed;        /* the next backward starts the buckets (DP) */
    int64_t buckets_early; /* buckets started inside backward (statistics) */
    /* ZeRO-1 (ax_gpt_set_zero): the optimizer's share of each bucket range,
     * the reduced gradients there (gshare, n_share floats, the backend's
     * memory), its segments, their decay ranges (the backend's memory) and
     * the share ranges the gradient norm counts (zsq, pairs of offset, length) */
    int zero;
    int64_t n_share;
    float *gshare;
    ax_zero_seg *zsegs;
    int nzsegs;
    int64_t *zdecay;
    int64_t *zsq;
    int nzsq;
    ax_zero_own *zown; /* sorted by flat */
    int nzown;
    float *wte_block, *wte_gblock;   /* gathered token table and its gradient (Gz > 1) */
    float *head_block, *head_gblock; /* the same for an untied LM head (Gz > 1) */
    double ws_bytes;                 /* the Z gather/scatter buffers above, in ws and wf */
    /* activations */
    int cap_B, cap_T;
    float *act_mem;
    double act_bytes;
    float *encoded, *lnf_mean, *lnf_rstd, *losses;
    void *lnf;           /* the final norm's output, in the model's dtype (the LM head's input) */
    float *logits;       /* one row chunk of the classifier (ax_gpt_logit_rows), reused chunk after chunk:
                            fp32, its logits and their gradient; bf16, the X all-reduce's sum (G_x > 1) */
    int logit_rows_max;  /* tests: fewer rows per classifier chunk than the rule gives (0: the rule) */
    int64_t logit_bytes; /* the classifier's chunk budget the activations were laid out for */
    ax_layer_acts *L;
    /* backward's gradients, one buffer each for all layers: dres the residual stream's (M, Cx);
     * dx a linear layer's input's, fp32 (M, the widest row; under bf16 forward also writes
     * the q|k|v and fc GEMMs' fp32 outputs there); dhidden q|k|v's (fp32) or the MLP hidden's
     * (in the GEMMs' dtype) */
    float *dres, *dx, *dhidden, *scratch, *att_scratch;
    float *ring_ws; /* the ring attention's buffers (Gc > 1: ax_ring_workspace_floats; else NULL) */
    ax_bf16 *dy_h;  /* bf16: a backward GEMM's fp32 dy rounded; a classifier chunk's logits, then their gradient */
    /* a backend of its own memory (a GPU): the micro-batch's tokens, targets,
     * weights and gradient scale sent there (asynchronously where the backend can) */
    int32_t *dev_inputs, *dev_targets;
    float *dev_weights, *dev_scale;
    const float *kweights; /* the last forward's weights where the kernels read them (NULL: all count) */
    double *loss_acc;      /* the backend's memory: the weighted loss summed there (ax_gpt_loss_add) */
    int att_threads;       /* threads att_scratch is sized for */
    /* context parallelism (Gc > 1): the global positions of this rank's
     * rows (cp_pos_B sequences of a length of cp_pos_T, 0: not yet written) */
    int32_t *cp_pos;
    int cp_pos_T, cp_pos_B;
    ax_recompute recompute; /* NONE after init; KV-cache decoding needs NONE */
} ax_gpt;

/* Fills the fields left 0 with their defaults (the values axonn.h's
 * ax_gpt_config states): two configs of the same model then compare equal.
 * Everything that reads a config's defaulted fields resolves them here. */
void ax_gpt_config_defaults(ax_gpt_config *c);
/* Checks that the model splits on the grid; one line naming what does not. */
int ax_gpt_check_grid(const ax_gpt_config *c, const ax_grid *g);
int ax_gpt_init(ax_gpt *m, const ax_gpt_config *c, ax_grid *g);
void ax_gpt_free(ax_gpt *m);
void ax_gpt_init_random(ax_gpt *m, uint64_t seed);
/* for B local sequences of T tokens, of which this rank holds T / Gc (each
 * rank of the C group two chunks of T / (2 Gc)) */
void ax_gpt_alloc_acts(ax_gpt *m, int B, int T);

/* A rank's parameters on a grid of sizes g = {D, X, Y, Z}, from the config and
 * the sizes alone (no communication): what ax_gpt_init lays out. */
typedef struct {
    int64_t n_local, n_zchunk; /* all, the Z-chunked region */
    int64_t gathered;          /* floats of the largest FC weight block gathered over Z */
    int64_t table;             /* the token table's (and an untied head's) chunk */
} ax_gpt_params;
void ax_gpt_param_sizes(const ax_gpt_config *c, const int g[4], ax_gpt_params *s);
/* ax_gpt_init's parts that read only m->cfg and the grid's sizes: the FC
 * layers' splits, then the parameter table (m->p, n_local, n_zchunk) */
void ax_gpt_shapes(ax_gpt *m);
void ax_gpt_build_table(ax_gpt *m);

/* A rank's activation buffers, in the order gpt.c lays them out (the
 * attention kernel's per-thread scratch and a GPU backend's micro-batch
 * copies, which depend on the backend, follow them). */
enum {
    AX_ACT_ENCODED,
    AX_ACT_LN1,
    AX_ACT_LN1_MEAN,
    AX_ACT_LN1_RSTD,
    AX_ACT_QKV,
    AX_ACT_LSE,
    AX_ACT_ATTY,
    AX_ACT_RES2,
    AX_ACT_LN2,
    AX_ACT_LN2_MEAN,
    AX_ACT_LN2_RSTD,
    AX_ACT_FCH,
    AX_ACT_FCH_ACT,
    AX_ACT_RES3,
    AX_ACT_ATTY32, /* the ring's fp32 output (bf16, C > 1) */
    AX_ACT_DY_H,
    AX_ACT_LNF,
    AX_ACT_LNF_MEAN,
    AX_ACT_LNF_RSTD,
    AX_ACT_LOGITS,
    AX_ACT_LOSSES,
    AX_ACT_DRES,
    AX_ACT_DX,
    AX_ACT_DHIDDEN,
    AX_ACT_SCRATCH,
    AX_ACT_RING,   /* the ring attention's buffers (C > 1; nn/ring_attention.h) */
    AX_ACT_CP_POS, /* the rows' global positions (C > 1; int32) */
    AX_ACT_N
};
typedef struct {
    int64_t floats; /* of one buffer (a bf16 one: two elements to a float); 0: not laid out */
    int per_layer;  /* one for each layer, else one buffer all layers share */
} ax_gpt_act_buf;
typedef struct {
    int n_layer;
    ax_gpt_act_buf buf[AX_ACT_N];
} ax_gpt_acts;
/* The sizes of a rank's activation buffers for B sequences of T tokens on a
 * grid of sizes g = {D, X, Y, Z} with the sequences split over cp context
 * ranks (each holds T/cp tokens of each: B*T/cp rows; the attention's lse
 * (B, H/Y, T/cp); with cp > 1 the ring's buffers), under a recompute mode and
 * GEMM input dtype: the config and the sizes alone (no allocation, no
 * communication). T must be a multiple of 2 cp when cp > 1 (ax_cp_check).
 * A per-layer buffer is kept for every layer unless the recompute mode
 * rebuilds it in backward. Under bf16 the norms' outputs, q|k|v, the
 * attention output, the MLP hidden (fch, fch_act) and the final norm's
 * output are bf16 (docs/design.md, Precision), with one shared fp32 working
 * copy of q|k|v and of the attention output, and dy's rounded copy;
 * everything else is fp32 in either dtype. */
void ax_gpt_act_sizes(const ax_gpt_config *c, const int g[4], int cp, int B, int T, ax_recompute recompute,
                      ax_dtype dtype, ax_gpt_acts *s);
/* the same with the classifier's chunk budget in bytes (ax_gpt_logit_rows_in) */
void ax_gpt_act_sizes_in(const ax_gpt_config *c, const int g[4], int cp, int B, int T, ax_recompute recompute,
                         ax_dtype dtype, int64_t logit_bytes, ax_gpt_acts *s);
/* their floats, every buffer counted once for each copy, without alignment */
int64_t ax_gpt_act_floats(const ax_gpt_acts *s);
void ax_gpt_set_recompute(ax_gpt *m, ax_recompute mode);
/* GEMM input precision (AX_F32 after init). Under AX_BF16 the GEMMs read
 * bf16 weights and activations and accumulate in fp32; parameters, gradients,
 * reductions, LayerNorm, attention softmax and the loss stay fp32. */
void ax_gpt_set_dtype(ax_gpt *m, ax_dtype t);
/* the gradient bucket size when none is given */
enum { AX_BUCKET_BYTES_DEFAULT = 25 << 20 };
/* Overlap flags (AX_OV_*; none after init), keeping gathered weights from
 * forward to backward, and the gradient bucket size in bytes (0: AX_BUCKET_BYTES_DEFAULT).
 * Allocates the buffers they need; call after ax_gpt_set_dtype. */
void ax_gpt_set_overlap(ax_gpt *m, int flags, int keep_gathered, int64_t bucket_bytes);
/* NULL for a slot the architecture lacks */
static inline float *ax_gpt_param(ax_gpt *m, int id) { return m->p[id].present ? m->params + m->p[id].offset : NULL; }
static inline float *ax_gpt_grad(ax_gpt *m, int id) { return m->p[id].present ? m->grads + m->p[id].offset : NULL; }

/* One transformer layer, the one description forward, recomputation and
 * KV-cache decoding share: res2 = h + proj(attend(rope(qkv(norm1(h))))),
 * res3 = res2 + fcproj(act(fc(norm2(res2)))), into the buffers of a (res3 may
 * be h: it is written last); norm, act and rope by the architecture. attend
 * fills a->atty from a->qkv; NULL is causal attention over Bl sequences of T
 * rows (keeping a->lse for backward). Row i is at position pos[i] (NULL: i % T).
 * scratch: 4 floats per row. Under bf16 it reads the weights ax_gpt_forward
 * rounded last (KV-cache decoding runs after a prefill forward). */
typedef void (*ax_attend_fn)(void *ctx, ax_gpt *m, int l, ax_layer_acts *a);
void ax_gpt_layer_forward(ax_gpt *m, int l, ax_layer_acts *a, const float *h, int Bl, int T, const int32_t *pos,
                          float *scratch, ax_attend_fn attend, void *ctx);
/* the final norm of M rows x (M, Cx) into out, in the model's dtype (mean, rstd M each) */
void ax_gpt_final_norm(ax_gpt *m, void *out, float *mean, float *rstd, const float *x, int M, float *scratch);

/* The classifier works over chunks of rows: per chunk the logits
 * (rows, Vl), its loss and logits gradient, and in training the LM head's
 * backward at once, into one buffer reused chunk after chunk. The rule: as
 * many rows as fit `bytes` of fp32 logits, rounded down to a multiple of 64
 * (GEMM tiles), at least 64, at most M (all rows: one chunk). The budget is
 * AX_LOGITS_CHUNK_BYTES (ax_gpt_logit_rows: the CPU, whose memory is the
 * host's, and the planner), or on a backend that reports its free memory
 * (a GPU) a quarter of what is free when the activations are laid out, if
 * more (ax_gpt_logit_budget): each chunk re-reads and re-writes the fp32 LM
 * head gradient, which one chunk does once. */
enum { AX_LOGITS_CHUNK_BYTES = 64 << 20 };
int ax_gpt_logit_rows_in(int64_t M, int64_t Vl, int64_t bytes);
int ax_gpt_logit_rows(int64_t M, int64_t Vl);
int64_t ax_gpt_logit_budget(void);

/* Forward over Bl local sequences of T tokens (rows of this data x Z shard;
 * under context parallelism, Gc > 1, the rank's Bl * T / Gc rows: its two
 * chunks of each sequence, as train/step.h's ax_seq_rows takes them).
 * Returns the sum over rows of weight * loss (local, not reduced). With
 * dscale != 0 (the loss's gradient scale) the LM head's backward has run too: the final norm output's
 * gradient is in m->dx (completed over Y) and the head's weight gradient
 * accumulated, for ax_gpt_backward to go on from. Without targets only the
 * final norm runs: ax_gpt_logits gives the logit rows a caller needs. */
double ax_gpt_forward(ax_gpt *m, const int32_t *inputs, const int32_t *targets, const float *weights, int Bl, int T,
                      float dscale);
/* ax_gpt_forward without waiting, for training: it queues the work and
 * returns at once; the loss stays where the kernels are. A device backend
 * copies inputs, targets, weights and the gradient scale *dscale (NULL:
 * forward only) asynchronously: from host_alloc memory they must stay
 * unchanged until the step's read-back (ax_gpt_loss_read), and a captured
 * step (ax_backend_capture_begin) reads them there again at each replay. */
void ax_gpt_forward_queue(ax_gpt *m, const int32_t *inputs, const int32_t *targets, const float *weights, int Bl, int T,
                          const float *dscale);
/* The loss summed where the kernels are, read back once per step:
 *   ax_gpt_loss_begin(m);
 *   for (each micro-batch) { ax_gpt_forward_queue(...); ax_gpt_backward(...); ax_gpt_loss_add(m, M); }
 *   double loss = ax_gpt_loss_read(m);     // sum over micro-batches of sum(weight * loss)
 * loss_add queues acc += the last forward's M rows of weight * loss (formed
 * in double, then added: on the CPU the bits of the host's sum, in order). */
void ax_gpt_loss_begin(ax_gpt *m);
void ax_gpt_loss_add(ax_gpt *m, int M);
double ax_gpt_loss_read(ax_gpt *m);
/* Gradients accumulate into m->grads; they are final after ax_gpt_grad_sync
 * (reduce-scatters over Z may still be in flight when backward returns). */
void ax_gpt_backward(ax_gpt *m, const int32_t *inputs, int Bl, int T);
/* Gathers the token table's (Vl, Cx) block over Z when Gz > 1 (else it is
 * the local chunk) and returns it; also gathers an untied LM head, and under
 * bf16 rounds the gathered head's weight. Collective over Z. */
const float *ax_gpt_gather_wte(ax_gpt *m);
/* logits of rows [r0, r0 + n) of the last forward into out (n, Vl), the
 * backend's memory: this rank's vocabulary slice, as the classifier computes
 * them (collective over X). */
void ax_gpt_logits(ax_gpt *m, float *out, int r0, int n);
/* the LM head's weight as its GEMMs read it, after ax_gpt_gather_wte */
ax_mat ax_gpt_lm_weight(const ax_gpt *m);
/* an activation a kernel wrote in the model's dtype, as a GEMM input */
static inline ax_mat ax_gpt_act(const ax_gpt *m, const void *x, int rows, int cols) {
    return ax_mat_of(x, m->dtype, rows, cols);
}

/* Sum gradients over the ranks that saw other rows (data for zchunk tensors,
 * whose Z reduction happened in backward; data x Z for the rest), bucket by
 * bucket, and those of replicated key/value heads over the Y shards holding
 * copies. ax_gpt_grad_sync_begin before the last backward of a step lets
 * that backward start each bucket as soon as it is final (AX_OV_DP);
 * ax_gpt_grad_sync starts the rest and waits for all. */
void ax_gpt_grad_sync_begin(ax_gpt *m);
void ax_gpt_grad_sync(ax_gpt *m);
/* Between gpt.c, gpt_step.c and gpt_sync.c: the buckets of the current bucket size, and
 * backward's signal that layer l is done (-1: all layers and the embedding). */
void ax_gpt_buckets_init(ax_gpt *m);
void ax_gpt_buckets_layer_done(ax_gpt *m, int l);
/* Global sum of squares of a flat per-rank vector laid out like the
 * parameters, each logical element counted once. */
double ax_gpt_sumsq(ax_gpt *m, const float *flat);

/* ZeRO-1 over the data group (docs/design.md, "Optimizer state sharded over
 * data"). zero 1: ax_gpt_grad_sync reduce-scatters each bucket range over
 * its group (data for the Z-chunked region, data x Z for the replicated
 * one) into m->gshare instead of all-reducing it, so a rank holds the summed
 * gradients of its share alone; the optimizer updates that share
 * (m->zsegs, bucket by bucket: ax_bucket.seg0, nseg) and
 * ax_gpt_zero_gather_start / _wait all-gather the updated parameters. Call
 * after ax_gpt_set_overlap (the buckets; later calls keep the setting).
 *
 *   ax_gpt_set_zero(m, 1);
 *   ax_adamw_init(&o, ax_gpt_opt_numel(m));      // the share's moments
 *   ...ax_gpt_grad_sync(m)...                    // m->gshare final
 *   double g2 = ax_gpt_grad_sumsq(m);
 *   for (b...) { update b's segments; ax_gpt_zero_gather_start(m, b, m->params); }
 *   ax_gpt_zero_gather_wait(m);                  // params whole again */
void ax_gpt_set_zero(ax_gpt *m, int zero);
/* the optimizer state's elements on this rank: n_share (zero 1) or n_local */
static inline int64_t ax_gpt_opt_numel(const ax_gpt *m) { return m->zero ? m->n_share : m->n_local; }
/* between gpt.c and gpt_zero.c: the share layout of the current buckets (none under zero 0) */
void ax_gpt_zero_layout(ax_gpt *m);
void ax_gpt_zero_free(ax_gpt *m);
/* the global sum of squares of the synchronised gradients, each logical
 * element once: of m->grads (zero 0) or of the shares (zero 1) */
double ax_gpt_grad_sumsq(ax_gpt *m);
/* bucket's blocks of flat (m->params, or another vector laid out so) from
 * their owners to every rank of each range's group, in place */
void ax_gpt_zero_gather_start(ax_gpt *m, int bucket, float *flat);
void ax_gpt_zero_gather_wait(ax_gpt *m);
/* A vector of the share's layout (an AdamW moment) as the flat vector of
 * every rank (collective: the blocks gathered), and back (local: the
 * share's parts of flat). Checkpoints hold whole logical tensors. */
void ax_gpt_zero_unshard(ax_gpt *m, const float *share, float *flat);
void ax_gpt_zero_shard(const ax_gpt *m, const float *flat, float *share);

/* Parameter I/O in the logical Hugging Face layout. A tensor named
 * prefix + p->name is read into / written from the flat vector (params or an
 * optimizer state: n_local floats of the backend's memory, reached through
 * ax_host_view). Reads accept an extra "transformer." prefix; a failed read
 * leaves the vector unchanged. */
int ax_gpt_read_flat(ax_gpt *m, const ax_st_file *f, const char *prefix, float *flat);
/* The same from a checkpoint of one file or shards. Each rank reads only the
 * bytes of its own shards of each tensor (F32, F16 or BF16). */
int ax_gpt_read_set(ax_gpt *m, const ax_st_set *set, const char *prefix, float *flat);
/* The byte spans of f (file offsets) that ax_gpt_read_flat(m, f, prefix, ..)
 * reads on this rank, each given to fn, reading nothing: what a checkpoint's
 * verification hashes before the read (train/checkpoint.c). */
typedef void (*ax_span_fn)(void *ctx, int64_t off, int64_t len);
int ax_gpt_read_spans(ax_gpt *m, const ax_st_file *f, const char *prefix, ax_span_fn fn, void *ctx);
/* Parameters i0 .. i1-1 (table order) as file tensors of dtype t (F32 or
 * BF16), declared on any rank; write is collective, gathering to world
 * rank 0, which writes. */
void ax_gpt_declare(ax_gpt *m, ax_st_writer *w, const char *prefix, ax_st_dtype t, int i0, int i1);
int ax_gpt_write_flat(ax_gpt *m, ax_st_writer *w, const float *flat, ax_st_dtype t, int i0, int i1);
/* A rank's share of a parameter file (fp32, every parameter in table order,
 * as ax_gpt_declare lays it out) for writes from every rank in parallel:
 * every byte of the data section belongs to exactly one rank. Replicas (data
 * ranks, replicated axes, replicated parts) each give one owner, spread over
 * them by parameter. The share is gathered into a "stage" of `owned` floats
 * in file order (ax_gpt_share_fill, from the host's copy of a flat vector);
 * segment k is the next seg[k].n bytes of the stage, written at seg[k].off
 * of the data section. init is collective and ends with the check. */
typedef struct {
    int64_t off, n; /* bytes */
} ax_gpt_seg;
typedef struct {
    int64_t local, stage, n, stride; /* stage[stage + t*stride] = local[local + t], t < n */
} ax_gpt_copy;
typedef struct {
    int nseg, ncopy, cap_seg, cap_copy;
    ax_gpt_seg *seg;
    ax_gpt_copy *copy;
    int64_t owned;      /* floats */
    int64_t data_bytes; /* of the whole data section */
} ax_gpt_share;
/* whose share: the parameters' (and the optimizer state's without
 * ZeRO-1), or the optimizer state's under ZeRO-1 (its moments held for the
 * rank's share alone, ax_gpt_set_zero: a copy's local index is then one of
 * the share, and each element is the share owner's to write) */
typedef enum { AX_SHARE_PARAMS, AX_SHARE_OPTIM } ax_share_of;
int ax_gpt_share_init(ax_gpt *m, ax_gpt_share *s, ax_share_of of);
/* Collective: the ranks' segments tile the data section exactly (every byte
 * written by one rank: no overlap, no gap); else one line naming the first
 * byte range two ranks or none would write, on every rank. */
int ax_gpt_share_check(const ax_gpt *m, const ax_gpt_share *s);
/* parallel: over the host's threads (a caller with the cores to itself);
 * serial: on the calling thread alone (a background thread beside training) */
typedef enum { AX_FILL_PARALLEL, AX_FILL_SERIAL } ax_fill_mode;
void ax_gpt_share_fill(const ax_gpt_share *s, const float *local, float *stage, ax_fill_mode mode);
void ax_gpt_share_free(ax_gpt_share *s);
/* bytes parameter i takes in a file of dtype t (0: not present) */
int64_t ax_gpt_file_bytes(const ax_gpt *m, int i, ax_st_dtype t);

/* config.json (Hugging Face GPT2Config keys) */
int ax_gpt_config_read(ax_gpt_config *c, const char *path);
int ax_gpt_config_write(const ax_gpt_config *c, const char *path);
/* Where a model given by path lives: a directory holds model.safetensors, or
 * model.safetensors.index.json and its shards, and config.json (as Hugging
 * Face save_pretrained writes them); a file is the safetensors or the index,
 * config.json beside it. */
void ax_gpt_model_paths(const char *path, char *st, char *cfg, size_t n);
/* the safetensors of a model path (above) into the parameters */
int ax_gpt_load(ax_gpt *m, const char *path);
int64_t ax_gpt_num_params(const ax_gpt_config *c);
#endif
