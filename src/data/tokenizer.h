/* Byte-level BPE tokenizer, encoding and decoding exactly like GPT-2 /
 * tiktoken's "gpt2" encoding: bytes are mapped to printable unicode characters
 * (GPT-2's bytes_to_unicode table) for vocab.json / merges.txt /
 * tokenizer.json files, the text is split by the GPT-2 pre-tokenisation pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (PCRE2 with UTF and Unicode properties), and each piece is merged by rank.
 * Special tokens (<|endoftext|>) are matched in the text only when asked.
 *
 *   ax_tokenizer *t;
 *   if (ax_tok_load(&t, "gpt2.tiktoken")) ax_err_exit(0);   // or vocab.json, tokenizer.json
 *   ax_ids ids = {0};
 *   ax_tok_encode(t, text, strlen(text), 1, &ids);
 *   ax_bytes b = {0};
 *   ax_tok_decode(t, ids.v, ids.n, &b);                        // b.p[0..b.n) == text
 *   ax_ids_free(&ids); ax_bytes_free(&b); ax_tok_free(t);
 */
#ifndef AX_DATA_TOKENIZER_H
#define AX_DATA_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

typedef struct { int32_t *v; size_t n, cap; } ax_ids;     /* growable id list */
typedef struct { char *p; size_t n, cap; } ax_bytes;      /* growable byte string */
void ax_ids_push(ax_ids *a, int32_t id);
void ax_ids_free(ax_ids *a);
void ax_bytes_append(ax_bytes *b, const void *p, size_t n);
void ax_bytes_free(ax_bytes *b);

typedef struct ax_tokenizer ax_tokenizer;

/* By content: a Hugging Face tokenizer.json (BPE model, ByteLevel
 * pre-tokenizer; other models rejected with a clear error), a vocab.json
 * (merges.txt read from beside it), or a tiktoken rank file (base64 bytes and
 * rank per line; <|endoftext|> gets the next id, 50256 for GPT-2). */
int ax_tok_load(ax_tokenizer **t, const char *path);
void ax_tok_free(ax_tokenizer *t);
int ax_tok_vocab_size(const ax_tokenizer *t);      /* ids 0 .. size-1, specials included */
int ax_tok_eot(const ax_tokenizer *t);             /* <|endoftext|> id, or -1 */

/* Appends the ids of text[0..len) to out. Invalid UTF-8 bytes are encoded as
 * their own byte tokens (never lost: decode gives the same bytes back). */
int ax_tok_encode(const ax_tokenizer *t, const char *text, size_t len, int allow_special, ax_ids *out);
/* Appends the bytes of ids to out; fails on an id out of range. */
int ax_tok_decode(const ax_tokenizer *t, const int32_t *ids, size_t n, ax_bytes *out);

/* Writes a Hugging Face tokenizer.json (atomically) that the `tokenizers`
 * library loads and that encodes identically. */
int ax_tok_save_json(const ax_tokenizer *t, const char *path);

/* Trains a byte-level BPE of vocab_size ids (256 bytes + merges + <|endoftext|>)
 * on the pre-tokenised words of the texts; deterministic (ties broken by the
 * lowest pair of ids). Texts are given as one buffer per document. */
int ax_tok_train(ax_tokenizer **t, const char *const *texts, const size_t *lens, size_t ndocs, int vocab_size);
#endif
