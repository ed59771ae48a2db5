/* Conversions between fp32 and bf16, and transposes (for GEMM layout tuning). */
#include "backend/bf16.h"
#include "backend/cpu/cpu.h"
#include <string.h>

void ax_cpu_cast(void *dst, ax_dtype dt, const void *src, ax_dtype st, size_t n) {
    if (dt == st) {
        if (dst != src) memmove(dst, src, n * ax_dtype_size(dt));
        return;
    }
    if (dt == AX_BF16) {
        uint16_t *d = dst;
        const float *s = src;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (size_t i = 0; i < n; i++) d[i] = ax_bf16_round(s[i]);
    } else {
        float *d = dst;
        const uint16_t *s = src;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (size_t i = 0; i < n; i++) d[i] = ax_bf16_widen(s[i]);
    }
}

static inline float get(ax_mat m, size_t i) {
    return m.dtype == AX_BF16 ? ax_bf16_widen(((const uint16_t *)m.data)[i]) : ((const float *)m.data)[i];
}

static inline void put(ax_mat m, size_t i, float v) {
    if (m.dtype == AX_BF16) ((uint16_t *)m.data)[i] = ax_bf16_round(v);
    else ((float *)m.data)[i] = v;
}

/* in 32 x 32 tiles, so the rows read and the rows written both stay in cache */
void ax_cpu_transpose(ax_mat dst, ax_mat src, float beta) {
    enum { TILE = 32 };
    int R = src.rows, C = src.cols;
#pragma omp parallel for collapse(2) schedule(static) if ((int64_t)R * C > 65536)
    for (int r0 = 0; r0 < R; r0 += TILE)
        for (int c0 = 0; c0 < C; c0 += TILE)
            for (int c = c0; c < c0 + TILE && c < C; c++)
                for (int r = r0; r < r0 + TILE && r < R; r++) {
                    size_t d = (size_t)c * dst.ld + r;
                    float v = get(src, (size_t)r * src.ld + c);
                    put(dst, d, beta != 0.0f ? v + beta * get(dst, d) : v);
                }
}
