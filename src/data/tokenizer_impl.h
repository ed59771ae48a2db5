/* Private to the tokenizer's files (list in tokenizer.c) and bpe_train.c:
 * the tokenizer's tables, two hash maps, the steps that build a tokenizer
 * (used by the loaders and the trainer alike, so a trained tokenizer is an
 * ordinary one), and what the file formats share. */
#ifndef AX_DATA_TOKENIZER_IMPL_H
#define AX_DATA_TOKENIZER_IMPL_H
#include "data/tokenizer.h"
#include <jansson.h>
#include <stdint.h>

#define AX_TOK_MAX_ID (1 << 24) /* sanity bound on ids read from files */
#define AX_TK_EOT     "<|endoftext|>"

void *ax_tk_grow(void *p, size_t *cap, size_t need, size_t elem); /* doubling realloc, aborts when out of memory */
int32_t *ax_tk_ids_reserve(ax_ids *a, size_t extra);              /* room for extra more ids at a->v + a->n */

/* Byte-string keys -> int64 values, open addressing. Keys are copied into an
 * arena, so callers may pass transient buffers. */
typedef struct {
    uint64_t hash, off;
    uint32_t len;
    int64_t val;
} ax_smap_slot;
typedef struct {
    ax_smap_slot *slot;
    size_t cap, n;
    ax_bytes keys;
} ax_smap;
int64_t *ax_smap_get(const ax_smap *m, const void *key, size_t len);       /* NULL if absent */
int64_t *ax_smap_put(ax_smap *m, const void *key, size_t len, int *added); /* new: value 0 */
const char *ax_smap_key(const ax_smap *m, const ax_smap_slot *s);
void ax_smap_free(ax_smap *m);

/* uint64 keys (a pair of ids, a << 32 | b) -> int64 values. */
typedef struct {
    uint64_t key;
    int64_t val;
} ax_pmap_slot;
typedef struct {
    ax_pmap_slot *slot;
    size_t cap, n;
} ax_pmap;
#define AX_PMAP_EMPTY UINT64_MAX
int64_t *ax_pmap_get(const ax_pmap *m, uint64_t key);
int64_t *ax_pmap_put(ax_pmap *m, uint64_t key, int *added);
void ax_pmap_free(ax_pmap *m);
static inline uint64_t ax_pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

typedef struct {
    char *s;
    int len;
    int32_t id;
    int marked;
} ax_tok_special; /* marked: "special": true in the file */

/* One step of pre-tokenisation: a compiled pattern and how the file spelt it
 * (src NULL: GPT-2's pattern, ByteLevel's own regex). */
typedef struct {
    void *re;
    char *src;
    int literal;
} ax_tk_split;
enum { AX_TK_MAX_SPLITS = 4 };

struct ax_tokenizer {
    int n;             /* ids 0 .. n-1 (some may be unused) */
    size_t id_cap;     /* ids tok_len and tok_off have room for */
    int32_t *tok_len;  /* bytes of id, -1 for an unused id */
    uint64_t *tok_off; /* offset of id's bytes in tok_bytes */
    ax_bytes tok_bytes;
    ax_smap vocab;        /* bytes -> id, ordinary tokens only */
    ax_pmap merges;       /* (a, b) -> rank << 32 | merged id */
    int32_t byte_id[256]; /* the token of each single byte */
    ax_tok_special *spec;
    int nspec, eot;
    int ignore_merges;                   /* a piece that is a whole token is taken as is (tiktoken) */
    ax_tk_split split[AX_TK_MAX_SPLITS]; /* applied in turn, each to the pieces of the one before */
    int nsplit;                          /* 0 until set: ax_tk_finish puts GPT-2's */
    ax_ids tpl_pre, tpl_post;            /* the post-processor's ids before and after a text (Llama-3: BOS before) */
    uint64_t serial;                     /* distinguishes tokenizers in the per-thread caches */
};

/* GPT-2's bytes_to_unicode table, in closed form: the 188 printable Latin-1
 * bytes (33-126, 161-172, 174-255) stand for themselves, the other 68 (0-32,
 * 127-160, 173) for U+0100..U+0143 in byte order. Token strings in vocab.json,
 * merges.txt and tokenizer.json are written in these characters. */
