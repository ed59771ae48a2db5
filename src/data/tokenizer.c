/* Byte-level BPE (see tokenizer.h): tables and hash maps, pre-tokenisation,
 * the merge loop with a per-thread word cache, decoding, the three file
 * loaders and the tokenizer.json writer. The trainer is in bpe_train.c. */
#define _GNU_SOURCE                 /* memmem */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include "util/fileio.h"
#include <jansson.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AX_TOK_MAX_ID (1 << 24)     /* sanity bound on ids read from files */
#define EOT_TEXT "<|endoftext|>"

/* ---- growable arrays ---- */

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) ax_fatal(__FILE__, __LINE__, "out of memory growing to %zu x %zu bytes", c, elem);
    *cap = c;
    return q;
}

void ax_ids_push(ax_ids *a, int32_t id) {
    a->v = grow(a->v, &a->cap, a->n + 1, sizeof *a->v);
    a->v[a->n++] = id;
}
static int32_t *ids_reserve(ax_ids *a, size_t extra) {
    a->v = grow(a->v, &a->cap, a->n + extra, sizeof *a->v);
    return a->v + a->n;
}
void ax_ids_free(ax_ids *a) { free(a->v); a->v = NULL; a->n = a->cap = 0; }

/* Keeps a NUL after the bytes, so text can be handed to string functions. */
void ax_bytes_append(ax_bytes *b, const void *p, size_t n) {
    b->p = grow(b->p, &b->cap, b->n + n + 1, 1);
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}
void ax_bytes_free(ax_bytes *b) { free(b->p); b->p = NULL; b->n = b->cap = 0; }

/* ---- hash maps ---- */

static uint64_t mix64(uint64_t h) {
    h ^= h >> 30; h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27; h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

/* Eight bytes at a time: words are short, so the tail dominates. Never 0,
 * which marks an empty slot. */
static uint64_t hash_bytes(const void *key, size_t n) {
    const unsigned char *p = key;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w; memcpy(&w, p, 8);
        h = mix64(h ^ w);
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = mix64(h ^ w ^ ((uint64_t)n << 56));
    return h ? h : 1;
}

static ax_smap_slot *smap_find(const ax_smap *m, uint64_t h, const void *key, size_t len) {
    size_t mask = m->cap - 1;
    for (size_t i = h & mask; ; i = (i + 1) & mask) {
        ax_smap_slot *s = &m->slot[i];
        if (!s->hash || (s->hash == h && s->len == len && memcmp(m->keys.p + s->off, key, len) == 0)) return s;
    }
}

static void smap_rehash(ax_smap *m, size_t cap) {
    ax_smap_slot *old = m->slot;
    size_t oldcap = m->cap;
    m->slot = ax_calloc(cap, sizeof *m->slot);
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].hash) continue;
        size_t j = old[i].hash & (cap - 1);
        while (m->slot[j].hash) j = (j + 1) & (cap - 1);
        m->slot[j] = old[i];
    }
    free(old);
}

int64_t *ax_smap_get(const ax_smap *m, const void *key, size_t len) {
    if (!m->n) return NULL;
    ax_smap_slot *s = smap_find(m, hash_bytes(key, len), key, len);
    return s->hash ? &s->val : NULL;
}

int64_t *ax_smap_put(ax_smap *m, const void *key, size_t len, int *added) {
    if (2 * (m->n + 1) > m->cap) smap_rehash(m, m->cap ? 2 * m->cap : 64);
    uint64_t h = hash_bytes(key, len);
    ax_smap_slot *s = smap_find(m, h, key, len);
    if (added) *added = !s->hash;
    if (!s->hash) {
        s->hash = h; s->off = m->keys.n; s->len = (uint32_t)len; s->val = 0;
        ax_bytes_append(&m->keys, key, len);
        m->n++;
    }
    return &s->val;
}

const char *ax_smap_key(const ax_smap *m, const ax_smap_slot *s) { return m->keys.p + s->off; }
void ax_smap_free(ax_smap *m) { free(m->slot); ax_bytes_free(&m->keys); memset(m, 0, sizeof *m); }

static ax_pmap_slot *pmap_find(const ax_pmap *m, uint64_t key) {
    size_t mask = m->cap - 1;
    for (size_t i = mix64(key) & mask; ; i = (i + 1) & mask)
        if (m->slot[i].key == key || m->slot[i].key == AX_PMAP_EMPTY) return &m->slot[i];
}

static void pmap_rehash(ax_pmap *m, size_t cap) {
    ax_pmap_slot *old = m->slot;
    size_t oldcap = m->cap;
    m->slot = ax_malloc(cap * sizeof *m->slot);
    for (size_t i = 0; i < cap; i++) m->slot[i].key = AX_PMAP_EMPTY;
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key != AX_PMAP_EMPTY) *pmap_find(m, old[i].key) = old[i];
    free(old);
}

int64_t *ax_pmap_get(const ax_pmap *m, uint64_t key) {
    if (!m->n) return NULL;
    ax_pmap_slot *s = pmap_find(m, key);
    return s->key == key ? &s->val : NULL;
}

int64_t *ax_pmap_put(ax_pmap *m, uint64_t key, int *added) {
    if (2 * (m->n + 1) > m->cap) pmap_rehash(m, m->cap ? 2 * m->cap : 64);
    ax_pmap_slot *s = pmap_find(m, key);
    if (added) *added = s->key != key;
    if (s->key != key) { s->key = key; s->val = 0; m->n++; }
    return &s->val;
}

void ax_pmap_free(ax_pmap *m) { free(m->slot); memset(m, 0, sizeof *m); }

