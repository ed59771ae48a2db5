/* Pre-tokenisation (tokenizer.h): special tokens cut out first (when
 * asked), invalid UTF-8 bytes as pieces of their own, and the valid runs
 * between them cut by the splitting steps with PCRE2: GPT-2's pattern, or
 * the Split patterns of a tokenizer.json (Llama-3's), one after the other. */
#define _GNU_SOURCE           /* memmem */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include <pcre2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* White_Space, which is what \s means to tiktoken's regex engine and to
 * Oniguruma (`tokenizers`); spelling it out keeps the split independent of
 * how a PCRE2 version defines \s under PCRE2_UCP. */
#define WS   "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
/* Oniguruma's \w: Letter, Mark, Decimal_Number, Connector_Punctuation. */
#define WORD "\\p{L}\\p{M}\\p{Nd}\\p{Pc}"
static const char gpt2_pattern[] =
    "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";

/* A pattern written for Oniguruma, as PCRE2 reads it alike: the shorthand
 * classes spelt out as Oniguruma defines them under Unicode; those PCRE2
 * reads otherwise (\h is a hex digit there) or that cannot be spelt out
 * inside a class (\S, \W, \D), and class intersection (&&), are refused.
 * Everything else (\p{..}, (?i:..), {m,n}, lookahead) means the same to both. */
static int translate(const char *p, ax_bytes *out, const char *what) {
    int in_class = 0, class_start = 0;
    out->n = 0;
    for (size_t i = 0; p[i]; i++) {
        char c = p[i];
        if (c == '\\' && p[i + 1]) {
            char e = p[++i];
            const char *rep = NULL;
            if (e == 's') rep = in_class ? WS : "[" WS "]";
            else if (e == 'd') rep = "\\p{Nd}";
            else if (e == 'w') rep = in_class ? WORD : "[" WORD "]";
            else if (!in_class && e == 'S') rep = "[^" WS "]";
            else if (!in_class && e == 'D') rep = "\\P{Nd}";
            else if (!in_class && e == 'W') rep = "[^" WORD "]";
            else if (e == 'S' || e == 'D' || e == 'W' || e == 'h' || e == 'H')
                return AX_ERR("%s: \\%c%s is not supported in a Split pattern", what, e,
                              in_class ? " inside [...]" : "");
            if (rep) ax_bytes_append(out, rep, strlen(rep));
            else {
                char two[2] = {'\\', e};
                ax_bytes_append(out, two, 2);
            }
            class_start = 0;
            continue;
        }
        if (in_class && c == '&' && p[i + 1] == '&')
            return AX_ERR("%s: class intersection (&&) is not supported in a Split pattern", what);
        if (!in_class && c == '[') {
            in_class = 1;
            class_start = 1;
        } else if (in_class && c == '^' && class_start == 1) class_start = 2;
        else if (in_class && c == ']' && !class_start) in_class = 0;
        else class_start = 0; /* a ']' first in a class is literal */
        ax_bytes_append(out, &c, 1);
    }
    return 0;
}

static void *compile(const char *re_src, size_t n, uint32_t opts, const char *what) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)re_src, n, PCRE2_UTF | PCRE2_UCP | opts, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        AX_ERR("%s: PCRE2 rejects the pattern at offset %zu: %s", what, (size_t)off, (char *)msg);
        return NULL;
    }
    /* Without JIT support (some builds/architectures) the interpreter is used. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

int ax_tk_add_split(ax_tokenizer *t, const char *pattern, int literal, const char *what) {
    if (t->nsplit == AX_TK_MAX_SPLITS) return AX_ERR("%s: more than %d splitting steps", what, AX_TK_MAX_SPLITS);
    void *re;
    if (!pattern) {
        re = compile(gpt2_pattern, PCRE2_ZERO_TERMINATED, 0, what);
        if (!re) ax_fatal(__FILE__, __LINE__, "%s", ax_err_msg());
    } else if (literal) {
        re = compile(pattern, strlen(pattern), PCRE2_LITERAL, what);
    } else {
        ax_bytes b = {0};
        re = translate(pattern, &b, what) ? NULL : compile(b.p, b.n, 0, what);
        ax_bytes_free(&b);
    }
    if (!re) return -1;
    ax_tk_split *s = &t->split[t->nsplit++];
    s->re = re;
    s->src = pattern ? ax_strdup(pattern) : NULL;
    s->literal = literal;
    return 0;
}

void ax_tk_splits_free(ax_tokenizer *t) {
    for (int i = 0; i < t->nsplit; i++) {
        pcre2_code_free(t->split[i].re);
        free(t->split[i].src);
    }
    t->nsplit = 0;
}

/* Length of the well-formed UTF-8 character at p (RFC 3629: no overlongs,
 * surrogates or code points above U+10FFFF), 0 if there is none. This is
 * exactly what PCRE2 accepts as UTF-8, so runs of such characters can be
 * matched with PCRE2_NO_UTF_CHECK. */
