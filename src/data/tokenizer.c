/* Byte-level BPE (see tokenizer.h): growable arrays, building a tokenizer,
 * decoding, and telling the file formats apart. The other parts:
 *   tok_maps.c      hash maps
 *   pretok.c        pre-tokenisation (special tokens, invalid bytes, pattern)
 *   bpe.c           the merge loop and encoding, per-thread word caches
 *   tok_vocab.c     vocab.json + merges.txt, GPT-2's byte alphabet
 *   tok_tiktoken.c  tiktoken rank files
 *   tok_hf.c        Hugging Face tokenizer.json
 *   tok_save.c      the tokenizer.json writer
 *   bpe_train.c     the trainer */
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include "util/fileio.h"
#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- growable arrays ---- */

void *ax_tk_grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) ax_fatal(__FILE__, __LINE__, "out of memory growing to %zu x %zu bytes", c, elem);
    *cap = c;
    return q;
}

void ax_ids_push(ax_ids *a, int32_t id) {
    a->v = ax_tk_grow(a->v, &a->cap, a->n + 1, sizeof *a->v);
    a->v[a->n++] = id;
}
int32_t *ax_tk_ids_reserve(ax_ids *a, size_t extra) {
    a->v = ax_tk_grow(a->v, &a->cap, a->n + extra, sizeof *a->v);
    return a->v + a->n;
}
void ax_ids_free(ax_ids *a) {
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* Keeps a NUL after the bytes, so text can be handed to string functions. */
void ax_bytes_append(ax_bytes *b, const void *p, size_t n) {
    b->p = ax_tk_grow(b->p, &b->cap, b->n + n + 1, 1);
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}
void ax_bytes_free(ax_bytes *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---- building a tokenizer ---- */

static atomic_uint_fast64_t tok_serial;

ax_tokenizer *ax_tk_new(void) {
    ax_tokenizer *t = ax_calloc(1, sizeof *t);
    t->eot = -1;
    t->serial = atomic_fetch_add(&tok_serial, 1) + 1;
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    return t;
}

int ax_tk_add(ax_tokenizer *t, int32_t id, const void *bytes, size_t len, int special, const char *what) {
    if (id < 0 || id >= AX_TOK_MAX_ID) return AX_ERR("%s: token id %d out of range [0, %d)", what, id, AX_TOK_MAX_ID);
    if (len == 0) return AX_ERR("%s: token %d is empty", what, id);
    if (id >= t->n) {
        size_t cap = t->id_cap; /* both arrays grow together */
        t->tok_len = ax_tk_grow(t->tok_len, &cap, (size_t)id + 1, sizeof *t->tok_len);
        t->tok_off = ax_tk_grow(t->tok_off, &t->id_cap, (size_t)id + 1, sizeof *t->tok_off);
        for (int i = t->n; i <= id; i++) t->tok_len[i] = -1;
        t->n = id + 1;
    }
    if (t->tok_len[id] >= 0) return AX_ERR("%s: token id %d given twice", what, id);
    if (!special) {
        int added;
        int64_t *v = ax_smap_put(&t->vocab, bytes, len, &added);
        if (!added)
            return AX_ERR("%s: token '%.*s' given twice (ids %d and %d)", what, (int)len, (const char *)bytes, (int)*v,
                          id);
        *v = id;
    } else {
        t->spec = realloc(t->spec, (size_t)(t->nspec + 1) * sizeof *t->spec);
        if (!t->spec) ax_fatal(__FILE__, __LINE__, "out of memory");
        ax_tok_special *s = &t->spec[t->nspec++];
        s->s = ax_malloc(len + 1);
        memcpy(s->s, bytes, len);
        s->s[len] = 0;
        s->len = (int)len;
        s->id = id;
        s->marked = 1;
        if (len == strlen(AX_TK_EOT) && memcmp(bytes, AX_TK_EOT, len) == 0) t->eot = id;
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

int ax_tk_finish(ax_tokenizer *t, const char *what) {
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        int64_t *v = ax_smap_get(&t->vocab, &c, 1);
        if (!v) return AX_ERR("%s: no token for byte 0x%02x (a byte-level BPE needs all 256)", what, b);
        t->byte_id[b] = (int32_t)*v;
    }
    return t->nsplit ? 0 : ax_tk_add_split(t, NULL, 0, what);
}

const ax_tok_special *ax_tk_special_of(const ax_tokenizer *t, int32_t id) {
    for (int i = 0; i < t->nspec; i++)
        if (t->spec[i].id == id) return &t->spec[i];
    return NULL;
}

/* ---- decoding ---- */

/* Checks every id first, so a failed call leaves out as it was. */
int ax_tok_decode(const ax_tokenizer *t, const int32_t *ids, size_t n, ax_bytes *out) {
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n || t->tok_len[id] < 0)
            return AX_ERR("decode: token id %d at position %zu is not in the vocabulary (%d ids)", id, i, t->n);
    }
    for (size_t i = 0; i < n; i++) ax_bytes_append(out, ax_tk_bytes(t, ids[i]), (size_t)t->tok_len[ids[i]]);
    return 0;
}

int ax_tok_vocab_size(const ax_tokenizer *t) { return t->n; }
int ax_tok_eot(const ax_tokenizer *t) { return t->eot; }
int ax_tok_bos(const ax_tokenizer *t) { return t->tpl_pre.n ? t->tpl_pre.v[0] : -1; }

int ax_tok_special_id(const ax_tokenizer *t, const char *text) {
    size_t n = strlen(text);
    for (int i = 0; i < t->nspec; i++)
        if ((size_t)t->spec[i].len == n && memcmp(t->spec[i].s, text, n) == 0) return t->spec[i].id;
    return -1;
}

/* Llama-3 ends a text with <|end_of_text|>, GPT-2 with <|endoftext|>. */
int ax_tok_eos(const ax_tokenizer *t) {
    int id = ax_tok_special_id(t, "<|end_of_text|>");
    return id >= 0 ? id : t->eot;
}

void ax_tok_free(ax_tokenizer *t) {
    if (!t) return;
    ax_tk_cache_drop(t);
    free(t->tok_len);
    free(t->tok_off);
    ax_bytes_free(&t->tok_bytes);
    ax_smap_free(&t->vocab);
    ax_pmap_free(&t->merges);
    for (int i = 0; i < t->nspec; i++) free(t->spec[i].s);
    free(t->spec);
    ax_tk_splits_free(t);
    ax_ids_free(&t->tpl_pre);
    ax_ids_free(&t->tpl_post);
    free(t);
}

/* ---- loading ---- */

static int load_json(ax_tokenizer *t, const char *data, size_t len, const char *path) {
    json_error_t je;
    json_t *root = json_loadb(data, len, 0, &je);
    if (!root) return AX_ERR("%s: malformed JSON at line %d, column %d: %s", path, je.line, je.column, je.text);
    int rc = !json_is_object(root)                            ? AX_ERR("%s: expected a JSON object", path)
             : json_is_object(json_object_get(root, "model")) ? ax_tk_load_hf(t, root, path)
                                                              : ax_tk_load_vocab_json(t, root, path);
    json_decref(root);
    return rc;
}

/* The format is told by the content: a JSON object is a tokenizer.json when
 * its "model" is an object (GPT-2's vocab.json has a token "model", with an
 * id), otherwise a vocab.json; anything else is a tiktoken rank file. A
 * directory stands for the tokenizer.json in it. */
int ax_tok_load(ax_tokenizer **out, const char *path) {
    *out = NULL;
    char *data, inside[4200];
    size_t len;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) { /* a Hugging Face model directory */
        snprintf(inside, sizeof inside, "%s/tokenizer.json", path);
        if (!ax_file_exists(inside)) return AX_ERR("%s: a directory without tokenizer.json", path);
        path = inside;
    }
    AX_TRY(ax_read_file(path, &data, &len));
    ax_tokenizer *t = ax_tk_new();
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) i++;
    int rc = i < len && data[i] == '{' ? load_json(t, data, len, path) : ax_tk_load_tiktoken(t, data, len, path);
    free(data);
    if (rc) {
        ax_tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}
