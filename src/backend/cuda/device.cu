/* The device, its stream and its memory: plain device memory (cudaMalloc,
 * not managed memory, which can hang a GPU asked for more than it has free),
 * allocated once per buffer and zero-filled like the CPU side; the host
 * reaches it through ax_cuda_copy. */
#include "backend/cuda/cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int device = -1;
static cudaStream_t stream;
static int capturing;                /* between ax_cuda_capture_begin and _end */
static unsigned long long mem_epoch; /* counts allocations and frees: a graph's pointers hold while it stands */

/* ---- AXONN_CUDA_PROFILE=1: device time per entry ---------------------------
 * ax_cuda_done records an event on the stream after each entry's launches,
 * and the time from the previous event to this one is charged to the entry's
 * call site (function and line). That span is whatever the stream did in
 * between: time the device sat idle waiting for the host to queue the entry
 * (host gaps: the host's own work, MPI, a copy's wait) and waits for NCCL
 * streams count to the next entry, not to the one before; so does work queued
 * outside the entries. Events sit in a ring created on first use; a batch is
 * resolved once it is PROF_BATCH events behind the newest (its last event is
 * then normally complete: no sync per kernel, no allocation after the first
 * use). At exit a table sorted by total time goes to stderr. */
#define PROF_RING  4096
#define PROF_BATCH 1024 /* resolved when 2 batches wait: at most 2049 events of the ring in use */
#define PROF_SITES 256

typedef struct {
    const char *file, *func;
    int line;
    long long calls;
    double ms;
} prof_site;

static struct {
    int on;    /* -1: environment not read yet */
    int ready; /* the ring's events exist on the current device */
    cudaEvent_t ev[PROF_RING];
    short site[PROF_RING];
    long long head, done, first; /* events recorded, resolved; first: the ring's oldest, with no predecessor */
    prof_site sites[PROF_SITES];
    int nsites;
} prof = {-1};

static int prof_on(void) {
    if (prof.on < 0) prof.on = getenv("AXONN_CUDA_PROFILE") && atoi(getenv("AXONN_CUDA_PROFILE")) > 0;
    return prof.on;
}

/* charges events [done, upto) to their sites; at exit errors are returned, not fatal */
static cudaError_t prof_resolve(long long upto, int at_exit) {
    if (upto <= prof.done) return cudaSuccess;
    cudaError_t e = cudaEventSynchronize(prof.ev[(upto - 1) % PROF_RING]);
    if (e != cudaSuccess && !at_exit) ax_fatal(__FILE__, __LINE__, "CUDA profile: %s", cudaGetErrorString(e));
    if (e != cudaSuccess) return e;
    for (long long k = prof.done; k < upto; k++) {
        prof_site *st = &prof.sites[prof.site[k % PROF_RING]];
        float ms = 0;
        st->calls++;
        if (k > prof.first &&
            cudaEventElapsedTime(&ms, prof.ev[(k - 1) % PROF_RING], prof.ev[k % PROF_RING]) == cudaSuccess)
            st->ms += ms;
    }
    prof.done = upto;
    return cudaSuccess;
}

