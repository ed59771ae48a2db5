/* config.json (Hugging Face's GPT-2 and Llama keys) <-> ax_gpt_config, and
 * where a model directory keeps its files. */
#include "model/gpt.h"
#include "util/err.h"
#include "util/fileio.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* an integer key (or its alternative name) into *dst; absent: *dst stays when optional */
static int get_int(json_t *j, const char *path, const char *key, const char *alt, int *dst, int optional) {
    json_t *v = json_object_get(j, key);
    if (!v && alt) v = json_object_get(j, alt);
    if ((!v || json_is_null(v)) && optional) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 30))
        return AX_ERR("%s: expected a positive integer '%s'", path, key);
    *dst = (int)json_integer_value(v);
    return 0;
}

static int get_num(json_t *j, const char *path, const char *key, double *dst) {
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v) || !(json_number_value(v) > 0))
        return AX_ERR("%s: expected a positive number '%s'", path, key);
    *dst = json_number_value(v);
    return 0;
}

/* a key that must be absent, false, or the one value axonn implements */
static int require(json_t *j, const char *path, const char *key, const char *want) {
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v) || json_is_false(v) || (want && json_is_string(v) && !strcmp(json_string_value(v), want)))
        return 0;
    return AX_ERR("%s: '%s' is not supported (expected %s)", path, key, want ? want : "false or absent");
}

static int read_llama(json_t *j, const char *path, ax_gpt_config *c) {
    c->arch = AX_ARCH_LLAMA;
    double eps = 0, factor = 0, lo = 0, hi = 0;
    AX_TRY(get_int(j, path, "num_hidden_layers", NULL, &c->n_layer, 0));
    AX_TRY(get_int(j, path, "num_attention_heads", NULL, &c->n_head, 0));
    AX_TRY(get_int(j, path, "hidden_size", NULL, &c->n_embd, 0));
    AX_TRY(get_int(j, path, "max_position_embeddings", NULL, &c->block_size, 0));
    AX_TRY(get_int(j, path, "vocab_size", NULL, &c->vocab_size, 0));
    AX_TRY(get_int(j, path, "intermediate_size", NULL, &c->n_inner, 0));
    AX_TRY(get_int(j, path, "num_key_value_heads", NULL, &c->n_kv_head, 1));
    AX_TRY(get_num(j, path, "rms_norm_eps", &eps));
    AX_TRY(get_num(j, path, "rope_theta", &c->rope_theta));
    AX_TRY(require(j, path, "hidden_act", "silu"));
    AX_TRY(require(j, path, "attention_bias", NULL));
    AX_TRY(require(j, path, "mlp_bias", NULL));
    json_t *hdim = json_object_get(j, "head_dim");
    if (hdim && !json_is_null(hdim) && (!json_is_integer(hdim) || json_integer_value(hdim) * c->n_head != c->n_embd))
        return AX_ERR("%s: 'head_dim' must be hidden_size / num_attention_heads", path);
    c->norm_eps = (float)eps;
    c->untied = !json_is_true(json_object_get(j, "tie_word_embeddings"));
    json_t *rs = json_object_get(j, "rope_scaling");
    if (rs && !json_is_null(rs)) {
        json_t *t = json_object_get(rs, "rope_type");
        if (!t) t = json_object_get(rs, "type");
        if (!json_is_string(t) || strcmp(json_string_value(t), "llama3"))
            return AX_ERR("%s: rope_scaling of type '%s' is not supported (expected llama3)", path,
                          json_is_string(t) ? json_string_value(t) : "?");
        AX_TRY(get_num(rs, path, "factor", &factor));
        AX_TRY(get_num(rs, path, "low_freq_factor", &lo));
        AX_TRY(get_num(rs, path, "high_freq_factor", &hi));
        AX_TRY(get_int(rs, path, "original_max_position_embeddings", NULL, &c->rope_orig_pos, 0));
        if (!(factor > 0 && lo > 0 && hi > lo))
            return AX_ERR("%s: rope_scaling needs factor > 0 and high_freq_factor > low_freq_factor > 0", path);
        c->rope_factor = factor;
        c->rope_low_freq = lo;
        c->rope_high_freq = hi;
    }
    return 0;
}

static int read_gpt2(json_t *j, const char *path, ax_gpt_config *c) {
    double eps = 0;
    AX_TRY(get_int(j, path, "n_layer", "num_hidden_layers", &c->n_layer, 0));
    AX_TRY(get_int(j, path, "n_head", "num_attention_heads", &c->n_head, 0));
    AX_TRY(get_int(j, path, "n_embd", "hidden_size", &c->n_embd, 0));
    AX_TRY(get_int(j, path, "n_positions", "n_ctx", &c->block_size, 0));
    AX_TRY(get_int(j, path, "vocab_size", NULL, &c->vocab_size, 0));
    AX_TRY(get_int(j, path, "n_inner", NULL, &c->n_inner, 1));
    AX_TRY(get_num(j, path, "layer_norm_epsilon", &eps));
    AX_TRY(require(j, path, "activation_function", "gelu_new"));
    c->norm_eps = (float)eps;
    return 0;
}

