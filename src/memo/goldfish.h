/* Goldfish loss mask (Hans et al., NeurIPS'24; SPEC §7): a target token is left
 * out of the loss when a hash of the h target ids ending at it falls below 1/k.
 * The first h-1 targets of a sequence are always kept (their window would
 * reach before the sequence). The same passage therefore drops the same tokens
 * wherever it appears, so a repeated passage is never fully supervised.
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
/* seq: T+1 tokens (targets are seq[1..T]); w: T weights, 1 = kept, 0 = dropped */
void ax_goldfish_mask(const int32_t *seq, int T, int k, int h, float *w);
#endif
