/* Text helpers shared by the commands: the tokenizer that goes with a model or
 * a corpus, and reading the documents of files. */
#ifndef AX_CLI_TEXT_H
#define AX_CLI_TEXT_H
#include <stddef.h>
#include "data/tokenizer.h"

/* --tokenizer PATH when given, else tokenizer.json beside `beside` (a file). */
int ax_cli_tokenizer(ax_tokenizer **t, const char *path, const char *beside);
/* Every document of the files, in memory (for tokenizer training and audits). */
typedef struct {
    char **text;
    size_t *len;
    size_t n, cap;
} ax_doclist;
int ax_doclist_read(ax_doclist *d, const char *const *files, int nfiles);
void ax_doclist_free(ax_doclist *d);
/* Copies a small file (atomically). */
int ax_copy_file(const char *from, const char *to);
#endif
