#include "cli/args.h"
#include "cli/cli.h"
#include "train/evaluate.h"
#include "util/err.h"
#include <math.h>
#include <stdio.h>

static const char *usage = "usage: [mpirun -np P] axonn eval --model MODEL.safetensors --data GLOB [options]\n\n"
                           "Mean cross-entropy (nats per token) and perplexity over every sequence of the data.";

static void evaluate(ax_gpt *m, ax_source *src, int batch, int seq, int max_batches, int json) {
    int64_t n = ax_source_nseq(src);
    if (max_batches > 0 && (int64_t)max_batches * batch < n) n = (int64_t)max_batches * batch;
    double sum, tok;
    ax_evaluate(m, src, n, batch, 1, seq, &sum, &tok);
    if (m->g->rank == 0) {
        double loss = sum / tok;
        if (json)
            printf("{\"loss\": %.6f, \"perplexity\": %.4f, \"tokens\": %.0f, \"sequences\": %lld}\n", loss, exp(loss),
                   tok, (long long)n);
        else
            printf("loss %.4f | perplexity %.3f | %.0f tokens in %lld sequences of %d\n", loss, exp(loss), tok,
                   (long long)n, seq);
    }
}

int ax_cmd_eval(int argc, char **argv) {
    const char *model = NULL, *data = NULL;
    int batch = 8, seq = 0, json = 0, threads = 0, max_batches = 0, grid[4] = {1, 1, 1, 1};
    ax_cli_backend_flags be = {0};
    ax_opt opts[] = {
        {"model", AX_OPT_STR, &model, "MODEL",
         "a model directory (config.json, model.safetensors) or model.safetensors (config.json beside it)"},
        {"data", AX_OPT_STR, &data, "GLOB", "token shards (llm.c format)"},
        {"batch", AX_OPT_INT, &batch, "N", "sequences per batch (default 8)", AX_RANGE('[', 1, 1048576, ']')},
        {"seq", AX_OPT_INT, &seq, "T", "tokens per sequence (default: the model's n_positions)",
         AX_RANGE('[', 1, 1048576, ']')},
        {"max-batches", AX_OPT_INT, &max_batches, "N", "stop after N batches (0: all data)",
         AX_RANGE('[', 0, 1e9, ']')},
        {"grid", AX_OPT_GRID, grid, "D,X,Y,Z", "process grid (default 1,1,1,1)"},
        {"threads", AX_OPT_INT, &threads, "N", "threads per rank", AX_RANGE('[', 0, 1024, ']')},
        AX_CLI_BACKEND_OPTS(be),
        {"json", AX_OPT_FLAG, &json, NULL, "print one JSON object {loss, perplexity, tokens, sequences}"},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 2, usage, NULL, NULL, 0);
    if (rc) return rc;
    if (!data) return AX_ERR("--data: required (token shards to evaluate on)");
    AX_TRY(ax_cli_backend(&be));
    ax_cli_threads(threads);
    ax_grid g;
    ax_gpt m;
    AX_TRY(ax_cli_open_model(model, grid, &g, &m));
    if (seq == 0) seq = m.cfg.block_size;
    ax_source src = {0};
    if (seq < 1 || seq > m.cfg.block_size)
        rc = AX_ERR("--seq %d: expected 1..%d (the model's n_positions)", seq, m.cfg.block_size);
    else if (batch % (g.gd * g.gz))
        rc = AX_ERR("--batch %d: must divide over G_data*G_z = %d ranks", batch, g.gd * g.gz);
    else rc = ax_agree(g.world, ax_source_open(&src, data, NULL, seq, m.cfg.vocab_size, AX_SOURCE_IN_ORDER, 0));
    if (rc == 0) evaluate(&m, &src, batch, seq, max_batches, json);
    ax_source_close(&src);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    return rc;
}
