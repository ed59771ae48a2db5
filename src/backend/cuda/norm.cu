/* LayerNorm and RMSNorm over rows split in columns: one block per row for the
 * row sums, the group's reducer between passes (NCCL, on device memory),
 * per-element bodies from backend/kmath.h. Parameter gradients: column
 * sums parallel over the rows in a fixed order (colsum.cuh), deterministic.
 * Where the group is this rank alone (the reducer's `single`), a row's
 * passes run in one kernel, the same sums between block barriers instead of
 * between launches: the same bits as the kernel per pass, a launch each
 * (forward) and the row-sum kernel saved (backward). */
#include "backend/cuda/cuda.h"
#include "backend/cuda/colsum.cuh"
#include "backend/kmath.h"

#define NT 256

/* the fused residual, x = (x + bias) + r stored back (when either is given),
 * and the row's sum (sq: of squares) */
__device__ static float row_sum_of(float *x, const float *bias, const float *res, int Cl, int sq) {
    float *r = x + (size_t)blockIdx.x * Cl;
    const float *rr = res ? res + (size_t)blockIdx.x * Cl : NULL;
    float a = 0;
    for (int j = threadIdx.x; j < Cl; j += NT) {
        float v = r[j];
        if (bias || rr) {
            if (bias) v += bias[j];
            if (rr) v += rr[j];
            r[j] = v;
        }
        if (sq) a += v * v; /* as the unfused sums were written (nvcc contracts the same) */
        else a += v;
    }
    return ax_block_sum(a);
}

__global__ static void row_sum(float *s, float *x, const float *bias, const float *res, int Cl, int sq) {
    float a = row_sum_of(x, bias, res, Cl, sq);
    if (threadIdx.x == 0) s[blockIdx.x] = a;
}

/* the row's sum of squares about the mean m (its block's barriers order the
 * reads of x before any later write) */
__device__ static float centred_of(const float *x, float m, int Cl) {
    const float *r = x + (size_t)blockIdx.x * Cl;
    float a = 0;
    for (int j = threadIdx.x; j < Cl; j += NT) {
        float d = r[j] - m;
        a += d * d;
    }
    return ax_block_sum(a);
}

/* mean = sum / C in place; sq = sum of centred squares */
__global__ static void ln_centred(float *mean, float *sq, const float *x, int Cl, int C) {
    float m = mean[blockIdx.x] / C,
          a = centred_of(x, m, Cl); /* its barriers order every read of mean before the write */
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = m;
        sq[blockIdx.x] = a;
    }
}

__device__ static void ln_out_of(void *out, ax_dtype ot, const float *x, const float *w, const float *b, float m,
                                 float rs, int Cl) {
    size_t o = (size_t)blockIdx.x * Cl;
    for (int j = threadIdx.x; j < Cl; j += NT) ax_store(out, ot, o + j, ax_layernorm(x[o + j], m, rs, w[j], b[j]));
}

__global__ static void ln_out(void *out, ax_dtype ot, float *rstd, const float *x, const float *w, const float *b,
                              const float *mean, const float *sq, int Cl, int C, float eps) {
    float m = mean[blockIdx.x], rs = ax_norm_rstd(sq[blockIdx.x], C, eps);
    if (threadIdx.x == 0) rstd[blockIdx.x] = rs;
    ln_out_of(out, ot, x, w, b, m, rs, Cl);
}

/* the three passes of a row in one kernel (a group of one rank) */
__global__ static void ln_fused(void *out, ax_dtype ot, float *mean, float *rstd, float *x, const float *bias,
                                const float *res, const float *w, const float *b, int Cl, int C, float eps) {
    float m = row_sum_of(x, bias, res, Cl, 0) / C, rs = ax_norm_rstd(centred_of(x, m, Cl), C, eps);
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = m;
        rstd[blockIdx.x] = rs;
    }
    ln_out_of(out, ot, x, w, b, m, rs, Cl);
}

void ax_cuda_layernorm_forward(void *out, ax_dtype ot, float *mean, float *rstd, float *x, const float *bias,
                               const float *r, const float *w, const float *b, int M, int Cl, int C, float eps,
                               float *scratch, const ax_reducer *X) {
    if (M == 0) return;
    cudaStream_t s = ax_cuda_stream();
    if (X->single) {
        ln_fused<<<M, NT, 0, s>>>(out, ot, mean, rstd, x, bias, r, w, b, Cl, C, eps);
        AX_CUDA_DONE();
        return;
    }
    row_sum<<<M, NT, 0, s>>>(mean, x, bias, r, Cl, 0);
    AX_CUDA_DONE();
    X->sum(X->ctx, mean, M);
    ln_centred<<<M, NT, 0, s>>>(mean, scratch, x, Cl, C);
    AX_CUDA_DONE();
    X->sum(X->ctx, scratch, M);
    ln_out<<<M, NT, 0, s>>>(out, ot, rstd, x, w, b, mean, scratch, Cl, C, eps);
    AX_CUDA_DONE();
}

