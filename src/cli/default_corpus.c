/* The embedded default: with no data arguments `axonn train` trains on the
 * fortunes corpus (Debian package `fortunes`). The tokenizer and the shards are
 * built once into a cache directory whose name hashes the inputs (file names,
 * sizes, modification times) and the settings, so they are rebuilt when the
 * inputs change and reused otherwise. Rank 0 builds; the others wait. */
#include "cli/cli.h"
#include "cli/text.h"
#include "data/prepare.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/rng.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FORTUNES      "/usr/share/games/fortunes"
#define DEFAULT_VOCAB 2048
#define CACHE_VERSION 1

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* the fortune files: regular files without the .dat/.u8 companions */
static int list_inputs(char ***files, int *n, uint64_t *key) {
    DIR *d = opendir(FORTUNES);
    if (!d)
        return AX_ERR("no --data given and the default corpus " FORTUNES " is missing "
                      "(install the Debian package fortunes: bash scripts/deps.sh)");
    struct dirent *e;
    int cap = 64;
    *files = ax_malloc(cap * sizeof(char *));
    *n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || (l > 4 && strcmp(e->d_name + l - 4, ".dat") == 0) ||
            (l > 3 && strcmp(e->d_name + l - 3, ".u8") == 0))
            continue;
        char p[4200];
        snprintf(p, sizeof p, FORTUNES "/%s", e->d_name);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (*n == cap) *files = realloc(*files, (cap *= 2) * sizeof(char *));
        (*files)[(*n)++] = ax_strdup(p);
    }
    closedir(d);
    if (!*n) return AX_ERR("no --data given and " FORTUNES " holds no fortune files (install the package fortunes)");
    qsort(*files, *n, sizeof(char *), cmp);
    uint64_t h = ax_mix64(CACHE_VERSION * 1000003ull + DEFAULT_VOCAB);
    for (int i = 0; i < *n; i++) {
        struct stat st;
        stat((*files)[i], &st);
        for (const char *c = (*files)[i]; *c; c++) h = ax_mix64(h ^ (unsigned char)*c);
        h = ax_mix64(h ^ (uint64_t)st.st_size);
        h = ax_mix64(h ^ (uint64_t)st.st_mtime);
    }
    *key = h;
    return 0;
}

static void cache_root(char *buf, size_t n) {
    const char *c = getenv("AXONN_CACHE"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (c && *c) snprintf(buf, n, "%s", c);
    else if (x && *x) snprintf(buf, n, "%s/axonn", x);
    else snprintf(buf, n, "%s/.cache/axonn", home && *home ? home : "/tmp");
}

static int build(const char *dir, char **files, int nfiles) {
    char tok[4400], corpus[4400];
    snprintf(tok, sizeof tok, "%s/tokenizer.json", dir);
    snprintf(corpus, sizeof corpus, "%s/corpus", dir);
    AX_TRY(ax_mkdir_p(dir));
    ax_tokenizer *t = NULL;
    if (!ax_file_exists(tok)) {
        printf("default corpus: training a %d-id BPE tokenizer on %d fortune files...\n", DEFAULT_VOCAB, nfiles);
        fflush(stdout);
        ax_doclist d;
        AX_TRY(ax_doclist_read(&d, (const char *const *)files, nfiles));
        int rc = ax_tok_train(&t, (const char *const *)d.text, d.len, d.n, DEFAULT_VOCAB);
        ax_doclist_free(&d);
        AX_TRY(rc);
        if (ax_tok_save_json(t, tok)) {
            ax_tok_free(t);
            return -1;
        }
    } else AX_TRY(ax_tok_load(&t, tok));
    int rc = 0;
    if (!ax_file_exists(corpus)) {
        printf("default corpus: tokenizing into %s\n", corpus);
        fflush(stdout);
        ax_prepare_opts po = {.inputs = (const char *const *)files,
                              .ninputs = nfiles,
                              .out_dir = corpus,
                              .val_frac = 0.02,
                              .shard_tokens = 32000000,
                              .progress = 0};
        ax_prepare_stats st;
        rc = ax_prepare(t, &po, &st);
        if (rc == 0)
            printf("default corpus: %lld training and %lld validation tokens (%.1f MB of text)\n",
                   (long long)st.tokens[0], (long long)st.tokens[1], st.bytes / 1e6);
    }
    ax_tok_free(t);
    return rc;
}

int ax_default_corpus(char *dir, size_t n) {
    int rank, rc = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char root[4096];
    cache_root(root, sizeof root);
    if (rank == 0) {
        char **files = NULL;
        int nfiles = 0;
        uint64_t key = 0;
        rc = list_inputs(&files, &nfiles, &key);
        if (rc == 0) {
            snprintf(dir, n, "%s/fortunes-%016llx", root, (unsigned long long)key);
            rc = build(dir, files, nfiles);
        }
        for (int i = 0; i < nfiles; i++) free(files[i]);
        free(files);
    }
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", rc ? ax_err_msg() : "");
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(msg, sizeof msg, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(dir, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rc) return AX_ERR("%s", msg);
    return 0;
}
