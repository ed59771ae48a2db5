/* The tuner's cache file: one JSON object, {"format": "axonn-gemm-tune-1",
 * "entries": [...]}, each entry a problem, the machine, backend and libraries
 * it was timed with, the layout chosen and every layout's milliseconds. A
 * file shared by machines (an NFS home) keeps each machine's entries. */
#include "backend/gemm_tune_cache.h"
#include "util/err.h"
#include "util/fileio.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "axonn-gemm-tune-1"

/* the CPU's model name and the flags that select BLAS kernels */
static const char *machine(void) {
    static char m[1024];
    if (m[0]) return m;
    char line[8192], name[256] = "unknown CPU", flags[768] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    int have_name = 0, have_flags = 0;
    while (f && (!have_name || !have_flags) && fgets(line, sizeof line, f)) {
        char *v = strchr(line, ':');
        if (!v) continue;
        v += 1 + (v[1] == ' ');
        v[strcspn(v, "\n")] = 0;
        if (!have_name && !strncmp(line, "model name", 10)) {
            snprintf(name, sizeof name, "%s", v);
            have_name = 1;
        }
        if (!have_flags && !strncmp(line, "flags", 5)) {
            have_flags = 1;
            for (char *t = strtok(v, " "); t; t = strtok(NULL, " "))
                if ((!strncmp(t, "avx", 3) || !strncmp(t, "amx", 3) || !strcmp(t, "fma") || !strcmp(t, "f16c")) &&
                    strlen(flags) + strlen(t) + 2 < sizeof flags)
                    strcat(strcat(flags, flags[0] ? " " : ""), t);
        }
    }
    if (f) fclose(f);
    snprintf(m, sizeof m, "%s; %s", name, flags);
    return m;
}

static const char *library(const ax_backend *be) {
    static char s[512];
    int emulated;
    const char *f32 = be->gemm_kernel(AX_F32, &emulated), *bf16 = be->gemm_kernel(AX_BF16, &emulated);
    snprintf(s, sizeof s, "%s; %s", f32 ? f32 : "none", bf16 ? bf16 : "none");
    return s;
}

static int dtype_of(const char *s, ax_dtype *t) {
    if (!strcmp(s, "fp32")) *t = AX_F32;
    else if (!strcmp(s, "bf16")) *t = AX_BF16;
    else return -1;
    return 0;
}

static int layout_of(const char *s) {
    for (int L = 0; L < AX_GT_N; L++)
        if (!strcmp(s, ax_gemm_layout_names[L])) return L;
    return -1;
}

/* the file's entries array (a new one when there is no file), or NULL with the reason */
static json_t *read_entries(const char *path, json_t **root) {
    *root = NULL;
    if (!ax_file_exists(path)) return json_array();
    json_error_t je;
    json_t *r = json_load_file(path, 0, &je);
    if (!r) {
        AX_ERR("%s: line %d: %s", path, je.line, je.text);
        return NULL;
    }
    json_t *e = json_object_get(r, "entries");
    const char *fmt = json_string_value(json_object_get(r, "format"));
    if (!fmt || strcmp(fmt, FORMAT) || !json_is_array(e)) {
        json_decref(r);
        AX_ERR("%s: not a \"format\": \"%s\" object with an \"entries\" array", path, FORMAT);
        return NULL;
    }
    *root = r;
    return json_incref(e);
}

