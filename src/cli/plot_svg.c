/* Loss curves drawn as SVG (cli/plot.h). */
#include "cli/plot.h"
#include "util/err.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the canvas and the plot area inside it, pixels */
enum { WIDTH = 800, HEIGHT = 500, LEFT = 72, RIGHT = 24, TOP = 24, BOTTOM = 56 };
static const char *palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
enum { NCOLORS = sizeof palette / sizeof *palette };

void ax_curve_add(ax_curve *c, double x, double y) {
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->x = ax_realloc(c->x, c->cap * sizeof *c->x);
        c->y = ax_realloc(c->y, c->cap * sizeof *c->y);
    }
    c->x[c->n] = x, c->y[c->n] = y, c->n++;
}

void ax_curve_free(ax_curve *c) {
    free(c->x);
    free(c->y);
    *c = (ax_curve){0};
}

/* ---------------------------------------------------------------- text */

typedef struct {
    char *p;
    size_t n, cap;
} text;

static void say(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (t->p && t->n + k < t->cap) {
            t->n += k;
            return;
        }
        t->cap = (t->n + k + 1) * 2;
        t->p = ax_realloc(t->p, t->cap);
    }
}

/* s with XML's special characters escaped */
static void say_escaped(text *t, const char *s) {
    for (; *s; s++) {
        if (*s == '&') say(t, "&amp;");
        else if (*s == '<') say(t, "&lt;");
        else if (*s == '>') say(t, "&gt;");
        else if (*s == '"') say(t, "&quot;");
        else say(t, "%c", *s);
    }
}

/* a tick's label: up to 4 digits, from 10,000 on in thousands (k), millions (M), ... */
static void number(char *buf, size_t n, double v) {
    static const char *sfx[] = {"", "k", "M", "G", "T"};
    int u = 0;
    while (fabs(v) >= 1e4 && u < 4) v /= 1e3, u++;
    snprintf(buf, n, "%.4g%s", v, sfx[u]);
}

/* ---------------------------------------------------------------- scales */

typedef struct {
    double lo, hi; /* the data range, in the scale's units (log10 x on a log scale) */
    int log;
    double px0, px1; /* pixels of lo and hi */
} scale;

static double to_px(const scale *s, double v) {
    double u = s->log ? log10(v) : v;
    return s->px0 + (u - s->lo) / (s->hi - s->lo) * (s->px1 - s->px0);
}

/* the range of every x (or y) of the runs, widened when empty */
static scale fit(const ax_plot_run *runs, int n, int want_y, int log, double px0, double px1) {
    scale s = {INFINITY, -INFINITY, log, px0, px1};
    for (int r = 0; r < n; r++)
        for (int k = 0; k < 2; k++) {
            const ax_curve *c = k ? &runs[r].val : &runs[r].train;
            for (int i = 0; i < c->n; i++) {
                double v = want_y ? c->y[i] : c->x[i];
                if (log) v = log10(v);
                s.lo = fmin(s.lo, v), s.hi = fmax(s.hi, v);
            }
        }
    double pad = want_y ? 0.04 * (s.hi - s.lo) : 0;
    if (s.hi - s.lo < 1e-12) pad = log ? 0.5 : fmax(fabs(s.lo) * 0.05, 0.5);
    s.lo -= pad, s.hi += pad;
    return s;
}

/* "nice" ticks of a linear range: multiples of 1, 2 or 5 x 10^k, the step
 * nearest a sixth of the range */
static int linear_ticks(double lo, double hi, double *t, int max) {
    double raw = (hi - lo) / 6, mag = pow(10, floor(log10(raw))), step = 10 * mag;
    if (raw / mag < 1.5) step = mag;
    else if (raw / mag < 3.5) step = 2 * mag;
    else if (raw / mag < 7.5) step = 5 * mag;
    int n = 0;
    for (double v = ceil(lo / step) * step; v <= hi + 1e-9 * step && n < max; v += step)
        t[n++] = fabs(v) < 1e-12 * step ? 0 : v;
    return n;
}

/* ticks of a log scale, in data units: powers of 10, and 2 and 5 times them
 * over few decades; linear ticks inside a range short of a decade */
static int log_ticks(const scale *s, double *t, int max) {
    int n = 0, few = s->hi - s->lo < 3;
    for (int k = (int)floor(s->lo); k <= (int)ceil(s->hi); k++)
        for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) { /* 1, 2, 5 */
            double v = m * pow(10, k), u = log10(v);
            if ((m == 1 || few) && u >= s->lo - 1e-9 && u <= s->hi + 1e-9 && n < max) t[n++] = v;
        }
    return n >= 2 ? n : linear_ticks(pow(10, s->lo), pow(10, s->hi), t, max);
}

/* ---------------------------------------------------------------- parts */

