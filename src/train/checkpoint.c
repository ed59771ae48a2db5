#define _GNU_SOURCE 1
#include "train/checkpoint.h"
#include "util/err.h"
#include "util/fileio.h"
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_tensors(const char *path, ax_gpt *m, const float *const *flats, const char *const *prefixes, int n) {
    ax_st_writer w;
    int rc = 0;
    if (m->g->rank == 0) {
        rc = ax_st_writer_init(&w, path);
        if (rc == 0) {
            ax_st_writer_meta(&w, "format", "pt");
            for (int i = 0; i < n; i++) ax_gpt_declare(m, &w, prefixes[i]);
        }
    }
    if (ax_agree(m->g->world, rc)) return -1;
    for (int i = 0; i < n; i++) {
        int r = ax_gpt_write_flat(m, &w, flats[i]);
        if (r && !rc) rc = r;
    }
    if (m->g->rank == 0) {
        if (rc == 0) rc = ax_st_writer_commit(&w);
        else ax_st_writer_abort(&w);
    }
    return ax_agree(m->g->world, rc);
}

int ax_model_save(const char *dir, ax_gpt *m) {
    char path[4096];
    int rc = 0;
    if (m->g->rank == 0) rc = ax_mkdir_p(dir);
    if (ax_agree(m->g->world, rc)) return -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    const float *f[] = {m->params};
    const char *p[] = {""};
    AX_TRY(write_tensors(path, m, f, p, 1));
    if (m->g->rank == 0) {
        snprintf(path, sizeof path, "%s/config.json", dir);
        rc = ax_gpt_config_write(&m->cfg, path);
    }
    return ax_agree(m->g->world, rc);
}

static int write_state(const char *path, const ax_ckpt_state *st) {
    json_t *j = json_pack("{s:i, s:I, s:I, s:i, s:i, s:i}", "step", st->step, "seed", (json_int_t)st->seed,
                          "data_pos", (json_int_t)st->data_pos, "batch", st->batch, "seq", st->seq, "steps", st->steps);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    ax_outfile o;
    int rc = ax_out_open(&o, path);
    if (rc == 0) rc = ax_out_write(&o, s, strlen(s));
    if (rc == 0) rc = ax_out_commit(&o); else ax_out_abort(&o);
    free(s);
    return rc;
}

int ax_ckpt_save(const char *dir, ax_gpt *m, const ax_adamw *o, const ax_ckpt_state *st) {
    char tmp[4096], path[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", dir);
    int rc = 0;
    if (m->g->rank == 0) { ax_remove_tree(tmp); rc = ax_mkdir_p(tmp); }
    if (ax_agree(m->g->world, rc)) return -1;
    AX_TRY(ax_model_save(tmp, m));
    snprintf(path, sizeof path, "%s/optim.safetensors", tmp);
    const float *f[] = {o->m, o->v};
    const char *p[] = {"opt.m.", "opt.v."};
    AX_TRY(write_tensors(path, m, f, p, 2));
    if (m->g->rank == 0) {
        snprintf(path, sizeof path, "%s/state.json", tmp);
        rc = write_state(path, st);
        if (rc == 0) {
            ax_remove_tree(dir);
            if (rename(tmp, dir) != 0) rc = AX_ERR("%s: cannot rename checkpoint into place", dir);
        }
    }
    return ax_agree(m->g->world, rc);
}

static int get_int(json_t *j, const char *key, const char *path, int64_t *v) {
    json_t *x = json_object_get(j, key);
    if (!json_is_integer(x)) return AX_ERR("%s: expected an integer '%s'", path, key);
    *v = json_integer_value(x);
    return 0;
}

int ax_ckpt_peek(const char *dir, ax_gpt_config *cfg, ax_ckpt_state *st) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    AX_TRY(ax_gpt_config_read(cfg, path));
    snprintf(path, sizeof path, "%s/state.json", dir);
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) return AX_ERR("%s: not a checkpoint state: %s", path, e.text);
    int64_t v[6];
    const char *keys[] = {"step", "seed", "data_pos", "batch", "seq", "steps"};
    for (int i = 0; i < 6; i++)
        if (get_int(j, keys[i], path, &v[i])) { json_decref(j); return -1; }
    json_decref(j);
    st->step = (int)v[0]; st->seed = (uint64_t)v[1]; st->data_pos = v[2];
    st->batch = (int)v[3]; st->seq = (int)v[4]; st->steps = (int)v[5];
    return 0;
}

int ax_ckpt_load(const char *dir, ax_gpt *m, ax_adamw *o) {
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    AX_TRY(ax_gpt_load(m, path));
    snprintf(path, sizeof path, "%s/optim.safetensors", dir);
    ax_st_file f;
    AX_TRY(ax_st_open(&f, path));
    int rc = ax_gpt_read_flat(m, &f, "opt.m.", o->m);
    if (rc == 0) rc = ax_gpt_read_flat(m, &f, "opt.v.", o->v);
    ax_st_close(&f);
    return rc;
}

int ax_ckpt_resolve(const char *path, char *out, size_t n) {
    char p[4200];
    snprintf(p, sizeof p, "%s/state.json", path);
    if (ax_file_exists(p)) { snprintf(out, n, "%s", path); return 0; }
    DIR *d = opendir(path);
    if (!d) return AX_ERR("--resume %s: no such checkpoint or output directory", path);
    struct dirent *e;
    int best = -1;
    while ((e = readdir(d))) {
        int s; char tail;
        if (sscanf(e->d_name, "ckpt-%d%c", &s, &tail) == 1 && s > best) best = s;
    }
    closedir(d);
    if (best < 0) return AX_ERR("--resume %s: expected a checkpoint (state.json) or a directory holding ckpt-*", path);
    snprintf(out, n, "%s/ckpt-%06d", path, best);
    return 0;
}
