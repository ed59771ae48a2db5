/* The planner (docs/algorithm.md §6): every (D, X, Y, Z) and context split C with
 * D X Y Z C = P — any factorisation; C the job's, or with job.cp = 0 every C
 * that the sequence allows (ax_cp_fits) — under the job's ZeRO setting, or with
 * job.zero = AX_PLAN_ZERO_ANY under both (a grid the model's rules reject listed once),
 * estimated by plan/model.h and ranked together: the grids that divide
 * the model and fit in memory by predicted step time, then those that fit
 * nothing, with the reason.
 *
 *   ax_plan p;
 *   ax_plan_run(&job, 8, &machine, &p);   // p.c[0] the first choice when p.nfit > 0 (its grid, cp, zero)
 *   ax_plan_free(&p); */
#ifndef AX_PLAN_PLAN_H
#define AX_PLAN_PLAN_H
#include "plan/model.h"

typedef struct {
    int P, n, nfit; /* grids (each under each setting tried), of which the first nfit are legal and fit */
    ax_plan_cost *c;
} ax_plan;

void ax_plan_run(const ax_plan_job *j, int P, const ax_machine *m, ax_plan *out);
void ax_plan_free(ax_plan *p);
/* The smallest rank count <= limit with a grid (and C and setting, as ax_plan_run) that is legal and fits; 0 if
 * none. */
int ax_plan_min_ranks(const ax_plan_job *j, const ax_machine *m, int limit);
#endif
