#include "train/flops.h"

double ax_model_flops(const ax_gpt_config *c, int B, int s) {
    double l = c->n_layer, h = c->n_embd, V = c->vocab_size;
    return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * l));
}

double ax_hardware_flops(const ax_gpt_config *c, int B, int s) {
    double l = c->n_layer, h = c->n_embd, V = c->vocab_size;
    return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * h * l));
}
