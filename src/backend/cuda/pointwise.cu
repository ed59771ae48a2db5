/* Elementwise and per-column kernels: GELU, SwiGLU, rotary embeddings,
 * residual add, bias, AdamW, casts. A thread per element (grid-stride), the
 * element's arithmetic from backend/kmath.h; the bias gradient's column sums
 * (GELU's fused into its backward) from colsum.cuh. */
#include "backend/cuda/cuda.h"
#include "backend/cuda/colsum.cuh"
#include "backend/kmath.h"

#define NT 256
#define EACH(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

static unsigned grid_of(size_t n) {
    size_t b = (n + NT - 1) / NT;
    return (unsigned)(b < 65535 * 8 ? b : 65535 * 8);
}

__global__ static void bias_gelu_k(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *y, const float *bias,
                                   int n, size_t t) {
    EACH(i, t) {
        float v = bias ? y[i] + bias[i % n] : y[i];
        if (pre) ax_store(pre, pt, i, v);
        ax_store(out, ot, i, ax_gelu(v));
    }
}

void ax_cuda_bias_gelu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *y, const float *bias, int M,
                               int n) {
    size_t t = (size_t)M * n;
    if (!t) return;
    if (pre == (const void *)y && pt == AX_F32 && !bias) pre = NULL; /* already there */
    bias_gelu_k<<<grid_of(t), NT, 0, ax_cuda_stream()>>>(out, ot, pre, pt, y, bias, n, t);
    AX_CUDA_DONE();
}

__global__ static void gelu_bwd(void *dx, ax_dtype dt, const void *x, ax_dtype xt, const float *dout, size_t n) {
    EACH(i, n) ax_store(dx, dt, i, ax_gelu_grad(ax_load(x, xt, i), dout[i]));
}

/* with the bias gradient: the column sums' functor computes each element's
 * gradient once, stores it and hands it to the sum (colsum.cuh visits every
 * element exactly once) */
struct gelu_db {
    void *dx;
    ax_dtype dt;
    const void *x;
    ax_dtype xt;
    const float *dout;
    int n;
    __device__ void operator()(int i, int j, float *v) const {
        size_t o = (size_t)i * n + j;
        float d = ax_gelu_grad(ax_load(x, xt, o), dout[o]);
        ax_store(dx, dt, o, d);
        v[0] = d;
    }
};

void ax_cuda_gelu_backward(void *dx, ax_dtype dt, float *db, const void *x, ax_dtype xt, const float *dout, int M,
                           int n) {
    size_t t = (size_t)M * n;
    if (!t) return;
    if (db) ax_colsum<1>(db, NULL, M, n, gelu_db{dx, dt, x, xt, dout, n});
    else gelu_bwd<<<grid_of(t), NT, 0, ax_cuda_stream()>>>(dx, dt, x, xt, dout, t);
    AX_CUDA_DONE();
}

__global__ static void swiglu_fwd(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *gu, int F, size_t n) {
    EACH(k, n) {
        size_t g = k / F * 2 * F + k % F, u = g + F;
        if (pre) {
            ax_store(pre, pt, g, gu[g]);
            ax_store(pre, pt, u, gu[u]);
        }
        ax_store(out, ot, k, ax_swiglu(gu[g], gu[u]));
    }
}

__global__ static void swiglu_bwd(void *dgu, ax_dtype dt, const void *gu, ax_dtype gt, const float *dout, int F,
                                  size_t n) {
    EACH(k, n) {
        size_t g = k / F * 2 * F + k % F, u = g + F;
        float dg, du;
        ax_swiglu_grad(ax_load(gu, gt, g), ax_load(gu, gt, u), dout[k], &dg, &du);
        ax_store(dgu, dt, g, dg);
        ax_store(dgu, dt, u, du);
    }
}

void ax_cuda_swiglu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *gu, int M, int F) {
    size_t n = (size_t)M * F;
    if (!n) return;
    if (pre == (const void *)gu && pt == AX_F32) pre = NULL; /* already there */
    swiglu_fwd<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(out, ot, pre, pt, gu, F, n);
    AX_CUDA_DONE();
}

void ax_cuda_swiglu_backward(void *dgu, ax_dtype dt, const void *gu, ax_dtype gt, const float *dout, int M, int F) {
    size_t n = (size_t)M * F;
    if (!n) return;
    swiglu_bwd<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(dgu, dt, gu, gt, dout, F, n);
    AX_CUDA_DONE();
}

