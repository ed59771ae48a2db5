/* Hugging Face tokenizer.json of Llama-3 style against `tokenizers`: the
 * fixture tests/fixtures/llama3 (tests/ref/make_llama3_fixtures.py) holds a
 * small byte-level BPE with Llama-3's pattern, special tokens and a BOS
 * template, and the ids `tokenizers` gives the texts of
 * tests/fixtures/tokenizer/texts.jsonl and llama3/texts.jsonl: with special
 * tokens matched, as ordinary text, and with the template. Also decoding,
 * merges written "a b", the file as saved again, a model directory, the
 * Oniguruma-to-PCRE2 pattern translation, and loader errors.
 * With AXONN_TOK_DUMP=DIR the saved file and its ids are left in DIR for
 * tests/ref/check_tokenizer_json.py. */
#define _GNU_SOURCE
#include "test.h"
#include "texts.h"
#include "data/tokenizer.h"
#include "data/tokenizer_impl.h" /* ax_tk_pieces, to see the pieces */
#include "util/err.h"
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static const char *at(const char *name) { return ax_t_join(dir, name); }

static const char *fixture(const char *name) { return ax_t_join(ax_t_data(), name); }

static void load_texts(texts *t, const char *path) { CHECK(ax_t_load_texts(t, path) == 0, "cannot read %s", path); }

static int same_ids(const ax_ids *a, const int32_t *pre, size_t npre, json_t *ref) {
    if (!json_is_array(ref) || json_array_size(ref) + npre != a->n) return 0;
    for (size_t i = 0; i < npre; i++)
        if (a->v[i] != pre[i]) return 0;
    for (size_t i = npre; i < a->n; i++)
        if (json_integer_value(json_array_get(ref, i - npre)) != a->v[i]) return 0;
    return 1;
}

static int decodes_to(const ax_tokenizer *t, const ax_ids *ids, const char *s, size_t n) {
    ax_bytes b = {0};
    int ok = ax_tok_decode(t, ids->v, ids->n, &b) == 0 && b.n == n && (n == 0 || memcmp(b.p, s, n) == 0);
    ax_bytes_free(&b);
    return ok;
}

/* Every text three ways against `tokenizers`, and decoded back; returns the
 * number of ids compared. */
static long check_against(const ax_tokenizer *t, const texts *tx, json_t *ref, const char *form) {
    json_t *spec = json_object_get(ref, "special"), *ord = json_object_get(ref, "ordinary");
    int32_t bos = (int32_t)json_integer_value(json_object_get(ref, "bos"));
    int bad = 0, badec = 0;
    long n = 0;
    for (int i = 0; i < tx->n; i++) {
        ax_ids a = {0}, b = {0}, c = {0};
        ax_tok_encode(t, tx->s[i], tx->len[i], AX_TOK_SPECIAL, &a);
        ax_tok_encode(t, tx->s[i], tx->len[i], 0, &b);
        ax_tok_encode(t, tx->s[i], tx->len[i], AX_TOK_SPECIAL | AX_TOK_TEMPLATE, &c);
        int ok = same_ids(&a, NULL, 0, json_array_get(spec, i)) && same_ids(&b, NULL, 0, json_array_get(ord, i)) &&
                 same_ids(&c, &bos, 1, json_array_get(spec, i));
        if (!ok && bad++ < 3) {
            fprintf(stderr, "  %s: text %d differs from tokenizers: '%.60s'\n   C:", form, i, tx->s[i]);
            for (size_t k = 0; k < a.n && k < 16; k++) fprintf(stderr, " %d", a.v[k]);
            fprintf(stderr, "\n  HF:");
            for (size_t k = 0; k < json_array_size(json_array_get(spec, i)) && k < 16; k++)
                fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(json_array_get(spec, i), k)));
            fprintf(stderr, "\n");
        }
        badec += !decodes_to(t, &a, tx->s[i], tx->len[i]) || !decodes_to(t, &b, tx->s[i], tx->len[i]);
        n += (long)(a.n + b.n + c.n);
        ax_ids_free(&a);
        ax_ids_free(&b);
        ax_ids_free(&c);
    }
    CHECK(bad == 0, "%s: %d of %d texts differ from tokenizers", form, bad, tx->n);
    CHECK(badec == 0, "%s: %d of %d texts do not decode back", form, badec, tx->n);
    return n;
}

static int same_encoding(const ax_tokenizer *a, const ax_tokenizer *b, const texts *tx) {
    int same = 1;
    for (int i = 0; i < tx->n && same; i++) {
        ax_ids x = {0}, y = {0};
        ax_tok_encode(a, tx->s[i], tx->len[i], AX_TOK_SPECIAL | AX_TOK_TEMPLATE, &x);
        ax_tok_encode(b, tx->s[i], tx->len[i], AX_TOK_SPECIAL | AX_TOK_TEMPLATE, &y);
        same = x.n == y.n && (x.n == 0 || memcmp(x.v, y.v, x.n * sizeof *x.v) == 0);
        ax_ids_free(&x);
        ax_ids_free(&y);
    }
    return same;
}

