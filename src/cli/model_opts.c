/* What train, bench and plan share: the model from a preset and size flags,
 * the job the planner needs, the machine description, and --grid auto. */
#include "cli/cli.h"
#include "model/gpt.h"
#include "plan/plan.h"
#include "backend/backend.h"
#include "train/run.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdio.h>
#include <string.h>

int ax_cli_model_options(const ax_opt *opts, const ax_cli_model_flags *f, int from_file, ax_gpt_config *model) {
    static const char *flags[] = {"arch",    "n-layer",    "n-head",     "n-kv-head", "n-embd",
                                  "n-inner", "block-size", "vocab-size", "untied",    "rope-theta"};
    int sized = f->preset != NULL;
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) sized |= ax_args_given(opts, flags[i]);
    if (from_file && sized)
        return AX_ERR("--preset, --arch and model-size flags apply to new models; --init/--resume take the model "
                      "from config.json");
    if (f->preset) AX_TRY(ax_cli_preset(f->preset, model));
    if (f->arch) {
        if (!strcmp(f->arch, "llama")) model->arch = AX_ARCH_LLAMA;
        else if (!strcmp(f->arch, "gpt2")) model->arch = AX_ARCH_GPT2;
        else return AX_ERR("--arch %s: expected gpt2 or llama", f->arch);
    }
    int *dst[] = {&model->n_layer, &model->n_head,     &model->n_kv_head, &model->n_embd,
                  &model->n_inner, &model->block_size, &model->vocab_size};
    const int src[] = {f->c.n_layer, f->c.n_head,     f->c.n_kv_head, f->c.n_embd,
                       f->c.n_inner, f->c.block_size, f->c.vocab_size};
    for (int i = 0; i < 7; i++)
        if (ax_args_given(opts, flags[1 + i])) *dst[i] = src[i];
    if (ax_args_given(opts, "untied")) model->untied = f->c.untied;
    if (ax_args_given(opts, "rope-theta")) model->rope_theta = f->c.rope_theta;
    if (model->arch != AX_ARCH_LLAMA && (model->untied || model->rope_theta > 0 || model->n_kv_head))
        return AX_ERR("--untied, --rope-theta and --n-kv-head apply to --arch llama");
    return 0;
}

int ax_cli_init_config(const char *init, ax_gpt_config *c) {
    char st[4200], cfg[4200];
    ax_gpt_model_paths(init, st, cfg, sizeof st);
    return ax_agree(MPI_COMM_WORLD, ax_gpt_config_read(c, cfg));
}

int ax_cli_machine(const char *arg, ax_machine *m) {
    if (!arg) return ax_machine_preset(m, "cpu");
    if (ax_file_exists(arg)) return ax_machine_read(m, arg);
    return ax_machine_preset(m, arg);
}

int ax_cli_plan_job(const ax_train_opts *o, ax_plan_job *j) {
    ax_plan_job_defaults(j);
    j->cfg = o->model;
    j->batch = o->batch;
    j->seq = o->seq;
    ax_train_default_shape(&j->batch, &j->seq, &o->model);
    j->grad_accum = o->grad_accum;
    j->cp = o->cp; /* 0: every C */
    j->zero = o->zero;
    ax_recompute mode;
    AX_TRY(ax_recompute_parse(o->recompute, &mode));
    j->recompute = (int)mode;
    AX_TRY(ax_overlap_parse(o->overlap, &j->ov_flags));
    j->keep_gathered = o->keep_gathered;
    ax_dtype dtype;
    AX_TRY(ax_dtype_parse(o->dtype, &dtype));
    if (dtype == AX_BF16) j->act_bytes = 2;
    if (j->seq > o->model.block_size)
        return AX_ERR("--seq %d: expected 1..%d (the model's n_positions)", j->seq, o->model.block_size);
    return 0;
}

int ax_cli_job_options(const ax_opt *opts, const ax_cli_model_flags *mf, ax_train_opts *o, ax_plan_job *j) {
    AX_TRY(ax_cli_model_options(opts, mf, o->init != NULL, &o->model));
    if (o->init) AX_TRY(ax_cli_init_config(o->init, &o->model));
    int pb, ps;
    ax_cli_preset_job(mf->preset, &pb, &ps);
    if (!o->batch && pb) o->batch = pb;
    if (!o->seq && ps) o->seq = ps;
    if (pb && !ax_args_given(opts, "recompute")) o->recompute = "block"; /* as the published runs */
    AX_TRY(ax_cli_plan_job(o, j));
    if (j->batch % j->grad_accum)
        return AX_ERR("--batch %d: expected a multiple of --grad-accum %d", j->batch, j->grad_accum);
    return 0;
}

int ax_cli_grid_option(const char *grid, const char *machine, const ax_train_opts *o, int zero_given, MPI_Comm comm,
                       int out[4], int *cp, int *zero) {
    if (!grid) return 0;
    if (strcmp(grid, "auto")) return ax_grid_parse(grid, out);
    int P, rank;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &rank);
    /* every rank reads and plans alike: the choice is a pure function of the inputs */
    ax_machine m;
    ax_plan_job j;
    AX_TRY(ax_agree(comm, ax_cli_machine(machine, &m)));
    AX_TRY(ax_cli_plan_job(o, &j));
    if (!zero_given) j.zero = AX_PLAN_ZERO_ANY;
    ax_plan p;
    ax_plan_run(&j, P, &m, &p);
    if (p.nfit == 0) {
        int rc = AX_ERR("--grid auto: no grid of %d ranks runs this model (%d grids: %s)", P, p.n,
                        p.n ? p.c[0].why : "none");
        ax_plan_free(&p);
        return rc;
    }
    const ax_plan_cost *b = &p.c[0];
    memcpy(out, b->grid, 4 * sizeof(int));
    *cp = b->cp;
    *zero = b->zero;
    if (rank == 0) {
        printf("grid auto: D=%d X=%d Y=%d Z=%d C=%d, the planner's first of %d runnable grids on %s, --zero %d (%s): "
               "predicted %.2f ms/step (compute %.2f, communication %.2f, optimizer %.2f), %.1f MiB per rank",
               b->grid[0], b->grid[1], b->grid[2], b->grid[3], b->cp, p.nfit, m.name, b->zero,
               zero_given ? "given" : "chosen of 0 and 1", b->step_s * 1e3, b->compute_s * 1e3, b->exposed_s * 1e3,
               b->optim_s * 1e3, b->mem_bytes / (1 << 20));
        if (p.nfit > 1)
            printf("; next %d,%d,%d,%d cp %d zero %d at %.2f ms", p.c[1].grid[0], p.c[1].grid[1], p.c[1].grid[2],
                   p.c[1].grid[3], p.c[1].cp, p.c[1].zero, p.c[1].step_s * 1e3);
        printf("\n");
        fflush(stdout);
    }
    ax_plan_free(&p);
    return 0;
}
