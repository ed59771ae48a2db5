/* The performance model (src/plan): collective volumes against the table of
 * docs/algorithm.md §2 worked by hand for a small model, the memory estimate against what
 * model/gpt.c allocates on several grids and recompute modes, the reasons a
 * grid is rejected, the ranking and the minimum rank count, the alpha-beta
 * fit, and machine descriptions written and read back. Pure arithmetic: the
 * model is laid out on a grid of sizes only (no communicators are needed);
 * only the calibration's timer (ax_time_all) talks, on every rank it runs on. */
#include "test.h"
#include "backend/backend.h"
#include "model/gpt.h"
#include "plan/calibrate.h"
#include "plan/plan.h"
#include "measure/timing.h"
#include "train/flops.h"
#include "measure/peak.h"
#include "util/err.h"
#include "util/stats.h"
#include <time.h>
#include <unistd.h>

/* beta 1 s/byte, alpha 0 for every collective: a group's seconds are its bytes */
static void unit_machine(ax_machine *m) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "unit");
    m->ranks_per_node = 1 << 20;
    m->mem_bytes = 1e12;
    m->gemm_flops = 1e9;
    m->attn_flops = 1e9;
    m->mem_bw = 1e9;
    m->overlap_eff = 1;
    for (int op = 0; op < AX_COLL_N; op++) m->fit[m->nfit++] = (ax_coll_fit){op, 0, 0, 0, 1};
}

static ax_plan_job small_job(void) {
    ax_plan_job j;
    ax_plan_job_defaults(&j);
    j.cfg = (ax_gpt_config){.n_layer = 2, .n_head = 4, .n_embd = 32, .block_size = 16, .vocab_size = 100};
    j.batch = 8;
    j.seq = 16;
    return j;
}

/* the sizes of a grid (D, X, Y, Z) with context split cp, at coordinates 0 */
static void fake_grid_cp(ax_grid *g, const int d[4], int cp) {
    memset(g, 0, sizeof *g);
    g->gd = d[0];
    g->gx = d[1];
    g->gy = d[2];
    g->gz = d[3];
    g->gc = cp;
    g->size = d[0] * d[1] * d[2] * d[3] * cp;
}

static void fake_grid(ax_grid *g, const int d[4]) { fake_grid_cp(g, d, 1); }

static double ring(int p, int ar) { return (ar ? 2.0 : 1.0) * (p - 1) / p; }

/* docs/algorithm.md §2, per FC layer and micro-batch, m rows, k in, n out: the X, Y and Z
 * volumes in elements; v[3] the Z all-gathers' share of v[2] (the weights, bf16 under bf16) */
static void fc_volume(double m, double k, double n, int transposed, const int g[4], double v[4]) {
    int X = g[1], Y = g[2], Z = g[3];
    double w = ring(Z, 0) * k * n / (X * Y); /* all-gather forward, again backward, reduce-scatter */
    v[2] += 3 * w;
    v[3] += 2 * w;
    if (!transposed) {
        v[0] += ring(X, 1) * m * n / Y;
        v[1] += ring(Y, 1) * m * k / X;
    } else {
        v[1] += ring(Y, 1) * m * n / X;
        v[0] += ring(X, 1) * m * k / Y;
    }
}

/* Bytes: fp32 4 an element; under bf16 (ab 2) only the FC weights' gathers move bf16 (the
 * chunks' bf16 copy): the activations' all-reduces (partial sums, dX, logits) and the token
 * table stay fp32, as nn/linear.c and model/gpt.c send them. */
static void test_volumes(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    int grids[][4] = {{2, 2, 2, 2}, {1, 4, 2, 1}, {2, 1, 2, 3}, {1, 2, 1, 4}};
    for (size_t t = 0; t < 2 * sizeof grids / sizeof *grids; t++) {
        const int *g = grids[t / 2];
        int ab = t % 2 ? 2 : 4;
        j.act_bytes = ab;
        int D = g[0], X = g[1], Y = g[2], Z = g[3];
        if ((j.batch) % (D * Z)) continue;
        ax_plan_cost c;
        ax_plan_estimate(&j, g, &mc, &c);
        CHECK(c.legal && c.fits, "grid %d,%d,%d,%d: %s", D, X, Y, Z, c.why);
        double C = 32, L = 2, M = (double)j.batch / (D * Z) * j.seq, Vl = (100 + 64 * Y - 1) / (64 * Y) * 64;
        double v[4] = {0, 0, 0, 0};
        for (int l = 0; l < L; l++) {
            fc_volume(M, C, 3 * C, 0, g, v); /* qkv */
            fc_volume(M, C, C, 1, g, v);     /* attention out-projection */
            fc_volume(M, C, 4 * C, 0, g, v); /* MLP up */
            fc_volume(M, 4 * C, C, 1, g, v); /* MLP down */
        }
        /* beside the FC layers: LayerNorm statistics over X (2 per row; 2 per layer and the final,
         * forward and backward), the embedding and the LM head's dX over Y, the logits over X,
         * the loss's max and sums over Y, the tied token table over Z (gathered once, scattered once) */
        v[0] += ring(X, 1) * (2 * M * (4 * L + 2) + M * Vl);
        v[1] += ring(Y, 1) * (2 * M * C / X + 3 * M);
        v[2] += 2 * ring(Z, 0) * Vl * C / X;
        double vol[3] = {c.comm_bytes[AX_PG_X], c.comm_bytes[AX_PG_Y], c.comm_bytes[AX_PG_Z]};
        double hand[3] = {4 * v[0], 4 * v[1], 4 * v[2] - (4 - ab) * v[3]};
        for (int i = 0; i < 3; i++)
            CHECK(fabs(vol[i] - hand[i]) <= 1e-9 * (hand[i] + 1),
                  "grid %d,%d,%d,%d, %d-byte activations, group %d: %g bytes, hand %g", D, X, Y, Z, ab, i, vol[i],
                  hand[i]);
        /* data: the Z-chunked gradients once per step; the seconds are the bytes on the unit machine */
        ax_grid fg;
        ax_gpt m;
        fake_grid(&fg, g);
        CHECK(ax_gpt_init(&m, &j.cfg, &fg) == 0, "init: %s", ax_err_msg());
        CHECK(fabs(c.comm_bytes[AX_PG_DATA] - 4 * ring(D, 1) * m.n_zchunk) < 1e-6, "data bytes %g, expected %g",
              c.comm_bytes[AX_PG_DATA], 4 * ring(D, 1) * m.n_zchunk);
        CHECK(fabs(c.comm_s[AX_PG_X] - c.comm_bytes[AX_PG_X]) < 1e-6, "alpha-beta: seconds = bytes at beta 1");
        ax_gpt_free(&m);
    }
}

/* GPT-2, and the Llama kind with grouped-query attention, SwiGLU and an untied head */
static void test_memory(int llama) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    /* (4 key/value heads: replicated ones, fewer than Y, need real Y groups, not this test's fake grid) */
    if (llama)
        j.cfg = (ax_gpt_config){.n_layer = 2,
                                .n_head = 8,
                                .n_kv_head = 4,
                                .n_embd = 32,
                                .n_inner = 48,
                                .block_size = 16,
                                .vocab_size = 100,
                                .arch = AX_ARCH_LLAMA,
                                .untied = 1};
    int grids[][4] = {{1, 1, 1, 1}, {1, 2, 2, 1}, {2, 1, 1, 2}, {1, 2, 1, 4}, {1, 1, 4, 2}, {1, 4, 2, 1}};
    for (int cp = 1; cp <= 4; cp *= 2) /* the context split: T / cp rows, the ring's buffers */
        for (int bf = 0; bf < 2; bf++) /* fp32, and bf16's layout (model/gpt_layout.c) */
            for (size_t t = 0; t < sizeof grids / sizeof *grids; t++)
                for (int rc = 0; rc < 3; rc++) {
                    const int *g = grids[t];
                    j.cp = cp;
                    j.act_bytes = bf ? 2 : 4;
                    j.recompute = rc;
                    j.ov_flags = rc == 1 ? 0 : AX_OV_ALL;
                    j.keep_gathered = rc == 2; /* overlap buffers: none, all, all kept */
                    ax_plan_cost c;
                    ax_plan_estimate(&j, g, &mc, &c);
                    ax_grid fg;
                    ax_gpt m;
                    fake_grid_cp(&fg, g, cp);
                    CHECK(ax_gpt_init(&m, &j.cfg, &fg) == 0, "init: %s", ax_err_msg());
                    ax_gpt_set_recompute(&m, (ax_recompute)rc);
                    if (bf) ax_gpt_set_dtype(&m, AX_BF16);
                    ax_gpt_set_overlap(&m, j.ov_flags, j.keep_gathered, 0);
                    int Bl = j.batch / (g[0] * g[3]);
                    ax_gpt_alloc_acts(&m, Bl, j.seq);
                    /* the planner leaves out the attention kernel's per-thread scratch (two chunks' under the ring) */
                    double scratch =
                        4.0 * m.att_threads * ax_be()->attention_scratch(j.seq / cp, j.cfg.n_embd / j.cfg.n_head);
                    CHECK((m.ring_ws != NULL) == (cp > 1), "cp %d: ring buffers %p", cp, (void *)m.ring_ws);
                    CHECK(c.n_local == m.n_local, "%s grid %d,%d,%d,%d: %lld parameters, allocated %lld",
                          llama ? "llama" : "gpt2", g[0], g[1], g[2], g[3], (long long)c.n_local, (long long)m.n_local);
                    CHECK(c.ws_bytes == m.ws_bytes, "%s grid %d,%d,%d,%d: workspace %g, allocated %g",
                          llama ? "llama" : "gpt2", g[0], g[1], g[2], g[3], c.ws_bytes, m.ws_bytes);
                    /* exact where every buffer is a multiple of 16 floats (cp <= 2 here); at cp 4 some hold 8
                     * rows, and the layout's 64-byte alignment (which the planner leaves out) pads them */
                    double pad = cp > 2 ? 64.0 * AX_ACT_N * (j.cfg.n_layer + 1) : 0, got = m.act_bytes - scratch;
                    CHECK(c.act_bytes <= got && got <= c.act_bytes + pad,
                          "%s %s grid %d,%d,%d,%d cp %d recompute %d: activations %g, allocated %g",
                          llama ? "llama" : "gpt2", bf ? "bf16" : "fp32", g[0], g[1], g[2], g[3], cp, rc, c.act_bytes,
                          m.act_bytes - scratch);
                    CHECK(c.mem_bytes == 4 * 4.0 * m.n_local + c.act_bytes + c.ws_bytes, "total memory");
                    ax_gpt_free(&m);
                }
}

