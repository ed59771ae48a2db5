/* Corpus preparation: text files -> llm.c token shards.
 * Every document (see data/docs.h for the formats) is preceded by the
 * end-of-text token. Documents go to the validation split either evenly spaced
 * (val_frac: document i is validation when floor((i+1) f) > floor(i f)) or the
 * first val_count ones. Shards hold at most shard_tokens tokens, are uint16
 * when the vocabulary fits (version 7 uint32 otherwise), and are written
 * atomically: out/train_000000.bin ..., out/val_000000.bin ..., with the
 * tokenizer as out/tokenizer.json so the corpus describes itself.
 * Memory stays bounded by one shard of each split plus one document. */
#ifndef AX_DATA_PREPARE_H
#define AX_DATA_PREPARE_H
#include <stdint.h>
#include "data/tokenizer.h"

typedef struct {
    const char *const *inputs;
    int ninputs;
    const char *out_dir;
    double val_frac;
    int64_t val_count; /* val_count > 0 wins */
    int64_t shard_tokens;
    int progress; /* a progress line on stderr */
} ax_prepare_opts;

typedef struct {
    int64_t docs[2], tokens[2], bytes;
    int shards[2];
    double seconds;
} ax_prepare_stats; /* [0] train, [1] val */

int ax_prepare(const ax_tokenizer *t, const ax_prepare_opts *o, ax_prepare_stats *st);
#endif
