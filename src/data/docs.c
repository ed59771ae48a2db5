#define _GNU_SOURCE 1
#include "data/docs.h"
#include "util/err.h"
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECE (1 << 20)

struct ax_docreader {
    FILE *f;
    char *path;
    ax_docs_format fmt;
    long lineno;
    char *line;
    size_t line_cap;
    char *buf;
    size_t n, cap; /* the current record */
    int in_plain;  /* a plain document has started */
    char *carry;
    size_t carry_n; /* plain text read past the last piece's cut */
};

static void buf_add(ax_docreader *r, const char *p, size_t n) {
    if (r->n + n + 1 > r->cap) {
        r->cap = (r->n + n + 1) * 2;
        r->buf = realloc(r->buf, r->cap);
        if (!r->buf) ax_fatal(__FILE__, __LINE__, "out of memory reading %s", r->path);
    }
    memcpy(r->buf + r->n, p, n);
    r->n += n;
    r->buf[r->n] = 0;
}

static int is_percent_line(const char *l, ssize_t n) {
    return (n == 1 && l[0] == '%') || (n == 2 && l[0] == '%' && l[1] == '\n') ||
           (n == 3 && l[0] == '%' && l[1] == '\r' && l[2] == '\n');
}

static ax_docs_format sniff(FILE *f, const char *path) {
    size_t pl = strlen(path);
    if ((pl > 6 && strcmp(path + pl - 6, ".jsonl") == 0) || (pl > 5 && strcmp(path + pl - 5, ".json") == 0))
        return AX_DOCS_JSONL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    size_t seen = 0;
    ax_docs_format k = AX_DOCS_PLAIN;
    while (seen < 65536 && (n = getline(&line, &cap, f)) > 0) {
        seen += n;
        if (is_percent_line(line, n)) {
            k = AX_DOCS_FORTUNE;
            break;
        }
    }
    free(line);
    rewind(f);
    return k;
}

int ax_docs_open(ax_docreader **out, const char *path, ax_docs_format fmt) {
    FILE *f = fopen(path, "rb");
    if (!f) return AX_ERR("%s: cannot open: %s", path, strerror(errno));
    ax_docreader *r = ax_calloc(1, sizeof *r);
    r->f = f;
    r->path = ax_strdup(path);
    r->fmt = fmt == AX_DOCS_AUTO ? sniff(f, path) : fmt;
    *out = r;
    return 0;
}

ax_docs_format ax_docs_kind(const ax_docreader *r) { return r->fmt; }

void ax_docs_close(ax_docreader *r) {
    if (!r) return;
    fclose(r->f);
    free(r->path);
    free(r->line);
    free(r->buf);
    free(r->carry);
    free(r);
}

static int next_jsonl(ax_docreader *r, const char **doc, size_t *len) {
    ssize_t n;
    while ((n = getline(&r->line, &r->line_cap, r->f)) > 0) {
        r->lineno++;
        size_t k = (size_t)n;
        while (k && (r->line[k - 1] == '\n' || r->line[k - 1] == '\r' || r->line[k - 1] == ' ')) k--;
        if (k == 0) continue;
        json_error_t e;
        json_t *j = json_loadb(r->line, k, JSON_ALLOW_NUL, &e);
        if (!j) return AX_ERR("%s:%ld: invalid JSON: %s", r->path, r->lineno, e.text);
        json_t *t = json_object_get(j, "text");
        if (!json_is_string(t)) {
            json_decref(j);
            return AX_ERR("%s:%ld: expected an object with a string field \"text\"", r->path, r->lineno);
        }
        r->n = 0;
        buf_add(r, json_string_value(t), json_string_length(t));
        json_decref(j);
        if (r->n == 0) continue;
        *doc = r->buf;
        *len = r->n;
        return 1;
    }
    if (ferror(r->f)) return AX_ERR("%s: read error", r->path);
    return 0;
}

static int next_fortune(ax_docreader *r, const char **doc, size_t *len) {
    ssize_t n;
    r->n = 0;
    while ((n = getline(&r->line, &r->line_cap, r->f)) > 0) {
        r->lineno++;
        if (is_percent_line(r->line, n)) {
            if (r->n) {
                *doc = r->buf;
                *len = r->n;
                return 1;
            }
            continue;
        }
        buf_add(r, r->line, (size_t)n);
    }
    if (ferror(r->f)) return AX_ERR("%s: read error", r->path);
    if (r->n) {
        *doc = r->buf;
        *len = r->n;
        return 1;
    }
    return 0;
}

static int ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int ascii_alnum(char c) { return ascii_letter(c) || (c >= '0' && c <= '9'); }

/* A piece may only end where the pre-tokenisation of GPT-2 and of Llama-3
 * always splits, so the pieces encode like the whole: before a line break
 * that follows an ASCII letter or digit (after punctuation Llama-3's pattern
 * keeps the line breaks with it), or before a space between two ASCII letters
 * (" word" is a piece of both patterns). */
static size_t plain_cut(const char *b, size_t n) {
    for (size_t i = n - 1; i > 0; i--)
        if ((b[i] == '\n' && ascii_alnum(b[i - 1])) ||
            (b[i] == ' ' && i + 1 < n && ascii_letter(b[i - 1]) && ascii_letter(b[i + 1])))
            return i;
    return 0;
}

static int next_plain(ax_docreader *r, const char **doc, size_t *len, int *continues) {
    ssize_t n;
    r->n = 0;
    if (r->carry_n) {
        buf_add(r, r->carry, r->carry_n);
        r->carry_n = 0;
    }
    size_t cut = 0;
    while ((r->n < PIECE || !(cut = plain_cut(r->buf, r->n))) && (n = getline(&r->line, &r->line_cap, r->f)) > 0) {
        r->lineno++;
        buf_add(r, r->line, (size_t)n);
    }
    if (ferror(r->f)) return AX_ERR("%s: read error", r->path);
    if (!r->n) return 0;
    if (cut) { /* keep the rest for the next piece */
        r->carry_n = r->n - cut;
        r->carry = realloc(r->carry, r->carry_n);
        memcpy(r->carry, r->buf + cut, r->carry_n);
        r->n = cut;
    }
    *continues = r->in_plain;
    r->in_plain = 1;
    *doc = r->buf;
    *len = r->n;
    return 1;
}

int ax_docs_next(ax_docreader *r, const char **doc, size_t *len, int *continues) {
    *continues = 0;
    switch (r->fmt) {
    case AX_DOCS_JSONL: return next_jsonl(r, doc, len);
    case AX_DOCS_FORTUNE: return next_fortune(r, doc, len);
    default: return next_plain(r, doc, len, continues);
    }
}