static void test_rejects_and_ranking(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    ax_plan_cost c;
    ax_plan_estimate(&j, (int[]){1, 1, 8, 1}, &mc, &c);
    CHECK(!c.legal && strstr(c.why, "n_head 4 is not divisible by G_y = 8"), "why: %s", c.why);
    ax_plan_estimate(&j, (int[]){1, 3, 1, 1}, &mc, &c);
    CHECK(!c.legal && strstr(c.why, "n_embd 32 is not divisible by G_x = 3"), "why: %s", c.why);
    ax_plan_estimate(&j, (int[]){4, 1, 1, 4}, &mc, &c);
    CHECK(!c.legal && strstr(c.why, "micro-batch of 8 sequences does not divide over D*Z = 16"), "why: %s", c.why);
    ax_plan p;
    ax_plan_job j12 = j; /* 12 ranks: some grids divide it, X = 3 or 12 does not */
    j12.cfg.n_head = 6;
    j12.cfg.n_embd = 48;
    j12.batch = 12;
    ax_plan_run(&j12, 12, &mc, &p);
    /* ordered 4-factorisations of 12 = 2^2 3: C(5,3) * C(4,3) = 40 */
    CHECK(p.n == 40, "%d grids of 12 ranks, expected 40", p.n);
    int sorted = 1, legal_first = 1;
    for (int i = 1; i < p.n; i++) {
        if (i < p.nfit && p.c[i].step_s < p.c[i - 1].step_s) sorted = 0;
        if (i >= p.nfit && p.c[i].legal && p.c[i].fits) legal_first = 0;
    }
    CHECK(sorted && legal_first && p.nfit > 0 && p.nfit < p.n, "ranking: %d of %d runnable", p.nfit, p.n);
    for (int i = 0; i < p.nfit; i++)
        CHECK(j12.cfg.n_head % p.c[i].grid[2] == 0 && 48 % p.c[i].grid[1] == 0, "a ranked grid divides the model");
    ax_plan_free(&p);
    /* memory for about a quarter of the model's one-rank need: the smallest rank count grows */
    ax_plan_estimate(&j, (int[]){1, 1, 1, 1}, &mc, &c);
    mc.mem_bytes = c.mem_bytes / 3;
    int n = ax_plan_min_ranks(&j, &mc, 64);
    CHECK(n > 1 && n <= 16, "min ranks %d", n);
    ax_plan_run(&j, n - 1, &mc, &p);
    CHECK(p.nfit == 0, "%d ranks: %d grids fit, min_ranks said none", n - 1, p.nfit);
    ax_plan_free(&p);
}

