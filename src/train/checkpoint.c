#define _GNU_SOURCE 1
#include "train/checkpoint.h"
#include "train/ckpt_impl.h"
#include "util/crc.h"
#include "util/err.h"
#include "util/fileio.h"
#include <glob.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parameters i0 .. i1-1 of each of n flat vectors (names prefixed) into one
 * safetensors file of dtype t; map (root, may be NULL) gets each tensor's
 * name -> the file's base name. */
static int write_tensors(const char *path, ax_gpt *m, const float *const *flats, const char *const *prefixes, int n,
                         ax_st_dtype t, int i0, int i1, json_t *map) {
    ax_st_writer w;
    int rc = 0;
    if (m->g->rank == 0) {
        rc = ax_st_writer_init(&w, path);
        if (rc == 0) {
            ax_st_writer_meta(&w, "format", "pt");
            for (int i = 0; i < n; i++) ax_gpt_declare(m, &w, prefixes[i], t, i0, i1);
            const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
            for (int k = 0; map && k < w.n; k++) json_object_set_new(map, w.t[k].name, json_string(base));
        }
    }
    if (ax_agree(m->g->world, rc)) return -1;
    for (int i = 0; i < n; i++) {
        int r = ax_gpt_write_flat(m, &w, flats[i], t, i0, i1);
        if (r && !rc) rc = r;
    }
    if (m->g->rank == 0) {
        if (rc == 0) rc = ax_st_writer_commit(&w);
        else ax_st_writer_abort(&w);
    }
    return ax_agree(m->g->world, rc);
}

/* Shard k of n as save_pretrained names it */
static void shard_name(char *dst, size_t len, const char *dir, int k, int n) {
    snprintf(dst, len, "%s/model-%05d-of-%05d.safetensors", dir, k + 1, n);
}

/* After a save committed: the files of a previous save of the other form (or
 * shard count), which would otherwise be loaded instead (model.safetensors
 * comes first) or lie about. */
static void remove_stale(const char *dir, int nshards) {
    char path[4200], keep[4200];
    glob_t gl;
    snprintf(path, sizeof path, "%s/model-*-of-*.safetensors", dir);
    if (glob(path, 0, NULL, &gl) == 0) {
        for (size_t i = 0; i < gl.gl_pathc; i++) {
            int k, n;
            const char *base = strrchr(gl.gl_pathv[i], '/') + 1;
            if (sscanf(base, "model-%5d-of-%5d", &k, &n) == 2 && n == nshards && k >= 1 && k <= n) {
                shard_name(keep, sizeof keep, dir, k - 1, n);
                if (!strcmp(keep, gl.gl_pathv[i])) continue;
            }
            unlink(gl.gl_pathv[i]);
        }
        globfree(&gl);
    }
    snprintf(path, sizeof path, nshards > 1 ? "%s/model.safetensors" : "%s/model.safetensors.index.json", dir);
    unlink(path);
    ax_fsync_dir(dir);
}

