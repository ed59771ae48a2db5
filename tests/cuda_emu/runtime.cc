/* The emulated CUDA runtime and cuBLASLt (include/cuda_runtime.h,
 * include/cublasLt.h): devices of compute capability 9.0 with the H100's
 * 227 KiB of opt-in shared memory, so that the backend's selections take the
 * paths they take on the GPUs it is run on. One device unless EMU_GPUS=N:
 * N, told apart by their UUIDs, so that ranks of a node pick distinct ones
 * (and their groups NCCL, which nccl_emu.c stands in for). */
#include "cublasLt.h"
#include "backend/kmath.h"
#include <map>
#include <time.h>
#include <vector>

static int gpus() {
    const char *e = getenv("EMU_GPUS");
    int n = e ? atoi(e) : 1;
    return n >= 1 && n <= 64 ? n : 1;
}
cudaError_t cudaGetDeviceCount(int *n) {
    *n = gpus();
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d >= 0 && d < gpus() ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "emulated CUDA device");
    memcpy(p->uuid.bytes, "axonn-cuda-emu..", 16);
    p->uuid.bytes[0] = (char)('a' + d); /* distinct in the short id the devices line prints */
    p->totalGlobalMem = (size_t)16 << 30;
    p->sharedMemPerBlockOptin = EMU_SMEM_OPTIN;
    p->major = 9;
    p->minor = 0;
    return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
static const struct {
    cudaError_t e;
    const char *name, *text;
} errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined",
     "capture sequence contains a fork that was not joined to the primary stream"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
};
const char *cudaGetErrorString(cudaError_t e) {
    for (auto &x : errors)
        if (x.e == e) return x.text;
    return "emulated error";
}
const char *cudaGetErrorName(cudaError_t e) {
    for (auto &x : errors)
        if (x.e == e) return x.name;
    return "cudaErrorEmulated";
}

/* ---- streams, events and graphs ----
 * Work runs as it is queued (emu_enqueue), so an event is complete once
 * recorded, and holds the host's clock then. A capture (global mode) keeps
 * the work of the streams in it, to run at each cudaGraphLaunch: the stream
 * it began on, and each stream that waits for an event recorded in it (a
 * fork). As CUDA's, it fails at its end unless every other stream of it was
 * waited for after its last work there (joined); a stream of it cannot wait
 * for an event recorded outside it (isolation); an event recorded in it
 * cannot be waited for, queried or timed once it has ended (the event holds
 * no time: it is not recorded at the launches); and a wait for the device,
 * an allocation or a free while it is open fails, and spoils it. */
struct CUstream_st {
    bool captured;             /* in the open capture */
    unsigned long long ops;    /* its work kept by the capture */
    unsigned long long joined; /* of which another stream of the capture waited for */
};
struct CUevent_st {
    double t; /* the host's clock at its last record outside a capture */
    bool recorded;
    const void *capture;    /* the capture it was last recorded in, or null */
    CUstream_st *stream;    /* there: its stream, */
    unsigned long long seq; /* and that stream's work before it */
};
struct CUgraph_st {
    std::vector<std::function<void()>> work;
};
struct CUgraphExec_st {
    std::vector<std::function<void()>> work;
};
static CUgraph_st *capture; /* the open capture */
static CUstream_st *origin; /* the stream it began on */
static std::vector<CUstream_st *> members;
static cudaError_t spoiled; /* the first failure inside it */
static cudaError_t spoil(cudaError_t e) {
    if (capture && spoiled == cudaSuccess) spoiled = e;
    return e;
}
static cudaError_t refuse() { return spoil(cudaErrorStreamCaptureUnsupported); }
static bool keep(cudaStream_t s, std::function<void()> &work) {
    if (!s || !s->captured) return false;
    s->ops++;
    capture->work.push_back(std::move(work));
    return true;
}
static void join_capture(cudaStream_t s) {
    s->captured = true;
    s->ops = s->joined = 0;
    members.push_back(s);
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
    if (capture || !s) return cudaErrorInvalidValue;
    capture = new CUgraph_st;
    origin = s;
    spoiled = cudaSuccess;
    join_capture(s);
    emu_capture_hook = keep;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
    if (!capture || s != origin) return cudaErrorInvalidValue;
    bool unjoined = false;
    for (CUstream_st *m : members) {
        if (m != origin && m->ops > m->joined) unjoined = true;
        m->captured = false;
    }
    members.clear();
    emu_capture_hook = nullptr;
    cudaError_t e = spoiled           ? cudaErrorStreamCaptureInvalidated
                    : unjoined        ? cudaErrorStreamCaptureUnjoined
                                      : cudaSuccess;
    *g = e ? nullptr : capture;
    if (e) delete capture;
    capture = nullptr;
    return e;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long) {
    *e = new CUgraphExec_st{g->work};
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t) {
    if (capture) return refuse();
    for (auto &w : e->work) w();
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete g;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
    delete e;
    return cudaSuccess;
}
/* for nccl_emu.c, C code that cannot name this file's C++ functions: fn(arg)
 * queued on stream s as host work (as cudaLaunchHostFunc). 1: a capture kept
 * it, to run at each launch of its graph; 0: it has run. */
