#define _GNU_SOURCE
#include "test.h"
#include "data/shards.h"
#include "util/err.h"
#include "util/rng.h"
#include <glob.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static const char *at(const char *name) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int32_t header_int(const char *path, int i) {
    FILE *f = fopen(path, "rb");
    unsigned char b[4] = {0};
    if (f) {
        if (fseek(f, 4L * i, SEEK_SET) != 0 || fread(b, 1, 4, f) != 4) memset(b, 0, 4);
        fclose(f);
    }
    return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
}

/* Writes a raw shard file with an arbitrary header, for the bad-input cases. */
static void write_raw(const char *path, int32_t magic, int32_t version, int32_t count, long body_bytes) {
    FILE *f = fopen(path, "wb");
    unsigned char hdr[1024] = {0};
    int32_t v[3] = {magic, version, count};
    for (int i = 0; i < 12; i++) hdr[i] = (unsigned char)((uint32_t)v[i / 4] >> (8 * (i % 4)));
    fwrite(hdr, 1, sizeof hdr, f);
    for (long i = 0; i < body_bytes; i++) fputc((int)(i % 7), f);
    fclose(f);
}

static int tmp_files_in_dir(void) {
    glob_t g;
    char pat[128];
    snprintf(pat, sizeof pat, "%s/*.tmp.*", dir);
    int n = glob(pat, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    if (n) globfree(&g);
    return n;
}

static void test_roundtrip_u16(void) {
    enum { N = 1000 };
    int32_t tok[N], out[N];
    for (int i = 0; i < N; i++) tok[i] = (int32_t)((i * 977) % 65536);
    tok[N - 1] = 65535;
    const char *p = at("u16.bin");
    CHECK(ax_shard_write(p, tok, N) == 0, "write: %s", ax_err_msg());
    CHECK(header_int(p, 0) == AX_SHARD_MAGIC, "magic %d", header_int(p, 0));
    CHECK(header_int(p, 1) == 1, "version %d, expected 1", header_int(p, 1));
    CHECK(header_int(p, 2) == N, "count %d", header_int(p, 2));
    CHECK(file_size(p) == 1024 + 2L * N, "size %ld", file_size(p));
    ax_shardset *s = NULL;
    CHECK(ax_shards_open(&s, p, 65536) == 0, "open: %s", ax_err_msg());
    if (!s) return;
    CHECK(ax_shards_count(s) == 1, "count %d", ax_shards_count(s));
    CHECK(ax_shards_tokens(s) == N, "tokens %lld", (long long)ax_shards_tokens(s));
    CHECK(ax_shards_nseq(s, N - 1) == 1, "nseq %lld", (long long)ax_shards_nseq(s, N - 1));
    ax_shards_seq(s, N - 1, 0, 0, out);
    CHECK(memcmp(out, tok, sizeof tok) == 0, "u16 tokens differ");
    ax_shards_close(s);
}

static void test_roundtrip_u32(void) {
    enum { N = 300 };
    int32_t tok[N], out[N];
    for (int i = 0; i < N; i++) tok[i] = i * 7;
    tok[5] = 65536;
    tok[17] = 100000000;
    tok[N - 1] = INT32_MAX;
    const char *p = at("u32.bin");
    CHECK(ax_shard_write(p, tok, N) == 0, "write: %s", ax_err_msg());
    CHECK(header_int(p, 1) == 7, "version %d, expected 7", header_int(p, 1));
    CHECK(file_size(p) == 1024 + 4L * N, "size %ld", file_size(p));
    ax_shardset *s = NULL;
    CHECK(ax_shards_open(&s, p, 0) == 0, "open: %s", ax_err_msg());
    if (!s) return;
    ax_shards_seq(s, N - 1, 0, 0, out);
    CHECK(memcmp(out, tok, sizeof tok) == 0, "u32 tokens differ");
    ax_shards_close(s);
}

/* Shard k holds tokens k*1000 + i, so every token names where it came from. */
static void write_tagged(const char *name, int k, int n) {
    int32_t tok[64];
    for (int i = 0; i < n; i++) tok[i] = k * 1000 + i;
    CHECK(ax_shard_write(at(name), tok, n) == 0, "write %s: %s", name, ax_err_msg());
}

static int seq_is(const int32_t *out, int T, int k, int first) {
    for (int j = 0; j <= T; j++)
        if (out[j] != k * 1000 + first + j) return 0;
    return 1;
}

static void test_glob(void) {
    /* written out of order to check that the glob is sorted */
    write_tagged("g_002.bin", 2, 5);  /* T=4: 1 sequence */
    write_tagged("g_000.bin", 0, 11); /* T=4: 2 sequences, tokens 9, 10 dropped */
    write_tagged("g_001.bin", 1, 9);  /* T=4: exactly 2 sequences */
    ax_shardset *s = NULL;
    CHECK(ax_shards_open(&s, at("g_*.bin"), 3000) == 0, "open glob: %s", ax_err_msg());
    if (!s) return;
    CHECK(ax_shards_count(s) == 3, "files %d", ax_shards_count(s));
    CHECK(ax_shards_tokens(s) == 25, "tokens %lld", (long long)ax_shards_tokens(s));
    CHECK(ax_shards_nseq(s, 4) == 5, "nseq(4) %lld", (long long)ax_shards_nseq(s, 4));
    CHECK(ax_shards_nseq(s, 1) == 22, "nseq(1) %lld", (long long)ax_shards_nseq(s, 1));
    CHECK(ax_shards_nseq(s, 8) == 2, "nseq(8) %lld", (long long)ax_shards_nseq(s, 8));
    CHECK(ax_shards_nseq(s, 10) == 1, "nseq(10) %lld", (long long)ax_shards_nseq(s, 10));
    CHECK(ax_shards_nseq(s, 11) == 0, "nseq(11) %lld", (long long)ax_shards_nseq(s, 11));
    int32_t out[5];
    const int want[5][2] = {{0, 0}, {0, 4}, {1, 0}, {1, 4}, {2, 0}};
    for (int i = 0; i < 5; i++) {
        ax_shards_seq(s, 4, i, 0, out);
        CHECK(seq_is(out, 4, want[i][0], want[i][1]), "seq %d starts %d, expected shard %d from %d", i, out[0],
              want[i][0], want[i][1]);
    }
    /* the boundary token is shared: last of sequence 0 is first of sequence 1 */
    int32_t a[5], b[5];
    ax_shards_seq(s, 4, 0, 0, a);
    ax_shards_seq(s, 4, 1, 0, b);
    CHECK(a[4] == b[0], "boundary %d vs %d", a[4], b[0]);
    ax_shards_close(s);

    CHECK(ax_shards_open(&s, at("g_001.bin"), 0) == 0, "open single: %s", ax_err_msg());
    if (s) {
        CHECK(ax_shards_count(s) == 1, "single path files %d", ax_shards_count(s));
        ax_shards_close(s);
    }
}

/* The documented order, computed independently of the loader. */
static void ref_perm(uint64_t seed, int64_t epoch, int64_t n, int64_t *p) {
    for (int64_t i = 0; i < n; i++) p[i] = i;
    ax_rng r = {seed, 0x5EED0000ull + (uint64_t)epoch, 0};
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)ax_rng_below(&r, (uint64_t)(i + 1)), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

enum { LT = 3, LNSEQ = 50 };

/* Sequence index served at pos, read back from the first token (token = index). */
static int64_t served(ax_loader *L, int64_t pos) {
    int32_t out[LT + 1];
    ax_loader_get(L, pos, 0, out);
    return out[0] / LT;
}

static int is_perm(const int64_t *p, int64_t n) {
    char seen[LNSEQ] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) return 0;
        seen[p[i]] = 1;
    }
    return 1;
}

