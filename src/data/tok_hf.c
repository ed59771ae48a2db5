/* Hugging Face tokenizer.json: the BPE model, added tokens and the
 * pipeline around them (pre-tokenizer steps, the post-processor's
 * template), checked to be one this tokenizer reproduces: GPT-2's and
 * Llama-3's layouts and others built of the same parts. */
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include <stdio.h>
#include <string.h>

static int load_json_merges(ax_tokenizer *t, json_t *merges, const char *path) {
    if (!json_is_array(merges)) return AX_ERR("%s: expected model.merges to be an array", path);
    size_t i, sp;
    json_t *m;
    char where[4200];
    json_array_foreach(merges, i, m) {
        snprintf(where, sizeof where, "%s: model.merges[%zu]", path, i);
        const char *s = json_string_value(m);
        if (s && !ax_tk_split_merge(s, json_string_length(m), &sp)) {
            AX_TRY(ax_tk_merge_str(t, s, sp, s + sp + 1, json_string_length(m) - sp - 1, (int32_t)i, where));
            continue;
        }
        json_t *a = json_array_get(m, 0), *b = json_array_get(m, 1);
        if (!json_is_array(m) || json_array_size(m) != 2 || !json_is_string(a) || !json_is_string(b))
            return AX_ERR("%s: expected \"a b\" or [\"a\", \"b\"]", where);
        AX_TRY(ax_tk_merge_str(t, json_string_value(a), json_string_length(a), json_string_value(b),
                               json_string_length(b), (int32_t)i, where));
    }
    return 0;
}

static int load_added(ax_tokenizer *t, json_t *added, const char *path) {
    if (!added || json_is_null(added)) return 0;
    if (!json_is_array(added)) return AX_ERR("%s: expected added_tokens to be an array", path);
    size_t i;
    json_t *a;
    json_array_foreach(added, i, a) {
        json_t *id = json_object_get(a, "id"), *content = json_object_get(a, "content");
        if (!json_is_integer(id) || !json_is_string(content) || !json_string_length(content))
            return AX_ERR("%s: added_tokens[%zu]: expected an integer \"id\" and a non-empty \"content\"", path, i);
        AX_TRY(ax_tk_add(t, (int32_t)json_integer_value(id), json_string_value(content), json_string_length(content), 1,
                         path));
        t->spec[t->nspec - 1].marked = !json_is_false(json_object_get(a, "special"));
    }
    return 0;
}

static int is_str(json_t *j, const char *s) { return json_is_string(j) && strcmp(json_string_value(j), s) == 0; }

/* Options of the BPE model that would change the result are refused. */
static int check_bpe_model(json_t *model, const char *path) {
    json_t *d = json_object_get(model, "dropout");
    if (d && !json_is_null(d) && !(json_is_number(d) && json_number_value(d) == 0))
        return AX_ERR("%s: BPE dropout is not supported (expected \"dropout\": null)", path);
    const char *opt[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(model, opt[i]);
        if (v && !json_is_null(v) && !is_str(v, ""))
            return AX_ERR("%s: BPE %s is not supported (expected null or \"\")", path, opt[i]);
    }
    return 0;
}

static int check_normalizer(json_t *n, const char *path) {
    if (!n || json_is_null(n)) return 0;
    json_t *list = json_object_get(n, "normalizers");
    if (is_str(json_object_get(n, "type"), "Sequence") && json_is_array(list) && json_array_size(list) == 0) return 0;
    const char *type = json_string_value(json_object_get(n, "type"));
    return AX_ERR("%s: normalizer '%s' is not supported (expected none, as in GPT-2)", path, type ? type : "?");
}

static const char *type_of(json_t *o) {
    const char *s = json_string_value(json_object_get(o, "type"));
    return s ? s : "?";
}

/* One Split step: a Regex (Oniguruma syntax) or a literal String, cut out
 * as pieces of their own ("Isolated"). */
static int add_split(ax_tokenizer *t, json_t *p, const char *where) {
    json_t *pat = json_object_get(p, "pattern");
    const char *re = json_string_value(json_object_get(pat, "Regex")),
               *lit = json_string_value(json_object_get(pat, "String"));
    if (!re && !lit) return AX_ERR("%s: expected \"pattern\": {\"Regex\": ...} or {\"String\": ...}", where);
    if (json_is_true(json_object_get(p, "invert")) || !is_str(json_object_get(p, "behavior"), "Isolated"))
        return AX_ERR("%s: only behavior \"Isolated\" without invert is supported", where);
    return ax_tk_add_split(t, re ? re : lit, !re, where);
}

/* ByteLevel (add_prefix_space false) last, alone or after Split steps: the
 * splitting happens on the text, then bytes become GPT-2's characters, whose
 * own regex (use_regex, default true) is GPT-2's pattern as one more step. */
