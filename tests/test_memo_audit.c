/* The memorization audit: ROUGE-L on known cases; documents built from the
 * model's own greedy continuation count as exact matches, one changed token
 * lowers the match share by 1/suffix; batched cached decoding equals a naive
 * full-forward greedy decode; short documents are skipped. */
#include "test.h"
#include "grids.h"
#include "memo/audit.h"
#include "util/err.h"
#include "util/rng.h"

static ax_gpt m;
static ax_grid g;

/* greedy continuation by full forwards (no cache) */
static void naive_greedy(const int32_t *prompt, int n, int k, int32_t *out) {
    int32_t buf[64];
    memcpy(buf, prompt, n * sizeof(int32_t));
    float *full = ax_malloc((size_t)m.Vp * sizeof(float)), *row = ax_malloc((size_t)m.Vl * sizeof(float));
    for (int s = 0; s < k; s++) {
        ax_gpt_forward(&m, buf, NULL, NULL, 1, n + s, 0.0f);
        ax_gpt_logits(&m, row, n + s - 1, 1);
        ax_allgather_f32(&g.Y, row, full, m.Vl);
        int best = 0;
        for (int j = 1; j < m.cfg.vocab_size; j++)
            if (full[j] > full[best]) best = j;
        buf[n + s] = out[s] = best;
    }
    free(full);
    free(row);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int dims[4];
    ax_t_grid_args(argc, argv, &g, dims);
    int32_t a[] = {1, 2, 3, 4, 5}, b[] = {1, 9, 3, 9, 5}, c[] = {7, 8};
    CHECK(fabs(ax_rouge_l(a, 5, a, 5) - 1.0) < 1e-12, "ROUGE-L of identical sequences");
    CHECK(fabs(ax_rouge_l(a, 5, b, 5) - 0.6) < 1e-12, "ROUGE-L LCS 3 of 5: %g", ax_rouge_l(a, 5, b, 5));
    CHECK(ax_rouge_l(a, 5, c, 2) == 0.0, "ROUGE-L of disjoint sequences");

    char path[1024];
    ax_gpt_config cfg;
    snprintf(path, sizeof path, "%s/gpt_tiny/config.json", ax_t_data());
    if (ax_gpt_config_read(&cfg, path) || ax_gpt_init(&m, &cfg, &g)) ax_err_exit(0);
    snprintf(path, sizeof path, "%s/gpt_tiny/model.safetensors", ax_t_data());
    if (ax_gpt_load(&m, path)) ax_err_exit(0);

    enum { N = 7, SUF = 5 };
    int32_t *docs[N], lens[N];
    for (int d = 0; d < N; d++) {
        int plen = 1 + d; /* prompts of 1..7 tokens */
        lens[d] = plen + SUF;
        docs[d] = ax_malloc(lens[d] * sizeof(int32_t));
        for (int t = 0; t < plen; t++) docs[d][t] = (int32_t)(ax_rng_u64(3, d, t) % cfg.vocab_size);
        naive_greedy(docs[d], plen, SUF, docs[d] + plen);
    }
    docs[3][lens[3] - 2] = (docs[3][lens[3] - 2] + 1) % cfg.vocab_size; /* one wrong token */
    lens[6] = SUF;                                                      /* too short: skipped */
    ax_memo_doc res[N];
    ax_memo_summary sum;
    int32_t gen[N * SUF];
    ax_memo_audit(&m, docs, lens, NULL, N, SUF, 0, 4, res, gen, &sum, NULL, NULL);
    CHECK(sum.evaluated == N - 1 && res[6].skipped, "evaluated %d of %d", sum.evaluated, N);
    CHECK(sum.exact == N - 2, "exact matches %d, expected %d", sum.exact, N - 2);
    CHECK(!res[3].exact && fabs(res[3].match_frac - (SUF - 1.0) / SUF) < 1e-12, "changed token: match %.3f",
          res[3].match_frac);
    int gen_ok = 1;
    for (int d = 0; d < N - 1; d++)
        for (int s = 0; s < SUF; s++) gen_ok &= d == 3 ? 1 : gen[d * SUF + s] == docs[d][lens[d] - SUF + s];
    CHECK(gen_ok, "batched cached greedy decode differs from the naive one");
    /* --prefix: prompt of 2 tokens, reference the next SUF (not the document's end) */
    ax_memo_audit(&m, docs, lens, NULL, 1, 2, 1, 4, res, gen, &sum, NULL, NULL);
    CHECK(sum.evaluated == 1 && res[0].prompt_len == 1, "prefix mode prompt length %d", res[0].prompt_len);
    for (int d = 0; d < N; d++) free(docs[d]);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    int rc = ax_test_done("memo_audit");
    MPI_Finalize();
    return rc;
}
