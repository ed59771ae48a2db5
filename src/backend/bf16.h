/* bf16 <-> fp32, element by element: the one definition every backend and test
 * uses. bf16 is the upper 16 bits of an IEEE fp32 (8-bit exponent, 7-bit
 * mantissa); rounding is to nearest, ties to even, as in PyTorch and oneDNN. */
#ifndef AX_BACKEND_BF16_H
#define AX_BACKEND_BF16_H
#include <stdint.h>
#include <string.h>

static inline uint16_t ax_bf16_round(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   /* NaN stays (quiet) NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float ax_bf16_widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4);
    return f;
}
#endif
