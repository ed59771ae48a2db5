/* Comparing a model's flat per-rank vectors (parameters, gradients) with a
 * reference laid out the same way, for the model tests. */
#ifndef AX_TESTS_MODEL_CHECK_H
#define AX_TESTS_MODEL_CHECK_H
#include "model/gpt.h"
#include "util/err.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The grid of "--grid D,X,Y,Z" (else 1,1,1,1) and the fixture model in
 * dir = AXONN_TEST_DATA/name (config.json, model.safetensors) on it; exits on failure. */
static inline ax_gpt_config ax_t_open_fixture(int argc, char **argv, const char *name, ax_grid *g, ax_gpt *m, char *dir,
                                              size_t n) {
    int dims[4] = {1, 1, 1, 1};
    if (argc > 2 && strcmp(argv[1], "--grid") == 0 && ax_grid_parse(argv[2], dims)) ax_err_exit(1);
    if (ax_grid_init(g, MPI_COMM_WORLD, dims[0], dims[1], dims[2], dims[3])) ax_err_exit(1);
    snprintf(dir, n, "%s/%s", ax_t_data(), name);
    char path[1200];
    ax_gpt_config cfg;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (ax_gpt_config_read(&cfg, path)) ax_err_exit(0);
    if (ax_gpt_init(m, &cfg, g)) ax_err_exit(1);
    if (ax_gpt_load(m, dir)) ax_err_exit(0);
    return cfg;
}

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
        if (r > w) {
            w = r;
            *worst = p->name;
        }
    }
    return w;
}
#endif
