#include "cli/args.h"
#include "cli/cli.h"
#include "backend/backend.h"
#include "cli/text.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage = "usage: [mpirun -np P] axonn train [options]\n\n"
                           "Trains a GPT-2 model with 4D hybrid parallelism (data x X x Y x Z).\n"
                           "With no --data it trains on the default corpus: the Debian fortunes, with a BPE\n"
                           "tokenizer and shards built once into ~/.cache/axonn ($AXONN_CACHE), and prints\n"
                           "samples at the end; --synthetic uses a synthetic token stream instead.\n"
                           "--steps is the total step count of the run, also when resuming; --batch is the\n"
                           "global batch in sequences.";

/* The command's options, and the paths the run's options point into. */
typedef struct {
    ax_train_opts o;
    ax_cli_model_flags mf;
    int synthetic;
    ax_cli_backend_flags be;
    const char *grid, *machine;
    char corpus[4096], train_glob[4200], val_glob[4200];
    char tok_path[4200]; /* the tokenizer the trained model keeps ("": none) */
} train_cli;

enum { MAX_OPTS = 72 };

/* the option table, writing into t: one entry per option, kept whole (its length is the option count) */
static void train_options(train_cli *t, ax_opt *table) {
    ax_train_opts *o = &t->o;
    ax_opt opts[] = {
        {"data", AX_OPT_STR, &o->data, "GLOB|FILE.jsonl",
         "training token shards (llm.c format), or instruction examples (JSON Lines: prompt/completion or messages; "
         "loss on completions only)"},
        {"synthetic", AX_OPT_FLAG, &t->synthetic, NULL, "train on a synthetic token stream (no data needed)"},
        {"val-data", AX_OPT_STR, &o->val_data, "GLOB", "validation token shards"},
        {"tokenizer", AX_OPT_STR, &o->tokenizer, "FILE",
         "tokenizer of .jsonl instruction data (default: tokenizer.json of --init)"},
        {"init", AX_OPT_STR, &o->init, "MODEL",
         "start from a model: a Hugging Face directory (config.json, model.safetensors) or MODEL.safetensors with "
         "config.json beside it"},
        {"out", AX_OPT_STR, &o->out, "DIR", "checkpoints, metrics.jsonl and the final model (default {})"},
        {"resume", AX_OPT_STR, &o->resume, "DIR|auto",
         "resume from a checkpoint, or the newest complete ckpt-* in DIR that verifies (a corrupt one is set aside); "
         "auto: in --out, else start fresh"},
        {"metrics", AX_OPT_STR, &o->metrics, "FILE", "JSONL metrics (default DIR/metrics.jsonl)"},
        {"tensorboard", AX_OPT_STR, &o->tensorboard, "DIR",
         "also write the metrics as TensorBoard event files into DIR (rank 0; off by default)"},
        {"max-shard-size", AX_OPT_BYTES, &o->max_shard_size, "SIZE",
         "the final model as shards of at most SIZE (e.g. 5GB, 500MiB) plus model.safetensors.index.json when larger "
         "(default 5GB, as transformers; 0: one file)"},
        {"export-dtype", AX_OPT_STR, &o->export_dtype, "TYPE",
         "tensors of the final model: fp32 or bf16 (default {}; checkpoints stay fp32)"},
        AX_CLI_MODEL_OPTS(t->mf),
        {"grid", AX_OPT_STR, &t->grid, "D,X,Y,Z|auto",
         "process grid; D*X*Y*Z*C = number of ranks (default: data parallelism over the ranks left after X*Y*Z*C); "
         "auto: the planner's first choice"},
        {"cp", AX_OPT_INT, &o->cp, "C",
         "context parallelism: C ranks split each sequence (ring attention; --seq a multiple of 2C) (default 1; "
         "--grid auto: the planner's choice)",
         AX_RANGE('[', 1, 65536, ']')},
        {"machine", AX_OPT_STR, &t->machine, "FILE|NAME",
         "machine description for --grid auto (axonn bench comm --out; default: an estimate)"},
        {"gdata", AX_OPT_INT, &o->grid[0], "N", "data-parallel groups", AX_RANGE('[', 1, 65536, ']')},
        {"gx", AX_OPT_INT, &o->grid[1], "N", "tensor-parallel X", AX_RANGE('[', 1, 65536, ']')},
        {"gy", AX_OPT_INT, &o->grid[2], "N", "tensor-parallel Y", AX_RANGE('[', 1, 65536, ']')},
        {"gz", AX_OPT_INT, &o->grid[3], "N", "tensor-parallel Z (depth)", AX_RANGE('[', 1, 65536, ']')},
        {"steps", AX_OPT_INT, &o->steps, "N",
         "total optimizer steps of the run (default {}; 1200 on the default corpus)", AX_RANGE('[', 1, 1e9, ']')},
        {"batch", AX_OPT_INT, &o->batch, "N", "global batch in sequences per step (default 8, or the checkpoint's)",
         AX_RANGE('[', 1, 1048576, ']')},
        {"seq", AX_OPT_INT, &o->seq, "T", "tokens per sequence (default: n_positions, or the checkpoint's)",
         AX_RANGE('[', 1, 1048576, ']')},
        {"grad-accum", AX_OPT_INT, &o->grad_accum, "N", "micro-batches per step (default {})",
         AX_RANGE('[', 1, 65536, ']')},
        {"lr", AX_OPT_DOUBLE, &o->lr, "X", "peak learning rate (default {})", AX_RANGE('(', 0, 10, ']')},
        {"min-lr-frac", AX_OPT_DOUBLE, &o->min_lr_frac, "X", "cosine floor as a fraction of --lr (default {})",
         AX_RANGE('[', 0, 1, ']')},
        {"warmup", AX_OPT_INT, &o->warmup, "N", "linear warm-up steps (default {})", AX_RANGE('[', 0, 1e9, ']')},
        {"weight-decay", AX_OPT_DOUBLE, &o->weight_decay, "X", "AdamW weight decay on matrices (default {})",
         AX_RANGE('[', 0, 10, ']')},
        {"beta1", AX_OPT_DOUBLE, &o->beta1, "X", "AdamW beta1 (default {})", AX_RANGE('[', 0, 1, ')')},
        {"beta2", AX_OPT_DOUBLE, &o->beta2, "X", "AdamW beta2 (default {})", AX_RANGE('[', 0, 1, ')')},
        {"eps", AX_OPT_DOUBLE, &o->eps, "X", "AdamW epsilon (default {})", AX_RANGE('(', 0, 1, ']')},
        {"clip", AX_OPT_DOUBLE, &o->clip, "X", "clip the global gradient norm (0: off; default {})",
         AX_RANGE('[', 0, 1e9, ']')},
        {"seed", AX_OPT_U64, &o->seed, "N", "initialisation and shuffling seed (default {})"},
        {"shuffle", AX_OPT_FLAG, &o->shuffle, NULL,
         "shuffle sequences each epoch (default {}; --shuffle=false: sequential)"},
        {"save-every", AX_OPT_INT, &o->save_every, "N", "write a checkpoint every N steps (0: only at the end)",
         AX_RANGE('[', 0, 1e9, ']')},
        {"keep", AX_OPT_INT, &o->keep, "K", "complete checkpoints kept in --out, older ones deleted (default {})",
         AX_RANGE('[', 1, 1e6, ']')},
        {"async-save", AX_OPT_FLAG, &o->async_save, NULL,
         "write checkpoints in the background while training goes on (default {}; --async-save=false: wait)"},
        {"ckpt-writer", AX_OPT_STR, &o->ckpt_writer, "parallel|root",
         "who writes checkpoint files: every rank its slices, or rank 0 alone (default {})"},
        {"ckpt-chunk", AX_OPT_BYTES, &o->ckpt_chunk, "SIZE",
         "bytes per checksum range of checkpoint files (default 0: 16MiB)"},
        {"max-skips", AX_OPT_INT, &o->max_skips, "N",
         "stop with exit status 3 after N consecutive non-finite steps (default {})", AX_RANGE('[', 1, 1e6, ']')},
        {"exit-after", AX_OPT_INT, &o->exit_after, "N", "stop cleanly after step N with a checkpoint",
         AX_RANGE('[', 0, 1e9, ']')},
        {"val-every", AX_OPT_INT, &o->val_every, "N", "validation loss every N steps (default {})",
         AX_RANGE('[', 0, 1e9, ']')},
        {"val-batches", AX_OPT_INT, &o->val_batches, "N", "batches per validation (default {})",
         AX_RANGE('[', 1, 1e6, ']')},
        {"log-every", AX_OPT_INT, &o->log_every, "N", "log a line every N steps (default {})",
         AX_RANGE('[', 1, 1e9, ']')},
        {"threads", AX_OPT_INT, &o->threads, "N", "OpenMP/BLAS threads per rank (default: cores / ranks per node)",
         AX_RANGE('[', 0, 1024, ']')},
        {"goldfish-k", AX_OPT_INT, &o->goldfish_k, "K", "goldfish loss: leave out about 1/K of target tokens (0: off)",
         AX_RANGE('[', 0, 1e6, ']')},
        {"goldfish-h", AX_OPT_INT, &o->goldfish_h, "H",
         "goldfish context: hash of the H ids of the token stream ending at a target (default {})",
         AX_RANGE('[', 1, 1e6, ']')},
        AX_CLI_BACKEND_OPTS(t->be),
        AX_CLI_STEP_OPTS(*o),
        {"quiet", AX_OPT_FLAG, &o->quiet, NULL, "no per-step lines"},
        {"profile", AX_OPT_FLAG, &o->profile, NULL,
         "report the share of step time in GEMMs and in each group's collectives"},
        {NULL},
    };
    _Static_assert(sizeof opts <= MAX_OPTS * sizeof *opts, "MAX_OPTS");
    memcpy(table, opts, sizeof opts);
}

