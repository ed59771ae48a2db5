/* GPT parameters <-> logical Hugging Face tensors, and config.json. */
#include "model/gpt.h"
#include "backend/backend.h"
#include "util/err.h"
#include "util/fileio.h"
#include "backend/bf16.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>

/* HF shape of a parameter (or of its source tensor of `rows` rows): GPT-2
 * Conv1D weights [in, out]; vectors 1-D. */
static int hf_shape(const ax_param *p, int64_t rows, int64_t *shape) {
    if (p->hf_transposed) {
        shape[0] = p->shard.cols;
        shape[1] = rows;
        return 2;
    }
    if (rows == 1) {
        shape[0] = p->shard.cols;
        return 1;
    }
    shape[0] = rows;
    shape[1] = p->shard.cols;
    return 2;
}

/* the tensors a parameter is stored as: itself, or its row-stacked sources */
static int n_files(const ax_param *p) { return p->nsrc ? p->nsrc : 1; }
static const char *file_name(const ax_param *p, int s) { return p->nsrc ? p->src[s] : p->name; }
static int64_t file_rows(const ax_param *p, int s) { return p->nsrc ? p->src_rows[s] : p->shard.rows; }

static int64_t max_logical(const ax_gpt *m) {
    int64_t n = 0;
    for (int i = 0; i < m->np; i++) {
        int64_t k = m->p[i].shard.rows * m->p[i].shard.cols;
        n = k > n ? k : n;
    }
    return n;
}

/* [r, c] row-major -> [c, r] */
static void transpose(float *dst, const float *src, int64_t r, int64_t c) {
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) dst[j * r + i] = src[i * c + j];
}

/* The file tensors a parameter is read from, found and checked before any
 * data is read; source s holds logical rows [row0[s], row0[s + 1]). */
typedef struct {
    const ax_st_file *f[3];
    const ax_st_tensor *t[3];
    int64_t row0[4];
} src_tensors;

static int find_sources(const ax_param *p, const ax_st_set *set, const char *prefix, const char *arch,
                        src_tensors *src) {
    src->row0[0] = 0;
    for (int s = 0; s < n_files(p); s++) {
        char name[200];
        snprintf(name, sizeof name, "%s%s", prefix, file_name(p, s));
        const ax_st_tensor *t = ax_st_set_find(set, name, &src->f[s]);
        if (!t) {
            snprintf(name, sizeof name, "transformer.%s%s", prefix, file_name(p, s));
            t = ax_st_set_find(set, name, &src->f[s]);
        }
        if (!t)
            return AX_ERR("%s: tensor '%s%s' missing (expected a %s checkpoint with Hugging Face names)", set->path,
                          prefix, file_name(p, s), arch);
        int64_t shape[2], rows = file_rows(p, s);
        int nd = hf_shape(p, rows, shape);
        AX_TRY(ax_st_expect(src->f[s], t, t->dtype, nd, shape));
        AX_TRY(ax_st_expect_float(src->f[s], t));
        src->t[s] = t;
        src->row0[s + 1] = src->row0[s] + rows;
    }
    return 0;
}

static int src_of_row(const ax_param *p, const src_tensors *src, int64_t r) {
    int s = 0;
    while (s + 1 < n_files(p) && r >= src->row0[s + 1]) s++;
    return s;
}

/* Local elements i .. i+k-1 of this rank are the logical elements *j ..
 * *j+k-1, all in one logical row (*j = -1: all padding). */
static int64_t local_run(const ax_shard *sh, const ax_grid *g, int64_t i, int64_t *j) {
    *j = ax_shard_logical_index(sh, g, g->x, g->y, g->z, i);
    return ax_shard_run(sh, g, g->x, g->y, g->z, i);
}

/* Where the readers below send each read: into memory (sp NULL), or, for
 * ax_gpt_read_spans, only its byte span of the file to sp->fn, reading
 * nothing and writing nothing to local. */
typedef struct {
    ax_span_fn fn;
    void *ctx;
} spans;

