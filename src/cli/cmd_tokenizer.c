#include "cli/args.h"
#include "cli/cli.h"
#include "cli/text.h"
#include "util/err.h"
#include "util/fileio.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage = "usage: axonn tokenizer train --vocab-size N --out tokenizer.json FILE...\n"
                           "       axonn tokenizer encode --tokenizer TOK [--add-special] (--text TEXT | FILE)\n"
                           "       axonn tokenizer decode --tokenizer TOK --ids 1,2,3\n\n"
                           "Byte-level BPE like GPT-2: train one on text files (plain, JSON Lines, fortune),\n"
                           "or inspect how a tokenizer (tokenizer.json of GPT-2 or Llama-3 style, vocab.json,\n"
                           ".tiktoken) splits text; special tokens in the text are matched as such.";

static int cmd_train(int argc, char **argv) {
    const char *out = NULL, *in[4096];
    int vocab = 0, nin = 0;
    ax_opt opts[] = {
        {"vocab-size", AX_OPT_INT, &vocab, "N", "ids: 256 bytes + merges + <|endoftext|> (required)",
         AX_RANGE('[', 257, 16777216, ']')},
        {"out", AX_OPT_STR, &out, "FILE", "tokenizer.json to write (required)"},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 3, usage, in, &nin, 4096);
    if (rc) return rc;
    if (vocab < 257) return AX_ERR("--vocab-size %d: expected >= 257 (256 bytes + <|endoftext|>)", vocab);
    if (!out) return AX_ERR("--out: required (the tokenizer.json to write)");
    if (!nin) return AX_ERR("no input files (expected FILE... after the options)");
    ax_doclist d;
    AX_TRY(ax_doclist_read(&d, in, nin));
    if (d.n == 0) {
        ax_doclist_free(&d);
        return AX_ERR("%s: no text found in the inputs", in[0]);
    }
    double t0 = MPI_Wtime();
    ax_tokenizer *t;
    rc = ax_tok_train(&t, (const char *const *)d.text, d.len, d.n, vocab);
    ax_doclist_free(&d);
    if (rc) return rc;
    rc = ax_tok_save_json(t, out);
    if (rc == 0) printf("trained a %d-id tokenizer in %.1f s: %s\n", ax_tok_vocab_size(t), MPI_Wtime() - t0, out);
    ax_tok_free(t);
    return rc;
}

static int cmd_encode(int argc, char **argv) {
    const char *tok = NULL, *text = NULL, *in[1];
    int nin = 0, framed = 0;
    ax_opt opts[] = {
        {"tokenizer", AX_OPT_STR, &tok, "TOK", "tokenizer file (required)"},
        {"text", AX_OPT_STR, &text, "TEXT", "text to encode (or give a FILE)"},
        {"add-special", AX_OPT_FLAG, &framed, NULL,
         "add the post-processor's tokens (Llama-3: <|begin_of_text|>), as Hugging Face's encode does"},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 3, usage, in, &nin, 1);
    if (rc) return rc;
    if (!tok) return AX_ERR("--tokenizer: required");
    if (!text && !nin) return AX_ERR("expected --text TEXT or a FILE to encode");
    char *data = NULL;
    size_t n;
    if (!text) {
        AX_TRY(ax_read_file(in[0], &data, &n));
        text = data;
    } else n = strlen(text);
    ax_tokenizer *t;
    if ((rc = ax_tok_load(&t, tok))) {
        free(data);
        return rc;
    }
    ax_ids ids = {0};
    rc = ax_tok_encode(t, text, n, AX_TOK_SPECIAL | (framed ? AX_TOK_TEMPLATE : 0), &ids);
    for (size_t i = 0; rc == 0 && i < ids.n; i++) printf("%s%d", i ? "," : "", ids.v[i]);
    if (rc == 0) printf("\n");
    ax_ids_free(&ids);
    ax_tok_free(t);
    free(data);
    return rc;
}

/* "1,2,3" -> ids, each in [0, V) */
int ax_cli_parse_ids(const char *s, int V, const char *flag, ax_ids *out) {
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= V)
            return AX_ERR("%s '%s': expected comma-separated ids in 0..%d", flag, s, V - 1);
        ax_ids_push(out, (int32_t)v);
        p = end;
        if (*p == ',') p++;
        else if (*p) return AX_ERR("%s '%s': expected comma-separated ids", flag, s);
    }
    if (!out->n) return AX_ERR("%s: expected at least one id", flag);
    return 0;
}

static int cmd_decode(int argc, char **argv) {
    const char *tok = NULL, *s = NULL;
    ax_opt opts[] = {
        {"tokenizer", AX_OPT_STR, &tok, "TOK", "tokenizer file (required)"},
        {"ids", AX_OPT_STR, &s, "IDS", "comma-separated ids (required)"},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 3, usage, NULL, NULL, 0);
    if (rc) return rc;
    if (!tok || !s) return AX_ERR("--tokenizer and --ids: required");
    ax_tokenizer *t;
    AX_TRY(ax_tok_load(&t, tok));
    ax_ids ids = {0};
    ax_bytes b = {0};
    rc = ax_cli_parse_ids(s, ax_tok_vocab_size(t), "--ids", &ids);
    if (rc == 0) rc = ax_tok_decode(t, ids.v, ids.n, &b);
    if (rc == 0) {
        fwrite(b.p, 1, b.n, stdout);
        printf("\n");
    }
    ax_ids_free(&ids);
    ax_bytes_free(&b);
    ax_tok_free(t);
    return rc;
}

int ax_cmd_tokenizer(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0) {
        printf("%s\n", usage);
        return argc < 3 ? AX_ERR("tokenizer: expected a sub-command (train, encode or decode)") : 1;
    }
    if (strcmp(argv[2], "train") == 0) return cmd_train(argc, argv);
    if (strcmp(argv[2], "encode") == 0) return cmd_encode(argc, argv);
    if (strcmp(argv[2], "decode") == 0) return cmd_decode(argc, argv);
    return AX_ERR("tokenizer '%s': expected train, encode or decode", argv[2]);
}