static void test_fit_and_files(void) {
    double x[] = {1e3, 1e4, 1e5, 1e6}, t[4];
    for (int i = 0; i < 4; i++) t[i] = 5e-6 + 2e-10 * x[i];
    double a, b;
    ax_fit_alpha_beta(x, t, 4, &a, &b);
    CHECK(fabs(a - 5e-6) < 1e-12 && fabs(b - 2e-10) < 1e-16, "fit %g %g", a, b);
    ax_machine m, r;
    CHECK(ax_machine_preset(&m, "frontier") == 0, "preset");
    CHECK(ax_machine_preset(&m, "nowhere") != 0 && strstr(ax_err_msg(), "perlmutter"), "bad preset: %s", ax_err_msg());
    /* GEMMs at 80% of the dense bf16 peak: the NVIDIA presets' from measure/peak.c, by their GPUs' names */
    static const struct {
        const char *name;
        double peak;
    } pk[] = {{"perlmutter", 312e12}, {"frontier", 191.5e12}, {"alps", 989e12},
              {"h100x8", 989e12},     {"h200x8", 989e12},     {"cpu", 100e9}};
    for (size_t i = 0; i < sizeof pk / sizeof *pk; i++) {
        CHECK(ax_machine_preset(&m, pk[i].name) == 0, "preset %s", pk[i].name);
        CHECK(fabs(m.gemm_flops / (0.8 * pk[i].peak) - 1) < 1e-12, "preset %s: GEMMs at %g FLOP/s, expected %g",
              pk[i].name, m.gemm_flops, 0.8 * pk[i].peak);
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/axonn_test_plan_%d.json", (int)getpid());
    ax_machine_preset(&m, "alps");
    m.act_fwd_s = 2e-9;
    m.act_bwd_s = 5e-9;
    m.ln_fwd_s = 1e-9;
    m.ln_bwd_s = 3e-9;
    m.loss_s = 7e-9;
    m.overlap_eff = -0.375;
    m.gemm_bf16_flops = 3e14;
    m.gemm_bf16_alpha = 4e-6;
    m.gemm[m.ngemm++] = (ax_gemm_point){1024, 96, 32, 1, 0, 1, 2.5e13};
    m.attn[m.nattn++] = (ax_attn_point){2048, 128, 1.5e14};
    /* measured points of the intra-node all-reduce of 4 ranks: a bandwidth that falls beyond 1 MB, as in a CPU's caches
     */
    m.fit[m.nfit++] = (ax_coll_fit){AX_COLL_AR, 4, 0, 1e-5, 1e-9, 3, {1e4, 1e6, 4e6}, {2e-5, 5e-4, 4e-3}};
    m.fit[m.nfit++] = (ax_coll_fit){AX_COLL_AG, 2, AX_PLACE_CORE, 1e-6, 1e-10, 0, {0}, {0}};
    m.cores_per_node = 2;
    m.core_map = AX_CORES_BLOCK;
    CHECK(ax_machine_write(&m, path) == 0, "write");
    CHECK(ax_machine_read(&r, path) == 0, "read: %s", ax_err_msg());
    CHECK(r.cores_per_node == 2 && r.core_map == AX_CORES_BLOCK && r.fit[r.nfit - 1].place == AX_PLACE_CORE &&
              r.fit[r.nfit - 1].group == 2,
          "cores and a one-core fit round trip: %d cores, map %d, placement %d", r.cores_per_node, r.core_map,
          r.fit[r.nfit - 1].place);
    const ax_coll_fit *pf = &r.fit[r.nfit - 2];
    CHECK(pf->npt == 3 && pf->pt_bytes[2] == 4e6 && pf->pt_s[1] == 5e-4, "collective points round trip: %d", pf->npt);
    double mid = ax_machine_coll(&r, AX_COLL_AR, 4, 0, 2.5e6), past = ax_machine_coll(&r, AX_COLL_AR, 4, 0, 5e6);
    CHECK(fabs(ax_machine_coll(&r, AX_COLL_AR, 4, 0, 1e6) - 5e-4) < 1e-15 && fabs(mid - 2.25e-3) < 1e-12 &&
              fabs(past - (4e-3 + 3.5e-3 / 3e6 * 1e6)) < 1e-12 &&
              fabs(ax_machine_coll(&r, AX_COLL_AR, 4, 0, 1e3) - 1.1e-5) < 1e-15,
          "between the points their line, beyond the last its slope, below the first the fit: %g %g", mid, past);
    CHECK(r.ranks_per_node == 4 && r.nfit == m.nfit && fabs(r.gemm_flops / m.gemm_flops - 1) < 1e-5, "round trip");
    CHECK(r.act_fwd_s == m.act_fwd_s && r.act_bwd_s == m.act_bwd_s && r.overlap_eff == m.overlap_eff &&
              r.ln_fwd_s == m.ln_fwd_s && r.ln_bwd_s == m.ln_bwd_s && r.loss_s == m.loss_s &&
              fabs(r.gemm_bf16_flops / m.gemm_bf16_flops - 1) < 1e-12 && r.gemm_bf16_alpha == m.gemm_bf16_alpha,
          "activation costs and overlap efficiency round trip: %g %g %g", r.act_fwd_s, r.act_bwd_s, r.overlap_eff);
    CHECK(fabs(ax_machine_coll(&r, AX_COLL_AR, 8, 1, 1e6) / ax_machine_coll(&m, AX_COLL_AR, 8, 1, 1e6) - 1) < 1e-5,
          "same collective times after the round trip");
    CHECK(r.ngemm == 1 && fabs(ax_machine_gemm_at(&r, 1024, 96, 32, 1, 0, 1) - 2.0 * 1024 * 96 * 32 / 2.5e13) < 1e-18 &&
              r.nattn == 1 && fabs(ax_machine_attn_rate(&r, 2048, 128) / 1.5e14 - 1) < 1e-12 &&
              ax_machine_attn_rate(&r, 2048, 64) == r.attn_flops,
          "measured shapes round trip: %d GEMMs, %d attention", r.ngemm, r.nattn);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"ranks_per_node\": 2, \"memory_per_rank_bytes\": 1e9, \"gemm\": {\"flops\": 1e9}, "
               "\"attention_flops\": 1e9, \"collectives\": []}\n");
    fclose(f);
    CHECK(ax_machine_read(&r, path) != 0 && strstr(ax_err_msg(), "memory_bandwidth"), "missing field: %s",
          ax_err_msg());
    f = fopen(path, "w");
    fprintf(
        f,
        "{\"ranks_per_node\": 2, \"memory_per_rank_bytes\": 1e9, \"gemm\": {\"flops\": 1e9}, \"attention_flops\": 1e9, "
        "\"memory_bandwidth\": 1e9, \"overlap_efficiency\": 1.5, \"collectives\": [{\"op\": \"allreduce\", "
        "\"group\": 0, \"placement\": \"intra\", \"alpha_s\": 0, \"beta_s_per_byte\": 1e-9}]}\n");
    fclose(f);
    CHECK(ax_machine_read(&r, path) != 0 && strstr(ax_err_msg(), "overlap_efficiency"), "bad overlap efficiency: %s",
          ax_err_msg());
    f = fopen(path, "w"); /* below -1: overlapping would cost more than the collective it hides */
    fprintf(
        f,
        "{\"ranks_per_node\": 2, \"memory_per_rank_bytes\": 1e9, \"gemm\": {\"flops\": 1e9}, \"attention_flops\": 1e9, "
        "\"memory_bandwidth\": 1e9, \"overlap_efficiency\": -1.5, \"collectives\": [{\"op\": \"allreduce\", "
        "\"group\": 0, \"placement\": \"intra\", \"alpha_s\": 0, \"beta_s_per_byte\": 1e-9}]}\n");
    fclose(f);
    CHECK(ax_machine_read(&r, path) != 0 && strstr(ax_err_msg(), "[-1, 1]"), "overlap efficiency -1.5: %s",
          ax_err_msg());
    f = fopen(path, "w"); /* a bf16 GEMM fit without its rate */
    fprintf(f, "{\"ranks_per_node\": 2, \"memory_per_rank_bytes\": 1e9, \"gemm\": {\"flops\": 1e9}, \"gemm_bf16\": "
               "{\"alpha_s\": 1e-6}, \"attention_flops\": 1e9, \"memory_bandwidth\": 1e9, \"collectives\": [{\"op\": "
               "\"allreduce\", \"group\": 0, \"placement\": \"intra\", \"alpha_s\": 0, \"beta_s_per_byte\": 1e-9}]}\n");
    fclose(f);
    CHECK(ax_machine_read(&r, path) != 0 && strstr(ax_err_msg(), "flops") && strstr(ax_err_msg(), "gemm_bf16"),
          "gemm_bf16 without flops: %s", ax_err_msg());
    static const char *bad[][2] = {
        /* a measured shape or attention point that is not one: the field named */
        {"\"gemm\": {\"flops\": 1e9, \"shapes\": [{\"m\": 4, \"n\": 4, \"k\": 4, \"dtype\": \"fp16\", \"flops\": "
         "1e9}]}",
         "dtype"},
        {"\"gemm\": {\"flops\": 1e9, \"shapes\": [{\"m\": 4, \"n\": 4, \"flops\": 1e9}]}", "\"k\""},
        {"\"gemm\": {\"flops\": 1e9, \"shapes\": [{\"m\": 4, \"n\": 4, \"k\": 4}]}", "\"flops\""},
        {"\"gemm\": {\"flops\": 1e9}, \"attention_shapes\": [{\"T\": 64, \"flops\": 1e9}]", "\"hd\""},
        {"\"gemm\": {\"flops\": 1e9}, \"attention_shapes\": [{\"T\": 0, \"hd\": 64, \"flops\": 1e9}]",
         "attention_shapes"},
        {"\"gemm\": {\"flops\": 1e9}", "points\"[1]"}, /* the points of the fit below: bytes not ascending */
    };
    for (int i = 0; i < 10; i++) { /* 6 .. 9: a placement, a core map, a fractional and a negative core count */
        f = fopen(path, "w");
        fprintf(f,
                "{\"ranks_per_node\": 2, \"memory_per_rank_bytes\": 1e9, %s, \"attention_flops\": 1e9, "
                "\"memory_bandwidth\": 1e9, \"collectives\": [{\"op\": \"allreduce\", \"group\": 0, \"placement\": "
                "\"%s\", \"alpha_s\": 0, \"beta_s_per_byte\": 1e-9%s}]%s}\n",
                i < 6 ? bad[i][0] : "\"gemm\": {\"flops\": 1e9}", i == 6 ? "socket" : "intra",
                i == 5 ? ", \"points\": [[4096, 1e-5], [4096, 2e-5]]" : "",
                i == 7   ? ", \"cores_per_node\": 2, \"core_map\": \"scatter\""
                : i == 8 ? ", \"cores_per_node\": 2.5"
                : i == 9 ? ", \"cores_per_node\": -2"
                         : "");
        fclose(f);
        const char *want = i < 6    ? bad[i][1]
                           : i == 6 ? "expected intra, inter or core"
                           : i == 7 ? "\"core_map\": expected"
                                    : "\"cores_per_node\" must be";
        CHECK(ax_machine_read(&r, path) != 0 && strstr(ax_err_msg(), want), "bad entry %d: %s", i, ax_err_msg());
    }
    unlink(path);
}

/* The MLP activation at its measured per-element cost: the elementwise time
 * changes by exactly (elements x cost) - (their bytes at the bandwidth), with
 * the forward rerun of block recomputation counted forward only. */
static void test_activation(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    int g[4] = {1, 2, 2, 1};
    for (int rc = 0; rc <= 2; rc += 2) {
        j.recompute = rc;
        ax_plan_cost bytes, timed;
        mc.act_fwd_s = mc.act_bwd_s = 0;
        ax_plan_estimate(&j, g, &mc, &bytes);
        mc.act_fwd_s = 3e-9;
        mc.act_bwd_s = 7e-9;
        ax_plan_estimate(&j, g, &mc, &timed);
        double n = 8.0 * 16 * (4 * 32) / 2, L = 2, reruns = rc ? L - 1 : 0; /* M x F/Y per layer */
        double want = L * n * (3e-9 + 7e-9 - 5 * 4 / mc.mem_bw) + reruns * n * (3e-9 - 2 * 4 / mc.mem_bw);
        CHECK(fabs(timed.elem_s - bytes.elem_s - want) < 1e-12 * bytes.elem_s + 1e-15,
              "recompute %d: activation changes elementwise by %g, expected %g", rc, timed.elem_s - bytes.elem_s, want);
    }
}

/* LayerNorm and the loss at their measured per-element costs: the
 * elementwise time changes by exactly (elements x cost) - (their bytes at
 * the bandwidth): two LayerNorms of M x Cx per layer and the final one (5
 * element passes each; forward only, 2, in the rerun of block recomputation),
 * M x Vl logits (4 passes) */
