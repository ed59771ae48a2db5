/* A run's setup and teardown, shared by train and bench (train/run.h): options
 * checked, grid, model, data and outputs; and each step's sequences. */
#define _GNU_SOURCE 1
#include "axonn/axonn.h"
#include "backend/backend.h"
#include "backend/gemm_tune.h"
#include "grid/grid.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "train/run.h"
#include "train/resume.h"
#include "comm/devices.h"
#include "train/source.h"
#include "train/stop.h"
#include "measure/peak.h"
#include "train/tblog.h"
#include "memo/goldfish.h"
#include "util/err.h"
#include "util/fileio.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ax_train_defaults(ax_train_opts *o) {
    memset(o, 0, sizeof *o);
    o->model = (ax_gpt_config){.n_layer = 4, .n_head = 4, .n_embd = 128, .block_size = 128, .vocab_size = 256};
    o->grid[0] = 0; /* the ranks left: data parallelism unless told otherwise */
    o->grid[1] = o->grid[2] = o->grid[3] = 1;
    o->cp = 1;
    o->keep = 3;
    o->async_save = 1;
    o->ckpt_writer = "parallel";
    o->max_skips = 5;
    o->steps = 200;
    o->batch = 0;
    o->seq = 0;
    o->grad_accum = 1; /* 0: from the checkpoint, else 8 and n_positions */
    o->lr = 1e-3;
    o->min_lr_frac = 0.1;
    o->beta1 = 0.9;
    o->beta2 = 0.95;
    o->eps = 1e-8;
    o->weight_decay = 0.1;
    o->clip = 1.0;
    o->warmup = 10;
    o->seed = 1337;
    o->shuffle = 1;
    o->val_every = 50;
    o->val_batches = 4;
    o->log_every = 10;
    o->out = "out";
    o->goldfish_h = 13;
    o->recompute = "none";
    o->dtype = "fp32";
    o->gemm_tune = "off";
    o->overlap = "all";
    o->bucket_mb = AX_BUCKET_BYTES_DEFAULT / (double)(1 << 20);
    o->max_shard_size = 5000000000LL; /* transformers' save_pretrained default, 5GB */
    o->export_dtype = "fp32";
}

void ax_train_default_shape(int *batch, int *seq, const ax_gpt_config *c) {
    if (!*batch) *batch = 8;
    if (!*seq) *seq = c->block_size;
}

/* Threads per rank: the flag, else OMP_NUM_THREADS, else the node's cores
 * shared among the ranks on it. */
static void set_threads(ax_run *r) {
    int n = r->o->threads;
    if (n <= 0 && getenv("OMP_NUM_THREADS")) n = atoi(getenv("OMP_NUM_THREADS"));
    if (n <= 0) {
        int rank_in_node, local;
        ax_node_rank(r->g.world, &rank_in_node, &local);
        n = (int)sysconf(_SC_NPROCESSORS_ONLN) / local;
        if (n < 1) n = 1;
    }
    ax_be()->set_threads(n);
}

