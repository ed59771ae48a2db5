/* axonn plan: every grid of P ranks, ranked by the performance model. */
#include "cli/args.h"
#include "cli/cli.h"
#include "train/bench.h"
#include "train/flops.h"
#include "util/err.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "usage: axonn plan --ranks P [--machine FILE|NAME] [model and batch options] [--cp C] [--zero 0|1] [--json]\n"
    "                  [--top K]\n"
    "       mpirun -np P axonn plan --ranks P ... --top K --run [--iters N]\n\n"
    "Predicts the step time and memory per rank of every grid (D, X, Y, Z) and context split C\n"
    "with D*X*Y*Z*C = P for the model, ranks the grids that divide it and fit in memory, and says\n"
    "why the others do not. C splits each sequence over C ranks (ring attention); it takes every\n"
    "value that divides P and the sequence (T a multiple of 2C), or the one --cp gives. Each grid is\n"
    "estimated under --zero 0 and 1 (AdamW's state replicated or sharded over the data group) and\n"
    "ranked together, or under the one --zero gives.\n"
    "--machine takes a description written by 'axonn bench comm --out FILE' or a preset:\n"
    "perlmutter, frontier, alps, h100x8, h200x8, cpu (default: cpu, a rough estimate).\n"
    "Model presets: those of axonn train and axonn-5b ... axonn-640b (with their batch and sequence).\n"
    "--run (under mpirun with P ranks) times the top K grids with axonn bench and prints the\n"
    "measured step (the median over its timed iterations) beside the predicted one.";

#define GIB (1024.0 * 1024.0 * 1024.0)

/* "D,X,Y,Z cp C": --grid's notation and the context split beside it */
static const char *grid_name(const ax_plan_cost *c, char *buf, size_t n) {
    snprintf(buf, n, "%d,%d,%d,%d cp %d", c->grid[0], c->grid[1], c->grid[2], c->grid[3], c->cp);
    return buf;
}

/* " zero Z" for a grid estimated under one setting; "" for one the model's rules reject under either */
static const char *zero_name(const ax_plan_cost *c, char *buf, size_t n) {
    if (c->zero == AX_PLAN_ZERO_ANY) snprintf(buf, n, "%s", "");
    else snprintf(buf, n, " zero %d", c->zero);
    return buf;
}

static json_t *zero_json(int zero) { return zero == AX_PLAN_ZERO_ANY ? json_null() : json_integer(zero); }

/* measured[i] > 0: the median step of ranked grid i timed by --run */
static json_t *cost_json(const ax_plan_cost *c, double measured) {
    json_t *g = json_object(), *b = json_object(), *n = json_object(), *inter = json_object(), *pl = json_object();
    for (int i = 0; i < AX_PG_N; i++) {
        json_object_set_new(g, ax_plan_group_names[i], json_real(c->comm_s[i] * 1e3));
        json_object_set_new(b, ax_plan_group_names[i], json_real(c->comm_bytes[i]));
        json_object_set_new(n, ax_plan_group_names[i], json_real(c->n_coll[i]));
        json_object_set_new(inter, ax_plan_group_names[i], json_boolean(c->place[i] == AX_PLACE_INTER));
        json_object_set_new(pl, ax_plan_group_names[i], json_string(ax_place_names[c->place[i]]));
    }
    json_t *j = json_pack(
        "{s:[i,i,i,i], s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
        "s:f}",
        "grid", c->grid[0], c->grid[1], c->grid[2], c->grid[3], "cp", c->cp, "zero", c->zero, "step_ms",
        c->step_s * 1e3, "compute_ms", c->compute_s * 1e3, "gemm_ms", c->gemm_s * 1e3, "attention_ms", c->attn_s * 1e3,
        "elementwise_ms", c->elem_s * 1e3, "optimizer_ms", c->optim_s * 1e3, "comm_total_ms", c->comm_total_s * 1e3,
        "comm_hidden_ms", c->hidden_s * 1e3, "comm_exposed_ms", c->exposed_s * 1e3, "params_per_rank",
        (json_int_t)c->n_local, "params_updated_per_rank", c->n_update, "param_bytes", c->param_bytes, "gradient_bytes",
        c->grad_bytes, "optimizer_state_bytes", c->optim_bytes, "gradient_share_bytes", c->share_bytes,
        "activation_bytes", c->act_bytes, "workspace_bytes", c->ws_bytes, "memory_bytes", c->mem_bytes);
    json_object_set_new(j, "comm_ms", g);
    json_object_set_new(j, "comm_bytes", b);
    json_object_set_new(j, "collectives", n);
    json_object_set_new(j, "spans_nodes", inter);
    json_object_set_new(j, "placement", pl);
    if (measured > 0) json_object_set_new(j, "measured_step_ms", json_real(measured * 1e3));
    return j;
}

