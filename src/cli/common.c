#include "cli/cli.h"
#include "comm/devices.h"
#include "backend/backend.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdio.h>
#include <string.h>

int ax_cli_preset(const char *name, ax_gpt_config *c) {
    static const struct {
        const char *name;
        ax_gpt_config c;
    } p[] = {
        {"tiny", {4, 4, 128, 128, 256}},
        {"small", {12, 12, 768, 256, 50257}},
        {"gpt2", {12, 12, 768, 1024, 50257}},
        {"gpt2-medium", {24, 16, 1024, 1024, 50257}},
        {"gpt2-large", {36, 20, 1280, 1024, 50257}},
        {"gpt2-xl", {48, 25, 1600, 1024, 50257}},
        /* the GPT sizes of the AxoNN SC'24 study (layers, heads, hidden; sequence 2048;
         * vocabulary 51200 assumed); see docs/planner.md */
        {"axonn-5b", {24, 32, 4096, 2048, 51200}},
        {"axonn-10b", {32, 40, 5120, 2048, 51200}},
        {"axonn-20b", {32, 56, 7168, 2048, 51200}},
        {"axonn-40b", {38, 72, 9216, 2048, 51200}},
        {"axonn-60b", {56, 72, 9216, 2048, 51200}},
        {"axonn-80b", {42, 96, 12288, 2048, 51200}},
        {"axonn-160b", {84, 96, 12288, 2048, 51200}},
        {"axonn-320b", {96, 128, 16384, 2048, 51200}},
        {"axonn-640b", {192, 128, 16384, 2048, 51200}},
    /* Llama 3 sizes as their config.json publish them (as recalled, see
     * docs/planner.md), n_positions cut to the 8192 of pre-training */
#define LLAMA3(l, h, kv, c, f, sep, fac) \
    {.n_layer = l,                       \
     .n_head = h,                        \
     .n_embd = c,                        \
     .block_size = 8192,                 \
     .vocab_size = 128256,               \
     .arch = AX_ARCH_LLAMA,              \
     .n_kv_head = kv,                    \
     .n_inner = f,                       \
     .untied = sep,                      \
     .norm_eps = 1e-5f,                  \
     .rope_theta = 500000,               \
     .rope_factor = fac,                 \
     .rope_low_freq = 1,                 \
     .rope_high_freq = 4,                \
     .rope_orig_pos = 8192}
        {"llama-3.2-1b", LLAMA3(16, 32, 8, 2048, 8192, 0, 32)},
        {"llama-3.2-3b", LLAMA3(28, 24, 8, 3072, 8192, 0, 32)},
        {"llama-3.1-8b", LLAMA3(32, 32, 8, 4096, 14336, 1, 8)},
        {"llama-3.1-70b", LLAMA3(80, 64, 8, 8192, 28672, 1, 8)},
        {"llama-3.1-405b", LLAMA3(126, 128, 8, 16384, 53248, 1, 8)},
#undef LLAMA3
    };
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        if (strcmp(name, p[i].name) == 0) {
            *c = p[i].c;
            return 0;
        }
    return AX_ERR(
        "--preset '%s': expected tiny, small, gpt2, gpt2-medium, gpt2-large, gpt2-xl, axonn-5b, -10b, "
        "-20b, -40b, -60b, -80b, -160b, -320b, -640b, llama-3.2-1b, llama-3.2-3b, llama-3.1-8b, -70b or -405b",
        name);
}

void ax_cli_preset_job(const char *name, int *batch, int *seq) {
    *batch = *seq = 0;
    if (name && strncmp(name, "axonn-", 6) == 0) {
        *batch = 2048;
        *seq = 2048;
    } /* 4M tokens per step */
}

/* Each rank reads the files itself: what one rank fails to read fails all (ax_agree). */
static int read_model_config(const char *path, ax_gpt_config *cfg) {
    if (!path)
        return AX_ERR(
            "--model: required (a Hugging Face model directory, or a model.safetensors with config.json beside it)");
    char st[4200], cfgpath[4200];
    ax_gpt_model_paths(path, st, cfgpath, sizeof st);
    if (!ax_file_exists(st)) return AX_ERR("--model %s: no such file %s", path, st);
    return ax_gpt_config_read(cfg, cfgpath);
}

int ax_cli_open_model(const char *path, const int grid[4], ax_grid *g, ax_gpt *m) {
    ax_gpt_config cfg;
    AX_TRY(ax_agree(MPI_COMM_WORLD, read_model_config(path, &cfg)));
    AX_TRY(ax_grid_init(g, MPI_COMM_WORLD, grid[0], grid[1], grid[2], grid[3]));
    AX_TRY(ax_gpt_init(m, &cfg, g));
    if (ax_agree(g->world, ax_gpt_load(m, path))) {
        ax_gpt_free(m);
        ax_grid_free(g);
        return -1;
    }
    return 0;
}

int ax_cli_backend(const ax_cli_backend_flags *b) {
    ax_device_comm mode = AX_DEVICE_COMM_AUTO;
    if (b->device_comm) AX_TRY(ax_device_comm_parse(b->device_comm, &mode));
    ax_set_device_comm(mode);
    int local, nlocal, rank;
    ax_node_rank(MPI_COMM_WORLD, &local, &nlocal);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    AX_TRY(ax_agree(MPI_COMM_WORLD, ax_backend_use(b->name ? b->name : "cpu", local)));
    char line[1024];
    AX_TRY(ax_agree(MPI_COMM_WORLD, ax_devices_check(MPI_COMM_WORLD, b->share_gpu, line, sizeof line)));
    /* a diagnostic, on stderr: stdout is eval --json's object and sample's text */
    if (rank == 0 && !ax_be()->host_memory) fprintf(stderr, "%s\n", line);
    return 0;
}

void ax_cli_threads(int n) {
    if (n > 0) ax_be()->set_threads(n);
}
