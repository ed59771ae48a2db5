/* KV-cache decoding gives the logits of a full forward over the whole prefix,
 * for rows of different lengths decoded together, on the grid given as
 * "--grid D,X,Y,Z"; greedy choices agree with a full-vocabulary argmax.
 *
 * In fp32 and in bf16 (ax_gpt_set_dtype): under bf16 both paths round the
 * same weights (the forward's bf16 copy) and the same activations to bf16
 * before each GEMM, so they differ only where an fp32 sum (a GEMM over one
 * row or over the prefix, cached or full attention) lands on the other side
 * of a bf16 rounding boundary, each such flip moving a GEMM input by 2^-8
 * relative. The bound is 1e-5 for both dtypes, fp32's: bf16 measured 0 on
 * the tiny model (one rank, X2 Y2, Y2 Z2; fp32 2-3e-7), while a decoder that
 * cached unrounded q|k|v, or the prefill's stale working copy, measured
 * 0.05 and 0.26. */
#include "test.h"
#include "grids.h"
#include "model/gpt_decode.h"
#include "util/err.h"
#include "util/rng.h"

enum { R = 3, STEPS = 6 };

/* the worst norm-wise relative logit difference over every row and step, all ranks */
static double decode_vs_full(ax_gpt *m, ax_grid *g, int *argmax_ok) {
    const ax_gpt_config *cfg = &m->cfg;
    int plen[R] = {1, 5, 9}, Tmax = cfg->block_size;
    int32_t seq[R][32];
    for (int b = 0; b < R; b++)
        for (int t = 0; t < 32; t++) seq[b][t] = (int32_t)(ax_rng_u64(42, b, t) % cfg->vocab_size);
    ax_kvcache c;
    ax_kv_init(&c, m, R, Tmax);
    for (int b = 0; b < R; b++) ax_kv_prefill(&c, m, b, seq[b], plen[b]);
    float *want = ax_malloc((size_t)R * m->Vl * sizeof(float));
    float *got = ax_malloc((size_t)R * m->Vl * sizeof(float));
    float *full = ax_malloc((size_t)m->Vp * sizeof(float));
    double worst = 0;
    *argmax_ok = 1;
    for (int s = 0; s <= STEPS; s++) {
        if (s > 0) {
            int32_t next[R];
            for (int b = 0; b < R; b++) next[b] = seq[b][plen[b] + s - 1];
            ax_kv_step(&c, m, next, R);
        }
        ax_be()->copy(got, c.logits, (size_t)R * m->Vl * sizeof(float));
        int32_t am[R];
        ax_kv_argmax(&c, m, R, am);
        for (int b = 0; b < R; b++) { /* the full forward over the row's prefix */
            int n = plen[b] + s;
            ax_gpt_forward(m, seq[b], NULL, NULL, 1, n, 0.0f);
            ax_gpt_logits(m, want + (size_t)b * m->Vl, n - 1, 1);
            int best = 0; /* argmax over the whole vocabulary, gathered */
            ax_allgather_f32(&g->Y, want + (size_t)b * m->Vl, full, m->Vl);
            for (int j = 1; j < cfg->vocab_size; j++)
                if (full[j] > full[best]) best = j;
            *argmax_ok &= am[b] == best;
        }
        for (int b = 0; b < R; b++) {
            float *gr = got + (size_t)b * m->Vl, *wr = want + (size_t)b * m->Vl;
            int nv = cfg->vocab_size - m->v0 < m->Vl ? cfg->vocab_size - m->v0 : m->Vl;
            worst = fmax(worst, ax_t_reldiff(gr, wr, nv > 0 ? nv : 0));
        }
    }
    free(full);
    free(got);
    free(want);
    ax_kv_free(&c);
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, argmax_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int dims[4];
    ax_grid g;
    ax_gpt m;
    ax_t_grid_args(argc, argv, &g, dims);
    char path[1024];
    ax_gpt_config cfg;
    snprintf(path, sizeof path, "%s/gpt_tiny/config.json", ax_t_data());
    if (ax_gpt_config_read(&cfg, path)) ax_err_exit(0);
    if (ax_gpt_init(&m, &cfg, &g)) ax_err_exit(0);
    snprintf(path, sizeof path, "%s/gpt_tiny/model.safetensors", ax_t_data());
    if (ax_gpt_load(&m, path)) ax_err_exit(0);

    const ax_dtype dts[2] = {AX_F32, AX_BF16};
    for (int k = 0; k < 2; k++) {
        ax_gpt_set_dtype(&m, dts[k]);
        int argmax_ok;
        double worst = decode_vs_full(&m, &g, &argmax_ok);
        const char *dn = ax_dtype_name(dts[k]);
        CHECK(worst < 1e-5, "%s: cached decoding differs from the full forward by %.3g", dn, worst);
        CHECK(argmax_ok, "%s: greedy choice differs from the full-vocabulary argmax", dn);
        if (g.rank == 0)
            printf("grid %d,%d,%d,%d %s: worst relative logit difference %.2g\n", g.gd, g.gx, g.gy, g.gz, dn, worst);
    }
    ax_gpt_free(&m);
    ax_grid_free(&g);
    int rc = ax_test_done("decode");
    MPI_Finalize();
    return rc;
}
