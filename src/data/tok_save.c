/* Writing a Hugging Face tokenizer.json (ax_tok_save_json in tokenizer.h). */
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t rank;
    int32_t a, b;
} merge_row;

static int merge_row_cmp(const void *x, const void *y) {
    const merge_row *p = x, *q = y;
    if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* the ByteLevel step's options, a bitmask (none: 0) */
enum { ADD_PREFIX_SPACE = 1, TRIM_OFFSETS = 2 };

static json_t *bytelevel_json(int flags) {
    return json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", !!(flags & ADD_PREFIX_SPACE),
                     "trim_offsets", !!(flags & TRIM_OFFSETS), "use_regex", 1);
}

/* GPT-2's layout (ByteLevel with its own regex) when that is the only step;
 * otherwise the Split steps as the file spelt them, then ByteLevel. */
static json_t *pre_tokenizer_json(const ax_tokenizer *t) {
    if (t->nsplit == 1 && !t->split[0].src) return bytelevel_json(TRIM_OFFSETS);
    json_t *seq = json_array();
    int own_regex = 0;
    for (int i = 0; i < t->nsplit; i++) {
        const ax_tk_split *s = &t->split[i];
        if (!s->src && i + 1 == t->nsplit) {
            own_regex = 1;
            break;
        }
        const char *src =
            s->src ? s->src : "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
        json_array_append_new(seq,
                              json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern",
                                        s->literal ? "String" : "Regex", src, "behavior", "Isolated", "invert", 0));
    }
    json_t *bl = bytelevel_json(TRIM_OFFSETS);
    json_object_set_new(bl, "use_regex", json_boolean(own_regex));
    json_array_append_new(seq, bl);
    return json_pack("{s:s, s:o}", "type", "Sequence", "pretokenizers", seq);
}

/* The name of a template's token: its text (specials) or byte-level string. */
static const char *token_name(const ax_tokenizer *t, int32_t id, ax_bytes *tmp) {
    const ax_tok_special *s = ax_tk_special_of(t, id);
    if (s) return s->s;
    ax_tk_bytelevel_encode(ax_tk_bytes(t, id), (size_t)t->tok_len[id], tmp);
    return tmp->p;
}

static void template_items(const ax_tokenizer *t, const ax_ids *ids, int type_id, json_t *list, json_t *named) {
    ax_bytes tmp = {0};
    for (size_t i = 0; i < ids->n; i++) {
        const char *name = token_name(t, ids->v[i], &tmp);
        json_array_append_new(list, json_pack("{s:{s:s, s:i}}", "SpecialToken", "id", name, "type_id", type_id));
        json_object_set_new(named, name,
                            json_pack("{s:s, s:[I], s:[s]}", "id", name, "ids", (json_int_t)ids->v[i], "tokens", name));
    }
    ax_bytes_free(&tmp);
}

/* ByteLevel (offsets only), then the template when there is one; a pair of
 * texts repeats it, the second with type id 1, as Llama-3's does. */
static json_t *post_processor_json(const ax_tokenizer *t) {
    json_t *bl = bytelevel_json(ADD_PREFIX_SPACE);
    if (!t->tpl_pre.n && !t->tpl_post.n) return bl;
    json_t *single = json_array(), *pair = json_array(), *named = json_object();
    template_items(t, &t->tpl_pre, 0, single, named);
    json_array_append_new(single, json_pack("{s:{s:s, s:i}}", "Sequence", "id", "A", "type_id", 0));
    template_items(t, &t->tpl_post, 0, single, named);
    json_array_extend(pair, single);
    template_items(t, &t->tpl_pre, 1, pair, named);
    json_array_append_new(pair, json_pack("{s:{s:s, s:i}}", "Sequence", "id", "B", "type_id", 1));
    template_items(t, &t->tpl_post, 1, pair, named);
    json_t *tp = json_pack("{s:s, s:o, s:o, s:o}", "type", "TemplateProcessing", "single", single, "pair", pair,
                           "special_tokens", named);
    return json_pack("{s:s, s:[o, o]}", "type", "Sequence", "processors", bl, tp);
}

