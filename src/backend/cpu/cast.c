/* Conversions between fp32 and bf16. */
#include "backend/bf16.h"
#include "backend/cpu/cpu.h"
#include <string.h>

void ax_cpu_cast(void *dst, ax_dtype dt, const void *src, ax_dtype st, size_t n) {
    if (dt == st) { if (dst != src) memmove(dst, src, n * ax_dtype_size(dt)); return; }
    if (dt == AX_BF16) {
        uint16_t *d = dst; const float *s = src;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (size_t i = 0; i < n; i++) d[i] = ax_bf16_round(s[i]);
    } else {
        float *d = dst; const uint16_t *s = src;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (size_t i = 0; i < n; i++) d[i] = ax_bf16_widen(s[i]);
    }
}
