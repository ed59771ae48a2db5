/* GPT parameters <-> logical Hugging Face tensors (safetensors files, any
 * grid). config.json: gpt_config.c; a checkpoint's parallel share: gpt_share.c. */
#include "model/gpt.h"
#include "backend/backend.h"
#include "util/err.h"
#include "backend/bf16.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

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
