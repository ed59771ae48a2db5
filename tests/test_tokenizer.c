/* Byte-level BPE tokenizer: GPT-2 ids against tiktoken (tests/fixtures/tokenizer,
 * made by tests/ref/make_tokenizer_fixtures.py) in all three file forms,
 * byte-exact round trips including invalid UTF-8, loader errors, the trainer,
 * and encoding from several threads at once.
 *
 * The GPT-2 checks need gpt2.tiktoken ($AXONN_GPT2_TIKTOKEN or
 * tests/fixtures/tokenizer/gpt2.tiktoken, from scripts/fetch_gpt2_vocab.sh);
 * without it they print SKIP and the rest still runs.
 * With AXONN_TOK_DUMP=DIR the saved tokenizer.json files and their ids are
 * left in DIR for tests/ref/check_tokenizer_json.py. AXONN_TOK_BENCH=1 also
 * times training 8,192 merges on the fortunes corpus. */
#define _GNU_SOURCE
#include "test.h"
#include "texts.h"
#include "data/tokenizer.h"
#include "util/err.h"
#include "util/rng.h"
#include <glob.h>
#include <jansson.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[64];

static const char *at(const char *name) { return ax_t_join(dir, name); }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(s, f);
        fclose(f);
    }
}

/* ---- fixtures ---- */

static int load_texts(texts *t) {
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizer/texts.jsonl", ax_t_data());
    memset(t, 0, sizeof *t);
    return ax_t_load_texts(t, path);
}