static int check_options(const ax_train_opts *o, const ax_gpt_config *c, ax_grid *g) {
    if (o->steps < 1) return AX_ERR("--steps %d: expected >= 1", o->steps);
    if (strcmp(o->export_dtype, "fp32") && strcmp(o->export_dtype, "bf16"))
        return AX_ERR("--export-dtype %s: expected fp32 or bf16", o->export_dtype);
    if (o->max_shard_size < 0) return AX_ERR("--max-shard-size %lld: expected >= 0", (long long)o->max_shard_size);
    if (o->grad_accum < 1) return AX_ERR("--grad-accum %d: expected >= 1", o->grad_accum);
    if (o->batch < 1 || o->batch % o->grad_accum)
        return AX_ERR("--batch %d: expected a positive multiple of --grad-accum %d", o->batch, o->grad_accum);
    int mb = o->batch / o->grad_accum;
    if (mb % (g->gd * g->gz))
        return AX_ERR("--batch %d: each micro-batch of %d sequences must divide over G_data*G_z = %d ranks", o->batch,
                      mb, g->gd * g->gz);
    if (o->seq < 1 || o->seq > c->block_size)
        return AX_ERR("--seq %d: expected 1..%d (the model's n_positions)", o->seq, c->block_size);
    AX_TRY(ax_cp_check(o->seq, g->gc));
    if (g->gc > 1 && !ax_be()->attention_block_forward)
        return AX_ERR("--cp %d: backend %s has no block attention (ring attention's kernels)", g->gc, ax_be()->name);
    /* written so that NaN fails every test: callers of the library skip the CLI's ranges */
    if (!(o->lr > 0 && o->lr <= 10)) return AX_ERR("--lr %g: expected a number in (0, 10]", o->lr);
    if (!(o->min_lr_frac >= 0 && o->min_lr_frac <= 1))
        return AX_ERR("--min-lr-frac %g: expected a number in [0, 1]", o->min_lr_frac);
    if (!(o->beta1 >= 0 && o->beta1 < 1)) return AX_ERR("--beta1 %g: expected a number in [0, 1)", o->beta1);
    if (!(o->beta2 >= 0 && o->beta2 < 1)) return AX_ERR("--beta2 %g: expected a number in [0, 1)", o->beta2);
    if (!(o->eps > 0 && o->eps <= 1)) return AX_ERR("--eps %g: expected a number in (0, 1]", o->eps);
    if (!(o->weight_decay >= 0 && o->weight_decay <= 10))
        return AX_ERR("--weight-decay %g: expected a number in [0, 10]", o->weight_decay);
    if (!(o->clip >= 0 && o->clip <= 1e9)) return AX_ERR("--clip %g: expected a number in [0, 1e+09]", o->clip);
    if (o->warmup < 0) return AX_ERR("--warmup %d: expected >= 0", o->warmup);
    if (o->keep < 1) return AX_ERR("--keep %d: expected >= 1", o->keep);
    if (strcmp(o->ckpt_writer, "parallel") && strcmp(o->ckpt_writer, "root"))
        return AX_ERR("--ckpt-writer '%s': expected parallel or root", o->ckpt_writer);
    if (o->ckpt_chunk < 0 || o->ckpt_chunk > ((int64_t)1 << 40))
        return AX_ERR("--ckpt-chunk %lld: expected 0 (the default) up to 1 TiB", (long long)o->ckpt_chunk);
    if (o->max_skips < 1) return AX_ERR("--max-skips %d: expected >= 1", o->max_skips);
    if (o->goldfish_k && o->goldfish_k < 2) return AX_ERR("--goldfish-k %d: expected >= 2 (or 0: off)", o->goldfish_k);
    if (o->goldfish_k && o->goldfish_h < 1) return AX_ERR("--goldfish-h %d: expected >= 1", o->goldfish_h);
    if (!(o->peak_tflops >= 0 && o->peak_tflops <= 1e6))
        return AX_ERR("--peak-tflops %g: expected a number in (0, 1e6] (or 0: the device's datasheet figure)",
                      o->peak_tflops);
    if (o->cuda_graph && !ax_be()->capture_begin)
        return AX_ERR("--cuda-graph: the %s backend captures no graphs (expected --backend cuda)", ax_be()->name);
    /* a graph holds NCCL's collectives, not MPI's on host buffers */
    char staged[160];
    if (o->cuda_graph && ax_grid_staged(g, staged, sizeof staged))
        return AX_ERR("--cuda-graph: the collectives of %s go through the host by MPI, which a CUDA graph cannot "
                      "hold; expected every group of more than one rank on NCCL (a GPU per rank)",
                      staged);
    return ax_gpt_check_grid(c, g);
}

static void print_memory(ax_run *r) {
    double mib = 1.0 / (1 << 20);
    double p = r->m.n_local * 4.0 * mib;
    ax_gpt_alloc_acts(&r->m, r->Bl, r->o->seq);
    double a = r->m.act_bytes * mib;
    double w = r->m.ws_bytes * mib;
    /* ZeRO-1: the moments and the summed gradients of the rank's share */
    double opt = 2 * ax_gpt_opt_numel(&r->m) * 4.0 * mib, gs = r->m.n_share * 4.0 * mib;
    char zero[96] = "";
    if (r->m.zero)
        snprintf(zero, sizeof zero, " (ZeRO-1: a share of %.3g%%, its gradient sums %.1f)",
                 100.0 * r->m.n_share / r->m.n_local, gs);
    AX_SAY(r,
           "memory per rank: parameters %.1f MiB, gradients %.1f, AdamW %.1f%s, activations %.1f (recompute %s), "
           "Z gather/scatter buffers %.1f: %.1f MiB\n",
           p, p, opt, zero, a, r->o->recompute, w, 2 * p + opt + gs + a + w);
}

