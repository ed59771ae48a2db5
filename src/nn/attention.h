/* Causal multi-head self-attention on the heads this rank holds (SPEC §3: the
 * QKV output is head-grouped, so the heads of a Y shard are complete and the
 * attention needs no communication; it is replicated over X).
 *   qkv (B*T, 3*Cl) = [q | k | v] of Hl heads of size hd (Cl = Hl*hd)
 *   out (B*T, Cl)
 *   lse (B, Hl, T)  log-sum-exp of each query's scores (kept for backward)
 *
 * Tiled, flash-style: query and key tiles of AX_ATT_TILE rows, an online
 * softmax in the forward, probabilities recomputed tile by tile in the
 * backward, tiles above the diagonal skipped. Memory is O(B*Hl*T), never the
 * (T, T) probability maps. Each (sequence, head) pair, and in the forward each
 * query tile, is one unit of work for one thread, so results do not depend on
 * the thread count. */
#ifndef AX_NN_ATTENTION_H
#define AX_NN_ATTENTION_H
#include <stddef.h>

#define AX_ATT_TILE 64

/* floats of scratch per thread for sequences of T tokens */
size_t ax_attention_scratch(int T);
/* scratch: nthr * ax_attention_scratch(T) floats; at most nthr threads run */
void ax_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int Hl, int hd,
                          float *scratch, int nthr);
/* dqkv (B*T, 3*Cl), overwritten; out and lse as the forward left them */
void ax_attention_backward(float *dqkv, const float *dout, const float *out, const float *lse, const float *qkv,
                           int B, int T, int Hl, int hd, float *scratch, int nthr);
#endif
