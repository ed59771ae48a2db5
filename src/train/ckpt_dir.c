#define _GNU_SOURCE 1
/* The checkpoint directories in an output directory (docs/reliability.md,
 * "What the trainer deletes"). The trainer touches only names it makes:
 *   ckpt-NNNNNN       a checkpoint (complete once it holds its manifest)
 *   ckpt-NNNNNN.tmp   one being written
 *   ckpt-NNNNNN.old   one being replaced by a new save of its step
 *   <any of them>.del one being removed
 * (NNNNNN: the step, as "%06d" prints it). Everything else in the directory
 * is the user's, including ckpt-NNNNNN.corrupt, where a checkpoint that
 * failed verification is set aside for inspection. A removal renames to
 * .del first, so a crash in the middle never leaves a half-removed
 * directory under a checkpoint's name. */
#include "train/checkpoint.h"
#include "train/ckpt_impl.h"
#include "util/err.h"
#include "util/fileio.h"
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CK_USER = -1, CK_DONE, CK_TMP, CK_OLD, CK_DEL } ck_kind;

/* the kind of a name in the output directory, and its step */
static ck_kind ck_parse(const char *name, int *step) {
    char digits[16], tail[16];
    size_t k = strspn(name + (strncmp(name, "ckpt-", 5) ? 0 : 5), "0123456789");
    if (strncmp(name, "ckpt-", 5) || k < 6 || k > 9) return CK_USER;
    memcpy(digits, name + 5, k);
    digits[k] = 0;
    *step = atoi(digits);
    snprintf(tail, sizeof tail, "%06d", *step);
    if (strcmp(tail, digits)) return CK_USER; /* not as this program prints a step */
    const char *rest = name + 5 + k;
    size_t n = strlen(rest);
    int del = n >= 4 && !strcmp(rest + n - 4, ".del");
    snprintf(tail, sizeof tail, "%.*s", (int)(del ? n - 4 : n), rest);
    ck_kind kind = !tail[0] ? CK_DONE : !strcmp(tail, ".tmp") ? CK_TMP : !strcmp(tail, ".old") ? CK_OLD : CK_USER;
    return kind == CK_USER ? CK_USER : del ? CK_DEL : kind;
}

static int complete(const char *path) {
    char p[4400];
    snprintf(p, sizeof p, "%s/" AX_CKPT_MANIFEST, path);
    return ax_file_exists(p);
}

/* the step a checkpoint's state.json names, or -1 */
static int state_step(const char *path) {
    char p[4400];
    snprintf(p, sizeof p, "%s/state.json", path);
    json_t *j = json_load_file(p, 0, NULL);
    int s = json_is_integer(json_object_get(j, "step")) ? (int)json_integer_value(json_object_get(j, "step")) : -1;
    json_decref(j);
    return s;
}

void ax_ckpt_remove(const char *dir) {
    char del[4200], parent[4096];
    size_t n = strlen(dir);
    if (n >= 4 && !strcmp(dir + n - 4, ".del")) snprintf(del, sizeof del, "%s", dir);
    else {
        snprintf(del, sizeof del, "%s.del", dir);
        ax_remove_tree(del); /* an earlier removal's leftover */
        if (rename(dir, del) != 0) return;
        ax_dirname(dir, parent, sizeof parent);
        ax_fsync_dir(parent);
    }
    ax_remove_tree(del);
}

int ax_ckpt_install(const char *tmp, const char *dir) {
    char old[4200], parent[4096];
    snprintf(old, sizeof old, "%s.old", dir);
    ax_dirname(dir, parent, sizeof parent);
    int had = ax_file_exists(dir);
    if (had) {
        ax_ckpt_remove(old); /* an earlier replacement's leftover: dir is newer */
        if (rename(dir, old) != 0)
            return AX_ERR("%s: cannot move the checkpoint of the same step aside to %s: %s", dir, old, strerror(errno));
    }
    if (rename(tmp, dir) != 0) {
        int e = errno;
        if (had) rename(old, dir); /* else ax_ckpt_recover puts it back at the next start */
        return AX_ERR("%s: cannot rename checkpoint into place: %s", dir, strerror(e));
    }
    int rc = ax_fsync_dir(parent);
    if (rc == 0 && had) ax_ckpt_remove(old); /* a failure leaves it to the next ax_ckpt_recover */
    return rc;
}

typedef struct {
    char name[256];
    int step;
    ck_kind kind;
} ck_entry;

/* the program's names in dir (NULL when it cannot be listed) */
static ck_entry *ck_list(const char *dir, int *n) {
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    ck_entry *e = NULL;
    int cap = 0;
    for (struct dirent *x; (x = readdir(d));) {
        int step;
        ck_kind k = ck_parse(x->d_name, &step);
        if (k == CK_USER || strlen(x->d_name) >= sizeof e->name) continue;
        if (*n == cap) e = ax_realloc(e, (size_t)(cap = 2 * cap + 16) * sizeof *e);
        e[*n].step = step, e[*n].kind = k;
        snprintf(e[(*n)++].name, sizeof e->name, "%s", x->d_name);
    }
    closedir(d);
    return e ? e : ax_calloc(1, sizeof *e);
}