static int same_ids(const ax_ids *a, json_t *ref) {
    if (!json_is_array(ref) || json_array_size(ref) != a->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (json_integer_value(json_array_get(ref, i)) != a->v[i]) return 0;
    return 1;
}

static int roundtrip(const ax_tokenizer *t, const char *s, size_t n, int allow_special) {
    ax_ids ids = {0};
    ax_bytes b = {0};
    int ok = ax_tok_encode(t, s, n, allow_special, &ids) == 0 && ax_tok_decode(t, ids.v, ids.n, &b) == 0 && b.n == n &&
             (n == 0 || memcmp(b.p, s, n) == 0);
    ax_ids_free(&ids);
    ax_bytes_free(&b);
    return ok;
}

/* The fixture's tiktoken ids, with and without special tokens, and decoding. */
static void check_fixture(const ax_tokenizer *t, const texts *tx, json_t *ref, const char *form) {
    json_t *ord = json_object_get(ref, "ordinary"), *spec = json_object_get(ref, "special");
    int bad = 0;
    for (int i = 0; i < tx->n; i++) {
        ax_ids a = {0}, b = {0};
        ax_tok_encode(t, tx->s[i], tx->len[i], 0, &a);
        ax_tok_encode(t, tx->s[i], tx->len[i], 1, &b);
        if (!same_ids(&a, json_array_get(ord, i)) || !same_ids(&b, json_array_get(spec, i))) {
            if (bad++ < 3) fprintf(stderr, "  %s: text %d differs from tiktoken: '%.60s'\n", form, i, tx->s[i]);
        }
        if (!roundtrip(t, tx->s[i], tx->len[i], 1) || !roundtrip(t, tx->s[i], tx->len[i], 0)) bad++;
        ax_ids_free(&a);
        ax_ids_free(&b);
    }
    CHECK(bad == 0, "%s: %d of %d texts differ from tiktoken or do not round-trip", form, bad, tx->n);
}

/* Random byte strings: raw bytes (mostly invalid UTF-8), valid characters of
 * several scripts, whitespace and special-token fragments, mixed. */
static size_t random_text(ax_rng *r, char *buf, size_t cap) {
    static const char *const frag[] = {" ",
                                       "  ",
                                       "\n",
                                       "\r\n",
                                       "\t",
                                       "'s",
                                       "'ll",
                                       "<|endoftext|>",
                                       "<|endo",
                                       "a",
                                       "Z",
                                       "9",
                                       "é",
                                       "ж",
                                       "中",
                                       "😀",
                                       "\xe2\x80\x8d",
                                       "\xc2\xa0",
                                       "!",
                                       ".",
                                       "\xff",
                                       "\xc3",
                                       "\xed\xa0\x80",
                                       "\xf4\x90\x80\x80",
                                       "\xe0\x80\x80",
                                       "\x80"};
    size_t n = 0, want = ax_rng_below(r, cap / 8);
    while (n < want) {
        if (ax_rng_below(r, 3) == 0) {
            buf[n++] = (char)ax_rng_below(r, 256);
            continue;
        }
        const char *f = frag[ax_rng_below(r, sizeof frag / sizeof *frag)];
        size_t k = strlen(f);
        memcpy(buf + n, f, k);
        n += k;
    }
    return n;
}

static void check_random_roundtrip(const ax_tokenizer *t, const char *form) {
    ax_rng r = {7, 11, 0};
    char buf[4096];
    int bad = 0;
    for (int i = 0; i < 2000; i++) {
        size_t n = random_text(&r, buf, sizeof buf);
        bad += !roundtrip(t, buf, n, (int)(i & 1));
    }
    CHECK(bad == 0, "%s: %d of 2000 random byte strings do not round-trip", form, bad);
}

/* Invalid bytes are tokens of their own, between the pieces around them. */
static void check_invalid_bytes(const ax_tokenizer *t, const char *form) {
    ax_ids all = {0}, part = {0};
    ax_tok_encode(t, "caf\xe9!", 5, 0, &all);
    ax_tok_encode(t, "caf", 3, 0, &part);
    ax_tok_encode(t, "\xe9", 1, 0, &part);
    ax_tok_encode(t, "!", 1, 0, &part);
    CHECK(all.n == part.n && memcmp(all.v, part.v, all.n * sizeof *all.v) == 0,
          "%s: 'caf\\xe9!' gives %zu ids, expected caf + \\xe9 + ! (%zu)", form, all.n, part.n);
    ax_ids_free(&all);
    ax_ids_free(&part);
}

/* Long runs: one piece of a million letters, spaces, digits or punctuation. */
static void check_long_runs(const ax_tokenizer *t, const char *form) {
    size_t n = 1 << 20;
    char *s = malloc(n);
    const char fill[] = "a 7!\n";
    for (int k = 0; fill[k]; k++) {
        memset(s, fill[k], n);
        double t0 = now();
        int ok = roundtrip(t, s, n, 0);
        CHECK(ok, "%s: a run of 1 MB of 0x%02x does not round-trip", form, fill[k]);
        if (now() - t0 > 5) printf("  %s: 1 MB run of 0x%02x took %.1f s\n", form, fill[k], now() - t0);
    }
    free(s);
}

/* ---- the corpus for timing: the fortunes files, if installed ---- */

static char *fortunes(size_t *len) {
    glob_t g;
    ax_bytes b = {0};
    *len = 0;
    if (glob("/usr/share/games/fortunes/*", 0, NULL, &g) != 0) return NULL;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *p = g.gl_pathv[i];
        size_t n = strlen(p);
        if ((n > 4 && !strcmp(p + n - 4, ".dat")) || (n > 3 && !strcmp(p + n - 3, ".u8"))) continue;
        FILE *f = fopen(p, "rb");
        if (!f) continue;
        char buf[65536];
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, f)) > 0) ax_bytes_append(&b, buf, k);
        fclose(f);
    }
    globfree(&g);
    *len = b.n;
    return b.p;
}

/* Records of the fortunes corpus (separated by lines "%"), as training documents. */
static int split_records(char *s, size_t n, char ***docs, size_t **lens) {
    int nd = 0;
    *docs = NULL;
    *lens = NULL;
    for (size_t i = 0; i < n;) {
        char *e = memmem(s + i, n - i, "\n%\n", 3);
        size_t end = e ? (size_t)(e - s) + 1 : n;
        *docs = realloc(*docs, (nd + 1) * sizeof **docs);
        *lens = realloc(*lens, (nd + 1) * sizeof **lens);
        (*docs)[nd] = s + i;
        (*lens)[nd] = end - i;
        nd++;
        i = e ? end + 2 : n;
    }
    return nd;
}

