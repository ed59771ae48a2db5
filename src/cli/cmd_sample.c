#include "cli/args.h"
#include "cli/cli.h"
#include "cli/text.h"
#include "util/err.h"
#include "util/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "usage: axonn sample --model MODEL.safetensors (--prompt TEXT | --prompt-tokens 1,2,3) [options]\n\n"
    "Continues a prompt by sampling (temperature, top-k). With --prompt the text is encoded\n"
    "and the continuation decoded (tokenizer.json beside the model, or --tokenizer);\n"
    "with --prompt-tokens the ids are printed.";

/* next token from the full-vocabulary logits of the last position */
static int32_t pick(const float *logits, int V, double temp, int top_k, ax_rng *r, float *work) {
    if (temp <= 0) {
        int best = 0;
        for (int j = 1; j < V; j++) if (logits[j] > logits[best]) best = j;
        return best;
    }
    float thresh = -INFINITY;
    if (top_k > 0 && top_k < V) {
        memcpy(work, logits, V * sizeof(float));
        for (int i = 0; i < top_k; i++) {      /* partial selection of the k-th largest */
            int b = i;
            for (int j = i + 1; j < V; j++) if (work[j] > work[b]) b = j;
            float tmp = work[i]; work[i] = work[b]; work[b] = tmp;
        }
        thresh = work[top_k - 1];
    }
    double mx = -INFINITY, s = 0;
    for (int j = 0; j < V; j++) if (logits[j] > mx) mx = logits[j];
    for (int j = 0; j < V; j++) s += logits[j] >= thresh ? exp((logits[j] - mx) / temp) : 0;
    double u = ax_rng_next_uniform(r) * s, c = 0;
    for (int j = 0; j < V; j++) {
        if (logits[j] < thresh) continue;
        c += exp((logits[j] - mx) / temp);
        if (c >= u) return j;
    }
    return V - 1;
}

int ax_cmd_sample(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *text = NULL, *tok = NULL;
    int max_new = 64, top_k = 0, threads = 0, grid[4] = {1, 1, 1, 1};
    double temp = 1.0;
    uint64_t seed = 1337;
    ax_opt opts[] = {
        {"model", AX_OPT_STR, &model, "MODEL", "model.safetensors (config.json beside it)"},
        {"prompt", AX_OPT_STR, &text, "TEXT", "prompt text"},
        {"prompt-tokens", AX_OPT_STR, &prompt, "IDS", "comma-separated prompt token ids"},
        {"tokenizer", AX_OPT_STR, &tok, "TOK", "tokenizer for --prompt (default: tokenizer.json beside the model)"},
        {"max-new", AX_OPT_INT, &max_new, "N", "tokens to generate (default 64)"},
        {"temperature", AX_OPT_DOUBLE, &temp, "X", "softmax temperature; 0 = greedy (default 1)"},
        {"top-k", AX_OPT_INT, &top_k, "K", "sample among the K most likely (0: all)"},
        {"seed", AX_OPT_U64, &seed, "N", "sampling seed (default 1337)"},
        {"grid", AX_OPT_GRID, grid, "1,X,Y,1", "tensor-parallel grid (D and Z must be 1)"},
        {"threads", AX_OPT_INT, &threads, "N", "threads per rank"},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 2, usage, NULL, NULL, 0);
    if (rc) return rc;
    if (!prompt == !text) return AX_ERR("expected one of --prompt TEXT or --prompt-tokens IDS");
    if (max_new < 0) return AX_ERR("--max-new %d: expected >= 0", max_new);
    if (grid[0] != 1 || grid[3] != 1) return AX_ERR("--grid: sampling one sequence needs D = 1 and Z = 1");
    ax_cli_threads(threads);
    ax_grid g; ax_gpt m;
    AX_TRY(ax_cli_open_model(model, grid, &g, &m));
    int V = m.cfg.vocab_size;
    ax_tokenizer *t = NULL;
    ax_ids p = {0};
    if (text) {
        AX_TRY(ax_cli_tokenizer(&t, tok, model));
        AX_TRY(ax_tok_encode(t, text, strlen(text), 1, &p));
        if (!p.n) return AX_ERR("--prompt: encodes to no tokens");
    } else AX_TRY(ax_cli_parse_ids(prompt, V, "--prompt-tokens", &p));
    int n = (int)p.n;
    int32_t *toks = ax_malloc((n + max_new) * sizeof(int32_t));
    memcpy(toks, p.v, n * sizeof(int32_t));
    ax_ids_free(&p);
    float *full = malloc((size_t)m.Vp * sizeof(float)), *work = malloc((size_t)m.Vp * sizeof(float));
    ax_rng r = {seed, 0x5A3B, 0};
    int Tmax = m.cfg.block_size;
    for (int i = 0; i < max_new; i++) {
        int T = n < Tmax ? n : Tmax;                    /* a sliding window past n_positions */
        ax_gpt_forward(&m, toks + n - T, NULL, NULL, 1, T, 0.0f);
        ax_allgather_f32(&g.Y, m.logits + (size_t)(T - 1) * m.Vl, full, m.Vl);
        toks[n++] = pick(full, V, temp, top_k, &r, work);
    }
    if (g.rank == 0 && t) {
        ax_bytes b = {0};
        if (ax_tok_decode(t, toks, n, &b) == 0) { fwrite(b.p, 1, b.n, stdout); printf("\n"); }
        ax_bytes_free(&b);
    } else if (g.rank == 0) {
        for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", toks[i]);
        printf("\n");
    }
    ax_tok_free(t);
    free(toks); free(full); free(work);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    return 0;
}