static void dump_ids(const ax_tokenizer *t, const texts *tx, const char *saved) {
    const char *d = getenv("AXONN_TOK_DUMP");
    if (!d || !*d) return;
    mkdir(d, 0755);
    char path[600];
    snprintf(path, sizeof path, "%s/llama3.json", d);
    ax_tok_save_json(t, path);
    snprintf(path, sizeof path, "%s/llama3_ids.jsonl", d);
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (int i = 0; i < tx->n; i++) {
        ax_ids ids = {0};
        ax_tok_encode(t, tx->s[i], tx->len[i], AX_TOK_SPECIAL | AX_TOK_TEMPLATE, &ids);
        json_t *a = json_array();
        for (size_t k = 0; k < ids.n; k++) json_array_append_new(a, json_integer(ids.v[k]));
        json_t *o = json_pack("{s:s%, s:o}", "text", tx->s[i], tx->len[i], "ids", a);
        char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
        fprintf(f, "%s\n", line);
        free(line);
        json_decref(o);
        ax_ids_free(&ids);
    }
    fclose(f);
    printf("wrote %s/llama3.json and llama3_ids.jsonl (saved from %s)\n", d, saved);
}

/* The fixture with its merges as "a b" strings, as older `tokenizers` write. */
static void write_string_merges(const char *src, const char *dst) {
    json_t *root = json_load_file(src, 0, NULL);
    json_t *merges = json_object_get(json_object_get(root, "model"), "merges"), *m, *str = json_array();
    size_t i;
    json_array_foreach(merges, i, m) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s %s", json_string_value(json_array_get(m, 0)),
                 json_string_value(json_array_get(m, 1)));
        json_array_append_new(str, json_string(buf));
    }
    json_object_set_new(json_object_get(root, "model"), "merges", str);
    json_dump_file(root, dst, JSON_COMPACT);
    json_decref(root);
}

static void test_llama3(const texts *tx, json_t *ref) {
    const char *path = fixture("llama3/tokenizer.json");
    ax_tokenizer *t = NULL, *ts = NULL, *tr = NULL, *td = NULL;
    CHECK(ax_tok_load(&t, path) == 0, "load %s: %s", path, ax_err_msg());
    if (!t) return;
    int V = (int)json_integer_value(json_object_get(ref, "vocab_size"));
    int bos = (int)json_integer_value(json_object_get(ref, "bos"));
    json_t *sp = json_object_get(ref, "specials");
    CHECK(ax_tok_vocab_size(t) == V && ax_tok_bos(t) == bos, "vocabulary %d (want %d), bos %d (want %d)",
          ax_tok_vocab_size(t), V, ax_tok_bos(t), bos);
    CHECK(ax_tok_eos(t) == json_integer_value(json_object_get(sp, "<|end_of_text|>")) && ax_tok_eot(t) == -1,
          "eos %d, eot %d", ax_tok_eos(t), ax_tok_eot(t));
    const char *name;
    json_t *v;
    int badsp = 0;
    json_object_foreach(sp, name, v) badsp += ax_tok_special_id(t, name) != json_integer_value(v);
    CHECK(badsp == 0 && ax_tok_special_id(t, "<|nope|>") == -1, "%d special tokens looked up wrong", badsp);

    long n = check_against(t, tx, ref, "llama3 tokenizer.json");
    printf("llama3: %d texts, %ld ids equal to tokenizers %s (special, ordinary, template)\n", tx->n, n,
           json_string_value(json_object_get(ref, "tokenizers")));

    write_string_merges(path, at("strings.json"));
    CHECK(ax_tok_load(&ts, at("strings.json")) == 0, "merges as strings: %s", ax_err_msg());
    if (ts) CHECK(same_encoding(t, ts, tx), "merges as strings: encodes differently");

    CHECK(ax_tok_save_json(t, at("saved.json")) == 0, "save: %s", ax_err_msg());
    CHECK(ax_tok_load(&tr, at("saved.json")) == 0, "reload saved: %s", ax_err_msg());
    if (tr) {
        CHECK(ax_tok_bos(tr) == bos && ax_tok_vocab_size(tr) == V, "saved: bos %d, vocabulary %d", ax_tok_bos(tr),
              ax_tok_vocab_size(tr));
        check_against(tr, tx, ref, "saved llama3 tokenizer.json");
    }
    dump_ids(t, tx, path);

    char model_dir[600];
    snprintf(model_dir, sizeof model_dir, "%s/model", dir);
    mkdir(model_dir, 0755);
    char abs[4096];
    if (realpath(path, abs) && symlink(abs, at("model/tokenizer.json")) == 0) {
        CHECK(ax_tok_load(&td, model_dir) == 0, "load a model directory: %s", ax_err_msg());
        if (td) CHECK(same_encoding(t, td, tx), "model directory: encodes differently");
    }
    ax_tok_free(t);
    ax_tok_free(ts);
    ax_tok_free(tr);
    ax_tok_free(td);
}

