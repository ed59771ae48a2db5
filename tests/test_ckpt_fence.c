/* ckpt_fence: a background checkpoint holds the state it saves, not the state
 * that follows (train/checkpoint.h, ax_ckpt_fence).
 *
 * On a backend of host memory an async save copies the parameters and the
 * AdamW moments in its thread while training goes on; the optimizer waits on
 * ax_ckpt_fence before its update (ax_adamw.before_update). Here the update
 * comes at once, right after begin. The committed checkpoint must load back
 * as the state before it, bit for bit, and equal a synchronous save of that
 * state byte for byte. The state is a
 * few million floats, so the copy takes milliseconds and an overwrite that
 * did not wait (a fence that returned early, or an optimizer that did not
 * call it) lands in it. Also: with no save
 * in flight the fence returns at once, and a fence after the stage does not
 * wait again. Arguments: --grid D,X,Y,Z. */
#include "test.h"
#include "grids.h"
#include "grid/grid.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "backend/backend.h"
#include "util/err.h"
#include "util/fileio.h"
#include <unistd.h>

/* ~5M parameters: 20 MB of parameters and 40 MB of moments; no vocabulary
 * padding on Y <= 2 (the moments here are set on padding too, and padding is
 * not saved) */
static ax_gpt_config cfg = {.n_layer = 4, .n_head = 4, .n_embd = 256, .block_size = 64, .vocab_size = 8192};

static int same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = NULL, *y = NULL;
    int same = !ax_read_file(a, &x, &na) && !ax_read_file(b, &y, &nb) && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

static void fence(void *w) { ax_ckpt_fence(w); }

static void fill(float *p, int64_t n, float base) {
    for (int64_t i = 0; i < n; i++) p[i] = base + (float)(i % 977) * 1e-3f;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int dims[4];
    ax_grid g;
    ax_t_grid_args(argc, argv, &g, dims);
    char dir[300], async_dir[400], sync_dir[400];
    int ppid = (int)getppid();
    MPI_Bcast(&ppid, 1, MPI_INT, 0, MPI_COMM_WORLD); /* one directory for all ranks */
    snprintf(dir, sizeof dir, "%s/axonn-fence-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", ppid);
    snprintf(async_dir, sizeof async_dir, "%s/async", dir);
    snprintf(sync_dir, sizeof sync_dir, "%s/sync", dir);
    if (g.rank == 0 && ax_mkdir_p(dir)) ax_err_exit(1);
    MPI_Barrier(MPI_COMM_WORLD);

    ax_gpt m;
    ax_adamw o;
    if (ax_gpt_init(&m, &cfg, &g)) ax_err_exit(1);
    ax_gpt_init_random(&m, 5);
    ax_adamw_init(&o, m.n_local);
    for (int64_t i = 0; i < m.n_local; i++) { /* from the parameters: equal on their replicas, as trained ones are */
        o.m[i] = 0.5f * m.params[i] + 0.25f;
        o.v[i] = m.params[i] * m.params[i] + 0.5f;
    }
    size_t bytes = (size_t)m.n_local * sizeof(float);
    float *want[3] = {ax_malloc(bytes), ax_malloc(bytes), ax_malloc(bytes)}, *flat[3] = {m.params, o.m, o.v};
    for (int k = 0; k < 3; k++) memcpy(want[k], flat[k], bytes);

    ax_ckpt_state cs = {.step = 1, .seed = 5, .batch = 1, .seq = 64, .steps = 2};
    ax_ckpt_writer *w;
    if (ax_ckpt_writer_init(&w, &m, &(ax_ckpt_opts){.async = 1})) ax_err_exit(1);
    ax_ckpt_fence(w); /* nothing in flight: returns */
    if (ax_ckpt_begin(w, async_dir, &o, &cs)) ax_err_exit(1);
    CHECK(ax_ckpt_pending(w), "an async save is not in flight after begin");
    /* the optimizer's update (zero gradients: decay and the moments' decay
     * change every value), waiting on the fence as the trainer has it do */
    o.before_update = fence, o.before_ctx = w;
    static const ax_hparams hp = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
    ax_be()->zero(m.grads, bytes);
    ax_adamw_update(&o, &m, &hp, hp.lr, 1, 1.0f);
    CHECK(memcmp(m.params, want[0], bytes) && memcmp(o.v, want[2], bytes), "the update changed nothing");
    ax_ckpt_fence(w); /* staged: no second wait */
    CHECK(ax_ckpt_poll(w, 1) == 1, "the async save did not commit");
    ax_ckpt_writer_free(w);

    /* the same state saved synchronously: the files must be the async ones' bytes */
    for (int k = 0; k < 3; k++) memcpy(flat[k], want[k], bytes);
    if (ax_ckpt_save(sync_dir, &m, &o, &cs)) ax_err_exit(1);
    if (g.rank == 0) {
        const char *files[2] = {"model.safetensors", "optim.safetensors"};
        for (int f = 0; f < 2; f++)
            CHECK(same_file(ax_t_join(async_dir, files[f]), ax_t_join(sync_dir, files[f])),
                  "%s: the async save's bytes differ from the synchronous save of the same state", files[f]);
    }
    /* and it loads back as the state before the overwrite */
    for (int k = 0; k < 3; k++) fill(flat[k], m.n_local, 3.0f);
    if (ax_ckpt_load(async_dir, &m, &o)) ax_err_exit(1);
    for (int k = 0; k < 3; k++)
        CHECK(!memcmp(flat[k], want[k], bytes), "flat vector %d loaded from the async save is not the saved state", k);

    MPI_Barrier(MPI_COMM_WORLD);
    if (g.rank == 0) ax_t_rmtree(dir);
    for (int k = 0; k < 3; k++) free(want[k]);
    ax_adamw_free(&o);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    int rc = ax_test_done("ckpt_fence");
    MPI_Finalize();
    return rc;
}
