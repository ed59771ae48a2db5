#include "train/evaluate.h"
#include "train/step.h"
#include "util/err.h"
#include <stdlib.h>
#include <string.h>

void ax_evaluate(ax_gpt *m, ax_source *src, int64_t nseq, int B, int accum, int T, double *loss_sum, double *ntok) {
    ax_grid *g = m->g;
    int Bl = B / accum / (g->gd * g->gz), Tl = T / g->gc, M = Bl * Tl; /* rows on this rank */
    int32_t *seq = ax_malloc((T + 1) * sizeof(int32_t)), *in = ax_malloc(2 * (size_t)M * sizeof(int32_t));
    int32_t *tg = in + M;
    float *w = ax_malloc(M * sizeof(float)), *ones = ax_malloc(T * sizeof(float)), *zeros = ax_calloc(T, sizeof(float));
    for (int t = 0; t < T; t++) ones[t] = 1.0f;
    double sum = 0, n = 0;
    int64_t nb = (nseq + B - 1) / B;
    for (int64_t b = 0; b < nb; b++)
        for (int a = 0; a < accum; a++) {
            for (int i = 0; i < Bl; i++) {
                int64_t pos = ax_seq_pos(g, B, accum, (int)b, a, i);
                int real = pos < nseq;
                ax_source_get(src, real ? pos : 0, 0, seq);
                n += ax_seq_rows(g, seq, real ? ones : zeros, T, in + i * Tl, tg + i * Tl, w + i * Tl);
            }
            sum += ax_gpt_forward(m, in, tg, w, Bl, T, 0.0f);
        }
    double both[2] = {sum, n};
    ax_allreduce_f64(&g->dz, both, 2);
    *loss_sum = both[0];
    *ntok = both[1];
    free(seq);
    free(in);
    free(w);
    free(ones);
    free(zeros);
}
