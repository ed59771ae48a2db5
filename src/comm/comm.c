#include "comm/comm.h"
#ifdef AX_HAVE_CUDA
#include "comm/nccl.h"
#endif
#include "util/err.h"
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t chunk_max = INT_MAX;

/* Every non-blocking collective in flight, so that ax_progress can move them
 * all along from between pieces of compute. */
#define AX_INFLIGHT_MAX 512
static ax_req *inflight[AX_INFLIGHT_MAX];
static int n_inflight;

static void inflight_add(ax_req *r) {
    if (n_inflight == AX_INFLIGHT_MAX)
        ax_fatal(__FILE__, __LINE__, "more than %d collectives in flight", AX_INFLIGHT_MAX);
    inflight[n_inflight++] = r;
}

static void inflight_remove(ax_req *r) {
    for (int i = 0; i < n_inflight; i++)
        if (inflight[i] == r) {
            inflight[i] = inflight[--n_inflight];
            return;
        }
}

int ax_progress(void) {
    for (int i = 0; i < n_inflight;) {
        ax_req *r = inflight[i];
        int done = 0;
        AX_CHECK_MPI(MPI_Testall(r->n, r->r, &done, MPI_STATUSES_IGNORE));
        if (done) {
            r->n = 0;
            inflight[i] = inflight[--n_inflight];
        } else i++;
    }
    return n_inflight;
}

void ax_comm_set_chunk(size_t n) { chunk_max = n > 0 && n <= INT_MAX ? n : INT_MAX; }

void ax_comm_from(ax_comm *c, MPI_Comm comm) {
    memset(c, 0, sizeof *c);
    ax_backend_set_progress(ax_progress); /* long GEMMs drive the collectives in flight */
    c->comm = comm;
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_rank(comm, &c->rank);
}

void ax_comm_split(const ax_comm *parent, int color, int key, ax_comm *c) {
    MPI_Comm sub;
    AX_CHECK_MPI(MPI_Comm_split(parent->comm, color, key, &sub));
    ax_comm_from(c, sub);
#ifdef AX_HAVE_CUDA
    if (parent->nccl) ax_nccl_group(c); /* distinct GPUs still; none for a group of one */
#endif
}

static void stage_free(ax_comm *c);

void ax_comm_free(ax_comm *c) {
#ifdef AX_HAVE_CUDA
    if (c->nccl) ax_nccl_detach(c);
#endif
    stage_free(c);
    if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
    c->comm = MPI_COMM_NULL;
}

/* ---- every collective as parts of at most `chunk` elements ---- */

typedef enum { AX_AR, AX_AG, AX_RS } ax_kind;

typedef struct {
    ax_kind kind;
    MPI_Datatype el;
    int width;
    MPI_Op op;
} ax_coll;

/* `len` elements of each rank's block, the blocks `stride` elements apart */
static MPI_Datatype blocks(size_t len, size_t stride, const ax_coll *k) {
    MPI_Datatype t, r;
    AX_CHECK_MPI(MPI_Type_contiguous((int)len, k->el, &t));
    AX_CHECK_MPI(MPI_Type_create_resized(t, 0, (MPI_Aint)(stride * (size_t)k->width), &r));
    AX_CHECK_MPI(MPI_Type_commit(&r));
    MPI_Type_free(&t);
    return r;
}

/* MPI's predefined reductions take only predefined types, so the float sum
 * over the resized part types is a user operation: each of `count` items is
 * `size` bytes of floats, items one extent apart. */
static void sum_parts(void *in, void *inout, int *count, MPI_Datatype *dt) {
    int size;
    MPI_Aint lb, extent;
    MPI_Type_size(*dt, &size);
    MPI_Type_get_extent(*dt, &lb, &extent);
    for (int c = 0; c < *count; c++) {
        const float *a = (const float *)((const char *)in + c * extent);
        float *b = (float *)((char *)inout + c * extent);
        for (int i = 0; i < size / 4; i++) b[i] += a[i];
    }
}

