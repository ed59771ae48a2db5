/* Tiled attention (see ax_backend.attention_forward and ax_attn_block): query
 * and key tiles of TL rows, online softmax, probabilities recomputed tile by
 * tile in the backward, tiles above a causal diagonal skipped. The whole
 * causal attention is the block q = k = v = qkv, so both go through one
 * arithmetic. Each (sequence, head) pair, and in the forward each query tile,
 * is one unit of work for one thread; in the backward a unit is a (sequence,
 * key/value head) pair with its query heads in order, so that it alone writes
 * its dk, dv and dq rows. Results do not depend on the thread count.
 * q, k, v stored in bf16 are widened a tile at a time into fp32 tiles of the
 * thread's scratch, and a bf16 output is accumulated in one and rounded as it
 * is stored (and widened into it again for the backward): the products see
 * the values an fp32 copy would hold, through the same loops, so the results
 * are those of the fp32 path on the widened inputs.
 * Between tiles the calling thread tests the communication in flight
 * (ax_backend_poll): ring attention's key/value transfers, started before
 * its blocks, move while they compute instead of only in the wait after. */
#include "backend/cpu/cpu.h"
#include "backend/kmath.h"
#include <math.h>
#include <omp.h>
#include <string.h>

#define TL 64

/* per thread: two score tiles, the rows' D (backward) or max and sum
 * (forward), then four fp32 tiles (q, k, v, out) of TL rows for bf16 storage */
size_t ax_cpu_attention_scratch(int T, int hd) {
    return 2 * (size_t)TL * TL + (size_t)T + 2 * TL + 4 * (size_t)TL * hd;
}
static float *tiles(float *scratch, const ax_attn_block *a) { return scratch + 2 * (size_t)TL * TL + a->Tq + 2 * TL; }

/* the communication in flight tested, by the thread that may call MPI */
static void poll_comm(void) {
    if (omp_get_thread_num() == 0) ax_backend_poll();
}

/* n rows of one head's hd values at element off of p (stored in st, row
 * stride ld) as fp32 rows: fp32 ones where they are, bf16 ones widened into
 * buf (row stride hd); *ldr: the rows' stride */
static const float *rows_f32(const void *p, ax_dtype st, size_t off, int ld, int n, int hd, float *buf, int *ldr) {
    if (st == AX_F32) {
        *ldr = ld;
        return (const float *)p + off;
    }
    const uint16_t *h = (const uint16_t *)p + off;
    for (int r = 0; r < n; r++)
        for (int e = 0; e < hd; e++) buf[(size_t)r * hd + e] = ax_bf16_widen(h[(size_t)r * ld + e]);
    *ldr = hd;
    return buf;
}

/* a . b over n values in order, each term a fused multiply-add where the
 * CPU has them (FP_FAST_FMAF), else a product then a sum: the same arithmetic
 * however the compiler lays out the loop. A plain `d += a * b` may be
 * vectorised with unfused products and a fused remainder, so its bits would
 * follow the loop's copy, the tuning and the operands' alignment, which must
 * not tell an fp32 row read in place from a bf16 row widened in the scratch. */
static float row_dot(const float *a, const float *b, int n) {
    float d = 0;
    for (int e = 0; e < n; e++)
#ifdef FP_FAST_FMAF
        d = fmaf(a[e], b[e], d);
#else
        d += a[e] * b[e];
#endif
    return d;
}

/* keys of tile j0 (nk of them) that query i may see */
static inline int visible(int i, int j0, int nk) { return i - j0 + 1 < nk ? i - j0 + 1 : nk; }

/* One query tile (nq rows of o, row stride ldo) before its first key tile: a
 * fresh online softmax, or with ls (merge) one resumed from the result over
 * other keys (kmath.h: ax_softmax_resume). */
static void tile_start(float *o, int ldo, int hd, int nq, const float *ls, float *mx, float *sum) {
    for (int r = 0; r < nq; r++) {
        if (ls) {
            ax_softmax_resume(ls[r], &mx[r], &sum[r]);
            continue;
        }
        mx[r] = -INFINITY;
        sum[r] = 0;
        memset(o + (size_t)r * ldo, 0, hd * sizeof(float));
    }
}