/* elements [first, first + n) of t into dst + at */
static int read_at(const spans *sp, const ax_st_file *f, const ax_st_tensor *t, int64_t first, int64_t n, float *dst,
                   int64_t at) {
    if (!sp) return ax_st_read_f32_at(f, t, first, n, dst + at);
    int64_t es = (int64_t)ax_st_dtype_size(t->dtype);
    sp->fn(sp->ctx, (int64_t)(f->data_start + t->begin) + first * es, n * es);
    return 0;
}

/* Row-major file tensors ([out, in] or vectors): each local run is one byte
 * range of a file; runs that continue each other in both the local shard
 * and the file become one read. */
static int read_rows(const ax_param *p, const ax_grid *g, const src_tensors *src, float *local, const spans *sp) {
    const ax_shard *sh = &p->shard;
    int64_t n = ax_shard_numel(sh, g), pi = 0, pn = 0, pe = 0; /* pending: local [pi, pi+pn) = file [pe, pe+pn) */
    int ps = 0;
    for (int64_t i = 0, k, j; i < n; i += k) {
        k = local_run(sh, g, i, &j);
        if (j < 0) {
            if (!sp) memset(local + i, 0, (size_t)k * sizeof(float));
            continue;
        }
        int64_t r = j / sh->cols;
        int s = src_of_row(p, src, r);
        int64_t e = (r - src->row0[s]) * sh->cols + j % sh->cols;
        if (pn && s == ps && pi + pn == i && pe + pn == e) {
            pn += k;
            continue;
        }
        if (pn) AX_TRY(read_at(sp, src->f[ps], src->t[ps], pe, pn, local, pi));
        pi = i;
        pn = k;
        pe = e;
        ps = s;
    }
    return pn ? read_at(sp, src->f[ps], src->t[ps], pe, pn, local, pi) : 0;
}

/* GPT-2 Conv1D weights are stored [in, out]: a local run along a logical row
 * is strided in the file. The rank's logical rows R and column span
 * [cmin, cmax) are read instead as, for each file row c in the span, the
 * intervals of R (contiguous there): a buffer the size of the local block
 * (plus the partial rows of a Z chunk), never the whole tensor. */
static int read_transposed(const ax_param *p, const ax_grid *g, const src_tensors *src, float *local, const spans *sp) {
    const ax_shard *sh = &p->shard;
    int64_t n = ax_shard_numel(sh, g), rows = sh->rows, cmin = sh->cols, cmax = 0, nq = 0;
    int64_t *q = ax_malloc((size_t)rows * sizeof(int64_t)); /* logical row -> its place in the buffer, or -1 */
    for (int64_t r = 0; r < rows; r++) q[r] = -1;
    for (int64_t i = 0, k, j; i < n; i += k) {
        k = local_run(sh, g, i, &j);
        if (j < 0) continue;
        q[j / sh->cols] = 0;
        if (j % sh->cols < cmin) cmin = j % sh->cols;
        if (j % sh->cols + k > cmax) cmax = j % sh->cols + k;
    }
    for (int64_t r = 0; r < rows; r++)
        if (q[r] == 0) q[r] = nq++;
    int64_t w = cmax > cmin ? cmax - cmin : 0;
    float *b = ax_malloc((size_t)(nq * w > 0 ? nq * w : 1) * sizeof(float));
    int rc = 0;
    for (int64_t c = cmin; c < cmax && rc == 0; c++)
        for (int64_t r = 0, end; r < rows && rc == 0; r = end) {
            if (q[r] < 0) {
                end = r + 1;
                continue;
            }
            int s = src_of_row(p, src, r);
            for (end = r; end < rows && q[end] >= 0 && end < src->row0[s + 1]; end++) {}
            int64_t srows = src->row0[s + 1] - src->row0[s];
            rc = read_at(sp, src->f[s], src->t[s], c * srows + (r - src->row0[s]), end - r, b, (c - cmin) * nq + q[r]);
        }
    for (int64_t i = 0, k, j; i < n && rc == 0 && !sp; i += k) {
        k = local_run(sh, g, i, &j);
        for (int64_t t = 0; t < k; t++)
            local[i + t] = j < 0 ? 0.0f : b[(j % sh->cols + t - cmin) * nq + q[j / sh->cols]];
    }
    free(q);
    free(b);
    return rc;
}