int ax_tk_utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    if (c < 0xc2 || c > 0xf4) return 0;
    int k = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (n < (size_t)k) return 0;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c == 0xe0) lo = 0xa0;
    else if (c == 0xed) hi = 0x9f;
    else if (c == 0xf0) lo = 0x90;
    else if (c == 0xf4) hi = 0x8f;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < k; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    return k;
}

typedef struct {
    const ax_tokenizer *t;
    pcre2_match_data *md;
    ax_tk_piece_fn fn;
    void *ctx;
} piece_run;

static void split_step(const piece_run *r, int k, const char *s, size_t n);

/* A piece of step k goes on to step k + 1, or out after the last. */
static void emit(const piece_run *r, int k, const char *s, size_t n) {
    if (k + 1 < r->t->nsplit) split_step(r, k + 1, s, n);
    else r->fn(r->ctx, s, n, -1);
}

/* Cuts valid UTF-8 s[0..n) by pattern k, keeping the matches and the text
 * between them as pieces (`tokenizers`' "Isolated"). The piece is the whole
 * subject, so a (?!\S) lookahead treats its end as the end of the text, as
 * each step of a Hugging Face Sequence sees only the pieces of the one before. */
static void split_step(const piece_run *r, int k, const char *s, size_t n) {
    size_t pos = 0;
    const pcre2_code *re = r->t->split[k].re;
    while (pos < n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, r->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) {
            emit(r, k, s + pos, n - pos);
            return;
        }
        /* Otherwise not expected unless PCRE2 hits a resource limit: the
         * rest stays one piece, still lossless. */
        if (rc < 0) {
            r->fn(r->ctx, s + pos, n - pos, -1);
            return;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
        size_t b = ov[0], e = ov[1];
        if (b > pos) emit(r, k, s + pos, b - pos);
        if (e <= b && b >= n) return;                                                    /* an empty match at the end */
        if (e <= b) e = b + (size_t)ax_tk_utf8_len((const unsigned char *)s + b, n - b); /* no empty matches */
        emit(r, k, s + b, e - b);
        pos = e;
    }
}

static void split_valid(const piece_run *r, const char *s, size_t n) {
    if (r->t->nsplit) split_step(r, 0, s, n);
    else if (n) r->fn(r->ctx, s, n, -1);
}

/* Invalid bytes cannot reach PCRE2: each is a piece of its own, and the
 * valid runs between them are split by the pattern (the same on every PCRE2
 * version, unlike PCRE2_MATCH_INVALID_UTF which needs 10.34). */
static void split_ordinary(const piece_run *r, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0, i = 0;
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        int k = ax_tk_utf8_len(u + i, n - i);
        if (k) {
            i += (size_t)k;
            continue;
        }
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

/* Match data per thread, so splitting needs no locks and ax_tok_encode may
 * run on several threads at once. */
static pthread_key_t md_key;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void md_destroy(void *p) { pcre2_match_data_free(p); }

static void md_init(void) {
    if (pthread_key_create(&md_key, md_destroy) != 0) ax_fatal(__FILE__, __LINE__, "pthread_key_create failed");
}

static pcre2_match_data *thread_md(void) {
    pthread_once(&md_once, md_init);
    pcre2_match_data *md = pthread_getspecific(md_key);
    if (!md) {
        md = pcre2_match_data_create(1, NULL);
        if (!md) ax_fatal(__FILE__, __LINE__, "out of memory (PCRE2 match data)");
        pthread_setspecific(md_key, md);
    }
    return md;
}

void ax_tk_pieces(const ax_tokenizer *t, const char *text, size_t len, int allow_special, ax_tk_piece_fn fn,
                  void *ctx) {
    piece_run r = {t, thread_md(), fn, ctx};
    if (!allow_special || !t->nspec) {
        split_ordinary(&r, text, len);
        return;
    }
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