static MPI_Op part_op(const ax_coll *k) {
    static MPI_Op sum = MPI_OP_NULL;
    if (k->op != MPI_SUM || k->el != MPI_FLOAT)
        ax_fatal(__FILE__, __LINE__, "reduce-scatter in parts is float sums only");
    if (sum == MPI_OP_NULL) AX_CHECK_MPI(MPI_Op_create(sum_parts, 1, &sum));
    return sum;
}

/* Elements [o, o+len) of each rank's n: blocking when q is NULL. All-gather and
 * reduce-scatter parts describe the rank blocks of the (size*n) buffer with a
 * resized type; a type may be freed while an operation on it is pending. */
static void part(ax_comm *c, const ax_coll *k, const void *send, void *recv, size_t o, size_t len, size_t n,
                 MPI_Request *q) {
    char *rb = (char *)recv + o * k->width;
    const char *sb = (const char *)send + o * k->width;
    if (k->kind == AX_AR) {
        if (q) AX_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, rb, (int)len, k->el, k->op, c->comm, q));
        else AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, rb, (int)len, k->el, k->op, c->comm));
        return;
    }
    MPI_Datatype bt = k->el;
    MPI_Op op = k->op;
    int cnt = (int)len;
    if (len < n) {
        bt = blocks(len, n, k);
        cnt = 1;
        if (k->kind == AX_RS) op = part_op(k);
    }
    if (k->kind == AX_AG) {
        /* the rank's block already in place in recv: MPI forbids the aliased send */
        const void *in = sb == rb + (size_t)c->rank * n * k->width ? MPI_IN_PLACE : sb;
        if (q) AX_CHECK_MPI(MPI_Iallgather(in, (int)len, k->el, rb, cnt, bt, c->comm, q));
        else AX_CHECK_MPI(MPI_Allgather(in, (int)len, k->el, rb, cnt, bt, c->comm));
    } else {
        if (q) AX_CHECK_MPI(MPI_Ireduce_scatter_block(sb, rb, cnt, bt, op, c->comm, q));
        else AX_CHECK_MPI(MPI_Reduce_scatter_block(sb, rb, cnt, bt, op, c->comm));
    }
    if (len < n) MPI_Type_free(&bt);
}

/* MPI on the buffers as given. r NULL: blocking, parts of chunk_max; else at most AX_REQ_PARTS parts */
static void mpi_coll(ax_comm *c, const ax_coll *k, const void *send, void *recv, size_t n, ax_req *r) {
    size_t chunk = chunk_max;
    if (r && chunk < (n + AX_REQ_PARTS - 1) / AX_REQ_PARTS) chunk = (n + AX_REQ_PARTS - 1) / AX_REQ_PARTS;
    if (chunk > INT_MAX) ax_fatal(__FILE__, __LINE__, "non-blocking collective of %zu elements is too large", n);
    for (size_t o = 0; o < n; o += chunk)
        part(c, k, send, recv, o, n - o < chunk ? n - o : chunk, n, r ? &r->r[r->n++] : NULL);
    if (r) inflight_add(r);
}

/* ---- host staging (comm.h): a device backend's collectives through host buffers ---- */

struct ax_stage {
    struct {
        void *p;
        size_t cap;
        int busy;
    } * buf;
    int n;
};

static void *host_alloc(size_t bytes) { return ax_be()->host_alloc ? ax_be()->host_alloc(bytes) : ax_malloc(bytes); }
static void host_free(void *p) {
    if (ax_be()->host_free) ax_be()->host_free(p);
    else free(p);
}

/* a free host buffer of at least bytes: the smallest that fits, else a free one
 * grown, else a new one (so buffers are made in the first step, then reused) */