static inline int ax_tk_printable(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; }
static inline int ax_tk_byte_char(int b) {
    return ax_tk_printable(b) ? b : 256 + (b <= 32 ? b : b <= 160 ? b - 94 : 67);
}
static inline int ax_tk_char_byte(uint32_t cp) { /* -1: not in the alphabet */
    if (cp < 256) return ax_tk_printable((int)cp) ? (int)cp : -1;
    if (cp > 256 + 67) return -1;
    cp -= 256;
    return cp <= 32 ? (int)cp : cp <= 66 ? (int)cp + 94 : 173;
}
/* GPT-2's ids of the byte tokens, also used by the trainer: the printable
 * bytes in ascending order (ids 0-187), then the others (ids 188-255). */
static inline int ax_tk_id_byte(int i) {
    return i < 94    ? 33 + i
           : i < 106 ? 161 + (i - 94)
           : i < 188 ? 174 + (i - 106)
                     : ax_tk_char_byte((uint32_t)(256 + i - 188));
}

/* Building: new, add tokens and merges (in any order), finish (checks that
 * all 256 bytes have a token; fails with "<what>: ..." on a problem). */
ax_tokenizer *ax_tk_new(void);
int ax_tk_add(ax_tokenizer *t, int32_t id, const void *bytes, size_t len, int special, const char *what);
int ax_tk_merge(ax_tokenizer *t, int32_t a, int32_t b, int32_t rank, int32_t id);
int ax_tk_finish(ax_tokenizer *t, const char *what);
static inline const char *ax_tk_bytes(const ax_tokenizer *t, int32_t id) { return t->tok_bytes.p + t->tok_off[id]; }
const ax_tok_special *ax_tk_special_of(const ax_tokenizer *t, int32_t id); /* NULL: not a special */

/* BPE of the bytes p[0..n) (no cache, no ignore_merges): writes at most n ids,
 * returns how many. ax_tk_cache_drop forgets t's word cache on this thread. */
size_t ax_tk_bpe(const ax_tokenizer *t, const unsigned char *p, size_t n, int32_t *out);
void ax_tk_cache_drop(const ax_tokenizer *t);

/* Adds a splitting step: pattern NULL for GPT-2's, else a Hugging Face Split
 * pattern (Oniguruma syntax, translated for PCRE2; literal: a plain string).
 * Errors name what. ax_tk_splits_free releases them all. */
int ax_tk_add_split(ax_tokenizer *t, const char *pattern, int literal, const char *what);
void ax_tk_splits_free(ax_tokenizer *t);
/* Length of the well-formed UTF-8 character at p[0..n), 0 if there is none. */
int ax_tk_utf8_len(const unsigned char *p, size_t n);

/* Splits text into pieces: special tokens (when allow_special; special >= 0
 * is the id), runs of valid UTF-8 cut by the splitting steps, and single
 * invalid bytes. Calls fn for each piece in order. */
typedef void (*ax_tk_piece_fn)(void *ctx, const char *p, size_t n, int32_t special);
void ax_tk_pieces(const ax_tokenizer *t, const char *text, size_t len, int allow_special, ax_tk_piece_fn fn, void *ctx);

/* Token strings in GPT-2's byte alphabet <-> bytes (out is overwritten;
 * decode fails on a character outside the alphabet or broken UTF-8). */
int ax_tk_bytelevel_decode(const char *s, size_t n, ax_bytes *out);
void ax_tk_bytelevel_encode(const char *p, size_t n, ax_bytes *out);
/* A vocabulary object (token string -> id; ids of specials already added
 * are skipped), one merge "a b" of the given rank, and cutting "a b" at its
 * space (*sp; -1 unless exactly two non-empty tokens). Errors name where. */
int ax_tk_load_vocab(ax_tokenizer *t, json_t *vocab, const char *path);
int ax_tk_merge_str(ax_tokenizer *t, const char *a, size_t na, const char *b, size_t nb, int32_t rank,
                    const char *where);
int ax_tk_split_merge(const char *p, size_t n, size_t *sp);

/* The file formats, into a tokenizer from ax_tk_new (ax_tok_load tells them apart). */
int ax_tk_load_tiktoken(ax_tokenizer *t, const char *data, size_t len, const char *path);
int ax_tk_load_vocab_json(ax_tokenizer *t, json_t *root, const char *path);
int ax_tk_load_hf(ax_tokenizer *t, json_t *root, const char *path);
#endif
