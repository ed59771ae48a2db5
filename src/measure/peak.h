/* A GPU's datasheet peak for the GEMM dtype, the denominator of MFU (model
 * FLOP/s per rank over it: docs/algorithm.md §5):
 *
 *   double p = ax_peak_flops("NVIDIA H100 80GB HBM3", AX_BF16);   // 989e12
 *
 * Dense figures (the datasheets' "with sparsity" halved); fp32 is the CUDA
 * cores' rate, as the fp32 GEMMs run without TF32. 0 for a device not in the
 * table (a CPU, a GPU not listed): --peak-tflops gives it then. */
#ifndef AX_MEASURE_PEAK_H
#define AX_MEASURE_PEAK_H
#include "backend/backend.h"
double ax_peak_flops(const char *device, ax_dtype t);
#endif
