/* axonn bench: the training step timed as the AxoNN paper does; axonn bench comm:
 * this machine measured into a machine description for the planner. */
#include "cli/args.h"
#include "cli/cli.h"
#include "backend/backend.h"
#include "plan/calibrate.h"
#include "train/bench.h"
#include "util/err.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "usage: [mpirun -np P] axonn bench [options]\n"
    "       [mpirun -np P] axonn bench comm [--out FILE] [options]\n"
    "       [mpirun -np P] axonn bench gemm [options]\n\n"
    "Times --iters training steps (model and batch options as in axonn train; synthetic\n"
    "tokens unless --data) and reports the mean of all but the first two (their median\n"
    "beside it): ms per iteration, tokens/s, model and hardware FLOP/s (docs/algorithm.md §5), the share\n"
    "of a GEMM ceiling measured in the same run, and the time split into compute, blocked\n"
    "communication per group, optimizer and data. 'bench comm' measures collectives,\n"
    "GEMMs and kernels into a machine description for axonn plan (--help after 'comm'\n"
    "lists its options).\n"
    "'bench gemm' times each layout of the step's local GEMMs (forward, dX, dW of every\n"
    "layer; --gemm-tune's candidates) and prints the layout the tuner keeps and its gain.";

static const char *usage_comm =
    "usage: [mpirun -np P] axonn bench comm [--out FILE] [options] [model options]\n\n"
    "Measures this machine for axonn plan: collectives of every group size that divides P\n"
    "(the points and an alpha-beta fit; groups within a node, across nodes, and, where ranks\n"
    "bound to cores outnumber them, on one core), GEMM rates (square shapes, fp32 and bf16\n"
    "inputs), the attention, activation, LayerNorm, loss, elementwise and optimizer kernels,\n"
    "and how much of a collective a GEMM hides; every rank at once, each trial from the first\n"
    "rank's start to the last rank's end. Kernels run on copies of their operands in turn, as\n"
    "many as fill the memory a rank of the model holds (64 MiB without one) times the ranks\n"
    "that share a core, so that they find them out of the caches as a training step does;\n"
    "the input the kernel before wrote stays hot (a GEMM's for the share of its time that\n"
    "the operands of the core's ranks fit in its L2).\n"
    "With a model (--preset, size flags or --init, and its --batch, --seq, --grad-accum,\n"
    "--dtype) also every GEMM of its steps on the grids of P ranks, at their shapes and\n"
    "layouts, and the attention at its sequence length and head size, each in two passes\n"
    "with the faster kept (a burst of other work slows one): axonn plan then\n"
    "charges those kernels as measured; LayerNorm, the activation, the adds, AdamW and the\n"
    "overlap are timed at its sizes.";