/* ---- building a tokenizer ---- */

/* The GPT-2 pattern, with \s spelt out as Unicode White_Space: that is what
 * \s means to tiktoken's regex engine, and spelling it out keeps the split
 * independent of how a PCRE2 version defines \s under PCRE2_UCP. */
#define WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static const char gpt2_pattern[] =
    "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";

static atomic_uint_fast64_t tok_serial;

ax_tokenizer *ax_tk_new(void) {
    ax_tokenizer *t = ax_calloc(1, sizeof *t);
    t->eot = -1;
    t->serial = atomic_fetch_add(&tok_serial, 1) + 1;
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    int err; PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)gpt2_pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                   &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        ax_fatal(__FILE__, __LINE__, "PCRE2 rejects the GPT-2 pattern at %zu: %s", (size_t)off, (char *)msg);
    }
    /* Without JIT support (some builds/architectures) the interpreter is used. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    t->re = re;
    return t;
}

static const char *tok_bytes(const ax_tokenizer *t, int32_t id) { return t->tok_bytes.p + t->tok_off[id]; }

int ax_tk_add(ax_tokenizer *t, int32_t id, const void *bytes, size_t len, int special, const char *what) {
    if (id < 0 || id >= AX_TOK_MAX_ID) return AX_ERR("%s: token id %d out of range [0, %d)", what, id, AX_TOK_MAX_ID);
    if (len == 0) return AX_ERR("%s: token %d is empty", what, id);
    if (id >= t->n) {
        size_t cap = (size_t)t->n, cap2 = (size_t)t->n;
        t->tok_len = grow(t->tok_len, &cap, (size_t)id + 1, sizeof *t->tok_len);
        t->tok_off = grow(t->tok_off, &cap2, (size_t)id + 1, sizeof *t->tok_off);
        for (int i = t->n; i <= id; i++) t->tok_len[i] = -1;
        t->n = id + 1;
    }
    if (t->tok_len[id] >= 0) return AX_ERR("%s: token id %d given twice", what, id);
    if (!special) {
        int added;
        int64_t *v = ax_smap_put(&t->vocab, bytes, len, &added);
        if (!added) return AX_ERR("%s: token '%.*s' given twice (ids %d and %d)", what, (int)len, (const char *)bytes, (int)*v, id);
        *v = id;
    } else {
        t->spec = realloc(t->spec, (size_t)(t->nspec + 1) * sizeof *t->spec);
        if (!t->spec) ax_fatal(__FILE__, __LINE__, "out of memory");
        ax_tok_special *s = &t->spec[t->nspec++];
        s->s = ax_malloc(len + 1); memcpy(s->s, bytes, len); s->s[len] = 0;
        s->len = (int)len; s->id = id;
        if (len == strlen(EOT_TEXT) && memcmp(bytes, EOT_TEXT, len) == 0) t->eot = id;
    }
    t->tok_off[id] = t->tok_bytes.n;
    t->tok_len[id] = (int32_t)len;
    ax_bytes_append(&t->tok_bytes, bytes, len);
    return 0;
}

/* A merge listed again replaces the earlier one, as in `tokenizers`. */
int ax_tk_merge(ax_tokenizer *t, int32_t a, int32_t b, int32_t rank, int32_t id) {
    *ax_pmap_put(&t->merges, ax_pair_key(a, b), NULL) = (int64_t)rank << 32 | (uint32_t)id;
    return 0;
}

static int set_byte_ids(ax_tokenizer *t, const char *what) {
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        int64_t *v = ax_smap_get(&t->vocab, &c, 1);
        if (!v) return AX_ERR("%s: no token for byte 0x%02x (a byte-level BPE needs all 256)", what, b);
        t->byte_id[b] = (int32_t)*v;
    }
    return 0;
}

int ax_tk_finish(ax_tokenizer *t, const char *what) { return set_byte_ids(t, what); }

/* ---- pre-tokenisation ---- */

/* Length of the well-formed UTF-8 character at p (RFC 3629: no overlongs,
 * surrogates or code points above U+10FFFF), 0 if there is none. This is
 * exactly what PCRE2 accepts as UTF-8, so runs of such characters can be
 * matched with PCRE2_NO_UTF_CHECK. */
static int utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    if (c < 0xc2 || c > 0xf4) return 0;
    int k = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (n < (size_t)k) return 0;
    unsigned lo = 0x80, hi = 0xbf;          /* allowed range of the second byte */
    if (c == 0xe0) lo = 0xa0;
    else if (c == 0xed) hi = 0x9f;
    else if (c == 0xf0) lo = 0x90;
    else if (c == 0xf4) hi = 0x8f;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < k; i++) if ((p[i] & 0xc0) != 0x80) return 0;
    return k;
}

typedef struct { const ax_tokenizer *t; pcre2_match_data *md; ax_tk_piece_fn fn; void *ctx; } piece_run;

/* Cuts valid UTF-8 s[0..n) by the pattern. The run is the whole subject, so
 * the (?!\S) lookahead treats its end as the end of the text. */
static void split_valid(const piece_run *r, const char *s, size_t n) {
    size_t pos = 0;
    while (pos < n) {
        int rc = pcre2_match((const pcre2_code *)r->t->re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, r->md, NULL);
        /* Not expected (every character matches an alternative) unless PCRE2
         * hits a resource limit: the rest stays one piece, still lossless. */
        if (rc < 0) { r->fn(r->ctx, s + pos, n - pos, -1); return; }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
        size_t b = ov[0], e = ov[1];
        if (b > pos) r->fn(r->ctx, s + pos, b - pos, -1);
        if (e <= b) e = b + (size_t)utf8_len((const unsigned char *)s + b, n - b);  /* no empty matches */
        r->fn(r->ctx, s + b, e - b, -1);
        pos = e;
    }
}