/* every present parameter into h (a host view of the flat vector), or only
 * its spans to sp */
static int read_params(ax_gpt *m, const ax_st_set *set, const char *prefix, float *h, const spans *sp) {
    const char *arch = m->cfg.arch == AX_ARCH_LLAMA ? "Llama" : "GPT-2";
    int rc = 0;
    for (int i = 0; i < m->np && rc == 0; i++) {
        const ax_param *p = &m->p[i];
        if (!p->present) continue;
        src_tensors src;
        rc = find_sources(p, set, prefix, arch, &src);
        if (rc == 0) rc = (p->hf_transposed ? read_transposed : read_rows)(p, m->g, &src, h ? h + p->offset : NULL, sp);
    }
    return rc;
}

int ax_gpt_read_set(ax_gpt *m, const ax_st_set *set, const char *prefix, float *flat) {
    size_t bytes = m->n_local * sizeof(float);
    float *h = ax_host_view(flat, bytes, 0); /* every element is read from the file */
    int rc = read_params(m, set, prefix, h, NULL);
    ax_host_release(h, flat, bytes, rc == 0); /* a failed read leaves flat as it was */
    return rc;
}

int ax_gpt_read_spans(ax_gpt *m, const ax_st_file *f, const char *prefix, ax_span_fn fn, void *ctx) {
    ax_st_set s;
    ax_st_set_view(&s, (ax_st_file *)f);
    spans sp = {fn, ctx};
    return read_params(m, &s, prefix, NULL, &sp);
}

int ax_gpt_read_flat(ax_gpt *m, const ax_st_file *f, const char *prefix, float *flat) {
    ax_st_set s;
    ax_st_set_view(&s, (ax_st_file *)f); /* read only: the set API takes files as it opens them */
    return ax_gpt_read_set(m, &s, prefix, flat);
}

int64_t ax_gpt_file_bytes(const ax_gpt *m, int i, ax_st_dtype t) {
    const ax_param *p = &m->p[i];
    return p->present ? p->shard.rows * p->shard.cols * (int64_t)ax_st_dtype_size(t) : 0;
}

void ax_gpt_declare(ax_gpt *m, ax_st_writer *w, const char *prefix, ax_st_dtype t, int i0, int i1) {
    for (int i = i0; i < i1; i++) {
        const ax_param *p = &m->p[i];
        for (int s = 0; p->present && s < n_files(p); s++) {
            int64_t shape[2];
            int nd = hf_shape(p, file_rows(p, s), shape);
            char name[160];
            snprintf(name, sizeof name, "%s%s", prefix, file_name(p, s));
            ax_st_writer_declare(w, name, t, nd, shape);
        }
    }
}

