/* Tiled causal attention (see ax_backend.attention_forward): query and key tiles
 * of TL rows, online softmax, probabilities recomputed tile by tile in the
 * backward, tiles above the diagonal skipped. Each (sequence, head) pair, and in
 * the forward each query tile, is one unit of work for one thread, so results
 * do not depend on the thread count. */
#include "backend/cpu/cpu.h"
#include "backend/kmath.h"
#include <math.h>
#include <omp.h>
#include <string.h>

#define TL 64

size_t ax_cpu_attention_scratch(int T) { return 2 * (size_t)TL * TL + (size_t)T + 2 * TL; }

/* keys of tile j0 (nk of them) that query i may see */
static inline int visible(int i, int j0, int nk) { return i - j0 + 1 < nk ? i - j0 + 1 : nk; }

void ax_cpu_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int Hl, int KVl, int hd,
                              ax_dtype dt, float *scratch, int nthr) {
    int Cl = Hl * hd, ld = (Hl + 2 * KVl) * hd, nt = (T + TL - 1) / TL, grp = Hl / KVl;
    float scale = ax_attn_scale(hd);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthr)
    for (int u = 0; u < B * Hl * nt; u++) {
        int bh = u / nt, i0 = (u % nt) * TL, b = bh / Hl, h = bh % Hl, nq = T - i0 < TL ? T - i0 : TL;
        float *S = scratch + (size_t)omp_get_thread_num() * ax_cpu_attention_scratch(T), *mx = S + TL * TL,
              *sum = mx + TL;
        const float *q = qkv + ((size_t)b * T + i0) * ld + h * hd;
        const float *k = qkv + (size_t)b * T * ld + Cl + (h / grp) * hd, *v = k + KVl * hd;
        float *o = out + ((size_t)b * T + i0) * Cl + h * hd;
        for (int r = 0; r < nq; r++) {
            mx[r] = -INFINITY;
            sum[r] = 0;
            memset(o + (size_t)r * Cl, 0, hd * sizeof(float));
        }
        for (int j0 = 0; j0 < i0 + nq; j0 += TL) {
            int nk = T - j0 < TL ? T - j0 : TL;
            ax_cpu_sgemm(0, 1, nq, nk, hd, scale, q, ld, k + (size_t)j0 * ld, ld, 0.0f, S, TL); /* scores (nq, nk) */
            for (int r = 0; r < nq; r++) { /* online softmax: rescale what came before */
                float *s = S + (size_t)r * TL, m = mx[r], add = 0;
                int lim = visible(i0 + r, j0, nk);
                for (int j = 0; j < lim; j++) m = s[j] > m ? s[j] : m;
#pragma omp simd reduction(+ : add)
                for (int j = 0; j < lim; j++) {
                    s[j] = ax_softmax_p(s[j], m);
                    add += s[j];
                }
                for (int j = lim; j < nk; j++) s[j] = 0.0f;
                if (m > mx[r] && mx[r] != -INFINITY) {
                    float c = ax_softmax_rescale(mx[r], m), *orow = o + (size_t)r * Cl;
                    sum[r] *= c;
                    for (int e = 0; e < hd; e++) orow[e] *= c;
                }
                mx[r] = m;
                sum[r] += add;
            }
            ax_cpu_sgemm(0, 0, nq, hd, nk, 1.0f, S, TL, v + (size_t)j0 * ld, ld, 1.0f, o, Cl); /* o += p v */
        }
        for (int r = 0; r < nq; r++) {
            float inv = 1.0f / sum[r], *orow = o + (size_t)r * Cl;
            for (int e = 0; e < hd; e++) orow[e] *= inv;
            lse[(size_t)bh * T + i0 + r] = ax_lse(mx[r], sum[r]);
        }
    }
}

