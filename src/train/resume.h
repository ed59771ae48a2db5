/* Which checkpoint a run starts from: the steps of ax_run_setup (run.c)
 * that find, verify and take it (docs/reliability.md, promises 2 to 4).
 *
 *   ax_resume c = {0};
 *   r->resumed = ax_resume_find(r, &c);                            // named, or the newest in --out
 *   if (r->resumed == 1) r->resumed = ax_resume_peek(r, &c, &cfg, &saved);  // its files verify
 *   if (r->resumed == 1) ax_resume_take(r, &c, &cfg, &saved, NULL);         // against the options
 *   ... the model built; when its tensors fail to verify: ax_resume_pass_over, peek, take again
 *
 * A checkpoint the program picked (--resume auto, or an output directory)
 * may be passed over for an older one when it fails verification; one the
 * user named may not. Each returns 1: resume from c->dir, 0: start fresh,
 * -1: error, and is collective. */
#ifndef AX_TRAIN_RESUME_H
#define AX_TRAIN_RESUME_H
#include "train/run.h"

typedef struct {
    char dir[4096];
    int fallback; /* dir was picked, not named: an older one may stand in for it */
} ax_resume;

int ax_resume_find(ax_run *r, ax_resume *c);
/* c->dir failed verification (the error set): set aside, the next older one */
int ax_resume_pass_over(ax_run *r, ax_resume *c);
int ax_resume_peek(ax_run *r, ax_resume *c, ax_gpt_config *cfg, ax_ckpt_state *saved);
/* 0 or -1 (the checkpoint and the options disagree) */
int ax_resume_take(ax_run *r, const ax_resume *c, const ax_gpt_config *cfg, const ax_ckpt_state *saved,
                   const ax_gpt_config *built);
/* the lines of metrics.jsonl after step dropped (written before a crash): rank 0 */
int ax_resume_trim_metrics(const char *path, int step);
#endif