int ax_gpt_write_flat(ax_gpt *m, ax_st_writer *w, const float *flat, ax_st_dtype t, int i0, int i1) {
    ax_grid *g = m->g;
    if (g->data.rank != 0) return 0; /* data (and context) replicas hold the same values */
    int root = g->rank == 0, rc = 0;
    int64_t cap = max_logical(m), maxn = 0;
    for (int i = i0; i < i1; i++) maxn = m->p[i].numel > maxn ? m->p[i].numel : maxn;
    float *all = root ? ax_malloc(maxn * g->tp.size * sizeof(float)) : NULL;
    float *buf = root ? ax_calloc(cap, sizeof(float)) : NULL, *tbuf = root ? ax_malloc(cap * sizeof(float)) : NULL;
    uint16_t *hbuf = root && t == AX_ST_BF16 ? ax_malloc(cap * sizeof(uint16_t)) : NULL;
    const float *local = ax_host_view((float *)flat, m->n_local * sizeof(float), 1);
    for (int i = i0; i < i1; i++) {
        ax_param *p = &m->p[i];
        if (!p->present) continue;
        AX_CHECK_MPI(
            MPI_Gather(local + p->offset, (int)p->numel, MPI_FLOAT, all, (int)p->numel, MPI_FLOAT, 0, g->tp.comm));
        if (!root || rc) continue;
        for (int r = 0; r < g->tp.size; r++) {
            int x = r % g->gx, y = (r / g->gx) % g->gy, z = r / (g->gx * g->gy);
            ax_shard_insert(&p->shard, g, x, y, z, all + (int64_t)r * p->numel, buf);
        }
        for (int s = 0, row0 = 0; s < n_files(p) && rc == 0; row0 += (int)file_rows(p, s), s++) {
            int64_t rows = file_rows(p, s), n = rows * p->shard.cols;
            const float *src = buf + row0 * p->shard.cols;
            if (p->hf_transposed) {
                transpose(tbuf, src, rows, p->shard.cols);
                src = tbuf;
            }
            if (hbuf) { /* bf16 export: round to nearest even, as torch's .to(bfloat16) */
                for (int64_t k = 0; k < n; k++) hbuf[k] = ax_bf16_round(src[k]);
                rc = ax_st_writer_write(w, hbuf, n * sizeof(uint16_t));
            } else rc = ax_st_writer_write(w, src, n * sizeof(float));
        }
    }
    free(all);
    free(buf);
    free(tbuf);
    free(hbuf);
    ax_host_release((float *)local, (float *)flat, m->n_local * sizeof(float), 0);
    return rc;
}

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

int ax_gpt_load(ax_gpt *m, const char *path) {
    ax_st_set s;
    char st[4200], cfg[4200];
    ax_gpt_model_paths(path, st, cfg, sizeof st);
    AX_TRY(ax_st_set_open(&s, st));
    int rc = ax_gpt_read_set(m, &s, "", m->params);
    m->params_h_current = 0;
    ax_st_set_close(&s);
    return rc;
}

/* ------------------------------------------------ parallel writes: a rank's share */

/* Copies of parameter i held whole on several ranks (the data replicas and
 * the axes over which the block is replicated) are written by one of them:
 * replica i mod count (mixed radix over the data group's rank, d then c,
 * then x, y, z), so consecutive
 * parameters fall to different ranks. */
static int writes_whole(const ax_gpt *m, int i) {
    const ax_grid *g = m->g;
    int rep = ax_shard_replicated(&m->p[i].shard, g), n = g->data.size, me = g->data.rank;
    if (rep & 1) me = me * g->gx + g->x, n *= g->gx;
    if (rep & 2) me = me * g->gy + g->y, n *= g->gy;
    if (rep & 4) me = me * g->gz + g->z, n *= g->gz;
    return me == i % n;
}

typedef struct {
    int64_t local, n, e; /* local elements [local, local+n) = logical [e, e+n) */
} own_run;

/* The local runs of parameter i this rank writes (a part replicated over c
 * consecutive Y shards, local [lo, hi): by the shard with y mod c = i mod c). */
static int64_t owned_runs(const ax_gpt *m, int i, own_run **out) {
    const ax_param *p = &m->p[i];
    const ax_grid *g = m->g;
    int64_t n = ax_shard_numel(&p->shard, g), lo, hi, cnt = 0, cap = 64;
    int c = ax_shard_copies(&p->shard, g, g->z, &lo, &hi);
    own_run *r = ax_malloc((size_t)cap * sizeof *r);
    for (int64_t a = 0, k, j; writes_whole(m, i) && a < n; a += k) {
        k = local_run(&p->shard, g, a, &j);
        for (int64_t s = a, e; j >= 0 && s < a + k; s = e) { /* cut at lo and hi */
            e = s < lo && a + k > lo ? lo : s < hi && a + k > hi ? hi : a + k;
            if (s >= lo && s < hi && g->y % c != i % c) continue;
            if (cnt == cap) r = ax_realloc(r, (size_t)(cap *= 2) * sizeof *r);
            r[cnt++] = (own_run){p->offset + s, e - s, j + (s - a)}; /* in the flat vector */
        }
    }
    *out = r;
    return cnt;
}

