/* FLOPs of one training iteration of B sequences of s tokens (docs/algorithm.md §5,
 * Narayanan et al.): model FLOPs count no recomputation, and causal attention
 * in full; the hardware formula assumes full activation recomputation (as the
 * published AxoNN numbers do). */
#ifndef AX_TRAIN_FLOPS_H
#define AX_TRAIN_FLOPS_H
#include "axonn/axonn.h"
double ax_model_flops(const ax_gpt_config *c, int B, int s); /* GPT-2: 72 B s l h^2 (1 + s/6h + V/12hl) */
double ax_hardware_flops(const ax_gpt_config *c, int B,
                         int s); /* GPT-2: 96 B s l h^2 (1 + s/6h + V/16hl); any architecture by its matrices */
#endif