/* What the steps of ax_run_setup hand on: the model's config, the checkpoint
 * resumed from, and the step settings parsed from the options. */
typedef struct {
    ax_gpt_config cfg;
    ax_resume ck; /* the checkpoint started from */
    int overlap, emulated;
    const char *kernel; /* the GEMM kernel of the dtype */
    double load_s;      /* the checkpoint's verification and reads, slowest rank */
} setup_ctx;

/* G_data as given, or (0) the ranks left after X*Y*Z*C */
static int grid_data(const ax_train_opts *o, MPI_Comm comm) {
    int size;
    MPI_Comm_size(comm, &size);
    if (o->grid[0]) return o->grid[0];
    long rest = (long)o->grid[1] * o->grid[2] * o->grid[3] * (o->cp > 0 ? o->cp : 1);
    return size % rest ? 1 : (int)(size / rest); /* 1: ax_grid_init_cp names the mismatch */
}

/* grid, threads, GEMM timing and tuning */
static int setup_runtime(ax_run *r) {
    const ax_train_opts *o = r->o;
    AX_TRY(ax_grid_init_cp(&r->g, r->comm, grid_data(o, r->comm), o->grid[1], o->grid[2], o->grid[3], o->cp));
    r->root = r->g.rank == 0;
    /* no progress bar under an MPI launcher: it forwards output through a
     * pseudo-terminal even when the user's output is a file or a pipe */
    r->tty = r->root && isatty(1) && !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE");
    set_threads(r);
    ax_be()->gemm_timing(o->profile);
    int tune;
    AX_TRY(ax_gemm_tune_parse(o->gemm_tune, &tune));
    ax_gemm_tune_set(tune, o->gemm_tune_cache, r->root);
    return 0;
}

/* Where the run starts: a checkpoint (its config, step, batch and seq), a
 * model to fine-tune (its config), or the options' model; then the batch
 * shape. Every rank reads the files itself; each rank-local step ends in
 * ax_agree, so a file that one rank cannot read fails the whole job the same way. */
static int resolve_start(ax_run *r, setup_ctx *s) {
    ax_train_opts *o = &r->args;
    ax_ckpt_state saved;
    s->cfg = o->model;
    MPI_Comm w = r->g.world;
    r->st = (ax_ckpt_state){.step = 0, .seed = o->seed};
    if ((r->resumed = ax_resume_find(r, &s->ck)) < 0) return -1;
    if (r->resumed && (r->resumed = ax_resume_peek(r, &s->ck, &s->cfg, &saved)) < 0) return -1;
    if (r->resumed) AX_TRY(ax_resume_take(r, &s->ck, &s->cfg, &saved, NULL));
    else s->cfg = o->model;
    if (!r->resumed && o->init) {
        char st[4200], path[4200];
        ax_gpt_model_paths(o->init, st, path, sizeof path);
        AX_TRY(ax_agree(w, ax_gpt_config_read(&s->cfg, path)));
    }
    ax_train_default_shape(&o->batch, &o->seq, &s->cfg);
    r->st.batch = o->batch;
    r->st.seq = o->seq;
    r->st.steps = o->steps;
    return 0;
}

/* the peak behind MFU: --peak-tflops, else the device's datasheet figure for
 * the GEMM dtype (measure/peak.h), else none (no MFU) */
static void resolve_peak(ax_run *r, ax_dtype t) {
    const char *dev = ax_be()->device_name ? ax_be()->device_name() : NULL;
    r->peak = r->o->peak_tflops > 0 ? r->o->peak_tflops * 1e12 : ax_peak_flops(dev, t);
    if (r->o->peak_tflops > 0) snprintf(r->peak_from, sizeof r->peak_from, "--peak-tflops");
    else if (r->peak > 0) snprintf(r->peak_from, sizeof r->peak_from, "%s, datasheet, dense %s", dev, ax_dtype_name(t));
    else
        snprintf(r->peak_from, sizeof r->peak_from, "no datasheet figure for %s%s%s: pass --peak-tflops",
                 dev ? "" : "the ", dev ? dev : ax_be()->name, dev ? "" : " backend");
}

/* the options checked, the model built in the recompute mode, dtype and
 * overlap they name, and its parameters read or initialised */
