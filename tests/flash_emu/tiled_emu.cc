/* attention.cu, the tiled path, for the host emulation (run.sh rewrote its
 * launches and its shared memory); the mm path is not emulated. */
#include "backend/cuda/cuda.h"
#include "tiled.cc"

void ax_cuda_attention_mm_forward(void *, float *, const void *, ax_dtype, int, int, int, int, int) {
    ax_fatal(__FILE__, __LINE__, "the mm path is not emulated");
}
void ax_cuda_attention_mm_backward(float *, const float *, const void *, const float *, const void *, ax_dtype, int, int,
                                   int, int, int) {
    ax_fatal(__FILE__, __LINE__, "the mm path is not emulated");
}
