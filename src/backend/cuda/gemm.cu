/* GEMMs through cuBLASLt: fp32 accumulation always (CUBLAS_COMPUTE_32F, no
 * TF32), bf16 x bf16 -> fp32 or bf16 and fp32 x fp32 -> fp32 natively. Other
 * dtype mixes are brought to one of those: a bf16 operand beside an fp32 one
 * is widened (exactly) to fp32, an fp32 product for a bf16 C is computed in
 * fp32 and rounded once, as the CPU backend does.
 *
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the row-major
 * buffers, read as column-major, are already the transposes, so Lt's "A" is our
 * B and its "B" our A, with the same transpose flags.
 *
 * A plan (descriptors, layouts and the heuristic's algorithm) is made once per
 * shape, layout, dtypes and operand alignment, and kept; one workspace serves
 * all. Plans are found by a hash of their key: asking the heuristic again
 * costs far more host time than the GEMM takes on the device, so a step's
 * few hundred distinct GEMMs must never evict each other. Alignment counts
 * up to 16 bytes, all cuBLASLt's kernels ask for: beyond that, weights at
 * different offsets would make a plan each.
 *
 * Epilogues (gemm_epilogue): the bias add, and GELU with its input kept, on
 * the fp32 accumulator inside the GEMM (CUBLASLT_EPILOGUE_BIAS,
 * GELU_AUX_BIAS) with an fp32 bias; the pre-activation (Lt's "aux") in C's
 * dtype. A plan per epilogue; its pointers are set at each call. */
#include "backend/cuda/cuda.h"
#include "backend/kmath.h"
#include <cublasLt.h>
#include <stdio.h>
#include <string.h>

#define AX_CHECK_CUBLAS(call)                                                              \
    do {                                                                                   \
        cublasStatus_t ax_s_ = (call);                                                     \
        if (ax_s_ != CUBLAS_STATUS_SUCCESS)                                                \
            ax_fatal(__FILE__, __LINE__, "%s: %s", #call, cublasLtGetStatusString(ax_s_)); \
    } while (0)

#define WORKSPACE (32u << 20) /* what Lt's heuristic may use; Hopper kernels want up to 32 MiB */
#define PLANS     2048
#define SLOTS     (2 * PLANS) /* open addressing, at most half full */

typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc, batch, dta, dtb, dtc, align, epi; /* epi: ax_epilogue + 1, 0 none */
    int64_t sa, sb, sc;
} plan_key;

typedef struct {
    plan_key key;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    int refused; /* an epilogue this cuBLASLt has no kernel for: the caller's separate passes instead */
} plan;

static cublasLtHandle_t lt;
static void *workspace;
static plan plans[PLANS];
static int nplans, slot_of[SLOTS]; /* slot_of: plan index + 1, 0 empty */
/* --profile: each GEMM between two events on the stream (the host does not
 * wait for it); the pairs are summed when the stats are read */
#define TIMED_MAX 4096
static int timing_on, ntimed;
static cudaEvent_t ev[TIMED_MAX][2];
static double g_seconds, g_flops;

static void timed_sum(void) {
    if (!ntimed) return;
    AX_CHECK_CUDA(cudaEventSynchronize(ev[ntimed - 1][1]));
    for (int i = 0; i < ntimed; i++) {
        float ms;
        AX_CHECK_CUDA(cudaEventElapsedTime(&ms, ev[i][0], ev[i][1]));
        g_seconds += 1e-3 * ms;
    }
    ntimed = 0;
}

static cudaEvent_t timed_event(int end) {
    if (!end && ntimed == TIMED_MAX) timed_sum();
    cudaEvent_t *e = &ev[ntimed][end];
    if (!*e) AX_CHECK_CUDA(cudaEventCreate(e));
    AX_CHECK_CUDA(cudaEventRecord(*e, ax_cuda_stream()));
    if (end) ntimed++;
    return *e;
}

