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
 * fp32 or bf16 inputs, always accumulate in fp32 and write fp32 or bf16. The
 * kernels that produce a GEMM's input (norms, activations) write it in the
 * GEMM's dtype and those that read a GEMM output kept for pointwise work read
 * its dtype; their arithmetic is fp32 (mixed precision keeps statistics,
 * softmax, the loss and the optimizer fp32: docs/design.md, Precision).
 *
 *   ax_gemm(1.0f, ax_mat_of(x, AX_BF16, M, K), 0, ax_mat_of(w, AX_BF16, N, K), 1,   // y = x w^T
 *           0.0f, ax_mat_f32(y, M, N));
 *   ax_be()->bias_gelu_forward(act, AX_BF16, pre, AX_BF16, y, bias, M, n); // act = gelu(y + bias), bf16 */
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

/* What a GEMM's epilogue applies to the fp32 product y = op(A) op(B) before
 * the one store (backend.h: gemm_epilogue) */
typedef enum {
    AX_EPI_BIAS,      /* C = y + bias */
    AX_EPI_BIAS_GELU, /* v = y + bias; pre = v; C = gelu(v) (kmath.h: ax_gelu) */
} ax_epilogue;

#define AX_SUMSQ_RANGES  64
#define AX_DEVICE_ID_LEN 64

/* one AdamW step's constants (kmath.h: ax_adamw_elem): the gradient's scale
 * (clipping), the moments' rates and bias corrections, learning rate, eps,
 * and the weight decay factor of the elements it applies to */
typedef struct {
    float gscale, b1, b2, c1, c2, lr, eps, decay;
} ax_adamw_step;

/* One block of attention, the unit ring attention works in (docs/design.md,
 * "Context parallelism"): for each of B sequences, a chunk of Tq query rows
 * against a chunk of Tk key/value rows. Rows of every buffer are indexed
 * b * S + i from the chunk's base pointer: Sq rows per sequence on the query
 * side (q, dq, out, dout, lse), Sk on the key side (k, v, dk, dv).
 *   q  (.., ldq): query head h at columns [h*hd, (h+1)*hd)
 *   k, v (.., ldk): key/value head h / (Hl / KVl) at the same columns
 *   out, dout (.., Hl*hd); lse[(b*Hl + h)*Sq + i]
 * causal: key j visible to query i iff j <= i (a chunk against itself,
 * Tq == Tk); else every key is visible. The whole causal attention of
 * sequences of T rows is the one block q = k = v = qkv, Tq = Tk = Sq = Sk = T.
 * q, k, v hold st values (fp32 unless set; bf16 ones are widened as they are
 * loaded); out, dout, lse and the gradients are fp32, as blocks merge. */
typedef struct {
    int B, Hl, KVl, hd;
    int Tq, Tk, Sq, Sk;
    int causal;
    const void *q, *k, *v;
    int ldq, ldk;
    ax_dtype dt; /* the model's GEMM input precision, as attention_forward's */
    ax_dtype st; /* how q, k, v are stored */
} ax_attn_block;

/* The whole causal attention of B sequences of T rows of q|k|v ((Hl + 2 KVl)
 * * hd wide, stored in dt): the block q = k = v = qkv, every length T.
 * Written with assignments so that C++ (the CUDA sources) reads it too. */
static inline ax_attn_block ax_attn_block_whole(const void *qkv, int B, int T, int Hl, int KVl, int hd, ax_dtype dt) {
    const char *p = (const char *)qkv;
    size_t es = dt == AX_BF16 ? 2 : 4;
    ax_attn_block a;
    a.B = B, a.Hl = Hl, a.KVl = KVl, a.hd = hd;
    a.Tq = a.Tk = a.Sq = a.Sk = T;
    a.causal = 1;
    a.q = p;
    a.k = p + (size_t)Hl * hd * es;
    a.v = p + (size_t)(Hl + KVl) * hd * es;
    a.ldq = a.ldk = (Hl + 2 * KVl) * hd;
    a.dt = a.st = dt;
    return a;
}