static void axes(text *t, const scale *x, const scale *y, const ax_plot_axes *a) {
    double tk[64];
    int x0 = LEFT, x1 = WIDTH - RIGHT, y0 = HEIGHT - BOTTOM, y1 = TOP;
    char lab[32];
    say(t, "<g class=\"axes\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#333\">\n");
    int n = x->log ? log_ticks(x, tk, 64) : linear_ticks(x->lo, x->hi, tk, 64);
    for (int i = 0; i < n; i++) {
        double px = to_px(x, tk[i]);
        number(lab, sizeof lab, tk[i]);
        say(t, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e5e5e5\"/>\n", px, y1, px,
            y0);
        say(t, "<text class=\"xtick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px, y0 + 18, lab);
    }
    n = linear_ticks(y->lo, y->hi, tk, 64);
    for (int i = 0; i < n; i++) {
        double py = to_px(y, tk[i]);
        number(lab, sizeof lab, tk[i]);
        say(t, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", x0, py, x1,
            py);
        say(t, "<text class=\"ytick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", x0 - 6, py + 4, lab);
    }
    say(t, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", x0, y1, x1 - x0,
        y0 - y1);
    say(t, "<text class=\"xlabel\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"14\">%s%s</text>\n",
        (x0 + x1) / 2.0, HEIGHT - 12, a->xlabel, x->log ? " (log scale)" : "");
    say(t,
        "<text class=\"ylabel\" transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\" "
        "font-size=\"14\">%s</text>\n</g>\n",
        (y0 + y1) / 2.0, a->ylabel);
}

static void curve(text *t, const ax_curve *c, const char *cls, const char *label, const char *color, const scale *x,
                  const scale *y) {
    say(t, "<polyline class=\"%s\" data-run=\"", cls);
    say_escaped(t, label);
    say(t, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", color,
        strcmp(cls, "val") ? "" : " stroke-dasharray=\"6 3\"");
    for (int i = 0; i < c->n; i++) say(t, "%s%.2f,%.2f", i ? " " : "", to_px(x, c->x[i]), to_px(y, c->y[i]));
    say(t, "\"/>\n");
    for (int i = 0; *cls == 'v' && i < c->n; i++)
        say(t, "<circle class=\"val-point\" cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n", to_px(x, c->x[i]),
            to_px(y, c->y[i]), color);
}

/* top right, inside the plot: a line of each run's colour and its label, then
 * what solid and dashed mean when there are validation curves or smoothing */
static void legend(text *t, const ax_plot_run *runs, int n, int smooth) {
    char train[64] = "training";
    if (smooth > 1) snprintf(train, sizeof train, "training, mean of %d", smooth);
    int any_val = 0, w = (int)strlen(train); /* the widest label, in characters */
    for (int r = 0; r < n; r++) {
        int len = (int)strlen(runs[r].label);
        any_val |= runs[r].val.n > 0;
        if (len > w) w = len;
    }
    int keys = any_val ? 2 : smooth > 1, rows = n + keys, bw = 40 + 7 * w, x = WIDTH - RIGHT - bw - 8, y = TOP + 8;
    say(t, "<g class=\"legend\" font-family=\"sans-serif\" font-size=\"12\">\n");
    say(t,
        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n",
        x, y, bw, 18 * rows + 8);
    for (int i = 0; i < rows; i++) {
        int ly = y + 16 + 18 * i, r = i < n;
        const char *color = r ? palette[i % NCOLORS] : "#555", *dash = i == n + 1 ? " stroke-dasharray=\"6 3\"" : "";
        say(t, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", x + 8, ly - 4,
            x + 32, ly - 4, color, dash);
        say(t, "<text class=\"%s\" x=\"%d\" y=\"%d\">", r ? "run" : "key", x + 38, ly);
        say_escaped(t, r ? runs[i].label : i == n ? train : "validation");
        say(t, "</text>\n");
    }
    say(t, "</g>\n");
}

char *ax_plot_svg(const ax_plot_run *runs, int n, const ax_plot_axes *a) {
    text t = {0};
    scale x = fit(runs, n, 0, a->log_x, LEFT, WIDTH - RIGHT), y = fit(runs, n, 1, 0, HEIGHT - BOTTOM, TOP);
    say(&t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    say(&t, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", WIDTH,
        HEIGHT, WIDTH, HEIGHT);
    say(&t, "<title>%s against %s</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", a->ylabel,
        a->xlabel);
    axes(&t, &x, &y, a);
    say(&t, "<g class=\"curves\">\n");
    for (int r = 0; r < n; r++) {
        curve(&t, &runs[r].train, "train", runs[r].label, palette[r % NCOLORS], &x, &y);
        if (runs[r].val.n) curve(&t, &runs[r].val, "val", runs[r].label, palette[r % NCOLORS], &x, &y);
    }
    say(&t, "</g>\n");
    legend(&t, runs, n, a->smooth);
    say(&t, "</svg>\n");
    return t.p;
}