void ax_cpu_attention_backward(float *dqkv, const float *dout, const float *out, const float *lse, const float *qkv,
                               int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr) {
    int Cl = Hl * hd, ld = (Hl + 2 * KVl) * hd, grp = Hl / KVl;
    float scale = ax_attn_scale(hd);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthr)
    for (int bk = 0; bk < B * KVl; bk++) {
        int b = bk / KVl, kh = bk % KVl;
        const float *k = qkv + (size_t)b * T * ld + Cl + kh * hd, *v = k + KVl * hd;
        float *dk = dqkv + (size_t)b * T * ld + Cl + kh * hd, *dv = dk + KVl * hd;
        for (int i = 0; i < T; i++) { /* the key/value head's gradients start at 0 */
            memset(dk + (size_t)i * ld, 0, hd * sizeof(float));
            memset(dv + (size_t)i * ld, 0, hd * sizeof(float));
        }
        for (int h = kh * grp; h < (kh + 1) * grp; h++) { /* its query heads, in order */
            int bh = b * Hl + h;
            size_t base = (size_t)b * T * ld + h * hd, obase = (size_t)b * T * Cl + h * hd;
            const float *q = qkv + base, *ls = lse + (size_t)bh * T;
            float *dq = dqkv + base;
            float *P = scratch + (size_t)omp_get_thread_num() * ax_cpu_attention_scratch(T), *dP = P + TL * TL,
                  *D = dP + TL * TL;
            for (int i = 0; i < T; i++) { /* D_i = dO_i . O_i; dq starts at 0 */
                const float *dO = dout + obase + (size_t)i * Cl, *O = out + obase + (size_t)i * Cl;
                float d = 0;
                for (int e = 0; e < hd; e++) d += dO[e] * O[e];
                D[i] = d;
                memset(dq + (size_t)i * ld, 0, hd * sizeof(float));
            }
            for (int j0 = 0; j0 < T; j0 += TL) {
                int nk = T - j0 < TL ? T - j0 : TL;
                const float *kj = k + (size_t)j0 * ld, *vj = v + (size_t)j0 * ld;
                for (int i0 = j0; i0 < T; i0 += TL) {
                    int nq = T - i0 < TL ? T - i0 : TL;
                    const float *qi = q + (size_t)i0 * ld, *dOi = dout + obase + (size_t)i0 * Cl;
                    ax_cpu_sgemm(0, 1, nq, nk, hd, scale, qi, ld, kj, ld, 0.0f, P, TL); /* scores */
                    for (int r = 0; r < nq; r++) {                                      /* probabilities again */
                        float *p = P + (size_t)r * TL, l = ls[i0 + r];
                        int lim = visible(i0 + r, j0, nk);
#pragma omp simd
                        for (int j = 0; j < lim; j++) p[j] = ax_softmax_p(p[j], l);
                        for (int j = lim; j < nk; j++) p[j] = 0.0f;
                    }
                    ax_cpu_sgemm(1, 0, nk, hd, nq, 1.0f, P, TL, dOi, Cl, 1.0f, dv + (size_t)j0 * ld,
                                 ld);                                                    /* dv += p^T dO */
                    ax_cpu_sgemm(0, 1, nq, nk, hd, 1.0f, dOi, Cl, vj, ld, 0.0f, dP, TL); /* dp = dO v^T */
                    for (int r = 0; r < nq; r++) {                                       /* softmax backward */
                        float *p = P + (size_t)r * TL, *dp = dP + (size_t)r * TL, d = D[i0 + r];
#pragma omp simd
                        for (int j = 0; j < nk; j++) dp[j] = ax_softmax_ds(p[j], dp[j], d, scale);
                    }
                    ax_cpu_sgemm(0, 0, nq, hd, nk, 1.0f, dP, TL, kj, ld, 1.0f, dq + (size_t)i0 * ld,
                                 ld); /* dq += ds k */
                    ax_cpu_sgemm(1, 0, nk, hd, nq, 1.0f, dP, TL, qi, ld, 1.0f, dk + (size_t)j0 * ld,
                                 ld); /* dk += ds^T q */
                }
            }
        }
    }
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