/* ---- patterns: Oniguruma's shorthands as PCRE2 reads them ---- */

/* A tokenizer.json of the fixture with another pre_tokenizer. */
static int load_with_pre(json_t *pre, ax_tokenizer **t) {
    json_t *root = json_load_file(fixture("llama3/tokenizer.json"), 0, NULL);
    json_object_set_new(root, "pre_tokenizer", pre);
    json_dump_file(root, at("pre.json"), JSON_COMPACT);
    json_decref(root);
    ax_err_clear();
    return ax_tok_load(t, at("pre.json"));
}

static json_t *split_then_bytelevel(const char *re, int use_regex) {
    return json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b, s:b}]}", "type", "Sequence", "pretokenizers",
                     "type", "Split", "pattern", "Regex", re, "behavior", "Isolated", "invert", 0, "type", "ByteLevel",
                     "add_prefix_space", 0, "trim_offsets", 1, "use_regex", use_regex);
}

typedef struct {
    const char *const *want;
    int n, k, ok;
} piece_check;

static void piece_cb(void *ctx, const char *p, size_t n, int32_t special) {
    piece_check *c = ctx;
    if (c->k >= c->n || strlen(c->want[c->k]) != n || memcmp(c->want[c->k], p, n) != 0) c->ok = 0;
    c->k++;
}

/* The pre-tokeniser cuts s into exactly these pieces. */
static int pieces_are(const ax_tokenizer *t, const char *s, const char *const *pieces, int n) {
    piece_check c = {pieces, n, 0, 1};
    ax_tk_pieces(t, s, strlen(s), 0, piece_cb, &c);
    return c.ok && c.k == n;
}

static void test_patterns(void) {
    ax_tokenizer *t = NULL;
    /* Llama-3's own pattern, from the fixture */
    CHECK(ax_tok_load(&t, fixture("llama3/tokenizer.json")) == 0, "load: %s", ax_err_msg());
    if (t) {
        const char *d[] = {"x", " ", "123", "456", "7", " ", "89"};
        CHECK(pieces_are(t, "x 1234567 89", d, 7), "digits in groups of up to 3, the space apart");
        const char *c[] = {"I", "'M", " WE", "'RE", " it", "'Ll"};
        CHECK(pieces_are(t, "I'M WE'RE it'Ll", c, 6), "contractions in any case");
        const char *n[] = {"end", ".\n\n", "next", "  \n", "a"};
        CHECK(pieces_are(t, "end.\n\nnext  \na", n, 5), "newlines after punctuation and after spaces");
        ax_tok_free(t);
        t = NULL;
    }
    /* \d is Nd (not ½), \w takes marks; split on whitespace only: words whole */
    CHECK(load_with_pre(split_then_bytelevel("\\d+|\\w+|\\s+|[^\\s\\w]+", 0), &t) == 0, "\\d\\w\\s pattern: %s",
          ax_err_msg());
    if (t) {
        const char *p1[] = {"e\xcc\x81t\xc3\xa9", " ", "42", "\xc2\xbd"};
        CHECK(pieces_are(t, "e\xcc\x81t\xc3\xa9 42\xc2\xbd", p1, 4), "\\w with a combining mark, \\d without U+00BD");
        ax_tok_free(t);
        t = NULL;
    }
    CHECK(load_with_pre(split_then_bytelevel("[^\\s]+|\\s+", 0), &t) == 0, "[^\\s] pattern: %s", ax_err_msg());
    if (t) {
        const char *p2[] = {"a\xe2\x80\x8b"
                            "b",
                            "\xe2\x80\x83", "c"}; /* U+200B is not White_Space, U+2003 is */
        CHECK(pieces_are(t,
                         "a\xe2\x80\x8b"
                         "b\xe2\x80\x83"
                         "c",
                         p2, 3),
              "\\s is White_Space");
        ax_tok_free(t);
        t = NULL;
    }
    /* Split then ByteLevel with its own regex: two steps, the second on the first's pieces */
    CHECK(load_with_pre(split_then_bytelevel("\\p{N}{1,3}", 1), &t) == 0, "two steps: %s", ax_err_msg());
    if (t) {
        const char *p3[] = {"ab", "123", "4", " x"}; /* " x" is one GPT-2 piece */
        CHECK(pieces_are(t, "ab1234 x", p3, 4), "Split then GPT-2's regex");
        ax_tok_free(t);
        t = NULL;
    }
}

