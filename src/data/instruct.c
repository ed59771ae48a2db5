/* Instruction data (instruct.h): each line rendered to text with the spans
 * that are supervised, encoded whole, the ids cut to T + 1 and kept with a
 * supervised flag per token. */
#define _GNU_SOURCE /* getline */
#include "data/instruct.h"
#include "util/err.h"
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rendered text of one example and its supervised byte spans [a, b). */
typedef struct {
    ax_bytes text;
    ax_ids spans;
} render;

typedef struct {
    const ax_tokenizer *tok;
    const char *bos, *eos; /* texts of the BOS / EOS tokens ("" when none) */
    int llama3;            /* the tokenizer has Llama-3's chat tokens */
} format;

static void put(render *r, const char *s, size_t n, int supervised) {
    if (supervised) {
        ax_ids_push(&r->spans, (int32_t)r->text.n);
        ax_ids_push(&r->spans, (int32_t)(r->text.n + n));
    }
    ax_bytes_append(&r->text, s, n);
}
static void puts0(render *r, const char *s) { put(r, s, strlen(s), 0); }

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Content stripped of ASCII whitespace at both ends, as Llama-3's template does. */
static void content(render *r, const char *s, size_t n, int supervised) {
    while (n && is_ws(*s)) {
        s++;
        n--;
    }
    while (n && is_ws(s[n - 1])) n--;
    put(r, s, n, supervised);
}

/* The text of a special token, by id (NULL when the id is -1). */
static char *token_text(const ax_tokenizer *t, int id) {
    if (id < 0) return NULL;
    int32_t v = id;
    ax_bytes b = {0};
    if (ax_tok_decode(t, &v, 1, &b)) return NULL;
    return b.p;
}

static const char *str_field(json_t *o, const char *key, size_t *n) {
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) return NULL;
    *n = json_string_length(v);
    return json_string_value(v);
}

/* Spans touching (the content and the end token after it) are joined. */
static void put_end(render *r, const char *s) {
    size_t n = strlen(s);
    if (r->spans.n && r->spans.v[r->spans.n - 1] == (int32_t)r->text.n) {
        r->spans.v[r->spans.n - 1] += (int32_t)n;
        ax_bytes_append(&r->text, s, n);
    } else put(r, s, n, 1);
}

static int render_messages(const format *f, json_t *msgs, render *r, const char *where) {
    if (!json_is_array(msgs) || !json_array_size(msgs))
        return AX_ERR("%s: expected \"messages\" to be a non-empty array", where);
    size_t i, nr = 0, nc = 0;
    json_t *m;
    int assistant = 0;
    puts0(r, f->bos);
    json_array_foreach(msgs, i, m) {
        const char *role = str_field(m, "role", &nr), *c = str_field(m, "content", &nc);
        if (!role || !nr || !c)
            return AX_ERR("%s: messages[%zu]: expected {\"role\": \"...\", \"content\": \"...\"} (strings)", where, i);
        int sup = nr == 9 && memcmp(role, "assistant", 9) == 0;
        assistant |= sup;
        if (f->llama3) {
            puts0(r, "<|start_header_id|>");
            put(r, role, nr, 0);
            puts0(r, "<|end_header_id|>\n\n");
            content(r, c, nc, sup);
            if (sup) put_end(r, "<|eot_id|>");
            else puts0(r, "<|eot_id|>");
        } else {
            put(r, role, nr, 0);
            puts0(r, ":\n");
            content(r, c, nc, sup);
            if (sup) put_end(r, f->eos);
            puts0(r, "\n\n");
        }
    }
    if (!assistant) return AX_ERR("%s: no message with \"role\": \"assistant\" (nothing to learn)", where);
    return 0;
}

static int render_line(const format *f, const char *line, size_t n, render *r, const char *where) {
    json_error_t je;
    json_t *o = json_loadb(line, n, 0, &je);
    if (!o) return AX_ERR("%s: malformed JSON at column %d: %s", where, je.column, je.text);
    int rc = 0;
    size_t np = 0, nc = 0;
    json_t *msgs = json_object_get(o, "messages");
    const char *p = str_field(o, "prompt", &np), *c = str_field(o, "completion", &nc);
    if (!json_is_object(o)) rc = AX_ERR("%s: expected a JSON object", where);
    else if (msgs) rc = render_messages(f, msgs, r, where);
    else if (p && c) {
        puts0(r, f->bos);
        put(r, p, np, 0);
        put(r, c, nc, 1);
        put_end(r, f->eos);
    } else if (json_object_get(o, "prompt") || json_object_get(o, "completion"))
        rc = AX_ERR("%s: expected \"prompt\" and \"completion\", both strings", where);
    else rc = AX_ERR("%s: expected {\"prompt\": ..., \"completion\": ...} or {\"messages\": [...]}", where);
    json_decref(o);
    return rc;
}

