/* Vectorisable exp and tanh for the elementwise kernels. glibc's expf/tanhf
 * are scalar calls that dominated GELU and softmax time (over a quarter of a
 * step on the tiny model); these inline forms let the compiler emit SIMD.
 * ax_expf: range reduction x = n ln2 + r (|r| <= ln2/2, Cody-Waite split of
 * ln2), a degree-6 Taylor polynomial for e^r (error < 2e-7 relative, a couple
 * of ulp), and 2^n built in the exponent bits. Inputs are clamped to the range
 * where the result is finite and normal; below it returns ~1e-38, not 0. */
#ifndef AX_BACKEND_CPU_VMATH_H
#define AX_BACKEND_CPU_VMATH_H
#include <stdint.h>
#include <string.h>

static inline float ax_expf(float x) {
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    float n = __builtin_rintf(x * 1.44269504088896341f);   /* round to nearest even: one SIMD instruction */
    float r = x - n * 0.693145751953125f;       /* ln2, high part */
    r = r - n * 1.428606765330187045e-06f;      /* ln2, low part */
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    int32_t e = ((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &e, sizeof s);
    return p * s;
}

/* tanh(x) = 1 - 2 / (exp(2x) + 1); saturates cleanly at +-1 */
static inline float ax_tanhf(float x) {
    return 1.0f - 2.0f / (ax_expf(2.0f * x) + 1.0f);
}
#endif