/* Query tile i0 (nq rows) of head h of sequence b over every visible key tile:
 * its rows of out (stored in ot; merged only in fp32) and their log-sum-exp.
 * S: the thread's scratch. */
static void forward_tile(const ax_attn_block *a, int b, int h, int i0, int nq, void *out, ax_dtype ot, float *lse,
                         int merge, float *S) {
    int hd = a->hd, Cl = a->Hl * hd, kh = h / (a->Hl / a->KVl), ldq, ldk, ldv, ldo = Cl;
    float scale = ax_attn_scale(hd), *mx = S + TL * TL, *sum = mx + TL, *W = tiles(S, a);
    size_t kb = (size_t)b * a->Sk * a->ldk + kh * hd, ob = ((size_t)b * a->Sq + i0) * Cl + h * hd;
    const float *q = rows_f32(a->q, a->st, ((size_t)b * a->Sq + i0) * a->ldq + h * hd, a->ldq, nq, hd, W, &ldq);
    float *o = ot == AX_F32 ? (float *)out + ob : W + 3 * TL * hd, *ls = lse + ((size_t)b * a->Hl + h) * a->Sq + i0;
    if (ot != AX_F32) ldo = hd;
    tile_start(o, ldo, hd, nq, merge ? ls : NULL, mx, sum);
    int jend = a->causal ? i0 + nq : a->Tk;
    for (int j0 = 0; j0 < jend; j0 += TL) {
        int nk = a->Tk - j0 < TL ? a->Tk - j0 : TL;
        size_t kj = kb + (size_t)j0 * a->ldk;
        const float *k = rows_f32(a->k, a->st, kj, a->ldk, nk, hd, W + TL * hd, &ldk);
        const float *v = rows_f32(a->v, a->st, kj, a->ldk, nk, hd, W + 2 * TL * hd, &ldv);
        ax_cpu_sgemm(0, 1, nq, nk, hd, scale, q, ldq, k, ldk, 0.0f, S, TL); /* scores (nq, nk) */
        for (int r = 0; r < nq; r++) { /* online softmax: rescale what came before */
            float *s = S + (size_t)r * TL, m = mx[r], add = 0;
            int lim = a->causal ? visible(i0 + r, j0, nk) : nk;
            for (int j = 0; j < lim; j++) m = s[j] > m ? s[j] : m;
#pragma omp simd reduction(+ : add)
            for (int j = 0; j < lim; j++) {
                s[j] = ax_softmax_p(s[j], m);
                add += s[j];
            }
            for (int j = lim; j < nk; j++) s[j] = 0.0f;
            if (m > mx[r] && mx[r] != -INFINITY) {
                float c = ax_softmax_rescale(mx[r], m), *orow = o + (size_t)r * ldo;
                sum[r] *= c;
                for (int e = 0; e < hd; e++) orow[e] *= c;
            }
            mx[r] = m;
            sum[r] += add;
        }
        ax_cpu_sgemm(0, 0, nq, hd, nk, 1.0f, S, TL, v, ldv, 1.0f, o, ldo); /* o += p v */
    }
    for (int r = 0; r < nq; r++) {
        float inv = 1.0f / sum[r], *orow = o + (size_t)r * ldo;
        for (int e = 0; e < hd; e++) orow[e] *= inv;
        if (ot != AX_F32)
            for (int e = 0; e < hd; e++) ax_store(out, ot, ob + (size_t)r * Cl + e, orow[e]);
        ls[r] = ax_lse(mx[r], sum[r]);
    }
}

/* the block's forward with out stored in ot */
static void block_forward(const ax_attn_block *a, void *out, ax_dtype ot, float *lse, int merge, float *scratch,
                          int nthr) {
    int nt = (a->Tq + TL - 1) / TL;
    size_t per = ax_cpu_attention_scratch(a->Tq, a->hd);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthr)
    for (int u = 0; u < a->B * a->Hl * nt; u++) {
        int bh = u / nt, i0 = (u % nt) * TL, nq = a->Tq - i0 < TL ? a->Tq - i0 : TL;
        forward_tile(a, bh / a->Hl, bh % a->Hl, i0, nq, out, ot, lse, merge,
                     scratch + (size_t)omp_get_thread_num() * per);
        poll_comm();
    }
}

