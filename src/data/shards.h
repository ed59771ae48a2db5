/* llm.c token shards: a 256 x int32 header (magic 20240520, version 1 for
 * uint16 tokens or 7 for uint32 tokens, token count), then the tokens.
 * A shard set is the sorted files of a glob (or one path), memory-mapped.
 * Sequence i of a shard is tokens [i*T, i*T + T + 1): consecutive sequences
 * share their boundary token, as in llm.c; a shard of n tokens holds
 * (n - 1) / T sequences. Sequences of the set are numbered shard after shard.
 * The files, in order, are one token stream: the tokens before a sequence
 * (its context, e.g. for the goldfish hash) run back into earlier files. */
#ifndef AX_DATA_SHARDS_H
#define AX_DATA_SHARDS_H
#include <stdint.h>

#define AX_SHARD_MAGIC 20240520
typedef struct ax_shardset ax_shardset;

/* Fails with one line naming the pattern or file: no match, bad magic/version,
 * size not matching the header's count, a token >= vocab (when vocab > 0). */
int ax_shards_open(ax_shardset **s, const char *pattern, int vocab);
void ax_shards_close(ax_shardset *s);
int ax_shards_count(const ax_shardset *s);           /* files */
int64_t ax_shards_tokens(const ax_shardset *s);      /* all tokens */
int64_t ax_shards_nseq(const ax_shardset *s, int T); /* sequences of T+1 */
/* Copies sequence idx (0 <= idx < nseq) into out[before .. before+T] and the
 * `before` stream tokens that precede it into out[0 .. before-1]. Returns how
 * many of those exist; the missing ones (at the start of the stream) are -1. */
int ax_shards_seq(const ax_shardset *s, int T, int64_t idx, int before, int32_t *out);

/* Writes one shard atomically: uint16 (version 1) when every token < 65536,
 * otherwise uint32 (version 7). */
int ax_shard_write(const char *path, const int32_t *tokens, int64_t n);

/* Sequence order of a training run. Position p (0, 1, 2, ... counted over the
 * whole run) maps to sequence perm_e[p mod nseq] of epoch e = p / nseq; with
 * shuffling, perm_e is a Fisher-Yates permutation drawn from (seed, e), without
 * it the identity. The state of a run is just p, so resuming is exact. */
typedef struct {
    const ax_shardset *s;
    int T, shuffle;
    uint64_t seed;
    int64_t nseq, epoch;
    int64_t *perm; /* of the cached epoch */
} ax_loader;

int ax_loader_init(ax_loader *L, const ax_shardset *s, int T, int shuffle, uint64_t seed);
void ax_loader_free(ax_loader *L);
/* out[before + T + 1] as for ax_shards_seq; returns the context count. */
int ax_loader_get(ax_loader *L, int64_t pos, int before, int32_t *out);
#endif