/* ---- loader errors ---- */

static void expect_fail(json_t *root_patch_key_val, const char *key, const char *want, const char *what) {
    json_t *root = json_load_file(fixture("llama3/tokenizer.json"), 0, NULL);
    json_object_set_new(root, key, root_patch_key_val);
    json_dump_file(root, at("bad.json"), JSON_COMPACT);
    json_decref(root);
    ax_tokenizer *t = (ax_tokenizer *)1;
    ax_err_clear();
    int rc = ax_tok_load(&t, at("bad.json"));
    const char *m = ax_err_msg();
    CHECK(rc != 0 && t == NULL && strstr(m, at("bad.json")) && strstr(m, want) && !strchr(m, '\n'),
          "%s: expected one line naming the file and '%s', got '%s'", what, want, rc ? m : "success");
    if (rc == 0) ax_tok_free(t);
    else printf("  error, as expected: %s\n", m);
}

static void test_bad_files(void) {
    expect_fail(split_then_bytelevel("\\h+", 0), "pre_tokenizer", "\\h is not supported", "\\h in a pattern");
    expect_fail(split_then_bytelevel("[^\\S]", 0), "pre_tokenizer", "\\S inside [...]", "\\S in a class");
    expect_fail(split_then_bytelevel("[a-z&&[^aeiou]]", 0), "pre_tokenizer", "intersection", "&& in a class");
    expect_fail(split_then_bytelevel("(unclosed", 0), "pre_tokenizer", "pretokenizers[0]: PCRE2 rejects", "bad regex");
    expect_fail(json_pack("{s:s, s:[{s:s, s:b}, {s:s, s:{s:s}, s:s}]}", "type", "Sequence", "pretokenizers", "type",
                          "ByteLevel", "use_regex", 0, "type", "Split", "pattern", "Regex", "a", "behavior",
                          "Isolated"),
                "pre_tokenizer", "pretokenizers[0]: 'ByteLevel' is not supported", "ByteLevel before Split");
    expect_fail(json_pack("{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s}]}", "type", "Sequence", "pretokenizers", "type", "Split",
                          "pattern", "Regex", "a", "behavior", "MergedWithNext", "type", "ByteLevel"),
                "pre_tokenizer", "Isolated", "Split behavior MergedWithNext");
    expect_fail(json_pack("{s:s, s:b}", "type", "Digits", "individual_digits", 1), "pre_tokenizer", "'Digits'",
                "Digits pre-tokenizer");
    expect_fail(json_pack("{s:s, s:[s, i], s:[s, i]}", "type", "RobertaProcessing", "sep", "</s>", 2, "cls", "<s>", 0),
                "post_processor", "'RobertaProcessing' is not supported", "Roberta post-processor");
    expect_fail(json_pack("{s:s, s:[{s:{s:s}}, {s:{s:s}}], s:{}}", "type", "TemplateProcessing", "single",
                          "SpecialToken", "id", "<s>", "Sequence", "id", "A", "special_tokens"),
                "post_processor", "single[0]", "template naming an unknown special");
    expect_fail(json_pack("{s:s, s:[{s:{s:s}}], s:{s:{s:s, s:[i]}}}", "type", "TemplateProcessing", "single",
                          "SpecialToken", "id", "<s>", "special_tokens", "<s>", "id", "<s>", "ids", 999999),
                "post_processor", "id 999999 is not a token", "template id out of range");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    snprintf(dir, sizeof dir, "/tmp/ax_tokhf_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    texts tx = {0};
    load_texts(&tx, fixture("tokenizer/texts.jsonl"));
    load_texts(&tx, fixture("llama3/texts.jsonl"));
    json_error_t je;
    json_t *ref = json_load_file(fixture("llama3/ids.json"), 0, &je);
    CHECK(ref != NULL, "%s: %s", fixture("llama3/ids.json"), je.text);
    if (ref) {
        CHECK(json_integer_value(json_object_get(ref, "texts")) == tx.n, "ids.json has %lld texts, the files %d",
              (long long)json_integer_value(json_object_get(ref, "texts")), tx.n);
        test_llama3(&tx, ref);
        test_patterns();
        test_bad_files();
    }
    json_decref(ref);
    for (int i = 0; i < tx.n; i++) free(tx.s[i]);
    free(tx.s);
    free(tx.len);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    int rc = ax_test_done("tokenizer_hf");
    MPI_Finalize();
    return rc;
}
