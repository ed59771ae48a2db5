#define _GNU_SOURCE
#include "data/shards.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/rng.h"
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define AX_SHARD_HDR_INTS  256
#define AX_SHARD_HDR_BYTES (AX_SHARD_HDR_INTS * 4)
#define AX_SHARD_V16       1
#define AX_SHARD_V32       7
/* Keeps the shuffle streams apart from other users of the same seed. */
#define AX_LOADER_STREAM   0x5EED0000ull

typedef struct {
    char *path;
    void *map; /* whole file; tokens start after the header */
    size_t map_len;
    int64_t n; /* tokens */
    int width; /* bytes per token: 2 or 4 */
} ax_shard;

struct ax_shardset {
    char *pattern;
    ax_shard *f;
    int nf;
    int64_t ntok;
};

/* Byte-wise decoding keeps the format little-endian on any host. */
static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put_le32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t shard_tok(const ax_shard *f, int64_t i) {
    const unsigned char *p = (const unsigned char *)f->map + AX_SHARD_HDR_BYTES + i * f->width;
    return f->width == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : le32(p);
}

static int has_glob_chars(const char *s) { return strpbrk(s, "*?[") != NULL; }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Expands the pattern into a strcmp-sorted list (not locale collation, so the
 * shard order, and with it the sequence numbering, is the same everywhere). */
static int expand_pattern(const char *pattern, char ***paths, int *n) {
    if (!has_glob_chars(pattern)) {
        *paths = ax_malloc(sizeof **paths);
        (*paths)[0] = ax_strdup(pattern);
        *n = 1;
        return 0;
    }
    glob_t g;
    int rc = glob(pattern, GLOB_NOSORT, NULL, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
        if (rc == 0) globfree(&g);
        return AX_ERR("--data '%s': no file matches", pattern);
    }
    if (rc != 0) return AX_ERR("--data '%s': cannot expand pattern (glob error %d)", pattern, rc);
    *n = (int)g.gl_pathc;
    *paths = ax_malloc(g.gl_pathc * sizeof **paths);
    for (size_t i = 0; i < g.gl_pathc; i++) (*paths)[i] = ax_strdup(g.gl_pathv[i]);
    globfree(&g);
    qsort(*paths, (size_t)*n, sizeof **paths, cmp_str);
    return 0;
}

static int check_header(const char *path, const unsigned char *hdr, off_t size, ax_shard *f) {
    int32_t magic = (int32_t)le32(hdr), version = (int32_t)le32(hdr + 4), count = (int32_t)le32(hdr + 8);
    if (magic != AX_SHARD_MAGIC)
        return AX_ERR("%s: not a token shard: magic is %d, expected %d", path, magic, AX_SHARD_MAGIC);
    if (version != AX_SHARD_V16 && version != AX_SHARD_V32)
        return AX_ERR("%s: unknown shard version %d, expected 1 (uint16 tokens) or 7 (uint32 tokens)", path, version);
    f->width = version == AX_SHARD_V16 ? 2 : 4;
    if (count < 0) return AX_ERR("%s: header says %d tokens, expected a count >= 0", path, count);
    int64_t body = (int64_t)size - AX_SHARD_HDR_BYTES, want = (int64_t)count * f->width;
    if (body < want)
        return AX_ERR("%s: truncated: header says %d tokens, file holds %lld", path, count,
                      (long long)(body / f->width));
    if (body > want)
        return AX_ERR("%s: header says %d tokens, but the file has %lld bytes of tokens (expected %lld)", path, count,
                      (long long)body, (long long)want);
    if (count < 2) return AX_ERR("%s: holds %d tokens, expected at least 2", path, count);
    f->n = count;
    return 0;
}

/* Reads and checks the header, then maps the file; the descriptor is closed at
 * once so that thousands of shards do not exhaust the fd limit. */
