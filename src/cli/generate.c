/* Sampling continuations: temperature and top-k over the full vocabulary
 * (gathered over Y), a fresh forward over the last n_positions tokens for each
 * new token, so prompts may run past the context. */
#include "cli/cli.h"
#include "cli/text.h"
#include "util/err.h"
#include <stdio.h>
#include "util/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* next token from the full-vocabulary logits of the last position */
static int32_t pick(const float *logits, int V, double temp, int top_k, ax_rng *r, float *work) {
    if (temp <= 0) {
        int best = 0;
        for (int j = 1; j < V; j++)
            if (logits[j] > logits[best]) best = j;
        return best;
    }
    float thresh = -INFINITY;
    if (top_k > 0 && top_k < V) {
        memcpy(work, logits, V * sizeof(float));
        for (int i = 0; i < top_k; i++) { /* partial selection of the k-th largest */
            int b = i;
            for (int j = i + 1; j < V; j++)
                if (work[j] > work[b]) b = j;
            float tmp = work[i];
            work[i] = work[b];
            work[b] = tmp;
        }
        thresh = work[top_k - 1];
    }
    double mx = -INFINITY, s = 0;
    for (int j = 0; j < V; j++)
        if (logits[j] > mx) mx = logits[j];
    for (int j = 0; j < V; j++) s += logits[j] >= thresh ? exp((logits[j] - mx) / temp) : 0;
    double u = ax_rng_next_uniform(r) * s, c = 0;
    for (int j = 0; j < V; j++) {
        if (logits[j] < thresh) continue;
        c += exp((logits[j] - mx) / temp);
        if (c >= u) return j;
    }
    return V - 1;
}

void ax_cli_generate(ax_gpt *m, int32_t *toks, int n, int max_new, double temp, int top_k, uint64_t seed) {
    size_t bytes = (size_t)m->Vp * sizeof(float);
    float *full = ax_malloc(bytes), *work = ax_malloc(bytes);
    float *gathered = ax_be()->alloc(bytes); /* the collective works on the backend's memory (a GPU's, for NCCL) */
    float *last = ax_be()->alloc((size_t)m->Vl * sizeof(float)); /* the last position's logits, this rank's slice */
    ax_rng r = {seed, 0x5A3B, 0};
    int Tmax = m->cfg.block_size;
    for (int i = 0; i < max_new; i++) {
        int T = n < Tmax ? n : Tmax; /* a sliding window past n_positions */
        ax_gpt_forward(m, toks + n - T, NULL, NULL, 1, T, 0.0f);
        ax_gpt_logits(m, last, T - 1, 1);
        ax_allgather_f32(&m->g->Y, last, gathered, m->Vl);
        ax_be()->copy(full, gathered, bytes);
        toks[n++] = pick(full, m->cfg.vocab_size, temp, top_k, &r, work);
    }
    ax_be()->free(gathered);
    ax_be()->free(last);
    free(full);
    free(work);
}

int ax_cli_show_samples(const char *out) {
    static const char *prompts[] = {"The", "A man", "Life is"};
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    int size, grid[4] = {1, 1, 1, 1};
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    grid[0] = size; /* every rank decodes the same sequence */
    ax_grid g;
    ax_gpt m;
    ax_tokenizer *t;
    AX_TRY(ax_cli_open_model(path, grid, &g, &m));
    if (ax_agree(g.world, ax_cli_tokenizer(&t, NULL, path))) {
        ax_gpt_free(&m);
        ax_grid_free(&g);
        return -1;
    }
    if (g.rank == 0) printf("samples (temperature 0.8, top-k 40):\n");
    for (int i = 0; i < 3; i++) {
        ax_ids p = {0};
        ax_bytes b = {0};
        if (ax_tok_encode(t, prompts[i], strlen(prompts[i]), 0, &p) || !p.n) {
            ax_ids_free(&p);
            continue;
        }
        int n = (int)p.n, k = 60;
        int32_t *toks = ax_malloc((n + k) * sizeof(int32_t));
        memcpy(toks, p.v, n * sizeof(int32_t));
        ax_cli_generate(&m, toks, n, k, 0.8, 40, 1000 + i);
        if (g.rank == 0 && ax_tok_decode(t, toks, n + k, &b) == 0) printf("--- %.*s\n", (int)b.n, b.p);
        free(toks);
        ax_ids_free(&p);
        ax_bytes_free(&b);
    }
    ax_tok_free(t);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    return 0;
}