/* one thread per rotated pair: (row, head, frequency) */
__global__ static void rope_k(float *x, int ld, int T, const int32_t *pos, int nh, int hd, const float *cs, float sign,
                              size_t n) {
    int half = hd / 2;
    EACH(t, n) {
        size_t i = t / ((size_t)nh * half);
        int h = (int)(t / half % nh), k = (int)(t % half);
        const float *c = cs + (size_t)(pos ? pos[i] : (int)(i % T)) * hd;
        float *a = x + i * ld + (size_t)h * hd;
        ax_rope_pair(&a[k], &a[k + half], c[2 * k], sign * c[2 * k + 1]);
    }
}

void ax_cuda_rope(float *x, int ld, int M, int T, const int32_t *pos, int nh, int hd, const float *cs, float sign) {
    size_t n = (size_t)M * nh * (hd / 2);
    if (!n) return;
    rope_k<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(x, ld, T, pos, nh, hd, cs, sign, n);
    AX_CUDA_DONE();
}

__global__ static void add_k(float *y, const float *x, size_t n) { EACH(i, n) y[i] += x[i]; }
__global__ static void bias_add_k(float *y, const float *bias, int m, size_t n) { EACH(i, n) y[i] += bias[i % m]; }

void ax_cuda_add(float *y, const float *x, size_t n) {
    if (!n) return;
    add_k<<<grid_of(n), NT, 0, ax_cuda_stream()>>>(y, x, n);
    AX_CUDA_DONE();
}

void ax_cuda_bias_add(float *y, const float *bias, int M, int n) {
    size_t t = (size_t)M * n;
    if (!t) return;
    bias_add_k<<<grid_of(t), NT, 0, ax_cuda_stream()>>>(y, bias, n, t);
    AX_CUDA_DONE();
}

__global__ static void bias_round_k(float *y, void *out, ax_dtype ot, const float *bias, int m, size_t n) {
    EACH(i, n) {
        ax_store(out, ot, i, bias ? y[i] + bias[i % m] : y[i]);
        y[i] = ax_load(out, ot, i);
    }
}

void ax_cuda_bias_round(float *y, void *out, ax_dtype ot, const float *bias, int M, int n) {
    size_t t = (size_t)M * n;
    if (!t) return;
    if (out == (void *)y && ot == AX_F32) {
        if (bias) ax_cuda_bias_add(y, bias, M, n);
        return;
    }
    bias_round_k<<<grid_of(t), NT, 0, ax_cuda_stream()>>>(y, out, ot, bias, n, t);
    AX_CUDA_DONE();
}

/* column sums in parallel over the rows, in a fixed order (colsum.cuh) */
struct bias_dy {
    const float *dy;
    int n;
    __device__ void operator()(int i, int j, float *v) const { v[0] = dy[(size_t)i * n + j]; }
};

void ax_cuda_bias_grad(float *db, const float *dy, int M, int n) {
    if (!n || !M) return;
    ax_colsum<1>(db, NULL, M, n, bias_dy{dy, n});
    AX_CUDA_DONE();
}

__global__ static void adamw_all_k(float *w, const float *g, float *m, float *v, size_t n, const int64_t *ranges,
                                   int nr, uint16_t *wh, size_t nh, ax_adamw_step s) {
    EACH(k, n) {
        float decay = ax_adamw_decay_at((int64_t)k, ranges, nr, s.decay);
        ax_adamw_elem(&w[k], g[k], &m[k], &v[k], s.gscale, s.b1, s.b2, s.c1, s.c2, s.lr, s.eps, decay);
        if (k < nh) wh[k] = ax_bf16_round(w[k]);
    }
}

void ax_cuda_adamw_all(float *w, const float *g, float *m, float *v, int64_t n, const int64_t *ranges, int nr,
                       ax_bf16 *wh, int64_t nh, ax_adamw_step s) {
    if (n <= 0) return;
    adamw_all_k<<<grid_of((size_t)n), NT, 0, ax_cuda_stream()>>>(w, g, m, v, (size_t)n, ranges, nr, wh,
                                                                 wh ? (size_t)nh : 0, s);
    AX_CUDA_DONE();
}

__global__ static void to_bf16(uint16_t *d, const float *s, size_t n) { EACH(i, n) d[i] = ax_bf16_round(s[i]); }
__global__ static void to_f32(float *d, const uint16_t *s, size_t n) { EACH(i, n) d[i] = ax_bf16_widen(s[i]); }

