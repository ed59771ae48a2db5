#include "nn/ring_attention.h"

/* five blocks of (Bl * 2Tc) rows of packed [k | v]: in hand and arriving
 * (forward and backward), their gradients in hand and arriving, and the
 * gradient share of the step (backward) */
size_t ax_ring_workspace_floats(int Bl, int Tc, int KVl, int hd) { return 5 * (size_t)Bl * 2 * Tc * 2 * KVl * hd; }