static cudaDataType_t cuda_type(ax_dtype t) { return t == AX_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

/* the largest power of two (up to 16) dividing every operand address */
static int alignment(const void *a, const void *b, const void *c) {
    uintptr_t u = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c | 16;
    return (int)(u & -u);
}

static unsigned key_hash(const plan_key *k) { /* FNV-1a over the key's bytes */
    const unsigned char *b = (const unsigned char *)k;
    unsigned h = 2166136261u;
    for (size_t i = 0; i < sizeof *k; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

static cublasLtMatrixLayout_t layout(ax_dtype t, int rows, int cols, int ld, int batch, int64_t stride) {
    cublasLtMatrixLayout_t l;
    AX_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&l, cuda_type(t), rows, cols, ld));
    if (batch > 1) {
        AX_CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
        AX_CHECK_CUBLAS(
            cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    return l;
}

static void plan_free(plan *p) {
    cublasLtMatrixLayoutDestroy(p->la);
    cublasLtMatrixLayoutDestroy(p->lb);
    cublasLtMatrixLayoutDestroy(p->lc);
    cublasLtMatmulDescDestroy(p->op);
}

static plan *plan_get(const plan_key *k) {
    unsigned s = key_hash(k) % SLOTS;
    for (; slot_of[s]; s = (s + 1) % SLOTS)
        if (!memcmp(&plans[slot_of[s] - 1].key, k, sizeof *k)) return &plans[slot_of[s] - 1];
    if (!lt) {
        AX_CHECK_CUBLAS(cublasLtCreate(&lt));
        AX_CHECK_CUDA(cudaMalloc(&workspace, WORKSPACE));
    }
    if (nplans == PLANS) { /* a pathological run: start the cache again */
        for (int i = 0; i < nplans; i++) plan_free(&plans[i]);
        memset(slot_of, 0, sizeof slot_of);
        nplans = 0;
        s = key_hash(k) % SLOTS;
    }
    plan *p = &plans[nplans++];
    slot_of[s] = nplans;
    p->key = *k;
    AX_CHECK_CUBLAS(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    AX_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    AX_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (k->epi) {
        cublasLtEpilogue_t e = k->epi - 1 == AX_EPI_BIAS ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
        int32_t bt = CUDA_R_32F, at = cuda_type((ax_dtype)k->dtc);
        int64_t ald = k->n;
        AX_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
        AX_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        if (k->epi - 1 == AX_EPI_BIAS_GELU) {
            AX_CHECK_CUBLAS(
                cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &at, sizeof at));
            AX_CHECK_CUBLAS(
                cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ald, sizeof ald));
        }
    }
    /* Lt's A = our B (stored B.cols x B.rows column-major), its B = our A */
    int brows = k->tb ? k->n : k->k, bcols = k->tb ? k->k : k->n; /* our B as stored, row-major */
    int arows = k->ta ? k->k : k->m, acols = k->ta ? k->m : k->k;
    p->la = layout((ax_dtype)k->dtb, bcols, brows, k->ldb, k->batch, k->sb);
    p->lb = layout((ax_dtype)k->dta, acols, arows, k->lda, k->batch, k->sa);
    p->lc = layout((ax_dtype)k->dtc, k->n, k->m, k->ldc, k->batch, k->sc);
    cublasLtMatmulPreference_t pref;
    AX_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = WORKSPACE;
    uint32_t al = (uint32_t)k->align;
    AX_CHECK_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    AX_CHECK_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof al));
    AX_CHECK_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, sizeof al));
    AX_CHECK_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof al));
    AX_CHECK_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, sizeof al));
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &r, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    /* an epilogue's types or shape a library version does not fuse: kept as
     * refused (asked once), and the GEMM runs without it */
    if (k->epi && (st != CUBLAS_STATUS_SUCCESS || !found)) {
        p->refused = 1;
        return p;
    }
    AX_CHECK_CUBLAS(st);
    if (!found)
        ax_fatal(__FILE__, __LINE__,
                 "cuBLASLt: no algorithm for %s %s x %s %s -> %s, C %dx%d, K %d, batch %d, alignment %d",
                 k->dta == AX_BF16 ? "bf16" : "fp32", k->ta ? "T" : "N", k->dtb == AX_BF16 ? "bf16" : "fp32",
                 k->tb ? "T" : "N", k->dtc == AX_BF16 ? "bf16" : "fp32", k->m, k->n, k->k, k->batch, k->align);
    p->algo = r.algo;
    return p;
}

