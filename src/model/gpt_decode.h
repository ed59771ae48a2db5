/* Incremental decoding with a key/value cache: each new token costs one row
 * through the model instead of a forward over the whole prefix. Rows are
 * independent sequences of their own lengths; on a grid every rank runs every
 * row (tensor-parallel over X and Y like training). Buffers are the
 * backend's memory, so a device backend decodes on the device; the host
 * reaches them through the backend's copy (the prompt's keys and values, the
 * lengths, the tokens in, the logits out).
 *
 *   ax_kvcache c; ax_kv_init(&c, m, B, Tmax);
 *   for (b...) ax_kv_prefill(&c, m, b, prompt_b, n_b);    // logits of the last prompt token
 *   for (step...) { pick next[b] from c.logits; ax_kv_step(&c, m, next, B); }
 */
#ifndef AX_MODEL_GPT_DECODE_H
#define AX_MODEL_GPT_DECODE_H
#include "model/gpt.h"

typedef struct {
    int B, Tmax;
    float *k, *v; /* (L, B, KVl, Tmax, hd) */
    int *len;     /* cached tokens per row, where the kernels read them; len_host: the host's copy */
    int *len_host;
    int32_t *tokens; /* the step's tokens, where the kernels read them */
    int nb;          /* rows of the step in progress */
    float *mem;      /* one allocation for the step buffers below */
    float *x, *ln, *qkv, *atty, *tmp, *fch, *fch_act, *mean, *rstd, *scratch;
    float *logits;                      /* (B, Vl): this rank's vocabulary slice (the backend's memory) */
    ax_bf16 *ln_h, *atty_h, *fch_act_h; /* GEMM inputs rounded, when the model runs bf16 */
} ax_kvcache;

void ax_kv_init(ax_kvcache *c, ax_gpt *m, int B, int Tmax);
void ax_kv_free(ax_kvcache *c);
/* Row b starts over with prompt[0..n) (1 <= n <= Tmax). */
void ax_kv_prefill(ax_kvcache *c, ax_gpt *m, int b, const int32_t *prompt, int n);
/* Appends tokens[b] to rows 0..nb-1 (each row's length < Tmax). */
void ax_kv_step(ax_kvcache *c, ax_gpt *m, const int32_t *tokens, int nb);
/* Greedy choice per row over the whole vocabulary (collective over Y). */
void ax_kv_argmax(ax_kvcache *c, ax_gpt *m, int nb, int32_t *out);
#endif