/* Invalid bytes cannot reach PCRE2: each is a piece of its own, and the
 * valid runs between them are split by the pattern (the same on every PCRE2
 * version, unlike PCRE2_MATCH_INVALID_UTF which needs 10.34). */
static void split_ordinary(const piece_run *r, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0, i = 0;
    while (i < n) {
        if (u[i] < 0x80) { i++; continue; }
        int k = utf8_len(u + i, n - i);
        if (k) { i += (size_t)k; continue; }
        split_valid(r, s + run, i - run);
        r->fn(r->ctx, s + i, 1, -1);
        run = ++i;
    }
    split_valid(r, s + run, n - run);
}

/* Earliest special token at or after pos (the longest on a tie); next[] keeps
 * each one's next occurrence (SIZE_MAX: not searched yet) so the text is
 * scanned once per special. */
static size_t next_special(const ax_tokenizer *t, const char *s, size_t n, size_t pos, size_t *next, int *which) {
    size_t best = n;
    *which = -1;
    for (int k = 0; k < t->nspec; k++) {
        if (next[k] == SIZE_MAX || next[k] < pos) {
            const char *f = memmem(s + pos, n - pos, t->spec[k].s, (size_t)t->spec[k].len);
            next[k] = f ? (size_t)(f - s) : n;
        }
        if (next[k] >= n) continue;
        if (*which < 0 || next[k] < best || (next[k] == best && t->spec[k].len > t->spec[*which].len)) {
            best = next[k];
            *which = k;
        }
    }
    return best;
}

typedef struct { uint64_t serial, used; ax_smap words; ax_ids ids; } word_cache;
enum { CACHE_WAYS = 4, CACHE_MAX_WORD = 256, CACHE_MAX_WORDS = 1 << 20 };
typedef struct { word_cache c[CACHE_WAYS]; uint64_t clock; pcre2_match_data *md; } tok_tls;
static tok_tls *thread_state(void);

void ax_tk_pieces(const ax_tokenizer *t, const char *text, size_t len, int allow_special,
                  ax_tk_piece_fn fn, void *ctx) {
    piece_run r = {t, thread_state()->md, fn, ctx};
    if (!allow_special || !t->nspec) { split_ordinary(&r, text, len); return; }
    size_t small[8], *next = t->nspec <= 8 ? small : ax_malloc((size_t)t->nspec * sizeof *next);
    for (int k = 0; k < t->nspec; k++) next[k] = SIZE_MAX;
    for (size_t pos = 0;;) {
        int k;
        size_t at = next_special(t, text, len, pos, next, &k);
        split_ordinary(&r, text + pos, at - pos);
        if (k < 0) break;
        fn(ctx, text + at, (size_t)t->spec[k].len, t->spec[k].id);
        pos = at + (size_t)t->spec[k].len;
    }
    if (next != small) free(next);
}

/* ---- per-thread state: match data and word caches ---- */

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void cache_reset(word_cache *c, uint64_t serial) {
    ax_smap_free(&c->words);
    ax_ids_free(&c->ids);
    c->serial = serial;
}

static void tls_destroy(void *p) {
    tok_tls *s = p;
    for (int i = 0; i < CACHE_WAYS; i++) cache_reset(&s->c[i], 0);
    pcre2_match_data_free(s->md);
    free(s);
}

static void tls_init(void) {
    if (pthread_key_create(&tls_key, tls_destroy) != 0) ax_fatal(__FILE__, __LINE__, "pthread_key_create failed");
}

/* Each thread has its own caches, so encoding needs no locks and
 * ax_tok_encode may run on several threads at once. */
static tok_tls *thread_state(void) {
    pthread_once(&tls_once, tls_init);
    tok_tls *s = pthread_getspecific(tls_key);
    if (!s) {
        s = ax_calloc(1, sizeof *s);
        s->md = pcre2_match_data_create(1, NULL);
        if (!s->md) ax_fatal(__FILE__, __LINE__, "out of memory (PCRE2 match data)");
        pthread_setspecific(tls_key, s);
    }
    return s;
}

/* The cache of t on this thread; a thread that alternates between up to
 * CACHE_WAYS tokenizers keeps all their caches. */
static word_cache *cache_for(const ax_tokenizer *t) {
    tok_tls *s = thread_state();
    word_cache *lru = &s->c[0];
    for (int i = 0; i < CACHE_WAYS; i++) {
        word_cache *c = &s->c[i];
        if (c->serial == t->serial) { c->used = ++s->clock; return c; }
        if (c->used < lru->used) lru = c;
    }
    cache_reset(lru, t->serial);
    lru->used = ++s->clock;
    return lru;
}

/* ---- the merge loop ---- */

typedef struct { uint64_t key; int32_t a, b, z; } merge_ent;   /* key: rank << 32 | position */

static void heap_push(merge_ent *h, size_t *n, merge_ent e) {
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2].key > e.key) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
    h[i] = e;
}

static merge_ent heap_pop(merge_ent *h, size_t *n) {
    merge_ent top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1].key < h[c].key) c++;
        if (h[c].key >= last.key) break;
        h[i] = h[c]; i = c;
    }
    h[i] = last;
    return top;
}

