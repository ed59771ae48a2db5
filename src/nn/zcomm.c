#include "nn/zcomm.h"
#include "util/err.h"
#include <stdlib.h>
#include <string.h>

void ax_zfetch_init(ax_zfetch *f, ax_grid *g, ax_dtype t, size_t cap, int nbuf, int keep) {
    memset(f, 0, sizeof *f);
    f->g = g;
    f->dtype = t;
    f->keep = keep;
    f->cap = cap;
    f->cur = -1;
    if (g->gz == 1) return; /* the chunks are the weights */
    f->nbuf = nbuf;
    f->buf = ax_calloc(f->nbuf, sizeof(void *));
    f->key = ax_calloc(f->nbuf, sizeof(int));
    f->req = ax_calloc(f->nbuf, sizeof(ax_req));
    for (int i = 0; i < f->nbuf; i++) {
        f->buf[i] = ax_be()->alloc(cap * ax_dtype_size(t));
        f->key[i] = -1;
    }
}

void ax_zfetch_free(ax_zfetch *f) {
    ax_zfetch_reset(f);
    for (int i = 0; i < f->nbuf; i++) ax_be()->free(f->buf[i]);
    free(f->buf);
    free(f->key);
    free(f->req);
    memset(f, 0, sizeof *f);
}

void ax_zfetch_reset(ax_zfetch *f) {
    for (int i = 0; i < f->nbuf; i++) {
        ax_wait(&f->req[i]);
        f->key[i] = -1;
    }
    f->cur = -1;
}

static int held(const ax_zfetch *f, int key) {
    if (f->keep) return f->key[key] == key ? key : -1;
    for (int i = 0; i < f->nbuf; i++)
        if (f->key[i] == key) return i;
    return -1;
}

void ax_zfetch_start(ax_zfetch *f, int key, const void *chunk, size_t n) {
    if (!f->nbuf || held(f, key) >= 0) return;
    if (n * f->g->gz > f->cap)
        ax_fatal(__FILE__, __LINE__, "zfetch: a block of %zu elements, buffers of %zu", n * f->g->gz, f->cap);
    int b = f->keep ? key : f->nbuf == 1 ? 0 : f->cur == 0; /* with two, never the one in use */
    ax_wait(&f->req[b]);                                    /* a gather nobody asked for yet: it goes */
    f->key[b] = key;
    if (f->dtype == AX_BF16) ax_iallgather_bf16(&f->g->Zg, chunk, f->buf[b], n, &f->req[b]);
    else ax_iallgather_f32(&f->g->Zg, chunk, f->buf[b], n, &f->req[b]);
}

ax_mat ax_zfetch_get(ax_zfetch *f, int key, const void *chunk, size_t n, int rows, int cols) {
    if (!f->nbuf) return ax_mat_of(chunk, f->dtype, rows, cols);
    int b = held(f, key);
    if (b >= 0) f->prefetched++;
    else {
        ax_zfetch_start(f, key, chunk, n);
        b = held(f, key);
    }
    ax_wait(&f->req[b]);
    f->cur = b;
    return ax_mat_of(f->buf[b], f->dtype, rows, cols);
}

double ax_zfetch_bytes(const ax_zfetch *f) { return (double)f->nbuf * f->cap * ax_dtype_size(f->dtype); }

void ax_zscatter_init(ax_zscatter *z, ax_grid *g, int n, size_t cap, size_t chunk_cap) {
    memset(z, 0, sizeof *z);
    z->Z = &g->Z;
    if (g->gz == 1) return; /* no Z reduction */
    z->n = n;
    z->cap = cap;
    z->chunk_cap = chunk_cap;
    z->s = ax_calloc(n, sizeof *z->s);
    for (int i = 0; i < n; i++) {
        z->s[i].block = ax_be()->alloc(cap * sizeof(float));
        z->s[i].chunk = ax_be()->alloc(chunk_cap * sizeof(float));
    }
}

void ax_zscatter_free(ax_zscatter *z) {
    ax_zscatter_drain(z);
    for (int i = 0; i < z->n; i++) {
        ax_be()->free(z->s[i].block);
        ax_be()->free(z->s[i].chunk);
    }
    free(z->s);
    memset(z, 0, sizeof *z);
}

static void complete(ax_zscatter *z, int i) {
    if (!z->s[i].dst) return;
    ax_wait(&z->s[i].req);
    ax_be()->add(z->s[i].dst, z->s[i].chunk, (size_t)z->s[i].len);
    z->s[i].dst = NULL;
}

float *ax_zscatter_block(ax_zscatter *z) {
    complete(z, z->next);
    return z->s[z->next].block;
}

void ax_zscatter_start(ax_zscatter *z, float *block, int64_t nb, int64_t n, float *dw_chunk, int defer) {
    int gz = z->Z->size, i = z->next;
    if ((size_t)n > z->chunk_cap || (block == z->s[i].block && (size_t)(n * gz) > z->cap))
        ax_fatal(__FILE__, __LINE__, "zscatter: a chunk of %lld elements, slots of %zu", (long long)n, z->chunk_cap);
    complete(z, i);
    z->next = (i + 1) % z->n;
    ax_be()->zero(block + nb, (size_t)(n * gz - nb) * sizeof(float)); /* the chunks' padding */
    ax_ireduce_scatter_f32(z->Z, block, z->s[i].chunk, (size_t)n, &z->s[i].req);
    z->s[i].dst = dw_chunk;
    z->s[i].len = n;
    if (defer) z->deferred++;
    else complete(z, i);
}

void ax_zscatter_drain(ax_zscatter *z) {
    for (int k = 0; k < z->n; k++) complete(z, (z->next + k) % z->n); /* oldest first */
}

void ax_zscatter_complete_range(ax_zscatter *z, const float *lo, const float *hi) {
    for (int k = 0; k < z->n; k++) {
        int i = (z->next + k) % z->n;
        if (z->s[i].dst && z->s[i].dst < hi && z->s[i].dst + z->s[i].len > lo) complete(z, i);
    }
}

double ax_zscatter_bytes(const ax_zscatter *z) { return 4.0 * z->n * (double)(z->cap + z->chunk_cap); }