void ax_cpu_attention_block_forward(const ax_attn_block *a, float *out, float *lse, int merge, float *scratch,
                                    int nthr) {
    block_forward(a, out, AX_F32, lse, merge, scratch, nthr);
}

/* Query head h of sequence b against the block's keys: its dq, and the shares
 * of dk, dv (of its key/value head) added; out stored in ot. P: scratch. */
static void backward_head(const ax_attn_block *a, int b, int h, float *dq, float *dk, float *dv, const float *dout,
                          const void *out, ax_dtype ot, const float *lse, float *P) {
    int hd = a->hd, Cl = a->Hl * hd, kh = h / (a->Hl / a->KVl), ldq = a->ldq, ldk = a->ldk, ldqi, ldkj, ldvj;
    float scale = ax_attn_scale(hd), *dP = P + TL * TL, *D = dP + TL * TL, *W = tiles(P, a);
    size_t qb = (size_t)b * a->Sq * ldq + h * hd, kb = (size_t)b * a->Sk * ldk + kh * hd,
           ob = (size_t)b * a->Sq * Cl + h * hd;
    const float *ls = lse + ((size_t)b * a->Hl + h) * a->Sq;
    dq += qb;
    dk += kb;
    dv += kb;
    for (int i0 = 0; i0 < a->Tq; i0 += TL) { /* D_i = dO_i . O_i, on out's rows as fp32 */
        int n = a->Tq - i0 < TL ? a->Tq - i0 : TL, ldo;
        const float *o = rows_f32(out, ot, ob + (size_t)i0 * Cl, Cl, n, hd, W + 3 * TL * hd, &ldo);
        for (int r = 0; r < n; r++) D[i0 + r] = row_dot(dout + ob + (size_t)(i0 + r) * Cl, o + (size_t)r * ldo, hd);
    }
    for (int j0 = 0; j0 < a->Tk; j0 += TL) {
        int nk = a->Tk - j0 < TL ? a->Tk - j0 : TL;
        const float *kj = rows_f32(a->k, a->st, kb + (size_t)j0 * ldk, ldk, nk, hd, W + TL * hd, &ldkj);
        const float *vj = rows_f32(a->v, a->st, kb + (size_t)j0 * ldk, ldk, nk, hd, W + 2 * TL * hd, &ldvj);
        for (int i0 = a->causal ? j0 : 0; i0 < a->Tq; i0 += TL) {
            int nq = a->Tq - i0 < TL ? a->Tq - i0 : TL;
            const float *qi = rows_f32(a->q, a->st, qb + (size_t)i0 * ldq, ldq, nq, hd, W, &ldqi);
            const float *dOi = dout + ob + (size_t)i0 * Cl;
            ax_cpu_sgemm(0, 1, nq, nk, hd, scale, qi, ldqi, kj, ldkj, 0.0f, P, TL); /* scores */
            for (int r = 0; r < nq; r++) {                                          /* probabilities again */
                float *p = P + (size_t)r * TL, l = ls[i0 + r];
                int lim = a->causal ? visible(i0 + r, j0, nk) : nk;
#pragma omp simd
                for (int j = 0; j < lim; j++) p[j] = ax_softmax_p(p[j], l);
                for (int j = lim; j < nk; j++) p[j] = 0.0f;
            }
            ax_cpu_sgemm(1, 0, nk, hd, nq, 1.0f, P, TL, dOi, Cl, 1.0f, dv + (size_t)j0 * ldk, ldk); /* dv += p^T dO */
            ax_cpu_sgemm(0, 1, nq, nk, hd, 1.0f, dOi, Cl, vj, ldvj, 0.0f, dP, TL);                  /* dp = dO v^T */
            for (int r = 0; r < nq; r++) { /* softmax backward */
                float *p = P + (size_t)r * TL, *dp = dP + (size_t)r * TL, d = D[i0 + r];
#pragma omp simd
                for (int j = 0; j < nk; j++) dp[j] = ax_softmax_ds(p[j], dp[j], d, scale);
            }
            ax_cpu_sgemm(0, 0, nq, hd, nk, 1.0f, dP, TL, kj, ldkj, 1.0f, dq + (size_t)i0 * ldq, ldq); /* dq += ds k */
            ax_cpu_sgemm(1, 0, nk, hd, nq, 1.0f, dP, TL, qi, ldqi, 1.0f, dk + (size_t)j0 * ldk, ldk); /* dk += ds^T q */
        }
        poll_comm();
    }
}