static void try_pair(const ax_tokenizer *t, const int32_t *id, int32_t l, int32_t r, merge_ent *h, size_t *nh) {
    int64_t *m = ax_pmap_get(&t->merges, ax_pair_key(id[l], id[r]));
    if (m) heap_push(h, nh, (merge_ent){(uint64_t)(*m >> 32) << 32 | (uint32_t)l, id[l], id[r], (int32_t)(uint32_t)*m});
}

/* BPE of one piece: symbols form a linked list over the byte positions; a
 * min-heap on (rank, position) gives the next merge, lowest rank first and
 * leftmost on a tie. Entries that went stale (a neighbour merged) are
 * recognised on popping and dropped. O(n log n); writes at most n ids to out. */
static size_t bpe_merge(const ax_tokenizer *t, const unsigned char *p, size_t n, int32_t *out) {
    enum { SMALL = 64 };
    int32_t id_s[SMALL], next_s[SMALL], prev_s[SMALL];
    merge_ent heap_s[3 * SMALL];
    int big = n > SMALL;
    int32_t *id = big ? ax_malloc(3 * n * sizeof *id) : id_s;
    int32_t *next = big ? id + n : next_s, *prev = big ? id + 2 * n : prev_s;
    merge_ent *h = big ? ax_malloc(3 * n * sizeof *h) : heap_s;
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
        id[i] = t->byte_id[p[i]];
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
        prev[i] = (int32_t)i - 1;
    }
    for (size_t i = 0; i + 1 < n; i++) try_pair(t, id, (int32_t)i, (int32_t)i + 1, h, &nh);
    while (nh) {
        merge_ent e = heap_pop(h, &nh);
        int32_t l = (int32_t)(uint32_t)e.key, r = next[l];
        if (id[l] != e.a || r < 0 || id[r] != e.b) continue;      /* stale */
        id[l] = e.z; id[r] = -1;
        next[l] = next[r];
        if (next[r] >= 0) prev[next[r]] = l;
        if (prev[l] >= 0) try_pair(t, id, prev[l], l, h, &nh);
        if (next[l] >= 0) try_pair(t, id, l, next[l], h, &nh);
    }
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) out[k++] = id[i];
    if (big) { free(id); free(h); }
    return k;
}

/* Ids of one piece, from the cache when it was seen before on this thread. */
static void encode_piece(const ax_tokenizer *t, word_cache *c, const unsigned char *p, size_t n, ax_ids *out) {
    enum { PIECE_MAX = 1 << 30 };
    if (n > PIECE_MAX) {     /* positions are int32: a gigabyte-long word is merged in parts */
        for (size_t off = 0; off < n; off += PIECE_MAX) encode_piece(t, c, p + off, n - off < PIECE_MAX ? n - off : PIECE_MAX, out);
        return;
    }
    if (n == 1) { ax_ids_push(out, t->byte_id[p[0]]); return; }
    int cacheable = n <= CACHE_MAX_WORD;
    if (cacheable) {
        int64_t *v = ax_smap_get(&c->words, p, n);
        if (v) {
            size_t off = (size_t)(*v >> 9), k = (size_t)(*v & 511);
            memcpy(ids_reserve(out, k), c->ids.v + off, k * sizeof *out->v);
            out->n += k;
            return;
        }
    }
    if (t->ignore_merges) {
        int64_t *v = ax_smap_get(&t->vocab, p, n);
        if (v) { ax_ids_push(out, (int32_t)*v); return; }
    }
    int32_t *dst = ids_reserve(out, n);
    size_t k = bpe_merge(t, p, n, dst);
    out->n += k;
    if (!cacheable) return;
    if (c->words.n >= CACHE_MAX_WORDS) cache_reset(c, t->serial);   /* bounds memory on endless new words */
    int64_t *v = ax_smap_put(&c->words, p, n, NULL);
    *v = (int64_t)c->ids.n << 9 | (int64_t)k;
    memcpy(ids_reserve(&c->ids, k), out->v + out->n - k, k * sizeof *out->v);
    c->ids.n += k;
}

typedef struct { const ax_tokenizer *t; word_cache *c; ax_ids *out; } encode_ctx;

static void encode_cb(void *ctx, const char *p, size_t n, int32_t special) {
    encode_ctx *e = ctx;
    if (special >= 0) ax_ids_push(e->out, special);
    else encode_piece(e->t, e->c, (const unsigned char *)p, n, e->out);
}

int ax_tok_encode(const ax_tokenizer *t, const char *text, size_t len, int allow_special, ax_ids *out) {
    encode_ctx e = {t, cache_for(t), out};
    ax_tk_pieces(t, text, len, allow_special, encode_cb, &e);
    return 0;
}

/* Checks every id first, so a failed call leaves out as it was. */
int ax_tok_decode(const ax_tokenizer *t, const int32_t *ids, size_t n, ax_bytes *out) {
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n || t->tok_len[id] < 0)
            return AX_ERR("decode: token id %d at position %zu is not in the vocabulary (%d ids)", id, i, t->n);
    }
    for (size_t i = 0; i < n; i++) ax_bytes_append(out, tok_bytes(t, ids[i]), (size_t)t->tok_len[ids[i]]);
    return 0;
}

int ax_tok_vocab_size(const ax_tokenizer *t) { return t->n; }
int ax_tok_eot(const ax_tokenizer *t) { return t->eot; }

void ax_tok_free(ax_tokenizer *t) {
    if (!t) return;
    pthread_once(&tls_once, tls_init);
    tok_tls *s = pthread_getspecific(tls_key);   /* this thread's cache; other threads' age out */
    if (s) for (int i = 0; i < CACHE_WAYS; i++) if (s->c[i].serial == t->serial) cache_reset(&s->c[i], 0);
    free(t->tok_len); free(t->tok_off);
    ax_bytes_free(&t->tok_bytes);
    ax_smap_free(&t->vocab);
    ax_pmap_free(&t->merges);
    for (int i = 0; i < t->nspec; i++) free(t->spec[i].s);
    free(t->spec);
    pcre2_code_free(t->re);
    free(t);
}

