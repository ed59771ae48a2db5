/* tiktoken rank files: one "<base64 token> <rank>" per line, the rank being
 * the id; merges are derived from the ranks and <|endoftext|> is added. */
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        parts = ax_tk_grow(parts, &cap, (size_t)len, sizeof *parts);
        if (ax_tk_bpe(t, (const unsigned char *)ax_tk_bytes(t, id), (size_t)len, parts) == 2)
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

int ax_tk_load_tiktoken(ax_tokenizer *t, const char *data, size_t len, const char *path) {
    ax_bytes tok = {0};
    char where[4200];
    int line = 0, rc = 0;
    for (const char *p = data, *end = data + len; p < end && !rc;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        line++;
        while (le > p && (le[-1] == '\r' || le[-1] == ' ')) le--;
        if (le == p) {
            p = next;
            continue;
        }
        const char *sp = memchr(p, ' ', (size_t)(le - p));
        int32_t rank;
        snprintf(where, sizeof where, "%s:%d", path, line);
        if (!sp || parse_rank(sp + 1, le, &rank))
            rc = AX_ERR("%s: expected '<base64 token> <rank>', got '%.*s'", where, (int)(le - p < 40 ? le - p : 40), p);
        else if (b64_decode(p, (size_t)(sp - p), &tok))
            rc = AX_ERR("%s: invalid base64 token '%.*s'", where, (int)(sp - p < 40 ? sp - p : 40), p);
        else rc = ax_tk_add(t, rank, tok.p, tok.n, 0, where);
        p = next;
    }
    ax_bytes_free(&tok);
    if (rc) return -1;
    if (!t->n) return AX_ERR("%s: no tokens (expected lines of '<base64 token> <rank>')", path);
    AX_TRY(ax_tk_finish(t, path));
    derive_merges(t);
    t->ignore_merges = 1;
    return ax_tk_add(t, t->n, AX_TK_EOT, strlen(AX_TK_EOT), 1, path);
}