int ax_gpt_config_read(ax_gpt_config *c, const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j && e.line < 1) return AX_ERR("%s: cannot read: %s", path, e.text);
    if (!j) return AX_ERR("%s: invalid JSON: %s (line %d)", path, e.text, e.line);
    if (!json_is_object(j)) {
        json_decref(j);
        return AX_ERR("%s: expected a JSON object", path);
    }
    memset(c, 0, sizeof *c);
    json_t *mt = json_object_get(j, "model_type");
    const char *type = json_is_string(mt) ? json_string_value(mt) : "gpt2";
    int rc;
    if (!strcmp(type, "gpt2")) rc = read_gpt2(j, path, c);
    else if (!strcmp(type, "llama")) rc = read_llama(j, path, c);
    else rc = AX_ERR("%s: model_type '%s' is not supported (expected gpt2 or llama)", path, type);
    json_decref(j);
    if (rc == 0) ax_gpt_config_defaults(c);
    return rc;
}

static json_t *config_json(const ax_gpt_config *given) {
    ax_gpt_config d = *given, *c = &d;
    ax_gpt_config_defaults(c);
    double eps = c->norm_eps;
    if (c->arch != AX_ARCH_LLAMA)
        return json_pack("{s:s, s:[s], s:i, s:i, s:i, s:i, s:i, s:i, s:o, s:f, s:s, s:f, s:f, s:f, s:b, s:i, s:i}",
                         "model_type", "gpt2", "architectures", "GPT2LMHeadModel", "n_layer", c->n_layer, "n_head",
                         c->n_head, "n_embd", c->n_embd, "n_positions", c->block_size, "n_ctx", c->block_size,
                         "vocab_size", c->vocab_size, "n_inner", json_integer(c->n_inner), "layer_norm_epsilon", eps,
                         "activation_function", "gelu_new", "resid_pdrop", 0.0, "embd_pdrop", 0.0, "attn_pdrop", 0.0,
                         "tie_word_embeddings", 1, "bos_token_id", c->vocab_size - 1, "eos_token_id",
                         c->vocab_size - 1);
    json_t *rs = c->rope_factor > 0 ? json_pack("{s:s, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "factor",
                                                c->rope_factor, "low_freq_factor", c->rope_low_freq, "high_freq_factor",
                                                c->rope_high_freq, "original_max_position_embeddings", c->rope_orig_pos)
                                    : json_null();
    return json_pack(
        "{s:s, s:[s], s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:o, s:s, s:b, s:b, s:b, s:f, s:i, s:i}",
        "model_type", "llama", "architectures", "LlamaForCausalLM", "num_hidden_layers", c->n_layer,
        "num_attention_heads", c->n_head, "num_key_value_heads", c->n_kv_head, "hidden_size", c->n_embd,
        "intermediate_size", c->n_inner, "max_position_embeddings", c->block_size, "vocab_size", c->vocab_size,
        "rms_norm_eps", eps, "rope_theta", c->rope_theta, "rope_scaling", rs, "hidden_act", "silu",
        "tie_word_embeddings", !c->untied, "attention_bias", 0, "mlp_bias", 0, "initializer_range", 0.02,
        "bos_token_id", c->vocab_size - 1, "eos_token_id", c->vocab_size - 1);
}

int ax_gpt_config_write(const ax_gpt_config *c, const char *path) {
    json_t *j = config_json(c);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    ax_outfile o;
    int rc = ax_out_open(&o, path);
    if (rc == 0) rc = ax_out_write(&o, s, strlen(s));
    if (rc == 0) rc = ax_out_write(&o, "\n", 1);
    if (rc == 0) rc = ax_out_commit(&o);
    else ax_out_abort(&o);
    free(s);
    return rc;
}

void ax_gpt_model_paths(const char *path, char *st, char *cfg, size_t n) {
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        /* one file if there is one, else the shards' index (save_pretrained writes either) */
        snprintf(st, n, "%s/model.safetensors", path);
        if (!ax_file_exists(st)) {
            snprintf(st, n, "%s/model.safetensors.index.json", path);
            if (!ax_file_exists(st)) snprintf(st, n, "%s/model.safetensors", path); /* named by the error */
        }
        snprintf(cfg, n, "%s/config.json", path);
        return;
    }
    snprintf(st, n, "%s", path);
    ax_dirname(path, cfg, n);
    strncat(cfg, "/config.json", n - strlen(cfg) - 1);
}