static void push_seg(ax_gpt_share *s, int64_t off, int64_t bytes) {
    if (s->nseg && s->seg[s->nseg - 1].off + s->seg[s->nseg - 1].n == off) {
        s->seg[s->nseg - 1].n += bytes; /* file-contiguous, and the stage is too: it is filled in this order */
        return;
    }
    if (s->nseg == s->cap_seg) s->seg = ax_realloc(s->seg, (size_t)(s->cap_seg = 2 * s->cap_seg + 64) * sizeof *s->seg);
    s->seg[s->nseg++] = (ax_gpt_seg){off, bytes};
}

static void grow_copy(ax_gpt_share *s) {
    if (s->ncopy == s->cap_copy)
        s->copy = ax_realloc(s->copy, (size_t)(s->cap_copy = 2 * s->cap_copy + 64) * sizeof *s->copy);
}

static void push_copy(ax_gpt_share *s, int64_t local, int64_t stage, int64_t stride) {
    ax_gpt_copy *c = s->ncopy ? &s->copy[s->ncopy - 1] : NULL;
    if (c && c->local + c->n == local && (c->n == 1 || c->stride == stride) && c->stage + c->n * stride == stage) {
        c->stride = stride; /* extends the last run */
        c->n++;
        return;
    }
    grow_copy(s);
    s->copy[s->ncopy++] = (ax_gpt_copy){local, stage, 1, 1};
}

static int run_cmp(const void *a, const void *b) {
    const own_run *x = a, *y = b;
    return x->e < y->e ? -1 : x->e > y->e;
}

/* Row-major file tensors: each owned run is file-contiguous; sorted by file
 * position they fill the stage in file order. */
static void share_rows(ax_gpt_share *s, own_run *r, int64_t nr, int64_t base) {
    qsort(r, (size_t)nr, sizeof *r, run_cmp);
    for (int64_t q = 0; q < nr; q++) {
        grow_copy(s);
        s->copy[s->ncopy++] = (ax_gpt_copy){r[q].local, s->owned, r[q].n, 1};
        push_seg(s, (base + r[q].e) * 4, r[q].n * 4);
        s->owned += r[q].n;
    }
}

/* GPT-2 Conv1D weights, stored [in, out]: logical (r, c) is file element
 * c * rows + r. The owned elements are placed on the rectangle of their rows
 * x column span, numbered in file order (column, then row), and each local
 * run becomes a strided copy into the stage. */
static void share_transposed(ax_gpt_share *s, const ax_param *p, const own_run *r, int64_t nr, int64_t base) {
    int64_t rows = p->shard.rows, cols = p->shard.cols, cmin = cols, cmax = 0, nq = 0;
    int64_t *q = ax_malloc((size_t)rows * sizeof(int64_t)), *rowof = ax_malloc((size_t)rows * sizeof(int64_t));
    for (int64_t k = 0; k < rows; k++) q[k] = -1;
    for (int64_t k = 0; k < nr; k++) {
        q[r[k].e / cols] = 0;
        cmin = r[k].e % cols < cmin ? r[k].e % cols : cmin;
        cmax = r[k].e % cols + r[k].n > cmax ? r[k].e % cols + r[k].n : cmax;
    }
    for (int64_t k = 0; k < rows; k++)
        if (q[k] == 0) rowof[nq] = k, q[k] = nq++;
    int64_t w = cmax > cmin ? cmax - cmin : 0, *pos = ax_malloc((size_t)(w * nq > 0 ? w * nq : 1) * sizeof(int64_t));
    for (int64_t k = 0; k < w * nq; k++) pos[k] = -1;
    for (int64_t k = 0; k < nr; k++)
        for (int64_t t = 0; t < r[k].n; t++) pos[(r[k].e % cols + t - cmin) * nq + q[r[k].e / cols]] = 0;
    for (int64_t k = 0; k < w * nq; k++)
        if (pos[k] == 0) {
            pos[k] = s->owned++;
            push_seg(s, (base + (cmin + k / nq) * rows + rowof[k % nq]) * 4, 4);
        }
    for (int64_t k = 0; k < nr; k++)
        for (int64_t t = 0; t < r[k].n; t++) {
            int64_t st = pos[(r[k].e % cols + t - cmin) * nq + q[r[k].e / cols]];
            int64_t prev = t ? pos[(r[k].e % cols + t - 1 - cmin) * nq + q[r[k].e / cols]] : -1;
            push_copy(s, r[k].local + t, st, t ? st - prev : 1);
        }
    free(q);
    free(rowof);
    free(pos);
}

