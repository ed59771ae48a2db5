/* Where training sequences come from: llm.c shards in the run's order, or,
 * with no data, a synthetic stream (a fixed random Markov chain over the
 * vocabulary, so the loss visibly falls) that is a pure function of
 * (seed, position) like the shard order. */
#ifndef AX_TRAIN_SOURCE_H
#define AX_TRAIN_SOURCE_H
#include <stdint.h>
#include "data/shards.h"

typedef struct {
    ax_shardset *set;       /* NULL: synthetic */
    ax_loader loader;
    int T, V;
    uint64_t seed;
} ax_source;

int ax_source_open(ax_source *s, const char *glob, int T, int V, int shuffle, uint64_t seed);
void ax_source_close(ax_source *s);
/* Sequence pos into out[before .. before+T], preceded by up to `before` tokens
 * of its stream (out[0 .. before-1], -1 where there are none). Returns how many
 * context tokens exist: for shards the stream is the files in order; each
 * synthetic sequence is a stream of its own, so it has none. */
int ax_source_get(ax_source *s, int64_t pos, int before, int32_t *out);
int64_t ax_source_nseq(const ax_source *s);                     /* 0 for synthetic (endless) */
#endif
