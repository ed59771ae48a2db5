#include "nn/rope.h"
#include "backend/backend.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>

/* Llama 3 (rope_scaling type "llama3"): wavelengths longer than the original
 * context / low_freq_factor are slowed by factor, shorter than context /
 * high_freq_factor kept, and those between blended smoothly. */
void ax_rope_freqs(const ax_gpt_config *c, int hd, double *f) {
    double theta = c->rope_theta; /* resolved (ax_gpt_config_defaults) */
    for (int k = 0; k < hd / 2; k++) {
        f[k] = pow(theta, -2.0 * k / hd);
        if (c->rope_factor <= 0) continue;
        double lo = c->rope_orig_pos / c->rope_low_freq, hi = c->rope_orig_pos / c->rope_high_freq;
        double wl = 2 * M_PI / f[k];
        if (wl > lo) f[k] /= c->rope_factor;
        else if (wl >= hi) {
            double s = (c->rope_orig_pos / wl - c->rope_low_freq) / (c->rope_high_freq - c->rope_low_freq);
            f[k] = (1 - s) * f[k] / c->rope_factor + s * f[k];
        }
    }
}

void ax_rope_init(ax_rope *r, const ax_gpt_config *c, int hd) {
    r->hd = hd;
    r->npos = c->block_size;
    size_t bytes = (size_t)r->npos * hd * sizeof(float);
    r->cs = ax_be()->alloc(bytes); /* where the kernels read it */
    float *cs = ax_host_view(r->cs, bytes, 0);
    double *f = ax_malloc(hd / 2 * sizeof(double));
    ax_rope_freqs(c, hd, f);
    for (int p = 0; p < r->npos; p++)
        for (int k = 0; k < hd / 2; k++) {
            cs[((size_t)p * hd / 2 + k) * 2] = (float)cos(p * f[k]);
            cs[((size_t)p * hd / 2 + k) * 2 + 1] = (float)sin(p * f[k]);
        }
    free(f);
    ax_host_release(cs, r->cs, bytes, 1);
}

void ax_rope_free(ax_rope *r) {
    ax_be()->free(r->cs);
    r->cs = NULL;
}

void ax_rope_forward(const ax_rope *r, float *x, int ld, int M, int T, const int32_t *pos, int nh) {
    ax_be()->rope(x, ld, M, T, pos, nh, r->hd, r->cs, 1.0f);
}

void ax_rope_backward(const ax_rope *r, float *dx, int ld, int M, int T, const int32_t *pos, int nh) {
    ax_be()->rope(dx, ld, M, T, pos, nh, r->hd, r->cs, -1.0f);
}
