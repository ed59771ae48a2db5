/* Ring attention over the context-parallel group (docs/design.md, "Context
 * parallelism"): each sequence of T tokens is cut into 2C chunks of Tc rows;
 * group rank c holds chunks c and 2C-1-c, so that every rank does the same
 * causal work. Key/value chunks travel around the ring (to rank c+1, from
 * c-1) with non-blocking transfers behind the attention of the chunks in
 * hand; partial results merge exactly by their log-sum-exp. The backward
 * sends the key/value gradients around with them, each back to its owner
 * after one lap. With C = 1 it is the causal attention of ax_attention_forward.
 * qkv, and the key/value chunks that travel, are stored in dt (bf16: half
 * the bytes on the ring); out, lse and the gradients are fp32, as the
 * chunks' partial results merge in fp32 (backend.h: ax_attn_block).
 *
 *   size_t n = ax_ring_workspace_floats(Bl, Tc, KVl, hd);     // backend memory, allocated once
 *   ax_ring_attention_forward(&g->C, atty, lse, qkv, Bl, Tc, Hl, KVl, hd, dt, ws, scratch, nthr);
 *   ax_ring_attention_backward(&g->C, dqkv, datty, atty, lse, qkv, Bl, Tc, Hl, KVl, hd, dt, ws, scratch, nthr);
 *
 *   qkv (Bl*2*Tc, (Hl + 2 KVl) hd): per sequence chunk c's rows, then chunk 2C-1-c's
 *   out (Bl*2*Tc, Hl*hd), lse (Bl, Hl, 2*Tc), dqkv like qkv (overwritten)
 *   scratch: nthr * ax_attention_scratch(2 * Tc, hd) floats (the blocks need
 *   ax_attention_scratch(Tc, hd); C = 1 runs one block of the 2Tc rows)
 *   ws: ax_ring_workspace_floats(Bl, Tc, KVl, hd), the backend's memory */
#ifndef AX_NN_RING_ATTENTION_H
#define AX_NN_RING_ATTENTION_H
#include "backend/backend.h"
#include "comm/comm.h"
#include <stddef.h>

/* floats of the ring's buffers: key/value chunks in hand and arriving, and in
 * the backward their gradients (in hand, arriving, and this step's share) */
size_t ax_ring_workspace_floats(int Bl, int Tc, int KVl, int hd);
void ax_ring_attention_forward(ax_comm *C, float *out, float *lse, const void *qkv, int Bl, int Tc, int Hl, int KVl,
                               int hd, ax_dtype dt, float *ws, float *scratch, int nthr);
void ax_ring_attention_backward(ax_comm *C, float *dqkv, const float *dout, const float *out, const float *lse,
                                const void *qkv, int Bl, int Tc, int Hl, int KVl, int hd, ax_dtype dt, float *ws,
                                float *scratch, int nthr);
#endif
