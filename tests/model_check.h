/* Comparing a model's flat per-rank vectors (parameters, gradients) with a
 * reference laid out the same way, for the model tests. */
#ifndef AX_TESTS_MODEL_CHECK_H
#define AX_TESTS_MODEL_CHECK_H
#include "model/gpt.h"
#include <math.h>
#include <string.h>

/* The worst norm-wise relative difference over the present parameters, each
 * logical element counted once (a collective: ax_gpt_sumsq); skip leaves
 * elements out (NULL: none); *worst names that parameter. tmp: n_local floats. */
static inline double ax_t_worst_param_diff(ax_gpt *m, const float *got, const float *ref, float *tmp,
                                           int (*skip)(const ax_param *, int64_t), const char **worst) {
    double w = 0;
    for (int i = 0; i < m->np; i++) {
        ax_param *p = &m->p[i];
        if (!p->present) continue;
        memset(tmp, 0, m->n_local * sizeof(float));
        for (int64_t k = 0; k < p->numel; k++)
            tmp[p->offset + k] = skip && skip(p, k) ? 0.0f : got[p->offset + k] - ref[p->offset + k];
        double dn = ax_gpt_sumsq(m, tmp);
        for (int64_t k = 0; k < p->numel; k++) tmp[p->offset + k] = skip && skip(p, k) ? 0.0f : ref[p->offset + k];
        double rn = ax_gpt_sumsq(m, tmp), r = sqrt(dn) / (rn > 1e-30 ? sqrt(rn) : 1.0);
        if (r > w) { w = r; *worst = p->name; }
    }
    return w;
}
#endif
