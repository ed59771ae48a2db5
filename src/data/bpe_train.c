/* Byte-level BPE training (ax_tok_train in tokenizer.h).
 *
 * The texts are cut into pieces by the same pre-tokeniser as encoding
 * (<|endoftext|> in the text is skipped, never learned), and identical pieces
 * are counted once with their frequency. Every adjacent pair of symbols has a
 * count and a list of the words it occurs in; a merge rewrites only the words
 * on its pair's list and updates the counts of the pairs around each
 * occurrence, so no merge recounts the corpus. A max-heap with lazy deletion
 * picks the next pair: highest count, ties to the lowest (left id, right id).
 *
 * Ids: 0-255 are the byte tokens in GPT-2's order (so a trained vocabulary
 * shares them with GPT-2), merged tokens follow in the order they are made,
 * <|endoftext|> is the last id. Should a merge remake the bytes of an
 * existing token (ab+c after a+bc; not seen on real corpora), it reuses that
 * id, as `tokenizers` does. Training stops early when no pair occurs any
 * more; the vocabulary is then smaller than asked.
 * tests/ref/check_tokenizer_json.py --retrain checks the merges against a
 * plain recount-everything BPE. */
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t off;
    uint32_t len, stamp;
    int64_t freq;
} tr_word; /* symbols at syms[off..off+len) */
typedef struct {
    int32_t a, b;
    uint32_t touched;
    int64_t count;
    int32_t *where;
    uint32_t nwhere, capwhere;
} tr_pair;
typedef struct {
    int64_t count;
    int32_t pair;
} tr_ent;

typedef struct {
    tr_word *w;
    size_t nw;
    int32_t *syms;
    tr_pair *p;
    size_t np, capp;
    ax_pmap pidx; /* (a, b) -> index in p */
    tr_ent *h;
    size_t nh, caph; /* max-heap of (count, pair), possibly stale */
    int32_t *touched;
    size_t ntouched, captouched; /* pairs that gained in this merge */
    uint32_t merge;              /* 1 + index of the merge in progress */
} trainer;

static void *tr_grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) ax_fatal(__FILE__, __LINE__, "out of memory growing to %zu x %zu bytes", c, elem);
    *cap = c;
    return q;
}

/* ---- heap ---- */

static int ent_better(const trainer *tr, tr_ent x, tr_ent y) {
    if (x.count != y.count) return x.count > y.count;
    const tr_pair *p = &tr->p[x.pair], *q = &tr->p[y.pair];
    return p->a != q->a ? p->a < q->a : p->b < q->b;
}

static void heap_push(trainer *tr, tr_ent e) {
    tr->h = tr_grow(tr->h, &tr->caph, tr->nh + 1, sizeof *tr->h);
    size_t i = tr->nh++;
    while (i > 0 && ent_better(tr, e, tr->h[(i - 1) / 2])) {
        tr->h[i] = tr->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    tr->h[i] = e;
}

static tr_ent heap_pop(trainer *tr) {
    tr_ent top = tr->h[0], last = tr->h[--tr->nh];
    size_t i = 0, n = tr->nh;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ent_better(tr, tr->h[c + 1], tr->h[c])) c++;
        if (!ent_better(tr, tr->h[c], last)) break;
        tr->h[i] = tr->h[c];
        i = c;
    }
    if (n) tr->h[i] = last;
    return top;
}

/* The best pair, or -1 when none occurs. An entry whose count went stale is
 * put back with the current count: every pair keeps one entry at least as
 * high as its count, so the first entry that is current is the true best. */
static int32_t pop_best(trainer *tr) {
    while (tr->nh) {
        tr_ent e = heap_pop(tr);
        int64_t c = tr->p[e.pair].count;
        if (c <= 0) continue;
        if (c == e.count) return e.pair;
        heap_push(tr, (tr_ent){c, e.pair});
    }
    return -1;
}

/* ---- pair counts ---- */

/* Adds delta to the count of (a, b); a gain records the word and marks the
 * pair for a fresh heap entry after the merge. */
