/* The "text" strings of a JSON Lines fixture (tests/fixtures/tokenizer/texts.jsonl
 * and the like), for the tokenizer tests. */
#ifndef AX_TESTS_TEXTS_H
#define AX_TESTS_TEXTS_H
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char **s;
    size_t *len;
    int n;
} texts;

/* Appends the file's texts to t (start from {0}); -1 when the file cannot be
 * read; lines without a "text" string are skipped. */
static inline int ax_t_load_texts(texts *t, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        json_t *s = json_object_get(o, "text");
        if (json_is_string(s)) {
            t->s = realloc(t->s, (t->n + 1) * sizeof *t->s);
            t->len = realloc(t->len, (t->n + 1) * sizeof *t->len);
            t->len[t->n] = json_string_length(s);
            t->s[t->n] = malloc(t->len[t->n] + 1);
            memcpy(t->s[t->n], json_string_value(s), t->len[t->n] + 1);
            t->n++;
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    return 0;
}
#endif
