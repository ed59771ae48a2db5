#include "nn/embedding.h"

void ax_embedding_forward(ax_comm *Y, float *out, const int32_t *tokens, const int32_t *pos, const float *wte_block,
                          const float *wpe, int M, int T, int v0, int Vl, int Cl) {
    ax_reducer r = ax_comm_reducer(Y);
    ax_be()->embedding_forward(out, tokens, pos, wte_block, wpe, M, T, v0, Vl, Cl, &r);
}

void ax_embedding_backward(float *dwte_block, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                           int M, int T, int v0, int Vl, int Cl) {
    ax_be()->embedding_backward(dwte_block, dwpe, dout, tokens, pos, M, T, v0, Vl, Cl);
}
