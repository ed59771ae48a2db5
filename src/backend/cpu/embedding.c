/* Token + position embedding: gather of the owned vocabulary rows, completed over the group. */
#include "backend/cpu/cpu.h"
#include <omp.h>
#include <string.h>

static inline int position(const int32_t *pos, int i, int T) { return pos ? pos[i] : i % T; }

void ax_cpu_embedding_forward(float *out, const int32_t *tokens, const int32_t *pos, const float *wte, const float *wpe,
                              int M, int T, int v0, int Vl, int Cl, const ax_reducer *Y) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        int v = tokens[i] - v0;
        float *o = out + (size_t)i * Cl;
        if (v >= 0 && v < Vl) memcpy(o, wte + (size_t)v * Cl, Cl * sizeof(float));
        else memset(o, 0, Cl * sizeof(float));
    }
    Y->sum(Y->ctx, out, (size_t)M * Cl);
    if (!wpe) return; /* rotary positions act in attention instead */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float *o = out + (size_t)i * Cl;
        const float *p = wpe + (size_t)position(pos, i, T) * Cl;
        for (int j = 0; j < Cl; j++) o[j] += p[j];
    }
}

void ax_cpu_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                               int M, int T, int v0, int Vl, int Cl) {
/* columns are independent: threads split the columns, each row in order,
 * so repeated tokens and positions accumulate deterministically */
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)Cl * t / nt), c1 = (int)((long)Cl * (t + 1) / nt);
        for (int i = 0; i < M; i++) {
            const float *d = dout + (size_t)i * Cl;
            int t = position(pos, i, T);
            if (dwpe && t >= 0 && t < T) { /* backend.h: a row outside [0, T) is skipped, as on CUDA */
                float *p = dwpe + (size_t)t * Cl;
                for (int j = c0; j < c1; j++) p[j] += d[j];
            }
            int v = tokens[i] - v0;
            if (v < 0 || v >= Vl) continue;
            float *w = dwte + (size_t)v * Cl;
            for (int j = c0; j < c1; j++) w[j] += d[j];
        }
    }
}
