#include "data/prepare.h"
#include "data/docs.h"
#include "data/shards.h"
#include "util/err.h"
#include "util/fileio.h"
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *dir, *name;
    ax_ids buf;
    int64_t cap;
    int n; /* shards written */
} split_out;

static int flush(split_out *s) {
    if (!s->buf.n) return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s_%06d.bin", s->dir, s->name, s->n);
    AX_TRY(ax_shard_write(path, s->buf.v, (int64_t)s->buf.n));
    s->n++;
    s->buf.n = 0;
    return 0;
}

static int add(split_out *s, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        ax_ids_push(&s->buf, ids[i]);
        if ((int64_t)s->buf.n >= s->cap) AX_TRY(flush(s));
    }
    return 0;
}

static int is_val(const ax_prepare_opts *o, int64_t i) {
    if (o->val_count > 0) return i < o->val_count;
    return floor((i + 1) * o->val_frac) > floor(i * o->val_frac);
}

static void show(const ax_prepare_stats *st, double t0, int done) {
    double dt = MPI_Wtime() - t0;
    fprintf(stderr, "\r\033[Kprepare: %.1f MB, %lld docs, %lld tokens, %.1f MB/s%s", st->bytes / 1e6,
            (long long)(st->docs[0] + st->docs[1]), (long long)(st->tokens[0] + st->tokens[1]),
            dt > 0 ? st->bytes / 1e6 / dt : 0.0, done ? "\n" : "");
}

static int dir_is_empty(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 1;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
    closedir(d);
    return empty;
}

static int prepare_into(const ax_tokenizer *t, const ax_prepare_opts *o, const char *dir, ax_prepare_stats *st);

/* Shards are written into "<out>.tmp-<pid>" and the directory renamed when all
 * is done, so a failed run leaves nothing behind and never a partial corpus. */
int ax_prepare(const ax_tokenizer *t, const ax_prepare_opts *o, ax_prepare_stats *st) {
    char out[4096], tmp[4200];
    snprintf(out, sizeof out, "%s", o->out_dir);
    for (size_t l = strlen(out); l > 1 && out[l - 1] == '/'; l--) out[l - 1] = 0;
    struct stat sb;
    if (stat(out, &sb) == 0 && !S_ISDIR(sb.st_mode)) return AX_ERR("--out %s: exists and is not a directory", out);
    if (ax_file_exists(out) && !dir_is_empty(out))
        return AX_ERR("--out %s: exists and is not empty (expected a new directory)", out);
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", out, (int)getpid());
    int rc = prepare_into(t, o, tmp, st);
    if (rc == 0 && st->tokens[0] == 0)
        rc = AX_ERR("prepare: the training split is empty (every document went to validation)");
    if (rc == 0) {
        rmdir(out);
        if (rename(tmp, out) != 0) rc = AX_ERR("%s: cannot rename the prepared corpus into place", out);
    }
    if (rc) ax_remove_tree(tmp);
    return rc;
}

static int prepare_into(const ax_tokenizer *t, const ax_prepare_opts *o, const char *dir, ax_prepare_stats *st) {
    memset(st, 0, sizeof *st);
    int eot = ax_tok_eot(t) >= 0 ? ax_tok_eot(t) : ax_tok_eos(t); /* else Llama-3's <|end_of_text|> */
    if (eot < 0) return AX_ERR("tokenizer: no <|endoftext|> or <|end_of_text|> token to separate documents");
    if (o->shard_tokens < 2) return AX_ERR("--shard-tokens %lld: expected >= 2", (long long)o->shard_tokens);
    if (o->val_count <= 0 && (o->val_frac < 0 || o->val_frac >= 1))
        return AX_ERR("--val-frac %g: expected 0 <= f < 1", o->val_frac);
    AX_TRY(ax_mkdir_p(dir));
    char tpath[4200];
    snprintf(tpath, sizeof tpath, "%s/tokenizer.json", dir);
    AX_TRY(ax_tok_save_json(t, tpath));
    split_out sp[2] = {{dir, "train", {0}, o->shard_tokens, 0}, {dir, "val", {0}, o->shard_tokens, 0}};
    ax_ids ids = {0};
    double t0 = MPI_Wtime(), last = t0;
    int64_t doc = 0;
    int rc = 0;
    for (int f = 0; f < o->ninputs && rc == 0; f++) {
        ax_docreader *r;
        if ((rc = ax_docs_open(&r, o->inputs[f], AX_DOCS_AUTO))) break;
        const char *text;
        size_t len;
        int cont, k, split = 0;
        while ((k = ax_docs_next(r, &text, &len, &cont)) == 1) {
            ids.n = 0;
            if (!cont) {
                split = is_val(o, doc);
                ax_ids_push(&ids, eot);
                st->docs[split]++;
                doc++;
            }
            if ((rc = ax_tok_encode(t, text, len, 0, &ids))) break;
            if ((rc = add(&sp[split], ids.v, ids.n))) break;
            st->tokens[split] += ids.n;
            st->bytes += len;
            if (o->progress && MPI_Wtime() - last > 0.5) {
                show(st, t0, 0);
                last = MPI_Wtime();
            }
        }
        if (k < 0) rc = -1;
        ax_docs_close(r);
    }
    for (int s = 0; s < 2 && rc == 0; s++) rc = flush(&sp[s]);
    st->shards[0] = sp[0].n;
    st->shards[1] = sp[1].n;
    st->seconds = MPI_Wtime() - t0;
    if (o->progress && rc == 0) show(st, t0, 1);
    ax_ids_free(&ids);
    ax_ids_free(&sp[0].buf);
    ax_ids_free(&sp[1].buf);
    if (rc == 0 && st->tokens[0] + st->tokens[1] == 0)
        return AX_ERR("%s: no text found in the inputs (empty files or only separators)", o->inputs[0]);
    return rc;
}
