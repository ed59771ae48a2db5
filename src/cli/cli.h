/* The axonn command: one function per sub-command, and what they share. */
#ifndef AX_CLI_CLI_H
#define AX_CLI_CLI_H
#include "axonn/axonn.h"
#include "grid/grid.h"
#include "model/gpt.h"
#include "train/bench.h"

/* Each returns 0, 1 after --help, or -1 with the error recorded (train also
 * AX_TRAIN_DIVERGED: the command exits with status 3). */
int ax_cmd_train(int argc, char **argv);
int ax_cmd_eval(int argc, char **argv);
int ax_cmd_sample(int argc, char **argv);
int ax_cmd_prepare(int argc, char **argv);
int ax_cmd_tokenizer(int argc, char **argv);
int ax_cmd_memorize(int argc, char **argv);
int ax_cmd_bench(int argc, char **argv);
/* axonn bench gemm's table, or one JSON object (cmd_bench_gemm.c) */
void ax_cli_print_bench_gemm(const ax_bench_gemm_result *g, int json);
int ax_cmd_plan(int argc, char **argv);
int ax_cmd_plot(int argc, char **argv);

/* Builds (or finds in the cache) the default corpus; dir gets its directory
 * (tokenizer.json, corpus/train_*.bin, corpus/val_*.bin). Collective. */
int ax_default_corpus(char *dir, size_t n);
/* A few samples of OUT/model.safetensors from short prompts (tokenizer.json beside it). */
int ax_cli_show_samples(const char *out);
/* Named model sizes: tiny, small, gpt2, gpt2-medium, gpt2-large, gpt2-xl, the
 * AxoNN GPT sizes axonn-5b ... axonn-640b, and Llama 3's (llama-3.2-1b ... llama-3.1-405b). */
int ax_cli_preset(const char *name, ax_gpt_config *c);
/* the global batch (sequences) and sequence length published with a preset; 0 if none */
void ax_cli_preset_job(const char *name, int *batch, int *seq);
/* Grid + model from MODEL.safetensors (config.json beside it). Collective. */
int ax_cli_open_model(const char *path, const int grid[4], ax_grid *g, ax_gpt *m);
void ax_cli_threads(int n);

/* model_opts.c: what train, bench and plan share */
#include "cli/args.h"
#include "plan/plan.h"
/* The model flags of a new model, one table for train, bench and plan:
 * options entries writing into a ax_cli_model_flags. */
typedef struct {
    const char *preset, *arch;
    ax_gpt_config c;
} ax_cli_model_flags;
/* clang-format off: option tables, one entry a row or two (help text on the second) */
#define AX_CLI_MODEL_OPTS(f)                                                                                          \
    {"preset", AX_OPT_STR, &(f).preset, "NAME",                                                                       \
     "model size: tiny (default), small, gpt2, gpt2-medium, gpt2-large, gpt2-xl, axonn-5b ... "                       \
     "axonn-640b, llama-3.2-1b, llama-3.2-3b, llama-3.1-8b, llama-3.1-70b, llama-3.1-405b"},                          \
        {"arch", AX_OPT_STR, &(f).arch, "NAME",                                                                       \
         "architecture of a new model: gpt2 (default) or llama (RMSNorm, SwiGLU, rotary, no biases)"},                \
        {"n-layer", AX_OPT_INT, &(f).c.n_layer, "N", "transformer blocks", AX_RANGE('[', 1, 1000, ']')},              \
        {"n-head", AX_OPT_INT, &(f).c.n_head, "N", "attention heads", AX_RANGE('[', 1, 1024, ']')},                   \
        {"n-kv-head",                                                                                                 \
         AX_OPT_INT,                                                                                                  \
         &(f).c.n_kv_head,                                                                                            \
         "N",                                                                                                         \
         "key/value heads, grouped-query attention (llama; default n-head)",                                          \
         AX_RANGE('[', 1, 1024, ']')},                                                                                \
        {"n-embd", AX_OPT_INT, &(f).c.n_embd, "N", "hidden size", AX_RANGE('[', 1, 65536, ']')},                      \
        {"n-inner", AX_OPT_INT, &(f).c.n_inner, "N", "MLP width (default 4 n-embd)", AX_RANGE('[', 1, 1048576, ']')}, \
        {"block-size",                                                                                                \
         AX_OPT_INT,                                                                                                  \
         &(f).c.block_size,                                                                                           \
         "N",                                                                                                         \
         "maximum sequence length (n_positions)",                                                                     \
         AX_RANGE('[', 1, 1048576, ']')},                                                                             \
        {"vocab-size", AX_OPT_INT, &(f).c.vocab_size, "N", "vocabulary size", AX_RANGE('[', 1, 16777216, ']')},       \
        {"untied", AX_OPT_FLAG, &(f).c.untied, NULL, "llama: an LM head of its own, not the token table"}, {          \
        "rope-theta", AX_OPT_DOUBLE, &(f).c.rope_theta, "X", "llama: rotary base (default 10000)",                    \
            AX_RANGE('(', 0, 1e12, ']')                                                                               \
    }