static void pair_add(trainer *tr, int32_t a, int32_t b, int64_t delta, int32_t word) {
    int added;
    int64_t *v = ax_pmap_put(&tr->pidx, ax_pair_key(a, b), &added);
    if (added) {
        tr->p = tr_grow(tr->p, &tr->capp, tr->np + 1, sizeof *tr->p);
        tr->p[tr->np] = (tr_pair){a, b, 0, 0, NULL, 0, 0};
        *v = (int64_t)tr->np++;
    }
    tr_pair *p = &tr->p[*v];
    p->count += delta;
    if (delta <= 0) return;
    if (!p->nwhere || p->where[p->nwhere - 1] != word) {
        size_t cap = p->capwhere;
        p->where = tr_grow(p->where, &cap, (size_t)p->nwhere + 1, sizeof *p->where);
        p->capwhere = (uint32_t)cap;
        p->where[p->nwhere++] = word;
    }
    if (tr->merge && p->touched != tr->merge) {
        p->touched = tr->merge;
        tr->touched = tr_grow(tr->touched, &tr->captouched, tr->ntouched + 1, sizeof *tr->touched);
        tr->touched[tr->ntouched++] = (int32_t)*v;
    }
}

/* Replaces (a, b) by z in word wi, left to right, and moves the counts of the
 * neighbouring pairs: x a b y becomes x z y, so (x,a) and (b,y) lose the
 * word's frequency and (x,z), (z,y) gain it. The left neighbour is read from
 * the rewritten prefix, so "a b a b" correctly yields (z,z). */
static void merge_word(trainer *tr, int32_t wi, int32_t a, int32_t b, int32_t z) {
    tr_word *w = &tr->w[wi];
    int32_t *s = tr->syms + w->off;
    int64_t f = w->freq;
    uint32_t len = w->len, out = 0;
    for (uint32_t i = 0; i < len;) {
        if (i + 1 < len && s[i] == a && s[i + 1] == b) {
            if (out > 0) {
                pair_add(tr, s[out - 1], a, -f, wi);
                pair_add(tr, s[out - 1], z, f, wi);
            }
            if (i + 2 < len) {
                pair_add(tr, b, s[i + 2], -f, wi);
                pair_add(tr, z, s[i + 2], f, wi);
            }
            s[out++] = z;
            i += 2;
        } else {
            s[out++] = s[i++];
        }
    }
    w->len = out;
}

/* ---- words ---- */

static void count_piece(void *ctx, const char *p, size_t n, int32_t special) {
    if (special < 0) ++*ax_smap_put(ctx, p, n, NULL);
}

static void load_words(trainer *tr, const ax_smap *counts, const int32_t *byte_id) {
    tr->w = ax_malloc((counts->n + 1) * sizeof *tr->w);
    tr->syms = ax_malloc((counts->keys.n + 1) * sizeof *tr->syms);
    uint64_t off = 0;
    for (size_t i = 0; i < counts->cap; i++) {
        const ax_smap_slot *s = &counts->slot[i];
        if (!s->hash) continue;
        const unsigned char *k = (const unsigned char *)ax_smap_key(counts, s);
        for (uint32_t j = 0; j < s->len; j++) tr->syms[off + j] = byte_id[k[j]];
        tr->w[tr->nw++] = (tr_word){off, s->len, 0, s->val};
        off += s->len;
    }
    for (size_t wi = 0; wi < tr->nw; wi++) {
        const tr_word *w = &tr->w[wi];
        for (uint32_t j = 0; j + 1 < w->len; j++)
            pair_add(tr, tr->syms[w->off + j], tr->syms[w->off + j + 1], w->freq, (int32_t)wi);
    }
    for (size_t i = 0; i < tr->np; i++) heap_push(tr, (tr_ent){tr->p[i].count, (int32_t)i});
}

/* ---- the loop ---- */

typedef struct {
    int32_t a, b, z;
} tr_merge;

/* Token table while training: bytes of every id, and bytes -> id to notice a
 * merge that remakes an existing token. */
typedef struct {
    ax_bytes bytes;
    uint64_t *off;
    size_t cap;
    ax_smap ids;
    int32_t n;
} tr_vocab;

static int32_t vocab_id(tr_vocab *v, int32_t a, int32_t b) {
    ax_bytes cat = {0};
    ax_bytes_append(&cat, v->bytes.p + v->off[a], v->off[a + 1] - v->off[a]);
    ax_bytes_append(&cat, v->bytes.p + v->off[b], v->off[b + 1] - v->off[b]);
    int added;
    int64_t *id = ax_smap_put(&v->ids, cat.p, cat.n, &added);
    if (added) {
        *id = v->n++;
        ax_bytes_append(&v->bytes, cat.p, cat.n);
        v->off = tr_grow(v->off, &v->cap, (size_t)v->n + 1, sizeof *v->off);
        v->off[v->n] = v->bytes.n;
    }
    ax_bytes_free(&cat);
    return (int32_t)*id;
}