static void print_text(const ax_bench_result *b) {
    double ms = b->step_s * 1e3, P = b->ranks;
    printf("bench: %d ranks, grid D=%d X=%d Y=%d Z=%d C=%d, %d threads/rank, %s, overlap %s%s, zero %d, gemm-tune %s; "
           "%d iterations, mean of the last %d\n",
           b->ranks, b->grid[0], b->grid[1], b->grid[2], b->grid[3], b->cp, b->threads, b->dtype, b->overlap,
           b->keep_gathered ? " (gathered weights kept)" : "", b->zero, b->gemm_tune, b->iters, b->timed);
    printf("  %.2f ms/iteration (median %.2f, min %.2f, max %.2f), %.0f tokens/s (%.0f tokens per iteration)\n", ms,
           b->step_med_s * 1e3, b->step_min_s * 1e3, b->step_max_s * 1e3, b->tokens / b->step_s, b->tokens);
    printf("  model FLOP/s %.4g total, %.4g per rank (72 B s l h^2 (1 + s/6h + V/12hl), no recompute counted)\n",
           b->model_flops / b->step_s, b->model_flops / b->step_s / P);
    printf("  hardware FLOP/s %.4g total, %.4g per rank (96 B s l h^2 (1 + s/6h + V/16hl), full recompute assumed)\n",
           b->hardware_flops / b->step_s, b->hardware_flops / b->step_s / P);
    if (b->peak > 0)
        printf("  MFU %.1f%% (model FLOP/s per rank over %.4g TFLOP/s: %s)\n", 100 * b->mfu, b->peak / 1e12,
               b->peak_from);
    else printf("  MFU not reported (%s)\n", b->peak_from);
    printf("  GEMM ceiling %.4g FLOP/s per rank (%d x %d x %d, the largest local GEMM, measured now): "
           "model FLOP/s at %.1f%% of it\n",
           b->gemm_flops, b->gemm_m, b->gemm_n, b->gemm_k, 100 * b->model_flops / b->step_s / P / b->gemm_flops);
    if (b->cuda_graph) { /* a replay runs no host code that could time its parts */
        printf("  per iteration (mean over ranks): compute and communication %.2f ms (a CUDA graph: not split), "
               "optimizer %.2f ms, data %.2f ms\n",
               b->compute_s * 1e3, b->optim_s * 1e3, b->data_s * 1e3);
        return;
    }
    double comm = 0;
    for (int i = 0; i < AX_BG_N; i++) comm += b->comm_s[i];
    printf("  per iteration (mean over ranks): compute %.2f ms (GEMM %.2f), communication %.2f ms (",
           b->compute_s * 1e3, b->gemm_s * 1e3, comm * 1e3);
    for (int i = 0; i < AX_BG_N; i++) printf("%s%s %.2f", i ? ", " : "", ax_bench_group_names[i], b->comm_s[i] * 1e3);
    printf("), optimizer %.2f ms, data %.2f ms\n", b->optim_s * 1e3, b->data_s * 1e3);
}

static void print_json(const ax_bench_result *b) {
    double P = b->ranks, comm = 0;
    json_t *groups = json_object();
    for (int i = 0; i < AX_BG_N; i++) {
        json_object_set_new(groups, ax_bench_group_names[i], json_real(b->comm_s[i] * 1e3));
        comm += b->comm_s[i];
    }
    json_t *j = json_pack(
        "{s:i, s:[i,i,i,i], s:i, s:i, s:{s:i, s:i, s:i, s:i, s:i}, s:i, s:i, s:i, s:s, s:s, s:s, s:b, s:s, s:i, s:i}",
        "ranks", b->ranks, "grid", b->grid[0], b->grid[1], b->grid[2], b->grid[3], "cp", b->cp, "threads_per_rank",
        b->threads, "model", "n_layer", b->cfg.n_layer, "n_head", b->cfg.n_head, "n_embd", b->cfg.n_embd, "n_positions",
        b->cfg.block_size, "vocab_size", b->cfg.vocab_size, "batch", b->batch, "seq", b->seq, "grad_accum",
        b->grad_accum, "recompute", b->recompute, "dtype", b->dtype, "overlap", b->overlap, "keep_gathered",
        b->keep_gathered, "gemm_tune", b->gemm_tune, "iters", b->iters, "timed_iters", b->timed);
    json_t *split = json_pack("{s:f, s:f, s:f, s:f, s:f}", "compute", b->compute_s * 1e3, "gemm", b->gemm_s * 1e3,
                              "optimizer", b->optim_s * 1e3, "data", b->data_s * 1e3, "comm_total", comm * 1e3);
    json_object_set_new(split, "comm", groups);
    if (b->cuda_graph) { /* not measured inside a replay: compute holds them */
        json_object_set_new(split, "gemm", json_null());
        json_object_set_new(split, "comm", json_null());
        json_object_set_new(split, "comm_total", json_null());
    }
    json_object_set_new(j, "zero", json_integer(b->zero));
    json_object_set_new(j, "cuda_graph", json_boolean(b->cuda_graph));
    json_object_set_new(j, "peak_flops_per_rank", b->peak > 0 ? json_real(b->peak) : json_null());
    json_object_set_new(j, "mfu", b->peak > 0 ? json_real(b->mfu) : json_null());
    json_t *more = json_pack(
        "{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:{s:i, s:i, s:i, s:f}, s:f, s:f, s:f, s:f}",
        "ms_per_iter", b->step_s * 1e3, "ms_median", b->step_med_s * 1e3, "ms_min", b->step_min_s * 1e3, "ms_max",
        b->step_max_s * 1e3, "tokens_per_iter", b->tokens, "tokens_per_s", b->tokens / b->step_s,
        "model_flops_per_iter", b->model_flops, "hardware_flops_per_iter", b->hardware_flops, "model_flops_per_s",
        b->model_flops / b->step_s, "model_flops_per_s_per_rank", b->model_flops / b->step_s / P,
        "hardware_flops_per_s", b->hardware_flops / b->step_s, "hardware_flops_per_s_per_rank",
        b->hardware_flops / b->step_s / P, "gemm_ceiling", "m", b->gemm_m, "n", b->gemm_n, "k", b->gemm_k,
        "flops_per_s_per_rank", b->gemm_flops, "model_percent_of_gemm_ceiling",
        100 * b->model_flops / b->step_s / P / b->gemm_flops, "param_bytes_per_rank", b->param_bytes,
        "activation_bytes_per_rank", b->act_bytes, "workspace_bytes_per_rank", b->ws_bytes);
    json_object_set_new(more, "optimizer_bytes_per_rank", json_real(b->opt_bytes));
    json_object_update(j, more);
    json_decref(more);
    json_object_set_new(j, "split_ms", split);
    char *s = json_dumps(j, JSON_REAL_PRECISION(9));
    printf("%s\n", s);
    free(s);
    json_decref(j);
}