/* The job the planner models, shared by plan and bench comm (o: an ax_train_opts, f: its
 * ax_cli_model_flags); --init first: bench comm takes any of these as "a model is given". */
#define AX_CLI_JOB_OPTS(o, f)                                                                                            \
    {"init", AX_OPT_STR, &(o).init, "MODEL", "the model of MODEL.safetensors or a model directory (its config.json)"},   \
        AX_CLI_MODEL_OPTS(f),                                                                                            \
        {"batch",                                                                                                        \
         AX_OPT_INT,                                                                                                     \
         &(o).batch,                                                                                                     \
         "N",                                                                                                            \
         "global batch in sequences (default 8, or the preset's)",                                                       \
         AX_RANGE('[', 1, 1048576, ']')},                                                                                \
        {"seq", AX_OPT_INT, &(o).seq, "T", "tokens per sequence (default n_positions)", AX_RANGE('[', 1, 1048576, ']')}, \
        {"grad-accum",                                                                                                   \
         AX_OPT_INT,                                                                                                     \
         &(o).grad_accum,                                                                                                \
         "N",                                                                                                            \
         "micro-batches per step (default {})",                                                                          \
         AX_RANGE('[', 1, 65536, ']')},                                                                                  \
    {                                                                                                                    \
        "dtype", AX_OPT_STR, &(o).dtype, "T", "GEMM input, activation and communication dtype: fp32 (default) or bf16"   \
    }
/* How a step runs, shared by train and bench (o: an ax_train_opts). */
#define AX_CLI_STEP_OPTS(o)                                                                                         \
    {"dtype", AX_OPT_STR, &(o).dtype, "TYPE",                                                                       \
     "GEMM input precision: fp32 or bf16 (fp32 accumulation, master weights, optimizer and "                        \
     "reductions; default {})"},                                                                                    \
        {"recompute", AX_OPT_STR, &(o).recompute, "MODE",                                                           \
         "activation recomputation: none, attn (attention outputs) or block (whole layers) (default {})"},          \
        {"overlap", AX_OPT_STR, &(o).overlap, "LIST",                                                               \
         "communication behind compute: all, none, or a comma list of oar (dX all-reduce), ors (dW "                \
         "reduce-scatter), oag (weight all-gather prefetch), dp (bucketed data-parallel all-reduce) (default {})"}, \
        {"keep-gathered", AX_OPT_FLAG, &(o).keep_gathered, NULL,                                                    \
         "keep the weights gathered over Z from forward to backward (memory for communication)"},                   \
        {"zero",                                                                                                    \
         AX_OPT_INT,                                                                                                \
         &(o).zero,                                                                                                 \
         "0|1",                                                                                                     \
         "1: shard AdamW's state over the data group, gradients reduce-scattered and parameters all-gathered "      \
         "(ZeRO-1; default {})",                                                                                    \
         AX_RANGE('[', 0, 1, ']')},                                                                                 \
        {"bucket-mb",                                                                                               \
         AX_OPT_DOUBLE,                                                                                             \
         &(o).bucket_mb,                                                                                            \
         "MB",                                                                                                      \
         "gradient bucket of the data-parallel all-reduce, MiB (default {})",                                       \
         AX_RANGE('(', 0, 1e6, ']')},                                                                               \
        {"gemm-tune", AX_OPT_STR, &(o).gemm_tune, "off|on",                                                         \
         "time each GEMM's layouts on first use and keep the fastest (default {})"},                                \
        {"peak-tflops",                                                                                             \
         AX_OPT_DOUBLE,                                                                                             \
         &(o).peak_tflops,                                                                                          \
         "X",                                                                                                       \
         "a rank's peak in the GEMM dtype, TFLOP/s, for MFU (default: the GPU's datasheet figure, if known)",       \
         AX_RANGE('(', 0, 1e6, ']')},                                                                               \
        {"cuda-graph", AX_OPT_FLAG, &(o).cuda_graph, NULL,                                                          \
         "--backend cuda, every group on NCCL: capture the step's forward, backward and collectives as a CUDA "     \
         "graph and replay it"},                                                                                    \
    {                                                                                                               \
        "gemm-tune-cache", AX_OPT_STR, &(o).gemm_tune_cache, "FILE",                                                \
            "the tuning cache (default $AXONN_GEMM_TUNE_CACHE, else $XDG_CACHE_HOME or ~/.cache "                   \
            "/axonn/gemm-tune.json; none: no file)"                                                                 \
    }