static void time_encode(const char *path) {
    size_t n;
    char *s = fortunes(&n);
    if (!s || n < 100000) {
        printf("encode throughput: no fortunes corpus, not timed\n");
        free(s);
        return;
    }
    ax_tokenizer *t = NULL;
    if (ax_tok_load(&t, path)) {
        free(s);
        return;
    }
    ax_ids ids = {0};
    double t0 = now();
    ax_tok_encode(t, s, n, 0, &ids);
    double cold = now() - t0;
    size_t ntok = ids.n;
    ids.n = 0;
    t0 = now();
    ax_tok_encode(t, s, n, 0, &ids);
    double warm = now() - t0;
    ax_bytes b = {0};
    t0 = now();
    ax_tok_decode(t, ids.v, ids.n, &b);
    double dec = now() - t0;
    CHECK(b.n == n && memcmp(b.p, s, n) == 0, "fortunes corpus does not round-trip");
    printf("encode throughput (GPT-2, one core): %.2f MB fortunes -> %zu tokens: %.1f MB/s with an empty word cache, "
           "%.1f MB/s warm; decode %.0f MB/s\n",
           n / 1e6, ntok, n / 1e6 / cold, n / 1e6 / warm, n / 1e6 / dec);
    ax_ids_free(&ids);
    ax_bytes_free(&b);
    ax_tok_free(t);
    free(s);
}

static void bench_train(void) {
    size_t n;
    char *s = fortunes(&n);
    if (!s) {
        printf("train bench: no fortunes corpus\n");
        return;
    }
    char **docs;
    size_t *lens;
    int nd = split_records(s, n, &docs, &lens);
    ax_tokenizer *t = NULL;
    double t0 = now();
    int rc = ax_tok_train(&t, (const char *const *)docs, lens, (size_t)nd, 256 + 8192 + 1);
    double dt = now() - t0;
    CHECK(rc == 0, "train on fortunes: %s", ax_err_msg());
    if (t)
        printf("train: 8192 merges on %.2f MB fortunes (%d records): %.2f s, vocabulary %d\n", n / 1e6, nd, dt,
               ax_tok_vocab_size(t));
    ax_tok_free(t);
    free(docs);
    free(lens);
    free(s);
}

/* ---- writing the other forms from a saved tokenizer.json ---- */

/* vocab.json + merges.txt in dir d, from tokenizer.json's model. */
static int write_vocab_merges(const char *json_path, const char *d) {
    json_error_t je;
    json_t *root = json_load_file(json_path, 0, &je);
    json_t *model = json_object_get(root, "model");
    char p[600];
    snprintf(p, sizeof p, "%s/vocab.json", d);
    int rc = json_dump_file(json_object_get(model, "vocab"), p, JSON_COMPACT);
    snprintf(p, sizeof p, "%s/merges.txt", d);
    FILE *f = fopen(p, "wb");
    if (!f) rc = -1;
    else {
        fputs("#version: 0.2\n", f);
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(model, "merges"), i, m) fprintf(f, "%s\n", json_string_value(m));
        fclose(f);
    }
    json_decref(root);
    return rc;
}

/* For tests/ref/check_tokenizer_json.py: each text and its ids, as JSON lines. */
static void dump_ids(const ax_tokenizer *t, const texts *tx, const char *json_src, const char *name) {
    const char *d = getenv("AXONN_TOK_DUMP");
    if (!d || !*d) return;
    char p[600];
    snprintf(p, sizeof p, "%s/%s.json", d, name);
    CHECK(ax_tok_save_json(t, p) == 0, "dump %s: %s", p, ax_err_msg());
    snprintf(p, sizeof p, "%s/%s_ids.jsonl", d, name);
    FILE *f = fopen(p, "wb");
    if (!f) return;
    for (int i = 0; i < tx->n; i++) {
        ax_ids ids = {0};
        ax_tok_encode(t, tx->s[i], tx->len[i], 1, &ids);
        json_t *a = json_array();
        for (size_t k = 0; k < ids.n; k++) json_array_append_new(a, json_integer(ids.v[k]));
        json_t *o = json_pack("{s:s%, s:o}", "text", tx->s[i], tx->len[i], "ids", a);
        char *line = json_dumps(o, JSON_COMPACT);
        fprintf(f, "%s\n", line);
        free(line);
        json_decref(o);
        ax_ids_free(&ids);
    }
    fclose(f);
    printf("wrote %s/%s.json and %s_ids.jsonl (from %s)\n", d, name, name, json_src);
}