__device__ static void ln_back_sums_of(float *s1, float *s2, const float *dout, const float *x, const float *w, float m,
                                       float rs, int Cl) {
    size_t o = (size_t)blockIdx.x * Cl;
    float a = 0, c = 0;
    for (int j = threadIdx.x; j < Cl; j += NT) {
        float dxh = dout[o + j] * w[j];
        a += dxh;
        c += ax_layernorm_s2(dxh, x[o + j], m, rs);
    }
    *s1 = ax_block_sum(a);
    *s2 = ax_block_sum(c);
}

__global__ static void ln_back_sums(float *s12, const float *dout, const float *x, const float *w, const float *mean,
                                    const float *rstd, int Cl) {
    float s1, s2;
    ln_back_sums_of(&s1, &s2, dout, x, w, mean[blockIdx.x], rstd[blockIdx.x], Cl);
    if (threadIdx.x == 0) {
        s12[2 * blockIdx.x] = s1;
        s12[2 * blockIdx.x + 1] = s2;
    }
}

__device__ static void ln_back_dx_of(float *dx, const float *dout, const float *x, const float *w, float m, float rs,
                                     float a, float c, int Cl) {
    size_t o = (size_t)blockIdx.x * Cl;
    for (int j = threadIdx.x; j < Cl; j += NT) dx[o + j] += ax_layernorm_dx(x[o + j], dout[o + j], w[j], m, rs, a, c);
}

__global__ static void ln_back_dx(float *dx, const float *dout, const float *x, const float *w, const float *mean,
                                  const float *rstd, const float *s12, int Cl, int C) {
    ln_back_dx_of(dx, dout, x, w, mean[blockIdx.x], rstd[blockIdx.x], s12[2 * blockIdx.x] / C,
                  s12[2 * blockIdx.x + 1] / C, Cl);
}

/* both passes of a row in one kernel (a group of one rank) */
__global__ static void ln_back_fused(float *dx, const float *dout, const float *x, const float *w, const float *mean,
                                     const float *rstd, int Cl, int C) {
    float m = mean[blockIdx.x], rs = rstd[blockIdx.x], s1, s2;
    ln_back_sums_of(&s1, &s2, dout, x, w, m, rs, Cl);
    ln_back_dx_of(dx, dout, x, w, m, rs, s1 / C, s2 / C, Cl);
}

/* dw and db of one element, for ax_colsum */
struct ln_dwdb {
    const float *dout, *x, *mean, *rstd;
    int Cl;
    __device__ void operator()(int i, int j, float *v) const {
        size_t o = (size_t)i * Cl + j;
        float d = dout[o];
        v[0] = ax_layernorm_dw(d, x[o], mean[i], rstd[i]);
        v[1] = d;
    }
};

void ax_cuda_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                                const float *mean, const float *rstd, int M, int Cl, int C, float *scratch,
                                const ax_reducer *X) {
    if (M == 0) return;
    cudaStream_t s = ax_cuda_stream();
    if (X->single) ln_back_fused<<<M, NT, 0, s>>>(dx, dout, x, w, mean, rstd, Cl, C);
    else {
        ln_back_sums<<<M, NT, 0, s>>>(scratch, dout, x, w, mean, rstd, Cl);
        AX_CUDA_DONE();
        X->sum(X->ctx, scratch, 2 * (size_t)M);
        ln_back_dx<<<M, NT, 0, s>>>(dx, dout, x, w, mean, rstd, scratch, Cl, C);
    }
    ax_colsum<2>(dw, db, M, Cl, ln_dwdb{dout, x, mean, rstd, Cl});
    AX_CUDA_DONE();
}

__device__ static void rms_out_of(void *out, ax_dtype ot, const float *x, const float *w, float rs, int Cl) {
    size_t o = (size_t)blockIdx.x * Cl;
    for (int j = threadIdx.x; j < Cl; j += NT) ax_store(out, ot, o + j, ax_rmsnorm(x[o + j], rs, w[j]));
}

