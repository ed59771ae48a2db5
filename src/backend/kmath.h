/* The arithmetic of every kernel, written once. Each function is one
 * element's or one row's body; the CPU kernels (backend/cpu) loop over them
 * with OpenMP and the CUDA kernels (backend/cuda) index them by thread, so the
 * CPU test suite checks the very expressions the GPU evaluates. Expressions
 * keep the exact operand order of the CPU code they came from: a different
 * association would change the CPU results in the last bit.
 *
 * AX_HD marks a function for both host and device under nvcc; a C compiler
 * sees plain static inline functions. What may still differ between the two
 * is only what the compilers choose: fused multiply-adds, the order of a
 * reduction over a row (a tree on the GPU, a loop here), and logf/sqrtf of
 * the two math libraries (sqrtf is correctly rounded in both). */
#ifndef AX_BACKEND_KMATH_H
#define AX_BACKEND_KMATH_H
#include "backend/backend.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define AX_HD __host__ __device__
#else
#define AX_HD
#endif

/* ---- exp and tanh ----------------------------------------------------------
 * glibc's expf/tanhf are scalar calls that dominated GELU and softmax time on
 * the CPU (over a quarter of a step on the tiny model); this inline form
 * vectorises, and the GPU runs the same polynomial. Range reduction
 * x = n ln2 + r (|r| <= ln2/2, Cody-Waite split of ln2), a degree-6 Taylor
 * polynomial for e^r (error < 2e-7 relative, a couple of ulp), and 2^n built
 * in the exponent bits. Inputs are clamped to the range where the result is
 * finite and normal; below it returns ~1e-38, not 0. */
