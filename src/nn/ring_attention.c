#include "nn/ring_attention.h"
#include "util/err.h"

/* five blocks of (Bl * 2Tc) rows of packed [k | v]: in hand and arriving
 * (forward and backward; stored as qkv is, so bf16 ones fill half), their
 * gradients in hand and arriving, and the gradient share of the step
 * (backward) */
size_t ax_ring_workspace_floats(int Bl, int Tc, int KVl, int hd) { return 5 * (size_t)Bl * 2 * Tc * 2 * KVl * hd; }

/* what every step of one call shares */
typedef struct {
    ax_comm *C;
    int Bl, Tc, Hl, KVl, hd, ld, kvw; /* ld: qkv's row (Hl + 2 KVl) hd; kvw: a packed row 2 KVl hd */
    ax_dtype dt;                      /* the products' precision, and how qkv and the packed k | v are stored */
    size_t es;                        /* bytes of one stored element */
    const char *qkv;
    float *scratch;
    int nthr;
} ring;

static ring ring_of(ax_comm *C, const void *qkv, int Bl, int Tc, int Hl, int KVl, int hd, ax_dtype dt, float *scratch,
                    int nthr) {
    if (!ax_be()->attention_block_forward || !ax_be()->attention_block_backward)
        ax_fatal(__FILE__, __LINE__, "ring attention: the %s backend has no attention_block entries", ax_be()->name);
    size_t es = dt == AX_BF16 ? sizeof(ax_bf16) : sizeof(float);
    return (ring){C, Bl, Tc, Hl, KVl, hd, (Hl + 2 * KVl) * hd, 2 * KVl * hd, dt, es, qkv, scratch, nthr};
}

/* elements of one packed key/value block (Bl*2Tc, kvw): the floats of its gradient */
static size_t kv_elems(const ring *g) { return (size_t)g->Bl * 2 * g->Tc * g->kvw; }
/* floats the packed block itself fills, stored as qkv is */
static size_t kv_floats(const ring *g) { return kv_elems(g) * g->es / sizeof(float); }
/* element i of a buffer stored as qkv is */
static const char *elem(const ring *g, const void *p, size_t i) { return (const char *)p + i * g->es; }

/* chunk id of half `half` (0: the first Tc rows of a sequence) on group rank r */
static int chunk_id(const ring *g, int half, int r) { return half ? 2 * g->C->size - 1 - r : r; }

/* this rank's k | v columns of qkv (Bl*2Tc, ld) packed into kv (Bl*2Tc, kvw) */
static void pack_kv(const ring *g, float *kv) {
    size_t e = g->es;
    ax_be()->copy_rows(kv, g->kvw * e, elem(g, g->qkv, (size_t)g->Hl * g->hd), g->ld * e, g->kvw * e,
                       (size_t)g->Bl * 2 * g->Tc);
}

/* Query half qh of this rank against key half kh of the packed kv in hand
 * (rank src's chunks). Returns 0 where the pair is fully masked (key chunk
 * after the query chunk); a chunk against itself is causal. */
static int pair_block(const ring *g, int qh, int kh, const float *kv, int src, ax_attn_block *a) {
    int qc = chunk_id(g, qh, g->C->rank), kc = chunk_id(g, kh, src);
    if (kc > qc) return 0;
    const char *k = elem(g, kv, (size_t)kh * g->Tc * g->kvw), *q = elem(g, g->qkv, (size_t)qh * g->Tc * g->ld);
    *a = (ax_attn_block){.B = g->Bl,
                         .Hl = g->Hl,
                         .KVl = g->KVl,
                         .hd = g->hd,
                         .Tq = g->Tc,
                         .Tk = g->Tc,
                         .Sq = 2 * g->Tc,
                         .Sk = 2 * g->Tc,
                         .causal = kc == qc,
                         .q = q,
                         .k = k,
                         .v = elem(g, k, (size_t)g->KVl * g->hd),
                         .ldq = g->ld,
                         .ldk = g->kvw,
                         .dt = g->dt,
                         .st = g->dt};
    return 1;
}

/* The visible pairs of this rank's queries against the key/value chunks of
 * rank src: out (Bl*2Tc, Hl*hd), lse (Bl, Hl, 2Tc), each query half written
 * by its first block (written[qh] 0), merged by the later ones. */
static void forward_step(const ring *g, const float *kv, int src, float *out, float *lse, int written[2]) {
    for (int qh = 0; qh < 2; qh++)
        for (int kh = 0; kh < 2; kh++) {
            ax_attn_block a;
            if (!pair_block(g, qh, kh, kv, src, &a)) continue;
            ax_be()->attention_block_forward(&a, out + (size_t)qh * g->Tc * g->Hl * g->hd, lse + (size_t)qh * g->Tc,
                                             written[qh], g->scratch, g->nthr);
            written[qh] = 1;
        }
}

