/* Causal multi-head self-attention on the heads this rank holds (SPEC §3: the
 * QKV output is head-grouped, so the heads of a Y shard are complete and the
 * attention needs no communication; it is replicated over X).
 *   qkv (B*T, 3*Cl) = [q | k | v] of Hl heads of size hd (Cl = Hl*hd)
 *   att (B, Hl, T, T) softmax probabilities (kept for backward)
 *   out (B*T, Cl) */
#ifndef AX_NN_ATTENTION_H
#define AX_NN_ATTENTION_H
void ax_attention_forward(float *out, float *att, const float *qkv, int B, int T, int Hl, int hd);
/* dqkv (overwritten); scratch: T*T floats per OpenMP thread */
void ax_attention_backward(float *dqkv, const float *dout, const float *att, const float *qkv,
                           int B, int T, int Hl, int hd, float *scratch);
#endif