typedef struct {
    void (*sum)(void *ctx, float *buf, size_t n); /* in place, over the group */
    void (*max)(void *ctx, float *buf, size_t n);
    void *ctx;
    /* optional: 1 when the group is this rank alone (sum and max leave buf
     * as it is), so that a backend may fuse the passes they separate; 0:
     * not known, the passes and the reducer's calls as for a group */
    int single;
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
    /* optional (device backends): bytes of the backend's memory free now;
     * NULL: the host's memory (the model keeps its fixed budgets) */
    size_t (*mem_free)(void);
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
    /* optional (device backends): bytes from host memory to the backend's,
     * queued behind the work already queued; returns at once where it can.
     * A source from host_alloc (page-locked) must stay unchanged until the
     * queued work has run (the next wait: sync, copy, a reduction read back);
     * other host memory may be reused on return (the copy stages it first,
     * and may wait to). NULL: copy. */
    void (*copy_async)(void *dst, const void *src, size_t bytes);
    /* 1: alloc's memory is the host's (the CPU backend), so the host may read
     * and write it directly; 0: only through copy (ax_host_view) */
    int host_memory;
    /* bytes of the backend's memory at p set to zero */
    void (*zero)(void *p, size_t bytes);
    /* sum of x[r][i]^2 over n ranges (at most AX_SUMSQ_RANGES) of len[r] floats,
     * in double, complete on return: the gradient norm hands over many
     * parameters' ranges at once, so that a device backend waits once */
    double (*sumsq)(int n, const float *const *x, const size_t *len);
    /* *acc (the backend's memory, a double) += sum over i of (w ? w[i] : 1) * x[i],
     * the sum formed in double first, then added; queued like a kernel. The
     * CPU sums in order of i; a device in its own (fixed) order. */
    void (*wsum)(double *acc, const float *x, const float *w, int64_t n);
    /* optional: waits until the work queued on the backend is done; NULL:
     * nothing is queued (the CPU). Callers use ax_backend_sync. */
    void (*sync)(void);
    /* optional (NULL: work runs as it is called), a CUDA graph on a GPU:
     * between capture_begin and capture_end the backend records the work
     * queued on it instead of running it; nothing may wait for the device,
     * allocate or free meanwhile (the backend aborts, naming the call).
     * capture_end returns the recording; replay queues it again: the same
     * kernels with the same arguments on the same memory, reading what that
     * memory (host_alloc memory included) holds when they run. replay
     * queues nothing and returns -1 when the backend's memory was allocated
     * or freed since the capture (a pointer in it may be stale), else 0. */
    void (*capture_begin)(void);
    void *(*capture_end)(void);
    int (*replay)(void *graph);
    void (*graph_free)(void *graph);

    /* C = alpha op(A) op(B) + beta C for each of batch matrices; op(A) is A or
     * A^T, C.rows x K, op(B) K x C.cols; accumulation in fp32 whatever the
     * dtypes. Callers use ax_gemm / ax_gemm_batched, which check the shapes. */
    void (*gemm)(int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta, ax_mat C);
    /* The GEMM kernels for inputs of dtype t, e.g. "OpenBLAS sgemm (Haswell)";
     * NULL when this build cannot run them. *emulated: no native kernel on
     * this CPU, the inputs are widened to fp32 (same results, no speed-up). */
    const char *(*gemm_kernel)(ax_dtype t, int *emulated);
    /* optional (NULL: callers run gemm, then bias_round or bias_gelu_forward):
     * one GEMM, batch 1, alpha 1, beta 0, with epilogue e on its fp32 product
     * and the fp32 bias (C.cols, broadcast over rows); pre (AX_EPI_BIAS_GELU
     * only: C.rows x C.cols, dense, in C's dtype). The arithmetic is the one
     * of those separate passes (fp32 sum, fp32 bias add and GELU, each output
     * rounded once), only the fp32 product is never stored. */
    void (*gemm_epilogue)(ax_epilogue e, ax_mat A, int transA, ax_mat B, int transB, ax_mat C, const float *bias,
                          void *pre);
    void (*gemm_timing)(int on); /* seconds and FLOPs of gemm, for --profile */
    void (*gemm_stats)(double *seconds, double *flops);
    /* dst = src converted; to bf16 rounds to nearest even (NaN stays NaN) */
    void (*cast)(void *dst, ax_dtype dt, const void *src, ax_dtype st, size_t n);
    /* optional (GEMM layout tuning): dst (src.cols x src.rows) = src^T + beta dst,
     * converted to dst's dtype; beta 0: dst is not read */
    void (*transpose)(ax_mat dst, ax_mat src, float beta);

    /* Activations a kernel writes for a GEMM to read, and the GEMM outputs
     * that only pointwise work reads, are void pointers with their dtype
     * (fp32, or bf16 under mixed precision: rounded once at the store, widened
     * at the load); everything else here is fp32. */
    /* LayerNorm over rows split in columns: x, out (M, Cl), C = all columns;
     * out in dtype ot. Fused residual: when bias or r is given (else NULL),
     * x = (x + bias) + r first, stored back in x (the residual stream), in one
     * pass with the row sums. */
    void (*layernorm_forward)(void *out, ax_dtype ot, float *mean, float *rstd, float *x, const float *bias,
                              const float *r, const float *w, const float *b, int M, int Cl, int C, float eps,
                              float *scratch /* M */, const ax_reducer *X);
    /* dx, dw, db accumulate (+=); scratch 2*M */
    void (*layernorm_backward)(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                               const float *mean, const float *rstd, int M, int Cl, int C, float *scratch,
                               const ax_reducer *X);
    /* RMSNorm (no centring, no bias): out = x / rms(x) * w, x's residual as
     * LayerNorm's; dx, dw accumulate; scratch M */
    void (*rmsnorm_forward)(void *out, ax_dtype ot, float *rstd, float *x, const float *bias, const float *r,
                            const float *w, int M, int Cl, int C, float eps, const ax_reducer *X);
    void (*rmsnorm_backward)(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                             int M, int Cl, int C, float *scratch, const ax_reducer *X);
    /* bias + GELU in one pass over y (M, n): v = y + bias (NULL: y);
     * pre = v in dtype pt (NULL: not kept; may be y itself when fp32);
     * out = gelu(v) in dtype ot */
    void (*bias_gelu_forward)(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *y, const float *bias, int M,
                              int n);
    /* GELU backward with the bias gradient in one pass: d = gelu'(x) dout,
     * x (M, n) in dtype xt; dx = d in dtype dt (may alias dout when fp32);
     * db += column sums of d in fp32 (NULL: none) */
    void (*gelu_backward)(void *dx, ax_dtype dt, float *db, const void *x, ax_dtype xt, const float *dout, int M,
                          int n);
    /* SwiGLU: gu (M, 2F) rows [gate | up] in fp32, out (M, F) = silu(gate) * up
     * in dtype ot; pre = gu in dtype pt (NULL: not kept; may be gu when fp32) */
    void (*swiglu_forward)(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *gu, int M, int F);
    /* dgu (M, 2F) in dtype dt, overwritten; gu in dtype gt */
    void (*swiglu_backward)(void *dgu, ax_dtype dt, const void *gu, ax_dtype gt, const float *dout, int M, int F);
    /* rotary embedding in place on nh heads of hd at the start of each of M rows
     * (row stride ld), at position pos[i] (i % T when pos is NULL); cs (positions,
     * hd/2 pairs of cos, sin); sign -1 rotates back (the backward) */
    void (*rope)(float *x, int ld, int M, int T, const int32_t *pos, int nh, int hd, const float *cs, float sign);
    void (*add)(float *y, const float *x, size_t n);             /* y += x */
    void (*bias_add)(float *y, const float *bias, int M, int n); /* rows of y += bias */
    /* a GEMM output (M, n) kept in dtype ot: y += bias (NULL: none), out = y
     * in ot, and y then holds out's value (rounded under bf16), so that fp32
     * readers of y now and of out later see the same numbers; out may be y
     * when fp32 */
    void (*bias_round)(float *y, void *out, ax_dtype ot, const float *bias, int M, int n);
    void (*bias_grad)(float *db, const float *dy, int M, int n); /* db += column sums */
    /* token rows [v0, v0+Vl) of the table, zeros elsewhere, completed over the
     * vocabulary group, plus position rows pos[i] (i % T when pos is NULL;
     * none when wpe, and in backward dwpe, is NULL). T counts a sequence's
     * positions, all of them where ranks hold parts of it (context
     * parallelism): pos[i] lies in [0, T), and the backward skips a row
     * outside (the CUDA backend sorts rows by position, T keys) */
    void (*embedding_forward)(float *out, const int32_t *tokens, const int32_t *pos, const float *wte, const float *wpe,
                              int M, int T, int v0, int Vl, int Cl, const ax_reducer *Y);
    void (*embedding_backward)(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                               int M, int T, int v0, int Vl, int Cl);
    /* vocabulary-parallel cross-entropy of logits (M, Vl) in dt, the dtype of
     * the LM head's GEMMs (softmax, loss and gradient computed in fp32); when
     * dscale (one float in the backend's memory, read when the work runs: a
     * captured step replays with the value of the day) is not NULL, the
     * logits' gradient times *dscale is written to dgrad (M, Vl) in dt, a
     * bf16 one with the bits of the fp32 gradient cast; dgrad may be logits
     * (in place: each element is read before it is written) */
    void (*xent)(const void *logits, float *losses, const int32_t *targets, const float *weight, int M, int Vl, int v0,
                 int V, const float *dscale, void *dgrad, ax_dtype dt, float *scratch /* 3*M */, const ax_reducer *Y);
    /* causal attention of Hl query heads over KVl key/value heads (Hl a multiple):
     * qkv (B*T, (Hl + 2 KVl) hd) rows [q | k | v], out (B*T, Hl*hd), lse (B, Hl, T).
     * dt is the model's GEMM input dtype, and qkv and out are stored in it:
     * under AX_BF16 the kernels widen q, k, v as they load them and round
     * out once as they store it (kmath.h: ax_load, ax_store), so neither has
     * an fp32 copy; lse, dout and dqkv are fp32. With AX_BF16 a backend may
     * also multiply bf16 q, k, v and probabilities (fp32 accumulation, fp32
     * softmax), as the layers' GEMMs do; the CPU backend computes in fp32. */
    size_t (*attention_scratch)(int T, int hd); /* floats per thread */
    void (*attention_forward)(void *out, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd,
                              ax_dtype dt, float *scratch, int nthr);
    void (*attention_backward)(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv,
                               int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr);
    /* (optional: without them no context parallelism) the same arithmetic
     * on one block (ax_attn_block); scratch: nthr * attention_scratch(Tq, hd).
     * Forward: the block's out and lse; with merge, combined with what out
     * and lse hold (the same queries over other keys) by their log-sum-exp
     * (kmath.h: ax_softmax_resume), else overwritten. Backward: the block's share
     * of dq, dk, dv added to them (laid out as q, k, v), from out and lse of
     * the complete forward (every block merged). */
    void (*attention_block_forward)(const ax_attn_block *a, float *out, float *lse, int merge, float *scratch,
                                    int nthr);
    void (*attention_block_backward)(const ax_attn_block *a, float *dq, float *dk, float *dv, const float *dout,
                                     const float *out, const float *lse, float *scratch, int nthr);
    /* one new query per row over a KV cache (nb rows, cache (rows, KVl, Tmax, hd)
     * of this layer); the row's new key and value are appended at len[b] */
    void (*attention_decode)(float *out, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl,
                             int KVl, int hd, int Tmax);
    /* AdamW over a whole flat buffer of n elements in one call: s.decay
     * applies on the nr ranges [ranges[2i], ranges[2i+1]) (sorted, disjoint,
     * the backend's memory; ax_adamw_decay_at), 1 elsewhere; wh (may be NULL):
     * its first nh elements get the new weights rounded to bf16, as cast would */
    void (*adamw_all)(float *w, const float *g, float *m, float *v, int64_t n, const int64_t *ranges, int nr,
                      ax_bf16 *wh, int64_t nh, ax_adamw_step s);
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
/* poll() once (0 when none is set): a kernel that runs long calls it between
 * its tiles, from the calling thread only (OpenMP's thread 0; MPI is
 * MPI_THREAD_FUNNELED), so that communication started before it advances
 * while it runs. Testing never changes what the kernel computes. */
int ax_backend_poll(void);

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
