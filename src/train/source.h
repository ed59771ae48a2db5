/* Where training sequences come from: llm.c shards in the run's order,
 * instruction examples (a .jsonl file: data/instruct.h) with their loss
 * weights, or, with no data, a synthetic stream (a fixed random Markov chain over the
 * vocabulary, so the loss visibly falls) that is a pure function of
 * (seed, position) like the shard order. */
#ifndef AX_TRAIN_SOURCE_H
#define AX_TRAIN_SOURCE_H
#include <stdint.h>
#include "data/instruct.h"
#include "data/shards.h"

typedef struct {
    ax_shardset *set;  /* NULL: synthetic or instruct */
    ax_instruct *inst; /* instruction examples, or NULL */
    int32_t *tmp_tok;  /* an example's tokens or weights not asked for */
    float *tmp_w;
    int shuffle;
    ax_loader loader;
    int T, V;
    uint64_t seed;
} ax_source;

/* the order ax_source_open reads sequences in: shuffle takes one of these */
enum { AX_SOURCE_IN_ORDER = 0, AX_SOURCE_SHUFFLED = 1 };
/* glob: shards, or a .jsonl file of instruction examples encoded with the
 * tokenizer at tok_path (its ids must lie below V); seed: of the shuffle */
int ax_source_open(ax_source *s, const char *glob, const char *tok_path, int T, int V, int shuffle, uint64_t seed);
void ax_source_close(ax_source *s);
/* Sequence pos into out[before .. before+T], preceded by up to `before` tokens
 * of its stream (out[0 .. before-1], -1 where there are none). Returns how many
 * context tokens exist: for shards the stream is the files in order; each
 * synthetic sequence and each instruction example is a stream of its own, so
 * it has none. Instruction examples are taken in epochs, each a permutation
 * i -> (a i + b) mod n of the examples with a, b drawn from (seed, epoch)
 * (identity without shuffle). */
int ax_source_get(ax_source *s, int64_t pos, int before, int32_t *out);
/* The loss weights of sequence pos's T targets into w: 1 when the source has
 * them (instruction data: 0 on prompt tokens), else 0 and w untouched. */
int ax_source_weights(ax_source *s, int64_t pos, float *w);
int64_t ax_source_nseq(const ax_source *s); /* 0 for synthetic (endless) */
#endif