/* ---- GPT-2 ---- */

static const char *gpt2_path(void) {
    static char p[512];
    const char *e = getenv("AXONN_GPT2_TIKTOKEN");
    if (e && *e) snprintf(p, sizeof p, "%s", e);
    else snprintf(p, sizeof p, "%s/tokenizer/gpt2.tiktoken", ax_t_data());
    return access(p, R_OK) == 0 ? p : NULL;
}

static void test_gpt2(const texts *tx) {
    const char *path = gpt2_path();
    if (!path) {
        printf("SKIP gpt2: no gpt2.tiktoken (run scripts/fetch_gpt2_vocab.sh or set AXONN_GPT2_TIKTOKEN)\n");
        return;
    }
    char ref_path[512];
    snprintf(ref_path, sizeof ref_path, "%s/tokenizer/ids.json", ax_t_data());
    json_error_t je;
    json_t *ref = json_load_file(ref_path, 0, &je);
    CHECK(ref != NULL, "%s: %s", ref_path, je.text);
    if (!ref) return;

    ax_tokenizer *tk = NULL, *tj = NULL, *tv = NULL;
    CHECK(ax_tok_load(&tk, path) == 0, "load %s: %s", path, ax_err_msg());
    if (!tk) {
        json_decref(ref);
        return;
    }
    CHECK(ax_tok_vocab_size(tk) == 50257 && ax_tok_eot(tk) == 50256, "tiktoken: vocabulary %d, eot %d",
          ax_tok_vocab_size(tk), ax_tok_eot(tk));
    check_fixture(tk, tx, ref, "tiktoken");

    CHECK(ax_tok_save_json(tk, at("gpt2.json")) == 0, "save: %s", ax_err_msg());
    CHECK(ax_tok_load(&tj, at("gpt2.json")) == 0, "load saved tokenizer.json: %s", ax_err_msg());
    if (tj) {
        CHECK(ax_tok_vocab_size(tj) == 50257 && ax_tok_eot(tj) == 50256, "tokenizer.json: vocabulary %d, eot %d",
              ax_tok_vocab_size(tj), ax_tok_eot(tj));
        check_fixture(tj, tx, ref, "tokenizer.json");
    }
    char sub[600];
    snprintf(sub, sizeof sub, "%s/gpt2", dir);
    mkdir(sub, 0755);
    CHECK(write_vocab_merges(at("gpt2.json"), sub) == 0, "writing vocab.json/merges.txt");
    CHECK(ax_tok_load(&tv, at("gpt2/vocab.json")) == 0, "load vocab.json: %s", ax_err_msg());
    if (tv) {
        CHECK(ax_tok_vocab_size(tv) == 50257 && ax_tok_eot(tv) == 50256, "vocab.json: vocabulary %d, eot %d",
              ax_tok_vocab_size(tv), ax_tok_eot(tv));
        check_fixture(tv, tx, ref, "vocab.json+merges.txt");
        check_random_roundtrip(tv, "gpt2 vocab.json");
    }
    check_random_roundtrip(tk, "gpt2 tiktoken");
    check_invalid_bytes(tk, "gpt2");
    check_long_runs(tk, "gpt2");
    ax_bytes b = {0};
    int32_t bad[2] = {464, 50257};
    CHECK(ax_tok_decode(tk, bad, 2, &b) != 0 && strstr(ax_err_msg(), "50257"), "decode of id 50257 must fail");
    ax_bytes_free(&b);
    dump_ids(tk, tx, path, "gpt2");
    time_encode(path);
    ax_tok_free(tk);
    ax_tok_free(tj);
    ax_tok_free(tv);
    json_decref(ref);
}

