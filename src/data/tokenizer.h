/* Byte-level BPE tokenizer, encoding and decoding exactly like GPT-2 /
 * tiktoken's "gpt2" encoding, or like Hugging Face `tokenizers` on a
 * Llama-3-style tokenizer.json: bytes are mapped to printable unicode
 * characters (GPT-2's bytes_to_unicode table) for vocab.json / merges.txt /
 * tokenizer.json files, the text is split by the pre-tokenisation pattern,
 * GPT-2's
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * or the file's own (Llama-3's takes contractions in any case, digits in
 * groups of up to 3, newlines apart) (PCRE2 with UTF and Unicode properties;
 * \s is Unicode White_Space), and each piece is merged by rank: the
 * lowest-ranked adjacent pair first, the leftmost on a tie. Special tokens
 * (<|endoftext|>, <|eot_id|>) are matched in the text only when asked
 * (AX_TOK_SPECIAL); otherwise "<|endoftext|>" in the text is ordinary text,
 * as tiktoken's encode_ordinary. AX_TOK_TEMPLATE adds the post-processor's
 * tokens (Llama-3: <|begin_of_text|> first), as `tokenizers`' encode does by
 * default (add_special_tokens).
 *
 * Any byte string round-trips: decode(encode(x)) == x. Bytes that are not
 * part of well-formed UTF-8 (RFC 3629: no overlongs, surrogates or values
 * above U+10FFFF) are each encoded as their own single-byte token, and the
 * valid runs between them are pre-tokenised as if each were a whole text
 * (so the pattern's lookahead sees the invalid byte as the end of the text).
 * tiktoken and `tokenizers` take only valid text; on valid UTF-8 the ids are
 * theirs (tests/test_tokenizer.c checks GPT-2's against tiktoken and a small
 * Llama-3-style tokenizer.json against `tokenizers`).
 *
 * ax_tok_encode may be called from several threads at once on the same
 * tokenizer: each thread keeps its own cache of encoded words (a few
 * tokenizers per thread, bounded in size, freed when the thread exits).
 *
 *   ax_tokenizer *t;
 *   if (ax_tok_load(&t, "gpt2.tiktoken")) ax_err_exit(0);   // or vocab.json, tokenizer.json, a model dir
 *   ax_ids ids = {0};
 *   ax_tok_encode(t, text, strlen(text), AX_TOK_SPECIAL, &ids);
 *   ax_bytes b = {0};
 *   ax_tok_decode(t, ids.v, ids.n, &b);                        // b.p[0..b.n) == text
 *   ax_ids_free(&ids); ax_bytes_free(&b); ax_tok_free(t);
 */
#ifndef AX_DATA_TOKENIZER_H
#define AX_DATA_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t *v;
    size_t n, cap;
} ax_ids; /* growable id list */
typedef struct {
    char *p;
    size_t n, cap;
} ax_bytes; /* growable byte string; p[n] is NUL after an append */
void ax_ids_push(ax_ids *a, int32_t id);
void ax_ids_free(ax_ids *a);
void ax_bytes_append(ax_bytes *b, const void *p, size_t n);
void ax_bytes_free(ax_bytes *b);

typedef struct ax_tokenizer ax_tokenizer;

/* By content: a Hugging Face tokenizer.json (BPE model, ByteLevel
 * pre-tokenizer; other models rejected with a clear error), a vocab.json
 * (merges.txt read from beside it), or a tiktoken rank file (base64 bytes and
 * rank per line; <|endoftext|> gets the next id, 50256 for GPT-2). A
 * directory stands for the tokenizer.json in it (a Hugging Face model).
 * - tokenizer.json: model "BPE" (vocab; merges as "a b" or ["a", "b"]; a
 *   merge listed twice takes its later rank; ignore_merges honoured), no
 *   normalizer, pre_tokenizer ByteLevel with add_prefix_space false, alone or
 *   last in a Sequence after Split steps (Regex in Oniguruma syntax, as
 *   `tokenizers` reads it, or String; behavior Isolated) — GPT-2's and
 *   Llama-3's layouts; post_processor ByteLevel and/or TemplateProcessing
 *   (its "single" template: the ids AX_TOK_TEMPLATE puts around a text).
 *   Every added token is a special token (matched only with AX_TOK_SPECIAL);
 *   lstrip/rstrip/single_word are ignored. Dropout, subword prefixes or
 *   suffixes, other normalizers, pre-tokenizers or post-processors are refused.
 * - vocab.json: its "<|endoftext|>" entry is the special token (eot -1 if none).
 * - rank files: the merge making token r is the pair that BPE with the ranks
 *   below r leaves of its bytes (for GPT-2 exactly its merges.txt); a piece
 *   that is a whole token is taken as is, as tiktoken does (ignore_merges).
 * All 256 single bytes must be tokens. Errors name the file (and line) and
 * what was expected. */
