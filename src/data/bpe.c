/* BPE encoding (tokenizer.h): each piece of the pre-tokeniser is merged by
 * rank, lowest first and leftmost on a tie, with the ids of pieces seen
 * before taken from a per-thread word cache. */
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t serial, used;
    ax_smap words;
    ax_ids ids;
} word_cache;
enum { CACHE_WAYS = 4, CACHE_MAX_WORD = 256, CACHE_MAX_WORDS = 1 << 20 };
typedef struct {
    word_cache c[CACHE_WAYS];
    uint64_t clock;
} tok_tls;

/* ---- per-thread word caches ---- */

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
        if (c->serial == t->serial) {
            c->used = ++s->clock;
            return c;
        }
        if (c->used < lru->used) lru = c;
    }
    cache_reset(lru, t->serial);
    lru->used = ++s->clock;
    return lru;
}

/* This thread's cache of t; other threads' caches age out. */
void ax_tk_cache_drop(const ax_tokenizer *t) {
    pthread_once(&tls_once, tls_init);
    tok_tls *s = pthread_getspecific(tls_key);
    if (s)
        for (int i = 0; i < CACHE_WAYS; i++)
            if (s->c[i].serial == t->serial) cache_reset(&s->c[i], 0);
}

/* ---- the merge loop ---- */

typedef struct {
    uint64_t key;
    int32_t a, b, z;
} merge_ent; /* key: rank << 32 | position */

static void heap_push(merge_ent *h, size_t *n, merge_ent e) {
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2].key > e.key) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
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
        h[i] = h[c];
        i = c;
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
size_t ax_tk_bpe(const ax_tokenizer *t, const unsigned char *p, size_t n, int32_t *out) {
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
        if (id[l] != e.a || r < 0 || id[r] != e.b) continue; /* stale */
        id[l] = e.z;
        id[r] = -1;
        next[l] = next[r];
        if (next[r] >= 0) prev[next[r]] = l;
        if (prev[l] >= 0) try_pair(t, id, prev[l], l, h, &nh);
        if (next[l] >= 0) try_pair(t, id, l, next[l], h, &nh);
    }
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) out[k++] = id[i];
    if (big) {
        free(id);
        free(h);
    }
    return k;
}

/* Ids of one piece, from the cache when it was seen before on this thread. */
static void encode_piece(const ax_tokenizer *t, word_cache *c, const unsigned char *p, size_t n, ax_ids *out) {
    enum { PIECE_MAX = 1 << 30 };
    if (n > PIECE_MAX) { /* positions are int32: a gigabyte-long word is merged in parts */
        for (size_t off = 0; off < n; off += PIECE_MAX)
            encode_piece(t, c, p + off, n - off < PIECE_MAX ? n - off : PIECE_MAX, out);
        return;
    }
    if (n == 1) {
        ax_ids_push(out, t->byte_id[p[0]]);
        return;
    }
    int cacheable = n <= CACHE_MAX_WORD;
    if (cacheable) {
        int64_t *v = ax_smap_get(&c->words, p, n);
        if (v) {
            size_t off = (size_t)(*v >> 9), k = (size_t)(*v & 511);
            memcpy(ax_tk_ids_reserve(out, k), c->ids.v + off, k * sizeof *out->v);
            out->n += k;
            return;
        }
    }
    if (t->ignore_merges) {
        int64_t *v = ax_smap_get(&t->vocab, p, n);
        if (v) {
            ax_ids_push(out, (int32_t)*v);
            return;
        }
    }
    int32_t *dst = ax_tk_ids_reserve(out, n);
    size_t k = ax_tk_bpe(t, p, n, dst);
    out->n += k;
    if (!cacheable) return;
    if (c->words.n >= CACHE_MAX_WORDS) cache_reset(c, t->serial); /* bounds memory on endless new words */
    int64_t *v = ax_smap_put(&c->words, p, n, NULL);
    *v = (int64_t)c->ids.n << 9 | (int64_t)k;
    memcpy(ax_tk_ids_reserve(&c->ids, k), out->v + out->n - k, k * sizeof *out->v);
    c->ids.n += k;
}

typedef struct {
    const ax_tokenizer *t;
    word_cache *c;
    ax_ids *out, *at;
    const char *text;
} encode_ctx;

static void encode_cb(void *ctx, const char *p, size_t n, int32_t special) {
    encode_ctx *e = ctx;
    size_t first = e->out->n;
    if (special >= 0) ax_ids_push(e->out, special);
    else encode_piece(e->t, e->c, (const unsigned char *)p, n, e->out);
    /* a piece's tokens spell it in order, so each starts where the one before ends */
    int32_t off = (int32_t)(p - e->text);
    for (size_t i = first; e->at && i < e->out->n; i++) {
        ax_ids_push(e->at, off);
        off += special >= 0 ? (int32_t)n : e->t->tok_len[e->out->v[i]];
    }
}

static void push_all(ax_ids *out, const ax_ids *a, ax_ids *at, int32_t off) {
    for (size_t i = 0; i < a->n; i++) {
        ax_ids_push(out, a->v[i]);
        if (at) ax_ids_push(at, off);
    }
}

static int encode(const ax_tokenizer *t, const char *text, size_t len, int flags, ax_ids *out, ax_ids *at) {
    encode_ctx e = {t, cache_for(t), out, at, text};
    if (flags & AX_TOK_TEMPLATE) push_all(out, &t->tpl_pre, at, 0);
    ax_tk_pieces(t, text, len, flags & AX_TOK_SPECIAL, encode_cb, &e);
    if (flags & AX_TOK_TEMPLATE) push_all(out, &t->tpl_post, at, (int32_t)len);
    return 0;
}

int ax_tok_encode(const ax_tokenizer *t, const char *text, size_t len, int flags, ax_ids *out) {
    return encode(t, text, len, flags, out, NULL);
}

int ax_tok_encode_at(const ax_tokenizer *t, const char *text, size_t len, int flags, ax_ids *out, ax_ids *at) {
    if (len > INT32_MAX) return AX_ERR("encode: %zu bytes, more than offsets of %d can name", len, INT32_MAX);
    return encode(t, text, len, flags, out, at);
}
