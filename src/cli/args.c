#include "cli/args.h"
#include "grid/grid.h"
#include "util/err.h"
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ax_opt *find(ax_opt *opts, const char *name, size_t len) {
    for (ax_opt *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    return NULL;
}

static int in_range(const ax_opt *o, double x) {
    if (!o->lb) return 1;
    return (o->lb == '[' ? x >= o->lo : x > o->lo) && (o->rb == ']' ? x <= o->hi : x < o->hi);
}

static int out_of_range(const ax_opt *o, const char *v, const char *src) {
    return AX_ERR("%s--%s %s: expected %s in %c%.15g, %.15g%c", src, o->name, v,
                  o->type == AX_OPT_INT ? "an integer" : "a number", o->lb, o->lo, o->hi, o->rb);
}

static int set_value(ax_opt *o, const char *v, const char *src) {
    char *end;
    errno = 0;
    switch (o->type) {
    case AX_OPT_INT: {
        long x = strtol(v, &end, 10);
        if (*v == 0 || *end || errno || x < -2147483647L || x > 2147483647L)
            return AX_ERR("%s--%s '%s': expected an integer", src, o->name, v);
        if (!in_range(o, (double)x)) return out_of_range(o, v, src);
        *(int *)o->dst = (int)x;
        break;
    }
    case AX_OPT_U64: {
        unsigned long long x = strtoull(v, &end, 10);
        if (*v == 0 || *end || errno || *v == '-')
            return AX_ERR("%s--%s '%s': expected a non-negative integer", src, o->name, v);
        *(uint64_t *)o->dst = x;
        break;
    }
    case AX_OPT_BYTES: { /* as transformers' max_shard_size: 5GB = 5e9, 5GiB = 5 * 2^30 */
        static const struct {
            const char *sfx;
            double mul;
        } units[] = {{"", 1},      {"B", 1},        {"KB", 1e3},        {"MB", 1e6},          {"GB", 1e9},
                     {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
        double x = strtod(v, &end);
        size_t u = 0;
        while (u < sizeof units / sizeof *units && strcmp(end, units[u].sfx)) u++;
        if (*v == 0 || end == v || errno || u == sizeof units / sizeof *units || !(x >= 0) || x * units[u].mul > 9e18)
            return AX_ERR("%s--%s '%s': expected a size in bytes, optionally with KB, MB, GB, TB, KiB, MiB or GiB", src,
                          o->name, v);
        *(int64_t *)o->dst = (int64_t)(x * units[u].mul);
        break;
    }
    case AX_OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (*v == 0 || *end || errno || !isfinite(x))
            return AX_ERR("%s--%s '%s': expected a finite number", src, o->name, v);
        if (!in_range(o, x)) return out_of_range(o, v, src);
        *(double *)o->dst = x;
        break;
    }
    case AX_OPT_STR: *(const char **)o->dst = v; break;
    case AX_OPT_FLAG:
        if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0) *(int *)o->dst = 1;
        else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0) *(int *)o->dst = 0;
        else return AX_ERR("%s--%s '%s': expected true or false", src, o->name, v);
        break;
    case AX_OPT_GRID:
        if (ax_grid_parse(v, (int *)o->dst)) return -1;
        break;
    }
    o->set = 1;
    return 0;
}

/* String values of --config files, kept alive for the whole run (options point
 * into them) and reachable, so a leak checker does not take them for leaks. */
static json_t *kept_strings;

static const char *keep_string(const char *s) {
    if (!kept_strings) kept_strings = json_array();
    json_t *k = json_string(s);
    if (!k || json_array_append_new(kept_strings, k)) ax_fatal(__FILE__, __LINE__, "out of memory");
    return json_string_value(k);
}