static void prof_report(void) {
    cudaError_t e = prof.ready ? prof_resolve(prof.head, 1) : cudaSuccess;
    int idx[PROF_SITES], n = prof.nsites;
    double total = 0;
    long long calls = 0;
    for (int i = 0; i < n; i++) {
        idx[i] = i;
        total += prof.sites[i].ms;
        calls += prof.sites[i].calls;
    }
    for (int i = 1; i < n; i++) /* insertion sort by total time, largest first */
        for (int j = i; j > 0 && prof.sites[idx[j]].ms > prof.sites[idx[j - 1]].ms; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len); /* one write: ranks' tables do not interleave */
    if (!f) return;
    fprintf(f,
            "CUDA profile (AXONN_CUDA_PROFILE=1), device %d, pid %d: stream time from one entry's end to the next's, "
            "host gaps in the next entry%s%s\n",
            device, (int)getpid(), e != cudaSuccess ? "; incomplete: " : "",
            e != cudaSuccess ? cudaGetErrorString(e) : "");
    fprintf(f, "%-48s %10s %12s %10s %7s\n", "entry", "calls", "total ms", "mean us", "share");
    for (int i = 0; i < n; i++) {
        const prof_site *st = &prof.sites[idx[i]];
        const char *base = strrchr(st->file, '/');
        char name[160];
        snprintf(name, sizeof name, "%s (%s:%d)", st->func, base ? base + 1 : st->file, st->line);
        fprintf(f, "%-48s %10lld %12.3f %10.2f %6.1f%%\n", name, st->calls, st->ms,
                st->calls ? 1e3 * st->ms / st->calls : 0.0, total > 0 ? 100.0 * st->ms / total : 0.0);
    }
    fprintf(f, "%-48s %10lld %12.3f\n", "all", calls, total);
    fclose(f);
    fwrite(buf, 1, len, stderr);
    free(buf);
}

static int prof_site_of(const char *file, int line, const char *func) {
    static int last;
    if (last < prof.nsites && prof.sites[last].line == line && prof.sites[last].file == file) return last;
    for (int i = 0; i < prof.nsites; i++) /* a call site's __FILE__ is one string: its address is its name */
        if (prof.sites[i].line == line && prof.sites[i].file == file) return last = i;
    if (prof.nsites == PROF_SITES) { /* full: the last row takes the rest */
        prof_site *st = &prof.sites[PROF_SITES - 1];
        st->file = "?";
        st->func = "(other entries)";
        st->line = 0;
        return PROF_SITES - 1;
    }
    prof_site *st = &prof.sites[prof.nsites];
    st->file = file;
    st->func = func;
    st->line = line;
    return last = prof.nsites++;
}

static void prof_record(const char *file, int line, const char *func) {
    static int registered;
    if (!prof.ready) {
        for (int i = 0; i < PROF_RING; i++) AX_CHECK_CUDA(cudaEventCreate(&prof.ev[i]));
        prof.ready = 1;
        prof.first = prof.head;
        /* after the CUDA runtime's own exit handler was registered (the
         * stream exists), so the table is printed before the runtime goes */
        if (!registered) {
            atexit(prof_report);
            registered = 1;
        }
    }
    int s = prof_site_of(file, line, func);
    if (prof.head - prof.done >= 2 * PROF_BATCH) prof_resolve(prof.done + PROF_BATCH, 0);
    AX_CHECK_CUDA(cudaEventRecord(prof.ev[prof.head % PROF_RING], stream));
    prof.site[prof.head % PROF_RING] = (short)s;
    prof.head++;
}

/* the open device's figures the attention selection reads (cuda.h) */
static ax_cuda_caps caps = {0, 0, AX_ATTN_ASK_DEFAULT, 0};

/* The device is chosen once, before anything touches a device: a context
 * made on another GPU first (a stray one on GPU 0 per rank) would cost its
 * memory there, and fails outright where GPUs are in exclusive-process mode.
 * AXONN_CUDA_ATTN is read here, so that a bad value is one line at start-up. */

int ax_cuda_open(int local_rank) {
    const char *attn = getenv("AXONN_CUDA_ATTN");
    if (ax_attn_ask_parse(attn) < 0)
        return ax_err_set("AXONN_CUDA_ATTN=%s: expected %s (unset: mm)", attn, AX_ATTN_ASK_NAMES);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError(); /* clear the sticky "no device" so later queries start clean */
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        return ax_err_set("--backend cuda: no usable CUDA device (%s%s%s)",
                          e != cudaSuccess ? cudaGetErrorString(e) : "none found", vis ? "; CUDA_VISIBLE_DEVICES=" : "",
                          vis ? vis : "");
    }
    if (device == local_rank % n) return 0;
    if (device >= 0) return ax_err_set("--backend cuda: opened again for another device");
    device = local_rank % n;
    AX_CHECK_CUDA(cudaSetDevice(device));
    AX_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaDeviceProp p;
    AX_CHECK_CUDA(cudaGetDeviceProperties(&p, device));
    caps.sm = 10 * p.major + p.minor;
    caps.smem_optin = p.sharedMemPerBlockOptin;
    caps.attn_ask = ax_attn_ask_parse(attn);
    caps.logs = local_rank == 0;
    return 0;
}

