/* A checkpoint given as one safetensors file or as Hugging Face shards under
 * model.safetensors.index.json: {"metadata": {...}, "weight_map": {"name":
 * "model-00001-of-00002.safetensors", ...}}; shard names are relative to
 * the index's directory. */
#include "io/safetensors.h"
#include "util/err.h"
#include "util/fileio.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ax_st_is_index(const char *path) {
    size_t n = strlen(path), k = strlen(".index.json");
    return n >= k && strcmp(path + n - k, ".index.json") == 0;
}

void ax_st_set_view(ax_st_set *s, ax_st_file *f) {
    memset(s, 0, sizeof *s);
    s->path = f->path;
    s->nfiles = 1;
    s->files = f;
}

void ax_st_set_close(ax_st_set *s) {
    if (s->owned) {
        for (int i = 0; i < s->nfiles; i++) ax_st_close(&s->files[i]);
        free(s->files);
        for (int i = 0; i < s->n; i++) free(s->names[i]);
        free(s->names);
        free(s->file_of);
        free(s->path);
    }
    memset(s, 0, sizeof *s);
}

/* index of the shard called rel (opened on first use), or -1 */
static int set_shard(ax_st_set *s, char **rels, const char *dir, const char *rel, const char *tensor) {
    for (int i = 0; i < s->nfiles; i++)
        if (strcmp(rels[i], rel) == 0) return i;
    if (rel[0] == '/' || strstr(rel, ".."))
        return AX_ERR("%s: tensor '%s': shard '%s' must be a file name beside the index", s->path, tensor, rel);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (ax_st_open(&s->files[s->nfiles], path) != 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", ax_err_msg());
        return AX_ERR("%s: tensor '%s': shard %s", s->path, tensor, why);
    }
    rels[s->nfiles] = ax_strdup(rel);
    return s->nfiles++;
}

static int set_read_map(ax_st_set *s, json_t *map, const char *dir) {
    size_t n = json_object_size(map);
    s->files = ax_calloc(n ? n : 1, sizeof(ax_st_file));
    s->names = ax_calloc(n ? n : 1, sizeof(char *));
    s->file_of = ax_calloc(n ? n : 1, sizeof(int));
    char **rels = ax_calloc(n ? n : 1, sizeof(char *));
    const char *k;
    json_t *v;
    int rc = 0;
    json_object_foreach(map, k, v) {
        if (!json_is_string(v)) {
            rc = AX_ERR("%s: tensor '%s': expected a shard file name in \"weight_map\"", s->path, k);
            break;
        }
        int fi = set_shard(s, rels, dir, json_string_value(v), k);
        if (fi < 0) {
            rc = -1;
            break;
        }
        if (!ax_st_find(&s->files[fi], k)) {
            rc = AX_ERR("%s: tensor '%s' is mapped to %s, which does not hold it", s->path, k, s->files[fi].path);
            break;
        }
        s->names[s->n] = ax_strdup(k);
        s->file_of[s->n++] = fi;
    }
    for (int i = 0; i < s->nfiles; i++) free(rels[i]);
    free(rels);
    return rc;
}

static int set_open_index(ax_st_set *s, const char *path) {
    json_error_t e;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!j && e.line < 1) return AX_ERR("%s: cannot read: %s", path, e.text);
    if (!j) return AX_ERR("%s: invalid JSON: %s (line %d)", path, e.text, e.line);
    json_t *map = json_object_get(j, "weight_map");
    int rc;
    if (!json_is_object(map)) rc = AX_ERR("%s: expected an object \"weight_map\" (tensor name -> shard file)", path);
    else {
        char dir[4200];
        ax_dirname(path, dir, sizeof dir);
        rc = set_read_map(s, map, dir);
    }
    json_decref(j);
    return rc;
}

int ax_st_set_open(ax_st_set *s, const char *path) {
    memset(s, 0, sizeof *s);
    s->owned = 1;
    s->path = ax_strdup(path);
    int rc;
    if (ax_st_is_index(path)) rc = set_open_index(s, path);
    else {
        s->files = ax_calloc(1, sizeof(ax_st_file));
        rc = ax_st_open(&s->files[0], path);
        if (rc == 0) s->nfiles = 1;
    }
    if (rc != 0) ax_st_set_close(s);
    return rc;
}

const ax_st_tensor *ax_st_set_find(const ax_st_set *s, const char *name, const ax_st_file **file) {
    if (s->n == 0 && s->nfiles == 1) { /* one file */
        *file = &s->files[0];
        return ax_st_find(&s->files[0], name);
    }
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0) {
            *file = &s->files[s->file_of[i]];
            return ax_st_find(*file, name);
        }
    *file = NULL;
    return NULL;
}
