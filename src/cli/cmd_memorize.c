#include "cli/args.h"
#include "cli/cli.h"
#include "cli/text.h"
#include "memo/audit.h"
#include "data/instruct.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *usage = "usage: [mpirun -np P] axonn memorize --model MODEL.safetensors --docs FILE [options]\n\n"
                           "Verbatim-memorization audit: for each document (JSON Lines \"text\", fortune records,\n"
                           "or a plain file), prompt with all but its last --suffix tokens (or its first --prefix),\n"
                           "decode greedily, and report exact match of all suffix tokens, the share of matching\n"
                           "tokens and ROUGE-L, per document and overall. With --instruct the documents are\n"
                           "instruction examples as axonn train --data FILE.jsonl reads them (prompt/completion\n"
                           "or messages): the prompt is everything before the last supervised part (the completion,\n"
                           "or the final assistant reply) and the reference that part with its end token, at\n"
                           "most --suffix tokens of it.";

static void progress_bar(int done, int total, void *ctx) {
    if (!*(int *)ctx) return;
    fprintf(stderr, "\r\033[Kmemorize: %d/%d documents", done, total);
    if (done == total) fprintf(stderr, "\n");
}

/* each document's token ids (instruction examples: their tokens and the span of the reference) */
static int encode_docs(ax_tokenizer *t, const ax_doclist *d, const ax_instruct *ins, int n, int32_t **ids, int *lens,
                       ax_memo_span *spans) {
    int instruct = ins != NULL, rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (instruct) { /* the example's tokens, its reference the last supervised run */
            ids[i] = ins->ids + ins->off[i];
            lens[i] = (int)(ins->off[i + 1] - ins->off[i]);
            spans[i] = ax_memo_last_supervised(ins->sup + ins->off[i], lens[i]);
            continue;
        }
        ax_ids x = {0};
        rc = ax_tok_encode(t, d->text[i], d->len[i], 0, &x);
        ids[i] = x.v;
        lens[i] = (int)x.n;
    }
    return rc;
}

/* the audit's documents and summary: one JSON object, or a line each and a summary line */
static void print_report(const ax_memo_doc *res, int n, const ax_memo_summary *sm, int instruct, int json) {
    ax_memo_summary s = *sm;
    if (json) {
        printf("{\"docs\": %d, \"evaluated\": %d, \"exact\": %d, \"exact_rate\": %.6f, \"match\": %.6f, \"rouge_l\": "
               "%.6f, "
               "\"reference\": \"%s\", \"per_doc\": [",
               s.docs, s.evaluated, s.exact, s.evaluated ? (double)s.exact / s.evaluated : 0.0, s.match_frac, s.rouge_l,
               instruct ? "completion" : "suffix");
        for (int i = 0; i < n; i++)
            printf("%s{\"doc\": %d, \"skipped\": %s, \"prompt_tokens\": %d, \"ref_tokens\": %d, \"exact\": %s, "
                   "\"match\": %.4f, \"rouge_l\": %.4f}",
                   i ? ", " : "", i, res[i].skipped ? "true" : "false", res[i].prompt_len, res[i].ref_len,
                   res[i].exact ? "true" : "false", res[i].match_frac, res[i].rouge_l);
        printf("]}\n");
    } else {
        for (int i = 0; i < n; i++)
            if (!res[i].skipped)
                printf("doc %d | %d tokens | exact %d | match %.3f | ROUGE-L %.3f\n", i, res[i].ref_len, res[i].exact,
                       res[i].match_frac, res[i].rouge_l);
        printf("memorize: %d of %d %s evaluated (%d %s); exact match %d (%.1f%%), mean match %.3f, mean ROUGE-L %.3f\n",
               s.evaluated, s.docs, instruct ? "examples" : "documents", s.docs - s.evaluated,
               instruct ? "without a completion" : "too short", s.exact,
               s.evaluated ? 100.0 * s.exact / s.evaluated : 0.0, s.match_frac, s.rouge_l);
    }
}