/* ---- loader errors ---- */

/* Loading path fails with a message naming `named` (path itself when NULL) and containing want. */
static void expect_fail_at(const char *path, const char *named, const char *want, const char *what) {
    ax_tokenizer *t = (ax_tokenizer *)1;
    ax_err_clear();
    int rc = ax_tok_load(&t, path);
    const char *m = ax_err_msg();
    if (!named) named = path;
    CHECK(rc != 0 && t == NULL && strstr(m, named) && strstr(m, want) && !strchr(m, '\n'),
          "%s: expected one line naming %s and '%s', got '%s'", what, named, want, rc ? m : "success");
    if (rc == 0) ax_tok_free(t);
    if (rc) printf("  error, as expected: %s\n", m);
}
static void expect_fail(const char *path, const char *want, const char *what) {
    expect_fail_at(path, NULL, want, what);
}

/* A valid 256-byte vocabulary (from a tokenizer trained here) for the
 * vocab.json + merges.txt cases. */
static void test_bad_files(const char *trained_json) {
    char bytes_json[600];
    snprintf(bytes_json, sizeof bytes_json, "%s", trained_json); /* at() reuses its buffers */
    expect_fail(at("missing.json"), "cannot open", "missing file");
    write_file(at("trunc.json"), "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0,");
    expect_fail(at("trunc.json"), "malformed JSON", "truncated JSON");
    write_file(at("wp.json"), "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}");
    expect_fail(at("wp.json"), "WordPiece", "WordPiece model");
    write_file(at("uni.json"), "{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}}");
    expect_fail(at("uni.json"), "Unigram", "Unigram model");
    write_file(at("b64.tiktoken"), "IQ== 0\nIg 1\n");
    expect_fail(at("b64.tiktoken"), "b64.tiktoken:2: invalid base64", "truncated base64");
    write_file(at("rank.tiktoken"), "IQ== 0\nIg== x\n");
    expect_fail(at("rank.tiktoken"), "rank.tiktoken:2: expected", "bad rank");
    write_file(at("few.tiktoken"), "IQ== 0\nIg== 1\n");
    expect_fail(at("few.tiktoken"), "no token for byte", "rank file without all bytes");

    json_error_t je;
    json_t *root = json_load_file(bytes_json, 0, &je);
    json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
    CHECK(vocab != NULL, "trained tokenizer.json has no model.vocab");
    if (!vocab) {
        json_decref(root);
        return;
    }
    char sub[600];
    snprintf(sub, sizeof sub, "%s/vm", dir);
    mkdir(sub, 0755);
    json_dump_file(vocab, at("vm/vocab.json"), JSON_COMPACT);
    expect_fail(at("vm/vocab.json"), "merges.txt", "vocab.json without merges.txt");
    write_file(at("vm/merges.txt"), "#version: 0.2\na b\nab\n");
    expect_fail(at("vm/merges.txt"), "expected '<base64", "merges.txt given as the tokenizer");
    expect_fail_at(at("vm/vocab.json"), at("vm/merges.txt:3"), "expected two tokens", "merges line with one token");
    write_file(at("vm/merges.txt"), "q \xc4\xa4\xc4\xa4\n");
    expect_fail_at(at("vm/vocab.json"), at("vm/merges.txt:1"), "unknown token", "merge of an unknown token");
    write_file(at("vm/merges.txt"), "a b\n");
    ax_tokenizer *t = NULL;
    int rc = ax_tok_load(&t, at("vm/vocab.json"));
    /* "ab" is not necessarily a token of the trained vocabulary */
    CHECK(rc == 0 || strstr(ax_err_msg(), "not in the vocabulary"), "merges 'a b': %s", ax_err_msg());
    ax_tok_free(t);

    json_object_set_new(root, "pre_tokenizer", json_pack("{s:s, s:s}", "type", "Metaspace", "replacement", "_"));
    json_dump_file(root, at("meta.json"), 0);
    expect_fail(at("meta.json"), "pre_tokenizer", "Metaspace pre-tokenizer");
    json_decref(root);
}

