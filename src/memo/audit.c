#include "memo/audit.h"
#include "model/gpt_decode.h"
#include "util/err.h"
#include <stdlib.h>
#include <string.h>

double ax_rouge_l(const int32_t *a, int na, const int32_t *b, int nb) {
    if (na == 0 || nb == 0) return 0.0;
    int *prev = ax_calloc(nb + 1, sizeof(int)), *cur = ax_calloc(nb + 1, sizeof(int));
    for (int i = 1; i <= na; i++) {
        for (int j = 1; j <= nb; j++)
            cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1 : (prev[j] > cur[j - 1] ? prev[j] : cur[j - 1]);
        int *t = prev;
        prev = cur;
        cur = t;
    }
    double lcs = prev[nb];
    free(prev);
    free(cur);
    if (lcs == 0) return 0.0;
    double p = lcs / na, r = lcs / nb;
    return 2 * p * r / (p + r);
}

ax_memo_span ax_memo_last_supervised(const uint8_t *sup, int n) {
    int e = n;
    while (e > 1 && !sup[e - 1]) e--;
    if (e <= 1) return (ax_memo_span){0, 0};
    int b = e - 1;
    while (b > 1 && sup[b - 1]) b--;
    return (ax_memo_span){b, e - b};
}

/* prompt [start, start+len) and reference [ref, ref+nref) of a document; 0 if
 * too short. The KV cache holds the prompt and the nref decoded tokens. */
static int split_doc(int n, const ax_memo_span *span, int suffix, int prefix, int maxT, int *start, int *len, int *ref,
                     int *nref) {
    int end = span ? span->start : prefix > 0 ? prefix : n - suffix; /* prompt ends where the reference begins */
    *nref = span ? (span->len < suffix ? span->len : suffix) : suffix;
    if (end < 1 || *nref < 1 || end + *nref > n) return 0;
    int room = maxT - *nref;
    if (room < 1) return 0;
    *len = end < room ? end : room;
    *start = end - *len;
    *ref = end;
    return 1;
}

void ax_memo_audit(ax_gpt *m, int32_t *const *docs, const int *lens, const ax_memo_span *spans, int ndocs, int suffix,
                   int prefix, int batch, ax_memo_doc *res, int32_t *gen, ax_memo_summary *sum, ax_progress_fn progress,
                   void *ctx) {
    int maxT = m->cfg.block_size;
    ax_kvcache c;
    ax_kv_init(&c, m, batch, maxT);
    int *idx = ax_malloc(batch * sizeof(int)), *ref = ax_malloc(batch * sizeof(int));
    int32_t *out = ax_malloc((size_t)batch * suffix * sizeof(int32_t)), *next = ax_malloc(batch * sizeof(int32_t));
    memset(sum, 0, sizeof *sum);
    sum->docs = ndocs;
    int d = 0;
    while (d < ndocs) {
        int nb = 0, steps = 0, longest = 0;
        for (; d < ndocs && nb < batch; d++) {
            int start, len, r, nr;
            memset(&res[d], 0, sizeof res[d]);
            if (!split_doc(lens[d], spans ? &spans[d] : NULL, suffix, prefix, maxT, &start, &len, &r, &nr)) {
                res[d].skipped = 1;
                continue;
            }
            /* every row decodes the batch's longest reference: a document
             * that would overflow its cache waits for the next batch */
            if (nb && (len > longest ? len : longest) + (nr > steps ? nr : steps) > maxT) break;
            res[d].prompt_len = len;
            res[d].ref_len = nr;
            steps = nr > steps ? nr : steps;
            longest = len > longest ? len : longest;
            ax_kv_prefill(&c, m, nb, docs[d] + start, len);
            idx[nb] = d;
            ref[nb] = r;
            nb++;
        }
        for (int s = 0; s < steps; s++) { /* as many as the longest reference of the batch */
            ax_kv_argmax(&c, m, nb, next);
            for (int b = 0; b < nb; b++) out[(size_t)b * suffix + s] = next[b];
            if (s + 1 < steps) ax_kv_step(&c, m, next, nb);
        }
        for (int b = 0; b < nb; b++) {
            ax_memo_doc *x = &res[idx[b]];
            const int32_t *g = out + (size_t)b * suffix, *want = docs[idx[b]] + ref[b];
            int same = 0, nr = x->ref_len;
            for (int s = 0; s < nr; s++) same += g[s] == want[s];
            x->exact = same == nr;
            x->match_frac = (double)same / nr;
            x->rouge_l = ax_rouge_l(g, nr, want, nr);
            if (gen) memcpy(gen + (size_t)idx[b] * suffix, g, nr * sizeof(int32_t));
            sum->evaluated++;
            sum->exact += x->exact;
            sum->match_frac += x->match_frac;
            sum->rouge_l += x->rouge_l;
        }
        if (progress) progress(d, ndocs, ctx);
    }
    if (sum->evaluated) {
        sum->match_frac /= sum->evaluated;
        sum->rouge_l /= sum->evaluated;
    }
    ax_kv_free(&c);
    free(idx);
    free(ref);
    free(out);
    free(next);
}