static int load_pre_tokenizer(ax_tokenizer *t, json_t *p, const char *path) {
    json_t *seq = json_object_get(p, "pretokenizers");
    int is_seq = is_str(json_object_get(p, "type"), "Sequence") && json_is_array(seq);
    size_t n = is_seq ? json_array_size(seq) : 1;
    char where[4200];
    for (size_t i = 0; i < n; i++) {
        json_t *s = is_seq ? json_array_get(seq, i) : p;
        if (is_seq) snprintf(where, sizeof where, "%s: pre_tokenizer.pretokenizers[%zu]", path, i);
        else snprintf(where, sizeof where, "%s: pre_tokenizer", path);
        const char *type = type_of(s);
        if (strcmp(type, "Split") == 0 && i + 1 < n) {
            AX_TRY(add_split(t, s, where));
            continue;
        }
        if (strcmp(type, "ByteLevel") == 0 && i + 1 == n) {
            if (json_is_true(json_object_get(s, "add_prefix_space")))
                return AX_ERR("%s: ByteLevel with add_prefix_space is not supported (expected false)", where);
            if (!json_is_false(json_object_get(s, "use_regex"))) AX_TRY(ax_tk_add_split(t, NULL, 0, where));
            else if (!t->nsplit) AX_TRY(ax_tk_add_split(t, "(?s:.+)", 0, where)); /* the text is one piece */
            return 0;
        }
        return AX_ERR("%s: '%s' is not supported: expected ByteLevel, alone or last in a Sequence after "
                      "Split steps (a byte-level BPE like GPT-2 or Llama-3)",
                      where, type);
    }
    return AX_ERR("%s: pre_tokenizer: expected ByteLevel, alone or last in a Sequence after Split steps", path);
}

/* TemplateProcessing's "single": the special tokens around the text ($A). */
static int load_template(ax_tokenizer *t, json_t *p, const char *where) {
    json_t *single = json_object_get(p, "single"), *named = json_object_get(p, "special_tokens"), *it;
    if (!json_is_array(single)) return AX_ERR("%s: expected \"single\" to be an array", where);
    size_t i;
    int seen = 0;
    json_array_foreach(single, i, it) {
        json_t *seq = json_object_get(it, "Sequence"), *sp = json_object_get(it, "SpecialToken");
        if (seq && is_str(json_object_get(seq, "id"), "A") && !seen) {
            seen = 1;
            continue;
        }
        const char *name = json_string_value(json_object_get(sp, "id"));
        json_t *ids = json_object_get(json_object_get(named, name ? name : ""), "ids"), *id;
        if (!name || !json_is_array(ids))
            return AX_ERR("%s: single[%zu]: expected {\"SpecialToken\": {\"id\": NAME}} with NAME in special_tokens, "
                          "or {\"Sequence\": {\"id\": \"A\"}} once",
                          where, i);
        size_t k;
        json_array_foreach(ids, k, id) {
            json_int_t v = json_is_integer(id) ? json_integer_value(id) : -1;
            if (v < 0 || v >= t->n || t->tok_len[v] < 0)
                return AX_ERR("%s: special_tokens '%s': id %lld is not a token", where, name, (long long)v);
            ax_ids_push(seen ? &t->tpl_post : &t->tpl_pre, (int32_t)v);
        }
    }
    if (!seen) return AX_ERR("%s: single: expected the text as {\"Sequence\": {\"id\": \"A\"}}", where);
    return 0;
}

/* Only TemplateProcessing changes ids; ByteLevel here only adjusts offsets. */
static int load_post_processor(ax_tokenizer *t, json_t *p, const char *path) {
    if (!p || json_is_null(p)) return 0;
    json_t *seq = json_object_get(p, "processors");
    int is_seq = is_str(json_object_get(p, "type"), "Sequence") && json_is_array(seq);
    size_t n = is_seq ? json_array_size(seq) : 1;
    char where[4200];
    int templates = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *s = is_seq ? json_array_get(seq, i) : p;
        if (is_seq) snprintf(where, sizeof where, "%s: post_processor.processors[%zu]", path, i);
        else snprintf(where, sizeof where, "%s: post_processor", path);
        const char *type = type_of(s);
        if (strcmp(type, "ByteLevel") == 0) continue;
        if (strcmp(type, "TemplateProcessing") == 0 && !templates++) {
            AX_TRY(load_template(t, s, where));
            continue;
        }
        return AX_ERR("%s: '%s' is not supported: expected ByteLevel and at most one TemplateProcessing", where, type);
    }
    return 0;
}

int ax_tk_load_hf(ax_tokenizer *t, json_t *root, const char *path) {
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return AX_ERR("%s: expected \"model\" to be an object", path);
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type ? strcmp(type, "BPE") != 0 : !json_object_get(model, "merges"))
        return AX_ERR("%s: model type '%s' is not supported (expected a byte-level \"BPE\")", path, type ? type : "?");
    AX_TRY(check_bpe_model(model, path));
    AX_TRY(check_normalizer(json_object_get(root, "normalizer"), path));
    AX_TRY(load_pre_tokenizer(t, json_object_get(root, "pre_tokenizer"), path));
    AX_TRY(load_added(t, json_object_get(root, "added_tokens"), path));
    AX_TRY(ax_tk_load_vocab(t, json_object_get(model, "vocab"), path));
    AX_TRY(ax_tk_finish(t, path));
    AX_TRY(load_json_merges(t, json_object_get(model, "merges"), path));
    AX_TRY(load_post_processor(t, json_object_get(root, "post_processor"), path));
    t->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    return 0;
}