static int stage_get(ax_comm *c, size_t bytes) {
    if (!c->stage) c->stage = ax_calloc(1, sizeof *c->stage);
    struct ax_stage *s = c->stage;
    int best = -1, any = -1;
    for (int i = 0; i < s->n; i++) {
        if (s->buf[i].busy) continue;
        any = i;
        if (s->buf[i].cap >= bytes && (best < 0 || s->buf[i].cap < s->buf[best].cap)) best = i;
    }
    if (best < 0) {
        best = any;
        if (best < 0) {
            s->buf = realloc(s->buf, (size_t)(s->n + 1) * sizeof *s->buf);
            if (!s->buf) ax_fatal(__FILE__, __LINE__, "out of memory for %d staging buffers", s->n + 1);
            best = s->n++;
            s->buf[best].p = NULL;
        }
        if (s->buf[best].p) host_free(s->buf[best].p);
        s->buf[best].p = host_alloc(bytes);
        s->buf[best].cap = bytes;
    }
    s->buf[best].busy = 1;
    return best;
}

static void stage_free(ax_comm *c) {
    if (!c->stage) return;
    for (int i = 0; i < c->stage->n; i++) host_free(c->stage->buf[i].p);
    free(c->stage->buf);
    free(c->stage);
    c->stage = NULL;
}

/* The input to a host buffer [in | out] (in place for all-reduce), MPI there;
 * blocking: the result back now, else at completion (stage_finish). */
static void staged_coll(ax_comm *c, const ax_coll *k, const void *send, void *recv, size_t n, ax_req *r) {
    size_t w = (size_t)k->width, in = k->kind == AX_RS ? n * c->size : n, out = k->kind == AX_AG ? n * c->size : n;
    size_t hin = k->kind == AX_AR ? 0 : in * w; /* all-reduce: in place */
    int slot = stage_get(c, hin + out * w);
    char *h = c->stage->buf[slot].p;
    ax_be()->copy(h, k->kind == AX_AR ? recv : send, in * w);
    mpi_coll(c, k, h, h + hin, n, r);
    if (!r) {
        ax_be()->copy(recv, h + hin, out * w);
        c->stage->buf[slot].busy = 0;
        return;
    }
    r->from = h + hin;
    r->to = recv;
    r->bytes = out * w;
    r->slot = slot;
}

/* a completed staged collective's result to the backend's memory, its buffer freed for reuse */
static void stage_finish(ax_req *r) {
    ax_be()->copy(r->to, r->from, r->bytes);
    r->c->stage->buf[r->slot].busy = 0;
    r->from = NULL;
}

/* a group of one's gather or transfer: the backend's memory to itself,
 * queued behind the kernels that wrote it (no host wait on a device) */
static void self_copy(void *dst, const void *src, size_t bytes) {
    const ax_backend *be = ax_be();
    (be->copy_async ? be->copy_async : be->copy)(dst, src, bytes);
}

/* r NULL: blocking; else complete with ax_wait or ax_test */
static void coll(ax_comm *c, const ax_coll *k, const void *send, void *recv, size_t n, ax_req *r) {
    if (r) {
        r->c = c;
        r->n = 0;
        r->queued = 0;
        r->from = NULL;
    }
    if (c->size == 1) {
        if (k->kind != AX_AR && recv != send) self_copy(recv, send, n * (size_t)k->width);
        return;
    }
    if (n == 0) return;
    c->bytes += (double)k->width * n * (k->kind == AX_RS ? c->size : 1);
#ifdef AX_HAVE_CUDA
    if (c->nccl && k->el != MPI_DOUBLE) { /* the backend's memory: NCCL, queued on the device */
        ax_nccl_coll(c,
                     k->kind == AX_AR   ? (k->op == MPI_MAX ? AX_NCCL_MAX : AX_NCCL_SUM)
                     : k->kind == AX_AG ? AX_NCCL_GATHER
                                        : AX_NCCL_SCATTER,
                     k->width == 2, send, recv, n);
        if (r) r->queued = 1;
        else ax_nccl_join(c);
        return;
    }
#endif
    int staged = !ax_be()->host_memory && k->el != MPI_DOUBLE; /* f64: host scalars */
    /* the copy to the host waits for the kernels queued before it anyway:
     * that wait is compute, so it stays outside the blocked time */
    if (staged) ax_backend_sync();
    double t = MPI_Wtime();
    if (staged) staged_coll(c, k, send, recv, n, r);
    else mpi_coll(c, k, send, recv, n, r);
    c->seconds += MPI_Wtime() - t;
}

