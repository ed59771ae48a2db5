/* Hugging Face checkpoints split into shards under model.safetensors.index.json
 * (tests/ref/make_sharded_fixtures.py), on the grid given as "--grid D,X,Y,Z":
 * every rank's parameters, read from only its byte ranges, equal those of
 * reading each whole tensor and extracting the shard (llama_tiny, and gpt_tiny
 * whose Conv1D weights are stored transposed); the f32 shards load bitwise as
 * the single file, the bf16 and f16 shards bitwise as each other and within
 * bf16 rounding of it. On one rank: broken indexes and shards fail with one
 * line naming the file and tensor.
 *
 * Export (ax_model_save): the fixtures saved from the grid as shards of at
 * most 40 kB (several; the index names every tensor) load back bitwise, in
 * bf16 as the rounded values; a later single-file save removes the shards
 * and the index; a sharded save that fails on its second shard leaves no
 * shard or index and the earlier model in place. */
#define _GNU_SOURCE 1
#include "test.h"
#include "grids.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "backend/bf16.h"
#include "util/err.h"
#include <glob.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

static ax_grid g;

static void init_model(ax_gpt *m, const char *dir) {
    char path[1024];
    ax_gpt_config cfg;
    snprintf(path, sizeof path, "%s/%s/config.json", ax_t_data(), dir);
    if (ax_gpt_config_read(&cfg, path) || ax_gpt_init(m, &cfg, &g)) ax_err_exit(0);
}

static void load(ax_gpt *m, const char *dir, float *dst) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ax_t_data(), dir);
    if (ax_gpt_load(m, path)) ax_err_exit(0);
    memcpy(dst, m->params, m->n_local * sizeof(float));
}

/* the loader before ranged reads: whole tensors, transposed, then extracted */
static void load_whole(ax_gpt *m, const char *dir, float *dst) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/model.safetensors", ax_t_data(), dir);
    ax_st_file f;
    if (ax_st_open(&f, path)) ax_err_exit(0);
    for (int i = 0; i < m->np; i++) {
        ax_param *p = &m->p[i];
        if (!p->present) continue;
        int64_t R = p->shard.rows, C = p->shard.cols, row0 = 0;
        float *full = ax_malloc(R * C * sizeof(float)), *tmp = ax_malloc(R * C * sizeof(float));
        for (int s = 0; s < (p->nsrc ? p->nsrc : 1); s++) {
            int64_t rows = p->nsrc ? p->src_rows[s] : R;
            const ax_st_tensor *t = ax_st_find(&f, p->nsrc ? p->src[s] : p->name);
            CHECK(t && ax_st_read_f32(&f, t, tmp, rows * C) == 0, "%s: %s", p->name, ax_err_msg());
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < C; c++)
                    full[(row0 + r) * C + c] = p->hf_transposed ? tmp[c * rows + r] : tmp[r * C + c];
            row0 += rows;
        }
        ax_shard_extract(&p->shard, &g, full, dst + p->offset);
        free(full);
        free(tmp);
    }
    ax_st_close(&f);
}

static void test_ranges(const char *dir) {
    ax_gpt m;
    init_model(&m, dir);
    float *a = ax_malloc(m.n_local * sizeof(float)), *b = ax_malloc(m.n_local * sizeof(float));
    load(&m, dir, a);
    load_whole(&m, dir, b);
    CHECK(memcmp(a, b, m.n_local * sizeof(float)) == 0, "%s: ranged reads differ from whole-tensor reads", dir);
    free(a);
    free(b);
    ax_gpt_free(&m);
}

static void test_shards(void) {
    ax_gpt m;
    init_model(&m, "llama_tiny");
    size_t n = m.n_local;
    float *one = ax_malloc(n * 4), *f32 = ax_malloc(n * 4), *bf = ax_malloc(n * 4), *hf = ax_malloc(n * 4);
    load(&m, "llama_tiny", one);
    load(&m, "llama_sharded/f32", f32);
    load(&m, "llama_sharded/bf16", bf);
    load(&m, "llama_sharded/f16/model.safetensors.index.json", hf);
    CHECK(memcmp(one, f32, n * 4) == 0, "f32 shards differ from the single file");
    CHECK(memcmp(bf, hf, n * 4) == 0, "bf16 and f16 shards differ");
    int far = 0;
    for (size_t i = 0; i < n; i++) far += fabsf(bf[i] - one[i]) > fabsf(one[i]) * (1.0f / 256) + 1e-7f;
    CHECK(far == 0, "%d bf16 values further than bf16 rounding from the f32 ones", far);
    free(one);
    free(f32);
    free(bf);
    free(hf);
    ax_gpt_free(&m);
}