/* clang-format on */
/* The backend and its devices, one table for train and bench. */
typedef struct {
    const char *name, *device_comm;
    int share_gpu;
} ax_cli_backend_flags;
/* clang-format off */
#define AX_CLI_BACKEND_OPTS(b) \
    {"backend", AX_OPT_STR, &(b).name, "NAME", "kernels: cpu (default) or cuda (compiled backends in axonn --version)"}, \
    {"share-gpu", AX_OPT_FLAG, &(b).share_gpu, NULL, \
        "let several ranks drive one GPU (tests, small jobs): a group whose ranks share a GPU runs its collectives " \
        "through MPI on host buffers"}, \
    {"device-comm", AX_OPT_STR, &(b).device_comm, "auto|mpi", \
        "a GPU backend's collectives: NCCL where a group's ranks drive distinct GPUs, else MPI on host buffers " \
        "(auto, default); mpi: MPI on host buffers for every group"}
/* clang-format on */
/* Opens the backend named in b for this rank (its device by node-local rank)
 * and checks the ranks' devices (two on one GPU only with --share-gpu); rank 0
 * names the devices of a device backend. Collective over MPI_COMM_WORLD. */
int ax_cli_backend(const ax_cli_backend_flags *b);
/* model = the preset, then --arch and the size flags given. from_file (--init,
 * or --resume of a directory): none may be given, config.json says. */
int ax_cli_model_options(const ax_opt *opts, const ax_cli_model_flags *f, int from_file, ax_gpt_config *model);
/* config.json of a model (a directory, or beside MODEL.safetensors). Collective. */
int ax_cli_init_config(const char *init, ax_gpt_config *c);
/* a machine description file, else a preset name; NULL: the "cpu" estimate */
int ax_cli_machine(const char *arg, ax_machine *m);
/* the planner's job from the training options (batch 0: 8, seq 0: n_positions) */
int ax_cli_plan_job(const ax_train_opts *o, ax_plan_job *j);
/* The model options given (AX_CLI_MODEL_OPTS, --init, a preset's batch, sequence and
 * block recomputation where not given) into o, then the planner's job. Collective. */
int ax_cli_job_options(const ax_opt *opts, const ax_cli_model_flags *mf, ax_train_opts *o, ax_plan_job *j);
/* --grid D,X,Y,Z into out, or auto: the planner's first choice for the ranks of
 * comm on the machine (its context split into *cp; o->cp 0 lets it choose,
 * else it is pinned; its ZeRO setting into *zero, chosen of 0 and 1 unless
 * zero_given pins o->zero), said in one line (rank 0). NULL grid: out, *cp
 * and *zero unchanged. Collective. */
int ax_cli_grid_option(const char *grid, const char *machine, const ax_train_opts *o, int zero_given, MPI_Comm comm,
                       int out[4], int *cp, int *zero);
/* Appends max_new sampled tokens to toks[0..n) (room for n + max_new; temp 0: greedy). Collective. */
void ax_cli_generate(ax_gpt *m, int32_t *toks, int n, int max_new, double temp, int top_k, uint64_t seed);
/* "1,2,3" -> ids in [0, V); flag names the option in errors */
#include "data/tokenizer.h"
int ax_cli_parse_ids(const char *s, int V, const char *flag, ax_ids *out);
#endif
