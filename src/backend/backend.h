/* The execution backend: threads, memory and every kernel the model runs.
 * Layers (src/nn) and the model call kernels only through this table; nothing
 * above src/backend includes BLAS or uses OpenMP. A second implementation
 * (CUDA) fills the same table; entries marked optional may be NULL.
 *
 * Kernels whose result is split over a process group (LayerNorm statistics
 * over X, the vocabulary-parallel loss over Y, the embedding over Y) take an
 * ax_reducer: the kernel computes its local partial sums, asks the reducer to
 * complete them over the group, and goes on. The reducer wraps a collective of
 * src/comm, so the backend knows nothing about MPI.
 *
 * Matrices are row-major and carry their dtype and shape (ax_mat). GEMMs take
 * fp32 or bf16 inputs, always accumulate in fp32 and write fp32 or bf16; every
 * other kernel works on fp32 (mixed precision keeps LayerNorm, softmax, the
 * loss and the optimizer in fp32 and rounds only GEMM inputs to bf16).
 *
 *   ax_gemm(1.0f, ax_mat_of(x, AX_BF16, M, K), 0, ax_mat_of(w, AX_BF16, N, K), 1,   // y = x w^T
 *           0.0f, ax_mat_f32(y, M, N));
 *   ax_be()->gelu_forward(out, x, n); */
#ifndef AX_BACKEND_BACKEND_H
#define AX_BACKEND_BACKEND_H
#include <stddef.h>
#include <stdint.h>

typedef enum { AX_F32, AX_BF16 } ax_dtype;
typedef uint16_t ax_bf16; /* the upper half of an IEEE fp32 */
static inline size_t ax_dtype_size(ax_dtype t) { return t == AX_BF16 ? 2 : 4; }
const char *ax_dtype_name(ax_dtype t);
/* "fp32" or "bf16"; fails with one line naming the accepted values */
int ax_dtype_parse(const char *s, ax_dtype *t);

/* A row-major matrix: rows x cols, ld elements from one row to the next; in a
 * strided batch, matrix i starts i * stride elements after data. */
typedef struct {
    void *data;
    ax_dtype dtype;
    int rows, cols, ld;
    int64_t stride;
} ax_mat;
static inline ax_mat ax_mat_of(const void *p, ax_dtype t, int rows, int cols) {
    ax_mat m = {(void *)p, t, rows, cols, cols, (int64_t)rows * cols}; /* no compound literal: nvcc reads this too */
    return m;
}
static inline ax_mat ax_mat_f32(const float *p, int rows, int cols) { return ax_mat_of(p, AX_F32, rows, cols); }

#define AX_SUMSQ_RANGES  64
#define AX_DEVICE_ID_LEN 64

typedef struct {
    void (*sum)(void *ctx, float *buf, size_t n); /* in place, over the group */
    void (*max)(void *ctx, float *buf, size_t n);
    void *ctx;
} ax_reducer;