extern "C" int emu_host_work(void *s, void (*fn)(void *), void *arg) {
    std::function<void()> w = [=] { fn(arg); };
    if (keep((cudaStream_t)s, w)) return 1;
    w();
    return 0;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
    *s = new CUstream_st{};
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return capture ? refuse() : cudaSuccess; }
/* ---- memory: the device's allocations and the page-locked host ones, told
 * apart from pageable host memory, which a memset cannot take and a capture
 * cannot copy from or to (CUDA stages such a copy through a wait) ---- */
typedef std::map<const char *, size_t> ranges; /* start -> bytes */
static ranges device_mem, pinned_mem;
static bool within(const ranges &m, const void *p) {
    auto it = m.upper_bound((const char *)p);
    if (it == m.begin()) return false;
    --it;
    return (const char *)p < it->first + it->second;
}
static bool pageable(const void *p) { return !within(device_mem, p) && !within(pinned_mem, p); }
static cudaError_t alloc(ranges &m, void **p, size_t bytes) {
    if (capture) return refuse();
    *p = aligned_alloc(256, (bytes + 255) / 256 * 256); /* cudaMalloc's alignment */
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, bytes); /* NaN, as no kernel may read what it was not given */
    m[(const char *)*p] = bytes ? bytes : 1;
    return cudaSuccess;
}
static cudaError_t release(ranges &m, void *p) {
    if (capture) return refuse();
    if (p && !m.erase((const char *)p)) return cudaErrorInvalidValue; /* not an allocation of this kind */
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMallocBytes(void **p, size_t bytes) { return alloc(device_mem, p, bytes); }
cudaError_t cudaMallocHostBytes(void **p, size_t bytes) { return alloc(pinned_mem, p, bytes); }
cudaError_t cudaFree(void *p) { return release(device_mem, p); }
cudaError_t cudaFreeHost(void *p) { return release(pinned_mem, p); }
cudaError_t cudaMemGetInfo(size_t *fr, size_t *total) {
    *fr = *total = (size_t)16 << 30;
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s) {
    if (!within(device_mem, p)) return cudaErrorInvalidValue;
    emu_enqueue(s, [=] {
        emu_count("memset");
        memset(p, v, bytes);
    });
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind, cudaStream_t s) {
    if (s && s->captured && (pageable(dst) || pageable(src))) return refuse();
    emu_enqueue(s, [=] {
        emu_count("copy");
        memmove(dst, src, bytes);
    });
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                              cudaMemcpyKind, cudaStream_t s) {
    if (width > dpitch || width > spitch) return cudaErrorInvalidValue;
    if (s && s->captured && (pageable(dst) || pageable(src))) return refuse();
    emu_enqueue(s, [=] {
        emu_count("copy");
        for (size_t r = 0; r < rows; r++) memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    });
    return cudaSuccess;
}
static double now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) {
    *e = new CUevent_st{};
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (s && s->captured) *e = {e->t, true, capture, s, s->ops};
    else *e = {now(), true, nullptr, nullptr, 0};
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
    if (!e->recorded) return cudaSuccess; /* no work: nothing to wait for */
    if (e->capture && e->capture != capture) return spoil(cudaErrorCapturedEvent);
    if (e->capture) { /* a fork into the capture, or a join */
        if (!s->captured) join_capture(s);
        if (e->stream != s && e->seq > e->stream->joined) e->stream->joined = e->seq;
        return cudaSuccess;
    }
    return s && s->captured ? spoil(cudaErrorStreamCaptureIsolation) : cudaSuccess;
}
/* every queued call has run: an event is complete once recorded */
cudaError_t cudaEventQuery(cudaEvent_t e) {
    return capture ? refuse() : e->capture ? cudaErrorCapturedEvent : cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) { return cudaEventQuery(e); }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if (a->capture || b->capture) return cudaErrorCapturedEvent;
    *ms = (float)(1e3 * (b->t - a->t));
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (s && s->captured) return refuse();
    delete s;
    return cudaSuccess;
}

