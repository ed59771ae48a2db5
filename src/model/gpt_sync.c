/* Gradient synchronisation over the data-parallel groups, in buckets of
 * layers (docs/algorithm.md §4): each bucket's all-reduces start as soon as backward has
 * finished its layers (AX_OV_DP) or all at the end, the same messages either
 * way. Layer l's zchunk gradients (its FC weights) and replicated ones
 * (norms, biases) are each contiguous in the flat buffers (gpt.c lays the
 * table out in order), so a range of layers is one range in each region. */
#include "model/gpt.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ax_overlap_parse(const char *s, int *flags) {
    static const char *names[] = {"oar", "ors", "oag", "dp"};
    *flags = 0;
    if (!strcmp(s, "none")) return 0;
    if (!strcmp(s, "all")) {
        *flags = AX_OV_ALL;
        return 0;
    }
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, ",");
        int k = 0;
        while (k < 4 && !(strlen(names[k]) == n && !strncmp(p, names[k], n))) k++;
        if (k == 4) return AX_ERR("--overlap %s: expected none, all or a comma list of oar, ors, oag, dp", s);
        *flags |= 1 << k;
        p += n + (p[n] == ',');
    }
    return 0;
}

const char *ax_overlap_name(int flags, char *buf, size_t n) {
    static const char *names[] = {"oar", "ors", "oag", "dp"};
    snprintf(buf, n, "%s", flags ? "" : "none");
    for (int k = 0; k < 4; k++)
        if (flags & (1 << k)) snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", strlen(buf) ? "," : "", names[k]);
    return buf;
}

/* [z0, z1) and [r0, r1): layer l's gradients in the zchunk and replicated regions */
static void layer_ranges(const ax_gpt *m, int l, int64_t z[2], int64_t r[2]) {
    z[0] = r[0] = INT64_MAX;
    z[1] = r[1] = 0;
    for (int k = 0; k < AX_P_PER_LAYER; k++) {
        const ax_param *p = &m->p[AX_PID(l, k)];
        if (!p->present) continue;
        int64_t *d = p->shard.zchunk ? z : r;
        if (p->offset < d[0]) d[0] = p->offset;
        if (p->offset + p->numel > d[1]) d[1] = p->offset + p->numel;
    }
    if (z[1] == 0) z[0] = 0;
}

/* the flat buffer's regions: a range's gradients are summed over data (the
 * Z-chunked region, first) or over data x Z (the replicated one) */
typedef enum { AX_REGION_REPLICATED, AX_REGION_ZCHUNK } ax_region;

static void add_range(ax_bucket *b, int64_t lo, int64_t hi, ax_region region) {
    if (hi <= lo) return;
    b->r[b->n].off = lo;
    b->r[b->n].len = hi - lo;
    b->r[b->n].zchunk = region == AX_REGION_ZCHUNK;
    b->n++;
}

void ax_gpt_buckets_init(ax_gpt *m) {
    int L = m->cfg.n_layer;
    free(m->buckets);
    m->buckets = ax_calloc(L + 1, sizeof(ax_bucket));
    m->nbuckets = 0;
    int64_t z[2], r[2], ztop[2], rtop[2], bytes = 0;
    int top = L - 1;
    for (int l = L - 1; l >= 0; l--) { /* from the top: the order backward finishes them */
        layer_ranges(m, l, z, r);
        if (l == top) {
            memcpy(ztop, z, sizeof z);
            memcpy(rtop, r, sizeof r);
        }
        bytes += 4 * (z[1] - z[0] + r[1] - r[0]);
        if (bytes < m->bucket_bytes && l > 0) continue;
        ax_bucket *b = &m->buckets[m->nbuckets++];
        b->l0 = l;
        b->l1 = top;
        add_range(b, z[0], ztop[1], AX_REGION_ZCHUNK);
        add_range(b, r[0], rtop[1], AX_REGION_REPLICATED);
        top = l - 1;
        bytes = 0;
    }
    /* the rest: embeddings, the final norm, the LM head, around the layers */
    int64_t z0[2], r0[2], zL[2], rL[2];
    layer_ranges(m, 0, z0, r0);
    layer_ranges(m, L - 1, zL, rL);
    ax_bucket *b = &m->buckets[m->nbuckets++];
    b->l0 = 1;
    b->l1 = 0;
    add_range(b, 0, z0[0], AX_REGION_ZCHUNK);
    add_range(b, zL[1], m->n_zchunk, AX_REGION_ZCHUNK);
    add_range(b, m->n_zchunk, r0[0] < INT64_MAX ? r0[0] : m->n_local, AX_REGION_REPLICATED);
    add_range(b, rL[1] > m->n_zchunk ? rL[1] : m->n_local, m->n_local, AX_REGION_REPLICATED);
    ax_gpt_zero_layout(m); /* the shares follow the buckets */
}