__global__ static void rms_out(void *out, ax_dtype ot, float *rstd, const float *x, const float *w, int Cl, int C,
                               float eps) {
    float rs = ax_norm_rstd(rstd[blockIdx.x], C, eps);
    __syncthreads(); /* every thread has read the sum before it becomes rstd */
    if (threadIdx.x == 0) rstd[blockIdx.x] = rs;
    rms_out_of(out, ot, x, w, rs, Cl);
}

/* both passes of a row in one kernel (a group of one rank) */
__global__ static void rms_fused(void *out, ax_dtype ot, float *rstd, float *x, const float *bias, const float *res,
                                 const float *w, int Cl, int C, float eps) {
    float rs = ax_norm_rstd(row_sum_of(x, bias, res, Cl, 1), C, eps);
    if (threadIdx.x == 0) rstd[blockIdx.x] = rs;
    rms_out_of(out, ot, x, w, rs, Cl);
}

void ax_cuda_rmsnorm_forward(void *out, ax_dtype ot, float *rstd, float *x, const float *bias, const float *r,
                             const float *w, int M, int Cl, int C, float eps, const ax_reducer *X) {
    if (M == 0) return;
    cudaStream_t s = ax_cuda_stream();
    if (X->single) {
        rms_fused<<<M, NT, 0, s>>>(out, ot, rstd, x, bias, r, w, Cl, C, eps);
        AX_CUDA_DONE();
        return;
    }
    row_sum<<<M, NT, 0, s>>>(rstd, x, bias, r, Cl, 1);
    AX_CUDA_DONE();
    X->sum(X->ctx, rstd, M);
    rms_out<<<M, NT, 0, s>>>(out, ot, rstd, x, w, Cl, C, eps);
    AX_CUDA_DONE();
}

__device__ static float rms_back_sum_of(const float *dout, const float *x, const float *w, int Cl) {
    size_t o = (size_t)blockIdx.x * Cl;
    float a = 0;
    for (int j = threadIdx.x; j < Cl; j += NT) a += dout[o + j] * w[j] * x[o + j];
    return ax_block_sum(a);
}

__global__ static void rms_back_sum(float *sc, const float *dout, const float *x, const float *w, int Cl) {
    float a = rms_back_sum_of(dout, x, w, Cl);
    if (threadIdx.x == 0) sc[blockIdx.x] = a;
}

__device__ static void rms_back_dx_of(float *dx, const float *dout, const float *x, const float *w, float rs, float c,
                                      int Cl) {
    size_t o = (size_t)blockIdx.x * Cl;
    for (int j = threadIdx.x; j < Cl; j += NT) dx[o + j] += ax_rmsnorm_dx(x[o + j], dout[o + j], w[j], rs, c);
}

__global__ static void rms_back_dx(float *dx, const float *dout, const float *x, const float *w, const float *rstd,
                                   const float *sc, int Cl, int C) {
    float rs = rstd[blockIdx.x];
    rms_back_dx_of(dx, dout, x, w, rs, ax_rmsnorm_c(sc[blockIdx.x], C, rs), Cl);
}

/* both passes of a row in one kernel (a group of one rank) */
__global__ static void rms_back_fused(float *dx, const float *dout, const float *x, const float *w, const float *rstd,
                                      int Cl, int C) {
    float rs = rstd[blockIdx.x];
    rms_back_dx_of(dx, dout, x, w, rs, ax_rmsnorm_c(rms_back_sum_of(dout, x, w, Cl), C, rs), Cl);
}

struct rms_dw {
    const float *dout, *x, *rstd;
    int Cl;
    __device__ void operator()(int i, int j, float *v) const {
        size_t o = (size_t)i * Cl + j;
        v[0] = ax_rmsnorm_dw(dout[o], x[o], rstd[i]);
    }
};

void ax_cuda_rmsnorm_backward(float *dx, float *dw, const float *dout, const float *x, const float *w,
                              const float *rstd, int M, int Cl, int C, float *scratch, const ax_reducer *X) {
    if (M == 0) return;
    cudaStream_t s = ax_cuda_stream();
    if (X->single) rms_back_fused<<<M, NT, 0, s>>>(dx, dout, x, w, rstd, Cl, C);
    else {
        rms_back_sum<<<M, NT, 0, s>>>(scratch, dout, x, w, Cl);
        AX_CUDA_DONE();
        X->sum(X->ctx, scratch, M);
        rms_back_dx<<<M, NT, 0, s>>>(dx, dout, x, w, rstd, scratch, Cl, C);
    }
    ax_colsum<1>(dw, NULL, M, Cl, rms_dw{dout, x, rstd, Cl});
    AX_CUDA_DONE();
}