int ax_tok_load(ax_tokenizer **t, const char *path);
void ax_tok_free(ax_tokenizer *t);
int ax_tok_vocab_size(const ax_tokenizer *t); /* ids 0 .. size-1, specials included */
int ax_tok_eot(const ax_tokenizer *t);        /* <|endoftext|> id, or -1 */
int ax_tok_bos(
    const ax_tokenizer *t); /* first id the template puts before a text (Llama-3's <|begin_of_text|>), or -1 */
int ax_tok_eos(const ax_tokenizer *t); /* <|end_of_text|> (Llama-3), else <|endoftext|>, else -1 */
int ax_tok_special_id(const ax_tokenizer *t, const char *text); /* id of special token text ("<|eot_id|>"), or -1 */

/* Flags of ax_tok_encode (0: ordinary text only, tiktoken's encode_ordinary). */
enum {
    AX_TOK_SPECIAL = 1,  /* special tokens in the text are matched as such */
    AX_TOK_TEMPLATE = 2, /* the post-processor's ids around the text (Llama-3: BOS first) */
};
/* Appends the ids of text[0..len) to out. Invalid UTF-8 bytes are encoded as
 * their own byte tokens (never lost: decode gives the same bytes back).
 * AX_TOK_SPECIAL | AX_TOK_TEMPLATE gives `tokenizers`' encode(text). */
int ax_tok_encode(const ax_tokenizer *t, const char *text, size_t len, int flags, ax_ids *out);
/* The same, and for each id appended to out the byte offset in text where
 * its bytes start (appended to at; the template's ids: 0 before, len after).
 * Texts up to 2^31 - 1 bytes. */
int ax_tok_encode_at(const ax_tokenizer *t, const char *text, size_t len, int flags, ax_ids *out, ax_ids *at);
/* Appends the bytes of ids to out; fails on an id out of range (out unchanged). */
int ax_tok_decode(const ax_tokenizer *t, const int32_t *ids, size_t n, ax_bytes *out);

/* Writes a Hugging Face tokenizer.json (atomically) that the `tokenizers`
 * library loads and that encodes identically (tests/ref/check_tokenizer_json.py),
 * laid out like GPT-2's on the Hub: model BPE with vocab and merges in rank
 * order ("a b"), ByteLevel pre-tokenizer, decoder and post-processor, the
 * special tokens as added_tokens; a tokenizer read from a Llama-3-style file
 * keeps its Split patterns (as the file spelt them) and its template. */
int ax_tok_save_json(const ax_tokenizer *t, const char *path);

/* Trains a byte-level BPE of vocab_size ids (256 bytes + merges + <|endoftext|>)
 * on the pre-tokenised words of the texts; deterministic (ties broken by the
 * lowest pair of ids). Texts are given as one buffer per document.
 * Each step merges the adjacent pair with the highest count over all words,
 * on a tie the lowest (left id, right id). Ids 0-255 are the bytes in GPT-2's
 * order (id i is the byte whose GPT-2 character is i-th: '!' is 0, 'a' is 64),
 * merged tokens follow in the order made, <|endoftext|> (never learned; it is
 * skipped in the texts) is the last id. Stops early, with a smaller
 * vocabulary, when no pair is left; vocab_size below 257 is an error. */
int ax_tok_train(ax_tokenizer **t, const char *const *texts, const size_t *lens, size_t ndocs, int vocab_size);
#endif
