/* axonn: train, evaluate and sample GPT models with 4D hybrid parallelism. */
#include "cli/cli.h"
#include "backend/backend.h"
#include "comm/devices.h"
#include "train/stop.h"
#include "util/err.h"
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    printf("usage: [mpirun -np P] axonn <command> [options]\n\n"
           "commands:\n"
           "  train    train or fine-tune a GPT-2 model (4D grid: --grid D,X,Y,Z)\n"
           "  eval     loss and perplexity of a model on token shards\n"
           "  sample   continue a prompt with a model\n"
           "  prepare  text files -> token shards\n"
           "  tokenizer train|encode|decode  byte-level BPE tokenizers\n"
           "  memorize verbatim-memorization audit of a model on documents\n"
           "  bench    time training steps (paper's method); 'bench comm': measure this machine\n"
           "  plan     rank every grid of P ranks by predicted step time and memory\n"
           "  plot     loss curves of runs (their metrics.jsonl) as an SVG\n\n"
           "'axonn <command> --help' lists each command's options; 'axonn --version' the build.\n");
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("axonn %s (backends: %s)\n", AX_VERSION, ax_backend_names());
        int emulated;
        for (int t = AX_F32; t <= AX_BF16; t++) {
            const char *k = ax_be()->gemm_kernel((ax_dtype)t, &emulated);
            printf("  %s %s GEMMs: %s\n", ax_be()->name, ax_dtype_name((ax_dtype)t),
                   k ? k : "unavailable (built without oneDNN)");
        }
        char lib[1200];
        ax_device_comm_library(lib, sizeof lib);
        if (*lib) printf("  cuda collectives: %s\n", lib); /* opened at run time (comm/nccl.h) */
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    /* Keep freed memory in the process: fresh pages cost a fault each, and MPI's
     * large temporaries would otherwise be unmapped and re-faulted every call. */
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, -1);
    int (*cmd)(int, char **) = NULL;
    if (strcmp(argv[1], "train") == 0) cmd = ax_cmd_train;
    else if (strcmp(argv[1], "eval") == 0) cmd = ax_cmd_eval;
    else if (strcmp(argv[1], "sample") == 0) cmd = ax_cmd_sample;
    else if (strcmp(argv[1], "prepare") == 0) cmd = ax_cmd_prepare;
    else if (strcmp(argv[1], "tokenizer") == 0) cmd = ax_cmd_tokenizer;
    else if (strcmp(argv[1], "memorize") == 0) cmd = ax_cmd_memorize;
    else if (strcmp(argv[1], "bench") == 0) cmd = ax_cmd_bench;
    else if (strcmp(argv[1], "plan") == 0) cmd = ax_cmd_plan;
    else if (strcmp(argv[1], "plot") == 0) cmd = ax_cmd_plot;
    else {
        fprintf(stderr,
                "axonn: error: unknown command '%s' (expected train, eval, sample, prepare, tokenizer, memorize, "
                "bench, plan or plot)\n",
                argv[1]);
        return 2;
    }
    /* Open MPI's non-blocking all-reduce picks recursive doubling by default,
     * much slower than the blocking one for large messages; Rabenseifner's
     * (reduce-scatter + all-gather) matches it (figures: docs/design.md,
     * Choices and why). Every collective the trainer issues is non-blocking (docs/design.md),
     * so this is the default unless the user set one. Other MPIs ignore it. */
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
    /* Started without mpirun, Open MPI 4 forks a daemon for the lone rank at
     * every command's start, for nothing axonn uses (no spawning). */
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    int provided; /* OpenMP threads never call MPI */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rc = cmd(argc, argv);
    if (rc == AX_TRAIN_DIVERGED) ax_err_exit_status(1, 3);
    if (rc == AX_TRAIN_SIGNALED) { /* said on stdout: stopped, saved; the status a kill by it would give */
        MPI_Finalize();
        return 128 + ax_stop_signal();
    }
    if (rc < 0) ax_err_exit(1);
    MPI_Finalize();
    return 0;
}
