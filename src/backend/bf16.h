/* bf16 <-> fp32, element by element: the one definition every backend and test
 * uses, ax_bf16_round and ax_bf16_widen, lives with the rest of the shared
 * kernel arithmetic in backend/kmath.h. */
#ifndef AX_BACKEND_BF16_H
#define AX_BACKEND_BF16_H
#include "backend/kmath.h"
#endif
