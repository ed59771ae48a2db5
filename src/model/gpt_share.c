/* A rank's share of the checkpoint's parallel write (model/gpt.h,
 * ax_gpt_share): which bytes of each file it writes, and the copies that
 * stage them from its local parameters in file order. */
#include "model/gpt.h"
#include "backend/backend.h"
#include "util/err.h"
#include <stdlib.h>
#include <string.h>

/* Copies of parameter i held whole on several ranks (the data replicas and
 * the axes over which the block is replicated) are written by one of them:
 * replica i mod count (mixed radix over the data group's rank, d then c,
 * then x, y, z), so consecutive
 * parameters fall to different ranks. */
static int writes_whole(const ax_gpt *m, int i, ax_share_of of) {
    const ax_grid *g = m->g;
    int rep = ax_shard_replicated(&m->p[i].shard, g), n = 1, me = 0;
    /* ZeRO-1's optimizer state: the share (data and, for the replicated
     * region, Z) already names one rank; the X and Y copies remain */
    int by_share = of == AX_SHARE_OPTIM && m->zero;
    if (!by_share) me = g->data.rank, n = g->data.size;
    if (rep & 1) me = me * g->gx + g->x, n *= g->gx;
    if (rep & 2) me = me * g->gy + g->y, n *= g->gy;
    if ((rep & 4) && !by_share) me = me * g->gz + g->z, n *= g->gz;
    return me == i % n;
}

typedef struct {
    int64_t local, n, e; /* local elements [local, local+n) = logical [e, e+n) */
} own_run;

typedef struct {
    own_run *r;
    int64_t n, cap;
} own_runs;

static void push_run(own_runs *o, int64_t local, int64_t n, int64_t e) {
    if (o->n == o->cap) o->r = ax_realloc(o->r, (size_t)(o->cap = 2 * o->cap + 64) * sizeof *o->r);
    o->r[o->n++] = (own_run){local, n, e};
}

/* flat [f, f + n) at logical e: whole (local = flat index), or under ZeRO-1's
 * optimizer state its parts in the rank's share (local = share index) */
static void push_piece(const ax_gpt *m, ax_share_of of, own_runs *o, int64_t f, int64_t n, int64_t e) {
    if (!(of == AX_SHARE_OPTIM && m->zero)) {
        push_run(o, f, n, e);
        return;
    }
    int lo = 0, hi = m->nzown; /* the first part ending after f */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (m->zown[mid].flat + m->zown[mid].n <= f) lo = mid + 1;
        else hi = mid;
    }
    for (int k = lo; k < m->nzown && m->zown[k].flat < f + n; k++) {
        const ax_zero_own *z = &m->zown[k];
        int64_t a = z->flat > f ? z->flat : f, b = z->flat + z->n < f + n ? z->flat + z->n : f + n;
        if (a < b) push_run(o, z->share + (a - z->flat), b - a, e + (a - f));
    }
}

/* The local runs of parameter i this rank writes (a part replicated over c
 * consecutive Y shards, local [lo, hi): by the shard with y mod c = i mod c). */
