/* Hugging Face tokenizer.json: the BPE model, added tokens and the
 * pipeline around them, checked to be one this tokenizer reproduces. */
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
        AX_TRY(ax_tk_merge_str(t, json_string_value(a), json_string_length(a), json_string_value(b), json_string_length(b),
                         (int32_t)i, where));
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
        AX_TRY(ax_tk_add(t, (int32_t)json_integer_value(id), json_string_value(content), json_string_length(content), 1, path));
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

static int is_bytelevel(json_t *p, int use_regex) {
    json_t *re = json_object_get(p, "use_regex");
    return is_str(json_object_get(p, "type"), "ByteLevel") && !json_is_true(json_object_get(p, "add_prefix_space")) &&
           (use_regex ? !json_is_false(re) : json_is_false(re));
}

/* A Split on the GPT-2 pattern itself, as tokenizers' tiktoken conversion writes. */
static int is_gpt2_split(json_t *p) {
    const char *re = json_string_value(json_object_get(json_object_get(p, "pattern"), "Regex"));
    static const char *const forms[] = {
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
        "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"};
    if (!is_str(json_object_get(p, "type"), "Split") || !re || json_is_true(json_object_get(p, "invert")) ||
        !is_str(json_object_get(p, "behavior"), "Isolated"))
        return 0;
    return strcmp(re, forms[0]) == 0 || strcmp(re, forms[1]) == 0;
}

static int check_pre_tokenizer(json_t *p, const char *path) {
    if (is_bytelevel(p, 1)) return 0;
    json_t *seq = json_object_get(p, "pretokenizers");
    if (is_str(json_object_get(p, "type"), "Sequence") && json_is_array(seq)) {
        size_t n = json_array_size(seq);
        if (n == 1 && is_bytelevel(json_array_get(seq, 0), 1)) return 0;
        if (n == 2 && is_gpt2_split(json_array_get(seq, 0)) && is_bytelevel(json_array_get(seq, 1), 0)) return 0;
    }
    return AX_ERR("%s: pre_tokenizer is not supported: expected ByteLevel (add_prefix_space false) "
                  "splitting by the GPT-2 pattern", path);
}

int ax_tk_load_hf(ax_tokenizer *t, json_t *root, const char *path) {
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return AX_ERR("%s: expected \"model\" to be an object", path);
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type ? strcmp(type, "BPE") != 0 : !json_object_get(model, "merges"))
        return AX_ERR("%s: model type '%s' is not supported (expected a byte-level \"BPE\")", path, type ? type : "?");
    AX_TRY(check_bpe_model(model, path));
    AX_TRY(check_normalizer(json_object_get(root, "normalizer"), path));
    AX_TRY(check_pre_tokenizer(json_object_get(root, "pre_tokenizer"), path));
    AX_TRY(load_added(t, json_object_get(root, "added_tokens"), path));
    AX_TRY(ax_tk_load_vocab(t, json_object_get(model, "vocab"), path));
    AX_TRY(ax_tk_finish(t, path));
    AX_TRY(load_json_merges(t, json_object_get(model, "merges"), path));
    t->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    return 0;
}
