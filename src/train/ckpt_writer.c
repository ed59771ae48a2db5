#define _GNU_SOURCE 1
/* Checkpoints written by every rank in parallel, optionally in the background
 * (docs/reliability.md, "Checkpoints at scale").
 *
 * A save has two phases. Begin (collective, at a step boundary): rank 0
 * creates <dir>.tmp with config.json, state.json and the two safetensors
 * files, each holding its header; every rank opens them. Write: every rank
 * copies its share of the state (ax_gpt_share) into host buffers in file
 * order, pwrites its segments, checksums them from those buffers (CRC-64,
 * each segment's share of its checksum range: util/crc.h) and fsyncs.
 * Commit (collective): the ranks' checksum shares meet at rank 0 by an XOR
 * reduction; rank 0 writes the manifest last and renames the directory into
 * place. Nothing is read back: each rank checksums the bytes it wrote, and
 * a load verifies what reached the disk. Between phases the ranks agree
 * (ax_agree): a failure anywhere stops the save on every rank, uncommitted.
 * With async the write phase runs in a thread that does memory copies,
 * checksums and file I/O only (no MPI: the library is not initialised for
 * MPI_THREAD_MULTIPLE; a failure there is a message the main thread
 * reports); the step loop polls at step boundaries, one MPI_Allreduce while
 * a save is in flight. On a backend of host memory the thread stages from
 * the live state while the next step's forward and backward run, which do
 * not change it; the optimizer waits for the stage before its update
 * (ax_ckpt_fence). A device backend copies the state to host mirrors in
 * begin, and the thread stages from them. */
#include "train/checkpoint.h"
#include "train/ckpt_impl.h"
#include "backend/backend.h"
#include "util/err.h"
#include "util/crc.h"
#include "util/fileio.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { F_MODEL, F_OPTIM, NF };
enum { IDLE, WRITING };
static const char *const st_name[NF] = {AX_CKPT_MODEL, AX_CKPT_OPTIM};

struct ax_ckpt_writer {
    ax_gpt *m;
    ax_ckpt_opts o;
    ax_gpt_share share;  /* of the parameters, and of AdamW's state without ZeRO-1 */
    ax_gpt_share oshare; /* ZeRO-1: of AdamW's state (the rank's share of it) */
    float *stage[3];     /* params, AdamW m and v: this rank's share in file order */
    float *mirror[3];    /* device backends: the host copies of the flat vectors */
    const float *src[3]; /* what the stage is filled from: the state, or its mirrors */
    /* src no longer read (under mu): the state may change */
    int staged, released;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned char *head[NF];
    size_t head_len[NF]; /* = where the data section starts */
    int64_t bytes[NF], nchunk[NF];
    uint64_t *crc;      /* raw CRC-64 of this rank's bytes in each checksum range, zeros elsewhere (both files) */
    struct crc_run {    /* file f's range in progress: its raw CRC of [range start, end) */
        int64_t k, end; /* k < 0: none */
        uint64_t acc;
        int64_t gap;     /* the last gap between pieces, and its shift operator: */
        uint64_t gap_op; /* a rank's gaps repeat (the other ranks' runs of a tensor) */
    } run[NF];
    /* the save in flight */
    int phase, fd[NF], thread_live, background;
    char dir[4096], tmp[4200], last[4096];
    pthread_t th;
    atomic_int done;
    int failed;
    char err[1024];
    double t0, blocking, last_blocking, last_total;
    double phase_s[2], last_phase_ms[2]; /* writes, checksums: this rank's seconds; the slowest rank's ms */
};

/* The layout of both files on every rank (declared as the root writer does,
 * so the headers are its bytes); rank 0 keeps the headers to write. */
static int layout(ax_ckpt_writer *w) {
    for (int f = 0; f < NF; f++) {
        ax_st_writer sw;
        ax_st_writer_init(&sw, NULL);
        ax_st_writer_meta(&sw, "format", "pt");
        for (int k = 0; k < 2 && ax_ckpt_prefix[f][k]; k++)
            ax_gpt_declare(w->m, &sw, ax_ckpt_prefix[f][k], AX_ST_F32, 0, w->m->np);
        int rc = ax_st_writer_header(&sw, st_name[f], &w->head[f], &w->head_len[f]);
        ax_st_writer_abort(&sw);
        AX_TRY(rc);
        w->bytes[f] = (int64_t)w->head_len[f] + (f == F_OPTIM ? 2 : 1) * w->share.data_bytes;
        w->nchunk[f] = (w->bytes[f] + w->o.chunk - 1) / w->o.chunk;
    }
    return 0;
}