/* ---- token strings in GPT-2's byte alphabet ---- */

/* Bytes of a token written in GPT-2's byte characters; -1 if a character is
 * not one of them (or the UTF-8 is broken: merges.txt is read unchecked). */
static int bytelevel_decode(const char *s, size_t n, ax_bytes *out) {
    const unsigned char *u = (const unsigned char *)s;
    out->n = 0;
    for (size_t i = 0; i < n;) {
        int k = utf8_len(u + i, n - i);
        if (!k) return -1;
        uint32_t cp = k == 1 ? u[i] : k == 2 ? (uint32_t)(u[i] & 0x1f) << 6 | (u[i + 1] & 0x3f) : 0x110000;
        int b = ax_tk_char_byte(cp);                 /* the alphabet ends at U+0143: two bytes at most */
        if (b < 0) return -1;
        unsigned char c = (unsigned char)b;
        ax_bytes_append(out, &c, 1);
        i += (size_t)k;
    }
    return 0;
}

static void bytelevel_encode(const char *p, size_t n, ax_bytes *out) {
    out->n = 0;
    for (size_t i = 0; i < n; i++) {
        int c = ax_tk_byte_char((unsigned char)p[i]);
        unsigned char u[2] = {(unsigned char)c, 0};
        if (c < 0x80) { ax_bytes_append(out, u, 1); continue; }
        u[0] = (unsigned char)(0xc0 | c >> 6); u[1] = (unsigned char)(0x80 | (c & 0x3f));
        ax_bytes_append(out, u, 2);
    }
}

static const ax_tok_special *special_of(const ax_tokenizer *t, int32_t id) {
    for (int i = 0; i < t->nspec; i++) if (t->spec[i].id == id) return &t->spec[i];
    return NULL;
}

/* ---- tiktoken rank files ---- */

static int b64_value(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard padded base64, strictly: a length that is not a multiple of 4
 * (a truncated token) or a stray character is an error. */
static int b64_decode(const char *s, size_t n, ax_bytes *out) {
    out->n = 0;
    if (n == 0 || n % 4) return -1;
    for (size_t i = 0; i < n; i += 4) {
        int pad = i + 4 == n ? (s[i + 3] == '=') + (s[i + 3] == '=' && s[i + 2] == '=') : 0;
        uint32_t v = 0;
        for (int j = 0; j < 4; j++) {
            int d = j >= 4 - pad ? 0 : b64_value((unsigned char)s[i + j]);
            if (d < 0) return -1;
            v = v << 6 | (uint32_t)d;
        }
        unsigned char b[3] = {(unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v};
        ax_bytes_append(out, b, (size_t)(3 - pad));
    }
    return 0;
}

/* The merges of a rank file: token r is made by the two parts that BPE with
 * the ranks below r leaves of its bytes (the usual conversion; all 50,000 of
 * GPT-2's come out as its merges.txt). A token that does not split in two is
 * only reachable whole, which ignore_merges provides as tiktoken does. */
static void derive_merges(ax_tokenizer *t) {
    int32_t *parts = NULL;
    size_t cap = 0;
    for (int32_t id = 0; id < t->n; id++) {
        int32_t len = t->tok_len[id];
        if (len < 2) continue;
        parts = grow(parts, &cap, (size_t)len, sizeof *parts);
        if (bpe_merge(t, (const unsigned char *)tok_bytes(t, id), (size_t)len, parts) == 2)
            ax_tk_merge(t, parts[0], parts[1], id, id);
    }
    free(parts);
}

static int parse_rank(const char *p, const char *end, int32_t *rank) {
    int64_t v = 0;
    if (p == end) return -1;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9' || v >= AX_TOK_MAX_ID) return -1;
        v = v * 10 + (*p - '0');
    }
    *rank = (int32_t)v;
    return 0;
}

static int load_tiktoken(ax_tokenizer *t, const char *data, size_t len, const char *path) {
    ax_bytes tok = {0};
    char where[4200];
    int line = 0, rc = 0;
    for (const char *p = data, *end = data + len; p < end && !rc;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        line++;
        while (le > p && (le[-1] == '\r' || le[-1] == ' ')) le--;
        if (le == p) { p = next; continue; }
        const char *sp = memchr(p, ' ', (size_t)(le - p));
        int32_t rank;
        snprintf(where, sizeof where, "%s:%d", path, line);
        if (!sp || parse_rank(sp + 1, le, &rank))
            rc = AX_ERR("%s: expected '<base64 token> <rank>', got '%.*s'", where, (int)(le - p < 40 ? le - p : 40), p);
        else if (b64_decode(p, (size_t)(sp - p), &tok))
            rc = AX_ERR("%s: invalid base64 token '%.*s'", where, (int)(sp - p < 40 ? sp - p : 40), p);
        else
            rc = ax_tk_add(t, rank, tok.p, tok.n, 0, where);
        p = next;
    }
    ax_bytes_free(&tok);
    if (rc) return -1;
    if (!t->n) return AX_ERR("%s: no tokens (expected lines of '<base64 token> <rank>')", path);
    AX_TRY(set_byte_ids(t, path));
    derive_merges(t);
    t->ignore_merges = 1;
    return ax_tk_add(t, t->n, EOT_TEXT, strlen(EOT_TEXT), 1, path);
}

/* ---- vocab.json + merges.txt, tokenizer.json ---- */

static int load_vocab(ax_tokenizer *t, json_t *vocab, const char *path) {
    if (!json_is_object(vocab)) return AX_ERR("%s: expected the vocabulary as an object of token -> id", path);
    const char *key;
    json_t *v;
    ax_bytes b = {0};
    int rc = 0;
    json_object_foreach(vocab, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id >= AX_TOK_MAX_ID) {
            rc = AX_ERR("%s: id of token '%.40s' is not an integer in [0, %d)", path, key, AX_TOK_MAX_ID);
            break;
        }
        if (special_of(t, (int32_t)id)) continue;              /* added tokens are listed here too */
        if (bytelevel_decode(key, strlen(key), &b)) {
            rc = AX_ERR("%s: token '%.40s' has a character outside GPT-2's byte alphabet "
                        "(not a byte-level BPE vocabulary)", path, key);
            break;
        }
        if ((rc = ax_tk_add(t, (int32_t)id, b.p, b.n, 0, path))) break;
    }
    ax_bytes_free(&b);
    return rc;
}

