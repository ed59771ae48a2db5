/* axonn.c public API: GPT training with 4D hybrid parallelism over MPI.
 *
 * Example: one training run on whatever grid the ranks form.
 *
 *   #include <axonn/axonn.h>
 *   int main(int argc, char **argv) {
 *       MPI_Init(&argc, &argv);
 *       ax_train_opts o;
 *       ax_train_defaults(&o);
 *       o.data = "data/train_*.bin";
 *       o.grid[0] = 2;             // data-parallel groups; X, Y, Z stay 1
 *       o.steps = 100;
 *       int rc = ax_train(&o, MPI_COMM_WORLD);   // 0, or -1 with ax_error()
 *       if (rc) fprintf(stderr, "%s\n", ax_error());
 *       MPI_Finalize();
 *       return rc ? 2 : 0;
 *   }
 *
 * The library never communicates on the caller's communicator: it duplicates it. */
#ifndef AXONN_AXONN_H
#define AXONN_AXONN_H
#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Architecture kinds of a decoder-only transformer: GPT-2 (LayerNorm with
 * bias, GELU MLP, learned positions, biases, tied embeddings) and Llama
 * (RMSNorm, SwiGLU MLP, rotary positions, no biases, grouped-query attention,
 * tied or untied embeddings). */
enum { AX_ARCH_GPT2 = 0, AX_ARCH_LLAMA = 1 };

/* Architecture hyper-parameters (Hugging Face config.json names in comments).
 * Zero-initialised fields take the defaults stated beside them ("0: ..."; set in one place,
 * ax_gpt_config_defaults in src/model/gpt.c). */
typedef struct {
    int n_layer, n_head, n_embd; /* num_hidden_layers, num_attention_heads, hidden_size */
    int block_size;              /* n_positions / max_position_embeddings */
    int vocab_size;              /* logical; padded internally as the grid needs, never visible */
    int arch;                    /* AX_ARCH_*: the layer's kinds, and the tensor names in files */
    int n_kv_head;               /* num_key_value_heads (0: n_head) */
    int n_inner;                 /* MLP width, intermediate_size (0: 4 n_embd) */
    int untied;                  /* Llama: tie_word_embeddings false, the LM head its own matrix */
    float norm_eps;              /* layer_norm_epsilon / rms_norm_eps (0: 1e-5) */
    double rope_theta;           /* 0: 10000 */
    /* rope_scaling of type "llama3" (rope_factor 0: none) */
    double rope_factor, rope_low_freq, rope_high_freq;
    int rope_orig_pos;
} ax_gpt_config;

/* Options of one training run; ax_train_defaults fills every field. */
typedef struct {
    const char *data, *val_data;       /* llm.c shard globs (NULL data: synthetic tokens); data may be a
                                          .jsonl of instruction examples (loss on completions only) */
    const char *tokenizer;             /* encodes instruction data (NULL: tokenizer.json of init) */
    const char *init;                  /* safetensors to start from (config.json beside it) */
    const char *out;                   /* output directory (checkpoints, final model) */
    const char *resume;                /* checkpoint directory to resume from; "auto": the newest
                                          complete one in out, or a fresh start when there is none */
    const char *metrics;               /* JSONL metrics file (default: <out>/metrics.jsonl) */
    const char *tensorboard;           /* TensorBoard event files into this directory (NULL: none) */
    ax_gpt_config model;               /* used when init is NULL */
    int grid[4];                       /* D, X, Y, Z; D 0: the ranks left after X*Y*Z*cp */
    int cp;                            /* context parallelism: ranks splitting each sequence (1: none) */
    int steps, batch, seq, grad_accum; /* batch, seq 0: the checkpoint's, else 8 and n_positions */
    double lr, min_lr_frac, beta1, beta2, eps, weight_decay, clip;
    int warmup;
    uint64_t seed;
    int shuffle;
    int save_every, exit_after; /* 0: off */
    int keep;                   /* complete checkpoints kept in out (older ones deleted) */
    int async_save;             /* checkpoint files written in the background while training goes on */
    const char *ckpt_writer;    /* "parallel" (default: every rank its slices) or "root" (rank 0 alone) */
    int64_t ckpt_chunk;         /* bytes per checksum range of checkpoint files (0: 16 MiB) */
    int max_skips;              /* stop (exit 3) after this many consecutive non-finite steps */
    int val_every, val_batches;
    int threads; /* OpenMP/BLAS threads per rank, 0: default */
    int log_every;
    int quiet;
    int profile;                /* report GEMM and per-group communication time */
    int goldfish_k, goldfish_h; /* goldfish loss: drop 1/k of targets by a hash of h ids (k 0: off) */
    const char *recompute;      /* activations rebuilt in backward: "none" (default), "attn", "block" */
    const char *dtype;          /* GEMM inputs: "fp32" (default) or "bf16" (fp32 master weights) */
    const char *overlap;        /* communication behind compute: "all" (default), "none", or a
                                   comma list of oar, ors, oag, dp (docs/algorithm.md §4) */
    int keep_gathered;          /* keep Z-gathered weights from forward to backward */
    double bucket_mb;           /* data-parallel gradient bucket, MiB (default 25) */
    int zero; /* 1: AdamW's state sharded over the data group (ZeRO-1, docs/design.md); 0 (default): replicated */
    int64_t max_shard_size;      /* the final model in shards of at most this many bytes when
                                    larger, with model.safetensors.index.json (default 5e9) */
    const char *export_dtype;    /* of the final model's tensors: "fp32" (default) or "bf16" */
    const char *gemm_tune;       /* GEMM layout tuning: "off" (default) or "on" */
    const char *gemm_tune_cache; /* its cache file; NULL: the default, "none": no file */
    int cuda_graph;              /* replay each step's forward and backward from a CUDA graph (groups on NCCL) */
    double peak_tflops;          /* a rank's peak for MFU, TFLOP/s (0: the GPU's datasheet figure, if known) */
} ax_train_opts;

void ax_train_defaults(ax_train_opts *o);
/* Runs (or resumes) training. Collective over comm. Returns 0, -1 with
 * ax_error(), or AX_TRAIN_DIVERGED when max_skips consecutive steps had a
 * non-finite loss or gradient norm (the last checkpoint written is the last good one). */
#define AX_TRAIN_DIVERGED (-3)
/* SIGTERM or SIGUSR1 stopped the run at a step boundary, after committing a
 * checkpoint of the steps done (with out); the axonn command exits with
 * status 128 + the signal's number, as if killed by it (train/stop.h). */
#define AX_TRAIN_SIGNALED (-4)
int ax_train(const ax_train_opts *o, MPI_Comm comm);
/* The last error of this thread: one line naming the input and what was expected. */
const char *ax_error(void);

#ifdef __cplusplus
}
#endif
#endif
