#include "train/flops.h"
#include "model/gpt.h"

/* Per token, forward: 2 FLOPs per weight of the layers' matrices, 4 s h per
 * layer for the attention scores and their use on the values, 2 V h for the
 * LM head. For GPT-2 (matrices 12 h^2 per layer) model FLOPs = 3x forward is
 * docs/algorithm.md §5's 72 B s l h^2 (1 + s/6h + V/12hl), and hardware FLOPs (the layers
 * 4x: full recomputation) its 96 B s l h^2 (1 + s/6h + V/16hl). */
static void per_token(const ax_gpt_config *given, int s, double *layers, double *head) {
    ax_gpt_config d = *given, *c = &d;
    ax_gpt_config_defaults(c);
    double h = c->n_embd, hd = h / c->n_head, kv = c->n_kv_head;
    double F = c->n_inner, mlp = c->arch == AX_ARCH_LLAMA ? 3 : 2;
    double weights = h * (c->n_head + 2 * kv) * hd + h * h + mlp * h * F;
    *layers = c->n_layer * (2 * weights + 4.0 * s * h);
    *head = 2.0 * c->vocab_size * h;
}

double ax_model_flops(const ax_gpt_config *c, int B, int s) {
    double layers, head;
    per_token(c, s, &layers, &head);
    return (double)B * s * 3 * (layers + head);
}

double ax_hardware_flops(const ax_gpt_config *c, int B, int s) {
    double layers, head;
    per_token(c, s, &layers, &head);
    return (double)B * s * (4 * layers + 3 * head);
}