static void print_json(const ax_plan *p, const ax_plan_job *jb, const ax_machine *m, int top, int min_ranks,
                       const double *measured) {
    json_t *ranked = json_array(), *rej = json_array();
    for (int i = 0; i < p->n; i++) {
        const ax_plan_cost *c = &p->c[i];
        if (i < p->nfit) {
            if (i < top) json_array_append_new(ranked, cost_json(c, measured ? measured[i] : 0));
            continue;
        }
        json_array_append_new(rej, json_pack("{s:[i,i,i,i], s:i, s:o, s:s, s:b}", "grid", c->grid[0], c->grid[1],
                                             c->grid[2], c->grid[3], "cp", c->cp, "zero", zero_json(c->zero), "reason",
                                             c->why, "divides", c->legal));
    }
    json_t *j = json_pack("{s:i, s:s, s:s, s:{s:i, s:i, s:i, s:i, s:i}, s:i, s:i, s:i, s:i, s:i, s:f, s:i, s:i}",
                          "ranks", p->P, "machine", m->name, "machine_source", m->source, "model", "n_layer",
                          jb->cfg.n_layer, "n_head", jb->cfg.n_head, "n_embd", jb->cfg.n_embd, "n_positions",
                          jb->cfg.block_size, "vocab_size", jb->cfg.vocab_size, "batch", jb->batch, "seq", jb->seq,
                          "grad_accum", jb->grad_accum, "recompute", jb->recompute, "activation_bytes_per_element",
                          jb->act_bytes, "hidden_share", jb->overlap, "grids", p->n, "runnable", p->nfit);
    json_object_set_new(j, "model_flops_per_step", json_real(ax_model_flops(&jb->cfg, jb->batch, jb->seq)));
    json_object_set_new(j, "hardware_flops_per_step", json_real(ax_hardware_flops(&jb->cfg, jb->batch, jb->seq)));
    json_object_set_new(j, "cp", jb->cp ? json_integer(jb->cp) : json_null()); /* --cp, or null: every C tried */
    json_object_set_new(j, "zero", zero_json(jb->zero));                       /* --zero, or null: both tried */
    json_object_set_new(j, "ranked", ranked);
    json_object_set_new(j, "rejected", rej);
    json_object_set_new(j, "min_ranks", min_ranks ? json_integer(min_ranks) : json_null());
    char *s = json_dumps(j, JSON_REAL_PRECISION(9));
    printf("%s\n", s);
    free(s);
    json_decref(j);
}