/* ---- training ---- */

static ax_tokenizer *train_docs(const char *const *docs, int n, int vocab) {
    size_t lens[64];
    for (int i = 0; i < n; i++) lens[i] = strlen(docs[i]);
    ax_tokenizer *t = NULL;
    CHECK(ax_tok_train(&t, docs, lens, (size_t)n, vocab) == 0, "train: %s", ax_err_msg());
    return t;
}

static int encodes_to(const ax_tokenizer *t, const char *s, const int32_t *want, size_t n) {
    ax_ids ids = {0};
    ax_tok_encode(t, s, strlen(s), 0, &ids);
    int ok = ids.n == n && memcmp(ids.v, want, n * sizeof *want) == 0;
    ax_ids_free(&ids);
    return ok;
}

/* Ties go to the lowest pair of ids; counts come first; ids 0-255 are
 * GPT-2's byte order ('a' is 64); training stops when no pair is left. */
static void test_train_rules(void) {
    const char *abcd[] = {"abcd"};
    ax_tokenizer *t = train_docs(abcd, 1, 256 + 3 + 1);
    if (t) {
        CHECK(ax_tok_vocab_size(t) == 260 && ax_tok_eot(t) == 259, "abcd: vocabulary %d eot %d", ax_tok_vocab_size(t),
              ax_tok_eot(t));
        CHECK(encodes_to(t, "a", (int32_t[]){64}, 1), "'a' is not id 64 (GPT-2 byte order)");
        CHECK(encodes_to(t, "ab", (int32_t[]){256}, 1), "first merge is not a+b (lowest ids on a tie)");
        CHECK(encodes_to(t, "cd", (int32_t[]){257}, 1), "second merge is not c+d (66,67) < (256,66)");
        CHECK(encodes_to(t, "abcd", (int32_t[]){258}, 1), "third merge is not ab+cd");
        ax_ids ids = {0};
        ax_tok_encode(t, "<|endoftext|>", 13, 1, &ids);
        CHECK(ids.n == 1 && ids.v[0] == 259, "<|endoftext|> with specials is not id 259");
        ax_ids_free(&ids);
        ax_tok_free(t);
    }
    const char *freq[] = {"xyxyxy ab"};
    t = train_docs(freq, 1, 258);
    if (t) {
        CHECK(encodes_to(t, "xy", (int32_t[]){256}, 1), "the most frequent pair x+y is not merged first");
        ax_tok_free(t);
    }
    const char *tiny[] = {"ab"};
    t = train_docs(tiny, 1, 1000);
    if (t) {
        CHECK(ax_tok_vocab_size(t) == 258 && ax_tok_eot(t) == 257, "exhausted corpus: vocabulary %d eot %d",
              ax_tok_vocab_size(t), ax_tok_eot(t));
        ax_tok_free(t);
    }
    ax_tokenizer *u = (ax_tokenizer *)1;
    size_t l = 1;
    const char *one = "a";
    CHECK(ax_tok_train(&u, &one, &l, 1, 100) != 0 && u == NULL && strstr(ax_err_msg(), "257"),
          "vocabulary 100 must fail");
}

static int same_encoding(const ax_tokenizer *a, const ax_tokenizer *b, const texts *tx) {
    int same = 1;
    for (int i = 0; i < tx->n && same; i++) {
        ax_ids x = {0}, y = {0};
        ax_tok_encode(a, tx->s[i], tx->len[i], 1, &x);
        ax_tok_encode(b, tx->s[i], tx->len[i], 1, &y);
        same = x.n == y.n && (x.n == 0 || memcmp(x.v, y.v, x.n * sizeof *x.v) == 0);
        ax_ids_free(&x);
        ax_ids_free(&y);
    }
    return same;
}