/* one entry into *o; 1 when it is this machine's, 0 another's, -1 malformed */
static int parse_entry(json_t *j, const ax_backend *be, ax_gt_entry *o) {
    const char *mach, *bk, *lib, *trans, *a, *b, *c, *lay;
    json_t *ms;
    memset(o, 0, sizeof *o);
    if (json_unpack(j, "{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:o}", "machine", &mach, "backend",
                    &bk, "library", &lib, "threads", &o->k.threads, "m", &o->k.m, "n", &o->k.n, "k", &o->k.k, "trans",
                    &trans, "a", &a, "b", &b, "c", &c, "layout", &lay, "ms", &ms))
        return -1;
    o->layout = layout_of(lay);
    if (o->layout < 0 || strlen(trans) != 2 || !strchr("NT", trans[0]) || !strchr("NT", trans[1]) ||
        dtype_of(a, &o->k.ta) || dtype_of(b, &o->k.tb) || dtype_of(c, &o->k.tc) || !json_is_object(ms) || o->k.m < 1 ||
        o->k.n < 1 || o->k.k < 1 || o->k.threads < 1)
        return -1;
    o->k.tA = trans[0] == 'T';
    o->k.tB = trans[1] == 'T';
    for (int L = 0; L < AX_GT_N; L++) {
        json_t *v = json_object_get(ms, ax_gemm_layout_names[L]);
        o->sec[L] = json_is_number(v) ? json_number_value(v) * 1e-3 : -1;
    }
    return !strcmp(mach, machine()) && !strcmp(bk, be->name) && !strcmp(lib, library(be));
}

ax_gt_entry *ax_gt_push(ax_gt_entry **e, int *n, int *cap) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        ax_gt_entry *g = ax_malloc(*cap * sizeof *g);
        if (*n) memcpy(g, *e, *n * sizeof *g);
        free(*e);
        *e = g;
    }
    return &(*e)[(*n)++];
}

int ax_gt_cache_load(const char *path, const ax_backend *be, ax_gt_entry **e, int *n, int *cap) {
    json_t *root, *arr = read_entries(path, &root);
    if (!arr) return -1;
    size_t i;
    json_t *j;
    int rc = 0;
    json_array_foreach(arr, i, j) {
        ax_gt_entry o;
        int mine = parse_entry(j, be, &o);
        if (mine < 0) {
            rc = AX_ERR("%s: entry %zu is malformed", path, i);
            break;
        }
        if (!mine) continue;
        o.from_file = 1;
        *ax_gt_push(e, n, cap) = o;
    }
    json_decref(arr);
    json_decref(root);
    if (rc) *n = 0;
    return rc;
}

static json_t *entry_json(const ax_gt_entry *e, const ax_backend *be) {
    json_t *ms = json_object();
    for (int L = 0; L < AX_GT_N; L++)
        if (e->sec[L] >= 0) json_object_set_new(ms, ax_gemm_layout_names[L], json_real(e->sec[L] * 1e3));
    char trans[3] = {e->k.tA ? 'T' : 'N', e->k.tB ? 'T' : 'N', 0};
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:o}", "machine", machine(),
                     "backend", be->name, "library", library(be), "threads", e->k.threads, "m", e->k.m, "n", e->k.n,
                     "k", e->k.k, "trans", trans, "a", ax_dtype_name(e->k.ta), "b", ax_dtype_name(e->k.tb), "c",
                     ax_dtype_name(e->k.tc), "layout", ax_gemm_layout_names[e->layout], "ms", ms);
}

int ax_gt_cache_save(const char *path, const ax_backend *be, const ax_gt_entry *e, int n) {
    json_t *root, *old = read_entries(path, &root), *out = json_array();
    json_decref(root);
    size_t i;
    json_t *j;
    if (old) json_array_foreach(old, i, j) { /* keep what is not ours to replace; drop what is malformed */
            ax_gt_entry o;
            int mine = parse_entry(j, be, &o), ours = 0;
            for (int q = 0; mine > 0 && q < n && !ours; q++) ours = !memcmp(&o.k, &e[q].k, sizeof o.k);
            if (mine >= 0 && !ours) json_array_append(out, j);
        }
    json_decref(old);
    for (int q = 0; q < n; q++) json_array_append_new(out, entry_json(&e[q], be));
    json_t *doc = json_pack("{s:s, s:o}", "format", FORMAT, "entries", out);
    char *text = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    json_decref(doc);
    char dir[4096];
    ax_dirname(path, dir, sizeof dir);
    ax_outfile f;
    int rc = ax_mkdir_p(dir);
    if (!rc) rc = ax_out_open(&f, path);
    if (!rc && (ax_out_write(&f, text, strlen(text)) || ax_out_write(&f, "\n", 1))) {
        ax_out_abort(&f);
        rc = -1;
    } else if (!rc) rc = ax_out_commit(&f);
    free(text);
    return rc;
}