int ax_model_save(const char *dir, ax_gpt *m, int64_t max_shard, ax_st_dtype t) {
    char path[4200];
    int rc = 0, root = m->g->rank == 0;
    if (root) rc = ax_mkdir_p(dir);
    if (ax_agree(m->g->world, rc)) return -1;
    /* shards of whole parameters in table order, a new one when the next
     * parameter would pass max_shard (a larger parameter is a shard alone) */
    int start[1024], n = 0;
    int64_t cur = 0, total = 0;
    for (int i = 0; i < m->np; i++) {
        int64_t b = ax_gpt_file_bytes(m, i, t);
        if (!b) continue;
        if (n == 0 || (max_shard > 0 && cur > 0 && cur + b > max_shard)) {
            if (n == (int)(sizeof start / sizeof *start))
                return AX_ERR("--max-shard-size %lld: more than %d shards; expected a larger size",
                              (long long)max_shard, n);
            start[n++] = i;
            cur = 0;
        }
        cur += b;
        total += b;
    }
    const float *f[] = {m->params};
    const char *p[] = {""};
    json_t *map = root && n > 1 ? json_object() : NULL;
    for (int k = 0; k < n && rc == 0; k++) {
        if (n == 1) snprintf(path, sizeof path, "%s/model.safetensors", dir);
        else shard_name(path, sizeof path, dir, k, n);
        rc = write_tensors(path, m, f, p, 1, t, start[k], k + 1 < n ? start[k + 1] : m->np, map);
    }
    if (root && rc == 0 && n > 1) { /* the index last: the checkpoint exists once it does */
        json_t *j = json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)total, "weight_map", map);
        char *txt = json_dumps(j, JSON_INDENT(2));
        json_decref(j);
        map = NULL;
        ax_outfile o;
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        rc = ax_out_open(&o, path);
        if (rc == 0) rc = ax_out_write(&o, txt, strlen(txt));
        if (rc == 0) rc = ax_out_commit(&o);
        else ax_out_abort(&o);
        free(txt);
    }
    json_decref(map);
    if (root && rc && n > 1) /* nothing half-written: no shard without its index */
        for (int k = 0; k < n; k++) {
            shard_name(path, sizeof path, dir, k, n);
            unlink(path);
        }
    if (root && rc == 0) {
        snprintf(path, sizeof path, "%s/config.json", dir);
        rc = ax_gpt_config_write(&m->cfg, path);
        if (rc == 0) remove_stale(dir, n);
    }
    return ax_agree(m->g->world, rc);
}

int ax_ckpt_write_state(const char *path, const ax_ckpt_state *st) {
    json_t *j = json_pack("{s:i, s:I, s:I, s:i, s:i, s:i}", "step", st->step, "seed", (json_int_t)st->seed, "data_pos",
                          (json_int_t)st->data_pos, "batch", st->batch, "seq", st->seq, "steps", st->steps);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    ax_outfile o;
    int rc = ax_out_open(&o, path);
    if (rc == 0) rc = ax_out_write(&o, s, strlen(s));
    if (rc == 0) rc = ax_out_commit(&o);
    else ax_out_abort(&o);
    free(s);
    return rc;
}

/* The commit marker, written last: every file's size and CRC-64 (the
 * safetensors files' by ranges), so a checkpoint is complete exactly when
 * manifest.json exists, and corrupt when a file no longer matches it.
 * Checkpoints of earlier versions name XXH3-64 instead ("xxh3_64", or
 * ranges without "hash"); they are verified as they were written. */
static const char *ckpt_files[] = {"model.safetensors", "config.json", "optim.safetensors", "state.json"};
#define N_CKPT_FILES (int)(sizeof ckpt_files / sizeof *ckpt_files)

/* {"bytes": n, "hash": "crc64", "ranges": [[offset, length, crc64], ...]}: chunks of r->chunk bytes */
static json_t *ranges_json(const ax_ckpt_ranges *r, int f) {
    json_t *a = json_array();
    char hex[17];
    for (int64_t k = 0; k < r->nchunk[f]; k++) {
        int64_t off = k * r->chunk, len = off + r->chunk > r->bytes[f] ? r->bytes[f] - off : r->chunk;
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)r->hash[r->first[f] + k]);
        json_array_append_new(a, json_pack("[I, I, s]", (json_int_t)off, (json_int_t)len, hex));
    }
    return json_pack("{s:I, s:s, s:o}", "bytes", (json_int_t)r->bytes[f], "hash", "crc64", "ranges", a);
}

