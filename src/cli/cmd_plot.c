/* axonn plot: the loss curves of training runs (their metrics.jsonl) in one SVG. */
#define _GNU_SOURCE 1
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/plot.h"
#include "util/err.h"
#include "util/fileio.h"
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *usage =
    "usage: axonn plot METRICS.jsonl|RUN_DIR... --out FILE.svg [options]\n\n"
    "Training loss (solid) and validation loss (dashed, where logged) of each run against step or\n"
    "tokens, one colour per run, named by its folder, in a standalone SVG. A directory stands for\n"
    "its metrics.jsonl.";

enum { MAX_RUNS = 256 };

/* the metrics file an argument names: itself, or DIR/metrics.jsonl */
static void metrics_path(const char *arg, char *buf, size_t n) {
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(buf, n, "%s/metrics.jsonl", arg);
    else snprintf(buf, n, "%s", arg);
}

/* the folder of a run's metrics (the current one's name for ".") */
static void run_label(const char *path, char *buf, size_t n) {
    char dir[4096], cwd[4096];
    ax_dirname(path, dir, sizeof dir);
    const char *base = getcwd(cwd, sizeof cwd) ? strrchr(cwd, '/') : NULL;
    snprintf(buf, n, "%s", strcmp(dir, ".") || !base || !base[1] ? dir : base + 1);
}

/* One line's point: training loss or validation loss at its step, x the step
 * or the tokens trained on by then; other lines (skipped steps) add nothing.
 * per_step: the tokens of a step, from the last training line. */
static int add_line(json_t *j, const char *where, int by_tokens, double *per_step, ax_plot_run *run) {
    json_t *step = json_object_get(j, "step"), *loss = json_object_get(j, "loss"),
           *val = json_object_get(j, "val_loss");
    if (!loss && !val) return 0;
    if (!json_is_integer(step) || json_integer_value(step) < 1 || (loss && !json_is_number(loss)) ||
        (val && !json_is_number(val)))
        return AX_ERR("%s: expected a positive integer \"step\" and a number \"loss\" or \"val_loss\"", where);
    if (loss && by_tokens) {
        json_t *tok = json_object_get(j, "tokens");
        if (!json_is_number(tok) || json_number_value(tok) <= 0)
            return AX_ERR("%s: no \"tokens\" count of the step (--x tokens needs it)", where);
        *per_step = json_number_value(tok);
    }
    if (!loss && by_tokens && *per_step == 0)
        return AX_ERR("%s: a validation loss before any training line (--x tokens: no tokens count yet)", where);
    double x = (double)json_integer_value(step) * (by_tokens ? *per_step : 1);
    if (loss) ax_curve_add(&run->train, x, json_number_value(loss));
    else ax_curve_add(&run->val, x, json_number_value(val));
    return 0;
}

/* the curves of one metrics file */
static int read_run(const char *path, int by_tokens, ax_plot_run *run) {
    FILE *f = fopen(path, "r");
    if (!f) return AX_ERR("%s: cannot open the metrics: %s", path, strerror(errno));
    char *line = NULL, where[4200];
    size_t cap = 0;
    double per_step = 0;
    int rc = 0;
    for (int no = 1; rc == 0 && getline(&line, &cap, f) > 0; no++) {
        if (strspn(line, " \t\r\n") == strlen(line)) continue;
        snprintf(where, sizeof where, "%s:%d", path, no);
        json_error_t e;
        json_t *j = json_loads(line, 0, &e);
        if (!json_is_object(j)) rc = AX_ERR("%s: not a JSON object (expected the lines of a metrics.jsonl)", where);
        else rc = add_line(j, where, by_tokens, &per_step, run);
        json_decref(j);
    }
    free(line);
    fclose(f);
    if (rc == 0 && run->train.n == 0)
        rc = AX_ERR(
            "%s: no training loss lines (expected the metrics.jsonl of axonn train: {\"step\": N, \"loss\": X})", path);
    return rc;
}

/* each point the mean of the last n (fewer at the start) */
static void smooth(ax_curve *c, int n) {
    double sum = 0, *raw = ax_malloc(c->n * sizeof *raw);
    memcpy(raw, c->y, c->n * sizeof *raw);
    for (int i = 0; i < c->n; i++) {
        sum += raw[i] - (i >= n ? raw[i - n] : 0);
        c->y[i] = sum / (i + 1 < n ? i + 1 : n);
    }
    free(raw);
}