static inline AX_HD float ax_expf(float x) {
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
#ifdef __CUDA_ARCH__
    float n = rintf(x * 1.44269504088896341f);
#else
    float n = __builtin_rintf(x * 1.44269504088896341f); /* round to nearest even: one SIMD instruction */
#endif
    float r = x - n * 0.693145751953125f;  /* ln2, high part */
    r = r - n * 1.428606765330187045e-06f; /* ln2, low part */
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    int32_t e = ((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &e, sizeof s);
    return p * s;
}

/* tanh(x) = 1 - 2 / (exp(2x) + 1); saturates cleanly at +-1 */
static inline AX_HD float ax_tanhf(float x) { return 1.0f - 2.0f / (ax_expf(2.0f * x) + 1.0f); }

/* ---- bf16 ------------------------------------------------------------------
 * bf16 is the upper 16 bits of an IEEE fp32 (8-bit exponent, 7-bit mantissa);
 * rounding is to nearest, ties to even, as in PyTorch and oneDNN. */
static inline AX_HD uint16_t ax_bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays (quiet) NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline AX_HD float ax_bf16_widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* element i of an activation stored in dtype t (backend.h): a bf16 one is
 * widened on load and rounded once on store, so a kernel that produces a
 * GEMM input in bf16 gives the bits of an fp32 result cast afterwards */
static inline AX_HD float ax_load(const void *p, ax_dtype t, size_t i) {
    return t == AX_BF16 ? ax_bf16_widen(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static inline AX_HD void ax_store(void *p, ax_dtype t, size_t i, float v) {
    if (t == AX_BF16) ((uint16_t *)p)[i] = ax_bf16_round(v);
    else ((float *)p)[i] = v;
}

/* ---- GELU, tanh form (GPT-2) ------------------------------------------------ */
#define AX_GELU_K 0.7978845608028654f /* sqrt(2/pi) */

static inline AX_HD float ax_gelu(float v) {
    return 0.5f * v * (1.0f + ax_tanhf(AX_GELU_K * (v + 0.044715f * v * v * v)));
}

/* d gelu(v) / dv times dout */
static inline AX_HD float ax_gelu_grad(float v, float dout) {
    float u = AX_GELU_K * (v + 0.044715f * v * v * v);
    float t = ax_tanhf(u);
    float du = AX_GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
    return dout * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
}

/* ---- SiLU and SwiGLU: out = silu(g) * u ------------------------------------ */
static inline AX_HD float ax_sigmoid(float v) { return 1.0f / (1.0f + ax_expf(-v)); }

static inline AX_HD float ax_swiglu(float g, float u) { return g * ax_sigmoid(g) * u; }

/* gradients of ax_swiglu(g, u) times d, into *dg and *du */
static inline AX_HD void ax_swiglu_grad(float g, float u, float d, float *dg, float *du) {
    float s = ax_sigmoid(g), silu = g * s;
    *du = d * silu;
    *dg = d * u * s * (1.0f + g * (1.0f - s));
}

/* ---- LayerNorm and RMSNorm, given the row's statistics ---------------------
 * A row's sums are completed over the X group before these run; sq is the sum
 * of centred squares (LayerNorm) or of squares (RMSNorm) over all C columns. */
static inline AX_HD float ax_norm_rstd(float sq, int C, float eps) { return 1.0f / sqrtf(sq / C + eps); }

static inline AX_HD float ax_layernorm(float x, float m, float rs, float w, float b) { return (x - m) * rs * w + b; }

/* the row's second backward sum, one term: dxhat * xhat with dxhat = dout w */
static inline AX_HD float ax_layernorm_s2(float dxh, float x, float m, float rs) { return dxh * (x - m) * rs; }

/* dx of one element; a = sum(dxhat) / C, c = sum(dxhat xhat) / C */
static inline AX_HD float ax_layernorm_dx(float x, float d, float w, float m, float rs, float a, float c) {
    float xh = (x - m) * rs;
    return rs * (d * w - a - xh * c);
}

/* dw of one element (db is the plain sum of dout) */
static inline AX_HD float ax_layernorm_dw(float d, float x, float m, float rs) { return d * (x - m) * rs; }

static inline AX_HD float ax_rmsnorm(float x, float rs, float w) { return x * rs * w; }

/* y = x r w with r = (mean x^2 + eps)^-1/2: dx = r (dout w - x r^2 mean(dout w x));
 * s is the row's sum of dout w x over all C */
static inline AX_HD float ax_rmsnorm_c(float s, int C, float rs) { return s / C * rs * rs; }
static inline AX_HD float ax_rmsnorm_dx(float x, float d, float w, float rs, float c) { return rs * (d * w - x * c); }
static inline AX_HD float ax_rmsnorm_dw(float d, float x, float rs) { return d * x * rs; }

/* ---- rotary embedding: the pair (a, b) rotated by the angle of (co, si) ---- */
static inline AX_HD void ax_rope_pair(float *a, float *b, float co, float si) {
    float u = *a, v = *b;
    *a = u * co - v * si;
    *b = v * co + u * si;
}

/* ---- softmax (attention) and cross-entropy ---------------------------------
 * Online softmax keeps a running max m and sum l; a new maximum rescales what
 * came before by ax_softmax_rescale. */
static inline AX_HD float ax_attn_scale(int hd) { return 1.0f / sqrtf((float)hd); }
static inline AX_HD float ax_softmax_p(float s, float m) { return ax_expf(s - m); }
static inline AX_HD float ax_softmax_rescale(float m_old, float m_new) { return ax_expf(m_old - m_new); }
static inline AX_HD float ax_lse(float m, float sum) { return m + logf(sum); }
/* A block of keys merged into the result of the same query over other keys
 * (ring attention): the online softmax resumes from that result as from one
 * key of score lse and value out, so the running max is lse, the running sum
 * 1 and the running output out itself. The rescaling of later tiles weighs
 * it by exp(lse - m), and the final ax_lse is the log-sum-exp over both key
 * sets: the exact merge by log-sum-exp, in place, with no second output. */
static inline AX_HD void ax_softmax_resume(float lse, float *m, float *sum) {
    *m = lse;
    *sum = 1.0f;
}

/* The same merge done after the fact (the CUDA kernels, whose running
 * output lives in registers and is written once): the softmax of one query over two disjoint key sets, each normalised
 * on its own with log-sum-exp a and b (ring attention's blocks): the union's log-sum-exp; the parts' outputs then weigh
 * ax_expf(a - merged) and ax_expf(b - merged). A part over no keys (-inf) leaves the other's log-sum-exp; its weight is
 * ax_expf's floor (~1e-38), not 0. */
static inline AX_HD float ax_lse_merge(float a, float b) {
    float m = a > b ? a : b;
    if (m == -INFINITY) return m;
    return m + logf(ax_expf(a - m) + ax_expf(b - m));
}
/* softmax backward through the scores: ds = p (dp - sum_j p_j dp_j) * scale */
static inline AX_HD float ax_softmax_ds(float p, float dp, float d, float scale) { return p * (dp - d) * scale; }

/* cross-entropy of one row: loss = lse - target logit; d loss / d logit = w (softmax - onehot) */
static inline AX_HD float ax_xent_loss(float lse, float target_logit) { return lse - target_logit; }
static inline AX_HD float ax_xent_grad(float logit, float lse, float w) { return w * ax_expf(logit - lse); }
/* the gradient of one valid column, onehot included: w subtracted at the
 * target (elsewhere 0, which leaves the softmax term's bits as they are) */
static inline AX_HD float ax_xent_dlogit(float logit, float lse, float w, int is_target) {
    return ax_xent_grad(logit, lse, w) - (is_target ? w : 0.0f);
}

/* ---- AdamW, one element ---------------------------------------------------- */
static inline AX_HD void ax_adamw_elem(float *w, float g, float *m, float *v, float gscale, float b1, float b2,
                                       float c1, float c2, float lr, float eps, float decay) {
    float gk = g * gscale;
    *m = b1 * *m + (1.0f - b1) * gk;
    *v = b2 * *v + (1.0f - b2) * gk * gk;
    float mh = *m / c1, vh = *v / c2;
    *w = *w * decay - lr * mh / (sqrtf(vh) + eps);
}

/* the decay of element k of a flat buffer: decay inside one of the nr ranges
 * [r[2i], r[2i+1]) (sorted, disjoint), 1 outside (a binary search) */
static inline AX_HD float ax_adamw_decay_at(int64_t k, const int64_t *r, int nr, float decay) {
    int lo = 0, hi = nr;
    while (lo < hi) { /* the first range that ends after k */
        int mid = (lo + hi) / 2;
        if (r[2 * mid + 1] <= k) lo = mid + 1;
        else hi = mid;
    }
    return lo < nr && r[2 * lo] <= k ? decay : 1.0f;
}
#endif