/* keys of the JSON file */
static int load_config(ax_opt *opts, const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) return AX_ERR("--config %s: %s (line %d)", path, e.text, e.line);
    if (!json_is_object(j)) {
        json_decref(j);
        return AX_ERR("--config %s: expected a JSON object", path);
    }
    const char *key;
    json_t *v;
    char src[600];
    snprintf(src, sizeof src, "%s: ", path);
    json_object_foreach(j, key, v) {
        char name[128];
        snprintf(name, sizeof name, "%s", key);
        for (char *c = name; *c; c++)
            if (*c == '_') *c = '-';
        ax_opt *o = find(opts, name, strlen(name));
        /* the message first: key belongs to j (found by fuzz/fuzz_args.c, fuzz/regressions/args/) */
        if (!o || strcmp(name, "config") == 0) {
            AX_ERR("--config %s: unknown option '%s'", path, key);
            json_decref(j);
            return -1;
        }
        char buf[64];
        const char *s = buf;
        if (json_is_string(v)) s = json_string_value(v); /* alive while j is */
        else if (json_is_integer(v)) snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v)) snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        else if (json_is_boolean(v)) snprintf(buf, sizeof buf, "%s", json_is_true(v) ? "true" : "false");
        else {
            AX_ERR("--config %s: '%s' must be a string, number or boolean", path, key);
            json_decref(j);
            return -1;
        }
        if (o->type == AX_OPT_STR) s = keep_string(s);
        if (set_value(o, s, src)) {
            json_decref(j);
            return -1;
        }
    }
    json_decref(j);
    return 0;
}

int ax_args_given(const ax_opt *opts, const char *name) {
    for (const ax_opt *o = opts; o->name; o++)
        if (strcmp(o->name, name) == 0) return o->set;
    return 0;
}

/* the value an option holds now (before parsing: its default), as a flag would give it */
static void current_value(const ax_opt *o, char *buf, size_t n) {
    switch (o->type) {
    case AX_OPT_INT: snprintf(buf, n, "%d", *(const int *)o->dst); break;
    case AX_OPT_U64: snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)o->dst); break;
    case AX_OPT_BYTES: snprintf(buf, n, "%lld", (long long)*(const int64_t *)o->dst); break;
    case AX_OPT_FLAG: snprintf(buf, n, "%s", *(const int *)o->dst ? "true" : "false"); break;
    case AX_OPT_STR:
        snprintf(buf, n, "%s", *(const char *const *)o->dst ? *(const char *const *)o->dst : "none");
        break;
    case AX_OPT_GRID: {
        const int *d = o->dst;
        snprintf(buf, n, "%d,%d,%d,%d", d[0], d[1], d[2], d[3]);
        break;
    }
    case AX_OPT_DOUBLE: { /* 1e-08 -> 1e-8 */
        snprintf(buf, n, "%g", *(const double *)o->dst);
        char *e = strstr(buf, "e-0");
        if (!e) e = strstr(buf, "e+0");
        if (e) memmove(e + 2, e + 3, strlen(e + 3) + 1);
        break;
    }
    }
}

void ax_args_usage(const ax_opt *opts, const char *usage) {
    printf("%s\n\noptions:\n", usage);
    for (const ax_opt *o = opts; o->name; o++) {
        char lhs[64], help[1024], value[64];
        snprintf(lhs, sizeof lhs, "--%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        const char *at = strstr(o->help, "{}");
        if (at) {
            current_value(o, value, sizeof value);
            snprintf(help, sizeof help, "%.*s%s%s", (int)(at - o->help), o->help, value, at + 2);
        }
        printf("  %-26s %s\n", lhs, at ? help : o->help);
    }
    printf("  %-26s %s\n  %-26s %s\n", "--config FILE", "JSON object of options (flags win)", "--help", "this text");
}

int ax_args_parse(ax_opt *opts, int argc, char **argv, int first, const char *usage, const char **pos, int *npos,
                  int maxpos) {
    if (npos) *npos = 0;
    for (int i = first; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            ax_args_usage(opts, usage);
            return 1;
        }
    for (int i = first; i < argc; i++)
        if (strcmp(argv[i], "--config") == 0 || strncmp(argv[i], "--config=", 9) == 0) {
            const char *f = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[i + 1] : NULL);
            if (!f) return AX_ERR("--config: expected a file name");
            AX_TRY(load_config(opts, f));
        }
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            if (!pos || *npos >= maxpos) return AX_ERR("unexpected argument '%s' (see --help)", a);
            pos[(*npos)++] = a;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 6 && strncmp(name, "config", 6) == 0) {
            if (!eq) i++;
            continue;
        }
        ax_opt *o = find(opts, name, len);
        if (!o) return AX_ERR("unknown option '--%.*s' (see --help)", (int)len, name);
        const char *v = eq ? eq + 1 : NULL;
        if (!v && o->type == AX_OPT_FLAG) v = "true";
        if (!v) {
            if (i + 1 >= argc) return AX_ERR("--%s: expected a value (%s)", o->name, o->metavar ? o->metavar : "value");
            v = argv[++i];
        }
        AX_TRY(set_value(o, v, ""));
    }
    return 0;
}