/* No --data: the default corpus and its training defaults; else the tokenizer the data or model carries. */
static int choose_data(train_cli *t, const ax_opt *opts, int size_from_file) {
    ax_train_opts *o = &t->o;
    if (!o->data && !t->synthetic) {
        AX_TRY(ax_default_corpus(t->corpus, sizeof t->corpus));
        snprintf(t->train_glob, sizeof t->train_glob, "%s/corpus/train_*.bin", t->corpus);
        snprintf(t->val_glob, sizeof t->val_glob, "%s/corpus/val_*.bin", t->corpus);
        snprintf(t->tok_path, sizeof t->tok_path, "%s/tokenizer.json", t->corpus);
        o->data = t->train_glob;
        if (!o->val_data) o->val_data = t->val_glob;
        ax_tokenizer *tk;
        AX_TRY(ax_agree(MPI_COMM_WORLD, ax_tok_load(&tk, t->tok_path)));
        if (!size_from_file && !ax_args_given(opts, "vocab-size")) o->model.vocab_size = ax_tok_vocab_size(tk);
        ax_tok_free(tk);
        if (!ax_args_given(opts, "steps")) o->steps = 1200;
        if (!ax_args_given(opts, "batch")) o->batch = 16;
        if (!ax_args_given(opts, "lr")) o->lr = 2e-3;
        if (!ax_args_given(opts, "val-every")) o->val_every = 100;
    } else if (o->tokenizer) { /* the model's output keeps the tokenizer it was trained with */
        snprintf(t->tok_path, sizeof t->tok_path, "%s", o->tokenizer);
    } else if (o->data) {
        char d[4200], st[4200], cfg[4200]; /* a prepared corpus carries its tokenizer, a model directory its own */
        if (o->init) {
            ax_gpt_model_paths(o->init, st, cfg, sizeof cfg);
            ax_dirname(cfg, d, sizeof d);
        } else ax_dirname(o->data, d, sizeof d);
        snprintf(t->tok_path, sizeof t->tok_path, "%s/tokenizer.json", d);
        if (!ax_file_exists(t->tok_path)) t->tok_path[0] = 0;
    }
    return 0;
}