static void test_row_kernels(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    int g[4] = {1, 2, 2, 1};
    double M = 8.0 * 16, Cx = 32 / 2, Vl = 128 / 2, L = 2, bw = mc.mem_bw, f = 3e-9, b = 4e-9, x = 6e-9;
    for (int rc = 0; rc <= 2; rc += 2) {
        j.recompute = rc;
        ax_plan_cost bytes, ln, loss;
        ax_plan_estimate(&j, g, &mc, &bytes);
        mc.ln_fwd_s = f;
        mc.ln_bwd_s = b;
        ax_plan_estimate(&j, g, &mc, &ln);
        mc.loss_s = x;
        ax_plan_estimate(&j, g, &mc, &loss);
        mc.ln_fwd_s = mc.ln_bwd_s = mc.loss_s = 0;
        double n = 2 * M * Cx, reruns = rc ? L - 1 : 0;
        double want = (L * n + M * Cx) * (f + b - 5 * 4 / bw) + reruns * n * (f - 2 * 4 / bw);
        CHECK(fabs(ln.elem_s - bytes.elem_s - want) < 1e-12 * bytes.elem_s + 1e-15,
              "recompute %d: LayerNorm changes elementwise by %g, expected %g", rc, ln.elem_s - bytes.elem_s, want);
        want = M * Vl * (x - 4 * 4 / bw);
        CHECK(fabs(loss.elem_s - ln.elem_s - want) < 1e-12 * bytes.elem_s + 1e-15,
              "recompute %d: the loss changes elementwise by %g, expected %g", rc, loss.elem_s - ln.elem_s, want);
    }
}

/* --dtype bf16 GEMMs at the machine's bf16 rate, fp32 ones at the fp32 rate,
 * and bf16 at the fp32 rate where the file has none */
static void test_gemm_dtype(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    int g[4] = {1, 2, 1, 2};
    ax_plan_cost f32, b16, b16_none;
    mc.gemm_bf16_flops = 4e9;
    mc.gemm_bf16_alpha = 0;
    ax_plan_estimate(&j, g, &mc, &f32);
    j.act_bytes = 2;
    ax_plan_estimate(&j, g, &mc, &b16);
    mc.gemm_bf16_flops = 0;
    ax_plan_estimate(&j, g, &mc, &b16_none);
    CHECK(f32.gemm_s > 0 && fabs(b16.gemm_s - f32.gemm_s / 4) < 1e-12 * f32.gemm_s && b16_none.gemm_s == f32.gemm_s,
          "GEMM seconds fp32 %g, bf16 at 4x %g, bf16 without a rate %g", f32.gemm_s, b16.gemm_s, b16_none.gemm_s);
}

/* FLOP counts: docs/algorithm.md §5's closed forms for GPT-2, and a Llama counted by hand
 * (grouped-query projections, three MLP matrices) */
static void test_flops(void) {
    ax_gpt_config g2 = {.n_layer = 12, .n_head = 12, .n_embd = 768, .block_size = 1024, .vocab_size = 50257};
    double l = 12, h = 768, s = 1024, V = 50257, B = 8;
    double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * h * l));
    double hw = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * h * l));
    CHECK(fabs(ax_model_flops(&g2, 8, 1024) / model - 1) < 1e-12, "GPT-2 model FLOPs %g, closed form %g",
          ax_model_flops(&g2, 8, 1024), model);
    CHECK(fabs(ax_hardware_flops(&g2, 8, 1024) / hw - 1) < 1e-12, "GPT-2 hardware FLOPs %g, closed form %g",
          ax_hardware_flops(&g2, 8, 1024), hw);
    ax_gpt_config ll = {.n_layer = 2,
                        .n_head = 8,
                        .n_kv_head = 2,
                        .n_embd = 64,
                        .n_inner = 96,
                        .block_size = 32,
                        .vocab_size = 100,
                        .arch = AX_ARCH_LLAMA};
    /* per token per layer: q 64x64, k and v 64x16 each, o 64x64, gate/up/down 64x96 each */
    double w = 64 * 64 + 2 * 64 * 16 + 64 * 64 + 3 * 64 * 96, fwd = 2 * (2 * w + 4 * 32 * 64) + 2 * 100 * 64;
    CHECK(fabs(ax_model_flops(&ll, 3, 32) / (3 * 3 * 32 * fwd) - 1) < 1e-12, "Llama model FLOPs %g, by hand %g",
          ax_model_flops(&ll, 3, 32), 3 * 3 * 32 * fwd);
}

/* MFU's denominators (measure/peak.h): a device name, cut into words at spaces
 * and dashes, picks the first row whose words it holds whole */
static void test_peak(void) {
    static const struct {
        const char *name;
        ax_dtype t;
        double want;
    } c[] = {{"NVIDIA H100 80GB HBM3", AX_BF16, 989e12},
             {"NVIDIA H100 PCIe", AX_BF16, 756e12},
             {"NVIDIA H100 NVL", AX_F32, 60e12},
             {"NVIDIA H200", AX_BF16, 989e12},
             {"NVIDIA GH200 480GB", AX_F32, 67e12},
             {"NVIDIA A100-SXM4-80GB", AX_BF16, 312e12},
             {"NVIDIA A100 80GB PCIe", AX_F32, 19.5e12},
             {"NVIDIA L40S", AX_BF16, 362e12},
             {"NVIDIA L4", AX_BF16, 121e12},
             {"NVIDIA A10", AX_F32, 31.2e12},
             {"NVIDIA L40", AX_BF16, 0},
             {"NVIDIA A10G", AX_BF16, 0},
             {"emulated CUDA device", AX_BF16, 0},
             {NULL, AX_BF16, 0}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        double got = ax_peak_flops(c[i].name, c[i].t);
        CHECK(got == c[i].want, "peak of '%s' in %s: %g, expected %g", c[i].name ? c[i].name : "(none)",
              ax_dtype_name(c[i].t), got, c[i].want);
    }
}

/* The overlap model: nothing hidden with none; with each overlap something,
 * never more than the communication or the compute, exposed = total - hidden;
 * kept gathers drop the backward Z gathers' bytes (forward's stay). */
static void test_overlap(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    int g[4] = {2, 1, 2, 2};
    ax_plan_cost none, c;
    j.ov_flags = 0;
    ax_plan_estimate(&j, g, &mc, &none);
    CHECK(none.hidden_s == 0 && none.exposed_s == none.comm_total_s, "overlap none hides %g", none.hidden_s);
    double prev = 0;
    int sets[] = {1, 2, 4, 8, 15};
    for (int k = 0; k < 5; k++) {
        j.ov_flags = sets[k];
        ax_plan_estimate(&j, g, &mc, &c);
        CHECK(c.hidden_s > 0 && c.hidden_s <= fmin(c.comm_total_s, c.compute_s) &&
                  fabs(c.exposed_s - (c.comm_total_s - c.hidden_s)) < 1e-12 && c.comm_total_s == none.comm_total_s,
              "overlap %d: hidden %g of %g (compute %g), exposed %g", sets[k], c.hidden_s, c.comm_total_s, c.compute_s,
              c.exposed_s);
        if (sets[k] == 15) {
            CHECK(c.hidden_s >= prev, "all hides less (%g) than dp alone (%g)", c.hidden_s, prev);
            ax_plan_cost h; /* a machine whose overlaps hide a quarter of what they could */
            mc.overlap_eff = 0.25;
            ax_plan_estimate(&j, g, &mc, &h);
            mc.overlap_eff = 1;
            CHECK(
                fabs(h.hidden_s - 0.25 * c.hidden_s) < 1e-15 && fabs(h.step_s - (c.step_s + 0.75 * c.hidden_s)) < 1e-12,
                "overlap efficiency 0.25: hidden %g of %g, step %g of %g", h.hidden_s, c.hidden_s, h.step_s, c.step_s);
            mc.overlap_eff =
                -0.25; /* overlapping costs a quarter of the windows on top (cores that copy and compute) */
            ax_plan_estimate(&j, g, &mc, &h);
            mc.overlap_eff = 1;
            CHECK(fabs(h.exposed_s / (c.comm_total_s + 0.25 * c.hidden_s) - 1) < 1e-12 &&
                      fabs(h.step_s / (c.step_s + 1.25 * c.hidden_s) - 1) < 1e-12,
                  "overlap efficiency -0.25: exposed %g of %g, step %g of %g", h.exposed_s, c.comm_total_s, h.step_s,
                  c.step_s);
        }
        prev = c.hidden_s;
    }
    j.keep_gathered = 1;
    ax_plan_estimate(&j, g, &mc, &c);
    double wz = 0; /* the FC weights' gather per layer and micro-batch, in bytes: one of the two fewer */
    int64_t C = 32, blk[4] = {3 * C * C / 2, C * C / 2, 4 * C * C / 2, 4 * C * C / 2}; /* / Y */
    for (int i = 0; i < 4; i++) wz += 0.5 * blk[i] * 4;
    CHECK(fabs(none.comm_bytes[AX_PG_Z] - c.comm_bytes[AX_PG_Z] - 2 * wz) < 1e-6,
          "kept gathers: Z bytes %g, expected %g fewer than %g", c.comm_bytes[AX_PG_Z], 2 * wz,
          none.comm_bytes[AX_PG_Z]);
}