/* ------------------------------------------------------------ export */

static int count(const char *dir, const char *pattern) {
    char pat[256];
    glob_t gl;
    snprintf(pat, sizeof pat, "%s/%s", dir, pattern);
    int n = glob(pat, 0, NULL, &gl) == 0 ? (int)gl.gl_pathc : 0;
    if (n) globfree(&gl);
    return n;
}

static void test_export(const char *fixture) {
    char dir[64];
    int pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(dir, sizeof dir, "/tmp/axonn_export_%d", pid);
    ax_gpt m;
    init_model(&m, fixture);
    size_t n = m.n_local;
    float *want = ax_malloc(n * 4), *rounded = ax_malloc(n * 4);
    load(&m, fixture, want);
    for (size_t i = 0; i < n; i++) rounded[i] = ax_bf16_widen(ax_bf16_round(want[i]));

    CHECK(ax_model_save(dir, &m, 40000, AX_ST_F32) == 0, "%s: sharded save: %s", fixture, ax_err_msg());
    int nshards = count(dir, "model-*-of-*.safetensors");
    CHECK(nshards >= 2 && count(dir, "model.safetensors.index.json") == 1 && count(dir, "model.safetensors") == 0,
          "%s: expected shards and an index, found %d shards", fixture, nshards);
    memset(m.params, 0, n * 4);
    CHECK(ax_gpt_load(&m, dir) == 0 && memcmp(m.params, want, n * 4) == 0,
          "%s: sharded export loads back otherwise: %s", fixture, ax_err_msg());
    memcpy(m.params, want, n * 4);
    CHECK(ax_model_save(dir, &m, 40000, AX_ST_BF16) == 0, "%s: bf16 save: %s", fixture, ax_err_msg());
    CHECK(ax_gpt_load(&m, dir) == 0 && memcmp(m.params, rounded, n * 4) == 0,
          "%s: bf16 export is not the rounded model", fixture);
    memcpy(m.params, want, n * 4);
    CHECK(ax_model_save(dir, &m, 0, AX_ST_F32) == 0, "%s: single save: %s", fixture, ax_err_msg());
    CHECK(count(dir, "model-*-of-*.safetensors") == 0 && count(dir, "model.safetensors.index.json") == 0,
          "%s: a single-file save left the earlier shards or index", fixture);
    memset(m.params, 0, n * 4);
    CHECK(ax_gpt_load(&m, dir) == 0 && memcmp(m.params, want, n * 4) == 0, "%s: single file loads back otherwise",
          fixture);

    /* the second shard cannot be renamed into place (a directory holds its name) */
    char blocker[128];
    snprintf(blocker, sizeof blocker, "%s/model-00002-of-%05d.safetensors", dir, nshards);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank has looked at the directory */
    if (g.rank == 0) mkdir(blocker, 0755);
    memset(m.params, 0, n * 4);
    CHECK(ax_model_save(dir, &m, 40000, AX_ST_F32) != 0 && strstr(ax_err_msg(), "model-00002-of-"),
          "%s: a failed shard is not reported: %s", fixture, ax_err_msg());
    CHECK(count(dir, "model-*-of-*.safetensors") == 1 && count(dir, "model.safetensors.index.json") == 0,
          "%s: a failed sharded save left shards or an index", fixture);
    CHECK(ax_gpt_load(&m, dir) == 0 && memcmp(m.params, want, n * 4) == 0, "%s: the earlier model did not survive",
          fixture);
    MPI_Barrier(MPI_COMM_WORLD);
    if (g.rank == 0) {
        rmdir(blocker);
        ax_remove_tree(dir);
    }
    free(want);
    free(rounded);
    ax_gpt_free(&m);
}

/* ------------------------------------------------------------ bad input */

static char tmp[64];

static void put(const char *name, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    FILE *fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
}