/* Supervised when the token's first byte is in a span (spans ascend). */
static void add_example(ax_instruct *d, const ax_ids *ids, const ax_ids *at, const ax_ids *spans, int line,
                        size_t *cap) {
    size_t n = ids->n < (size_t)d->T + 1 ? ids->n : (size_t)d->T + 1;
    int64_t base = d->off[d->n];
    if ((size_t)base + n > *cap) {
        while ((size_t)base + n > *cap) *cap = *cap ? 2 * *cap : 4096;
        d->ids = realloc(d->ids, *cap * sizeof *d->ids);
        d->sup = realloc(d->sup, *cap);
        if (!d->ids || !d->sup) ax_fatal(__FILE__, __LINE__, "out of memory (%zu instruction tokens)", *cap);
    }
    size_t s = 0;
    int targets = 0;
    for (size_t k = 0; k < n; k++) {
        while (s < spans->n && at->v[k] >= spans->v[s + 1]) s += 2;
        int sup = s < spans->n && at->v[k] >= spans->v[s];
        d->ids[base + (int64_t)k] = ids->v[k];
        d->sup[base + (int64_t)k] = (uint8_t)sup;
        targets += sup && k > 0;
    }
    if (ids->n > n && d->ntrunc++ == 0) d->first_trunc = line;
    if (!targets) d->nempty++;
    d->line = realloc(d->line, (size_t)(d->n + 1) * sizeof *d->line);
    d->off = realloc(d->off, (size_t)(d->n + 2) * sizeof *d->off);
    if (!d->line || !d->off) ax_fatal(__FILE__, __LINE__, "out of memory");
    d->line[d->n] = line;
    d->off[++d->n] = base + (int64_t)n;
}

static int read_all(ax_instruct *d, FILE *fp, const format *f) {
    char *line = NULL, where[4200];
    size_t lcap = 0, cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    render r = {{0}, {0}};
    ax_ids ids = {0}, at = {0};
    while (!rc && (len = getline(&line, &lcap, fp)) > 0) {
        lineno++;
        size_t n = (size_t)len;
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        size_t k = 0;
        while (k < n && is_ws(line[k])) k++;
        if (k == n) continue; /* blank lines are skipped */
        snprintf(where, sizeof where, "%s:%d", d->path, lineno);
        r.text.n = r.spans.n = ids.n = at.n = 0;
        if ((rc = render_line(f, line, n, &r, where))) break;
        if ((rc = ax_tok_encode_at(f->tok, r.text.p ? r.text.p : "", r.text.n, AX_TOK_SPECIAL, &ids, &at))) break;
        add_example(d, &ids, &at, &r.spans, lineno, &cap);
    }
    if (!rc && ferror(fp)) rc = AX_ERR("%s: read error after line %d: %s", d->path, lineno, strerror(errno));
    if (!rc && !d->n) rc = AX_ERR("%s: no examples (expected JSON Lines of prompt/completion or messages)", d->path);
    free(line);
    ax_bytes_free(&r.text);
    ax_ids_free(&r.spans);
    ax_ids_free(&ids);
    ax_ids_free(&at);
    return rc;
}

int ax_instruct_open(ax_instruct *d, const char *path, const ax_tokenizer *tok, int T) {
    memset(d, 0, sizeof *d);
    if (T < 1) return AX_ERR("%s: sequence length %d: expected at least 1", path, T);
    int eos = ax_tok_eos(tok);
    if (eos < 0)
        return AX_ERR("%s: the tokenizer has no end-of-text token (<|end_of_text|> or <|endoftext|>) "
                      "to end completions with",
                      path);
    int llama3 = ax_tok_special_id(tok, "<|start_header_id|>") >= 0 &&
                 ax_tok_special_id(tok, "<|end_header_id|>") >= 0 && ax_tok_special_id(tok, "<|eot_id|>") >= 0;
    char *bos = token_text(tok, ax_tok_bos(tok)), *eos_s = token_text(tok, eos);
    format f = {tok, bos ? bos : "", eos_s ? eos_s : "", llama3};
    FILE *fp = fopen(path, "rb");
    int rc = fp ? 0 : AX_ERR("%s: cannot open: %s", path, strerror(errno));
    d->T = T;
    d->pad = eos;
    d->path = ax_strdup(path);
    d->off = ax_calloc(1, sizeof *d->off);
    if (!rc) rc = read_all(d, fp, &f);
    if (fp) fclose(fp);
    if (!rc && d->ntrunc) {
        char buf[4400];
        snprintf(buf, sizeof buf,
                 "%s: %lld of %lld examples longer than T + 1 = %d tokens are cut to their first "
                 "%d (the first at line %d); %lld have no supervised token left",
                 path, (long long)d->ntrunc, (long long)d->n, T + 1, T + 1, d->first_trunc, (long long)d->nempty);
        d->notice = ax_strdup(buf);
    }
    free(bos);
    free(eos_s);
    if (rc) ax_instruct_close(d);
    return rc;
}

int64_t ax_instruct_count(const ax_instruct *d) { return d->n; }

int ax_instruct_line(const ax_instruct *d, int64_t i) { return i >= 0 && i < d->n ? d->line[i] : 0; }

int ax_instruct_get(const ax_instruct *d, int64_t i, int32_t *tokens, float *weights) {
    if (i < 0 || i >= d->n)
        return AX_ERR("%s: example %lld out of range (%lld examples)", d->path, (long long)i, (long long)d->n);
    int64_t a = d->off[i], n = d->off[i + 1] - a;
    for (int64_t j = 0; j <= d->T; j++) tokens[j] = j < n ? d->ids[a + j] : d->pad;
    for (int64_t j = 0; j < d->T; j++) weights[j] = j + 1 < n && d->sup[a + j + 1] ? 1.0f : 0.0f;
    return 0;
}

const char *ax_instruct_notice(const ax_instruct *d) { return d->notice; }

void ax_instruct_close(ax_instruct *d) {
    free(d->ids);
    free(d->sup);
    free(d->off);
    free(d->line);
    free(d->path);
    free(d->notice);
    memset(d, 0, sizeof *d);
}