/* the share stage k (params, AdamW m, v) is filled by, and the length of
 * the flat vector it is filled from */
static const ax_gpt_share *share_of(const ax_ckpt_writer *w, int k) { return k && w->m->zero ? &w->oshare : &w->share; }
static int64_t flat_numel(const ax_ckpt_writer *w, int k) { return k ? ax_gpt_opt_numel(w->m) : w->m->n_local; }

int ax_ckpt_writer_init(ax_ckpt_writer **out, ax_gpt *m, const ax_ckpt_opts *o) {
    ax_ckpt_writer *w = ax_calloc(1, sizeof *w);
    *out = w;
    w->m = m;
    w->o = *o;
    if (w->o.chunk <= 0) w->o.chunk = AX_CKPT_CHUNK;
    w->fd[0] = w->fd[1] = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (o->root_only) return 0;
    AX_TRY(ax_gpt_share_init(m, &w->share, AX_SHARE_PARAMS));
    if (m->zero) AX_TRY(ax_gpt_share_init(m, &w->oshare, AX_SHARE_OPTIM));
    AX_TRY(ax_agree(m->g->world, layout(w)));
    /* touched now, not in the step loop: a first touch costs a page fault per page */
    for (int k = 0; k < 3; k++) {
        size_t b = (size_t)(share_of(w, k)->owned ? share_of(w, k)->owned : 1) * sizeof(float);
        memset(w->stage[k] = ax_malloc(b), 0, b);
    }
    for (int k = 0; k < 3 && !ax_be()->host_memory; k++) { /* page-locked where the backend has it: full-speed copies */
        size_t b = (size_t)flat_numel(w, k) * sizeof(float);
        w->mirror[k] = ax_be()->host_alloc ? ax_be()->host_alloc(b) : ax_malloc(b);
        memset(w->mirror[k], 0, b);
    }
    w->crc = ax_calloc((size_t)(w->nchunk[0] + w->nchunk[1]), sizeof(uint64_t));
    return 0;
}

/* ---------------------------------------------------------------- thread-side: file I/O only */

static int fail(ax_ckpt_writer *w, const char *path, const char *what) {
    snprintf(w->err, sizeof w->err, "%s: %s: %s", path, what, strerror(errno));
    return -1;
}

