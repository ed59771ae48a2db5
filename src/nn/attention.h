/* Causal multi-head self-attention on the heads this rank holds (docs/algorithm.md §3: the
 * QKV output is head-grouped, so the heads of a Y shard are complete and the
 * attention needs no communication; it is replicated over X).
 *   qkv (B*T, (Hl + 2 KVl) hd) = [q | k | v]: Hl query heads of size hd
 *       (Cl = Hl*hd) and KVl key/value heads, query head h reading
 *       key/value head h / (Hl / KVl) (grouped-query attention; KVl = Hl: MHA)
 *   out (B*T, Cl)
 *   lse (B, Hl, T)  log-sum-exp of each query's scores (kept for backward)
 *
 * Tiled, flash-style (the backend's kernels): an online softmax in the forward,
 * probabilities recomputed tile by tile in the backward, tiles above the
 * diagonal skipped. Memory is O(B*Hl*T), never the (T, T) probability maps;
 * results do not depend on the thread count. */
#ifndef AX_NN_ATTENTION_H
#define AX_NN_ATTENTION_H
#include "backend/backend.h"
#include <stddef.h>

/* floats of scratch per thread for sequences of T tokens, head size hd */
size_t ax_attention_scratch(int T, int hd);
/* scratch: nthr * ax_attention_scratch(T, hd) floats; at most nthr threads run.
 * dt: the model's GEMM input dtype, in which qkv and out are stored (bf16:
 * widened as loaded, out rounded once as stored; backend.h); bf16 may also
 * run the products in bf16 */
void ax_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd, ax_dtype dt,
                          float *scratch, int nthr);
/* dqkv (fp32) like qkv, overwritten; out and lse as the forward left them */
void ax_attention_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv, int B,
                           int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr);
/* KV-cache decoding: one new query per row (qkv (nb, (Hl + 2 KVl) hd)) over a
 * cache of this layer laid out (nb, KVl, Tmax, hd); the new key and value go to len[b] */
void ax_attention_decode(float *out, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl, int KVl,
                         int hd, int Tmax);
#endif
