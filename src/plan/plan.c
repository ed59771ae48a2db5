#include "plan/plan.h"
#include "grid/grid.h"
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
    int g = memcmp(a->grid, b->grid, sizeof a->grid);            /* a stable order for ties */
    return g ? g : a->cp != b->cp ? a->cp - b->cp : a->zero - b->zero;
}

/* the divisors of P, ascending; returns their count */
static int divisors(int P, int *d) {
    int n = 0, hi = 0, top[256]; /* at most 120 above the root below 2^20 (720720 has 240 divisors) */
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
    ax_plan_job j; /* its cp: the C of the grids enumerated now; its zero: the job's */
    const ax_machine *m;
    ax_plan *p;
    int found;
} plan_ctx;

/* the ZeRO settings the job asks for: settings[0..return) */
static int job_settings(const ax_plan_job *j, int settings[2]) {
    int any = j->zero == AX_PLAN_ZERO_ANY;
    settings[0] = any ? 0 : j->zero;
    settings[1] = 1;
    return any ? 2 : 1;
}

/* the grid under each setting; one that the model's rules reject once, under either */
static void add_grid(void *ctx, const int g[4]) {
    plan_ctx *x = ctx;
    ax_plan_job j = x->j;
    int zs[2], n = job_settings(&x->j, zs);
    for (int i = 0; i < n; i++) {
        j.zero = zs[i];
        ax_plan_cost *c = &x->p->c[x->p->n++];
        ax_plan_estimate(&j, g, x->m, c);
        x->p->nfit += c->legal && c->fits;
        if (!c->legal) {
            c->zero = x->j.zero;
            break;
        }
    }
}

static void check_fit(void *ctx, const int g[4]) {
    plan_ctx *x = ctx;
    ax_plan_job j = x->j;
    int zs[2], n = job_settings(&x->j, zs);
    for (int i = 0; i < n && !x->found; i++) {
        j.zero = zs[i];
        ax_plan_cost c;
        ax_plan_estimate_part(&j, g, x->m, &c, 0);
        x->found = c.legal && c.fits;
    }
}

/* calls f for every (D, X, Y, Z) of P / C ranks with x->j.cp = C, for the job's C or (0)
 * every C that divides P and the sequence (ax_cp_fits); returns the count */
static int each_grid_cp(int P, grid_fn f, plan_ctx *x) {
    int dv[2048], n = divisors(P, dv), count = 0, want = x->j.cp;
    for (int i = 0; i < n; i++) {
        int cp = dv[i];
        if ((want && cp != want) || !ax_cp_fits(x->j.seq, cp)) continue;
        x->j.cp = cp;
        count += each_grid(P / cp, f, x);
        x->j.cp = want;
    }
    return count;
}

void ax_plan_run(const ax_plan_job *j, int P, const ax_machine *m, ax_plan *out) {
    memset(out, 0, sizeof *out);
    out->P = P;
    plan_ctx x = {*j, m, out, 0};
    int zs[2];
    out->c = ax_calloc((size_t)each_grid_cp(P, NULL, &x) * job_settings(j, zs), sizeof(ax_plan_cost));
    each_grid_cp(P, add_grid, &x);
    qsort(out->c, out->n, sizeof *out->c, by_rank);
}

void ax_plan_free(ax_plan *p) {
    free(p->c);
    memset(p, 0, sizeof *p);
}

int ax_plan_min_ranks(const ax_plan_job *j, const ax_machine *m, int limit) {
    for (int P = 1; P <= limit; P++) {
        plan_ctx x = {*j, m, NULL, 0};
        each_grid_cp(P, check_fit, &x);
        if (x.found) return P;
    }
    return 0;
}