int ax_cmd_memorize(int argc, char **argv) {
    const char *model = NULL, *docs = NULL, *tok = NULL;
    int suffix = 50, prefix = 0, batch = 16, json = 0, threads = 0, instruct = 0, grid[4] = {1, 1, 1, 1};
    ax_cli_backend_flags be = {0};
    ax_opt opts[] = {
        {"model", AX_OPT_STR, &model, "MODEL",
         "a model directory (config.json, model.safetensors) or model.safetensors (config.json beside it)"},
        {"docs", AX_OPT_STR, &docs, "FILE", "documents: .jsonl with \"text\", fortune file, or plain text"},
        {"tokenizer", AX_OPT_STR, &tok, "TOK", "tokenizer (default: tokenizer.json beside the model)"},
        {"instruct", AX_OPT_FLAG, &instruct, NULL,
         "--docs is instruction data (JSON Lines prompt/completion or messages): audit the completions"},
        {"suffix", AX_OPT_INT, &suffix, "N", "tokens to reproduce (default {})", AX_RANGE('[', 1, 1048576, ']')},
        {"prefix", AX_OPT_INT, &prefix, "N", "prompt with the first N tokens instead of all but the suffix",
         AX_RANGE('[', 0, 1048576, ']')},
        {"batch", AX_OPT_INT, &batch, "N", "documents decoded together (default {})", AX_RANGE('[', 1, 65536, ']')},
        {"grid", AX_OPT_GRID, grid, "D,X,Y,Z", "process grid (default {})"},
        {"threads", AX_OPT_INT, &threads, "N", "threads per rank", AX_RANGE('[', 0, 1024, ']')},
        AX_CLI_BACKEND_OPTS(be),
        {"json", AX_OPT_FLAG, &json, NULL, "print one JSON object with the summary and every document"},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 2, usage, NULL, NULL, 0);
    if (rc) return rc;
    if (!docs) return AX_ERR("--docs: required (the documents to audit)");
    if (!model)
        return AX_ERR("--model: required (a model directory, or a model.safetensors with config.json beside it)");
    AX_TRY(ax_cli_backend(&be));
    ax_cli_threads(threads);
    if (instruct && prefix) return AX_ERR("--prefix: not with --instruct (the prompt is each example's own)");
    ax_tokenizer *t = NULL;
    ax_doclist d = {0};
    rc = ax_file_exists(docs) ? 0 : AX_ERR("--docs %s: no such file", docs);
    if (rc == 0) rc = ax_cli_tokenizer(&t, tok, model);
    if (rc == 0 && !instruct) rc = ax_doclist_read(&d, &docs, 1);
    if (rc == 0 && !instruct && d.n == 0) rc = AX_ERR("--docs %s: no documents found", docs);
    ax_grid g;
    ax_gpt m;
    if (ax_agree(MPI_COMM_WORLD, rc) || ax_cli_open_model(model, grid, &g, &m)) {
        ax_doclist_free(&d);
        ax_tok_free(t);
        return -1;
    }
    if (ax_tok_vocab_size(t) > m.cfg.vocab_size)
        rc = AX_ERR("--tokenizer: %d ids, more than the model's vocabulary %d", ax_tok_vocab_size(t), m.cfg.vocab_size);
    /* instruction examples rendered and cut as training with --seq n_positions does */
    ax_instruct ins = {0};
    if (rc == 0 && instruct) {
        rc = ax_instruct_open(&ins, docs, t, m.cfg.block_size);
        if (rc == 0 && g.rank == 0 && ax_instruct_notice(&ins))
            fprintf(stderr, "axonn: %s\n", ax_instruct_notice(&ins));
    }
    int n = rc ? 0 : instruct ? (int)ax_instruct_count(&ins) : (int)d.n;
    int32_t **ids = ax_calloc(n ? n : 1, sizeof(int32_t *));
    int *lens = ax_calloc(n ? n : 1, sizeof(int));
    ax_memo_span *spans = instruct ? ax_calloc(n ? n : 1, sizeof *spans) : NULL;
    if (rc == 0) rc = encode_docs(t, &d, instruct ? &ins : NULL, n, ids, lens, spans);
    rc = ax_agree(g.world, rc);
    if (rc == 0) {
        ax_memo_doc *res = ax_malloc((n ? n : 1) * sizeof *res);
        ax_memo_summary s;
        int show = g.rank == 0 && isatty(2);
        ax_memo_audit(&m, ids, lens, spans, n, suffix, prefix, batch, res, NULL, &s, progress_bar, &show);
        if (g.rank == 0) print_report(res, n, &s, instruct, json);
        free(res);
    }
    for (int i = 0; !instruct && i < n; i++) free(ids[i]);
    free(ids);
    free(lens);
    free(spans);
    ax_instruct_close(&ins);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    ax_doclist_free(&d);
    ax_tok_free(t);
    return rc;
}
