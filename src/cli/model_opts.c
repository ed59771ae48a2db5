/* What train, bench and plan share: the model from a preset and size flags,
 * the job the planner needs, the machine description, and --grid auto. */
#include "cli/cli.h"
#include "plan/plan.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdio.h>
#include <string.h>

int ax_cli_model_options(const ax_opt *opts, const char *preset, const ax_gpt_config *given, int from_file,
                         ax_gpt_config *model) {
    if (preset) AX_TRY(ax_cli_preset(preset, model));
    static const char *flags[] = {"n-layer", "n-head", "n-embd", "block-size", "vocab-size"};
    int *dst[] = {&model->n_layer, &model->n_head, &model->n_embd, &model->block_size, &model->vocab_size};
    const int src[] = {given->n_layer, given->n_head, given->n_embd, given->block_size, given->vocab_size};
    int sized = preset != NULL;
    for (int i = 0; i < 5; i++)
        if (ax_args_given(opts, flags[i])) { *dst[i] = src[i]; sized = 1; }
    if (from_file && sized)
        return AX_ERR("--preset and model-size flags apply to new models; --init takes the size from config.json");
    return 0;
}

int ax_cli_init_config(const char *init, ax_gpt_config *c) {
    char path[4200];
    ax_dirname(init, path, sizeof path);
    strncat(path, "/config.json", sizeof path - strlen(path) - 1);
    return ax_agree(MPI_COMM_WORLD, ax_gpt_config_read(c, path));
}

int ax_cli_machine(const char *arg, ax_machine *m) {
    if (!arg) return ax_machine_preset(m, "cpu");
    if (ax_file_exists(arg)) return ax_machine_read(m, arg);
    return ax_machine_preset(m, arg);
}

int ax_cli_plan_job(const ax_train_opts *o, ax_plan_job *j) {
    ax_plan_job_defaults(j);
    j->cfg = o->model;
    j->batch = o->batch ? o->batch : 8;
    j->seq = o->seq ? o->seq : o->model.block_size;
    j->grad_accum = o->grad_accum;
    static const char *modes[] = {"none", "attn", "block"};
    j->recompute = -1;
    for (int i = 0; i < 3; i++) if (!strcmp(o->recompute, modes[i])) j->recompute = i;
    if (j->recompute < 0) return AX_ERR("--recompute %s: expected none, attn or block", o->recompute);
    if (j->seq > o->model.block_size)
        return AX_ERR("--seq %d: expected 1..%d (the model's n_positions)", j->seq, o->model.block_size);
    return 0;
}

int ax_cli_grid_option(const char *grid, const char *machine, const ax_train_opts *o, MPI_Comm comm, int out[4]) {
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
    if (rank == 0) {
        printf("grid auto: D=%d X=%d Y=%d Z=%d, the planner's first of %d runnable grids on %s: predicted %.2f ms/step "
               "(compute %.2f, communication %.2f, optimizer %.2f), %.1f MiB per rank",
               b->grid[0], b->grid[1], b->grid[2], b->grid[3], p.nfit, m.name, b->step_s * 1e3, b->compute_s * 1e3,
               b->exposed_s * 1e3, b->optim_s * 1e3, b->mem_bytes / (1 << 20));
        if (p.nfit > 1) printf("; next %d,%d,%d,%d at %.2f ms", p.c[1].grid[0], p.c[1].grid[1], p.c[1].grid[2],
                               p.c[1].grid[3], p.c[1].step_s * 1e3);
        printf("\n");
        fflush(stdout);
    }
    ax_plan_free(&p);
    return 0;
}