int ax_ckpt_write_manifest(const char *dir, const ax_ckpt_ranges *r) {
    char path[4200], hex[17];
    json_t *files = json_object();
    int rc = 0;
    for (int i = 0; i < N_CKPT_FILES && rc == 0; i++) {
        uint64_t h;
        int64_t n;
        int f = !r ? -1 : !strcmp(ckpt_files[i], AX_CKPT_MODEL) ? 0 : !strcmp(ckpt_files[i], AX_CKPT_OPTIM) ? 1 : -1;
        if (f >= 0) {
            json_object_set_new(files, ckpt_files[i], ranges_json(r, f));
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir, ckpt_files[i]);
        rc = ax_crc64_file(path, &h, &n);
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
        if (rc == 0)
            json_object_set_new(files, ckpt_files[i], json_pack("{s:I, s:s}", "bytes", (json_int_t)n, "crc64", hex));
    }
    if (rc == 0) {
        json_t *j = json_pack("{s:s, s:o}", "format", "axonn checkpoint 3", "files", files);
        char *txt = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(j);
        ax_outfile o;
        snprintf(path, sizeof path, "%s/" AX_CKPT_MANIFEST, dir);
        rc = ax_out_open(&o, path);
        if (rc == 0) rc = ax_out_write(&o, txt, strlen(txt));
        if (rc == 0) rc = ax_out_commit(&o);
        else ax_out_abort(&o);
        free(txt);
    } else json_decref(files);
    return rc;
}

int ax_ckpt_save_root(const char *dir, ax_gpt *m, const ax_adamw *o, const ax_ckpt_state *st) {
    char tmp[4096], path[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", dir);
    int root = m->g->rank == 0, rc = 0;
    if (root) {
        ax_ckpt_remove(tmp);
        rc = ax_mkdir_p(tmp);
    }
    AX_TRY(ax_agree(m->g->world, rc));
    rc = ax_model_save(tmp, m, 0, AX_ST_F32); /* one file, fp32: resumes exactly */
    const float *f[] = {o->m, o->v};
    float *whole[2] = {NULL, NULL};
    for (int k = 0; k < 2 && m->zero; k++) { /* ZeRO-1: the moments whole for this writer, for a while */
        f[k] = whole[k] = ax_be()->alloc((size_t)m->n_local * sizeof(float));
        ax_gpt_zero_unshard(m, k ? o->v : o->m, whole[k]);
    }
    snprintf(path, sizeof path, "%s/optim.safetensors", tmp);
    if (rc == 0) rc = write_tensors(path, m, f, ax_ckpt_prefix[1], 2, AX_ST_F32, 0, m->np, NULL);
    for (int k = 0; k < 2; k++) ax_be()->free(whole[k]);
    if (root && rc == 0) {
        snprintf(path, sizeof path, "%s/state.json", tmp);
        rc = ax_ckpt_write_state(path, st);
        if (rc == 0) rc = ax_ckpt_write_manifest(tmp, NULL);
        if (rc == 0) rc = ax_ckpt_install(tmp, dir);
    }
    if (root && rc) ax_ckpt_remove(tmp);
    return ax_agree(m->g->world, rc);
}

static int hex_u64(const char *s, uint64_t *v) {
    char *end;
    if (!s || strlen(s) != 16) return -1;
    *v = strtoull(s, &end, 16);
    return *end ? -1 : 0;
}

/* Every file of dir against the manifest: the small files' checksums, the
 * safetensors files' layout and, with v (v[0]: the model file, v[1]: the
 * optimizer's), the checksums of v's ranges. */
static int verify(const char *dir, const ax_ckpt_verify_share *v) {
    char path[4200];
    snprintf(path, sizeof path, "%s/" AX_CKPT_MANIFEST, dir);
    if (!ax_file_exists(path))
        return AX_ERR("%s: not a complete checkpoint (no " AX_CKPT_MANIFEST ": its write did not finish)", dir);
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e), *files = j ? json_object_get(j, "files") : NULL;
    int rc = j ? 0 : AX_ERR("%s: invalid: %s (line %d)", path, e.text, e.line);
    for (int i = 0; i < N_CKPT_FILES && rc == 0; i++) {
        json_t *x = json_object_get(files, ckpt_files[i]);
        json_t *nb = json_object_get(x, "bytes");
        uint64_t want, got;
        int64_t n;
        if (json_object_get(x, "ranges")) { /* written in parallel: checksums by ranges */
            snprintf(path, sizeof path, "%s/%s", dir, ckpt_files[i]);
            char mpath[4200];
            snprintf(mpath, sizeof mpath, "%s/" AX_CKPT_MANIFEST, dir);
            rc = ax_ckpt_verify_ranges(path, mpath, x, v ? v + !!strcmp(ckpt_files[i], AX_CKPT_MODEL) : NULL);
            snprintf(path, sizeof path, "%s/" AX_CKPT_MANIFEST, dir);
            continue;
        }
        int crc = json_object_get(x, "crc64") != NULL; /* else XXH3-64: an earlier version's */
        if (!json_is_integer(nb) || hex_u64(json_string_value(json_object_get(x, crc ? "crc64" : "xxh3_64")), &want)) {
            rc = AX_ERR("%s: expected an entry {bytes, crc64} for %s", path, ckpt_files[i]);
            break;
        }
        snprintf(path, sizeof path, "%s/%s", dir, ckpt_files[i]);
        rc = crc ? ax_crc64_file(path, &got, &n) : ax_hash_file(path, &got, &n);
        if (rc == 0 && n != json_integer_value(nb))
            rc = AX_ERR("%s: %lld bytes, the checkpoint manifest says %lld (corrupt checkpoint)", path, (long long)n,
                        (long long)json_integer_value(nb));
        else if (rc == 0 && got != want)
            rc = AX_ERR("%s: checksum (%s) %016llx, the checkpoint manifest says %016llx (corrupt checkpoint)", path,
                        crc ? "CRC-64" : "XXH3-64", (unsigned long long)got, (unsigned long long)want);
        snprintf(path, sizeof path, "%s/" AX_CKPT_MANIFEST, dir);
    }
    json_decref(j);
    return rc;
}