/* ---- cuBLASLt ---- */
static cublasLtContext the_handle;
cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    *h = &the_handle;
    return CUBLAS_STATUS_SUCCESS;
}
size_t cublasLtGetVersion() { return 0; }
const char *cublasLtGetStatusString(cublasStatus_t s) { return s ? "emulated cuBLASLt: invalid value" : "success"; }
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c, cudaDataType_t scale) {
    if (c != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return CUBLAS_STATUS_INVALID_VALUE;
    *d = new cublasLtMatmulDescOpaque_t{CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL, 0, -1, -1};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    delete d;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *v,
                                              size_t n) {
    switch (a) { /* each attribute's size as cuBLASLt has it */
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
        if (n != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
        (a == CUBLASLT_MATMUL_DESC_TRANSA ? d->ta : d->tb) = *(const cublasOperation_t *)v;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
        if (n != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
        cublasLtEpilogue_t e = *(const cublasLtEpilogue_t *)v;
        if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_BIAS && e != CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
            return CUBLAS_STATUS_INVALID_VALUE; /* not emulated */
        d->epi = e;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
        if (n != sizeof(void *)) return CUBLAS_STATUS_INVALID_VALUE;
        if (a == CUBLASLT_MATMUL_DESC_BIAS_POINTER) d->bias = *(const void *const *)v;
        else d->aux = *(void *const *)v;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
        if (n != sizeof(int64_t)) return CUBLAS_STATUS_INVALID_VALUE;
        d->aux_ld = *(const int64_t *)v;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
        if (n != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
        (a == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE ? d->bias_type : d->aux_type) = *(const int32_t *)v;
        return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t t, uint64_t rows, uint64_t cols,
                                          int64_t ld) {
    if (ld < (int64_t)rows) return CUBLAS_STATUS_INVALID_VALUE; /* column-major: ld counts a column's rows */
    *l = new cublasLtMatrixLayoutOpaque_t{t, rows, cols, ld, 0, 1};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    delete l;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a,
                                                const void *v, size_t n) {
    if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && n == sizeof(int)) l->batch = *(const int *)v;
    else if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && n == sizeof(int64_t)) l->stride = *(const int64_t *)v;
    else return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}
static cublasLtMatmulPreferenceOpaque_t the_pref;
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = &the_pref;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    const void *, size_t) {
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int want, cublasLtMatmulHeuristicResult_t *r,
                                              int *found) {
    memset(r, 0, sizeof *r);
    *found = want > 0;
    return CUBLAS_STATUS_SUCCESS;
}

/* element (i, j) of op(X) for a column-major layout l */
static float at(const void *x, const cublasLtMatrixLayout_t l, int b, cublasOperation_t op, uint64_t i, uint64_t j) {
    size_t k = (size_t)b * l->stride + (op == CUBLAS_OP_N ? i + j * l->ld : j + i * l->ld);
    return l->type == CUDA_R_16BF ? ax_bf16_widen(((const uint16_t *)x)[k]) : ((const float *)x)[k];
}

/* each element summed in k order; the operands widened to fp32 first, and
 * the loop over a row of D innermost, so that it vectorises */
static void matmul(cublasLtMatmulDescOpaque_t dd, float al, const void *A, cublasLtMatrixLayoutOpaque_t lla,
                   const void *B, cublasLtMatrixLayoutOpaque_t llb, float be, const void *C,
                   cublasLtMatrixLayoutOpaque_t llc, void *D) {
    const cublasLtMatmulDesc_t d = &dd;
    const cublasLtMatrixLayout_t la = &lla, lb = &llb, lc = &llc;
    uint64_t m = lc->rows, n = lc->cols, k = d->ta == CUBLAS_OP_N ? la->cols : la->rows;
    std::vector<float> a(m * k), bt(k * n), row(m);
    for (int b = 0; b < lc->batch; b++) {
        for (uint64_t i = 0; i < m; i++)
            for (uint64_t p = 0; p < k; p++) a[p * m + i] = at(A, la, b, d->ta, i, p);
        for (uint64_t p = 0; p < k; p++)
            for (uint64_t j = 0; j < n; j++) bt[j * k + p] = at(B, lb, b, d->tb, p, j);
        for (uint64_t j = 0; j < n; j++) { /* column j of D, its m rows summed over p side by side */
            std::fill(row.begin(), row.end(), 0.0f);
            for (uint64_t p = 0; p < k; p++) {
                float bpj = bt[j * k + p];
                const float *ap = &a[p * m];
                for (uint64_t i = 0; i < m; i++) row[i] += ap[i] * bpj;
            }
            for (uint64_t i = 0; i < m; i++) {
                size_t o = (size_t)b * lc->stride + i + j * lc->ld;
                float r = al * row[i] + (be != 0.0f ? be * at(C, lc, b, CUBLAS_OP_N, i, j) : 0.0f);
                if (d->epi != CUBLASLT_EPILOGUE_DEFAULT) r += ((const float *)d->bias)[i];
                if (d->epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
                    size_t q = i + j * d->aux_ld;
                    if (d->aux_type == CUDA_R_16BF) ((uint16_t *)d->aux)[q] = ax_bf16_round(r);
                    else ((float *)d->aux)[q] = r;
                    r = ax_gelu(r);
                }
                if (lc->type == CUDA_R_16BF) ((uint16_t *)D)[o] = ax_bf16_round(r);
                else ((float *)D)[o] = r;
            }
        }
    }
}

/* checked as it is queued; the descriptors and scalars are taken by value
 * (as cuBLASLt reads host scalars at the call) */
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t d, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t la, const void *B, cublasLtMatrixLayout_t lb, const void *beta,
                              const void *C, cublasLtMatrixLayout_t lc, void *D, cublasLtMatrixLayout_t ld,
                              const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t s) {
    uint64_t m = lc->rows, n = lc->cols, k = d->ta == CUBLAS_OP_N ? la->cols : la->rows;
    uint64_t am = d->ta == CUBLAS_OP_N ? la->rows : la->cols, bk = d->tb == CUBLAS_OP_N ? lb->rows : lb->cols,
             bn = d->tb == CUBLAS_OP_N ? lb->cols : lb->rows;
    if (am != m || bk != k || bn != n || C != D || lc != ld || la->batch != lc->batch || lb->batch != lc->batch ||
        (lc->type != CUDA_R_32F && lc->type != CUDA_R_16BF))
        return CUBLAS_STATUS_INVALID_VALUE;
    /* the epilogues as emulated: an fp32 bias, batch 1, aux in D's dtype with
     * an ld of a multiple of 8 (Lt's rule) covering D's rows */
    if (d->epi != CUBLASLT_EPILOGUE_DEFAULT &&
        (!d->bias || d->bias_type != CUDA_R_32F || lc->batch != 1 ||
         (d->epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS &&
          (!d->aux || d->aux_type != lc->type || d->aux_ld < (int64_t)m || d->aux_ld % 8))))
        return CUBLAS_STATUS_INVALID_VALUE;
    float al = *(const float *)alpha, be = *(const float *)beta;
    cublasLtMatmulDescOpaque_t dd = *d;
    cublasLtMatrixLayoutOpaque_t lla = *la, llb = *lb, llc = *lc;
    emu_enqueue(s, [=] {
        emu_count("gemm");
        matmul(dd, al, A, lla, B, llb, be, C, llc, D);
    });
    return CUBLAS_STATUS_SUCCESS;
}