static int same_file(const char *p, const char *q) {
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    FILE *f = fopen(p, "rb"), *g = fopen(q, "rb");
    int same = 0;
    if (f && g) {
        fseek(f, 0, SEEK_END);
        na = (size_t)ftell(f);
        rewind(f);
        fseek(g, 0, SEEK_END);
        nb = (size_t)ftell(g);
        rewind(g);
        a = malloc(na + 1);
        b = malloc(nb + 1);
        same = na == nb && fread(a, 1, na, f) == na && fread(b, 1, nb, g) == nb && memcmp(a, b, na) == 0;
    }
    if (f) fclose(f);
    if (g) fclose(g);
    free(a);
    free(b);
    return same;
}

/* Other spellings of the same tokenizer.json that `tokenizers` writes: merges
 * as [a, b] pairs (0.20 and later), the ByteLevel pre-tokenizer inside a
 * Sequence, or a Split on the GPT-2 pattern followed by ByteLevel without regex. */
static void check_json_variants(const ax_tokenizer *ref, const char *saved, const texts *tx) {
    json_error_t je;
    json_t *root = json_load_file(saved, 0, &je);
    json_t *merges = json_object_get(json_object_get(root, "model"), "merges");
    json_t *pairs = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(merges, i, m) {
        const char *s = json_string_value(m), *sp = strchr(s, ' ');
        json_array_append_new(pairs, json_pack("[s%, s]", s, (size_t)(sp - s), sp + 1));
    }
    json_object_set_new(json_object_get(root, "model"), "merges", pairs);
    json_t *bl = json_deep_copy(json_object_get(root, "pre_tokenizer"));
    json_t *bl_noregex = json_deep_copy(bl);
    json_object_set_new(bl_noregex, "use_regex", json_false());
    json_t *split = json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern", "Regex",
                              "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
                              "behavior", "Isolated", "invert", 0);
    json_t *pre[2] = {json_pack("{s:s, s:[o]}", "type", "Sequence", "pretokenizers", bl),
                      json_pack("{s:s, s:[o, o]}", "type", "Sequence", "pretokenizers", split, bl_noregex)};
    const char *name[2] = {"pairs + Sequence[ByteLevel]", "pairs + Sequence[Split, ByteLevel]"};
    for (int k = 0; k < 2; k++) {
        json_object_set_new(root, "pre_tokenizer", pre[k]);
        json_dump_file(root, at("variant.json"), JSON_INDENT(1));
        ax_tokenizer *t = NULL;
        CHECK(ax_tok_load(&t, at("variant.json")) == 0, "%s: %s", name[k], ax_err_msg());
        if (t) CHECK(same_encoding(ref, t, tx), "%s: encodes differently", name[k]);
        ax_tok_free(t);
    }
    json_decref(root);
}