static int get_int(json_t *j, const char *key, const char *path, int64_t *v) {
    json_t *x = json_object_get(j, key);
    if (!json_is_integer(x)) return AX_ERR("%s: expected an integer '%s'", path, key);
    *v = json_integer_value(x);
    return 0;
}

int ax_ckpt_peek(const char *dir, ax_gpt_config *cfg, ax_ckpt_state *st) {
    char path[4200];
    AX_TRY(verify(dir, NULL)); /* the layout and the small files; the data's ranges in ax_ckpt_load */
    snprintf(path, sizeof path, "%s/config.json", dir);
    AX_TRY(ax_gpt_config_read(cfg, path));
    snprintf(path, sizeof path, "%s/state.json", dir);
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) return AX_ERR("%s: not a checkpoint state: %s", path, e.text);
    int64_t v[6];
    const char *keys[] = {"step", "seed", "data_pos", "batch", "seq", "steps"};
    for (int i = 0; i < 6; i++)
        if (get_int(j, keys[i], path, &v[i])) {
            json_decref(j);
            return -1;
        }
    json_decref(j);
    st->step = (int)v[0];
    st->seed = (uint64_t)v[1];
    st->data_pos = v[2];
    st->batch = (int)v[3];
    st->seq = (int)v[4];
    st->steps = (int)v[5];
    return 0;
}

/* The optimizer file's spans from the model file's: every file tensor is
 * fp32 and opt.m.N and opt.v.N have N's shape, so a span of N's bytes stands
 * at the same place in each (the reader's enumeration, one pass, not three). */
