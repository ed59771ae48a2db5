/* Instruction data (src/data/instruct.h) against the Python reference of
 * tests/fixtures/instruct (tests/ref/make_instruct_fixtures.py): tokens and
 * weights of every example of sft.jsonl with the Llama-3-style tokenizer
 * (Llama-3 chat format) and with the same BPE in GPT-2's layout (plain-text
 * format); the notice about cut examples; bad input, one line naming file
 * and line. */
#define _GNU_SOURCE
#include "test.h"
#include "data/instruct.h"
#include "util/err.h"
#include <jansson.h>
#include <unistd.h>

static char dir[64];

static const char *at(const char *name) { return ax_t_join(dir, name); }

static const char *fixture(const char *name) { return ax_t_join(ax_t_data(), name); }

static void write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(s, f);
        fclose(f);
    }
}

static void check_set(json_t *set, json_t *lines, int T) {
    const char *name = json_string_value(json_object_get(set, "tokenizer"));
    json_t *ex = json_object_get(set, "examples");
    ax_tokenizer *t = NULL;
    CHECK(ax_tok_load(&t, fixture(name)) == 0, "load %s: %s", name, ax_err_msg());
    if (!t) return;
    ax_instruct d;
    CHECK(ax_instruct_open(&d, fixture("instruct/sft.jsonl"), t, T) == 0, "%s: open: %s", name, ax_err_msg());
    if (d.path == NULL) {
        ax_tok_free(t);
        return;
    }
    CHECK(ax_instruct_count(&d) == (int64_t)json_array_size(ex), "%s: %lld examples, want %zu", name,
          (long long)ax_instruct_count(&d), json_array_size(ex));
    int32_t *tok = malloc((size_t)(T + 1) * sizeof *tok);
    float *w = malloc((size_t)T * sizeof *w);
    int bad = 0, badline = 0, cut = 0;
    long sup = 0, ids = 0;
    for (int64_t i = 0; i < ax_instruct_count(&d) && i < (int64_t)json_array_size(ex); i++) {
        json_t *e = json_array_get(ex, (size_t)i), *rt = json_object_get(e, "tokens"),
               *rw = json_object_get(e, "weights");
        ax_instruct_get(&d, i, tok, w);
        int same = 1;
        for (int j = 0; j <= T; j++) same &= tok[j] == json_integer_value(json_array_get(rt, (size_t)j));
        for (int j = 0; j < T; j++) same &= w[j] == (float)json_integer_value(json_array_get(rw, (size_t)j));
        if (!same && bad++ < 3) {
            fprintf(stderr, "  %s: example %lld (line %d) differs from the reference\n   C:", name, (long long)i,
                    ax_instruct_line(&d, i));
            for (int j = 0; j < T && j < 24; j++) fprintf(stderr, " %d/%g", tok[j + 1], w[j]);
            fprintf(stderr, "\n  py:");
            for (int j = 0; j < T && j < 24; j++)
                fprintf(stderr, " %lld/%lld", (long long)json_integer_value(json_array_get(rt, (size_t)j + 1)),
                        (long long)json_integer_value(json_array_get(rw, (size_t)j)));
            fprintf(stderr, "\n");
        }
        badline += ax_instruct_line(&d, i) != json_integer_value(json_array_get(lines, (size_t)i));
        cut += json_is_true(json_object_get(e, "cut"));
        for (int j = 0; j < T; j++) sup += w[j] != 0;
        ids += T + 1;
    }
    CHECK(bad == 0, "%s: %d examples differ from the reference", name, bad);
    CHECK(badline == 0, "%s: %d examples with the wrong line", name, badline);
    const char *note = ax_instruct_notice(&d);
    char want[64];
    snprintf(want, sizeof want, "%d of %lld examples", cut, (long long)ax_instruct_count(&d));
    CHECK(cut > 0 && note && strstr(note, want) && strstr(note, "sft.jsonl") && !strchr(note, '\n'),
          "%s: notice '%s', expected '%s'", name, note ? note : "(none)", want);
    CHECK(ax_instruct_get(&d, ax_instruct_count(&d), tok, w) != 0, "%s: example out of range must fail", name);
    printf("%s (%s chat): %lld examples, %ld tokens and %d weights each equal to the reference, %ld supervised\n", name,
           json_string_value(json_object_get(set, "chat")), (long long)ax_instruct_count(&d), ids / (T + 1), T, sup);
    if (note) printf("  notice: %s\n", note);
    free(tok);
    free(w);
    ax_instruct_close(&d);
    ax_tok_free(t);
}