static void test_train(const texts *tx) {
    enum { V = 300 };
    ax_tokenizer *t1 = NULL, *t2 = NULL, *tj = NULL, *tv = NULL;
    CHECK(ax_tok_train(&t1, (const char *const *)tx->s, tx->len, (size_t)tx->n, V) == 0, "train: %s", ax_err_msg());
    CHECK(ax_tok_train(&t2, (const char *const *)tx->s, tx->len, (size_t)tx->n, V) == 0, "train: %s", ax_err_msg());
    if (!t1 || !t2) {
        ax_tok_free(t1);
        ax_tok_free(t2);
        return;
    }
    CHECK(ax_tok_vocab_size(t1) == V && ax_tok_eot(t1) == V - 1, "trained: vocabulary %d, eot %d",
          ax_tok_vocab_size(t1), ax_tok_eot(t1));
    CHECK(ax_tok_save_json(t1, at("train1.json")) == 0 && ax_tok_save_json(t2, at("train2.json")) == 0, "save: %s",
          ax_err_msg());
    CHECK(same_file(at("train1.json"), at("train2.json")), "two trainings on the same texts differ");
    int bad = 0;
    for (int i = 0; i < tx->n; i++) bad += !roundtrip(t1, tx->s[i], tx->len[i], 1);
    CHECK(bad == 0, "trained: %d texts do not round-trip", bad);
    check_random_roundtrip(t1, "trained");
    check_invalid_bytes(t1, "trained");

    CHECK(ax_tok_load(&tj, at("train1.json")) == 0, "reload trained tokenizer.json: %s", ax_err_msg());
    if (tj) {
        CHECK(ax_tok_vocab_size(tj) == V && ax_tok_eot(tj) == V - 1, "reloaded: vocabulary %d", ax_tok_vocab_size(tj));
        CHECK(same_encoding(t1, tj, tx), "reloaded tokenizer.json encodes differently");
    }
    check_json_variants(t1, at("train1.json"), tx);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/trained", dir);
    mkdir(sub, 0755);
    CHECK(write_vocab_merges(at("train1.json"), sub) == 0, "writing vocab.json/merges.txt");
    CHECK(ax_tok_load(&tv, at("trained/vocab.json")) == 0, "load trained vocab.json: %s", ax_err_msg());
    if (tv) CHECK(same_encoding(t1, tv, tx), "trained vocab.json+merges.txt encodes differently");
    dump_ids(t1, tx, "texts.jsonl", "trained");
    test_bad_files(at("train1.json"));
    ax_tok_free(t1);
    ax_tok_free(t2);
    ax_tok_free(tj);
    ax_tok_free(tv);
}

/* ---- threads ---- */

typedef struct {
    const ax_tokenizer *t;
    const texts *tx;
    ax_ids *out;
} thread_job;

static void *encode_all(void *p) {
    thread_job *j = p;
    for (int rep = 0; rep < 20; rep++)
        for (int i = 0; i < j->tx->n; i++) {
            j->out[i].n = 0;
            ax_tok_encode(j->t, j->tx->s[i], j->tx->len[i], 1, &j->out[i]);
        }
    return NULL;
}

/* Each thread has its own word cache: results must equal the serial ones. */
static void test_threads(const texts *tx) {
    const char *path = gpt2_path();
    ax_tokenizer *t = NULL;
    if (path) ax_tok_load(&t, path);
    else ax_tok_train(&t, (const char *const *)tx->s, tx->len, (size_t)tx->n, 400);
    if (!t) return;
    enum { NT = 4 };
    ax_ids *out[NT + 1];
    pthread_t th[NT];
    thread_job job[NT + 1];
    for (int k = 0; k <= NT; k++) {
        out[k] = calloc((size_t)tx->n, sizeof **out);
        job[k] = (thread_job){t, tx, out[k]};
    }
    encode_all(&job[NT]);
    for (int k = 0; k < NT; k++) pthread_create(&th[k], NULL, encode_all, &job[k]);
    for (int k = 0; k < NT; k++) pthread_join(th[k], NULL);
    int bad = 0;
    for (int k = 0; k < NT; k++)
        for (int i = 0; i < tx->n; i++)
            bad += out[k][i].n != out[NT][i].n ||
                   (out[k][i].n && memcmp(out[k][i].v, out[NT][i].v, out[k][i].n * sizeof(int32_t)) != 0);
    CHECK(bad == 0, "threads: %d encodings differ from the serial ones", bad);
    for (int k = 0; k <= NT; k++) {
        for (int i = 0; i < tx->n; i++) ax_ids_free(&out[k][i]);
        free(out[k]);
    }
    ax_tok_free(t);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    snprintf(dir, sizeof dir, "/tmp/ax_tok_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    texts tx = {0};
    CHECK(load_texts(&tx) == 0 && tx.n > 50, "cannot read %s/tokenizer/texts.jsonl", ax_t_data());
    if (tx.n > 0) {
        test_gpt2(&tx);
        test_train_rules();
        test_train(&tx);
        test_threads(&tx);
        if (getenv("AXONN_TOK_BENCH")) bench_train();
    }
    for (int i = 0; i < tx.n; i++) free(tx.s[i]);
    free(tx.s);
    free(tx.len);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    int rc = ax_test_done("tokenizer");
    MPI_Finalize();
    return rc;
}
