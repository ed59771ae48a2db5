/* ckpt_share: the parallel writer's partition is checked exactly before a
 * byte is written (model/gpt.h, ax_gpt_share_check; docs/reliability.md).
 * On the grid given (--grid D,X,Y,Z) the shares the model makes tile the
 * data section. Forged shares must be refused on every rank, with one line
 * naming the byte range: one segment of the last rank moved 4 bytes on (an
 * overlap beside a gap of the same size, so the byte count still adds up:
 * a check of totals passes it), one segment dropped (a gap), and rank 0's
 * last segment 4 bytes longer (into the next rank's bytes, or past the end). */
#include "test.h"
#include "grids.h"
#include "grid/grid.h"
#include "model/gpt.h"
#include "util/err.h"

static ax_gpt_config cfg = {.n_layer = 2, .n_head = 4, .n_embd = 64, .block_size = 16, .vocab_size = 500};

/* checks s, expecting a refusal naming `want` (NULL: acceptance) on every rank */
static void expect(const ax_gpt *m, const ax_gpt_share *s, const char *label, const char *want) {
    int rc = ax_gpt_share_check(m, s);
    if (!want) CHECK(rc == 0, "%s: refused: %s", label, ax_err_msg());
    else CHECK(rc != 0 && strstr(ax_err_msg(), want), "%s: rc %d, '%s'", label, rc, rc ? ax_err_msg() : "");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int dims[4];
    ax_grid g;
    ax_t_grid_args(argc, argv, &g, dims);
    int P = g.size, last = g.rank == P - 1;
    ax_gpt m;
    ax_gpt_share s;
    if (ax_gpt_init(&m, &cfg, &g) || ax_gpt_share_init(&m, &s, AX_SHARE_PARAMS)) ax_err_exit(1);
    expect(&m, &s, "the model's shares", NULL);
    int64_t bytes = 0, total;
    for (int k = 0; k < s.nseg; k++) bytes += s.seg[k].n;
    MPI_Allreduce(&bytes, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == s.data_bytes, "the shares sum to %lld bytes of %lld", (long long)total, (long long)s.data_bytes);

    int k = s.nseg / 2; /* a segment in the middle of the last rank's */
    int64_t off = s.seg[k].off;
    if (last) s.seg[k].off += 4;
    expect(&m, &s, "a segment moved 4 bytes on", "written by");
    if (last) s.seg[k].off = off;

    int64_t n = s.seg[k].n;
    if (last) s.seg[k].n = 0;
    expect(&m, &s, "a segment dropped", "by no rank");
    if (last) s.seg[k].n = n;

    if (g.rank == 0) s.seg[s.nseg - 1].n += 4;
    expect(&m, &s, "a segment 4 bytes longer", "would be written");
    if (g.rank == 0) s.seg[s.nseg - 1].n -= 4;
    expect(&m, &s, "restored", NULL);

    ax_gpt_share_free(&s);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    int rc = ax_test_done("ckpt_share");
    MPI_Finalize();
    return rc;
}