static json_t *added_json(const ax_tokenizer *t) {
    json_t *a = json_array();
    for (int32_t id = 0; id < t->n; id++) {
        const ax_tok_special *s = ax_tk_special_of(t, id);
        if (!s) continue;
        json_t *o =
            json_pack("{s:I, s:s%, s:b, s:b, s:b, s:b, s:b}", "id", (json_int_t)id, "content", s->s, (size_t)s->len,
                      "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 1, "special", s->marked);
        if (!o) {
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *vocab_json(const ax_tokenizer *t, const char *path) {
    json_t *v = json_object();
    ax_bytes s = {0};
    for (int32_t id = 0; id < t->n; id++) {
        if (t->tok_len[id] < 0) continue;
        const ax_tok_special *sp = ax_tk_special_of(t, id);
        if (sp) {
            s.n = 0;
            ax_bytes_append(&s, sp->s, (size_t)sp->len);
        } else ax_tk_bytelevel_encode(ax_tk_bytes(t, id), (size_t)t->tok_len[id], &s);
        if (json_object_get(v, s.p) || json_object_set_new(v, s.p, json_integer(id))) {
            AX_ERR("%s: cannot save: token %d ('%s') is not unique or not UTF-8", path, id, s.p);
            json_decref(v);
            v = NULL;
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
        if (s->key != AX_PMAP_EMPTY)
            rows[n++] = (merge_row){s->val >> 32, (int32_t)(s->key >> 32), (int32_t)(uint32_t)s->key};
    }
    qsort(rows, n, sizeof *rows, merge_row_cmp);
    json_t *m = json_array();
    ax_bytes a = {0}, b = {0};
    for (size_t i = 0; i < n; i++) {
        ax_tk_bytelevel_encode(ax_tk_bytes(t, rows[i].a), (size_t)t->tok_len[rows[i].a], &a);
        ax_tk_bytelevel_encode(ax_tk_bytes(t, rows[i].b), (size_t)t->tok_len[rows[i].b], &b);
        ax_bytes_append(&a, " ", 1);
        ax_bytes_append(&a, b.p, b.n);
        json_array_append_new(m, json_stringn(a.p, a.n));
    }
    ax_bytes_free(&a);
    ax_bytes_free(&b);
    free(rows);
    return m;
}

/* Laid out like GPT-2's tokenizer.json on the Hugging Face Hub, or with the
 * pre-tokenizer and template a Llama-3-style file was read with. */
int ax_tok_save_json(const ax_tokenizer *t, const char *path) {
    json_t *added = added_json(t), *vocab = vocab_json(t, path);
    if (!added || !vocab) {
        json_decref(added);
        json_decref(vocab);
        return added ? -1 : AX_ERR("%s: cannot save: a special token is not UTF-8", path);
    }
    json_t *model =
        json_pack("{s:s, s:n, s:n, s:s, s:s, s:b, s:b, s:b, s:o, s:o}", "type", "BPE", "dropout", "unk_token",
                  "continuing_subword_prefix", "", "end_of_word_suffix", "", "fuse_unk", 0, "byte_fallback", 0,
                  "ignore_merges", t->ignore_merges, "vocab", vocab, "merges", merges_json(t));
    json_t *root =
        json_pack("{s:s, s:n, s:n, s:o, s:n, s:o, s:o, s:o, s:o}", "version", "1.0", "truncation", "padding",
                  "added_tokens", added, "normalizer", "pre_tokenizer", pre_tokenizer_json(t), "post_processor",
                  post_processor_json(t), "decoder", bytelevel_json(ADD_PREFIX_SPACE | TRIM_OFFSETS), "model", model);
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!text) return AX_ERR("%s: cannot save: JSON encoding failed", path);
    ax_outfile o;
    int rc = ax_out_open(&o, path);
    if (!rc && (ax_out_write(&o, text, strlen(text)) || ax_out_write(&o, "\n", 1))) {
        ax_out_abort(&o);
        rc = -1;
    } else if (!rc) rc = ax_out_commit(&o);
    free(text);
    return rc;
}