static int bench_comm(int argc, char **argv) {
    const char *out = NULL;
    int threads = 0, min_kib = 4, max_kib = 65536, gemm_max = 2048;
    double min_s = 0.05;
    ax_train_opts o;
    ax_train_defaults(&o);
    o.batch = 0;
    ax_cli_model_flags mf = {0};
    ax_cli_backend_flags be = {0};
    ax_opt opts[] = {
        {"out", AX_OPT_STR, &out, "FILE", "write the machine description (JSON) for axonn plan --machine"},
        {"min-kib", AX_OPT_INT, &min_kib, "N", "smallest message, KiB (default 4)", AX_RANGE('[', 1, 1048576, ']')},
        {"max-kib", AX_OPT_INT, &max_kib, "N", "largest message, KiB (default 65536 = 64 MiB)",
         AX_RANGE('[', 1, 4194304, ']')},
        {"gemm-max", AX_OPT_INT, &gemm_max, "N", "largest square GEMM measured (default 2048)",
         AX_RANGE('[', 128, 65536, ']')},
        {"min-time", AX_OPT_DOUBLE, &min_s, "S", "seconds per measurement (default 0.05)", AX_RANGE('(', 0, 60, ']')},
        {"threads", AX_OPT_INT, &threads, "N", "threads per rank (default: OMP_NUM_THREADS or the backend's)",
         AX_RANGE('[', 0, 1024, ']')},
        AX_CLI_BACKEND_OPTS(be), /* before the job's: those from --init on say a model was given */
        AX_CLI_JOB_OPTS(o, mf),  /* a model: its kernels at its shapes too */
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 3, usage_comm, NULL, NULL, 0);
    if (rc) return rc;
    if (min_kib > max_kib) return AX_ERR("--min-kib %d: expected at most --max-kib %d", min_kib, max_kib);
    AX_TRY(ax_cli_backend(&be));
    ax_cli_threads(threads);
    ax_calib_opts co;
    ax_calib_defaults(&co);
    co.min_bytes = (size_t)min_kib << 10;
    co.max_bytes = (size_t)max_kib << 10;
    co.gemm_max = gemm_max;
    co.min_s = min_s;
    int model = 0, i = 0;
    while (strcmp(opts[i].name, "init")) i++;
    for (; opts[i].name; i++) model |= ax_args_given(opts, opts[i].name); /* --init and those after it */
    ax_plan_job job;
    if (model) {
        AX_TRY(ax_cli_job_options(opts, &mf, &o, &job));
        co.job = &job;
    }
    ax_machine m;
    AX_TRY(ax_calibrate(&m, &co, MPI_COMM_WORLD));
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (out) {
        AX_TRY(ax_agree(MPI_COMM_WORLD, rank == 0 ? ax_machine_write(&m, out) : 0));
        if (rank == 0) printf("machine description written to %s\n", out);
    }
    return 0;
}

