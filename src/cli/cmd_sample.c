#include "cli/args.h"
#include "cli/cli.h"
#include "cli/text.h"
#include "util/err.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "usage: axonn sample --model MODEL.safetensors (--prompt TEXT | --prompt-tokens 1,2,3) [options]\n\n"
    "Continues a prompt by sampling (temperature, top-k). With --prompt the text is encoded\n"
    "and the continuation decoded (tokenizer.json beside the model, or --tokenizer);\n"
    "with --prompt-tokens the ids are printed.";

int ax_cmd_sample(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *text = NULL, *tok = NULL;
    int max_new = 64, top_k = 0, threads = 0, grid[4] = {1, 1, 1, 1};
    double temp = 1.0;
    uint64_t seed = 1337;
    ax_cli_backend_flags be = {0};
    ax_opt opts[] = {
        {"model", AX_OPT_STR, &model, "MODEL",
         "a model directory (config.json, model.safetensors) or model.safetensors (config.json beside it)"},
        {"prompt", AX_OPT_STR, &text, "TEXT", "prompt text"},
        {"prompt-tokens", AX_OPT_STR, &prompt, "IDS", "comma-separated prompt token ids"},
        {"tokenizer", AX_OPT_STR, &tok, "TOK", "tokenizer for --prompt (default: tokenizer.json beside the model)"},
        {"max-new", AX_OPT_INT, &max_new, "N", "tokens to generate (default 64)", AX_RANGE('[', 0, 1048576, ']')},
        {"temperature", AX_OPT_DOUBLE, &temp, "X", "softmax temperature; 0 = greedy (default 1)",
         AX_RANGE('[', 0, 100, ']')},
        {"top-k", AX_OPT_INT, &top_k, "K", "sample among the K most likely (0: all)", AX_RANGE('[', 0, 16777216, ']')},
        {"seed", AX_OPT_U64, &seed, "N", "sampling seed (default 1337)"},
        {"grid", AX_OPT_GRID, grid, "D,X,Y,Z", "process grid (default 1,1,1,1; every rank decodes the same sequence)"},
        {"threads", AX_OPT_INT, &threads, "N", "threads per rank", AX_RANGE('[', 0, 1024, ']')},
        AX_CLI_BACKEND_OPTS(be),
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 2, usage, NULL, NULL, 0);
    if (rc) return rc;
    if (!prompt == !text) return AX_ERR("expected one of --prompt TEXT or --prompt-tokens IDS");
    AX_TRY(ax_cli_backend(&be));
    ax_cli_threads(threads);
    ax_grid g;
    ax_gpt m;
    AX_TRY(ax_cli_open_model(model, grid, &g, &m));
    int V = m.cfg.vocab_size;
    ax_tokenizer *t = NULL;
    ax_ids p = {0};
    if (text) {
        rc = ax_cli_tokenizer(&t, tok, model);
        if (rc == 0) rc = ax_tok_encode(t, text, strlen(text), 1, &p);
        if (rc == 0 && !p.n) rc = AX_ERR("--prompt: encodes to no tokens");
    } else rc = ax_cli_parse_ids(prompt, V, "--prompt-tokens", &p);
    if (ax_agree(g.world, rc)) {
        ax_ids_free(&p);
        ax_tok_free(t);
        ax_gpt_free(&m);
        ax_grid_free(&g);
        return -1;
    }
    int n = (int)p.n;
    int32_t *toks = ax_malloc((n + max_new) * sizeof(int32_t));
    memcpy(toks, p.v, n * sizeof(int32_t));
    ax_ids_free(&p);
    ax_cli_generate(&m, toks, n, max_new, temp, top_k, seed);
    n += max_new;
    if (g.rank == 0 && t) {
        ax_bytes b = {0};
        if (ax_tok_decode(t, toks, n, &b) == 0) {
            fwrite(b.p, 1, b.n, stdout);
            printf("\n");
        }
        ax_bytes_free(&b);
    } else if (g.rank == 0) {
        for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", toks[i]);
        printf("\n");
    }
    ax_tok_free(t);
    free(toks);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    return 0;
}