int ax_gpt_share_init(ax_gpt *m, ax_gpt_share *s) {
    memset(s, 0, sizeof *s);
    int64_t base = 0; /* file elements before parameter i: the tensors are declared contiguously */
    for (int i = 0; i < m->np; i++) {
        const ax_param *p = &m->p[i];
        if (!p->present) continue;
        own_run *r;
        int64_t nr = owned_runs(m, i, &r);
        if (p->hf_transposed) share_transposed(s, p, r, nr, base);
        else share_rows(s, r, nr, base);
        free(r);
        base += p->shard.rows * p->shard.cols;
    }
    s->data_bytes = base * 4;
    int64_t sum = s->owned * 4;
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT64_T, MPI_SUM, m->g->world));
    if (sum != s->data_bytes) /* a layout rule and this partition disagree: a bug, caught before any write */
        return AX_ERR("checkpoint write: the ranks' shares sum to %lld bytes, the tensors hold %lld", (long long)sum,
                      (long long)s->data_bytes);
    return 0;
}

typedef struct {
    const ax_gpt_share *s;
    const float *local;
    float *stage;
} fill_ctx;

/* Copies [lo, hi). Strided copies are a transposition (a local row into a
 * file column); up to 32 of them that fill neighbouring stage columns go
 * together in 32 x 32 tiles, so each cache line of the stage is written
 * whole rather than one float of it per copy. */
static void fill_range(void *arg, int64_t lo, int64_t hi) {
    const fill_ctx *x = arg;
    const ax_gpt_copy *cp = x->s->copy;
    for (int64_t k = lo, g; k < hi; k += g) {
        const ax_gpt_copy *c = &cp[k];
        g = 1;
        if (c->stride == 1) {
            memcpy(x->stage + c->stage, x->local + c->local, (size_t)c->n * sizeof(float));
            continue;
        }
        while (k + g < hi && g < 32 && cp[k + g].stride == c->stride && cp[k + g].n == c->n &&
               cp[k + g].stage == c->stage + g)
            g++;
        for (int64_t t0 = 0; t0 < c->n; t0 += 32) {
            int64_t tn = c->n - t0 < 32 ? c->n - t0 : 32;
            for (int64_t j = 0; j < g; j++) {
                const float *src = x->local + cp[k + j].local + t0;
                float *dst = x->stage + c->stage + j + t0 * c->stride;
                for (int64_t t = 0; t < tn; t++) dst[t * c->stride] = src[t];
            }
        }
    }
}

/* ax_host_parallel hands out chunks of 2^16 indices: one index per copy
 * would leave a model's few thousand copies to one thread, so each chunk
 * stands for FILL_GROUP copies */
#define FILL_GROUP 32
static void fill_groups(void *arg, int64_t lo, int64_t hi) {
    const fill_ctx *x = arg;
    int64_t a = (lo >> 16) * FILL_GROUP, b = ((hi + 65535) >> 16) * FILL_GROUP;
    fill_range(arg, a, b < x->s->ncopy ? b : x->s->ncopy);
}

void ax_gpt_share_fill(const ax_gpt_share *s, const float *local, float *stage, ax_fill_mode mode) {
    fill_ctx x = {s, local, stage};
    if (mode == AX_FILL_SERIAL) fill_range(&x, 0, s->ncopy);
    else
        ax_host_parallel((s->ncopy + FILL_GROUP - 1) / FILL_GROUP << 16, fill_groups, &x); /* disjoint stage elements */
}

void ax_gpt_share_free(ax_gpt_share *s) {
    free(s->seg);
    free(s->copy);
    memset(s, 0, sizeof *s);
}