static void order(ax_loader *L, int64_t epoch, int64_t *p) {
    for (int64_t j = 0; j < LNSEQ; j++) p[j] = served(L, epoch * LNSEQ + j);
}

static void test_loader(void) {
    int32_t tok[LT * LNSEQ + 2];
    int n = LT * LNSEQ + 2; /* one spare token: the tail is dropped */
    for (int i = 0; i < n; i++) tok[i] = i;
    CHECK(ax_shard_write(at("loader.bin"), tok, n) == 0, "write: %s", ax_err_msg());
    ax_shardset *s = NULL;
    CHECK(ax_shards_open(&s, at("loader.bin"), 0) == 0, "open: %s", ax_err_msg());
    if (!s) return;

    ax_loader L, M;
    CHECK(ax_loader_init(&L, s, LT, 0, 1) == 0, "init: %s", ax_err_msg());
    CHECK(L.nseq == LNSEQ, "nseq %lld", (long long)L.nseq);
    int ident = 1;
    for (int64_t pos = 0; pos < 2 * LNSEQ; pos++) ident &= served(&L, pos) == pos % LNSEQ;
    CHECK(ident, "unshuffled order is not the identity");
    int32_t out[LT + 1];
    ax_loader_get(&L, 7, 0, out);
    CHECK(out[0] == 21 && out[LT] == 24, "sequence 7 = %d..%d", out[0], out[LT]);
    ax_loader_free(&L);

    int64_t e0[LNSEQ], e1[LNSEQ], f0[LNSEQ], g0[LNSEQ], ref[LNSEQ];
    CHECK(ax_loader_init(&L, s, LT, 1, 1234) == 0, "init: %s", ax_err_msg());
    order(&L, 0, e0);
    order(&L, 1, e1);
    CHECK(is_perm(e0, LNSEQ) && is_perm(e1, LNSEQ), "an epoch does not visit each sequence once");
    CHECK(memcmp(e0, e1, sizeof e0) != 0, "epochs 0 and 1 have the same order");
    ref_perm(1234, 1, LNSEQ, ref);
    CHECK(memcmp(e1, ref, sizeof e1) == 0, "epoch 1 differs from Fisher-Yates on stream 0x5EED0001");
    int ident0 = 1;
    for (int j = 0; j < LNSEQ; j++) ident0 &= e0[j] == j;
    CHECK(!ident0, "shuffled order is the identity");

    CHECK(ax_loader_init(&M, s, LT, 1, 1234) == 0, "init: %s", ax_err_msg());
    order(&M, 0, f0);
    CHECK(memcmp(e0, f0, sizeof e0) == 0, "same seed, different order");
    ax_loader_free(&M);
    CHECK(ax_loader_init(&M, s, LT, 1, 1235) == 0, "init: %s", ax_err_msg());
    order(&M, 0, g0);
    CHECK(memcmp(e0, g0, sizeof e0) != 0, "another seed, same order");
    ax_loader_free(&M);

    /* pos alone decides: jumping back across epochs gives what a fresh loader gives */
    CHECK(ax_loader_init(&M, s, LT, 1, 1234) == 0, "init: %s", ax_err_msg());
    int64_t at100 = served(&M, 100), at3 = served(&M, 3);
    CHECK(at3 == e0[3], "pos 3 after pos 100: %lld, fresh %lld", (long long)at3, (long long)e0[3]);
    ax_loader_free(&M);
    CHECK(ax_loader_init(&M, s, LT, 1, 1234) == 0, "init: %s", ax_err_msg());
    CHECK(served(&M, 100) == at100, "pos 100 differs between loaders");
    ax_loader_get(&M, 100, 0, out);
    int32_t direct[LT + 1];
    ax_shards_seq(s, LT, at100, 0, direct);
    CHECK(memcmp(out, direct, sizeof out) == 0, "loader output differs from ax_shards_seq");
    ax_loader_free(&M);
    ax_loader_free(&L);
    ax_shards_close(s);
}