/* every entry runs on the device ax_cuda_open chose */
static void need_device(void) {
    if (device < 0) ax_fatal(__FILE__, __LINE__, "the CUDA backend was used before ax_backend_use opened it");
}

const ax_cuda_caps *ax_cuda_caps_get(void) {
    need_device();
    return &caps;
}

void ax_cuda_attention_ask(int ask) { caps.attn_ask = ask; }

cudaStream_t ax_cuda_stream(void) {
    need_device();
    return stream;
}

void ax_cuda_device_id(char *id) {
    need_device();
    cudaDeviceProp p;
    AX_CHECK_CUDA(cudaGetDeviceProperties(&p, device));
    int k = snprintf(id, AX_DEVICE_ID_LEN, "GPU-");
    for (int i = 0; i < 16 && k < AX_DEVICE_ID_LEN - 2; i++)
        k += snprintf(id + k, AX_DEVICE_ID_LEN - k, "%02x", (unsigned char)p.uuid.bytes[i]);
}

void *ax_cuda_host_alloc(size_t bytes) {
    void *p;
    AX_CHECK_CUDA(cudaMallocHost(&p, bytes ? bytes : 1));
    return p;
}

void ax_cuda_host_free(void *p) {
    if (p) AX_CHECK_CUDA(cudaFreeHost(p));
}

size_t ax_cuda_mem_free(void) {
    size_t fr = 0, tot = 0;
    need_device();
    AX_CHECK_CUDA(cudaMemGetInfo(&fr, &tot));
    return fr;
}

const char *ax_cuda_device_name(void) {
    static char s[320];
    if (device < 0) return "no CUDA device opened";
    cudaDeviceProp p;
    AX_CHECK_CUDA(cudaGetDeviceProperties(&p, device));
    snprintf(s, sizeof s, "%s (sm_%d%d, %.0f GiB)", p.name, p.major, p.minor, p.totalGlobalMem / 1073741824.0);
    return s;
}

/* Kernels stay queued: the host goes on to queue the next ones, and meets
 * the device again only at copy (or an NCCL join). A kernel's fault then
 * surfaces at that later call; AXONN_CUDA_SYNC=1 drains the stream after
 * every entry so that the error names the kernel's file and line. */
void ax_cuda_done(const char *file, int line, const char *func) {
    static int sync = -1;
    if (sync < 0) sync = getenv("AXONN_CUDA_SYNC") && atoi(getenv("AXONN_CUDA_SYNC")) > 0;
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && sync && !capturing) e = cudaStreamSynchronize(ax_cuda_stream());
    if (e != cudaSuccess) ax_fatal(file, line, "CUDA kernel: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    if (prof_on() && !capturing) prof_record(file, line, func); /* a replay is one entry */
}

/* a capture must find the memory it needs already there (the step it
 * records ran once before); an allocation inside one is a bug */
static void no_capture(const char *what, size_t bytes) {
    if (capturing)
        ax_fatal(__FILE__, __LINE__, "CUDA graph: %s (%zu bytes) while the step was being captured", what, bytes);
    mem_epoch++;
}

void *ax_cuda_alloc(size_t bytes) {
    void *p;
    need_device();
    no_capture("cudaMalloc", bytes);
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        ax_fatal(__FILE__, __LINE__, "cudaMalloc(%zu bytes): %s (%zu of %zu bytes free)", bytes, cudaGetErrorString(e),
                 fr, tot);
    }
    AX_CHECK_CUDA(cudaMemsetAsync(p, 0, bytes ? bytes : 1, stream));
    AX_CHECK_CUDA(cudaStreamSynchronize(stream));
    return p;
}