void ax_cuda_cast(void *dst, ax_dtype dt, const void *src, ax_dtype st, size_t n) {
    if (!n) return;
    if (dt == st) {
        if (dst != src)
            AX_CHECK_CUDA(cudaMemcpyAsync(dst, src, n * ax_dtype_size(dt), cudaMemcpyDefault, ax_cuda_stream()));
    } else if (dt == AX_BF16) {
        to_bf16<<<grid_of(n), NT, 0, ax_cuda_stream()>>>((uint16_t *)dst, (const float *)src, n);
    } else {
        to_f32<<<grid_of(n), NT, 0, ax_cuda_stream()>>>((float *)dst, (const uint16_t *)src, n);
    }
    AX_CUDA_DONE();
}

/* the gradient norm's sum of squares: a double per block, then one block
 * over those (no atomics: the same bits every run) */
#define SQ_BLOCKS 1024
/* the ranges of one sumsq call, by value (a launch's parameters): a range's
 * blocks are blockIdx.y's row of the grid */
typedef struct {
    const float *x[AX_SUMSQ_RANGES];
    size_t len[AX_SUMSQ_RANGES];
} sq_ranges;

/* range r = blockIdx.y in nb = min(its blocks, SQ_BLOCKS) blocks, each
 * thread's strided partial, then a fixed tree: part[r * SQ_BLOCKS + block]
 * (blocks past nb leave their zero) */
__global__ static void sumsq_k(double *part, sq_ranges R) {
    __shared__ double sh[NT];
    size_t n = R.len[blockIdx.y], nb = (n + NT - 1) / NT < SQ_BLOCKS ? (n + NT - 1) / NT : SQ_BLOCKS;
    if (blockIdx.x >= nb) return;
    const float *x = R.x[blockIdx.y];
    double s = 0;
    for (size_t i = blockIdx.x * (size_t)NT + threadIdx.x; i < n; i += nb * NT) s += (double)x[i] * x[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int o = NT / 2; o; o >>= 1) {
        if (threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[(size_t)blockIdx.y * SQ_BLOCKS + blockIdx.x] = sh[0];
}

__global__ static void sumsq_sum(double *out, const double *part, unsigned n) {
    __shared__ double sh[NT];
    double s = 0;
    for (unsigned i = threadIdx.x; i < n; i += NT) s += part[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int o = NT / 2; o; o >>= 1) {
        if (threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = sh[0];
}

/* one block: each thread's strided partial in double, then a fixed tree
 * (the same bits every run); a micro-batch's losses are a few thousand rows */
__global__ static void wsum_k(double *acc, const float *x, const float *w, size_t n) {
    __shared__ double sh[NT];
    double s = 0;
    for (size_t i = threadIdx.x; i < n; i += NT) s += (double)(w ? w[i] : 1.0f) * x[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int o = NT / 2; o; o >>= 1) {
        if (threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) *acc += sh[0];
}

void ax_cuda_wsum(double *acc, const float *x, const float *w, int64_t n) {
    wsum_k<<<1, NT, 0, ax_cuda_stream()>>>(acc, x, w, n > 0 ? (size_t)n : 0);
    AX_CUDA_DONE();
}

/* SQ_BLOCKS partials per range (zeros past a short range's blocks), summed in
 * order by one block, and one copy back for all the ranges */
double ax_cuda_sumsq(int n, const float *const *x, const size_t *len) {
    if (n < 0 || n > AX_SUMSQ_RANGES) ax_fatal(__FILE__, __LINE__, "sumsq: %d ranges, at most %d", n, AX_SUMSQ_RANGES);
    size_t np = (size_t)n * SQ_BLOCKS;
    double *part = (double *)ax_cuda_tmp(AX_CUDA_TMP_SUMSQ, (np + 1) * sizeof(double)), s;
    cudaStream_t st = ax_cuda_stream();
    AX_CHECK_CUDA(cudaMemsetAsync(part, 0, np * sizeof(double), st));
    sq_ranges R;
    size_t most = 0;
    for (int r = 0; r < n; r++) {
        R.x[r] = x[r];
        R.len[r] = len[r];
        if (len[r] > most) most = len[r];
    }
    unsigned nb = grid_of(most) < SQ_BLOCKS ? grid_of(most) : SQ_BLOCKS;
    if (n && nb) sumsq_k<<<dim3(nb, n), NT, 0, st>>>(part, R);
    sumsq_sum<<<1, NT, 0, st>>>(part + np, part, (unsigned)np);
    AX_CUDA_DONE();
    ax_cuda_copy(&s, part + np, sizeof s);
    return s;
}