static void say(char *said, size_t n, const char *fmt, const char *a, const char *b) {
    size_t at = said ? strlen(said) : 0;
    if (said && at + 1 < n) snprintf(said + at, n - at, fmt, at ? "; " : "", a, b);
}

int ax_ckpt_recover(const char *dir, char *said, size_t n) {
    int ne, rc = 0;
    ck_entry *e = ck_list(dir, &ne);
    char p[4400], q[4400];
    if (said && n) said[0] = 0;
    if (!e) return 0;
    for (int pass = 0; pass < 3; pass++) /* writes first, then replacements, then removals */
        for (int i = 0; i < ne; i++) {
            ck_kind want[3] = {CK_TMP, CK_OLD, CK_DEL};
            if (e[i].kind != want[pass]) continue;
            snprintf(p, sizeof p, "%s/%s", dir, e[i].name);
            snprintf(q, sizeof q, "%s/ckpt-%06d", dir, e[i].step);
            if (e[i].kind == CK_TMP && complete(p) && state_step(p) == e[i].step) {
                /* written whole, not yet renamed: the save finished */
                if (ax_ckpt_install(p, q) == 0)
                    say(said, n, "%sadopted %s (its write had finished) as %s", e[i].name, q);
                else rc = -1;
            } else if (e[i].kind == CK_OLD && !ax_file_exists(q)) {
                /* moved aside, its replacement never put in place */
                if (rename(p, q) == 0) say(said, n, "%sput %s back as %s", e[i].name, q);
                else rc = AX_ERR("%s: cannot rename back to %s: %s", p, q, strerror(errno));
            } else ax_ckpt_remove(p); /* an interrupted write, a replaced checkpoint, a removal */
        }
    free(e);
    return rc ? rc : ax_fsync_dir(dir);
}

static int step_desc(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

/* the steps of dir's complete checkpoints, newest first */
static int *complete_steps(const char *dir, int *n) {
    int ne;
    ck_entry *e = ck_list(dir, &ne);
    int *s = ax_malloc((size_t)(ne ? ne : 1) * sizeof *s);
    char p[4400];
    *n = 0;
    for (int i = 0; i < ne; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, e[i].name);
        if (e[i].kind == CK_DONE && complete(p)) s[(*n)++] = e[i].step;
    }
    free(e);
    qsort(s, (size_t)*n, sizeof *s, step_desc);
    return s;
}

int ax_ckpt_latest(const char *dir, char *out, size_t n) {
    int ns, *s = complete_steps(dir, &ns);
    if (ns) snprintf(out, n, "%s/ckpt-%06d", dir, s[0]);
    free(s);
    return ns > 0;
}

int ax_ckpt_resolve(const char *path, char *out, size_t n) {
    char p[4200];
    snprintf(p, sizeof p, "%s/state.json", path);
    if (ax_file_exists(p)) {
        snprintf(out, n, "%s", path);
        return 0;
    }
    if (!ax_file_exists(path)) return AX_ERR("--resume %s: no such checkpoint or output directory", path);
    if (ax_ckpt_latest(path, out, n) == 0)
        return AX_ERR("--resume %s: expected a checkpoint (state.json) or a directory holding a complete ckpt-*", path);
    return 1;
}

int ax_ckpt_set_aside(const char *ckdir, char *out, size_t n) {
    char parent[4096];
    for (int k = 1; k < 1000; k++) {
        if (k == 1) snprintf(out, n, "%s.corrupt", ckdir);
        else snprintf(out, n, "%s.corrupt-%d", ckdir, k);
        if (ax_file_exists(out)) continue;
        if (rename(ckdir, out) != 0) return AX_ERR("%s: cannot set it aside as %s: %s", ckdir, out, strerror(errno));
        ax_dirname(ckdir, parent, sizeof parent);
        return ax_fsync_dir(parent);
    }
    return AX_ERR("%s: cannot set it aside: %s.corrupt-1..999 all exist", ckdir, ckdir);
}

int ax_ckpt_prune(const char *dir, int newest, int keep) {
    AX_TRY(ax_ckpt_recover(dir, NULL, 0));
    int ns, *s = complete_steps(dir, &ns), kept = 0;
    char p[4400];
    for (int i = 0; i < ns; i++) {
        if (s[i] > newest) continue; /* not ours to judge: another run's future */
        if (kept++ < keep) continue;
        snprintf(p, sizeof p, "%s/ckpt-%06d", dir, s[i]);
        ax_ckpt_remove(p);
    }
    free(s);
    return ax_fsync_dir(dir);
}
