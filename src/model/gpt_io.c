/* GPT parameters <-> logical Hugging Face tensors, and config.json. */
#include "model/gpt.h"
#include "util/err.h"
#include "util/fileio.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* HF shape of a parameter: Conv1D weights [in, out]; vectors 1-D. */
static int hf_shape(const ax_param *p, int64_t *shape) {
    if (p->hf_transposed) { shape[0] = p->shard.cols; shape[1] = p->shard.rows; return 2; }
    if (p->shard.rows == 1) { shape[0] = p->shard.cols; return 1; }
    shape[0] = p->shard.rows; shape[1] = p->shard.cols; return 2;
}

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

int ax_gpt_read_flat(ax_gpt *m, const ax_st_file *f, const char *prefix, float *flat) {
    int64_t cap = max_logical(m);
    float *buf = ax_malloc(cap * sizeof(float)), *tbuf = ax_malloc(cap * sizeof(float));
    int rc = 0;
    for (int i = 0; i < m->np && rc == 0; i++) {
        ax_param *p = &m->p[i];
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        const ax_st_tensor *t = ax_st_find(f, name);
        if (!t) { snprintf(name, sizeof name, "transformer.%s%s", prefix, p->name); t = ax_st_find(f, name); }
        if (!t) { rc = AX_ERR("%s: tensor '%s%s' missing (expected a GPT-2 checkpoint with Hugging Face names)", f->path, prefix, p->name); break; }
        int64_t shape[2];
        int nd = hf_shape(p, shape);
        if (ax_st_expect(f, t, t->dtype, nd, shape) != 0) { rc = -1; break; }
        int64_t n = p->shard.rows * p->shard.cols;
        if (ax_st_read_f32(f, t, p->hf_transposed ? tbuf : buf, n) != 0) { rc = -1; break; }
        if (p->hf_transposed) transpose(buf, tbuf, p->shard.cols, p->shard.rows);
        ax_shard_extract(&p->shard, m->g, buf, flat + p->offset);
    }
    free(buf); free(tbuf);
    return rc;
}

void ax_gpt_declare(ax_gpt *m, ax_st_writer *w, const char *prefix) {
    if (m->g->rank != 0) return;
    for (int i = 0; i < m->np; i++) {
        int64_t shape[2];
        int nd = hf_shape(&m->p[i], shape);
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, m->p[i].name);
        ax_st_writer_declare(w, name, AX_ST_F32, nd, shape);
    }
}

int ax_gpt_write_flat(ax_gpt *m, ax_st_writer *w, const float *flat) {
    ax_grid *g = m->g;
    if (g->d != 0) return 0;             /* data replicas hold the same values */
    int root = g->rank == 0, rc = 0;
    int64_t cap = max_logical(m), maxn = 0;
    for (int i = 0; i < m->np; i++) maxn = m->p[i].numel > maxn ? m->p[i].numel : maxn;
    float *all = root ? ax_malloc(maxn * g->tp.size * sizeof(float)) : NULL;
    float *buf = root ? ax_calloc(cap, sizeof(float)) : NULL, *tbuf = root ? ax_malloc(cap * sizeof(float)) : NULL;
    for (int i = 0; i < m->np; i++) {
        ax_param *p = &m->p[i];
        AX_CHECK_MPI(MPI_Gather(flat + p->offset, (int)p->numel, MPI_FLOAT, all, (int)p->numel, MPI_FLOAT, 0, g->tp.comm));
        if (!root || rc) continue;
        for (int r = 0; r < g->tp.size; r++) {
            int x = r % g->gx, y = (r / g->gx) % g->gy, z = r / (g->gx * g->gy);
            ax_shard_insert(&p->shard, g, x, y, z, all + (int64_t)r * p->numel, buf);
        }
        int64_t n = p->shard.rows * p->shard.cols;
        const float *src = buf;
        if (p->hf_transposed) { transpose(tbuf, buf, p->shard.rows, p->shard.cols); src = tbuf; }
        rc = ax_st_writer_write(w, src, n * sizeof(float));
    }
    free(all); free(buf); free(tbuf);
    return rc;
}

int ax_gpt_config_read(ax_gpt_config *c, const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j && e.line < 1) return AX_ERR("%s: cannot read: %s", path, e.text);
    if (!j) return AX_ERR("%s: invalid JSON: %s (line %d)", path, e.text, e.line);
    if (!json_is_object(j)) { json_decref(j); return AX_ERR("%s: expected a JSON object", path); }
    struct { const char *key, *alt; int *dst; } f[] = {
        {"n_layer", "num_hidden_layers", &c->n_layer}, {"n_head", "num_attention_heads", &c->n_head},
        {"n_embd", "hidden_size", &c->n_embd}, {"n_positions", "n_ctx", &c->block_size},
        {"vocab_size", NULL, &c->vocab_size}};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
        json_t *v = json_object_get(j, f[i].key);
        if (!v && f[i].alt) v = json_object_get(j, f[i].alt);
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 30)) {
            json_decref(j);
            return AX_ERR("%s: expected a positive integer '%s'", path, f[i].key);
        }
        *f[i].dst = (int)json_integer_value(v);
    }
    json_t *mt = json_object_get(j, "model_type");
    if (mt && json_is_string(mt) && strcmp(json_string_value(mt), "gpt2") != 0) {
        int r = AX_ERR("%s: model_type '%s' is not supported (expected gpt2)", path, json_string_value(mt));
        json_decref(j);
        return r;
    }
    json_decref(j);
    return 0;
}

int ax_gpt_config_write(const ax_gpt_config *c, const char *path) {
    json_t *j = json_pack("{s:s, s:[s], s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:s, s:f, s:f, s:f, s:b, s:i, s:i}",
        "model_type", "gpt2", "architectures", "GPT2LMHeadModel",
        "n_layer", c->n_layer, "n_head", c->n_head, "n_embd", c->n_embd,
        "n_positions", c->block_size, "n_ctx", c->block_size, "vocab_size", c->vocab_size,
        "layer_norm_epsilon", 1e-5, "activation_function", "gelu_new",
        "resid_pdrop", 0.0, "embd_pdrop", 0.0, "attn_pdrop", 0.0, "tie_word_embeddings", 1,
        "bos_token_id", c->vocab_size - 1, "eos_token_id", c->vocab_size - 1);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    ax_outfile o;
    int rc = ax_out_open(&o, path);
    if (rc == 0) rc = ax_out_write(&o, s, strlen(s));
    if (rc == 0) rc = ax_out_write(&o, "\n", 1);
    if (rc == 0) rc = ax_out_commit(&o); else ax_out_abort(&o);
    free(s);
    return rc;
}

int ax_gpt_load(ax_gpt *m, const char *path) {
    ax_st_file f;
    AX_TRY(ax_st_open(&f, path));
    int rc = ax_gpt_read_flat(m, &f, "", m->params);
    ax_st_close(&f);
    return rc;
}