/* epi: ax_epilogue + 1 (0: none), with its bias and pre (NULL otherwise);
 * returns 0, or -1 where cuBLASLt refused the epilogue (nothing ran) */
static int lt_matmul_epi(int batch, float alpha, ax_mat A, int ta, ax_mat B, int tb, float beta, ax_mat C, int epi,
                         const float *bias, void *pre) {
    plan_key k;
    memset(&k, 0, sizeof k); /* padding too: keys compare with memcmp */
    k.ta = ta;
    k.tb = tb;
    k.m = C.rows;
    k.n = C.cols;
    k.k = ta ? A.rows : A.cols;
    k.lda = A.ld;
    k.ldb = B.ld;
    k.ldc = C.ld;
    k.batch = batch;
    k.dta = A.dtype;
    k.dtb = B.dtype;
    k.dtc = C.dtype;
    k.sa = batch > 1 ? A.stride : 0;
    k.sb = batch > 1 ? B.stride : 0;
    k.sc = batch > 1 ? C.stride : 0;
    k.align = alignment(A.data, B.data, C.data);
    k.epi = epi;
    plan *p = plan_get(&k);
    if (p->refused) return -1;
    if (epi) { /* read by Lt at the call (a captured graph keeps them) */
        AX_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
        if (pre)
            AX_CHECK_CUBLAS(
                cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &pre, sizeof pre));
    }
    AX_CHECK_CUBLAS(cublasLtMatmul(lt, p->op, &alpha, B.data, p->la, A.data, p->lb, &beta, C.data, p->lc, C.data, p->lc,
                                   &p->algo, workspace, WORKSPACE, ax_cuda_stream()));
    return 0;
}

static void lt_matmul(int batch, float alpha, ax_mat A, int ta, ax_mat B, int tb, float beta, ax_mat C) {
    lt_matmul_epi(batch, alpha, A, ta, B, tb, beta, C, 0, NULL, NULL);
}

/* dst (rows x cols, dense) = m widened to fp32, for each of batch matrices */
__global__ static void widen(float *dst, const uint16_t *src, int rows, int cols, int ld, int64_t stride, int batch) {
    size_t per = (size_t)rows * cols, n = per * batch;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t b = i / per, r = i % per / cols, c = i % cols;
        dst[i] = ax_bf16_widen(src[b * stride + r * ld + c]);
    }
}

__global__ static void round_into(uint16_t *dst, const float *src, int rows, int cols, int ld, int64_t stride,
                                  int batch) {
    size_t per = (size_t)rows * cols, n = per * batch;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t b = i / per, r = i % per / cols, c = i % cols;
        dst[b * stride + r * ld + c] = ax_bf16_round(src[i]);
    }
}

static unsigned grid_of(size_t n) {
    size_t b = (n + 255) / 256;
    return (unsigned)(b < 65535 ? b : 65535);
}

static ax_mat as_f32(ax_mat m, int batch, int slot) {
    if (m.dtype == AX_F32) return m;
    size_t n = (size_t)m.rows * m.cols * batch;
    float *d = (float *)ax_cuda_tmp(slot, n * sizeof(float));
    widen<<<grid_of(n), 256, 0, ax_cuda_stream()>>>(d, (const uint16_t *)m.data, m.rows, m.cols, m.ld, m.stride, batch);
    ax_mat w = ax_mat_f32(d, m.rows, m.cols);
    return w;
}