static int build_model(ax_run *r, setup_ctx *s) {
    const ax_train_opts *o = r->o;
    AX_TRY(check_options(o, &s->cfg, &r->g));
    ax_recompute recompute = AX_RECOMPUTE_NONE;
    AX_TRY(ax_recompute_parse(o->recompute, &recompute));
    ax_dtype dtype;
    AX_TRY(ax_dtype_parse(o->dtype, &dtype));
    AX_TRY(ax_overlap_parse(o->overlap, &s->overlap));
    if (!(o->bucket_mb > 0)) return AX_ERR("--bucket-mb %g: expected a positive size", o->bucket_mb);
    s->kernel = ax_be()->gemm_kernel(dtype, &s->emulated);
    if (!s->kernel)
        return AX_ERR("--dtype %s: this build of the %s backend has no %s GEMMs (built without oneDNN: install "
                      "libdnnl-dev and rebuild)",
                      o->dtype, ax_be()->name, o->dtype);
    resolve_peak(r, dtype);
    AX_TRY(ax_gpt_init(&r->m, &s->cfg, &r->g));
    ax_gpt_set_recompute(&r->m, recompute);
    ax_gpt_set_dtype(&r->m, dtype);
    ax_gpt_set_overlap(&r->m, s->overlap, o->keep_gathered, (int64_t)(o->bucket_mb * (1 << 20)));
    ax_gpt_set_zero(&r->m, o->zero);
    ax_adamw_init(&r->opt, ax_gpt_opt_numel(&r->m));
    MPI_Comm w = r->g.world;
    double t0 = MPI_Wtime();
    const ax_gpt_config built = s->cfg;
    while (r->resumed && ax_agree(w, ax_ckpt_load(s->ck.dir, &r->m, &r->opt)) != 0) {
        ax_ckpt_state saved;
        if ((r->resumed = ax_resume_pass_over(r, &s->ck)) == 1 &&
            (r->resumed = ax_resume_peek(r, &s->ck, &s->cfg, &saved)) == 1)
            AX_TRY(ax_resume_take(r, &s->ck, &s->cfg, &saved, &built));
        if (r->resumed < 0) return -1;
        if (!r->resumed) { /* none verifies: a fresh start, from state a failed read may have touched */
            r->st.step = 0, r->st.seed = o->seed, s->cfg = built;
            ax_adamw_free(&r->opt);
            ax_adamw_init(&r->opt, ax_gpt_opt_numel(&r->m));
        }
    }
    s->load_s = MPI_Wtime() - t0; /* ax_agree's all-reduce: every rank has finished */
    if (!r->resumed && o->init) AX_TRY(ax_agree(w, ax_gpt_load(&r->m, o->init)));
    else if (!r->resumed) ax_gpt_init_random(&r->m, r->st.seed);
    return 0;
}

/* the training and validation data, the step's hyper-parameters and buffers */
static int open_data(ax_run *r, const setup_ctx *s) {
    const ax_train_opts *o = r->o;
    char tok[4200] = ""; /* instruction data: the tokenizer given, or the model's */
    if (o->tokenizer) snprintf(tok, sizeof tok, "%s", o->tokenizer);
    else if (o->init) {
        char st[4200];
        ax_gpt_model_paths(o->init, st, tok, sizeof tok);
        ax_dirname(tok, st, sizeof st);
        snprintf(tok, sizeof tok, "%s/tokenizer.json", st);
        if (!ax_file_exists(tok)) tok[0] = 0;
    }
    int V = s->cfg.vocab_size;
    int rc = ax_source_open(&r->data, o->data, tok[0] ? tok : NULL, o->seq, V, o->shuffle, r->st.seed);
    if (rc == 0 && o->val_data) rc = ax_source_open(&r->val, o->val_data, NULL, o->seq, V, AX_SOURCE_IN_ORDER, 0);
    AX_TRY(ax_agree(r->g.world, rc));
    r->h = (ax_hparams){.lr = o->lr,
                        .min_lr_frac = o->min_lr_frac,
                        .beta1 = o->beta1,
                        .beta2 = o->beta2,
                        .eps = o->eps,
                        .weight_decay = o->weight_decay,
                        .clip = o->clip,
                        .warmup = o->warmup,
                        .steps = o->steps};
    r->Bl = o->batch / o->grad_accum / (r->g.gd * r->g.gz);
    r->seqs = ax_malloc((size_t)o->grad_accum * r->Bl * (o->seq + 1) * sizeof(int32_t));
    r->scratch = ax_train_scratch_alloc(o->grad_accum, r->Bl, o->seq, o->cuda_graph);
    if (o->goldfish_k || r->data.inst) r->weights = ax_malloc((size_t)o->grad_accum * r->Bl * o->seq * sizeof(float));
    if (o->goldfish_k) {
        r->window = ax_malloc(((size_t)o->goldfish_h + o->seq) * sizeof(int32_t));
        r->mask = ax_malloc((size_t)o->seq * sizeof(float));
    }
    return 0;
}