static int token_id(const ax_tokenizer *t, const char *s, size_t n, ax_bytes *tmp, int32_t *id) {
    if (bytelevel_decode(s, n, tmp)) return -1;
    int64_t *v = ax_smap_get(&t->vocab, tmp->p, tmp->n);
    if (!v) return -1;
    *id = (int32_t)*v;
    return 0;
}

/* One merge "a b" of rank `rank`; both tokens and their concatenation must be
 * in the vocabulary. */
static int add_merge(ax_tokenizer *t, const char *a, size_t na, const char *b, size_t nb, int32_t rank, const char *where) {
    ax_bytes tmp = {0};
    int32_t ia, ib;
    int rc = 0;
    if (token_id(t, a, na, &tmp, &ia))
        rc = AX_ERR("%s: merge '%.*s %.*s' uses unknown token '%.*s'", where, (int)na, a, (int)nb, b, (int)na, a);
    else if (token_id(t, b, nb, &tmp, &ib))
        rc = AX_ERR("%s: merge '%.*s %.*s' uses unknown token '%.*s'", where, (int)na, a, (int)nb, b, (int)nb, b);
    else {
        tmp.n = 0;
        ax_bytes_append(&tmp, tok_bytes(t, ia), (size_t)t->tok_len[ia]);
        ax_bytes_append(&tmp, tok_bytes(t, ib), (size_t)t->tok_len[ib]);
        int64_t *v = ax_smap_get(&t->vocab, tmp.p, tmp.n);
        if (!v) rc = AX_ERR("%s: merge '%.*s %.*s' makes a token that is not in the vocabulary", where, (int)na, a, (int)nb, b);
        else ax_tk_merge(t, ia, ib, rank, (int32_t)*v);
    }
    ax_bytes_free(&tmp);
    return rc;
}

/* "a b": exactly two tokens around one space (byte-level tokens have none). */
static int split_merge(const char *p, size_t n, size_t *sp) {
    const char *s = memchr(p, ' ', n);
    if (!s || s == p || s + 1 == p + n || memchr(s + 1, ' ', n - (size_t)(s - p) - 1)) return -1;
    *sp = (size_t)(s - p);
    return 0;
}

static int load_merges_txt(ax_tokenizer *t, const char *path) {
    char *data;
    size_t len;
    AX_TRY(ax_read_file(path, &data, &len));
    char where[4200];
    int line = 0, rc = 0;
    int32_t rank = 0;
    for (const char *p = data, *end = data + len; p < end && !rc;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        line++;
        if (le > p && le[-1] == '\r') le--;
        size_t n = (size_t)(le - p), sp;
        snprintf(where, sizeof where, "%s:%d", path, line);
        if (n == 0 || (line == 1 && n >= 8 && memcmp(p, "#version", 8) == 0)) { p = next; continue; }
        if (split_merge(p, n, &sp))
            rc = AX_ERR("%s: expected two tokens separated by one space, got '%.*s'", where, (int)(n < 40 ? n : 40), p);
        else
            rc = add_merge(t, p, sp, p + sp + 1, n - sp - 1, rank++, where);
        p = next;
    }
    free(data);
    return rc;
}

/* GPT-2's vocab.json lists <|endoftext|> among the tokens; it is the special. */
static int load_vocab_json(ax_tokenizer *t, json_t *root, const char *path) {
    json_t *e = json_object_get(root, EOT_TEXT);
    if (json_is_integer(e)) AX_TRY(ax_tk_add(t, (int32_t)json_integer_value(e), EOT_TEXT, strlen(EOT_TEXT), 1, path));
    AX_TRY(load_vocab(t, root, path));
    AX_TRY(set_byte_ids(t, path));
    char dir[4096], merges[4200];
    ax_dirname(path, dir, sizeof dir);
    snprintf(merges, sizeof merges, "%s/merges.txt", dir);
    if (!ax_file_exists(merges)) return AX_ERR("%s: expected merges.txt beside it (%s not found)", path, merges);
    return load_merges_txt(t, merges);
}