void ax_cuda_free(void *p) {
    if (!p) return;
    no_capture("cudaFree", 0);
    AX_CHECK_CUDA(cudaStreamSynchronize(ax_cuda_stream())); /* queued kernels may still read it */
    AX_CHECK_CUDA(cudaFree(p));
}

void ax_cuda_zero(void *p, size_t bytes) {
    if (!bytes) return;
    AX_CHECK_CUDA(cudaMemsetAsync(p, 0, bytes, ax_cuda_stream()));
    AX_CUDA_DONE(); /* a row of its own in the profile */
}

void ax_cuda_copy(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    AX_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ax_cuda_stream()));
    AX_CHECK_CUDA(cudaStreamSynchronize(ax_cuda_stream()));
    if (prof_on()) prof_record(__FILE__, __LINE__, __func__); /* a row for the copies (and idle time before them) */
}

/* device to device on the compute stream, behind the kernels that wrote src; no host wait */
void ax_cuda_copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows) {
    if (!width || !rows) return;
    AX_CHECK_CUDA(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, ax_cuda_stream()));
    AX_CUDA_DONE();
}

void ax_cuda_copy_async(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    AX_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ax_cuda_stream()));
    AX_CUDA_DONE();
}

void ax_cuda_sync(void) { AX_CHECK_CUDA(cudaStreamSynchronize(ax_cuda_stream())); }

/* ---- CUDA graphs (backend.h: capture_begin .. graph_free) ----
 * Global capture mode: a wait for the device from any thread of the
 * process during the capture fails (naming the call, AX_CHECK_CUDA) rather
 * than being left out of the graph. */
typedef struct {
    cudaGraphExec_t exec;
    unsigned long long epoch; /* mem_epoch at the capture */
} cuda_graph;

void ax_cuda_capture_begin(void) {
    AX_CHECK_CUDA(cudaStreamBeginCapture(ax_cuda_stream(), cudaStreamCaptureModeGlobal));
    capturing = 1;
}

void *ax_cuda_capture_end(void) {
    cudaGraph_t g;
    cudaError_t e = cudaStreamEndCapture(ax_cuda_stream(), &g);
    capturing = 0;
    if (e != cudaSuccess)
        ax_fatal(__FILE__, __LINE__, "CUDA graph: the capture failed: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
    cuda_graph *h = (cuda_graph *)ax_malloc(sizeof *h);
    AX_CHECK_CUDA(cudaGraphInstantiateWithFlags(&h->exec, g, 0));
    AX_CHECK_CUDA(cudaGraphDestroy(g));
    h->epoch = mem_epoch;
    return h;
}

int ax_cuda_capturing(void) { return capturing; }

int ax_cuda_replay(void *graph) {
    cuda_graph *h = (cuda_graph *)graph;
    if (h->epoch != mem_epoch) return -1;
    AX_CHECK_CUDA(cudaGraphLaunch(h->exec, ax_cuda_stream()));
    AX_CUDA_DONE();
    return 0;
}

void ax_cuda_graph_free(void *graph) {
    cuda_graph *h = (cuda_graph *)graph;
    if (!h) return;
    AX_CHECK_CUDA(cudaStreamSynchronize(ax_cuda_stream())); /* a replay may still run */
    AX_CHECK_CUDA(cudaGraphExecDestroy(h->exec));
    free(h);
}

void *ax_cuda_tmp(int slot, size_t bytes) {
    static void *buf[AX_CUDA_TMP_SLOTS];
    static size_t cap[AX_CUDA_TMP_SLOTS];
    if (bytes > cap[slot]) {
        if (buf[slot]) ax_cuda_free(buf[slot]);
        no_capture("a scratch buffer grown", bytes);
        AX_CHECK_CUDA(cudaMalloc(&buf[slot], bytes));
        cap[slot] = bytes;
    }
    return buf[slot];
}

/* one host thread drives the device; the kernels' parallelism is the GPU's */
void ax_cuda_set_threads(int n) { (void)n; }
int ax_cuda_threads(void) { return 1; }