void ax_ring_attention_forward(ax_comm *C, float *out, float *lse, const void *qkv, int Bl, int Tc, int Hl, int KVl,
                               int hd, ax_dtype dt, float *ws, float *scratch, int nthr) {
    ring g = ring_of(C, qkv, Bl, Tc, Hl, KVl, hd, dt, scratch, nthr);
    if (C->size == 1) { /* chunks 0 and 1 in order: the whole sequence, through the
                         * block entry, as the output here is fp32 (the whole-attention
                         * entry stores it in dt) */
        ax_attn_block a = ax_attn_block_whole(g.qkv, g.Bl, 2 * g.Tc, g.Hl, g.KVl, g.hd, g.dt);
        ax_be()->attention_block_forward(&a, out, lse, 0, scratch, nthr);
        return;
    }
    int c = C->rank, P = C->size, written[2] = {0, 0};
    size_t n = kv_floats(&g);
    float *cur = ws, *next = ws + n;
    pack_kv(&g, cur);
    for (int t = 0; t < P; t++) { /* step t: the chunks of rank c - t in hand */
        ax_req r;
        if (t < P - 1) ax_isendrecv_f32(C, cur, (c + 1) % P, next, (c + P - 1) % P, n, &r); /* behind the compute */
        forward_step(&g, cur, (c - t + P) % P, out, lse, written);
        if (t == P - 1) break;
        ax_wait(&r);
        float *x = cur;
        cur = next;
        next = x;
    }
}

/* The visible pairs' gradients: dq of this rank's queries added into dqkv's q
 * columns, the shares of dk | dv of rank src's chunks into dkv (Bl*2Tc, kvw). */
static void backward_step(const ring *g, const float *kv, int src, float *dqkv, float *dkv, const float *dout,
                          const float *out, const float *lse) {
    for (int qh = 0; qh < 2; qh++)
        for (int kh = 0; kh < 2; kh++) {
            ax_attn_block a;
            if (!pair_block(g, qh, kh, kv, src, &a)) continue;
            size_t qo = (size_t)qh * g->Tc, ko = (size_t)kh * g->Tc * g->kvw;
            ax_be()->attention_block_backward(&a, dqkv + qo * g->ld, dkv + ko, dkv + ko + g->KVl * g->hd,
                                              dout + qo * g->Hl * g->hd, out + qo * g->Hl * g->hd, lse + qo, g->scratch,
                                              g->nthr);
        }
}

void ax_ring_attention_backward(ax_comm *C, float *dqkv, const float *dout, const float *out, const float *lse,
                                const void *qkv, int Bl, int Tc, int Hl, int KVl, int hd, ax_dtype dt, float *ws,
                                float *scratch, int nthr) {
    ring g = ring_of(C, qkv, Bl, Tc, Hl, KVl, hd, dt, scratch, nthr);
    if (C->size == 1) {
        ax_attn_block a = ax_attn_block_whole(g.qkv, g.Bl, 2 * g.Tc, g.Hl, g.KVl, g.hd, g.dt);
        ax_be()->zero(dqkv, (size_t)Bl * 2 * Tc * g.ld * sizeof(float));
        ax_be()->attention_block_backward(&a, dqkv, dqkv + Hl * hd, dqkv + (Hl + KVl) * hd, dout, out, lse, scratch,
                                          nthr);
        return;
    }
    int c = C->rank, P = C->size, to = (c + 1) % P, from = (c + P - 1) % P;
    size_t n = kv_floats(&g), ng = kv_elems(&g);
    /* kv in hand and arriving; this step's share (then the partial sum sent
     * on), the partial sum in flight to c+1, the one arriving from c-1 */
    float *cur = ws, *next = ws + n, *share = ws + 2 * n, *sent = share + ng, *got = sent + ng;
    ax_be()->zero(dqkv, (size_t)Bl * 2 * Tc * g.ld * sizeof(float));
    pack_kv(&g, cur);
    ax_req kr, gr;
    for (int t = 0; t < P; t++) { /* step t: the chunks of rank c - t, their gradient summed over c - t .. c */
        if (t < P - 1) ax_isendrecv_f32(C, cur, to, next, from, n, &kr);
        ax_be()->zero(share, ng * sizeof(float));
        backward_step(&g, cur, (c - t + P) % P, dqkv, share, dout, out, lse);
        if (t > 0) { /* the sum over ranks c - t .. c - 1, sent by c - 1 after its step t - 1 */
            ax_wait(&gr);
            ax_be()->add(share, got, ng);
        }
        /* on to c + 1 (after the last step: to the chunks' owner), behind the next step */
        ax_isendrecv_f32(C, share, to, got, from, ng, &gr);
        float *x = sent;
        sent = share;
        share = x;
        if (t == P - 1) break;
        ax_wait(&kr);
        x = cur;
        cur = next;
        next = x;
    }
    ax_wait(&gr); /* this rank's own chunks' gradient, complete */
    size_t f = sizeof(float);
    ax_be()->copy_rows(dqkv + Hl * hd, g.ld * f, got, g.kvw * f, g.kvw * f, (size_t)Bl * 2 * Tc);
}