static int load_json_merges(ax_tokenizer *t, json_t *merges, const char *path) {
    if (!json_is_array(merges)) return AX_ERR("%s: expected model.merges to be an array", path);
    size_t i, sp;
    json_t *m;
    char where[4200];
    json_array_foreach(merges, i, m) {
        snprintf(where, sizeof where, "%s: model.merges[%zu]", path, i);
        const char *s = json_string_value(m);
        if (s && !split_merge(s, json_string_length(m), &sp)) {
            AX_TRY(add_merge(t, s, sp, s + sp + 1, json_string_length(m) - sp - 1, (int32_t)i, where));
            continue;
        }
        json_t *a = json_array_get(m, 0), *b = json_array_get(m, 1);
        if (!json_is_array(m) || json_array_size(m) != 2 || !json_is_string(a) || !json_is_string(b))
            return AX_ERR("%s: expected \"a b\" or [\"a\", \"b\"]", where);
        AX_TRY(add_merge(t, json_string_value(a), json_string_length(a), json_string_value(b), json_string_length(b),
                         (int32_t)i, where));
    }
    return 0;
}

static int load_added(ax_tokenizer *t, json_t *added, const char *path) {
    if (!added || json_is_null(added)) return 0;
    if (!json_is_array(added)) return AX_ERR("%s: expected added_tokens to be an array", path);
    size_t i;
    json_t *a;
    json_array_foreach(added, i, a) {
        json_t *id = json_object_get(a, "id"), *content = json_object_get(a, "content");
        if (!json_is_integer(id) || !json_is_string(content) || !json_string_length(content))
            return AX_ERR("%s: added_tokens[%zu]: expected an integer \"id\" and a non-empty \"content\"", path, i);
        AX_TRY(ax_tk_add(t, (int32_t)json_integer_value(id), json_string_value(content), json_string_length(content), 1, path));
    }
    return 0;
}

static int is_str(json_t *j, const char *s) { return json_is_string(j) && strcmp(json_string_value(j), s) == 0; }

/* Options of the BPE model that would change the result are refused. */
static int check_bpe_model(json_t *model, const char *path) {
    json_t *d = json_object_get(model, "dropout");
    if (d && !json_is_null(d) && !(json_is_number(d) && json_number_value(d) == 0))
        return AX_ERR("%s: BPE dropout is not supported (expected \"dropout\": null)", path);
    const char *opt[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(model, opt[i]);
        if (v && !json_is_null(v) && !is_str(v, ""))
            return AX_ERR("%s: BPE %s is not supported (expected null or \"\")", path, opt[i]);
    }
    return 0;
}

static int check_normalizer(json_t *n, const char *path) {
    if (!n || json_is_null(n)) return 0;
    json_t *list = json_object_get(n, "normalizers");
    if (is_str(json_object_get(n, "type"), "Sequence") && json_is_array(list) && json_array_size(list) == 0) return 0;
    const char *type = json_string_value(json_object_get(n, "type"));
    return AX_ERR("%s: normalizer '%s' is not supported (expected none, as in GPT-2)", path, type ? type : "?");
}

static int is_bytelevel(json_t *p, int use_regex) {
    json_t *re = json_object_get(p, "use_regex");
    return is_str(json_object_get(p, "type"), "ByteLevel") && !json_is_true(json_object_get(p, "add_prefix_space")) &&
           (use_regex ? !json_is_false(re) : json_is_false(re));
}

/* A Split on the GPT-2 pattern itself, as tokenizers' tiktoken conversion writes. */
static int is_gpt2_split(json_t *p) {
    const char *re = json_string_value(json_object_get(json_object_get(p, "pattern"), "Regex"));
    static const char *const forms[] = {
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
        "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"};
    if (!is_str(json_object_get(p, "type"), "Split") || !re || json_is_true(json_object_get(p, "invert")) ||
        !is_str(json_object_get(p, "behavior"), "Isolated"))
        return 0;
    return strcmp(re, forms[0]) == 0 || strcmp(re, forms[1]) == 0;
}

static int check_pre_tokenizer(json_t *p, const char *path) {
    if (is_bytelevel(p, 1)) return 0;
    json_t *seq = json_object_get(p, "pretokenizers");
    if (is_str(json_object_get(p, "type"), "Sequence") && json_is_array(seq)) {
        size_t n = json_array_size(seq);
        if (n == 1 && is_bytelevel(json_array_get(seq, 0), 1)) return 0;
        if (n == 2 && is_gpt2_split(json_array_get(seq, 0)) && is_bytelevel(json_array_get(seq, 1), 0)) return 0;
    }
    return AX_ERR("%s: pre_tokenizer is not supported: expected ByteLevel (add_prefix_space false) "
                  "splitting by the GPT-2 pattern", path);
}

static int load_hf(ax_tokenizer *t, json_t *root, const char *path) {
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return AX_ERR("%s: expected \"model\" to be an object", path);
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type ? strcmp(type, "BPE") != 0 : !json_object_get(model, "merges"))
        return AX_ERR("%s: model type '%s' is not supported (expected a byte-level \"BPE\")", path, type ? type : "?");
    AX_TRY(check_bpe_model(model, path));
    AX_TRY(check_normalizer(json_object_get(root, "normalizer"), path));
    AX_TRY(check_pre_tokenizer(json_object_get(root, "pre_tokenizer"), path));
    AX_TRY(load_added(t, json_object_get(root, "added_tokens"), path));
    AX_TRY(load_vocab(t, json_object_get(model, "vocab"), path));
    AX_TRY(set_byte_ids(t, path));
    AX_TRY(load_json_merges(t, json_object_get(model, "merges"), path));
    t->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    return 0;
}

static int load_json(ax_tokenizer *t, const char *data, size_t len, const char *path) {
    json_error_t je;
    json_t *root = json_loadb(data, len, 0, &je);
    if (!root) return AX_ERR("%s: malformed JSON at line %d, column %d: %s", path, je.line, je.column, je.text);
    int rc = !json_is_object(root) ? AX_ERR("%s: expected a JSON object", path)
           : json_is_object(json_object_get(root, "model")) ? load_hf(t, root, path)
           : load_vocab_json(t, root, path);
    json_decref(root);
    return rc;
}