/* the block's backward with out stored in ot */
static void block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout, const void *out,
                           ax_dtype ot, const float *lse, float *scratch, int nthr) {
    int grp = a->Hl / a->KVl;
    size_t per = ax_cpu_attention_scratch(a->Tq, a->hd);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthr)
    for (int bk = 0; bk < a->B * a->KVl; bk++) {
        int b = bk / a->KVl, kh = bk % a->KVl;
        for (int h = kh * grp; h < (kh + 1) * grp; h++) /* its query heads, in order */
            backward_head(a, b, h, dq, dk, dv, dout, out, ot, lse, scratch + (size_t)omp_get_thread_num() * per);
    }
}

void ax_cpu_attention_block_backward(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                     const float *out, const float *lse, float *scratch, int nthr) {
    block_backward(a, dq, dk, dv, dout, out, AX_F32, lse, scratch, nthr);
}

void ax_cpu_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd,
                              ax_dtype dt, float *scratch, int nthr) {
    ax_attn_block a = ax_attn_block_whole(qkv, B, T, Hl, KVl, hd, dt);
    block_forward(&a, out, dt, lse, 0, scratch, nthr);
}

void ax_cpu_attention_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                               int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr) {
    ax_attn_block a = ax_attn_block_whole(qkv, B, T, Hl, KVl, hd, dt);
    size_t ld = (size_t)(Hl + 2 * KVl) * hd;
#pragma omp parallel for schedule(static) num_threads(nthr)
    for (int r = 0; r < B * T; r++) memset(dqkv + (size_t)r * ld, 0, ld * sizeof(float)); /* the gradients start at 0 */
    block_backward(&a, dqkv, dqkv + Hl * hd, dqkv + (Hl + KVl) * hd, dout, out, dt, lse, scratch, nthr);
}

void ax_cpu_attention_decode(float *out, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl,
                             int KVl, int hd, int Tmax) {
    int Cl = Hl * hd, ld = (Hl + 2 * KVl) * hd, grp = Hl / KVl;
    float scale = ax_attn_scale(hd);
#pragma omp parallel for schedule(static)
    for (int bk = 0; bk < nb * KVl; bk++) { /* append each row's new key and value */
        int b = bk / KVl, kh = bk % KVl;
        const float *row = qkv + (size_t)b * ld + Cl + kh * hd;
        memcpy(kc + ((size_t)bk * Tmax + len[b]) * hd, row, hd * sizeof(float));
        memcpy(vc + ((size_t)bk * Tmax + len[b]) * hd, row + KVl * hd, hd * sizeof(float));
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < nb * Hl; bh++) {
        int b = bh / Hl, h = bh % Hl, n = len[b] + 1;
        const float *q = qkv + (size_t)b * ld + h * hd;
        const float *k = kc + ((size_t)b * KVl + h / grp) * Tmax * hd,
                    *v = vc + ((size_t)b * KVl + h / grp) * Tmax * hd;
        float s[n], mx = -INFINITY, sum = 0;
        for (int j = 0; j < n; j++) {
            float d = 0;
            for (int e = 0; e < hd; e++) d += q[e] * k[(size_t)j * hd + e];
            s[j] = d * scale;
            mx = s[j] > mx ? s[j] : mx;
        }
        for (int j = 0; j < n; j++) {
            s[j] = ax_softmax_p(s[j], mx);
            sum += s[j];
        }
        float *o = out + (size_t)b * Cl + h * hd;
        for (int e = 0; e < hd; e++) o[e] = 0;
        for (int j = 0; j < n; j++) {
            float p = s[j] / sum;
            for (int e = 0; e < hd; e++) o[e] += p * v[(size_t)j * hd + e];
        }
    }
}
