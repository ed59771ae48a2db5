#include "cli/text.h"
#include "model/gpt.h"
#include "data/docs.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ax_cli_tokenizer(ax_tokenizer **t, const char *path, const char *beside) {
    if (path) return ax_tok_load(t, path);
    char p[4200], st[4200], cfg[4200];
    ax_gpt_model_paths(beside, st, cfg, sizeof cfg); /* in a model directory, or beside a model file */
    ax_dirname(cfg, p, sizeof p);
    strncat(p, "/tokenizer.json", sizeof p - strlen(p) - 1);
    if (!ax_file_exists(p)) return AX_ERR("%s: no tokenizer.json beside it (give --tokenizer FILE)", beside);
    return ax_tok_load(t, p);
}

static void push(ax_doclist *d, const char *s, size_t n, int cont) {
    if (cont && d->n) {
        d->text[d->n - 1] = realloc(d->text[d->n - 1], d->len[d->n - 1] + n + 1);
        memcpy(d->text[d->n - 1] + d->len[d->n - 1], s, n);
        d->len[d->n - 1] += n;
        d->text[d->n - 1][d->len[d->n - 1]] = 0;
        return;
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 256;
        d->text = realloc(d->text, d->cap * sizeof(char *));
        d->len = realloc(d->len, d->cap * sizeof(size_t));
    }
    d->text[d->n] = ax_malloc(n + 1);
    memcpy(d->text[d->n], s, n);
    d->text[d->n][n] = 0;
    d->len[d->n++] = n;
}

int ax_doclist_read(ax_doclist *d, const char *const *files, int nfiles) {
    memset(d, 0, sizeof *d);
    for (int f = 0; f < nfiles; f++) {
        ax_docreader *r;
        AX_TRY(ax_docs_open(&r, files[f], AX_DOCS_AUTO));
        const char *s;
        size_t n;
        int cont, k;
        while ((k = ax_docs_next(r, &s, &n, &cont)) == 1) push(d, s, n, cont);
        ax_docs_close(r);
        if (k < 0) {
            ax_doclist_free(d);
            return -1;
        }
    }
    return 0;
}

void ax_doclist_free(ax_doclist *d) {
    for (size_t i = 0; i < d->n; i++) free(d->text[i]);
    free(d->text);
    free(d->len);
    memset(d, 0, sizeof *d);
}

int ax_copy_file(const char *from, const char *to) {
    char *data;
    size_t n;
    AX_TRY(ax_read_file(from, &data, &n));
    ax_outfile o;
    int rc = ax_out_open(&o, to);
    if (rc == 0) rc = ax_out_write(&o, data, n);
    if (rc == 0) rc = ax_out_commit(&o);
    else if (o.fp) ax_out_abort(&o);
    free(data);
    return rc;
}
