/* ZeRO-1: the optimizer's share of each gradient bucket (model/gpt.h,
 * ax_gpt_set_zero; docs/design.md, "Optimizer state sharded over data").
 *
 * Each bucket range [off, off + len) is summed over a group of P ranks: the
 * data group for the Z-chunked region, data x Z for the replicated one. The
 * rule: rank k of the group owns the block [off + k blk, off + (k+1) blk) of
 * blk = len / P elements, which one equal-block reduce-scatter sums into its
 * share, and the tail [off + P blk, off + len), fewer than P elements, is
 * all-reduced and updated by every rank of the group alike (the same sums,
 * the same update, so the copies stay equal without a gather). A rank's
 * share is its blocks then their tails, range after range, bucket after
 * bucket: the layout of the gradient share, of AdamW's moments and of a
 * checkpoint's reading of them. */
#include "model/gpt.h"
#include "backend/backend.h"
#include "util/err.h"
#include <stdlib.h>
#include <string.h>

static ax_comm *range_group(ax_gpt *m, int zchunk) { return zchunk ? &m->g->data : &m->g->dz; }

void ax_gpt_zero_free(ax_gpt *m) {
    const ax_backend *be = ax_be();
    be->free(m->gshare);
    be->free(m->zdecay);
    free(m->zsegs);
    free(m->zsq);
    free(m->zown);
    m->zown = NULL;
    m->nzown = 0;
    m->gshare = NULL;
    m->zdecay = NULL;
    m->zsegs = NULL;
    m->zsq = NULL;
    m->n_share = 0;
    m->nzsegs = m->nzsq = 0;
}

typedef struct {
    int64_t *r; /* pairs */
    int n, cap;
} ranges;

static void ranges_push(ranges *s, int64_t lo, int64_t hi) {
    if (hi <= lo) return;
    if (s->n && s->r[2 * s->n - 1] == lo) {
        s->r[2 * s->n - 1] = hi; /* neighbours merged */
        return;
    }
    if (s->n == s->cap) s->r = ax_realloc(s->r, (size_t)(s->cap = 2 * s->cap + 64) * 2 * sizeof(int64_t));
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
}

