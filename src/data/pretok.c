/* Pre-tokenisation (tokenizer.h): special tokens cut out first (when
 * asked), invalid UTF-8 bytes as pieces of their own, and the valid runs
 * between them cut by the GPT-2 pattern with PCRE2. */
#define _GNU_SOURCE                 /* memmem */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include <pcre2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The GPT-2 pattern, with \s spelt out as Unicode White_Space: that is what
 * \s means to tiktoken's regex engine, and spelling it out keeps the split
 * independent of how a PCRE2 version defines \s under PCRE2_UCP. */
#define WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static const char gpt2_pattern[] =
    "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";

void *ax_tk_pattern_gpt2(void) {
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
    return re;
}

void ax_tk_pattern_free(void *re) { pcre2_code_free(re); }

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
        if (e <= b) e = b + (size_t)ax_tk_utf8_len((const unsigned char *)s + b, n - b);  /* no empty matches */
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
        int k = ax_tk_utf8_len(u + i, n - i);
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

void ax_tk_pieces(const ax_tokenizer *t, const char *text, size_t len, int allow_special,
                  ax_tk_piece_fn fn, void *ctx) {
    piece_run r = {t, thread_md(), fn, ctx};
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
