/* Rotary position embeddings (Llama): each query and key head is rotated, its
 * first half against its second, by angles pos * f_k for hd/2 frequencies
 * f_k = theta^(-2k/hd), optionally rescaled as Llama 3 does for long contexts.
 * Heads are whole on every rank (split over Y), so it needs no communication.
 *
 *   ax_rope r; ax_rope_init(&r, &cfg, hd);          // cos/sin table for block_size positions
 *   ax_rope_forward(&r, qkv, ld, M, T, NULL, nh);    // nh heads at the start of each row
 *   ax_rope_backward(&r, dqkv, ld, M, T, NULL, nh);
 */
#ifndef AX_NN_ROPE_H
#define AX_NN_ROPE_H
#include <stdint.h>
#include "axonn/axonn.h"

typedef struct {
    int hd, npos;
    float *cs; /* (npos, hd/2, 2): cos and sin */
} ax_rope;

/* c: a config with its defaults resolved (ax_gpt_config_defaults; rope_theta > 0) */
void ax_rope_init(ax_rope *r, const ax_gpt_config *c, int hd);
void ax_rope_free(ax_rope *r);
/* the frequencies, Llama 3 scaling applied (hd/2 of them) */
void ax_rope_freqs(const ax_gpt_config *c, int hd, double *f);
/* in place on nh heads at the start of each of M rows (stride ld); row i at
 * position pos[i], or i % T when pos is NULL */
void ax_rope_forward(const ax_rope *r, float *x, int ld, int M, int T, const int32_t *pos, int nh);
void ax_rope_backward(const ax_rope *r, float *dx, int ld, int M, int T, const int32_t *pos, int nh);
#endif