static int range_cmp(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* [lo, hi) of the flat buffer intersected with each of the sorted flat
 * ranges fr (nf pairs), shifted by `to - lo`, into out */
static void intersect(const int64_t *fr, int nf, int64_t lo, int64_t hi, int64_t to, ranges *out) {
    for (int i = 0; i < nf; i++) {
        int64_t a = fr[2 * i] > lo ? fr[2 * i] : lo, b = fr[2 * i + 1] < hi ? fr[2 * i + 1] : hi;
        if (a < b) ranges_push(out, a - lo + to, b - lo + to);
    }
}

/* The parameters' flat ranges, sorted: those AdamW decays (counted 0), or
 * those the gradient norm counts on this rank as the owner of its share
 * (counted 1: ax_shard_sumsq_ranges's choice among X and Y copies; every Z
 * copy of a replicated parameter is a candidate, the share owning it once). */
static ranges flat_ranges(ax_gpt *m, int counted) {
    ranges s = {0};
    ax_grid gz = *m->g;
    gz.z = 0;
    for (int i = 0; i < m->np; i++) {
        const ax_param *p = &m->p[i];
        if (!p->present || !p->numel) continue;
        if (!counted) {
            if (p->decay) ranges_push(&s, p->offset, p->offset + p->numel);
            continue;
        }
        const float *x[2];
        size_t len[2];
        int k = ax_shard_sumsq_ranges(&p->shard, p->shard.zchunk ? m->g : &gz, m->grads + p->offset, x, len);
        for (int j = 0; j < k; j++) ranges_push(&s, x[j] - m->grads, x[j] - m->grads + (int64_t)len[j]);
    }
    qsort(s.r, (size_t)s.n, 2 * sizeof(int64_t), range_cmp);
    return s;
}

static void push_seg(ax_gpt *m, int64_t flat, int64_t share, int64_t n, const ranges *decay, ranges *zd) {
    if (n <= 0) return;
    ax_zero_seg *z = &m->zsegs[m->nzsegs++];
    *z = (ax_zero_seg){.flat = flat, .share = share, .n = n, .dr0 = zd->n};
    intersect(decay->r, decay->n, flat, flat + n, 0, zd);
    z->ndr = zd->n - z->dr0;
}

static int own_cmp(const void *a, const void *b) {
    const ax_zero_own *x = a, *y = b;
    return x->flat < y->flat ? -1 : x->flat > y->flat;
}

/* a part of the share this rank stands for alone (its blocks; the tails on
 * the group's rank 0) */
static void push_own(ax_gpt *m, int64_t flat, int64_t share, int64_t n) {
    if (n > 0) m->zown[m->nzown++] = (ax_zero_own){flat, share, n};
}

void ax_gpt_zero_layout(ax_gpt *m) {
    ax_gpt_zero_free(m);
    if (!m->zero) return;
    ranges decay = flat_ranges(m, 0), counted = flat_ranges(m, 1), zd = {0}, sq = {0};
    m->zsegs = ax_calloc((size_t)m->nbuckets * 8, sizeof *m->zsegs);
    m->zown = ax_calloc((size_t)m->nbuckets * 8, sizeof *m->zown);
    int64_t sh = 0;
    for (int bi = 0; bi < m->nbuckets; bi++) {
        ax_bucket *b = &m->buckets[bi];
        b->seg0 = m->nzsegs;
        for (int i = 0; i < b->n; i++) {
            ax_comm *c = range_group(m, b->r[i].zchunk);
            int64_t off = b->r[i].off, len = b->r[i].len, blk = len / c->size, own = off + c->rank * blk;
            int64_t tail = len - c->size * blk, tail_at = off + c->size * blk;
            b->r[i].blk = blk;
            b->r[i].tail = tail;
            b->r[i].sh = sh;
            push_seg(m, own, sh, blk, &decay, &zd);
            push_seg(m, tail_at, sh + blk, tail, &decay, &zd);
            push_own(m, own, sh, blk);
            if (c->rank == 0) push_own(m, tail_at, sh + blk, tail);
            sh += blk + tail;
        }
        b->nseg = m->nzsegs - b->seg0;
    }
    qsort(m->zown, (size_t)m->nzown, sizeof *m->zown, own_cmp);
    for (int i = 0; i < m->nzown; i++) /* the norm counts each element once: on the rank standing for it */
        intersect(counted.r, counted.n, m->zown[i].flat, m->zown[i].flat + m->zown[i].n, m->zown[i].share, &sq);
    const ax_backend *be = ax_be();
    m->n_share = sh;
    m->gshare = be->alloc((size_t)(sh ? sh : 1) * sizeof(float));
    m->zdecay = be->alloc((size_t)(zd.n ? zd.n : 1) * 2 * sizeof(int64_t));
    be->copy(m->zdecay, zd.r, (size_t)zd.n * 2 * sizeof(int64_t));
    for (int i = 0; i < sq.n; i++) sq.r[2 * i + 1] -= sq.r[2 * i]; /* (offset, length) */
    m->zsq = sq.r;
    m->nzsq = sq.n;
    free(decay.r);
    free(counted.r);
    free(zd.r);
}

void ax_gpt_set_zero(ax_gpt *m, int zero) {
    m->zero = !!zero;
    ax_gpt_zero_layout(m);
}

double ax_gpt_grad_sumsq(ax_gpt *m) {
    if (!m->zero) return ax_gpt_sumsq(m, m->grads);
    double s = 0;
    const float *x[AX_SUMSQ_RANGES];
    size_t len[AX_SUMSQ_RANGES];
    int k = 0;
    for (int i = 0; i < m->nzsq; i++) {
        x[k] = m->gshare + m->zsq[2 * i];
        len[k++] = (size_t)m->zsq[2 * i + 1];
        if (k == AX_SUMSQ_RANGES) {
            s += ax_be()->sumsq(k, x, len);
            k = 0;
        }
    }
    if (k) s += ax_be()->sumsq(k, x, len);
    /* the shares partition every logical element over the whole grid */
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, m->g->world));
    return s;
}

void ax_gpt_zero_gather_start(ax_gpt *m, int bucket, float *flat) {
    ax_bucket *b = &m->buckets[bucket];
    for (int i = 0; i < b->n; i++) {
        ax_comm *c = range_group(m, b->r[i].zchunk);
        float *p = flat + b->r[i].off;
        ax_iallgather_f32(c, p + c->rank * b->r[i].blk, p, (size_t)b->r[i].blk, &b->req[i]); /* in place */
    }
    b->started = 1;
}

void ax_gpt_zero_gather_wait(ax_gpt *m) {
    for (int bi = 0; bi < m->nbuckets; bi++) {
        ax_bucket *b = &m->buckets[bi];
        for (int i = 0; b->started && i < b->n; i++) ax_wait(&b->req[i]);
        b->started = 0;
    }
    m->params_h_current = 0; /* the bf16 copy has only this rank's blocks: the next forward rounds it */
}

void ax_gpt_zero_unshard(ax_gpt *m, const float *share, float *flat) {
    const ax_backend *be = ax_be();
    for (int bi = 0; bi < m->nbuckets; bi++) {
        const ax_bucket *b = &m->buckets[bi];
        for (int k = b->seg0; k < b->seg0 + b->nseg; k++)
            be->copy(flat + m->zsegs[k].flat, share + m->zsegs[k].share, (size_t)m->zsegs[k].n * sizeof(float));
        ax_gpt_zero_gather_start(m, bi, flat);
    }
    ax_gpt_zero_gather_wait(m);
}

void ax_gpt_zero_shard(const ax_gpt *m, const float *flat, float *share) {
    for (int k = 0; k < m->nzsegs; k++)
        ax_be()->copy(share + m->zsegs[k].share, flat + m->zsegs[k].flat, (size_t)m->zsegs[k].n * sizeof(float));
}