static void print_text(const ax_plan *p, const ax_plan_job *jb, const ax_machine *m, int top, int min_ranks,
                       const double *measured) {
    static const char *modes[] = {"none", "attn", "block"};
    printf("plan: %d ranks on %s [%s]\n", p->P, m->name, m->source);
    char cps[32] = "every C (T a multiple of 2C)", zs[32] = "0 and 1";
    if (jb->cp) snprintf(cps, sizeof cps, "%d", jb->cp);
    if (jb->zero != AX_PLAN_ZERO_ANY) snprintf(zs, sizeof zs, "%d", jb->zero);
    printf("model L=%d H=%d C=%d V=%d (%.3g parameters); batch %d x %d tokens in %d micro-batches; recompute %s; "
           "%d-byte activations; hidden communication %.0f%%; context split cp %s; zero %s\n",
           jb->cfg.n_layer, jb->cfg.n_head, jb->cfg.n_embd, jb->cfg.vocab_size, (double)ax_gpt_num_params(&jb->cfg),
           jb->batch, jb->seq, jb->grad_accum, modes[jb->recompute], jb->act_bytes, 100 * jb->overlap, cps, zs);
    printf("%4s %-20s %4s %10s %10s %10s %10s %9s  %-40s %8s%s\n", "rank", "D,X,Y,Z cp C", "zero", "step ms", "compute",
           "GEMM", "exposed", "optim", "comm ms: X Y Z data data_z xyz C (* spans nodes, ^ one core)", "GiB/rank",
           measured ? "  measured ms (ratio)" : "");
    for (int i = 0; i < p->nfit && i < top; i++) {
        const ax_plan_cost *c = &p->c[i];
        char g[48], cm[192] = "";
        grid_name(c, g, sizeof g);
        for (int k = 0; k < AX_PG_N; k++)
            snprintf(cm + strlen(cm), sizeof cm - strlen(cm), "%s%.3g%s", k ? " " : "", c->comm_s[k] * 1e3,
                     c->place[k] == AX_PLACE_INTER  ? "*"
                     : c->place[k] == AX_PLACE_CORE ? "^"
                                                    : "");
        printf("%4d %-20s %4d %10.3f %10.3f %10.3f %10.3f %9.3f  %-40s %8.4g", i + 1, g, c->zero, c->step_s * 1e3,
               c->compute_s * 1e3, c->gemm_s * 1e3, c->exposed_s * 1e3, c->optim_s * 1e3, cm, c->mem_bytes / GIB);
        if (measured) printf("  %10.3f (%.2f)", measured[i] * 1e3, measured[i] / c->step_s);
        printf("\n");
    }
    if (p->nfit > top) printf("(%d more runnable grids; --top K shows more)\n", p->nfit - top);
    if (p->n > p->nfit) printf("not runnable (%d):\n", p->n - p->nfit);
    char g[48], z[16];
    for (int i = p->nfit; i < p->n; i++)
        printf("  %s%s: %s\n", grid_name(&p->c[i], g, sizeof g), zero_name(&p->c[i], z, sizeof z), p->c[i].why);
    if (min_ranks) printf("smallest rank count with a grid that fits: %d\n", min_ranks);
    else printf("no rank count up to 65536 has a grid that fits\n");
}

/* --run: each of the top grids timed by axonn bench in this job (every grid has P ranks) */
static int run_top(const ax_train_opts *o, const ax_plan *p, int top, int iters, double **measured) {
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != p->P) return AX_ERR("--run: %d ranks, expected --ranks %d (run under mpirun -np %d)", size, p->P, p->P);
    int n = p->nfit < top ? p->nfit : top;
    *measured = ax_calloc(n > 0 ? n : 1, sizeof(double));
    for (int i = 0; i < n; i++) {
        ax_train_opts b = *o;
        memcpy(b.grid, p->c[i].grid, sizeof b.grid);
        b.cp = p->c[i].cp;
        b.zero = p->c[i].zero;
        b.quiet = 1;
        ax_bench_result r;
        bool silent = true; /* the plan's table is the output */
        AX_TRY(ax_bench(&b, iters, silent, MPI_COMM_WORLD, &r));
        (*measured)[i] = r.step_med_s; /* the steady step the model predicts, not a burst of other work */
    }
    return 0;
}