static size_t run_merges(trainer *tr, tr_vocab *v, int32_t max_tokens, tr_merge **merges) {
    size_t nm = 0, cap = 0;
    *merges = NULL;
    while (v->n < max_tokens) {
        int32_t pi = pop_best(tr);
        if (pi < 0) break;
        int32_t a = tr->p[pi].a, b = tr->p[pi].b, z = vocab_id(v, a, b);
        *merges = tr_grow(*merges, &cap, nm + 1, sizeof **merges);
        (*merges)[nm++] = (tr_merge){a, b, z};
        tr->merge = (uint32_t)nm;
        tr->ntouched = 0;
        /* The list is taken over: (a, b) cannot gain words during its own merge. */
        int32_t *where = tr->p[pi].where;
        uint32_t nwhere = tr->p[pi].nwhere;
        tr->p[pi].where = NULL;
        tr->p[pi].nwhere = tr->p[pi].capwhere = 0;
        for (uint32_t i = 0; i < nwhere; i++) {
            tr_word *w = &tr->w[where[i]];
            if (w->stamp == tr->merge) continue; /* listed twice */
            w->stamp = tr->merge;
            merge_word(tr, where[i], a, b, z);
        }
        free(where);
        tr->p[pi].count = 0;
        for (size_t i = 0; i < tr->ntouched; i++) {
            int32_t q = tr->touched[i];
            if (tr->p[q].count > 0) heap_push(tr, (tr_ent){tr->p[q].count, q});
        }
    }
    return nm;
}

static int build(ax_tokenizer **out, const tr_vocab *v, const tr_merge *m, size_t nm) {
    ax_tokenizer *t = ax_tk_new();
    int rc = 0;
    for (int32_t id = 0; id < v->n && !rc; id++)
        rc = ax_tk_add(t, id, v->bytes.p + v->off[id], v->off[id + 1] - v->off[id], 0, "train");
    for (size_t i = 0; i < nm && !rc; i++) rc = ax_tk_merge(t, m[i].a, m[i].b, (int32_t)i, m[i].z);
    if (!rc) rc = ax_tk_add(t, v->n, "<|endoftext|>", 13, 1, "train");
    if (!rc) rc = ax_tk_finish(t, "train");
    if (rc) {
        ax_tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int ax_tok_train(ax_tokenizer **out, const char *const *texts, const size_t *lens, size_t ndocs, int vocab_size) {
    *out = NULL;
    if (vocab_size < 257)
        return AX_ERR("train: vocabulary size %d: expected at least 257 (256 bytes and <|endoftext|>)", vocab_size);
    tr_vocab v = {0};
    int32_t byte_id[256];
    v.off = tr_grow(NULL, &v.cap, 257, sizeof *v.off);
    v.off[0] = 0;
    for (int32_t i = 0; i < 256; i++) {
        unsigned char c = (unsigned char)ax_tk_id_byte(i);
        byte_id[c] = i;
        *ax_smap_put(&v.ids, &c, 1, NULL) = i;
        ax_bytes_append(&v.bytes, &c, 1);
        v.off[i + 1] = v.bytes.n;
    }
    v.n = 256;
    /* A tokenizer with no merges yet supplies the pre-tokeniser. */
    ax_tokenizer *pre;
    if (build(&pre, &v, NULL, 0)) {
        ax_smap_free(&v.ids);
        ax_bytes_free(&v.bytes);
        free(v.off);
        return -1;
    }
    ax_smap counts = {0};
    for (size_t d = 0; d < ndocs; d++) ax_tk_pieces(pre, texts[d], lens[d], 1, count_piece, &counts);
    ax_tok_free(pre);

    trainer tr = {0};
    load_words(&tr, &counts, byte_id);
    ax_smap_free(&counts);
    tr_merge *merges;
    size_t nm = run_merges(&tr, &v, vocab_size - 1, &merges);
    int rc = build(out, &v, merges, nm);

    for (size_t i = 0; i < tr.np; i++) free(tr.p[i].where);
    free(tr.p);
    free(tr.w);
    free(tr.syms);
    free(tr.h);
    free(tr.touched);
    ax_pmap_free(&tr.pidx);
    free(merges);
    ax_smap_free(&v.ids);
    ax_bytes_free(&v.bytes);
    free(v.off);
    return rc;
}
