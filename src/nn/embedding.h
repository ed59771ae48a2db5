/* Token + position embedding (docs/algorithm.md §3). The token table is sharded like a
 * non-transposed FC weight: this rank's gathered block holds vocabulary rows
 * [v0, v0 + Vl) and Cl hidden columns. Each rank writes the rows it owns and
 * zeros elsewhere; the all-reduce over Y completes every row.
 *   tokens (M); wte_block (Vl, Cl); wpe (maxT, Cl); out (M, Cl)
 * Row i has position pos[i] in [0, T), or i % T when pos is NULL (whole
 * sequences of T rows). T counts a sequence's positions: under context
 * parallelism all of them, not this rank's rows. */
#ifndef AX_NN_EMBEDDING_H
#define AX_NN_EMBEDDING_H
#include <stdint.h>
#include "comm/comm.h"

void ax_embedding_forward(ax_comm *Y, float *out, const int32_t *tokens, const int32_t *pos, const float *wte_block,
                          const float *wpe, int M, int T, int v0, int Vl, int Cl);
/* dwte_block += dout rows of the tokens this rank owns; dwpe += dout by
 * position (pos[i], or i % T when pos is NULL, as in the forward) */
void ax_embedding_backward(float *dwte_block, float *dwpe, const float *dout, const int32_t *tokens, const int32_t *pos,
                           int M, int T, int v0, int Vl, int Cl);
#endif