typedef struct ax_backend {
    const char *name;
    /* optional: readies the backend for this rank, before any other entry. A
     * device backend picks the rank's device among those visible to it (the
     * node-local rank modulo their count: with CUDA_VISIBLE_DEVICES set per
     * rank by the launcher, the one it sees) and creates no context on any
     * other device; fails with one line saying why. Called by ax_backend_use. */
    int (*open)(int local_rank);
    /* optional (device backends): a string naming this rank's physical device,
     * the same on every rank that uses it (the GPU's UUID), at most
     * AX_DEVICE_ID_LEN bytes with its NUL; and the device's name for logs */
    void (*device_id)(char *id);
    const char *(*device_name)(void);
    /* optional: host memory the device copies to and from at full speed
     * (page-locked), for staging collectives; NULL: ordinary host memory */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    /* threads of this rank's kernels */
    void (*set_threads)(int n);
    int (*threads)(void);
    /* memory the kernels work on, zero-filled; aborts when out of memory.
     * On a device backend it is device memory: the host reaches it through
     * copy only, and kernels, reducers included, see device pointers. */
    void *(*alloc)(size_t bytes);
    void (*free)(void *p);
    /* bytes from src to dst, either of them host or this backend's memory;
     * complete on return */
    void (*copy)(void *dst, const void *src, size_t bytes);
    /* rows of width bytes from src (row starts spitch bytes apart) to dst (dpitch
     * apart), both the backend's memory, not overlapping: a strided gather on
     * the device, queued like a kernel (the host does not wait for it) */
    void (*copy_rows)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows);
    /* 1: alloc's memory is the host's (the CPU backend), so the host may read
     * and write it directly; 0: only through copy (ax_host_view) */
    int host_memory;
    /* bytes of the backend's memory at p set to zero */
    void (*zero)(void *p, size_t bytes);
    /* sum of x[r][i]^2 over n ranges (at most AX_SUMSQ_RANGES) of len[r] floats,
     * in double, complete on return: the gradient norm hands over many
     * parameters' ranges at once, so that a device backend waits once */
    double (*sumsq)(int n, const float *const *x, const size_t *len);
    /* optional: waits until the work queued on the backend is done; NULL:
     * nothing is queued (the CPU). Callers use ax_backend_sync. */
    void (*sync)(void);

    /* C = alpha op(A) op(B) + beta C for each of batch matrices; op(A) is A or
     * A^T, C.rows x K, op(B) K x C.cols; accumulation in fp32 whatever the
     * dtypes. Callers use ax_gemm / ax_gemm_batched, which check the shapes. */
    void (*gemm)(int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C);
    /* The GEMM kernels for inputs of dtype t, e.g. "OpenBLAS sgemm (Haswell)";
     * NULL when this build cannot run them. *emulated: no native kernel on
     * this CPU, the inputs are widened to fp32 (same results, no speed-up). */
    const char *(*gemm_kernel)(ax_dtype t, int *emulated);
    void (*gemm_timing)(int on); /* seconds and FLOPs of gemm, for --profile */
    void (*gemm_stats)(double *seconds, double *flops);
    /* dst = src converted; to bf16 rounds to nearest even (NaN stays NaN) */
    void (*cast)(void *dst, ax_dtype dt, const void *src, ax_dtype st, size_t n);
    /* optional (GEMM layout tuning): dst (src.cols x src.rows) = src^T + beta dst,
     * converted to dst's dtype; beta 0: dst is not read */
    void (*transpose)(ax_mat dst, ax_mat src, float beta);

    /* LayerNorm over rows split in columns: x, out (M, Cl), C = all columns */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                              int M, int Cl, int C, float eps, float *scratch /* M */, const ax_reducer *X);
    /* dx, dw, db accumulate (+=); scratch 2*M */
    void (*layernorm_backward)(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                               const float *mean, const float *rstd, int M, int Cl, int C, float *scratch,
                               const ax_reducer *X);
    /* RMSNorm (no centring, no bias): out = x / rms(x) * w; dx, dw accumulate; scratch M */
    void (*rmsnorm_forward)(float *out, float *rstd, const float *x, const float *w, int M, int Cl, int C, float eps,
                            const ax_reducer *X);
    void (*rmsnorm_backward)(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                             int M, int Cl, int C, float *scratch, const ax_reducer *X);
    void (*gelu_forward)(float *out, const float *x, size_t n);
    void (*gelu_backward)(float *dx, const float *x, const float *dout, size_t n); /* dx may alias dout */
    /* SwiGLU: gu (M, 2F) rows [gate | up], out (M, F) = silu(gate) * up; dgu overwritten */
    void (*swiglu_forward)(float *out, const float *gu, int M, int F);
    void (*swiglu_backward)(float *dgu, const float *gu, const float *dout, int M, int F);
    /* rotary embedding in place on nh heads of hd at the start of each of M rows
     * (row stride ld), at position pos[i] (i % T when pos is NULL); cs (positions,
     * hd/2 pairs of cos, sin); sign -1 rotates back (the backward) */
    void (*rope)(float *x, int ld, int M, int T, const int32_t *pos, int nh, int hd, const float *cs, float sign);
    void (*add)(float *y, const float *x, size_t n);             /* y += x */
    void (*bias_add)(float *y, const float *bias, int M, int n); /* rows of y += bias */
    void (*bias_grad)(float *db, const float *dy, int M, int n); /* db += column sums */
    /* token rows [v0, v0+Vl) of the table, zeros elsewhere, completed over the
     * vocabulary group, plus position rows pos[i] (i % T when pos is NULL;
     * none when wpe, and in backward dwpe, is NULL) */
    void (*embedding_forward)(float *out, const int32_t *tokens, const int32_t *pos, const float *wte, const float *wpe,
                              int M, int T, int v0, int Vl, int Cl, const ax_reducer *Y);
    void (*embedding_backward)(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                               int M, int T, int v0, int Vl, int Cl);
    /* vocabulary-parallel cross-entropy; logits become their gradient when dscale != 0 */
    void (*xent)(float *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl, int v0,
                 int V, float dscale, float *scratch /* 3*M */, const ax_reducer *Y);
    /* causal attention of Hl query heads over KVl key/value heads (Hl a multiple):
     * qkv (B*T, (Hl + 2 KVl) hd) rows [q | k | v], out (B*T, Hl*hd), lse (B, Hl, T).
     * dt is the model's GEMM input precision: with AX_BF16 a backend may multiply
     * bf16-rounded q, k, v and probabilities (fp32 accumulation, fp32 softmax),
     * as the layers' GEMMs do; the CPU backend computes in fp32 either way. */
    size_t (*attention_scratch)(int T); /* floats per thread */
    void (*attention_forward)(float *out, float *lse, const float *qkv, int B, int T, int Hl, int KVl, int hd,
                              ax_dtype dt, float *scratch, int nthr);
    void (*attention_backward)(float *dqkv, const float *dout, const float *out, const float *lse, const float *qkv,
                               int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr);
    /* one new query per row over a KV cache (nb rows, cache (rows, KVl, Tmax, hd)
     * of this layer); the row's new key and value are appended at len[b] */
    void (*attention_decode)(float *out, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl,
                             int KVl, int hd, int Tmax);
    /* AdamW on n elements: m, v moments; w = w*decay - lr*mhat/(sqrt(vhat)+eps) */
    void (*adamw)(float *w, const float *g, float *m, float *v, int64_t n, float gscale, float b1, float b2, float c1,
                  float c2, float lr, float eps, float decay);
} ax_backend;