/* The GEMMs the planner charges are the ones the code runs: on each grid the
 * shapes and layouts of every FC layer's forward, dX and dW and of the LM
 * head, from the in_l/out_l that ax_gpt_init lays out (nn/linear.c's calls),
 * as a set; a listed shape costs what was measured, another layout the fit;
 * attention at a listed (T, hd) at its rate. */
static void test_gemm_shapes(void) {
    ax_plan_job j = small_job();
    const int grids[][4] = {{1, 1, 1, 1}, {2, 1, 2, 1}, {1, 2, 1, 2}, {1, 4, 2, 1}, {1, 1, 4, 2}};
    for (int gi = 0; gi < 5; gi++) {
        const int *g = grids[gi];
        ax_gemm_point got[64], want[15];
        int n = ax_plan_gemm_shapes(&j, g, got, 0, 64);
        ax_grid fg;
        ax_gpt m;
        fake_grid(&fg, g);
        CHECK(ax_gpt_init(&m, &j.cfg, &fg) == 0, "init: %s", ax_err_msg());
        const ax_linear *lin[] = {&m.qkv, &m.proj, &m.fc, &m.fcproj, &m.lmhead};
        int M = j.batch / (g[0] * g[3]) * j.seq, nw = 0;
        for (int i = 0; i < 5; i++) {
            int in = lin[i]->in_l, out = lin[i]->out_l;
            want[nw++] = (ax_gemm_point){M, out, in, 0, 1, 0, 0};
            want[nw++] = (ax_gemm_point){M, in, out, 0, 0, 0, 0};
            want[nw++] = (ax_gemm_point){out, in, M, 1, 0, 0, 0};
        }
        int found = 0;
        for (int w = 0; w < nw; w++) {
            int hit = 0;
            for (int i = 0; i < n; i++) hit |= !memcmp(&got[i], &want[w], sizeof want[w]);
            found += hit;
            CHECK(hit, "grid %d,%d,%d,%d: the model's GEMM %d x %d x %d (%d%d) not charged", g[0], g[1], g[2], g[3],
                  want[w].m, want[w].n, want[w].k, want[w].ta, want[w].tb);
        }
        for (int i = 0; i < n; i++) {
            int hit = 0;
            for (int w = 0; w < nw; w++) hit |= !memcmp(&got[i], &want[w], sizeof want[w]);
            CHECK(hit, "grid %d,%d,%d,%d: charged GEMM %d x %d x %d (%d%d) is not one the model runs", g[0], g[1], g[2],
                  g[3], got[i].m, got[i].n, got[i].k, got[i].ta, got[i].tb);
        }
        ax_gpt_free(&m);
    }
    /* a measured shape replaces the fit for that shape and layout only */
    ax_machine mc;
    unit_machine(&mc);
    int g[4] = {1, 1, 2, 1};
    ax_plan_cost fit, meas, attn;
    ax_plan_estimate(&j, g, &mc, &fit);
    ax_gemm_point s[64];
    int n = ax_plan_gemm_shapes(&j, g, s, 0, 64);
    ax_gemm_point p = s[0]; /* the first FC's forward, L layers of it per step */
    p.flops = 0.5e9;
    mc.gemm[mc.ngemm++] = p;
    p.ta = 1;
    p.tb = 0; /* another layout of the same sizes: not the model's, so never charged */
    mc.gemm[mc.ngemm++] = p;
    ax_plan_estimate(&j, g, &mc, &meas);
    double f = 2.0 * s[0].m * s[0].n * s[0].k, want = fit.gemm_s + j.cfg.n_layer * (f / 0.5e9 - f / 1e9);
    CHECK(n > 3 && fabs(meas.gemm_s - want) < 1e-12 * want, "GEMM seconds with one measured shape %g, expected %g",
          meas.gemm_s, want);
    mc.attn[mc.nattn++] = (ax_attn_point){j.seq, 7, 1e6}; /* another head size: not taken */
    mc.attn[mc.nattn++] = (ax_attn_point){j.seq, j.cfg.n_embd / j.cfg.n_head, 0.25e9};
    ax_plan_estimate(&j, g, &mc, &attn);
    CHECK(fit.attn_s > 0 && fabs(attn.attn_s - 4 * fit.attn_s) < 1e-12 * attn.attn_s,
          "attention at its measured (T, hd) rate: %g s, expected %g", attn.attn_s, 4 * fit.attn_s);
}

/* A GEMM's first operand is taken hot while its operands, times the ranks
 * sharing the core, fit in half the L2, cold beyond the whole L2, linear
 * between: model a's FC forward on 4 ranks of 2 cores (256 x 256 x 128: 512
 * KiB, 1 MiB for two ranks) hot, model b's (512 x 512 x 256: 2 MiB, 4 MiB)
 * cold; exact, the bytes being powers of two. */
static void test_hot_share(void) {
    ax_cores two = {.share = 2, .l2 = 2 << 20}, four = {.share = 4, .l2 = 2 << 20}, unknown = {.share = 2};
    ax_gemm_point a = {256, 256, 128, 0, 1, 0, 0}, b = {512, 512, 256, 0, 1, 0, 0};
    ax_gemm_point mid = {256, 256, 256, 0, 1, 0, 0}; /* 3 x 256 KiB: 1.5 MiB for two, halfway */
    ax_gemm_point mid16 = mid;
    mid16.bf16 = 1; /* A and B half the bytes: 1 MiB for two, hot */
    double got[6] = {ax_gemm_hot_share(&a, &two),     ax_gemm_hot_share(&b, &two),  ax_gemm_hot_share(&mid, &two),
                     ax_gemm_hot_share(&mid16, &two), ax_gemm_hot_share(&a, &four), ax_gemm_hot_share(&a, &unknown)};
    double want[6] = {1, 0, 0.5, 1, 0, 0};
    for (int i = 0; i < 6; i++) CHECK(got[i] == want[i], "hot share %d: %g, expected %g", i, got[i], want[i]);
}

/* Where a group's ranks are: 8 ranks a node on 2 cores, round robin (rank r
 * on core r mod 2: stride 2, 4, ... stays on one core) or in blocks (ranks
 * 0-3 on core 0: 2 or 4 consecutive ranks do); across nodes first. A
 * collective takes its placement's fit, else the nearest (one core, within a
 * node, across nodes); a grid's group on one core is charged at that fit. */