static int optim_spans(const ax_st_file *fm, const ax_st_file *fo, const ax_ckpt_spans *ms, ax_ckpt_spans *os) {
    const ax_st_tensor **mo = ax_calloc((size_t)fm->n * 2, sizeof *mo); /* model tensor i: its opt.m, opt.v */
    int rc = 0;
    for (int i = 0; i < fm->n && rc == 0; i++)
        for (int k = 0; k < 2 && rc == 0; k++) {
            char name[300];
            snprintf(name, sizeof name, "%s%s", ax_ckpt_prefix[1][k], fm->t[i].name);
            mo[2 * i + k] = ax_st_find(fo, name);
            if (!mo[2 * i + k] || mo[2 * i + k]->end - mo[2 * i + k]->begin != fm->t[i].end - fm->t[i].begin)
                rc = AX_ERR("%s: tensor '%s' missing or not the shape of '%s' in %s", fo->path, name, fm->t[i].name,
                            fm->path);
        }
    for (int s = 0, i = 0; s < ms->n && rc == 0; s++) {
        int64_t off = ms->span[2 * s] - (int64_t)fm->data_start, len = ms->span[2 * s + 1];
        if (off < 0) continue; /* the header's */
        /* the tensor holding it: spans sorted, tensors in file order */
        while (i + 1 < fm->n && (int64_t)fm->t[i].end <= off) i++;
        for (int k = 0; k < 2; k++)
            ax_ckpt_spans_add(os, (int64_t)(fo->data_start + mo[2 * i + k]->begin) + off - (int64_t)fm->t[i].begin,
                              len);
    }
    free(mo);
    return rc;
}

/* Verifies the ranges of both files that hold what this rank reads (the
 * headers, and its slices of every tensor), split with the data replicas,
 * which read the same; once every rank's verified, reads its slices. */
int ax_ckpt_load(const char *dir, ax_gpt *m, ax_adamw *o) {
    char path[2][4200];
    ax_st_file f[2];
    ax_ckpt_spans reads[2] = {{0}, {0}};
    int rc = 0, nopen = 0;
    for (; nopen < 2 && rc == 0; nopen++) {
        snprintf(path[nopen], sizeof path[nopen], "%s/%s", dir, nopen ? AX_CKPT_OPTIM : AX_CKPT_MODEL);
        if ((rc = ax_st_open(&f[nopen], path[nopen])) != 0) break;
        ax_ckpt_spans_add(&reads[nopen], 0, (int64_t)f[nopen].data_start);
    }
    if (rc == 0) rc = ax_gpt_read_spans(m, &f[0], ax_ckpt_prefix[0][0], ax_ckpt_spans_add, &reads[0]);
    ax_ckpt_spans_sort(&reads[0]);
    if (rc == 0) rc = optim_spans(&f[0], &f[1], &reads[0], &reads[1]);
    ax_ckpt_spans_sort(&reads[1]);
    const ax_comm *rep = &m->g->data;
    ax_ckpt_verify_share v[2] = {{&reads[0], rep->rank, rep->size}, {&reads[1], rep->rank, rep->size}};
    if (rc == 0) rc = verify(dir, v);
    rc = ax_agree(m->g->world, rc); /* a replica's range failed: nothing is read anywhere */
    /* ZeRO-1: each moment read whole into one buffer, its share kept */
    float *whole = m->zero && rc == 0 ? ax_be()->alloc((size_t)m->n_local * sizeof(float)) : NULL;
    float *flat[2][2] = {{m->params, NULL}, {whole ? whole : o->m, whole ? whole : o->v}};
    for (int k = 0; k < 4 && rc == 0; k++) {
        if (flat[k / 2][k % 2]) rc = ax_gpt_read_flat(m, &f[k / 2], ax_ckpt_prefix[k / 2][k % 2], flat[k / 2][k % 2]);
        if (whole && k >= 2 && rc == 0) ax_gpt_zero_shard(m, whole, k == 2 ? o->m : o->v);
    }
    ax_be()->free(whole);
    m->params_h_current = 0;
    for (int k = 0; k < nopen; k++) ax_st_close(&f[k]);
    for (int k = 0; k < 2; k++) free(reads[k].span);
    return rc;
}
