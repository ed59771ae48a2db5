#include "nn/embedding.h"
#include <string.h>
#include <omp.h>

void ax_embedding_forward(ax_comm *Y, float *out, const int32_t *tokens, const int32_t *pos,
                          const float *wte_block, const float *wpe, int M, int T, int v0, int Vl, int Cl) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        int v = tokens[i] - v0;
        float *o = out + (size_t)i * Cl;
        if (v >= 0 && v < Vl) memcpy(o, wte_block + (size_t)v * Cl, Cl * sizeof(float));
        else memset(o, 0, Cl * sizeof(float));
    }
    ax_allreduce_f32(Y, out, (size_t)M * Cl);
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float *o = out + (size_t)i * Cl;
        const float *p = wpe + (size_t)(pos ? pos[i] : i % T) * Cl;
        for (int j = 0; j < Cl; j++) o[j] += p[j];
    }
}

void ax_embedding_backward(float *dwte_block, float *dwpe, const float *dout, const int32_t *tokens,
                           int M, int T, int v0, int Vl, int Cl) {
    /* columns are independent: threads split the columns, each row in order,
     * so repeated tokens accumulate deterministically */
    #pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)Cl * t / nt), c1 = (int)((long)Cl * (t + 1) / nt);
        for (int i = 0; i < M; i++) {
            const float *d = dout + (size_t)i * Cl;
            float *p = dwpe + (size_t)(i % T) * Cl;
            for (int j = c0; j < c1; j++) p[j] += d[j];
            int v = tokens[i] - v0;
            if (v < 0 || v >= Vl) continue;
            float *w = dwte_block + (size_t)v * Cl;
            for (int j = c0; j < c1; j++) w[j] += d[j];
        }
    }
}
