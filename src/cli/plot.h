/* Loss curves as a standalone SVG (axonn plot): what to draw, and drawing it.
 *
 *   ax_plot_run runs[2] = {{.label = "runs/a", .train = ...}, ...};
 *   ax_plot_axes ax = {.xlabel = "step", .ylabel = "loss", .log_x = 0};
 *   char *svg = ax_plot_svg(runs, 2, &ax);   // malloc'd text, free() it
 */
#ifndef AX_CLI_PLOT_H
#define AX_CLI_PLOT_H

/* points (x[i], y[i]), x increasing as logged */
typedef struct {
    double *x, *y;
    int n, cap;
} ax_curve;

typedef struct {
    char label[512]; /* the legend's name of the run */
    ax_curve train;  /* a solid line */
    ax_curve val;    /* dashed, with a marker at each point; n 0: none */
} ax_plot_run;

typedef struct {
    const char *xlabel, *ylabel;
    int log_x;  /* x on a logarithmic scale (every x > 0) */
    int smooth; /* > 1: the training curves are means of this many points (said in the legend) */
} ax_plot_axes;

void ax_curve_add(ax_curve *c, double x, double y);
void ax_curve_free(ax_curve *c);
/* The whole document: axes with ticks and labels, one colour per run, a
 * legend. Each curve is one <polyline> of class "train" or "val" whose
 * data-run attribute is its run's label, one point per (x, y). */
char *ax_plot_svg(const ax_plot_run *runs, int n, const ax_plot_axes *a);
#endif