static int pwrite_all(int fd, const void *p, int64_t n, int64_t off) {
    for (int64_t done = 0; done < n;) {
        ssize_t r = pwrite(fd, (const char *)p + done, (size_t)(n - done), (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = EIO; /* nothing written and no error code: errno would be a stale one */
        if (r <= 0) return -1;
        done += r;
    }
    return 0;
}

static int64_t range_end(const ax_ckpt_writer *w, int f, int64_t k) {
    return (k + 1) * w->o.chunk < w->bytes[f] ? (k + 1) * w->o.chunk : w->bytes[f];
}

/* file f's range in progress finished: its raw CRC shifted past the range's
 * end, into w->crc */
static void crc_flush(ax_ckpt_writer *w, int f) {
    struct crc_run *u = &w->run[f];
    if (u->k >= 0)
        w->crc[(f == F_OPTIM ? w->nchunk[F_MODEL] : 0) + u->k] ^=
            ax_crc64_shift(u->acc, range_end(w, f, u->k) - u->end);
    u->k = -1;
}

/* n bytes at p, to stand at byte off of file f: their share of the raw
 * CRC-64 of each checksum range they fall in (as if every other byte of the
 * range were zero), XORed into w->crc; the ranks' shares XOR to the range's
 * raw CRC (util/crc.h). The range in progress is extended over the gap
 * since the last piece, then by the bytes: one shift per gap, by an operator
 * kept while the gaps repeat (a rank's pieces come in file order). Any order
 * gives the same sums: runs over one range add up by XOR too. */
static void crc_add(ax_ckpt_writer *w, int f, int64_t off, const unsigned char *p, int64_t n) {
    struct crc_run *u = &w->run[f];
    while (n > 0) {
        int64_t k = off / w->o.chunk, end = range_end(w, f, k), len = end - off < n ? end - off : n;
        if (k != u->k || off < u->end) { /* a new range, or a piece out of order: a run of its own */
            crc_flush(w, f);
            *u = (struct crc_run){.k = k, .end = k * w->o.chunk, .gap = -1};
        }
        if (off > u->end && u->acc) { /* zeros after a zero remainder leave it zero */
            if (off - u->end != u->gap) u->gap = off - u->end, u->gap_op = ax_crc64_shift_op(u->gap);
            u->acc = ax_crc64_apply(u->gap_op, u->acc);
        }
        u->acc = ax_crc64_raw(u->acc, p, len);
        u->end = off + len;
        off += len, p += len, n -= len;
    }
}

static double now(void) { /* not MPI_Wtime: MPI is not called from this thread */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the stage's segments into file f at base (bytes from the data section),
 * and their checksum shares */
static int write_stage(ax_ckpt_writer *w, int f, const ax_gpt_share *sh, const float *stage, int64_t base) {
    const unsigned char *p = (const unsigned char *)stage;
    for (int k = 0; k < sh->nseg; k++) {
        const ax_gpt_seg *s = &sh->seg[k];
        int64_t off = (int64_t)w->head_len[f] + base + s->off;
        double t = now();
        if (pwrite_all(w->fd[f], p, s->n, off) != 0) return -1;
        double t1 = now();
        crc_add(w, f, off, p, s->n);
        w->phase_s[0] += t1 - t;
        w->phase_s[1] += now() - t1;
        p += s->n;
    }
    return 0;
}

static int write_share(ax_ckpt_writer *w) {
    char path[4400];
    int rc = 0;
    for (int f = 0; f < NF; f++) {
        snprintf(path, sizeof path, "%s/%s", w->tmp, st_name[f]);
        if (rc == 0 && write_stage(w, f, share_of(w, f), w->stage[f], 0))
            rc = fail(w, path, "cannot write this rank's share");
        if (rc == 0 && f == F_OPTIM && write_stage(w, f, share_of(w, 2), w->stage[2], w->share.data_bytes))
            rc = fail(w, path, "cannot write this rank's share");
        crc_flush(w, f);
        double t = now();
        if (rc == 0 && fsync(w->fd[f]) != 0) rc = fail(w, path, "fsync failed");
        w->phase_s[0] += now() - t;
        close(w->fd[f]);
        w->fd[f] = -1;
    }
    return rc;
}

static void release(ax_ckpt_writer *w) {
    pthread_mutex_lock(&w->mu);
    w->released = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* the share of each flat vector into its stage buffer, in file order */
static void stage_state(ax_ckpt_writer *w, ax_fill_mode mode) {
    for (int k = 0; k < 3; k++) ax_gpt_share_fill(share_of(w, k), w->src[k], w->stage[k], mode);
    w->staged = 1;
    release(w);
}

/* The thread's writes and checksums run only on cores training leaves idle
 * (SCHED_IDLE; where that is refused, the lowest nice): nothing waits for
 * them but the commit, while a core they took would hold up a whole
 * parallel region of the step. The copy before them keeps its priority: the
 * optimizer waits for it. */
static void yield_to_training(void) {
    struct sched_param sp = {0};
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0) return;
    int unused = nice(19); /* best effort: refused too, the writes share the cores */
    (void)unused;
}

static void *write_main(void *arg) {
    ax_ckpt_writer *w = arg;
    double t = now();
    if (!w->staged) stage_state(w, AX_FILL_SERIAL); /* beside training: one core */
    w->phase_s[0] += now() - t;                     /* the log's "write": copy, writes and fsync */
    if (w->background) yield_to_training();
    w->failed = write_share(w) != 0;
    atomic_store(&w->done, 1);
    return NULL;
}

/* ---------------------------------------------------------------- collective side */

/* Rank 0: the directory, the small files, and both safetensors files holding
 * their headers (the ranks' writes give them their length: every byte of the
 * data belongs to some rank). */
static int create_files(ax_ckpt_writer *w, const ax_ckpt_state *st) {
    char path[4400];
    ax_ckpt_remove(w->tmp);
    AX_TRY(ax_mkdir_p(w->tmp));
    snprintf(path, sizeof path, "%s/config.json", w->tmp);
    AX_TRY(ax_gpt_config_write(&w->m->cfg, path));
    snprintf(path, sizeof path, "%s/state.json", w->tmp);
    AX_TRY(ax_ckpt_write_state(path, st));
    for (int f = 0; f < NF; f++) {
        snprintf(path, sizeof path, "%s/%s", w->tmp, st_name[f]);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = 0;
        if (fd < 0) return AX_ERR("%s: cannot create: %s", path, strerror(errno));
        if (pwrite_all(fd, w->head[f], (int64_t)w->head_len[f], 0) != 0)
            rc = AX_ERR("%s: cannot write the header: %s", path, strerror(errno));
        close(fd);
        AX_TRY(rc);
    }
    return 0;
}

static int open_files(ax_ckpt_writer *w) {
    char path[4400];
    for (int f = 0; f < NF; f++) {
        snprintf(path, sizeof path, "%s/%s", w->tmp, st_name[f]);
        if ((w->fd[f] = open(path, O_WRONLY | O_CLOEXEC)) < 0)
            return AX_ERR("%s: cannot open to write this rank's share: %s (every rank writes its own slices: the "
                          "checkpoint directory must be on a file system all ranks share)",
                          path, strerror(errno));
    }
    return 0;
}

/* What the stage is filled from: the state itself on a backend of host
 * memory (released once staged), else its copies in the host mirrors (the
 * state is released at once). */
static void snapshot(ax_ckpt_writer *w, const ax_adamw *o) {
    const float *flat[3] = {w->m->params, o->m, o->v};
    w->staged = w->released = 0;
    for (int k = 0; k < 3; k++) {
        w->src[k] = flat[k];
        if (!w->mirror[k]) continue;
        ax_be()->copy(w->mirror[k], flat[k], (size_t)flat_numel(w, k) * sizeof(float));
        w->src[k] = w->mirror[k];
    }
    if (w->mirror[0]) release(w);
}

void ax_ckpt_fence(ax_ckpt_writer *w) {
    if (!w || w->phase == IDLE) return;
    double t = MPI_Wtime();
    pthread_mutex_lock(&w->mu);
    while (!w->released) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    w->blocking += (MPI_Wtime() - t) * 1e3; /* training waited for the stage */
}

/* After any phase: the same verdict on every rank; a failed save is removed. */
static int settle(ax_ckpt_writer *w, int rc) {
    if (w->thread_live) {
        pthread_join(w->th, NULL);
        w->thread_live = 0;
        if (w->failed && rc == 0) rc = ax_err_set("%s", w->err);
    }
    rc = ax_agree(w->m->g->world, rc);
    if (rc) {
        for (int f = 0; f < NF; f++)
            if (w->fd[f] >= 0) close(w->fd[f]), w->fd[f] = -1;
        if (w->m->g->rank == 0) ax_ckpt_remove(w->tmp);
        w->phase = IDLE;
    }
    return rc;
}

/* The checksum shares meet at rank 0 (XOR), which finishes each range's
 * CRC, writes the manifest and puts the directory in place. */
static int commit(ax_ckpt_writer *w) {
    ax_grid *g = w->m->g;
    int n = (int)(w->nchunk[0] + w->nchunk[1]), rc = 0;
    AX_CHECK_MPI(MPI_Reduce(g->rank ? w->crc : MPI_IN_PLACE, w->crc, n, MPI_UINT64_T, MPI_BXOR, 0, g->world));
    double ph[2] = {w->phase_s[0] * 1e3, w->phase_s[1] * 1e3};
    AX_CHECK_MPI(MPI_Allreduce(ph, w->last_phase_ms, 2, MPI_DOUBLE, MPI_MAX, g->world));
    if (g->rank == 0) {
        ax_ckpt_ranges r = {.chunk = w->o.chunk, .hash = w->crc};
        for (int f = 0, k0 = 0; f < NF; k0 += (int)w->nchunk[f], f++) {
            r.bytes[f] = w->bytes[f];
            r.nchunk[f] = w->nchunk[f];
            r.first[f] = k0;
            for (int64_t k = 0; k < w->nchunk[f]; k++) {
                int64_t end = (k + 1) * w->o.chunk < w->bytes[f] ? (k + 1) * w->o.chunk : w->bytes[f];
                w->crc[k0 + k] = ax_crc64_finish(w->crc[k0 + k], end - k * w->o.chunk);
            }
        }
        rc = ax_fsync_dir(w->tmp);
        if (rc == 0) rc = ax_ckpt_write_manifest(w->tmp, &r);
        if (rc == 0) rc = ax_ckpt_install(w->tmp, w->dir);
    }
    AX_TRY(settle(w, rc)); /* removes tmp on failure */
    w->phase = IDLE;
    snprintf(w->last, sizeof w->last, "%s", w->dir);
    w->last_blocking = w->blocking;
    w->last_total = (MPI_Wtime() - w->t0) * 1e3;
    return 1;
}

/* runs the write phase in the thread, or here */
static int run_phase(ax_ckpt_writer *w, int background) {
    atomic_store(&w->done, 0);
    w->failed = 0;
    w->background = background;
    if (!background) {
        write_main(w);
        return w->failed ? ax_err_set("%s", w->err) : 0;
    }
    if (pthread_create(&w->th, NULL, write_main, w) != 0) return AX_ERR("checkpoint: cannot start a thread");
    w->thread_live = 1;
    return 0;
}

/* the write phase into the thread; a failure to start it is agreed on */
static int start_background(ax_ckpt_writer *w) {
    int rc = ax_agree(w->m->g->world, run_phase(w, 1));
    return rc ? settle(w, rc) : 0;
}

int ax_ckpt_begin(ax_ckpt_writer *w, const char *dir, const ax_adamw *o, const ax_ckpt_state *st) {
    ax_gpt *m = w->m;
    w->t0 = MPI_Wtime();
    if (w->o.root_only) {
        AX_TRY(ax_ckpt_save_root(dir, m, o, st));
        snprintf(w->last, sizeof w->last, "%s", dir);
        w->last_blocking = w->last_total = (MPI_Wtime() - w->t0) * 1e3;
        return 0;
    }
    if (w->phase != IDLE) return AX_ERR("checkpoint %s: begun while %s is being written", dir, w->dir);
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", dir);
    w->phase = WRITING;
    w->phase_s[0] = w->phase_s[1] = 0;
    memset(w->crc, 0, (size_t)(w->nchunk[0] + w->nchunk[1]) * sizeof *w->crc);
    for (int f = 0; f < NF; f++) w->run[f].k = -1;
    AX_TRY(settle(w, m->g->rank == 0 ? create_files(w, st) : 0));
    for (int f = 0; f < NF && m->g->rank == 0; f++) crc_add(w, f, 0, w->head[f], (int64_t)w->head_len[f]);
    AX_TRY(settle(w, open_files(w)));
    snapshot(w, o);
    if (!w->o.async) stage_state(w, AX_FILL_PARALLEL); /* the cores are this thread's */
    w->blocking = (MPI_Wtime() - w->t0) * 1e3;
    if (w->o.async) return start_background(w);
    int rc = ax_ckpt_poll(w, 1);
    w->last_blocking = w->last_total;
    return rc < 0 ? -1 : 0;
}

int ax_ckpt_poll(ax_ckpt_writer *w, int wait) {
    if (w->phase == IDLE) return 0;
    if (w->thread_live && !wait) {
        int d = atomic_load(&w->done);
        AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_INT, MPI_MIN, w->m->g->world));
        if (!d) return 0;
    }
    AX_TRY(settle(w, w->thread_live ? 0 : run_phase(w, 0))); /* written on every rank */
    return commit(w);
}

int ax_ckpt_pending(const ax_ckpt_writer *w) { return w->phase != IDLE; }

const char *ax_ckpt_last(const ax_ckpt_writer *w, double *blocking_ms, double *total_ms, double phase_ms[2]) {
    *blocking_ms = w->last_blocking;
    *total_ms = w->last_total;
    phase_ms[0] = w->last_phase_ms[0];
    phase_ms[1] = w->last_phase_ms[1];
    return w->last;
}

void ax_ckpt_writer_free(ax_ckpt_writer *w) {
    if (!w) return;
    if (w->thread_live) pthread_join(w->th, NULL);
    for (int f = 0; f < NF; f++) {
        if (w->fd[f] >= 0) close(w->fd[f]);
        free(w->head[f]);
    }
    for (int k = 0; k < 3; k++) {
        free(w->stage[k]);
        if (w->mirror[k] && ax_be()->host_free) ax_be()->host_free(w->mirror[k]);
        else free(w->mirror[k]);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->crc);
    ax_gpt_share_free(&w->share);
    ax_gpt_share_free(&w->oshare);
    free(w);
}

int ax_ckpt_save(const char *dir, ax_gpt *m, const ax_adamw *o, const ax_ckpt_state *st) {
    ax_ckpt_writer *w;
    int rc = ax_ckpt_writer_init(&w, m, &(ax_ckpt_opts){0});
    if (rc == 0) rc = ax_ckpt_begin(w, dir, o, st);
    ax_ckpt_writer_free(w);
    return rc;
}
