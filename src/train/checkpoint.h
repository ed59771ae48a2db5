/* Training checkpoints, grid-independent (SPEC §3): a directory holding
 *   model.safetensors + config.json   the logical Hugging Face tensors (usable as a model)
 *   optim.safetensors                 AdamW moments "opt.m.<name>", "opt.v.<name>", same layout
 *   state.json                        next step, seed, data position, batch geometry
 * written as "<dir>.tmp" and renamed when complete, so a checkpoint either
 * exists whole or not at all. A run saved on one grid resumes on any other. */
#ifndef AX_TRAIN_CHECKPOINT_H
#define AX_TRAIN_CHECKPOINT_H
#include <stdint.h>
#include "model/gpt.h"
#include "train/optim.h"

typedef struct {
    int step;                /* next step to run */
    uint64_t seed;
    int64_t data_pos;        /* sequences consumed */
    int batch, seq, steps;
} ax_ckpt_state;

/* Collective. Writes dir atomically (replacing an older one of the same name). */
int ax_ckpt_save(const char *dir, ax_gpt *m, const ax_adamw *o, const ax_ckpt_state *st);
/* Collective. Reads config and state first (ax_ckpt_peek), then tensors. */
int ax_ckpt_peek(const char *dir, ax_gpt_config *cfg, ax_ckpt_state *st);
int ax_ckpt_load(const char *dir, ax_gpt *m, ax_adamw *o);
/* A checkpoint directory, or an output directory whose newest ckpt-* is used. */
int ax_ckpt_resolve(const char *path, char *out, size_t n);
/* Collective: model.safetensors + config.json into dir (created if needed). */
int ax_model_save(const char *dir, ax_gpt *m);
#endif