void ax_cuda_gemm(int batch, float alpha, ax_mat A, int ta, ax_mat B, int tb, float beta, ax_mat C) {
    int timed = timing_on && !ax_cuda_capturing(); /* a replay's GEMMs are not timed */
    if (timed) timed_event(0);
    if (A.dtype == AX_BF16 && B.dtype == AX_BF16) {
        lt_matmul(batch, alpha, A, ta, B, tb, beta, C);
    } else {
        ax_mat a = as_f32(A, batch, AX_CUDA_TMP_GEMM_A), b = as_f32(B, batch, AX_CUDA_TMP_GEMM_B);
        if (C.dtype == AX_F32) lt_matmul(batch, alpha, a, ta, b, tb, beta, C);
        else {
            ax_mat c = beta != 0.0f
                           ? as_f32(C, batch, AX_CUDA_TMP_GEMM_C)
                           : ax_mat_f32((float *)ax_cuda_tmp(AX_CUDA_TMP_GEMM_C, (size_t)C.rows * C.cols * batch * 4),
                                        C.rows, C.cols);
            lt_matmul(batch, alpha, a, ta, b, tb, beta, c);
            size_t n = (size_t)C.rows * C.cols * batch;
            round_into<<<grid_of(n), 256, 0, ax_cuda_stream()>>>((uint16_t *)C.data, (const float *)c.data, C.rows,
                                                                 C.cols, C.ld, C.stride, batch);
        }
    }
    AX_CUDA_DONE();
    if (timed) {
        timed_event(1);
        g_flops += 2.0 * batch * C.rows * C.cols * (ta ? A.rows : A.cols);
    }
}

/* Lt's epilogue where A and B share a dtype, C is dense and in their dtype
 * (or fp32 with the bias alone), the vectors 16-byte aligned and Lt has a
 * kernel for it: the layers' GEMMs; other cases as gemm's, then the
 * separate pass on its fp32 output */
void ax_cuda_gemm_epilogue(ax_epilogue e, ax_mat A, int ta, ax_mat B, int tb, ax_mat C, const float *bias, void *pre) {
    /* Lt's aux (pre) needs a leading dimension of a multiple of 8 */
    int native = A.dtype == B.dtype && C.ld == C.cols &&
                 (e == AX_EPI_BIAS ? C.dtype == A.dtype || C.dtype == AX_F32 : C.dtype == A.dtype && C.cols % 8 == 0) &&
                 (uintptr_t)bias % 16 == 0 && (e == AX_EPI_BIAS || (uintptr_t)pre % 16 == 0);
    int timed = native && timing_on && !ax_cuda_capturing();
    if (timed) timed_event(0);
    if (native &&
        lt_matmul_epi(1, 1.0f, A, ta, B, tb, 0.0f, C, (int)e + 1, bias, e == AX_EPI_BIAS_GELU ? pre : NULL) == 0) {
        AX_CUDA_DONE();
        if (timed) {
            timed_event(1);
            g_flops += 2.0 * C.rows * C.cols * (ta ? A.rows : A.cols);
        }
        return;
    }
    if (timed) timed_event(1); /* nothing ran between the events */
    /* gemm stages only a bf16 C in this slot; y is fp32 */
    float *y = (float *)ax_cuda_tmp(AX_CUDA_TMP_GEMM_C, (size_t)C.rows * C.cols * sizeof(float));
    ax_cuda_gemm(1, 1.0f, A, ta, B, tb, 0.0f, ax_mat_f32(y, C.rows, C.cols));
    if (e == AX_EPI_BIAS) ax_cuda_bias_round(y, C.data, C.dtype, bias, C.rows, C.cols);
    else ax_cuda_bias_gelu_forward(C.data, C.dtype, pre, C.dtype, y, bias, C.rows, C.cols);
}

const char *ax_cuda_gemm_kernel(ax_dtype t, int *emulated) {
    static char s[2][400];
    *emulated = 0;
    snprintf(s[t], sizeof s[t], "cuBLASLt %zu %s, fp32 accumulation, on %s", cublasLtGetVersion(),
             t == AX_BF16 ? "bf16" : "fp32 (no TF32)", ax_cuda_device_name());
    return s[t];
}

void ax_cuda_gemm_timing(int on) {
    timed_sum();
    timing_on = on;
    g_seconds = g_flops = 0;
}

void ax_cuda_gemm_stats(double *seconds, double *flops) {
    timed_sum();
    *seconds = g_seconds;
    *flops = g_flops;
}
