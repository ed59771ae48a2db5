#include "plan/plan.h"
#include "util/err.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int by_rank(const void *pa, const void *pb) {
    const ax_plan_cost *a = pa, *b = pb;
    int ga = a->legal && a->fits, gb = b->legal && b->fits;
    if (ga != gb) return gb - ga;
    if (ga && a->step_s != b->step_s) return a->step_s < b->step_s ? -1 : 1;
    if (!ga && a->legal != b->legal) return b->legal - a->legal; /* the ones too large first: closest to fitting */
    return memcmp(a->grid, b->grid, sizeof a->grid);             /* a stable order for ties */
}

/* the divisors of P, ascending; returns their count */
static int divisors(int P, int *d) {
    int n = 0, hi = 0, top[64];
    for (int i = 1; (int64_t)i * i <= P; i++)
        if (P % i == 0) {
            d[n++] = i;
            if (i != P / i) top[hi++] = P / i;
        }
    while (hi) d[n++] = top[--hi];
    return n;
}

/* calls f for every ordered (D, X, Y, Z) with product P */
typedef void (*grid_fn)(void *ctx, const int g[4]);
static int each_grid(int P, grid_fn f, void *ctx) {
    int dv[2048], n = divisors(P, dv), count = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n && dv[b] <= P / dv[a]; b++) {
            if ((P / dv[a]) % dv[b]) continue;
            int rest = P / dv[a] / dv[b];
            for (int c = 0; c < n && dv[c] <= rest; c++) {
                if (rest % dv[c]) continue;
                int g[4] = {dv[a], dv[b], dv[c], rest / dv[c]};
                if (f) f(ctx, g);
                count++;
            }
        }
    return count;
}

typedef struct {
    const ax_plan_job *j;
    const ax_machine *m;
    ax_plan *p;
    int found;
} plan_ctx;

static void add_grid(void *ctx, const int g[4]) {
    plan_ctx *x = ctx;
    ax_plan_cost *c = &x->p->c[x->p->n++];
    ax_plan_estimate(x->j, g, x->m, c);
    x->p->nfit += c->legal && c->fits;
}

static void check_fit(void *ctx, const int g[4]) {
    plan_ctx *x = ctx;
    if (x->found) return;
    ax_plan_cost c;
    ax_plan_estimate_part(x->j, g, x->m, &c, 0);
    x->found = c.legal && c.fits;
}

void ax_plan_run(const ax_plan_job *j, int P, const ax_machine *m, ax_plan *out) {
    memset(out, 0, sizeof *out);
    out->P = P;
    out->c = ax_calloc(each_grid(P, NULL, NULL), sizeof(ax_plan_cost));
    plan_ctx x = {j, m, out, 0};
    each_grid(P, add_grid, &x);
    qsort(out->c, out->n, sizeof *out->c, by_rank);
}

void ax_plan_free(ax_plan *p) {
    free(p->c);
    memset(p, 0, sizeof *p);
}

int ax_plan_min_ranks(const ax_plan_job *j, const ax_machine *m, int limit) {
    for (int P = 1; P <= limit; P++) {
        plan_ctx x = {j, m, NULL, 0};
        each_grid(P, check_fit, &x);
        if (x.found) return P;
    }
    return 0;
}