/* C = alpha op(A) op(B) + beta C on the backend in use, in the layout the
 * tuner chose (backend/gemm_tune.h); aborts, naming the shapes, when they do
 * not agree. */
void ax_gemm_batched(int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C);
static inline void ax_gemm(float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C) {
    ax_gemm_batched(1, alpha, A, transA, B, transB, beta, C);
}

/* poll() tests the communication in flight and returns how much is left;
 * while some is, ax_gemm cuts a long GEMM into tiles and polls between them
 * (the bits of C do not change). Set by src/comm, which the backend does not know. */
void ax_backend_set_progress(int (*poll)(void));

/* Host access, outside the step loop, to bytes of the backend's memory at p:
 * p itself where that memory is the host's, else a host copy (filled from p
 * when read). ax_host_release writes the copy back when write, and frees it.
 *   float *h = ax_host_view(m->params, n * 4, 0);  ...fill h...;  ax_host_release(h, m->params, n * 4, 1); */
void *ax_host_view(void *p, size_t bytes, int read);
void ax_host_release(void *view, void *p, size_t bytes, int write);

/* fn(ctx, lo, hi) over the chunks [lo, hi) of [0, n) on the host's threads
 * (OpenMP's, whichever backend runs the kernels): setup work whose elements
 * are independent of each other, such as random initialisation, so that its
 * result does not depend on the thread count. */
void ax_host_parallel(int64_t n, void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx);

/* The backend in use (the CPU one unless ax_backend_use chose another). */
const ax_backend *ax_be(void);
/* waits for the backend's queued work (kernels return before it is done on
 * a device): before reading a clock that should include it */
static inline void ax_backend_sync(void) {
    if (ax_be()->sync) ax_be()->sync();
}
/* Selects a compiled backend by name and opens it for the node-local rank
 * local_rank (device backends pick their device by it); fails with one line
 * naming the compiled ones, or why the backend cannot run here. */
int ax_backend_use(const char *name, int local_rank);
/* Makes b the backend in use without opening it (tests wrap the CPU backend). */
void ax_backend_install(const ax_backend *b);
/* The compiled backends, e.g. "cpu". */
const char *ax_backend_names(void);
#endif