static int64_t owned_runs(const ax_gpt *m, int i, ax_share_of of, own_run **out) {
    const ax_param *p = &m->p[i];
    const ax_grid *g = m->g;
    int64_t n = ax_shard_numel(&p->shard, g), lo, hi;
    int c = ax_shard_copies(&p->shard, g, g->z, &lo, &hi);
    own_runs o = {0};
    for (int64_t a = 0, k, j; writes_whole(m, i, of) && a < n; a += k) {
        j = ax_shard_logical_index(&p->shard, g, g->x, g->y, g->z, a);
        k = ax_shard_run(&p->shard, g, g->x, g->y, g->z, a);
        for (int64_t s = a, e; j >= 0 && s < a + k; s = e) { /* cut at lo and hi */
            e = s < lo && a + k > lo ? lo : s < hi && a + k > hi ? hi : a + k;
            if (s >= lo && s < hi && g->y % c != i % c) continue;
            push_piece(m, of, &o, p->offset + s, e - s, j + (s - a));
        }
    }
    *out = o.r ? o.r : ax_malloc(sizeof *o.r);
    return o.n;
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

/* The owned elements are rows rowof[0..nq) x columns [cmin, cmin + w), all of
 * them: stage element (c - cmin) * nq + q[row], file order. Each file column's
 * consecutive rows are one segment (push_seg joins columns that continue
 * each other), each local run one copy of stride nq. */
static void share_rectangle(ax_gpt_share *s, const own_run *r, int64_t nr, int64_t base, int64_t rows, int64_t cols,
                            int64_t cmin, int64_t w, const int64_t *q, const int64_t *rowof, int64_t nq) {
    for (int64_t c = cmin; c < cmin + w; c++)
        for (int64_t a = 0, b; a < nq; a = b) {
            for (b = a + 1; b < nq && rowof[b] == rowof[b - 1] + 1; b++) {}
            push_seg(s, (base + c * rows + rowof[a]) * 4, (b - a) * 4);
        }
    for (int64_t k = 0; k < nr; k++) {
        grow_copy(s);
        int64_t st = s->owned + (r[k].e % cols - cmin) * nq + q[r[k].e / cols];
        s->copy[s->ncopy++] = (ax_gpt_copy){r[k].local, st, r[k].n, r[k].n > 1 ? nq : 1};
    }
    s->owned += w * nq;
}

/* GPT-2 Conv1D weights, stored [in, out]: logical (r, c) is file element
 * c * rows + r. The owned elements are placed on the rectangle of their rows
 * x column span, numbered in file order (column, then row), and each local
 * run becomes a strided copy into the stage. */
static void share_transposed(ax_gpt_share *s, const ax_param *p, const own_run *r, int64_t nr, int64_t base,
                             int64_t **posbuf, int64_t *poscap) {
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
    int64_t w = cmax > cmin ? cmax - cmin : 0, owned = 0;
    for (int64_t k = 0; k < nr; k++) owned += r[k].n;
    if (owned == w * nq) { /* the whole rectangle (every grid's blocks): no per-element map */
        share_rectangle(s, r, nr, base, rows, cols, cmin, w, q, rowof, nq);
        free(q);
        free(rowof);
        return;
    }
    if (w * nq > *poscap) /* one buffer for every tensor: its pages are touched once, not per tensor */
        *posbuf = ax_realloc(*posbuf, (size_t)(*poscap = w * nq) * sizeof(int64_t));
    int64_t *pos = *posbuf;
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
}

int ax_gpt_share_init(ax_gpt *m, ax_gpt_share *s, ax_share_of of) {
    memset(s, 0, sizeof *s);
    int64_t base = 0, *pos = NULL, poscap = 0; /* base: file elements before parameter i (declared contiguously) */
    for (int i = 0; i < m->np; i++) {
        const ax_param *p = &m->p[i];
        if (!p->present) continue;
        own_run *r;
        int64_t nr = owned_runs(m, i, of, &r);
        if (p->hf_transposed) share_transposed(s, p, r, nr, base, &pos, &poscap);
        else share_rows(s, r, nr, base);
        free(r);
        base += p->shard.rows * p->shard.cols;
    }
    free(pos);
    s->data_bytes = base * 4;
    return ax_gpt_share_check(m, s);
}

static int piece_cmp(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* the pieces (offset, length) received for [lo, hi), sorted: they must tile it */
static int tiles(int64_t *pc, int n, int64_t lo, int64_t hi) {
    qsort(pc, (size_t)n, 2 * sizeof *pc, piece_cmp);
    int64_t at = lo;
    for (int i = 0; i <= n; i++) {
        int64_t off = i < n ? pc[2 * i] : hi;
        if (i == n && at > hi)
            return AX_ERR("checkpoint write: bytes [%lld, %lld) past the data section's end would be written "
                          "(a bug in the partition, caught before any write)",
                          (long long)hi, (long long)at);
        if (off < at)
            return AX_ERR("checkpoint write: bytes [%lld, %lld) of the data section would be written by two ranks "
                          "(a bug in the partition, caught before any write)",
                          (long long)off, (long long)at);
        if (off > at)
            return AX_ERR("checkpoint write: bytes [%lld, %lld) of the data section would be written by no rank "
                          "(a bug in the partition, caught before any write)",
                          (long long)at, (long long)off);
        if (i < n) at = off + pc[2 * i + 1];
    }
    return 0;
}

/* Each rank checks one block of the data section: every segment is cut at
 * the blocks' bounds and sent to the block's rank, which sorts what it gets.
 * Exact (a byte count would pass an overlap beside an equal gap), and each
 * rank handles about 1/P of all segments. */
int ax_gpt_share_check(const ax_gpt *m, const ax_gpt_share *s) {
    MPI_Comm c = m->g->world;
    int P = m->g->size, me = m->g->rank, rc = 0;
    int64_t T = s->data_bytes, B = T / P + 1;
    int *cnt = ax_calloc((size_t)P * 4, sizeof(int)), *rcnt = cnt + P, *sdis = cnt + 2 * P, *rdis = cnt + 3 * P;
    for (int pass = 0; pass < 2; pass++) { /* count, then place */
        int64_t *out = pass ? ax_malloc((size_t)(sdis[P - 1] + cnt[P - 1] + 1) * sizeof *out) : NULL;
        int *at = pass ? ax_calloc((size_t)P, sizeof(int)) : NULL;
        for (int k = 0; k < s->nseg; k++)
            for (int64_t o = s->seg[k].off, e = o + s->seg[k].n; o < e;) {
                int b = o < 0 ? 0 : o >= T ? P - 1 : (int)(o / B); /* out of range: found by the last block */
                int64_t cut = b == P - 1 || (b + 1) * B > e ? e : (b + 1) * B;
                if (pass) out[sdis[b] + at[b]] = o, out[sdis[b] + at[b] + 1] = cut - o, at[b] += 2;
                else cnt[b] += 2;
                o = cut;
            }
        if (!pass) {
            AX_CHECK_MPI(MPI_Alltoall(cnt, 1, MPI_INT, rcnt, 1, MPI_INT, c));
            for (int r = 1; r < P; r++) sdis[r] = sdis[r - 1] + cnt[r - 1], rdis[r] = rdis[r - 1] + rcnt[r - 1];
            continue;
        }
        int nin = rdis[P - 1] + rcnt[P - 1];
        int64_t *in = ax_malloc((size_t)(nin + 1) * sizeof *in);
        AX_CHECK_MPI(MPI_Alltoallv(out, cnt, sdis, MPI_INT64_T, in, rcnt, rdis, MPI_INT64_T, c));
        int64_t lo = (int64_t)me * B < T ? (int64_t)me * B : T, hi = me == P - 1 ? T : lo + B < T ? lo + B : T;
        rc = tiles(in, nin / 2, lo, hi);
        free(in);
        free(out);
        free(at);
    }
    free(cnt);
    return ax_agree(c, rc);
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