/* Each bad input must fail with one message naming the input. */
static void expect_open_fails(const char *what, const char *pattern, int vocab, const char *needle) {
    ax_shardset *s = (ax_shardset *)&s; /* must be reset to NULL */
    ax_err_clear();
    int rc = ax_shards_open(&s, pattern, vocab);
    const char *m = ax_err_msg();
    CHECK(rc == -1, "%s: open succeeded", what);
    CHECK(s == NULL, "%s: set not NULL on failure", what);
    CHECK(strcmp(m, "unknown error") != 0 && strlen(m) > 0, "%s: empty message", what);
    CHECK(strstr(m, needle) != NULL, "%s: message '%s' lacks '%s'", what, m, needle);
    CHECK(strchr(m, '\n') == NULL, "%s: message spans lines", what);
    printf("  %s -> %s\n", what, m);
    if (rc == 0) ax_shards_close(s);
}

static void test_bad_input(void) {
    expect_open_fails("no match", at("nothing*.bin"), 0, "no file matches");
    expect_open_fails("missing path", at("absent.bin"), 0, "absent.bin");
    write_raw(at("short.bin"), AX_SHARD_MAGIC, 1, 0, 0);
    if (truncate(at("short.bin"), 10) != 0) perror("truncate");
    expect_open_fails("short header", at("short.bin"), 0, "short.bin");
    write_raw(at("magic.bin"), 12345, 1, 4, 8);
    expect_open_fails("bad magic", at("magic.bin"), 0, "12345");
    write_raw(at("version.bin"), AX_SHARD_MAGIC, 3, 4, 8);
    expect_open_fails("bad version", at("version.bin"), 0, "version 3");
    write_raw(at("trunc.bin"), AX_SHARD_MAGIC, 1, 100, 100);
    expect_open_fails("truncated", at("trunc.bin"), 0, "header says 100 tokens, file holds 50");
    write_raw(at("long.bin"), AX_SHARD_MAGIC, 7, 4, 20);
    expect_open_fails("trailing bytes", at("long.bin"), 0, "long.bin");
    write_raw(at("one.bin"), AX_SHARD_MAGIC, 1, 1, 2);
    expect_open_fails("one token", at("one.bin"), 0, "one.bin");
    expect_open_fails("directory", dir, 0, dir);

    int32_t tok[6] = {1, 2, 3, 50257, 4, 5};
    CHECK(ax_shard_write(at("vocab.bin"), tok, 6) == 0, "write: %s", ax_err_msg());
    expect_open_fails("token >= vocab", at("vocab.bin"), 50257, "position 3 is 50257");

    /* one bad file among good ones fails the whole set (and leaks nothing) */
    write_tagged("mix_0.bin", 0, 8);
    write_raw(at("mix_1.bin"), 999, 1, 4, 8);
    write_tagged("mix_2.bin", 2, 8);
    expect_open_fails("bad file in glob", at("mix_*.bin"), 0, "mix_1.bin");

    /* too few tokens for one sequence */
    write_tagged("few.bin", 0, 5);
    ax_shardset *s = NULL;
    CHECK(ax_shards_open(&s, at("few.bin"), 0) == 0, "open: %s", ax_err_msg());
    if (s) {
        ax_loader L;
        ax_err_clear();
        CHECK(ax_loader_init(&L, s, 8, 1, 1) == -1, "loader accepted 5 tokens for T=8");
        CHECK(strstr(ax_err_msg(), "fewer than one sequence") != NULL, "message: %s", ax_err_msg());
        printf("  too few tokens -> %s\n", ax_err_msg());
        ax_shards_close(s);
    }
    /* enough tokens in all, but no single file holds a sequence */
    write_tagged("split_0.bin", 0, 5);
    write_tagged("split_1.bin", 1, 5);
    CHECK(ax_shards_open(&s, at("split_*.bin"), 0) == 0, "open: %s", ax_err_msg());
    if (s) {
        ax_loader L;
        CHECK(ax_loader_init(&L, s, 6, 0, 1) == -1, "loader accepted sequences spanning files");
        printf("  sequence spans files -> %s\n", ax_err_msg());
        ax_shards_close(s);
    }
}