/* The legend's names: each run's folder, or its file where two share a
 * folder, less the leading folders common to all ("runs/a" and "runs/b": "a"
 * and "b"; one run: its folder's name). */
static void label_runs(ax_plot_run *runs, const char **paths, int n) {
    int *same = ax_calloc(n, sizeof *same);
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++)
            if (!strcmp(runs[i].label, runs[k].label)) same[i] = same[k] = 1;
    for (int i = 0; i < n; i++)
        if (same[i]) snprintf(runs[i].label, sizeof runs[i].label, "%s", paths[i]);
    free(same);
    size_t cut = 0; /* just after the last '/' of the prefix all share */
    for (size_t k = 0; runs[0].label[k]; k++) {
        int all = 1;
        for (int i = 1; i < n && all; i++) all = runs[i].label[k] == runs[0].label[k];
        if (!all) break;
        if (runs[0].label[k] == '/') cut = k + 1;
    }
    for (int i = 0; i < n; i++) memmove(runs[i].label, runs[i].label + cut, strlen(runs[i].label + cut) + 1);
}

static int write_svg(const char *out, const char *svg) {
    ax_outfile f;
    AX_TRY(ax_out_open(&f, out));
    if (ax_out_write(&f, svg, strlen(svg))) {
        ax_out_abort(&f);
        return -1;
    }
    return ax_out_commit(&f);
}

/* the runs read, smoothed and drawn into out */
static int plot(const char **args, int n, const char *out, int by_tokens, int log_x, int width) {
    ax_plot_run *runs = ax_calloc(n, sizeof *runs);
    const char **paths = ax_calloc(n, sizeof *paths);
    char(*buf)[4200] = ax_malloc(n * sizeof *buf);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        metrics_path(args[i], buf[i], sizeof buf[i]);
        paths[i] = buf[i];
        rc = read_run(paths[i], by_tokens, &runs[i]);
        run_label(paths[i], runs[i].label, sizeof runs[i].label);
        if (width > 1) smooth(&runs[i].train, width);
    }
    if (rc == 0) {
        label_runs(runs, paths, n);
        ax_plot_axes axes = {
            .xlabel = by_tokens ? "tokens" : "step", .ylabel = "loss", .log_x = log_x, .smooth = width};
        char *svg = ax_plot_svg(runs, n, &axes);
        rc = write_svg(out, svg);
        free(svg);
    }
    if (rc == 0) printf("wrote %s: %d run%s\n", out, n, n > 1 ? "s" : "");
    for (int i = 0; i < n; i++) ax_curve_free(&runs[i].train), ax_curve_free(&runs[i].val);
    free(runs);
    free(paths);
    free(buf);
    return rc;
}

int ax_cmd_plot(int argc, char **argv) {
    const char *out = NULL, *x = "step";
    int log_x = 0, width = 1, npos;
    ax_opt opts[] = {
        {"out", AX_OPT_STR, &out, "FILE.svg", "the SVG to write (required)"},
        {"x", AX_OPT_STR, &x, "step|tokens", "the x axis: optimizer steps, or tokens trained on (default {})"},
        {"log-x", AX_OPT_FLAG, &log_x, NULL, "x on a logarithmic scale"},
        {"smooth", AX_OPT_INT, &width, "N", "training loss averaged over the last N logged steps (default {}: none)",
         AX_RANGE('[', 1, 1e6, ']')},
        {NULL},
    };
    const char *pos[MAX_RUNS];
    int rc = ax_args_parse(opts, argc, argv, 2, usage, pos, &npos, MAX_RUNS);
    if (rc) return rc;
    if (npos == 0) return AX_ERR("plot: expected one or more METRICS.jsonl files or run directories (see --help)");
    if (!out) return AX_ERR("--out: expected the SVG file to write");
    if (strcmp(x, "step") && strcmp(x, "tokens")) return AX_ERR("--x '%s': expected step or tokens", x);
    return plot(pos, npos, out, !strcmp(x, "tokens"), log_x, width);
}