static int map_shard(const char *path, ax_shard *f) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return AX_ERR("%s: cannot open token shard: %s", path, strerror(errno));
    struct stat st;
    unsigned char hdr[AX_SHARD_HDR_BYTES];
    int rc = -1;
    if (fstat(fd, &st) != 0) AX_ERR("%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode)) AX_ERR("%s: not a regular file", path);
    else if (st.st_size < AX_SHARD_HDR_BYTES)
        AX_ERR("%s: too short for a token shard: %lld bytes, expected a %d-byte header", path, (long long)st.st_size,
               AX_SHARD_HDR_BYTES);
    else if (pread(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr) AX_ERR("%s: cannot read header", path);
    else rc = check_header(path, hdr, st.st_size, f);
    if (rc == 0) {
        f->map_len = (size_t)st.st_size;
        f->map = mmap(NULL, f->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (f->map == MAP_FAILED) {
            f->map = NULL;
            rc = AX_ERR("%s: cannot map: %s", path, strerror(errno));
        }
    }
    close(fd);
    return rc;
}

static int check_vocab(const ax_shard *f, int vocab) {
    for (int64_t i = 0; i < f->n; i++) {
        uint32_t t = shard_tok(f, i);
        if (t >= (uint32_t)vocab)
            return AX_ERR("%s: token at position %lld is %u, expected below the vocab size %d", f->path, (long long)i,
                          t, vocab);
    }
    return 0;
}

int ax_shards_open(ax_shardset **out, const char *pattern, int vocab) {
    *out = NULL;
    char **paths = NULL;
    int n = 0;
    AX_TRY(expand_pattern(pattern, &paths, &n));
    ax_shardset *s = ax_calloc(1, sizeof *s);
    s->pattern = ax_strdup(pattern);
    s->f = ax_calloc((size_t)n, sizeof *s->f);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        ax_shard *f = &s->f[i];
        f->path = paths[i];
        paths[i] = NULL;
        s->nf = i + 1;
        rc = map_shard(f->path, f);
        if (rc == 0 && vocab > 0) rc = check_vocab(f, vocab);
        s->ntok += f->n;
    }
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
    if (rc != 0) {
        ax_shards_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

void ax_shards_close(ax_shardset *s) {
    if (!s) return;
    for (int i = 0; i < s->nf; i++) {
        if (s->f[i].map) munmap(s->f[i].map, s->f[i].map_len);
        free(s->f[i].path);
    }
    free(s->f);
    free(s->pattern);
    free(s);
}

int ax_shards_count(const ax_shardset *s) { return s->nf; }
int64_t ax_shards_tokens(const ax_shardset *s) { return s->ntok; }

int64_t ax_shards_nseq(const ax_shardset *s, int T) {
    if (T < 1) return 0;
    int64_t n = 0;
    for (int i = 0; i < s->nf; i++) n += (s->f[i].n - 1) / T;
    return n;
}

int ax_shards_seq(const ax_shardset *s, int T, int64_t idx, int before, int32_t *out) {
    for (int i = 0; i < s->nf; i++) {
        const ax_shard *f = &s->f[i];
        int64_t k = (f->n - 1) / T, at = idx * T;
        if (idx >= k) {
            idx -= k;
            continue;
        }
        for (int64_t j = 0; j <= T; j++) out[before + j] = (int32_t)shard_tok(f, at + j);
        /* the context: back through this file, then the tails of the ones before it */
        int have = 0, fi = i;
        int64_t p = at;
        while (have < before) {
            while (p == 0 && fi > 0) p = s->f[--fi].n;
            if (p == 0) break;
            out[before - 1 - have++] = (int32_t)shard_tok(&s->f[fi], --p);
        }
        for (int j = 0; j < before - have; j++) out[j] = -1;
        return have;
    }
    ax_fatal(__FILE__, __LINE__, "sequence index out of range for '%s' with T=%d", s->pattern, T);
}

/* ---- writing ---- */

static int write_tokens(ax_outfile *o, const int32_t *tokens, int64_t n, int width) {
    unsigned char buf[8192];
    size_t used = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t t = (uint32_t)tokens[i];
        if (width == 2) {
            buf[used] = (unsigned char)t;
            buf[used + 1] = (unsigned char)(t >> 8);
        } else put_le32(buf + used, t);
        used += (size_t)width;
        if (used == sizeof buf) {
            AX_TRY(ax_out_write(o, buf, used));
            used = 0;
        }
    }
    return ax_out_write(o, buf, used);
}

int ax_shard_write(const char *path, const int32_t *tokens, int64_t n) {
    if (n < 0 || n > INT32_MAX)
        return AX_ERR("%s: cannot write %lld tokens, expected 0 to %d", path, (long long)n, INT32_MAX);
    int width = 2;
    for (int64_t i = 0; i < n; i++) {
        if (tokens[i] < 0)
            return AX_ERR("%s: token at position %lld is %d, expected >= 0", path, (long long)i, tokens[i]);
        if (tokens[i] > 65535) width = 4;
    }
    unsigned char hdr[AX_SHARD_HDR_BYTES] = {0};
    put_le32(hdr, AX_SHARD_MAGIC);
    put_le32(hdr + 4, width == 2 ? AX_SHARD_V16 : AX_SHARD_V32);
    put_le32(hdr + 8, (uint32_t)n);
    ax_outfile o;
    AX_TRY(ax_out_open(&o, path));
    if (ax_out_write(&o, hdr, sizeof hdr) != 0 || write_tokens(&o, tokens, n, width) != 0) {
        ax_out_abort(&o);
        return -1;
    }
    return ax_out_commit(&o);
}

/* ---- training order ---- */

static int64_t largest_shard(const ax_shardset *s) {
    int64_t m = 0;
    for (int i = 0; i < s->nf; i++)
        if (s->f[i].n > m) m = s->f[i].n;
    return m;
}

int ax_loader_init(ax_loader *L, const ax_shardset *s, int T, int shuffle, uint64_t seed) {
    memset(L, 0, sizeof *L);
    if (T < 1) return AX_ERR("data '%s': sequence length %d, expected >= 1", s->pattern, T);
    int64_t nseq = ax_shards_nseq(s, T);
    if (nseq == 0) {
        if (s->ntok < (int64_t)T + 1)
            return AX_ERR("data '%s' has %lld tokens, fewer than one sequence of T+1 = %d", s->pattern,
                          (long long)s->ntok, T + 1);
        /* sequences never span files, so enough tokens in total is not enough */
        return AX_ERR("data '%s': largest file has %lld tokens, fewer than one sequence of T+1 = %d", s->pattern,
                      (long long)largest_shard(s), T + 1);
    }
    L->s = s;
    L->T = T;
    L->shuffle = shuffle;
    L->seed = seed;
    L->nseq = nseq;
    L->epoch = -1;
    return 0;
}

void ax_loader_free(ax_loader *L) {
    free(L->perm);
    L->perm = NULL;
    L->epoch = -1;
}

/* The permutation depends only on (seed, epoch), so any position can be
 * served after a restart without replaying earlier epochs. */
static void build_perm(ax_loader *L, int64_t epoch) {
    if (!L->perm) L->perm = ax_malloc((size_t)L->nseq * sizeof *L->perm);
    for (int64_t i = 0; i < L->nseq; i++) L->perm[i] = i;
    ax_rng r = {L->seed, AX_LOADER_STREAM + (uint64_t)epoch, 0};
    for (int64_t i = L->nseq - 1; i > 0; i--) {
        int64_t j = (int64_t)ax_rng_below(&r, (uint64_t)i + 1);
        int64_t t = L->perm[i];
        L->perm[i] = L->perm[j];
        L->perm[j] = t;
    }
    L->epoch = epoch;
}

int ax_loader_get(ax_loader *L, int64_t pos, int before, int32_t *out) {
    if (pos < 0) ax_fatal(__FILE__, __LINE__, "loader position %lld is negative", (long long)pos);
    int64_t e = pos / L->nseq, j = pos % L->nseq;
    if (L->shuffle) {
        if (e != L->epoch || !L->perm) build_perm(L, e);
        j = L->perm[j];
    }
    return ax_shards_seq(L->s, L->T, j, before, out);
}