/* Opening `body` fails with one line containing the file, `want` and "FILE:line" when line > 0. */
static void expect_fail(const ax_tokenizer *t, const char *body, int line, const char *want, const char *what) {
    write_file(at("bad.jsonl"), body);
    char where[600];
    if (line > 0) snprintf(where, sizeof where, "%s:%d:", at("bad.jsonl"), line);
    else snprintf(where, sizeof where, "%s:", at("bad.jsonl"));
    ax_instruct d;
    ax_err_clear();
    int rc = ax_instruct_open(&d, at("bad.jsonl"), t, 16);
    const char *m = ax_err_msg();
    CHECK(rc != 0 && d.path == NULL && strstr(m, where) && strstr(m, want) && !strchr(m, '\n'),
          "%s: expected one line with '%s' and '%s', got '%s'", what, where, want, rc ? m : "success");
    if (rc == 0) ax_instruct_close(&d);
    else printf("  error, as expected: %s\n", m);
}

static void test_bad_input(void) {
    ax_tokenizer *t = NULL;
    CHECK(ax_tok_load(&t, fixture("llama3/tokenizer.json")) == 0, "load: %s", ax_err_msg());
    if (!t) return;
    const char *ok = "{\"prompt\": \"a\", \"completion\": \"b\"}\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%s\n%s{\"prompt\": \"a\", \"completion\": \"b\"\n", ok, ok);
    expect_fail(t, buf, 4, "malformed JSON", "truncated JSON on line 4");
    snprintf(buf, sizeof buf, "%s{\"prompt\": \"a\"}\n", ok);
    expect_fail(t, buf, 2, "\"prompt\" and \"completion\"", "missing completion");
    expect_fail(t, "{\"prompt\": \"a\", \"completion\": 3}\n", 1, "both strings", "completion not a string");
    expect_fail(t, "{\"text\": \"a\"}\n", 1, "expected {\"prompt\"", "neither form");
    expect_fail(t, "[1, 2]\n", 1, "a JSON object", "an array");
    expect_fail(t, "{\"messages\": {}}\n", 1, "non-empty array", "messages not an array");
    expect_fail(t, "{\"messages\": [{\"role\": \"user\"}]}\n", 1, "messages[0]", "message without content");
    expect_fail(t, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n", 1, "no message with",
                "no assistant message");
    expect_fail(t, "\n  \n", 0, "no examples", "only blank lines");
    ax_instruct d;
    CHECK(ax_instruct_open(&d, at("missing.jsonl"), t, 16) != 0 && strstr(ax_err_msg(), "missing.jsonl"),
          "missing file: %s", ax_err_msg());
    CHECK(ax_instruct_open(&d, fixture("instruct/sft.jsonl"), t, 0) != 0 && strstr(ax_err_msg(), "sequence length"),
          "T = 0: %s", ax_err_msg());

    /* no cut at a large T: no notice */
    CHECK(ax_instruct_open(&d, fixture("instruct/sft.jsonl"), t, 4096) == 0 && ax_instruct_notice(&d) == NULL,
          "T = 4096: %s", ax_instruct_notice(&d) ? ax_instruct_notice(&d) : ax_err_msg());
    ax_instruct_close(&d);
    ax_tok_free(t);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    snprintf(dir, sizeof dir, "/tmp/ax_instr_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    json_error_t je;
    json_t *ref = json_load_file(fixture("instruct/ref.json"), 0, &je);
    CHECK(ref != NULL, "%s: %s", fixture("instruct/ref.json"), je.text);
    if (ref) {
        json_t *sets = json_object_get(ref, "sets"), *s;
        size_t i;
        json_array_foreach(sets, i, s)
            check_set(s, json_object_get(ref, "lines"), (int)json_integer_value(json_object_get(ref, "T")));
        test_bad_input();
    }
    json_decref(ref);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    int rc = ax_test_done("instruct");
    MPI_Finalize();
    return rc;
}