int ax_cmd_plan(int argc, char **argv) {
    ax_train_opts o;
    ax_train_defaults(&o);
    o.batch = 0;
    const char *machine = NULL;
    ax_cli_model_flags mf = {0};
    int ranks = 0, json = 0, top = 10, run = 0, iters = 10, cp = 0;
    double overlap = 0;
    ax_opt opts[] = {
        {"ranks", AX_OPT_INT, &ranks, "P", "rank count (required)", AX_RANGE('[', 1, 1048576, ']')},
        {"machine", AX_OPT_STR, &machine, "FILE|NAME", "machine description (axonn bench comm --out) or preset"},
        AX_CLI_JOB_OPTS(o, mf),
        {"cp", AX_OPT_INT, &cp, "C", "the context split C only (default: every C)", AX_RANGE('[', 1, 1048576, ']')},
        {"zero", AX_OPT_INT, &o.zero, "0|1",
         "the run's --zero only: AdamW's state replicated (0) or sharded (1) over "
         "the data group (default: both)",
         AX_RANGE('[', 0, 1, ']')},
        {"recompute", AX_OPT_STR, &o.recompute, "MODE", "activation recomputation: none, attn or block"},
        {"hidden", AX_OPT_DOUBLE, &overlap, "F",
         "share of communication the time model takes as hidden behind compute (default 0)", AX_RANGE('[', 0, 1, ']')},
        {"overlap", AX_OPT_STR, &o.overlap, "LIST", "the run's --overlap (its buffers count in memory; default all)"},
        {"keep-gathered", AX_OPT_FLAG, &o.keep_gathered, NULL,
         "the run's --keep-gathered (one gathered weight per FC layer kept)"},
        {"top", AX_OPT_INT, &top, "K", "ranked grids shown (default 10)", AX_RANGE('[', 1, 1e6, ']')},
        {"json", AX_OPT_FLAG, &json, NULL, "one JSON object: ranked grids, rejected ones with reasons, min_ranks"},
        {"run", AX_OPT_FLAG, &run, NULL, "time the top K grids with axonn bench (under mpirun with P ranks)"},
        {"iters", AX_OPT_INT, &iters, "N", "--run: iterations per grid (default 10; the first two not timed)",
         AX_RANGE('[', 3, 1e6, ']')},
        {"threads", AX_OPT_INT, &o.threads, "N",
         "--run: OpenMP/BLAS threads per rank (default: cores / ranks per node)", AX_RANGE('[', 0, 1024, ']')},
        {NULL},
    };
    int rc = ax_args_parse(opts, argc, argv, 2, usage, NULL, NULL, 0);
    if (rc) return rc;
    if (!ranks) return AX_ERR("--ranks: required (the number of ranks to plan for)");
    ax_plan_job j;
    AX_TRY(ax_cli_job_options(opts, &mf, &o, &j));
    if (cp) AX_TRY(ax_cp_check(j.seq, cp));
    if (cp && ranks % cp) return AX_ERR("--cp %d: expected a divisor of --ranks %d", cp, ranks);
    j.cp = cp; /* 0: every C that divides the ranks and the sequence */
    if (!ax_args_given(opts, "zero")) j.zero = AX_PLAN_ZERO_ANY;
    ax_machine m;
    AX_TRY(ax_cli_machine(machine, &m));
    j.overlap = overlap;
    ax_plan p;
    ax_plan_run(&j, ranks, &m, &p);
    int min_ranks = ax_plan_min_ranks(&j, &m, 65536);
    if (p.nfit == 0) {
        char more[96] = "no rank count up to 65536 fits";
        if (min_ranks) snprintf(more, sizeof more, "the smallest rank count with one is %d", min_ranks);
        char g[48], z[16];
        rc = AX_ERR("--ranks %d: no grid of %d ranks runs this model on %s (%s; e.g. %s%s: %s)", ranks, ranks, m.name,
                    more, grid_name(&p.c[0], g, sizeof g), zero_name(&p.c[0], z, sizeof z), p.c[0].why);
        ax_plan_free(&p);
        return rc;
    }
    double *measured = NULL;
    if (run) rc = run_top(&o, &p, top, iters, &measured);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rc == 0 && rank == 0) {
        if (json) print_json(&p, &j, &m, top, min_ranks, measured);
        else print_text(&p, &j, &m, top, min_ranks, measured);
    }
    free(measured);
    ax_plan_free(&p);
    return rc;
}