static const ax_coll sum_f32 = {AX_AR, MPI_FLOAT, 4, MPI_SUM}, sum_f64 = {AX_AR, MPI_DOUBLE, 8, MPI_SUM},
                     max_f32 = {AX_AR, MPI_FLOAT, 4, MPI_MAX}, gather_f32 = {AX_AG, MPI_FLOAT, 4, MPI_OP_NULL},
                     scatter_f32 = {AX_RS, MPI_FLOAT, 4, MPI_SUM}, gather_bf16 = {AX_AG, MPI_UINT16_T, 2, MPI_OP_NULL};

void ax_allreduce_f32(ax_comm *c, float *buf, size_t n) { coll(c, &sum_f32, NULL, buf, n, NULL); }
void ax_allreduce_f64(ax_comm *c, double *buf, size_t n) { coll(c, &sum_f64, NULL, buf, n, NULL); }
void ax_allreduce_max_f32(ax_comm *c, float *buf, size_t n) { coll(c, &max_f32, NULL, buf, n, NULL); }
void ax_allgather_f32(ax_comm *c, const float *send, float *recv, size_t n) {
    coll(c, &gather_f32, send, recv, n, NULL);
}
void ax_reduce_scatter_f32(ax_comm *c, const float *send, float *recv, size_t n) {
    coll(c, &scatter_f32, send, recv, n, NULL);
}
void ax_allgather_bf16(ax_comm *c, const ax_bf16 *send, ax_bf16 *recv, size_t n) {
    coll(c, &gather_bf16, send, recv, n, NULL);
}
void ax_iallreduce_f32(ax_comm *c, float *buf, size_t n, ax_req *r) { coll(c, &sum_f32, NULL, buf, n, r); }
void ax_iallgather_f32(ax_comm *c, const float *send, float *recv, size_t n, ax_req *r) {
    coll(c, &gather_f32, send, recv, n, r);
}
void ax_ireduce_scatter_f32(ax_comm *c, const float *send, float *recv, size_t n, ax_req *r) {
    coll(c, &scatter_f32, send, recv, n, r);
}
void ax_iallgather_bf16(ax_comm *c, const ax_bf16 *send, ax_bf16 *recv, size_t n, ax_req *r) {
    coll(c, &gather_bf16, send, recv, n, r);
}

/* ---- point to point ---- */

/* MPI on the buffers as given: parts of at least n / (AX_REQ_PARTS / 2)
 * elements, each a send and a receive, matched in the order posted (MPI does
 * not let messages of one sender overtake each other on one communicator) */
static void mpi_sendrecv(ax_comm *c, const float *send, int dst, float *recv, int src, size_t n, ax_req *r) {
    size_t chunk = chunk_max, parts = AX_REQ_PARTS / 2;
    if (chunk < (n + parts - 1) / parts) chunk = (n + parts - 1) / parts;
    if (chunk > INT_MAX) ax_fatal(__FILE__, __LINE__, "send-receive of %zu elements is too large", n);
    for (size_t o = 0, p = 0; o < n; o += chunk, p++) {
        int len = (int)(n - o < chunk ? n - o : chunk);
        AX_CHECK_MPI(MPI_Irecv(recv + o, len, MPI_FLOAT, src, (int)p, c->comm, &r->r[r->n++]));
        AX_CHECK_MPI(MPI_Isend(send + o, len, MPI_FLOAT, dst, (int)p, c->comm, &r->r[r->n++]));
    }
    inflight_add(r);
}