int ax_cmd_bench(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[2], "comm") == 0) return bench_comm(argc, argv);
    int gemm = argc > 2 && strcmp(argv[2], "gemm") == 0;
    ax_train_opts o;
    ax_train_defaults(&o);
    o.cp = 0; /* not given: 1, or the planner's choice under --grid auto */
    const char *grid = NULL, *machine = NULL;
    ax_cli_backend_flags be = {0};
    ax_cli_model_flags mf = {0};
    int iters = 10, json = 0;
    o.batch = 0;
    ax_opt opts[] = {
        {"data", AX_OPT_STR, &o.data, "GLOB", "token shards (llm.c format; default: synthetic tokens)"},
        {"init", AX_OPT_STR, &o.init, "MODEL",
         "start from a model directory (config.json, model.safetensors) or MODEL.safetensors (config.json beside it)"},
        AX_CLI_MODEL_OPTS(mf),
        {"grid", AX_OPT_STR, &grid, "D,X,Y,Z|auto",
         "process grid, or auto: the planner's first choice (default: data parallelism over the ranks left)"},
        {"cp", AX_OPT_INT, &o.cp, "C",
         "context parallelism: C ranks split each sequence (default 1; --grid auto: the planner's choice)",
         AX_RANGE('[', 1, 65536, ']')},
        {"machine", AX_OPT_STR, &machine, "FILE|NAME", "machine description for --grid auto (default: an estimate)"},
        {"batch", AX_OPT_INT, &o.batch, "N", "global batch in sequences per step (default 8)",
         AX_RANGE('[', 1, 1048576, ']')},
        {"seq", AX_OPT_INT, &o.seq, "T", "tokens per sequence (default: n_positions)", AX_RANGE('[', 1, 1048576, ']')},
        {"grad-accum", AX_OPT_INT, &o.grad_accum, "N", "micro-batches per step (default 1)",
         AX_RANGE('[', 1, 65536, ']')},
        AX_CLI_STEP_OPTS(o),
        {"threads", AX_OPT_INT, &o.threads, "N", "OpenMP/BLAS threads per rank (default: cores / ranks per node)",
         AX_RANGE('[', 0, 1024, ']')},
        {"seed", AX_OPT_U64, &o.seed, "N", "initialisation seed (default 1337)"},
        AX_CLI_BACKEND_OPTS(be),
        {"iters", AX_OPT_INT, &iters, "N", "iterations (default 10; the first two are not timed)",
         AX_RANGE('[', 3, 1e6, ']')},
        {"json", AX_OPT_FLAG, &json, NULL, "print one JSON object with every field instead of text"},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 2 + gemm, usage, NULL, NULL, 0);
    if (rc) return rc;
    AX_TRY(ax_cli_backend(&be));
    AX_TRY(ax_cli_model_options(opts, &mf, o.init != NULL, &o.model));
    if (o.init) AX_TRY(ax_cli_init_config(o.init, &o.model));
    o.quiet = 1;
    AX_TRY(ax_cli_grid_option(grid, machine, &o, ax_args_given(opts, "zero"), MPI_COMM_WORLD, o.grid, &o.cp, &o.zero));
    if (!o.cp) o.cp = 1;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (gemm) {
        ax_bench_gemm_result g;
        AX_TRY(ax_bench_gemm(&o, json, MPI_COMM_WORLD, &g));
        if (rank == 0) ax_cli_print_bench_gemm(&g, json);
        return 0;
    }
    ax_bench_result b;
    AX_TRY(ax_bench(&o, iters, json, MPI_COMM_WORLD, &b));
    if (rank == 0) {
        if (json) print_json(&b);
        else print_text(&b);
    }
    return 0;
}
