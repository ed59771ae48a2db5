/* Tokenizer files: tokenizer.json / vocab.json (a '{' first) or a .tiktoken
 * rank file; bytes after a first NUL become the merges.txt beside vocab.json.
 * A tokenizer that loads then encodes and decodes a fixed text. */
#include "fuzz_file.h"
#include "data/tokenizer.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t n = nul ? (size_t)(nul - data) : size;
    ax_fuzz_write("merges.txt", nul ? nul + 1 : data, nul ? size - n - 1 : 0);
    ax_tokenizer *t;
    if (ax_tok_load(&t, ax_fuzz_write("vocab.json", data, n)) != 0) return 0;
    static const char text[] = "Hello, world! 123 <|endoftext|> caf\xc3\xa9 \xff";
    ax_ids ids = {0};
    ax_bytes b = {0};
    if (ax_tok_encode(t, text, sizeof text - 1, 1, &ids) == 0) ax_tok_decode(t, ids.v, ids.n, &b);
    ax_ids_free(&ids);
    ax_bytes_free(&b);
    ax_tok_free(t);
    return 0;
}