static void test_placement(void) {
    ax_machine m;
    unit_machine(&m);
    m.ranks_per_node = 8;
    m.cores_per_node = 2;
    m.core_map = AX_CORES_ROUND_ROBIN;
    int rr[][4] = {{2, 4, 8, AX_PLACE_CORE},  {1, 4, 8, AX_PLACE_INTRA},   {4, 2, 8, AX_PLACE_CORE},
                   {1, 2, 8, AX_PLACE_INTRA}, {1, 16, 16, AX_PLACE_INTER}, {2, 2, 16, AX_PLACE_CORE},
                   {8, 2, 16, AX_PLACE_INTER}};
    for (int i = 0; i < 7; i++)
        CHECK(ax_machine_place(&m, rr[i][0], rr[i][1], rr[i][2]) == rr[i][3],
              "round robin: stride %d, %d of %d ranks: %d", rr[i][0], rr[i][1], rr[i][2],
              ax_machine_place(&m, rr[i][0], rr[i][1], rr[i][2]));
    m.core_map = AX_CORES_BLOCK;
    int bl[][4] = {{1, 4, 8, AX_PLACE_CORE},
                   {1, 2, 8, AX_PLACE_CORE},
                   {2, 2, 8, AX_PLACE_CORE},
                   {2, 4, 8, AX_PLACE_INTRA},
                   {1, 8, 8, AX_PLACE_INTRA}};
    for (int i = 0; i < 5; i++)
        CHECK(ax_machine_place(&m, bl[i][0], bl[i][1], bl[i][2]) == bl[i][3], "blocks: stride %d, %d of %d ranks: %d",
              bl[i][0], bl[i][1], bl[i][2], ax_machine_place(&m, bl[i][0], bl[i][1], bl[i][2]));
    m.core_map = AX_CORES_UNKNOWN;
    CHECK(ax_machine_place(&m, 2, 4, 8) == AX_PLACE_INTRA, "an unknown core map: no group on one core");
    m.core_map = AX_CORES_ROUND_ROBIN;
    m.cores_per_node = 8;
    CHECK(ax_machine_place(&m, 2, 4, 8) == AX_PLACE_INTRA, "a core for every rank: no group shares one");
    /* the unit machine's fits (beta 1 s a byte, any group size) are intra-node; one core's at 0.25, across nodes at 4
     */
    m.cores_per_node = 2;
    m.nfit = 0;
    for (int op = 0; op < AX_COLL_N; op++) {
        m.fit[m.nfit++] = (ax_coll_fit){op, 0, AX_PLACE_INTER, 0, 4};
        m.fit[m.nfit++] = (ax_coll_fit){op, 0, AX_PLACE_INTRA, 0, 1};
    }
    CHECK(ax_machine_coll(&m, AX_COLL_AR, 4, AX_PLACE_CORE, 8) == 8, "one core without its fit: within a node's");
    ax_plan_job j = small_job();
    int g[4] = {1, 1, 2, 4}; /* Z: stride 2, 4 ranks, all on core 0 or 1; Y: stride 1, across both */
    ax_plan_cost intra, core;
    ax_plan_estimate(&j, g, &m, &intra);
    for (int op = 0; op < AX_COLL_N; op++) m.fit[m.nfit++] = (ax_coll_fit){op, 0, AX_PLACE_CORE, 0, 0.25};
    CHECK(ax_machine_coll(&m, AX_COLL_AR, 4, AX_PLACE_CORE, 8) == 2 &&
              ax_machine_coll(&m, AX_COLL_AR, 4, AX_PLACE_INTRA, 8) == 8,
          "each placement its own fit");
    ax_plan_estimate(&j, g, &m, &core);
    CHECK(core.place[AX_PG_Z] == AX_PLACE_CORE && core.place[AX_PG_Y] == AX_PLACE_INTRA && intra.comm_s[AX_PG_Z] > 0 &&
              fabs(core.comm_s[AX_PG_Z] - 0.25 * intra.comm_s[AX_PG_Z]) < 1e-12 * intra.comm_s[AX_PG_Z] &&
              core.comm_s[AX_PG_Y] == intra.comm_s[AX_PG_Y],
          "1,1,2,4: Z on one core charged %g, expected %g; Y %g and %g", core.comm_s[AX_PG_Z],
          0.25 * intra.comm_s[AX_PG_Z], core.comm_s[AX_PG_Y], intra.comm_s[AX_PG_Y]);
}

/* The calibration's timer: a call lasts from the first rank's start to the last
 * rank's end, the same figure on every rank. Rank 0 sleeps 4 ms a call, the
 * others return at once: every rank must report at least 4 ms (a rank timed
 * alone would report 0 on ranks > 0, a mean of ranks 4 / W ms). */
static void sleep_on_rank0(void *p) {
    if (*(int *)p == 0) nanosleep(&(struct timespec){0, 4000000}, NULL);
}

static void test_time_all(void) {
    int r, W;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    double t = ax_time_all(sleep_on_rank0, &r, 0.05, MPI_COMM_WORLD), lo = t, hi = t;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* 4 ms is a floor (nanosleep never returns early); 40 ms an upper bound far above the barrier's cost */
    CHECK(t >= 4e-3 && t < 4e-2 && lo == hi, "rank %d of %d: %.3f ms a call (ranks %.3f..%.3f)", r, W, t * 1e3,
          lo * 1e3, hi * 1e3);
}

/* The median that bench's step and every calibration trial report: one burst
 * of other work (the 100) moves it not at all, where it moves the mean
 * fivefold; even counts average the middle pair. */
static void test_median(void) {
    double odd[] = {5, 1, 100, 2, 3}, even[] = {4, 1, 3, 2}, one[] = {7};
    double mo = ax_median(odd, 5), me = ax_median(even, 4), m1 = ax_median(one, 1);
    CHECK(mo == 3 && me == 2.5 && m1 == 7, "ax_median: %g %g %g, expected 3 2.5 7", mo, me, m1);
}

/* The operand sets a kernel is calibrated on: every call on the next set, round
 * robin, so each set is used as often as the others (within one call); a timer
 * that kept to the first set would leave the others at 0. */
static void count_call(void *p) { ++*(int *)p; }

static void test_time_sets(void) {
    enum { SETS = 3 };
    int calls[SETS] = {0};
    ax_time_sets(count_call, calls, sizeof calls[0], SETS, 0.01, MPI_COMM_WORLD);
    int lo = calls[0], hi = calls[0];
    for (int i = 1; i < SETS; i++) {
        lo = calls[i] < lo ? calls[i] : lo;
        hi = calls[i] > hi ? calls[i] : hi;
    }
    CHECK(lo >= 1 && hi - lo <= 1, "calls per operand set %d..%d over %d sets", lo, hi, SETS);
    /* how many sets a span holds: its bytes over a set's, within [1, max] */
    CHECK(ax_operand_sets(100, 30, 64) == 3 && ax_operand_sets(10, 30, 64) == 1 &&
              ax_operand_sets(1 << 20, 1, 64) == 64,
          "ax_operand_sets: %d %d %d, expected 3 1 64", ax_operand_sets(100, 30, 64), ax_operand_sets(10, 30, 64),
          ax_operand_sets(1 << 20, 1, 64));
}

/* The context split C (docs/planner.md, "Context parallelism"), against sums by hand on the
 * small job: a rank's rows T/C, its attention 1/C of the causal total, the ring's transfers
 * (per layer forward C - 1 of a rank's key/value chunks, backward C - 1 again and C of their
 * gradients, the forward rerun of recomputation C - 1 again) of Bl x T/C rows of k|v, the
 * chunks in the activations' dtype and the gradients in fp32, hidden behind the attention
 * steps they run with; the gradients over data x C. */
static void test_cp(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    j.ov_flags = 0; /* only the ring hides anything */
    int grids[][4] = {{1, 1, 1, 1}, {2, 1, 2, 1}, {1, 2, 1, 2}};
    for (int t = 0; t < 6; t++)
        for (int rc = 0; rc < 3; rc++) {
            const int *g = grids[t % 3];
            int ab = t < 3 ? 4 : 2; /* fp32, then bf16 */
            j.act_bytes = ab;
            int D = g[0], Y = g[2], Z = g[3], L = 2, hd = 8, KVl = 4 / Y;
            j.recompute = rc;
            j.cp = 1;
            ax_plan_cost one, c;
            ax_plan_estimate(&j, g, &mc, &one);
            for (int cp = 2; cp <= 4; cp *= 2) {
                j.cp = cp;
                ax_plan_estimate(&j, g, &mc, &c);
                double Bl = 8.0 / (D * Z), kvc = Bl * (16 / cp) * 2 * KVl * hd;
                double nkv = L * (2.0 * cp - 2) + (rc ? (L - 1) * (cp - 1.0) : 0), ng = L * cp, n = nkv + ng;
                double bytes = (ab * nkv + 4 * ng) * kvc;
                /* the windows: forward (2 of the 7 parts) but its last step, all of backward (5); recomputed
                 * (attention or block), the forward rerun of L - 1 layers (2 parts each) but its last step */
                double win = c.attn_s * (2.0 / 7 * (cp - 1) / cp + 5.0 / 7);
                if (rc)
                    win = c.attn_s * (7.0 * L * (2.0 / 7 * (cp - 1) / cp + 5.0 / 7) + 2.0 * (L - 1) * (cp - 1) / cp) /
                          (7.0 * L + 2.0 * (L - 1));
                ax_grid fg;
                ax_gpt m;
                fake_grid_cp(&fg, g, cp);
                CHECK(ax_gpt_init(&m, &j.cfg, &fg) == 0, "init: %s", ax_err_msg());
                double data = 4 * ring(D * cp, 1) * m.n_zchunk;
                ax_gpt_free(&m);
                CHECK(c.legal && c.cp == cp && fabs(c.comm_bytes[AX_PG_C] - bytes) < 1e-9 * bytes &&
                          c.n_coll[AX_PG_C] == n,
                      "grid %d,%d,%d,%d cp %d recompute %d, %d-byte activations: ring %g bytes in %g transfers, "
                      "by hand %g in %g",
                      g[0], g[1], g[2], g[3], cp, rc, ab, c.comm_bytes[AX_PG_C], c.n_coll[AX_PG_C], bytes, n);
                CHECK(fabs(c.attn_s * cp / one.attn_s - 1) < 1e-12 && fabs(c.comm_bytes[AX_PG_DATA] - data) < 1e-6,
                      "cp %d: attention %g of %g at C = 1; data bytes %g, by hand %g", cp, c.attn_s, one.attn_s,
                      c.comm_bytes[AX_PG_DATA], data);
                /* the unit machine's transfers (a second a byte) outlast the attention: its windows bound */
                CHECK(fabs(c.hidden_s / win - 1) < 1e-12 && one.hidden_s == 0 && one.comm_s[AX_PG_C] == 0,
                      "cp %d recompute %d: hidden %g, the attention's windows %g", cp, rc, c.hidden_s, win);
            }
        }
}

