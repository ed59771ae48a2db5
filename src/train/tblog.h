/* A training run's TensorBoard log (train --tensorboard DIR): rank 0 writes
 * the values of each metrics.jsonl line as scalars under fixed tags, and the
 * run's configuration once as text (io/tfevents.h: the file format).
 *
 *   train/loss  train/lr  train/grad_norm  val/loss
 *   perf/step_ms  perf/tokens_per_s  perf/model_tflops  perf/mfu (with a peak)
 *   memory/peak_rss_mib  config (text: the options as JSON)
 *
 * The directory holds one series: opening it drops every point after the
 * step the run starts from (none: a fresh run; the checkpoint's step: a
 * resumed one), as metrics.jsonl is trimmed, then appends a new file. */
#ifndef AX_TRAIN_TBLOG_H
#define AX_TRAIN_TBLOG_H
#include "train/run.h"

/* One step's line of metrics.jsonl; its TensorBoard scalars are the same values. */
typedef struct {
    int step; /* 1-based: the steps done */
    double loss, lr, grad_norm, ms, tokens_per_s, model_tflops;
    double mfu;          /* model FLOP/s over the ranks' peak; < 0: no peak known */
    double peak_rss_mib; /* the largest peak resident set over the ranks */
} ax_step_metrics;

/* rank 0: DIR of r's options created, trimmed to r's starting step, a new
 * event file with the configuration; 0 or -1 with the error */
int ax_tblog_open(ax_tblog **t, const ax_run *r);
void ax_tblog_step(ax_tblog *t, const ax_step_metrics *m);
void ax_tblog_val(ax_tblog *t, int step, double loss);
void ax_tblog_close(ax_tblog *t);
#endif