/* A device backend's buffers through a host buffer [send | recv] of the
 * group's: the send copied there now, the receive copied back at completion
 * (ax_wait, ax_test: stage_finish), as staged collectives do. */
static void staged_sendrecv(ax_comm *c, const float *send, int dst, float *recv, int src, size_t n, ax_req *r) {
    int slot = stage_get(c, 2 * n * sizeof(float));
    float *h = c->stage->buf[slot].p;
    ax_be()->copy(h, send, n * sizeof(float));
    mpi_sendrecv(c, h, dst, h + n, src, n, r);
    r->from = h + n;
    r->to = recv;
    r->bytes = n * sizeof(float);
    r->slot = slot;
}

void ax_isendrecv_f32(ax_comm *c, const float *send, int dst, float *recv, int src, size_t n, ax_req *r) {
    r->c = c;
    r->n = 0;
    r->queued = 0;
    r->from = NULL;
    if (dst < 0 || dst >= c->size || src < 0 || src >= c->size)
        ax_fatal(__FILE__, __LINE__, "send-receive between ranks %d and %d of a group of %d", dst, src, c->size);
    if (c->size == 1) { /* to and from itself */
        if (recv != send) self_copy(recv, send, n * sizeof(float));
        return;
    }
    if (n == 0) return;
    c->bytes += (double)sizeof(float) * n;
#ifdef AX_HAVE_CUDA
    if (c->nccl) { /* queued on the device, joined by ax_wait like a collective */
        ax_nccl_sendrecv(c, send, dst, recv, src, n);
        r->queued = 1;
        return;
    }
#endif
    int staged = !ax_be()->host_memory;
    if (staged) ax_backend_sync(); /* as in coll: the wait for the kernels is compute, not blocked time */
    double t = MPI_Wtime();
    if (staged) staged_sendrecv(c, send, dst, recv, src, n, r);
    else mpi_sendrecv(c, send, dst, recv, src, n, r);
    c->seconds += MPI_Wtime() - t;
}

void ax_wait(ax_req *r) {
#ifdef AX_HAVE_CUDA
    if (r->queued) {
        ax_nccl_join(r->c);
        r->queued = 0;
        return;
    }
#endif
    if (!r->n && !r->from) return;
    if (r->from) ax_backend_sync(); /* as in coll: the copy back waits for the queued kernels first */
    double t = MPI_Wtime();
    if (r->n) {
        AX_CHECK_MPI(MPI_Waitall(r->n, r->r, MPI_STATUSES_IGNORE));
        r->n = 0;
        inflight_remove(r);
    }
    if (r->from) stage_finish(r); /* ax_progress may have completed the MPI part already */
    r->c->seconds += MPI_Wtime() - t;
}

int ax_test(ax_req *r) {
#ifdef AX_HAVE_CUDA
    if (r->queued) {
        if (!ax_nccl_done(r->c)) return 0;
        ax_wait(r);
        return 1;
    }
#endif
    int done = 1;
    if (r->n) AX_CHECK_MPI(MPI_Testall(r->n, r->r, &done, MPI_STATUSES_IGNORE));
    if (done && (r->n || r->from)) ax_wait(r); /* complete: the wait only finishes it */
    return done;
}

double ax_comm_seconds(ax_comm *c) {
#ifdef AX_HAVE_CUDA
    if (c->nccl) ax_nccl_seconds(c);
#endif
    return c->seconds;
}

void ax_comm_reset_stats(ax_comm *c) {
    ax_comm_seconds(c); /* the joins timed so far belong to the time before */
    c->seconds = c->bytes = 0;
}

static void reduce_sum(void *c, float *buf, size_t n) { ax_allreduce_f32(c, buf, n); }
static void reduce_max(void *c, float *buf, size_t n) { ax_allreduce_max_f32(c, buf, n); }

/* blocking: under NCCL the kernels queued next see the result */
ax_reducer ax_comm_reducer(ax_comm *c) { return (ax_reducer){reduce_sum, reduce_max, c, c->size == 1}; }
