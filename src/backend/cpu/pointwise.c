/* Elementwise and per-column kernels: GELU, SwiGLU, rotary embeddings,
 * residual add, bias. */
#include "backend/cpu/cpu.h"
#include "backend/kmath.h"
#include <math.h>
#include <omp.h>

/* row-parallel; each row's elements vectorise (the dtype test is loop-invariant) */
void ax_cpu_bias_gelu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *y, const float *bias, int M,
                              int n) {
    int keep = pre && !(pre == (const void *)y && pt == AX_F32 && !bias);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        size_t o = (size_t)i * n;
        for (int j = 0; j < n; j++) {
            float v = bias ? y[o + j] + bias[j] : y[o + j];
            if (keep) ax_store(pre, pt, o + j, v);
            ax_store(out, ot, o + j, ax_gelu(v));
        }
    }
}

/* threads own column ranges and walk the rows in order, as bias_grad does:
 * db gets the same sums in the same order as the unfused bias_grad */
void ax_cpu_gelu_backward(void *dx, ax_dtype dt, float *db, const void *x, ax_dtype xt, const float *dout, int M,
                          int n) {
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)n * t / nt), c1 = (int)((long)n * (t + 1) / nt);
        for (int i = 0; i < M; i++) {
            size_t o = (size_t)i * n;
            for (int j = c0; j < c1; j++) {
                float d = ax_gelu_grad(ax_load(x, xt, o + j), dout[o + j]);
                ax_store(dx, dt, o + j, d);
                if (db) db[j] += d;
            }
        }
    }
}

void ax_cpu_swiglu_forward(void *out, ax_dtype ot, void *pre, ax_dtype pt, const float *gu, int M, int F) {
    int keep = pre && !(pre == (const void *)gu && pt == AX_F32);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        size_t g = (size_t)i * 2 * F, u = g + F, o = (size_t)i * F;
        for (int j = 0; j < F; j++) {
            if (keep) {
                ax_store(pre, pt, g + j, gu[g + j]);
                ax_store(pre, pt, u + j, gu[u + j]);
            }
            ax_store(out, ot, o + j, ax_swiglu(gu[g + j], gu[u + j]));
        }
    }
}

void ax_cpu_swiglu_backward(void *dgu, ax_dtype dt, const void *gu, ax_dtype gt, const float *dout, int M, int F) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        size_t g = (size_t)i * 2 * F, u = g + F;
        const float *d = dout + (size_t)i * F;
        for (int j = 0; j < F; j++) {
            float dg, du;
            ax_swiglu_grad(ax_load(gu, gt, g + j), ax_load(gu, gt, u + j), d[j], &dg, &du);
            ax_store(dgu, dt, g + j, dg);
            ax_store(dgu, dt, u + j, du);
        }
    }
}

/* Rotates the first and second halves of each head (the Llama/NeoX layout)
 * by the angles of the row's position: cs[pos][k] = (cos, sin) of frequency k.
 * The backward is the rotation by the opposite angle (sign -1). */
void ax_cpu_rope(float *x, int ld, int M, int T, const int32_t *pos, int nh, int hd, const float *cs, float sign) {
    int half = hd / 2;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *c = cs + (size_t)(pos ? pos[i] : i % T) * hd;
        for (int h = 0; h < nh; h++) {
            float *a = x + (size_t)i * ld + h * hd, *b = a + half;
            for (int k = 0; k < half; k++) ax_rope_pair(&a[k], &b[k], c[2 * k], sign * c[2 * k + 1]);
        }
    }
}

void ax_cpu_add(float *y, const float *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void ax_cpu_bias_add(float *y, const float *bias, int M, int n) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < n; j++) y[(size_t)i * n + j] += bias[j];
}

void ax_cpu_bias_round(float *y, void *out, ax_dtype ot, const float *bias, int M, int n) {
    if (out == (void *)y && ot == AX_F32) {
        if (bias) ax_cpu_bias_add(y, bias, M, n);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        size_t o = (size_t)i * n;
        for (int j = 0; j < n; j++) {
            ax_store(out, ot, o + j, bias ? y[o + j] + bias[j] : y[o + j]);
            y[o + j] = ax_load(out, ot, o + j);
        }
    }
}

/* threads own column ranges and walk the rows in order: deterministic sums */
void ax_cpu_bias_grad(float *db, const float *dy, int M, int n) {
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)n * t / nt), c1 = (int)((long)n * (t + 1) / nt);
        for (int i = 0; i < M; i++) {
            const float *r = dy + (size_t)i * n;
            for (int j = c0; j < c1; j++) db[j] += r[j];
        }
    }
}

/* [lo, hi) of one decay, the bf16 copy written for those below nh */
static void adamw_span(float *w, const float *g, float *m, float *v, int64_t lo, int64_t hi, ax_bf16 *wh, int64_t nh,
                       const ax_adamw_step *s, float decay) {
    int64_t mid = wh ? (nh < lo ? lo : nh > hi ? hi : nh) : lo; /* [lo, mid) with the copy */
#pragma omp parallel for schedule(static)
    for (int64_t k = lo; k < mid; k++) {
        ax_adamw_elem(&w[k], g[k], &m[k], &v[k], s->gscale, s->b1, s->b2, s->c1, s->c2, s->lr, s->eps, decay);
        wh[k] = ax_bf16_round(w[k]);
    }
#pragma omp parallel for schedule(static)
    for (int64_t k = mid; k < hi; k++)
        ax_adamw_elem(&w[k], g[k], &m[k], &v[k], s->gscale, s->b1, s->b2, s->c1, s->c2, s->lr, s->eps, decay);
}

/* the decay ranges and the gaps between them, in order */
void ax_cpu_adamw_all(float *w, const float *g, float *m, float *v, int64_t n, const int64_t *ranges, int nr,
                      ax_bf16 *wh, int64_t nh, ax_adamw_step s) {
    int64_t at = 0;
    for (int i = 0; i <= nr && at < n; i++) {
        int64_t lo = i < nr ? ranges[2 * i] : n, hi = i < nr ? ranges[2 * i + 1] : n;
        if (lo > at) adamw_span(w, g, m, v, at, lo, wh, nh, &s, 1.0f);
        if (hi > lo) adamw_span(w, g, m, v, lo, hi, wh, nh, &s, s.decay);
        at = hi;
    }
}
