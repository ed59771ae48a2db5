/* axonn bench gemm's output: one row per GEMM of a step, each layout's time. */
#include "cli/cli.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

static double gain_pct(const ax_bench_gemm_row *w) { return 100 * (w->sec[AX_GT_STORED] / w->sec[w->chosen] - 1); }

static void print_text(const ax_bench_gemm_result *g) {
    printf("bench gemm: %d ranks, grid D=%d X=%d Y=%d Z=%d, %d threads/rank, %s inputs (%s)\n", g->ranks, g->grid[0],
           g->grid[1], g->grid[2], g->grid[3], g->threads, g->dtype, g->kernel);
    printf("  ms per call, best of 20 rounds after a warm-up (3 for calls over 1.5 ms, 1 over 0.25 s); stored: as\n"
           "  the caller stores it, tA/tB/tAB: A, B or both copied transposed first (copy included), swap:\n"
           "  C^T = op(B)^T op(A)^T then transposed; another layout is chosen only when 5%% faster than stored\n");
    printf("  %-7s %-8s %-20s %-5s", "layer", "pass", "m x n x k", "trans");
    for (int L = 0; L < AX_GT_N; L++) printf(" %9s", ax_gemm_layout_names[L]);
    printf("  %-7s %7s\n", "chosen", "gain");
    for (int i = 0; i < AX_BENCH_GEMM_ROWS; i++) {
        const ax_bench_gemm_row *w = &g->row[i];
        char shape[40];
        snprintf(shape, sizeof shape, "%d x %d x %d", w->m, w->n, w->k);
        printf("  %-7s %-8s %-20s %c%c%s ", w->layer, w->pass, shape, w->tA ? 'T' : 'N', w->tB ? 'T' : 'N',
               w->beta != 0 ? "+C" : "  ");
        for (int L = 0; L < AX_GT_N; L++)
            if (w->sec[L] < 0) printf(" %9s", "-");
            else printf(" %9.3f", w->sec[L] * 1e3);
        printf("  %-7s %6.1f%%\n", ax_gemm_layout_names[w->chosen], gain_pct(w));
    }
    printf("  per step (calls x time, summed): stored %.1f ms, chosen %.1f ms, gain %.1f%%\n", g->step_stored_s * 1e3,
           g->step_tuned_s * 1e3, 100 * (g->step_stored_s / g->step_tuned_s - 1));
}

static void print_json(const ax_bench_gemm_result *g) {
    json_t *rows = json_array();
    for (int i = 0; i < AX_BENCH_GEMM_ROWS; i++) {
        const ax_bench_gemm_row *w = &g->row[i];
        json_t *ms = json_object();
        for (int L = 0; L < AX_GT_N; L++)
            if (w->sec[L] >= 0) json_object_set_new(ms, ax_gemm_layout_names[L], json_real(w->sec[L] * 1e3));
        char trans[3] = {w->tA ? 'T' : 'N', w->tB ? 'T' : 'N', 0};
        json_array_append_new(rows, json_pack("{s:s, s:s, s:i, s:i, s:i, s:s, s:f, s:i, s:o, s:s, s:f}", "layer",
                                              w->layer, "pass", w->pass, "m", w->m, "n", w->n, "k", w->k, "trans",
                                              trans, "beta", w->beta, "per_step", w->per_step, "ms", ms, "chosen",
                                              ax_gemm_layout_names[w->chosen], "gain_percent", gain_pct(w)));
    }
    json_t *j =
        json_pack("{s:i, s:[i,i,i,i], s:i, s:s, s:s, s:o, s:{s:f, s:f, s:f}}", "ranks", g->ranks, "grid", g->grid[0],
                  g->grid[1], g->grid[2], g->grid[3], "threads_per_rank", g->threads, "dtype", g->dtype, "kernel",
                  g->kernel, "gemms", rows, "step_ms", "stored", g->step_stored_s * 1e3, "chosen",
                  g->step_tuned_s * 1e3, "gain_percent", 100 * (g->step_stored_s / g->step_tuned_s - 1));
    char *s = json_dumps(j, JSON_REAL_PRECISION(6));
    printf("%s\n", s);
    free(s);
    json_decref(j);
}

void ax_cli_print_bench_gemm(const ax_bench_gemm_result *g, int json) {
    if (json) print_json(g);
    else print_text(g);
}
