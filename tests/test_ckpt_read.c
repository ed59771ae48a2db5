/* ckpt_read: each rank verifies and reads only its part of a checkpoint
 * (train/checkpoint.h, ax_ckpt_load; docs/reliability.md).
 *
 * A checkpoint of a small model with 4096-byte checksum ranges, on the grid
 * given (--grid D,X,Y,Z). The byte spans each rank reads of the two
 * safetensors files (ax_gpt_read_spans) must together cover each file's data
 * section exactly, and on a grid that splits the tensors each rank's spans
 * must be less than all of it. Then one bit is flipped in a byte the last
 * rank reads and rank 0 does not: loading must fail on every rank with the
 * line naming optim.safetensors and its checksum, and leave the state as it
 * was; so must an optimizer file that lacks the moments. */
#include "test.h"
#include "grids.h"
#include "grid/grid.h"
#include "io/safetensors.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "util/err.h"
#include "util/fileio.h"
#include <unistd.h>

static ax_gpt_config cfg = {.n_layer = 2, .n_head = 4, .n_embd = 64, .block_size = 16, .vocab_size = 500};

static void mark(void *ctx, int64_t off, int64_t len) { memset((unsigned char *)ctx + off, 1, (size_t)len); }

/* this rank's reads of file f (prefixes p[0], p[1]) as a byte map of its size */
static unsigned char *read_map(ax_gpt *m, const char *path, const char *const p[2], int64_t *size, int64_t *start) {
    ax_st_file f;
    if (ax_st_open(&f, path)) ax_err_exit(1);
    *size = (int64_t)f.map_len;
    *start = (int64_t)f.data_start;
    unsigned char *map = ax_calloc((size_t)*size, 1);
    for (int k = 0; k < 2 && p[k]; k++)
        if (ax_gpt_read_spans(m, &f, p[k], mark, map)) ax_err_exit(1);
    ax_st_close(&f);
    return map;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int dims[4];
    ax_grid g;
    ax_t_grid_args(argc, argv, &g, dims);
    int P = g.size, split = dims[1] * dims[2] * dims[3] > 1, ppid = (int)getppid();
    MPI_Bcast(&ppid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char dir[300], ck[400], bad[400];
    snprintf(dir, sizeof dir, "%s/axonn-ckread-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", ppid);
    snprintf(ck, sizeof ck, "%s/ckpt-000001", dir);
    snprintf(bad, sizeof bad, "%s/flipped", dir);

    ax_gpt m;
    ax_adamw o;
    if (ax_gpt_init(&m, &cfg, &g)) ax_err_exit(1);
    ax_gpt_init_random(&m, 3);
    ax_adamw_init(&o, m.n_local);
    for (int64_t i = 0; i < m.n_local; i++) o.m[i] = m.params[i] * 0.5f, o.v[i] = m.params[i] * m.params[i];
    ax_ckpt_state cs = {.step = 1, .seed = 3, .batch = 1, .seq = 16, .steps = 2};
    ax_ckpt_writer *w;
    if (g.rank == 0 && ax_mkdir_p(dir)) ax_err_exit(1);
    if (ax_ckpt_writer_init(&w, &m, &(ax_ckpt_opts){.chunk = 4096}) || ax_ckpt_begin(w, ck, &o, &cs)) ax_err_exit(1);
    ax_ckpt_writer_free(w);

    /* the spans: together the whole data section, each rank a part of it */
    const char *files[2] = {"model.safetensors", "optim.safetensors"};
    const char *prefix[2][2] = {{"", NULL}, {"opt.m.", "opt.v."}};
    int64_t flip_at = -1;
    for (int f = 0; f < 2; f++) {
        int64_t size, start, mine = 0, all = 0, last_not_first = -1;
        unsigned char *map = read_map(&m, ax_t_join(ck, files[f]), prefix[f], &size, &start);
        /* per byte: how many ranks read it, whether the last rank does, whether rank 0 does */
        int *cnt = ax_calloc((size_t)size * 3, sizeof(int));
        for (int64_t b = 0; b < size; b++)
            cnt[3 * b] = map[b], cnt[3 * b + 1] = g.rank == P - 1 && map[b], cnt[3 * b + 2] = g.rank == 0 && map[b];
        MPI_Allreduce(MPI_IN_PLACE, cnt, (int)size * 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int64_t b = start; b < size; b++) {
            mine += map[b] != 0;
            all += cnt[3 * b] > 0;
            if (cnt[3 * b + 1] && !cnt[3 * b + 2] && last_not_first < 0) last_not_first = b;
        }
        CHECK(all == size - start, "%s: the ranks' reads cover %lld of the %lld data bytes", files[f], (long long)all,
              (long long)(size - start));
        if (split)
            CHECK(mine < size - start, "%s: a rank reads all %lld data bytes on a split grid", files[f],
                  (long long)mine);
        if (f == 1) flip_at = last_not_first;
        free(map);
        free(cnt);
    }

    /* a bit flipped where only the last rank reads: every rank fails alike, the state unchanged */
    if (split) {
        CHECK(flip_at >= 0, "no byte of optim.safetensors is read by the last rank and not by rank 0");
        if (g.rank == 0 && flip_at >= 0) {
            char cmd[1000];
            snprintf(cmd, sizeof cmd, "cp -r %s %s", ck, bad);
            if (system(cmd) != 0) ax_err_exit(1);
            FILE *fp = fopen(ax_t_join(bad, "optim.safetensors"), "r+b");
            fseek(fp, (long)flip_at, SEEK_SET);
            int c = fgetc(fp);
            fseek(fp, (long)flip_at, SEEK_SET);
            fputc(c ^ 4, fp);
            fclose(fp);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        float before = o.v[0];
        int rc = ax_agree(MPI_COMM_WORLD, ax_ckpt_load(bad, &m, &o));
        CHECK(rc != 0 && strstr(ax_err_msg(), "flipped/optim.safetensors: checksum"),
              "a flipped bit the last rank reads and rank 0 does not: %s", rc ? ax_err_msg() : "loaded");
        CHECK(o.v[0] == before, "a failed load changed the moments");
        /* an optimizer file without the moments (the model file in its place): one line, nothing read */
        char nomom[400], cmd[1200];
        snprintf(nomom, sizeof nomom, "%s/nomom", dir);
        snprintf(cmd, sizeof cmd, "cp -r %s %s && cp %s/model.safetensors %s/optim.safetensors", ck, nomom, ck, nomom);
        if (g.rank == 0 && system(cmd) != 0) ax_err_exit(1);
        MPI_Barrier(MPI_COMM_WORLD);
        rc = ax_agree(MPI_COMM_WORLD, ax_ckpt_load(nomom, &m, &o));
        CHECK(rc != 0 && strstr(ax_err_msg(), "nomom/optim.safetensors: tensor 'opt.m."),
              "an optimizer file without moments: %s", rc ? ax_err_msg() : "loaded");
        CHECK(o.v[0] == before, "a failed load changed the moments");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g.rank == 0) ax_t_rmtree(dir);
    ax_adamw_free(&o);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    int rc = ax_test_done("ckpt_read");
    MPI_Finalize();
    return rc;
}