/* a shard of one tensor named name, of dtype dt and n elements (zeros) */
static void put_shard(const char *file, const char *name, ax_st_dtype dt, int64_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp, file);
    ax_st_writer w;
    void *z = calloc((size_t)n, 8);
    if (ax_st_writer_init(&w, path)) ax_err_exit(0);
    ax_st_writer_declare(&w, name, dt, 1, &n);
    if (ax_st_writer_write(&w, z, (size_t)n * ax_st_dtype_size(dt)) || ax_st_writer_commit(&w)) ax_err_exit(0);
    free(z);
}

/* the f32 fixture's index with one entry's shard replaced (NULL: dropped) */
static void put_index(const char *tensor, const char *shard) {
    char src[1024], line[512], out[8192] = "";
    snprintf(src, sizeof src, "%s/llama_sharded/f32/model.safetensors.index.json", ax_t_data());
    FILE *fp = fopen(src, "r");
    char key[256];
    snprintf(key, sizeof key, "\"%s\"", tensor);
    while (fgets(line, sizeof line, fp)) {
        if (!strstr(line, key)) {
            strcat(out, line);
            continue;
        }
        if (shard)
            snprintf(out + strlen(out), sizeof out - strlen(out), "    %s: \"%s\"%s\n", key, shard,
                     strstr(line, "\",") ? "," : "");
    }
    fclose(fp);
    if (!shard) { /* a dropped last entry leaves a trailing comma */
        char *c = strrchr(out, ',');
        if (c && !strchr(c, '"')) *c = ' ';
    }
    put("model.safetensors.index.json", out);
}

static void expect_fail(ax_gpt *m, const char *label, const char *w1, const char *w2) {
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", tmp);
    ax_err_clear();
    int rc = ax_gpt_load(m, path);
    const char *msg = ax_err_msg();
    CHECK(rc != 0 && strstr(msg, w1) && strstr(msg, w2) && !strchr(msg, '\n'), "%s: '%s' lacks '%s' / '%s'", label, msg,
          w1, w2);
    printf("  %-18s -> %s\n", label, msg);
}

static void test_bad(void) {
    snprintf(tmp, sizeof tmp, "/tmp/ax_shards_XXXXXX");
    if (!mkdtemp(tmp)) ax_err_exit(0);
    for (int i = 1; i <= 3; i++) {
        char a[1024], b[256];
        snprintf(a, sizeof a, "%s/llama_sharded/f32/model-0000%d-of-00003.safetensors", ax_t_data(), i);
        snprintf(b, sizeof b, "%s/model-0000%d-of-00003.safetensors", tmp, i);
        if (symlink(a, b)) ax_err_exit(0);
    }
    ax_gpt m;
    init_model(&m, "llama_tiny");
    const char *norm = "model.layers.1.input_layernorm.weight";
    put_index(norm, "model-00009-of-00003.safetensors");
    expect_fail(&m, "missing shard", "model-00009-of-00003.safetensors", norm);
    put_index(norm, NULL);
    expect_fail(&m, "missing tensor", "index.json", "'model.layers.1.input_layernorm.weight' missing");
    put_index(norm, "model-00001-of-00003.safetensors");
    expect_fail(&m, "not in its shard", "model-00001-of-00003.safetensors", "does not hold it");
    put_shard("odd.safetensors", norm, AX_ST_F32, 47);
    put_index(norm, "odd.safetensors");
    expect_fail(&m, "wrong shape", "odd.safetensors",
                "'model.layers.1.input_layernorm.weight': expected F32 [48], found F32 [47]");
    put_shard("odd.safetensors", norm, AX_ST_I64, 48);
    expect_fail(&m, "I64", "odd.safetensors",
                "'model.layers.1.input_layernorm.weight': dtype I64 cannot be read as floats");
    put("model.safetensors.index.json", "{\"weight_map\": [1]}");
    expect_fail(&m, "no weight_map", "index.json", "weight_map");
    ax_gpt_free(&m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd)) {}
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int dims[4];
    ax_t_grid_args(argc, argv, &g, dims);
    test_ranges("llama_tiny");
    test_ranges("gpt_tiny");
    test_shards();
    test_export("llama_tiny");
    test_export("gpt_tiny");
    if (g.size == 1) test_bad();
    ax_grid_free(&g);
    int rc = ax_test_done("st_shards");
    MPI_Finalize();
    return rc;
}