/* Replicated key/value heads: each copy's gradient holds only its own query
 * heads' share; the sum over the copies makes every copy's the full one, so
 * the copies stay identical through the update. Layers l0..l1, before their
 * bucket's all-reduces (in whichever order the buckets start, the same sums). */
static void sum_kv_copies(ax_gpt *m, int l0, int l1) {
    for (int l = l0; m->kv_copies > 1 && l <= l1; l++)
        for (int k = AX_P_QKVW; k <= AX_P_QKVB; k++) {
            const ax_param *p = &m->p[AX_PID(l, k)];
            int64_t lo, hi;
            if (!p->present) continue;
            ax_shard_copies(&p->shard, m->g, m->g->z, &lo, &hi);
            ax_allreduce_f32(&m->kv_group, m->grads + p->offset + lo, (size_t)(hi - lo));
        }
}

static void start_bucket(ax_gpt *m, ax_bucket *b) {
    for (int i = 0; i < b->n; i++) {
        float *g = m->grads + b->r[i].off;
        if (b->r[i].zchunk) ax_zscatter_complete_range(&m->ws.rs, g, g + b->r[i].len);
    }
    sum_kv_copies(m, b->l0, b->l1); /* none in the rest (l0 > l1) */
    for (int i = 0; i < b->n; i++) {
        ax_comm *c = b->r[i].zchunk ? &m->g->data : &m->g->dz;
        float *g = m->grads + b->r[i].off;
        if (!m->zero) {
            ax_iallreduce_f32(c, g, (size_t)b->r[i].len, &b->req[i]);
            continue;
        }
        /* ZeRO-1 (gpt_zero.c): the rank's block summed into its share, the tail on every rank */
        int64_t blk = b->r[i].blk, tail = b->r[i].tail;
        ax_ireduce_scatter_f32(c, g, m->gshare + b->r[i].sh, (size_t)blk, &b->req[i]);
        ax_iallreduce_f32(c, g + c->size * blk, (size_t)tail, &b->treq[i]);
    }
    b->started = 1;
}

/* bucket b's collectives complete; under ZeRO-1 its tails copied to the share */
static void finish_bucket(ax_gpt *m, ax_bucket *b) {
    const ax_backend *be = ax_be();
    for (int k = 0; k < b->n; k++) {
        ax_wait(&b->req[k]);
        if (!m->zero) continue;
        ax_wait(&b->treq[k]);
        int64_t blk = b->r[k].blk, tail = b->r[k].tail;
        ax_comm *c = b->r[k].zchunk ? &m->g->data : &m->g->dz;
        if (tail) /* queued behind the all-reduce (a device's stream), as a gather of one is */
            (be->copy_async ? be->copy_async : be->copy)(m->gshare + b->r[k].sh + blk,
                                                         m->grads + b->r[k].off + c->size * blk, tail * sizeof(float));
    }
    b->started = 0;
}

void ax_gpt_buckets_layer_done(ax_gpt *m, int l) {
    if (!m->sync_armed) return;
    /* a bucket ending at layer l + 1 waited one layer, for its reduce-scatters over Z */
    for (int i = 0; i < m->nbuckets; i++)
        if (m->buckets[i].l0 == l + 1 && m->buckets[i].l0 <= m->buckets[i].l1 && !m->buckets[i].started) {
            start_bucket(m, &m->buckets[i]);
            m->buckets_early++;
        }
}

void ax_gpt_grad_sync_begin(ax_gpt *m) { m->sync_armed = !!(m->overlap & AX_OV_DP); }

void ax_gpt_grad_sync(ax_gpt *m) {
    ax_zscatter_drain(&m->ws.rs);
    for (int i = 0; i < m->nbuckets; i++)
        if (!m->buckets[i].started) start_bucket(m, &m->buckets[i]);
    for (int i = 0; i < m->nbuckets; i++) finish_bucket(m, &m->buckets[i]);
    m->sync_armed = 0;
}
