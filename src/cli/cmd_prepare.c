#include "cli/args.h"
#include "cli/cli.h"
#include "cli/text.h"
#include "data/prepare.h"
#include "util/err.h"
#include <stdio.h>
#include <unistd.h>

static const char *usage = "usage: axonn prepare --tokenizer TOK --out DIR [options] FILE...\n\n"
                           "Turns text files (plain, JSON Lines with a \"text\" field, or fortune files with\n"
                           "records separated by '%' lines) into llm.c token shards DIR/train_*.bin and\n"
                           "DIR/val_*.bin, each document preceded by <|endoftext|>, plus DIR/tokenizer.json.\n"
                           "TOK is a tokenizer.json, a vocab.json (merges.txt beside it) or a .tiktoken file.";

#define MAXIN 4096

int ax_cmd_prepare(int argc, char **argv) {
    const char *tok = NULL, *out = NULL, *in[MAXIN];
    double val_frac = 0.005;
    int val_count = 0, nin = 0, quiet = 0;
    int64_t shard = 32000000;
    int shard_m = 0;
    ax_opt opts[] = {
        {"tokenizer", AX_OPT_STR, &tok, "TOK", "tokenizer file (required)"},
        {"out", AX_OPT_STR, &out, "DIR", "output directory, new or empty (required)"},
        {"val-frac", AX_OPT_DOUBLE, &val_frac, "F", "share of documents for validation, evenly spaced (default 0.005)",
         AX_RANGE('[', 0, 1, ')')},
        {"val-count", AX_OPT_INT, &val_count, "N", "the first N documents for validation instead",
         AX_RANGE('[', 0, 2147483647, ']')},
        {"shard-tokens", AX_OPT_INT, &shard_m, "N", "tokens per shard (default 32000000)",
         AX_RANGE('[', 2, 2147483647, ']')},
        {"quiet", AX_OPT_FLAG, &quiet, NULL, "no progress line"},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 2, usage, in, &nin, MAXIN);
    if (rc) return rc;
    if (!tok) return AX_ERR("--tokenizer: required (tokenizer.json, vocab.json or .tiktoken)");
    if (!out) return AX_ERR("--out: required (directory for the shards)");
    if (!nin) return AX_ERR("no input files (expected FILE... after the options)");
    if (ax_args_given(opts, "shard-tokens")) shard = shard_m;
    ax_tokenizer *t;
    AX_TRY(ax_tok_load(&t, tok));
    ax_prepare_opts po = {.inputs = in,
                          .ninputs = nin,
                          .out_dir = out,
                          .val_frac = val_frac,
                          .val_count = val_count,
                          .shard_tokens = shard,
                          .progress = !quiet && isatty(2)};
    ax_prepare_stats st;
    rc = ax_prepare(t, &po, &st);
    ax_tok_free(t);
    if (rc) return rc;
    printf("prepared %s: train %lld docs, %lld tokens in %d shards; val %lld docs, %lld tokens in %d shards; "
           "%.1f MB of text in %.1f s (%.1f MB/s)\n",
           out, (long long)st.docs[0], (long long)st.tokens[0], st.shards[0], (long long)st.docs[1],
           (long long)st.tokens[1], st.shards[1], st.bytes / 1e6, st.seconds,
           st.seconds > 0 ? st.bytes / 1e6 / st.seconds : 0.0);
    return 0;
}