/* the optimizer's wait for a save's background copy of the state */
static void fence(void *w) { ax_ckpt_fence(w); }

/* the output directory, the metrics file (a resumed run's trimmed and appended
 * to) and the TensorBoard log (the same) */
static int open_outputs(ax_run *r) {
    const ax_train_opts *o = r->o;
    char path[4200];
    int rc = 0;
    if (r->root && o->out) rc = ax_mkdir_p(o->out);
    if (rc == 0 && r->root && o->tensorboard) rc = ax_tblog_open(&r->tb, r);
    if (rc == 0 && r->root && (o->metrics || o->out)) {
        if (o->metrics) snprintf(path, sizeof path, "%s", o->metrics);
        else snprintf(path, sizeof path, "%s/metrics.jsonl", o->out);
        if (r->resumed) rc = ax_resume_trim_metrics(path, r->st.step);
        r->metrics = rc ? NULL : fopen(path, r->resumed ? "a" : "w");
        if (!rc && !r->metrics) rc = AX_ERR("%s: cannot open the metrics file for writing: %s", path, strerror(errno));
    }
    return ax_agree(r->g.world, rc);
}

/* the start-up lines: grid, model, precision, overlap, data, memory */
static void say_setup(ax_run *r, const setup_ctx *s) {
    const ax_train_opts *o = r->o;
    const ax_gpt_config *mc = &r->m.cfg; /* defaults resolved */
    AX_SAY(r,
           "axonn: %d ranks, grid D=%d X=%d Y=%d Z=%d C=%d, backend %s (compiled: %s), %d threads/rank; "
           "model %s L=%d H=%d KV=%d C=%d F=%d V=%d T=%d%s (%.2fM parameters)\n",
           r->g.size, r->g.gd, r->g.gx, r->g.gy, r->g.gz, r->g.gc, ax_be()->name, ax_backend_names(),
           ax_be()->threads(), mc->arch == AX_ARCH_LLAMA ? "llama" : "gpt2", mc->n_layer, mc->n_head, mc->n_kv_head,
           mc->n_embd, mc->n_inner, mc->vocab_size, mc->block_size, mc->untied ? " untied" : "",
           ax_gpt_num_params(mc) / 1e6);
    char comm_line[512];
    ax_grid_comm_line(&r->g, comm_line, sizeof comm_line);
    if (comm_line[0]) AX_SAY(r, "%s\n", comm_line);
    AX_SAY(r, "precision: %s GEMM inputs, fp32 accumulation, master weights and reductions; GEMMs: %s\n", o->dtype,
           s->kernel);
    char ov[32];
    AX_SAY(r, "overlap: %s%s; gradient buckets of %.3g MiB (%d)\n", ax_overlap_name(s->overlap, ov, sizeof ov),
           o->keep_gathered ? ", gathered weights kept for backward" : "", o->bucket_mb, r->m.nbuckets);
    if (o->cuda_graph) AX_SAY(r, "CUDA graph: each step's forward and backward captured at step 2, then replayed\n");
    if (r->peak > 0) AX_SAY(r, "MFU: model FLOP/s per rank over %.4g TFLOP/s (%s)\n", r->peak / 1e12, r->peak_from);
    else AX_SAY(r, "MFU: not reported (%s)\n", r->peak_from);
    if (strcmp(o->gemm_tune, "on") == 0)
        AX_SAY(r, "GEMM layout tuning: on, each new GEMM's layouts timed on first use; cache %s\n",
               ax_gemm_tune_cache_path()[0] ? ax_gemm_tune_cache_path() : "none");
    if (s->emulated)
        AX_SAY(r, "note: this CPU has no bf16 instructions, so bf16 is emulated (same numerics as bf16 "
                  "hardware, fp32 speed or slower)\n");
    if (o->goldfish_k)
        AX_SAY(r, "goldfish loss: k = %d, h = %d (about 1/%d of targets left out)\n", o->goldfish_k, o->goldfish_h,
               o->goldfish_k);
    AX_SAY(r, "data: %s; batch %d x %d tokens (%d micro-batches of %d per data x Z rank)%s\n",
           o->data ? o->data : "synthetic Markov stream", o->batch, o->seq, o->grad_accum, r->Bl,
           r->resumed ? "; resuming" : "");
    if (r->resumed)
        AX_SAY(r, "resumed from %s at step %d (verified and read in %.1f s)\n", s->ck.dir, r->st.step, s->load_s);
    print_memory(r);
}

