/* The attention kernels' view of one block of attention (backend.h:
 * ax_attn_block), passed to them by value; plain C, so that the kernels'
 * host emulation (tests/flash_emu) reads the same definition.
 *
 *   ax_cuda_blk a = ax_cuda_blk_full(qkv, dt, T, Hl, KVl, hd);   // the whole causal attention, stored in dt
 *   ax_cuda_blk c = ax_cuda_blk_of(&block);                       // one of ring attention's blocks
 *
 * q, k, v point at head 0 of row 0, their elements stored in st (kmath.h:
 * ax_load widens bf16 ones); row b*Sq + i of the query side (q, dq, out,
 * dout; lse by (b*Hl + h)*Sq + i, the backward's D by (b*Hl + h)*Tq + i),
 * row b*Sk + j of the key side (k, v, dk, dv). The whole causal attention is
 * the block q = k = v = qkv with every length T, so both run one code path. */
#ifndef AX_BACKEND_CUDA_ATTN_BLOCK_H
#define AX_BACKEND_CUDA_ATTN_BLOCK_H
#include "backend/backend.h"

typedef struct {
    const void *q, *k, *v;
    int ldq, ldk, Sq, Sk, Tq, Tk, Hl, KVl, hd, causal;
    ax_dtype st;
} ax_cuda_blk;

static inline ax_cuda_blk ax_cuda_blk_of(const ax_attn_block *x) {
    ax_cuda_blk a = {x->q,  x->k,  x->v,  x->ldq, x->ldk, x->Sq,     x->Sk,
                     x->Tq, x->Tk, x->Hl, x->KVl, x->hd,  x->causal, x->st};
    return a;
}
/* the whole causal attention (backend.h: ax_attn_block_whole), stored in st */
static inline ax_cuda_blk ax_cuda_blk_full(const void *qkv, ax_dtype st, int T, int Hl, int KVl, int hd) {
    ax_attn_block w = ax_attn_block_whole(qkv, 1, T, Hl, KVl, hd, st);
    return ax_cuda_blk_of(&w);
}
#endif
