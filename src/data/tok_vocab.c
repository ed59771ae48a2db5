/* GPT-2's own files, vocab.json + merges.txt, and the pieces tokenizer.json
 * shares with them: token strings in GPT-2's byte alphabet, the vocabulary
 * object, merges written "a b". */
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- token strings in GPT-2's byte alphabet ---- */

/* Bytes of a token written in GPT-2's byte characters; -1 if a character is
 * not one of them (or the UTF-8 is broken: merges.txt is read unchecked). */
int ax_tk_bytelevel_decode(const char *s, size_t n, ax_bytes *out) {
    const unsigned char *u = (const unsigned char *)s;
    out->n = 0;
    for (size_t i = 0; i < n;) {
        int k = ax_tk_utf8_len(u + i, n - i);
        if (!k) return -1;
        uint32_t cp = k == 1 ? u[i] : k == 2 ? (uint32_t)(u[i] & 0x1f) << 6 | (u[i + 1] & 0x3f) : 0x110000;
        int b = ax_tk_char_byte(cp); /* the alphabet ends at U+0143: two bytes at most */
        if (b < 0) return -1;
        unsigned char c = (unsigned char)b;
        ax_bytes_append(out, &c, 1);
        i += (size_t)k;
    }
    return 0;
}

void ax_tk_bytelevel_encode(const char *p, size_t n, ax_bytes *out) {
    out->n = 0;
    for (size_t i = 0; i < n; i++) {
        int c = ax_tk_byte_char((unsigned char)p[i]);
        unsigned char u[2] = {(unsigned char)c, 0};
        if (c < 0x80) {
            ax_bytes_append(out, u, 1);
            continue;
        }
        u[0] = (unsigned char)(0xc0 | c >> 6);
        u[1] = (unsigned char)(0x80 | (c & 0x3f));
        ax_bytes_append(out, u, 2);
    }
}

/* ---- vocabulary and merges ---- */

int ax_tk_load_vocab(ax_tokenizer *t, json_t *vocab, const char *path) {
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
        if (ax_tk_special_of(t, (int32_t)id)) continue; /* added tokens are listed here too */
        if (ax_tk_bytelevel_decode(key, strlen(key), &b)) {
            rc = AX_ERR("%s: token '%.40s' has a character outside GPT-2's byte alphabet "
                        "(not a byte-level BPE vocabulary)",
                        path, key);
            break;
        }
        if ((rc = ax_tk_add(t, (int32_t)id, b.p, b.n, 0, path))) break;
    }
    ax_bytes_free(&b);
    return rc;
}

static int token_id(const ax_tokenizer *t, const char *s, size_t n, ax_bytes *tmp, int32_t *id) {
    if (ax_tk_bytelevel_decode(s, n, tmp)) return -1;
    int64_t *v = ax_smap_get(&t->vocab, tmp->p, tmp->n);
    if (!v) return -1;
    *id = (int32_t)*v;
    return 0;
}

/* One merge "a b" of rank `rank`; both tokens and their concatenation must be
 * in the vocabulary. */
int ax_tk_merge_str(ax_tokenizer *t, const char *a, size_t na, const char *b, size_t nb, int32_t rank,
                    const char *where) {
    ax_bytes tmp = {0};
    int32_t ia, ib;
    int rc = 0;
    if (token_id(t, a, na, &tmp, &ia))
        rc = AX_ERR("%s: merge '%.*s %.*s' uses unknown token '%.*s'", where, (int)na, a, (int)nb, b, (int)na, a);
    else if (token_id(t, b, nb, &tmp, &ib))
        rc = AX_ERR("%s: merge '%.*s %.*s' uses unknown token '%.*s'", where, (int)na, a, (int)nb, b, (int)nb, b);
    else {
        tmp.n = 0;
        ax_bytes_append(&tmp, ax_tk_bytes(t, ia), (size_t)t->tok_len[ia]);
        ax_bytes_append(&tmp, ax_tk_bytes(t, ib), (size_t)t->tok_len[ib]);
        int64_t *v = ax_smap_get(&t->vocab, tmp.p, tmp.n);
        if (!v)
            rc = AX_ERR("%s: merge '%.*s %.*s' makes a token that is not in the vocabulary", where, (int)na, a, (int)nb,
                        b);
        else ax_tk_merge(t, ia, ib, rank, (int32_t)*v);
    }
    ax_bytes_free(&tmp);
    return rc;
}

/* "a b": exactly two tokens around one space (byte-level tokens have none). */
int ax_tk_split_merge(const char *p, size_t n, size_t *sp) {
    const char *s = memchr(p, ' ', n);
    if (!s || s == p || s + 1 == p + n || memchr(s + 1, ' ', n - (size_t)(s - p) - 1)) return -1;
    *sp = (size_t)(s - p);
    return 0;
}

/* ---- vocab.json + merges.txt ---- */

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
        if (n == 0 || (line == 1 && n >= 8 && memcmp(p, "#version", 8) == 0)) {
            p = next;
            continue;
        }
        if (ax_tk_split_merge(p, n, &sp))
            rc = AX_ERR("%s: expected two tokens separated by one space, got '%.*s'", where, (int)(n < 40 ? n : 40), p);
        else rc = ax_tk_merge_str(t, p, sp, p + sp + 1, n - sp - 1, rank++, where);
        p = next;
    }
    free(data);
    return rc;
}

/* GPT-2's vocab.json lists <|endoftext|> among the tokens; it is the special. */
int ax_tk_load_vocab_json(ax_tokenizer *t, json_t *root, const char *path) {
    json_t *e = json_object_get(root, AX_TK_EOT);
    if (json_is_integer(e)) AX_TRY(ax_tk_add(t, (int32_t)json_integer_value(e), AX_TK_EOT, strlen(AX_TK_EOT), 1, path));
    AX_TRY(ax_tk_load_vocab(t, root, path));
    AX_TRY(ax_tk_finish(t, path));
    char dir[4096], merges[4200];
    ax_dirname(path, dir, sizeof dir);
    snprintf(merges, sizeof merges, "%s/merges.txt", dir);
    if (!ax_file_exists(merges)) return AX_ERR("%s: expected merges.txt beside it (%s not found)", path, merges);
    return load_merges_txt(t, merges);
}