/* The format is told by the content: a JSON object is a tokenizer.json when
 * its "model" is an object (GPT-2's vocab.json has a token "model", with an
 * id), otherwise a vocab.json; anything else is a tiktoken rank file. */
int ax_tok_load(ax_tokenizer **out, const char *path) {
    *out = NULL;
    char *data;
    size_t len;
    AX_TRY(ax_read_file(path, &data, &len));
    ax_tokenizer *t = ax_tk_new();
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) i++;
    int rc = i < len && data[i] == '{' ? load_json(t, data, len, path) : load_tiktoken(t, data, len, path);
    free(data);
    if (rc) { ax_tok_free(t); return -1; }
    *out = t;
    return 0;
}

/* ---- tokenizer.json writer ---- */

typedef struct { int64_t rank; int32_t a, b; } merge_row;

static int merge_row_cmp(const void *x, const void *y) {
    const merge_row *p = x, *q = y;
    if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

static json_t *bytelevel_json(int prefix_space, int trim_offsets) {
    return json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", prefix_space,
                     "trim_offsets", trim_offsets, "use_regex", 1);
}

static json_t *added_json(const ax_tokenizer *t) {
    json_t *a = json_array();
    for (int32_t id = 0; id < t->n; id++) {
        const ax_tok_special *s = special_of(t, id);
        if (!s) continue;
        json_t *o = json_pack("{s:I, s:s%, s:b, s:b, s:b, s:b, s:b}", "id", (json_int_t)id, "content", s->s,
                              (size_t)s->len, "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 1, "special", 1);
        if (!o) { json_decref(a); return NULL; }
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *vocab_json(const ax_tokenizer *t, const char *path) {
    json_t *v = json_object();
    ax_bytes s = {0};
    for (int32_t id = 0; id < t->n; id++) {
        if (t->tok_len[id] < 0) continue;
        const ax_tok_special *sp = special_of(t, id);
        if (sp) { s.n = 0; ax_bytes_append(&s, sp->s, (size_t)sp->len); }
        else bytelevel_encode(tok_bytes(t, id), (size_t)t->tok_len[id], &s);
        if (json_object_get(v, s.p) || json_object_set_new(v, s.p, json_integer(id))) {
            AX_ERR("%s: cannot save: token %d ('%s') is not unique or not UTF-8", path, id, s.p);
            json_decref(v); v = NULL;
            break;
        }
    }
    ax_bytes_free(&s);
    return v;
}

/* Merges in rank order as "a b" strings, the form every tokenizers version reads. */
static json_t *merges_json(const ax_tokenizer *t) {
    merge_row *rows = ax_malloc((t->merges.n + 1) * sizeof *rows);
    size_t n = 0;
    for (size_t i = 0; i < t->merges.cap; i++) {
        const ax_pmap_slot *s = &t->merges.slot[i];
        if (s->key != AX_PMAP_EMPTY) rows[n++] = (merge_row){s->val >> 32, (int32_t)(s->key >> 32), (int32_t)(uint32_t)s->key};
    }
    qsort(rows, n, sizeof *rows, merge_row_cmp);
    json_t *m = json_array();
    ax_bytes a = {0}, b = {0};
    for (size_t i = 0; i < n; i++) {
        bytelevel_encode(tok_bytes(t, rows[i].a), (size_t)t->tok_len[rows[i].a], &a);
        bytelevel_encode(tok_bytes(t, rows[i].b), (size_t)t->tok_len[rows[i].b], &b);
        ax_bytes_append(&a, " ", 1);
        ax_bytes_append(&a, b.p, b.n);
        json_array_append_new(m, json_stringn(a.p, a.n));
    }
    ax_bytes_free(&a); ax_bytes_free(&b);
    free(rows);
    return m;
}

/* Laid out like GPT-2's tokenizer.json on the Hugging Face Hub. */
int ax_tok_save_json(const ax_tokenizer *t, const char *path) {
    json_t *added = added_json(t), *vocab = vocab_json(t, path);
    if (!added || !vocab) {
        json_decref(added); json_decref(vocab);
        return added ? -1 : AX_ERR("%s: cannot save: a special token is not UTF-8", path);
    }
    json_t *model = json_pack("{s:s, s:n, s:n, s:s, s:s, s:b, s:b, s:b, s:o, s:o}", "type", "BPE", "dropout",
                              "unk_token", "continuing_subword_prefix", "", "end_of_word_suffix", "", "fuse_unk", 0,
                              "byte_fallback", 0, "ignore_merges", t->ignore_merges, "vocab", vocab, "merges",
                              merges_json(t));
    json_t *root = json_pack("{s:s, s:n, s:n, s:o, s:n, s:o, s:o, s:o, s:o}", "version", "1.0", "truncation",
                             "padding", "added_tokens", added, "normalizer", "pre_tokenizer", bytelevel_json(0, 1),
                             "post_processor", bytelevel_json(1, 0), "decoder", bytelevel_json(1, 1), "model", model);
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!text) return AX_ERR("%s: cannot save: JSON encoding failed", path);
    ax_outfile o;
    int rc = ax_out_open(&o, path);
    if (!rc && (ax_out_write(&o, text, strlen(text)) || ax_out_write(&o, "\n", 1))) { ax_out_abort(&o); rc = -1; }
    else if (!rc) rc = ax_out_commit(&o);
    free(text);
    return rc;
}