static void test_bad_write(void) {
    int32_t tok[4] = {1, 2, 3, 4};
    const char *p = at("no/such/dir/x.bin");
    ax_err_clear();
    CHECK(ax_shard_write(p, tok, 4) == -1, "write into a missing directory succeeded");
    CHECK(strstr(ax_err_msg(), "x.bin") != NULL, "message: %s", ax_err_msg());
    CHECK(file_size(p) < 0, "file left behind");
    printf("  missing directory -> %s\n", ax_err_msg());

    int32_t neg[4] = {1, 2, -5, 4};
    p = at("neg.bin");
    CHECK(ax_shard_write(p, neg, 4) == -1, "negative token accepted");
    CHECK(strstr(ax_err_msg(), "-5") != NULL, "message: %s", ax_err_msg());
    CHECK(file_size(p) < 0, "file left behind for negative token");
    printf("  negative token -> %s\n", ax_err_msg());
    CHECK(tmp_files_in_dir() == 0, "temporary files left behind");
}

static void cleanup(void) {
    glob_t g;
    char pat[128];
    snprintf(pat, sizeof pat, "%s/*", dir);
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
        globfree(&g);
    }
    rmdir(dir);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(dir, sizeof dir, "/tmp/ax_shards_%d_XXXXXX", rank);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    test_roundtrip_u16();
    test_roundtrip_u32();
    test_glob();
    test_loader();
    test_bad_input();
    test_bad_write();
    cleanup();
    int rc = ax_test_done("shards");
    MPI_Finalize();
    return rc;
}