/* The C group's placement (at stride X Y Z), the sequence rule, the enumeration of C */
static void test_cp_rules(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    mc.ranks_per_node = 4; /* 4 ranks a node */
    ax_plan_cost c;
    j.cp = 4;
    ax_plan_estimate(&j, (int[]){1, 2, 1, 1}, &mc, &c);
    CHECK(c.place[AX_PG_C] == AX_PLACE_INTER && c.place[AX_PG_X] == AX_PLACE_INTRA, "1,2,1,1 cp 4: C spans nodes");
    ax_plan_estimate(&j, (int[]){1, 1, 1, 1}, &mc, &c);
    CHECK(c.place[AX_PG_C] == AX_PLACE_INTRA, "1,1,1,1 cp 4 on one node: C within it");
    j.cp = 2;
    ax_plan_estimate(&j, (int[]){2, 2, 1, 1}, &mc, &c);
    CHECK(c.place[AX_PG_C] == AX_PLACE_INTRA && c.place[AX_PG_DATA] == AX_PLACE_INTER, "2,2,1,1 cp 2: C in a node");
    /* the sequence rule: T = 16 is not a multiple of 2C = 6 */
    j.cp = 3;
    ax_plan_estimate(&j, (int[]){1, 1, 1, 1}, &mc, &c);
    CHECK(!c.legal && strstr(c.why, "--cp 3: the sequence length 16 must be a multiple of 2C = 6"), "why: %s", c.why);
    /* every C (job cp 0) of 8 ranks: 1, 2, 4, 8 (T 16), the 4D grids of 8 / C each: 20 + 10 + 4 + 1;
     * T 12: C 1 and 2 only; a pinned C: its grids only */
    ax_plan p;
    j.cp = 0;
    ax_plan_run(&j, 8, &mc, &p);
    int n16 = p.n;
    ax_plan_free(&p);
    j.seq = 12;
    ax_plan_run(&j, 8, &mc, &p);
    int n12 = p.n, cps = 0;
    for (int i = 0; i < p.n; i++) cps |= 1 << p.c[i].cp;
    ax_plan_free(&p);
    j.cp = 2;
    ax_plan_run(&j, 8, &mc, &p);
    int pinned = p.n == 10;
    for (int i = 0; i < p.n; i++) pinned &= p.c[i].cp == 2;
    ax_plan_free(&p);
    CHECK(n16 == 35 && n12 == 30 && cps == (1 << 1 | 1 << 2) && pinned,
          "grids with C: %d, %d (T 12, C mask %x), pinned %d", n16, n12, cps, pinned);
}

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (fabs(a) + fabs(b)) + 1e-9; }

/* ZeRO-1 (plan/model.h, docs/planner.md "ZeRO-1 in the model"). Memory: AdamW's m, v over
 * the group each region's gradients are summed over (data x C for the Z-chunked region,
 * data x C x Z for the replicated one), a reduced gradient block of the same share, the
 * weights and gradients whole. Communication: a reduce-scatter and an all-gather for each
 * all-reduce, every group's bytes as under zero 0. Time: the optimizer by the share; the
 * reduce-scatter hidden as the all-reduce was, the all-gather exposed less at most the
 * update it runs behind. */
static void test_zero_memory_and_bytes(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j = small_job();
    static const int grids[][5] = {{4, 1, 1, 1, 1}, {2, 1, 1, 2, 1}, {2, 2, 1, 1, 1}, {2, 1, 1, 1, 2}, {1, 1, 2, 2, 1}};
    for (size_t i = 0; i < sizeof grids / sizeof *grids; i++) {
        const int *g = grids[i];
        int DC = g[0] * g[4];
        j.cp = g[4];
        ax_plan_cost c0, c1;
        j.zero = 0;
        ax_plan_estimate(&j, g, &mc, &c0);
        j.zero = 1;
        ax_plan_estimate(&j, g, &mc, &c1);
        ax_gpt_params ps;
        ax_gpt_param_sizes(&j.cfg, g, &ps);
        double upd = (double)ps.n_zchunk / DC + (double)(ps.n_local - ps.n_zchunk) / (DC * g[3]);
        CHECK(c0.legal && c1.legal && c0.zero == 0 && c1.zero == 1, "grid %d: legal, setting kept", (int)i);
        CHECK(c0.optim_bytes == 8.0 * ps.n_local && c0.share_bytes == 0 && near(c1.optim_bytes, 8 * upd) &&
                  near(c1.share_bytes, 4 * upd) && c1.param_bytes == c0.param_bytes && c1.grad_bytes == c0.grad_bytes &&
                  c0.param_bytes == 4.0 * ps.n_local && c1.act_bytes == c0.act_bytes && c1.ws_bytes == c0.ws_bytes,
              "grid %d,%d,%d,%d cp %d: AdamW state %g -> %g (expected %g), block %g, weights %g -> %g, grads %g -> %g",
              g[0], g[1], g[2], g[3], g[4], c0.optim_bytes, c1.optim_bytes, 8 * upd, c1.share_bytes, c0.param_bytes,
              c1.param_bytes, c0.grad_bytes, c1.grad_bytes);
        CHECK(near(c1.mem_bytes - c0.mem_bytes, c1.optim_bytes + c1.share_bytes - c0.optim_bytes) &&
                  near(c1.optim_s, c0.optim_s * upd / ps.n_local),
              "grid %d: memory %g -> %g, optimizer %g -> %g s", (int)i, c0.mem_bytes, c1.mem_bytes, c0.optim_s,
              c1.optim_s);
        int same = 1;
        for (int k = 0; k < AX_PG_N; k++) same &= near(c0.comm_bytes[k], c1.comm_bytes[k]);
        CHECK(same && c1.n_coll[AX_PG_DATA] == c0.n_coll[AX_PG_DATA] + (DC > 1),
              "grid %d: data bytes %g vs %g, data x Z %g vs %g, data collectives %g vs %g", (int)i,
              c0.comm_bytes[AX_PG_DATA], c1.comm_bytes[AX_PG_DATA], c0.comm_bytes[AX_PG_DZ], c1.comm_bytes[AX_PG_DZ],
              c0.n_coll[AX_PG_DATA], c1.n_coll[AX_PG_DATA]);
    }
    /* D = 4: the moments a quarter (the bound: <= 0.3x) */
    ax_plan_cost c0, c1;
    j.cp = 1;
    j.zero = 0;
    ax_plan_estimate(&j, grids[0], &mc, &c0);
    j.zero = 1;
    ax_plan_estimate(&j, grids[0], &mc, &c1);
    CHECK(c1.optim_bytes == c0.optim_bytes / 4 && c1.share_bytes == c0.grad_bytes / 4, "D = 4: %g of zero 0's moments",
          c1.optim_bytes / c0.optim_bytes);
    /* time at D = 4, beta 1 s/byte, the GEMMs slow enough to hide any reduction: the compute is the
     * same; with no overlap every byte is exposed alike; with DP the all-gather (3/4 of 4 bytes a
     * parameter) stays exposed but for the optimizer's seconds, times (L - 1) / L */
    mc.gemm_flops = 1e-3;
    for (int dp = 0; dp < 2; dp++) {
        j.ov_flags = dp ? AX_OV_DP : 0;
        j.zero = 0;
        ax_plan_estimate(&j, grids[0], &mc, &c0);
        j.zero = 1;
        ax_plan_estimate(&j, grids[0], &mc, &c1);
        double ag = 3.0 * c1.n_local, ov = (j.cfg.n_layer - 1.0) / j.cfg.n_layer;
        double want = dp ? (ag - fmin(ag, c1.optim_s)) * ov : 0;
        CHECK(near(c0.comm_total_s, c1.comm_total_s) && near(c1.exposed_s - c0.exposed_s, want) &&
                  c1.compute_s == c0.compute_s && c0.hidden_s > (dp ? 0 : -1) && c1.optim_s < ag,
              "overlap %s: exposed %g -> %g (+%g, expected +%g), hidden %g -> %g", dp ? "dp" : "none", c0.exposed_s,
              c1.exposed_s, c1.exposed_s - c0.exposed_s, want, c0.hidden_s, c1.hidden_s);
    }
}

/* Memory-bound: a model that X and Y cannot split (n_head 1, n_embd 35) whose token table
 * dominates (Z's workspaces gather it whole), on memory just under the smallest zero 0 need of
 * 2 ranks: nothing fits under zero 0, D = 2 fits under zero 1 and is the first choice when both
 * settings are tried (what --grid auto takes); each legal grid is listed under both, a grid the
 * model's rules reject once. */