/* --grid: given, or auto (the planner's choice for the model the run will train) */
static int choose_grid(train_cli *t, const ax_opt *opts, int size_from_file) {
    ax_train_opts *o = &t->o;
    int zero_given = ax_args_given(opts, "zero");
    if (!t->grid || strcmp(t->grid, "auto") != 0)
        return ax_cli_grid_option(t->grid, t->machine, o, zero_given, MPI_COMM_WORLD, o->grid, &o->cp, &o->zero);
    ax_train_opts plan = *o;
    if (o->init) AX_TRY(ax_cli_init_config(o->init, &plan.model));
    else if (size_from_file)
        return AX_ERR("--grid auto: not with --resume DIR (give the checkpoint's grid, or --resume auto)");
    return ax_cli_grid_option(t->grid, t->machine, &plan, zero_given, MPI_COMM_WORLD, o->grid, &o->cp, &o->zero);
}

/* the tokenizer beside the trained model; samples after a run on the default corpus */
static int after_training(const train_cli *t) {
    const ax_train_opts *o = &t->o;
    if (!o->out || !t->tok_path[0]) return 0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char tok_out[4200];
    snprintf(tok_out, sizeof tok_out, "%s/tokenizer.json", o->out);
    AX_TRY(ax_agree(MPI_COMM_WORLD, rank == 0 ? ax_copy_file(t->tok_path, tok_out) : 0));
    if (t->corpus[0] && (!o->exit_after || o->exit_after >= o->steps)) AX_TRY(ax_cli_show_samples(o->out));
    return 0;
}

int ax_cmd_train(int argc, char **argv) {
    train_cli t; /* the run's options point into it */
    memset(&t, 0, sizeof t);
    ax_train_defaults(&t.o);
    t.o.cp = 0; /* not given: 1, or the planner's choice under --grid auto */
    ax_opt opts[MAX_OPTS];
    train_options(&t, opts);
    int rc = ax_args_parse(opts, argc, argv, 2, usage, NULL, NULL, 0);
    if (rc) return rc;
    AX_TRY(ax_cli_backend(&t.be));
    if (t.synthetic && t.o.data) return AX_ERR("--synthetic and --data exclude each other");
    /* --resume auto may start fresh: it takes the size flags, and checks them against a checkpoint */
    int size_from_file = t.o.init || (t.o.resume && strcmp(t.o.resume, "auto") != 0);
    AX_TRY(ax_cli_model_options(opts, &t.mf, size_from_file, &t.o.model));
    AX_TRY(choose_data(&t, opts, size_from_file));
    AX_TRY(choose_grid(&t, opts, size_from_file));
    if (!t.o.cp) t.o.cp = 1; /* --cp not given and not chosen by --grid auto */
    rc = ax_train(&t.o, MPI_COMM_WORLD);
    if (rc) return rc;
    return after_training(&t);
}
