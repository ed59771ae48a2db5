/* Goldfish loss mask (Hans et al., NeurIPS'24; docs/algorithm.md §7): a target token is left
 * out of the loss when a hash of the h ids of the token stream that end at it
 * (the target itself and the h-1 before it) falls below 1/k.
 *
 * The window is taken from the stream, not from the training sequence: the
 * loader hands over the h-1 tokens that precede each sequence (across shard
 * files too) as hashing context. A repeated passage therefore drops the same
 * tokens at every occurrence, wherever the fixed T-token windows happen to cut
 * it, and whatever T, batch, grid or resume point the run has. Only targets
 * with fewer than h-1 tokens of stream before them have no full window; they
 * are kept. That happens at the very start of the data and in sources that
 * have no stream around a sequence (the synthetic one). For instruction data
 * (prompt/completion examples) the stream is the example's own tokens.
 *
 * Hash: start from the constant 0x676F6C6466697368 ("goldfish") and, for each
 * id of the window in order, s = splitmix64(s ^ id) (see util/rng.h). It is
 * order-sensitive, depends only on the ids, and is the same on every rank,
 * grid, thread count and machine. A token is dropped when s < floor((2^64 - 1) / k).
 * (The published code keys a 1,000,003-entry random table by the product of
 * the ids, which is order-insensitive and depends on the device's generator.) */
#ifndef AX_MEMO_GOLDFISH_H
#define AX_MEMO_GOLDFISH_H
#include <stdint.h>

uint64_t ax_goldfish_hash(const int32_t *ids, int h);
/* seq: the T+1 ids of a sequence (targets are seq[1..T]), preceded in memory
 * by `have` ids of stream context: seq[-have..-1] are read, nothing before.
 * w: T weights, 1 = kept, 0 = dropped. */
void ax_goldfish_mask(const int32_t *seq, int have, int T, int k, int h, float *w);
#endif