int ax_run_setup(ax_run *r) {
    setup_ctx s = {0};
    AX_TRY(setup_runtime(r));
    AX_TRY(resolve_start(r, &s));
    AX_TRY(build_model(r, &s));
    AX_TRY(open_data(r, &s));
    AX_TRY(open_outputs(r));
    ax_stop_catch(); /* from here a signal stops the run at a step boundary */
    if (r->o->out) {
        const ax_train_opts *o = r->o;
        ax_ckpt_opts co = {
            .root_only = !strcmp(o->ckpt_writer, "root"), .async = o->async_save, .chunk = o->ckpt_chunk};
        AX_TRY(ax_ckpt_writer_init(&r->ckw, &r->m, &co));
        r->opt.before_update = fence, r->opt.before_ctx = r->ckw; /* a save's background copy, done first */
    }
    snprintf(r->last_ckpt, sizeof r->last_ckpt, "none written by this run");
    say_setup(r, &s);
    return 0;
}

int ax_run_setup_measure(ax_run *r, const ax_train_opts *o, int steps, int flags, MPI_Comm comm) {
    ax_train_opts a = *o;
    a.out = NULL;
    a.metrics = NULL;
    a.tensorboard = NULL;
    a.resume = NULL;
    a.save_every = 0;
    a.profile = (flags & AX_MEASURE_PROFILE) != 0;
    a.steps = steps;
    ax_run_init(r, &a, comm); /* copies the options */
    r->silent = (flags & AX_MEASURE_SILENT) != 0;
    int rc = ax_run_setup(r);
    if (rc) ax_run_teardown(r);
    return rc;
}

/* The step's sequences and their loss weights: instruction data's (0 on
 * prompt tokens) times, with the goldfish loss, its mask, hashed over the
 * stream around each sequence (memo/goldfish.h), so a passage drops the same
 * tokens wherever the windows cut it. */
void ax_run_load_step(ax_run *r, int step) {
    const ax_train_opts *o = r->o;
    int ctx = o->goldfish_k ? o->goldfish_h - 1 : 0;
    for (int a = 0; a < o->grad_accum; a++)
        for (int b = 0; b < r->Bl; b++) {
            size_t i = (size_t)a * r->Bl + b;
            int32_t *seq = r->seqs + i * (o->seq + 1);
            float *w = r->weights ? r->weights + i * o->seq : NULL;
            int64_t pos = ax_seq_pos(&r->g, o->batch, o->grad_accum, step, a, b);
            int have = ax_source_get(&r->data, pos, ctx, o->goldfish_k ? r->window : seq);
            int weighted = w && ax_source_weights(&r->data, pos, w);
            if (!o->goldfish_k) continue;
            ax_goldfish_mask(r->window + ctx, have, o->seq, o->goldfish_k, o->goldfish_h, weighted ? r->mask : w);
            for (int t = 0; weighted && t < o->seq; t++) w[t] *= r->mask[t];
            memcpy(seq, r->window + ctx, (o->seq + 1) * sizeof(int32_t));
        }
}

void ax_run_init(ax_run *r, const ax_train_opts *o, MPI_Comm comm) {
    memset(r, 0, sizeof *r);
    r->args = *o;
    r->o = &r->args;
    r->comm = comm;
}

void ax_run_teardown(ax_run *r) {
    ax_stop_release();
    ax_ckpt_writer_free(r->ckw); /* a background write left uncommitted: resume ignores it */
    if (r->metrics) fclose(r->metrics);
    ax_tblog_close(r->tb);
    ax_source_close(&r->data);
    ax_source_close(&r->val);
    ax_adamw_free(&r->opt);
    if (r->m.p) ax_gpt_free(&r->m);
    free(r->seqs);
    ax_train_scratch_free(r->scratch);
    free(r->weights);
    free(r->window);
    free(r->mask);
    if (r->g.world) ax_grid_free(&r->g);
}
