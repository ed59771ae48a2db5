/* Documents of a text file, streamed (memory stays bounded by the largest
 * record, or 1 MiB pieces of a plain file):
 *   JSON Lines (.jsonl, .json): one object per line, its string field "text";
 *   fortune files (a line holding only '%' anywhere in the first 64 KiB):
 *     records separated by '%' lines, trailing newline of each record kept;
 *   plain text (anything else): the whole file is one document, delivered in
 *     pieces of about 1 MiB that end where GPT-2's and Llama-3's
 *     pre-tokenisation always split (before a line break after an ASCII letter
 *     or digit, or before a space between ASCII letters), so encoding the
 *     pieces gives the tokens of the whole; *continues says a piece extends
 *     the previous one.
 * Empty records are skipped. */
#ifndef AX_DATA_DOCS_H
#define AX_DATA_DOCS_H
#include <stddef.h>

typedef enum { AX_DOCS_AUTO, AX_DOCS_JSONL, AX_DOCS_FORTUNE, AX_DOCS_PLAIN } ax_docs_format;
typedef struct ax_docreader ax_docreader;

int ax_docs_open(ax_docreader **r, const char *path, ax_docs_format fmt);
/* 1: a document (or piece) in *doc[0..*len), valid until the next call;
 * 0: end of file; -1: error (one line naming file and line). */
int ax_docs_next(ax_docreader *r, const char **doc, size_t *len, int *continues);
ax_docs_format ax_docs_kind(const ax_docreader *r);
void ax_docs_close(ax_docreader *r);
#endif