static void test_zero_fits(void) {
    ax_machine mc;
    unit_machine(&mc);
    ax_plan_job j;
    ax_plan_job_defaults(&j);
    j.cfg = (ax_gpt_config){.n_layer = 1, .n_head = 1, .n_embd = 35, .block_size = 16, .vocab_size = 16384};
    j.batch = 4;
    j.seq = 16;
    ax_plan p;
    ax_plan_run(&j, 2, &mc, &p);
    double least = 1e300;
    for (int i = 0; i < p.n; i++)
        if (p.c[i].legal) least = fmin(least, p.c[i].mem_bytes);
    ax_plan_free(&p);
    mc.mem_bytes = 0.99 * least / (1 - j.mem_reserve);
    ax_plan_run(&j, 2, &mc, &p);
    int nfit0 = p.nfit;
    ax_plan_free(&p);
    j.zero = AX_PLAN_ZERO_ANY;
    ax_plan_run(&j, 2, &mc, &p);
    int once = 1, twice = 0, zero1 = 1;
    for (int i = 0; i < p.n; i++) {
        once &= p.c[i].legal || p.c[i].zero == AX_PLAN_ZERO_ANY;
        twice += p.c[i].legal;
        if (i < p.nfit) zero1 &= p.c[i].zero == 1;
    }
    /* (cp 1) 2,1,1,1 and 1,1,1,2 legal, under 0 and 1; 1,2,1,1 and 1,1,2,1 not, once */
    CHECK(nfit0 == 0 && p.nfit > 0 && zero1 && p.c[0].zero == 1 && p.c[0].grid[0] == 2 && p.c[0].cp == 1,
          "zero 0: %d fit; both: %d fit, the first %d,%d,%d,%d cp %d zero %d", nfit0, p.nfit, p.c[0].grid[0],
          p.c[0].grid[1], p.c[0].grid[2], p.c[0].grid[3], p.c[0].cp, p.c[0].zero);
    CHECK(p.n == 6 && twice == 4 && once, "%d entries, %d legal (expected 6, 4), rejected once %d", p.n, twice, once);
    ax_plan_free(&p);
    int any = ax_plan_min_ranks(&j, &mc, 2);
    j.zero = 0;
    CHECK(any == 2 && ax_plan_min_ranks(&j, &mc, 2) == 0, "smallest rank count: both %d, zero 0 none", any);
}

/* docs/planner.md's examples: a Llama-3.1-8B-shaped job at sequence T, batch B, bf16, block recomputation */
static void llama8b_job(ax_plan_job *j, int T, int B) {
    ax_plan_job_defaults(j);
    j->cfg = (ax_gpt_config){.n_layer = 32,
                             .n_head = 32,
                             .n_kv_head = 8,
                             .n_embd = 4096,
                             .n_inner = 14336,
                             .block_size = T,
                             .vocab_size = 128256,
                             .arch = AX_ARCH_LLAMA,
                             .untied = 1,
                             .rope_theta = 500000};
    j->batch = B;
    j->seq = T;
    j->recompute = AX_RECOMPUTE_BLOCK;
    j->act_bytes = 2;
}

/* docs/planner.md's ZeRO-1 example: the Llama-3.1-8B shape at T = 8,192 on 64 H100s (the h100x8
 * preset), batch 64, bf16, block recomputation, C = 1. The three grids with D = 32 fit only under
 * zero 1, D = 64 under neither; the first choice is 8,1,1,8 under zero 0, zero 1 second: its
 * data group spans nodes, and the exposed all-gather outweighs the optimizer saved. */
static void test_zero_llama8b(void) {
    ax_machine mc;
    CHECK(ax_machine_preset(&mc, "h100x8") == 0, "preset");
    ax_plan_job j;
    llama8b_job(&j, 8192, 64);
    static const int only1[][4] = {{32, 1, 1, 2}, {32, 1, 2, 1}, {32, 2, 1, 1}};
    for (int i = 0; i < 3; i++) {
        ax_plan_cost c0, c1;
        j.zero = 0;
        ax_plan_estimate(&j, only1[i], &mc, &c0);
        j.zero = 1;
        ax_plan_estimate(&j, only1[i], &mc, &c1);
        CHECK(c0.legal && !c0.fits && c1.fits, "%d,%d,%d,%d: fits under zero 0 %d (%.1f GiB), 1 %d (%.1f GiB)",
              only1[i][0], only1[i][1], only1[i][2], only1[i][3], c0.fits, c0.mem_bytes / (1 << 30), c1.fits,
              c1.mem_bytes / (1 << 30));
    }
    ax_plan_cost c;
    ax_plan_estimate(&j, (int[]){64, 1, 1, 1}, &mc, &c);
    CHECK(c.legal && !c.fits, "64,1,1,1 fits under zero 1 (%.1f GiB)", c.mem_bytes / (1 << 30));
    j.zero = AX_PLAN_ZERO_ANY;
    ax_plan p;
    ax_plan_run(&j, 64, &mc, &p);
    int first = p.nfit > 1 && !memcmp(p.c[0].grid, (int[]){8, 1, 1, 8}, sizeof p.c[0].grid);
    CHECK(first && p.c[0].zero == 0 && !memcmp(p.c[1].grid, p.c[0].grid, sizeof p.c[0].grid) && p.c[1].zero == 1 &&
              p.c[1].optim_s < p.c[0].optim_s && p.c[1].exposed_s - p.c[0].exposed_s > p.c[0].optim_s - p.c[1].optim_s,
          "first %d,%d,%d,%d zero %d, then %d,%d,%d,%d zero %d", p.c[0].grid[0], p.c[0].grid[1], p.c[0].grid[2],
          p.c[0].grid[3], p.c[0].zero, p.c[1].grid[0], p.c[1].grid[1], p.c[1].grid[2], p.c[1].grid[3], p.c[1].zero);
    ax_plan_free(&p);
}

/* docs/planner.md's example: a Llama-3.1-8B-shaped model at T = 131,072 on 64 H100s (8 a node,
 * the h100x8 preset), batch 8, bf16, block recomputation. The planner picks C > 1; that grid
 * at C = 1 does not fit, nor does any C = 1 grid that leaves the hidden unsplit (X = 1); a
 * rank's activations fall as 1/C: C x those at C are within 10% of those at C = 1 (4-5% over
 * here: the ring's buffers, five blocks of a rank's k|v, exist only with C > 1, and the
 * classifier's chunk of rows does not shrink). */
static void test_cp_llama8b(void) {
    ax_machine mc;
    CHECK(ax_machine_preset(&mc, "h100x8") == 0, "preset");
    ax_plan_job j;
    llama8b_job(&j, 131072, 8);
    j.cp = 0;
    ax_plan p;
    ax_plan_run(&j, 64, &mc, &p);
    CHECK(p.nfit > 0 && p.c[0].cp > 1, "8B at 131072 on 64 H100s: first choice cp %d of %d runnable", p.c[0].cp,
          p.nfit);
    if (p.nfit == 0) return;
    ax_plan_cost best = p.c[0], c;
    ax_plan_free(&p);
    j.cp = 1;
    ax_plan_estimate(&j, best.grid, &mc, &c);
    CHECK(c.legal && !c.fits, "the first choice's grid at C = 1 fits (%.1f GiB)", c.mem_bytes / (1 << 30));
    double act1 = c.act_bytes;
    ax_plan_run(&j, 64, &mc, &p);
    int x1 = 0;
    for (int i = 0; i < p.nfit; i++) x1 += p.c[i].grid[1] == 1;
    CHECK(x1 == 0 && (p.nfit == 0 || p.c[0].step_s > best.step_s), "C = 1: %d grids with X = 1 fit; best %g s vs %g",
          x1, p.nfit ? p.c[0].step_s : 0, best.step_s);
    ax_plan_free(&p);
    for (int cp = 2; cp <= 16; cp *= 2) {
        j.cp = cp;
        ax_plan_estimate(&j, best.grid, &mc, &c);
        double r = c.act_bytes * cp / act1;
        CHECK(r > 0.95 && r < 1.1, "cp %d: activations %.3g GiB, x C / C = 1's = %.3f", cp, c.act_bytes / (1 << 30), r);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    test_median();
    test_time_all();
    test_time_sets();
    test_gemm_shapes();
    test_hot_share();
    test_placement();
    test_flops();
    test_peak();
    test_overlap();
    test_activation();
    test_row_kernels();
    test_gemm_dtype();
    test_volumes();
    test_memory(0);
    test_memory(1);
    test_cp();
    test_cp_rules();
    test_cp_llama8b();
    test_zero_memory_and_bytes();
    test_zero_fits();
    test_zero_llama8b();
    test_rejects_and_ranking();
    test_fit_and_files();
    int rc = ax_test_done("plan");
    MPI_Finalize();
    return rc;
}
