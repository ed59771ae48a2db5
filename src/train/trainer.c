/* The training loop (axonn.h: ax_train): steps, logging, validation,
 * checkpoints and the final model, on a run set up by run.c. */
#define _GNU_SOURCE 1
#include "axonn/axonn.h"
#include "backend/backend.h"
#include "grid/grid.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/optim.h"
#include "train/run.h"
#include "train/source.h"
#include "train/stop.h"
#include "train/flops.h"
#include "train/tblog.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/rss.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ax_error(void) { return ax_err_msg(); }

/* A checkpoint just committed: older ones go only now, and it is logged. */
static int committed(ax_run *r) {
    double blocking, total, ph[2], t1 = MPI_Wtime();
    const char *dir = ax_ckpt_last(r->ckw, &blocking, &total, ph);
    int step = atoi(strrchr(dir, '-') + 1);
    AX_TRY(ax_agree(r->g.world, r->root ? ax_ckpt_prune(r->o->out, step, r->o->keep) : 0));
    snprintf(r->last_ckpt, sizeof r->last_ckpt, "%s", dir);
    if (strcmp(r->o->ckpt_writer, "root"))
        AX_SAY(r,
               "%ssaved %s in %.0f ms, training blocked %.0f ms (slowest rank: write %.0f ms, checksums %.0f ms; "
               "pruning to the newest %d: %.0f ms)\n",
               r->tty ? "\r\033[K" : "", dir, total, blocking, ph[0], ph[1], r->o->keep, (MPI_Wtime() - t1) * 1e3);
    else
        AX_SAY(r, "%ssaved %s in %.0f ms (pruning to the newest %d: %.0f ms)\n", r->tty ? "\r\033[K" : "", dir, total,
               r->o->keep, (MPI_Wtime() - t1) * 1e3);
    return 0;
}

/* How far poll_save takes the save in flight: as far as it got without
 * waiting, or to its commit. */
typedef enum { AX_SAVE_ADVANCE, AX_SAVE_COMMIT } ax_save_until;

/* At a step boundary: the save in flight advanced, or committed. */
static int poll_save(ax_run *r, ax_save_until until) {
    if (!r->ckw || !ax_ckpt_pending(r->ckw)) return 0;
    int rc = ax_ckpt_poll(r->ckw, until == AX_SAVE_COMMIT);
    return rc < 0 ? -1 : rc == 1 ? committed(r) : 0;
}

/* step_ms: a step's time, to say when training waited longer than one for the
 * save before (0: say nothing) */
static int save(ax_run *r, int next_step, double step_ms) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/ckpt-%06d", r->o->out, next_step);
    r->st.step = next_step;
    r->st.data_pos = (int64_t)next_step * r->o->batch;
    /* one save in flight at a time: training waits for the last one to commit */
    int pending = r->ckw && ax_ckpt_pending(r->ckw);
    double t0 = MPI_Wtime();
    AX_TRY(poll_save(r, AX_SAVE_COMMIT));
    double waited = (MPI_Wtime() - t0) * 1e3;
    if (pending && step_ms > 0 && waited > step_ms)
        AX_SAY(r,
               "%swaited %.0f ms for the previous checkpoint to commit before saving %s (saves overlap: a larger "
               "--save-every, or --async-save=false)\n",
               r->tty ? "\r\033[K" : "", waited, dir);
    AX_TRY(ax_ckpt_begin(r->ckw, dir, &r->opt, &r->st));
    return ax_ckpt_pending(r->ckw) ? 0 : committed(r);
}

static void progress(ax_run *r, int step, double ms_avg, const char *tail) {
    int n = r->o->steps, w = 24, done = (int)((double)(step + 1) / n * w);
    double eta = ms_avg * (n - step - 1) / 1000.0;
    printf("\r\033[K[");
    for (int i = 0; i < w; i++) putchar(i < done ? '=' : i == done ? '>' : ' ');
    printf("] %d/%d %s ETA %dm%02ds", step + 1, n, tail, (int)eta / 60, (int)eta % 60);
    fflush(stdout);
}

static void log_val_loss(ax_run *r, int step) {
    const ax_train_opts *o = r->o;
    int64_t n = (int64_t)o->val_batches * o->batch, have = ax_source_nseq(&r->val);
    if (have && n > have) n = have;
    double sum, tok;
    ax_evaluate(&r->m, &r->val, n, o->batch, o->grad_accum, o->seq, &sum, &tok);
    AX_SAY(r, "%sstep %d | val loss %.4f (%.0f tokens)\n", r->tty ? "\r\033[K" : "", step + 1, sum / tok, tok);
    if (r->metrics) {
        fprintf(r->metrics, "{\"step\": %d, \"val_loss\": %.6f, \"val_tokens\": %.0f}\n", step + 1, sum / tok, tok);
        fflush(r->metrics);
    }
    if (r->tb) ax_tblog_val(r->tb, step + 1, sum / tok);
}

static void reset_profile(ax_run *r) {
    ax_be()->gemm_timing(1);
    ax_grid *g = &r->g;
    ax_comm *all[] = {&g->X, &g->Y, &g->Z, &g->Zg, &g->C, &g->data, &g->dz, &g->tp};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ax_comm_reset_stats(all[i]);
}

/* Shares of the timed steps spent in GEMMs and blocked in each group's
 * collectives (rank 0's view; the largest over ranks for communication). */
static void report_profile(ax_run *r, double t_total) {
    if (r->o->cuda_graph) { /* a replay runs no host code that could time its parts */
        AX_SAY(r, "profile: not measured: the steps are replays of a CUDA graph (--cuda-graph)\n");
        return;
    }
    double gs, gf;
    ax_be()->gemm_stats(&gs, &gf);
    ax_grid *g = &r->g;
    struct {
        const char *n;
        ax_comm *c;
    } groups[] = {{"X", &g->X}, {"Y", &g->Y},       {"Z", &g->Z},       {"Z-gather", &g->Zg},
                  {"C", &g->C}, {"data", &g->data}, {"data*Z", &g->dz}, {"X*Y*Z", &g->tp}};
    AX_SAY(r, "profile: GEMM %.1f%% of step time (%.1f GFLOP/s in GEMMs)", 100 * gs / t_total,
           gs > 0 ? gf / gs / 1e9 : 0);
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++) {
        double s = ax_comm_seconds(groups[i].c);
        MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, g->world);
        if (groups[i].c->size > 1) AX_SAY(r, ", %s %.1f%%", groups[i].n, 100 * s / t_total);
    }
    AX_SAY(r, "\n");
}

/* model FLOP/s of the whole job as a share of its ranks' peak */
static double run_mfu(const ax_run *r, double flops_per_s) { return flops_per_s / r->g.size / r->peak; }

/* a finished step's metrics line (and TensorBoard scalars), log line and progress bar;
 * rss_mib: the largest peak resident set over the ranks */
static void record_step(ax_run *r, int step, const ax_step_stats *st, double dt, double flops, double rss_mib,
                        int log_now, double ms_avg) {
    const ax_train_opts *o = r->o;
    double tps = o->batch * o->seq / dt, tf = flops / dt / 1e12;
    if (r->metrics) {
        fprintf(r->metrics,
                "{\"step\": %d, \"loss\": %.6f, \"lr\": %.6e, \"grad_norm\": %.6f, \"ms\": %.3f, "
                "\"tokens_per_s\": %.1f, \"model_tflops\": %.5f, \"supervised_tokens\": %.0f, \"tokens\": %d",
                step + 1, st->loss, st->lr, st->gnorm, dt * 1e3, tps, tf, st->tokens, o->batch * o->seq);
        if (r->peak > 0) fprintf(r->metrics, ", \"mfu\": %.5f", run_mfu(r, flops / dt));
        fprintf(r->metrics, ", \"peak_rss_mib\": %.1f}\n", rss_mib);
        fflush(r->metrics);
    }
    if (r->tb) {
        ax_step_metrics m = {.step = step + 1,
                             .loss = st->loss,
                             .lr = st->lr,
                             .grad_norm = st->gnorm,
                             .ms = dt * 1e3,
                             .tokens_per_s = tps,
                             .model_tflops = tf,
                             .mfu = r->peak > 0 ? run_mfu(r, flops / dt) : -1,
                             .peak_rss_mib = rss_mib};
        ax_tblog_step(r->tb, &m);
    }
    char line[320], sup[64] = "", mfu[32] = "";
    if (r->weights) snprintf(sup, sizeof sup, " | supervised %.0f/%d", st->tokens, o->batch * o->seq);
    if (r->peak > 0) snprintf(mfu, sizeof mfu, " | MFU %.1f%%", 100 * run_mfu(r, flops / dt));
    snprintf(line, sizeof line,
             "step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %7.1f ms | %8.0f tok/s | %.3f TFLOP/s%s%s", step + 1,
             o->steps, st->loss, st->lr, st->gnorm, dt * 1e3, tps, tf, mfu, sup);
    if (r->root && !o->quiet) {
        if (log_now) printf("%s%s\n", r->tty ? "\r\033[K" : "", line);
        if (r->tty) progress(r, step, ms_avg, "");
        fflush(stdout);
    }
}

/* the final model into --out, in the export dtype */
static int export_model(ax_run *r) {
    const ax_train_opts *o = r->o;
    if (!o->out) return 0;
    char index[4200];
    AX_TRY(ax_model_save(o->out, &r->m, o->max_shard_size, strcmp(o->export_dtype, "bf16") ? AX_ST_F32 : AX_ST_BF16));
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", o->out);
    AX_SAY(r, "model written to %s/%s (%s, + config.json)\n", o->out,
           ax_file_exists(index) ? "model.safetensors.index.json and its shards" : "model.safetensors",
           o->export_dtype);
    return 0;
}

/* A stop asked by a signal (train/stop.h), the ranks agreed: the save in
 * flight completes, the state after `done` steps is saved (with --out) and
 * committed, and the run ends. */
static int stop_for_signal(ax_run *r, int done, int sig) {
    ax_stop_agree(sig);
    if (r->o->out && r->st.step != done) AX_TRY(save(r, done, 0));
    AX_TRY(poll_save(r, AX_SAVE_COMMIT));
    AX_SAY(r, "%sstopped by signal %d (%s) after step %d; last checkpoint: %s%s\n", r->tty ? "\r\033[K" : "", sig,
           strsignal(sig), done, r->last_ckpt, r->o->out ? " (continue with --resume auto)" : "");
    return AX_TRAIN_SIGNALED;
}

static int loop(ax_run *r) {
    const ax_train_opts *o = r->o;
    const ax_gpt_config *c = &r->m.cfg;
    double flops = ax_model_flops(c, o->batch, o->seq), hflops = ax_hardware_flops(c, o->batch, o->seq);
    double t_sum = 0;
    int t_n = 0, first = r->st.step;
    double ms_avg = 0;
    int end = o->steps, skips = 0;
    if (o->exit_after > 0 && o->exit_after < end) end = o->exit_after;
    for (int step = r->st.step; step < end; step++) {
        MPI_Barrier(r->g.world);
        double t0 = MPI_Wtime();
        ax_run_load_step(r, step);
        ax_step_stats st;
        ax_train_step(&r->m, &r->opt, &r->h, step, r->seqs, r->weights, o->grad_accum, r->Bl, o->seq, &st, r->scratch);
        /* the slowest rank's time, a stop any rank was asked for (signals reach ranks at different
         * steps), and the largest rank's memory */
        double agreed[3] = {MPI_Wtime() - t0, ax_stop_signal(), ax_peak_rss_mib()};
        MPI_Allreduce(MPI_IN_PLACE, agreed, 3, MPI_DOUBLE, MPI_MAX, r->g.world);
        double dt = agreed[0];
        int sig = (int)agreed[1];
        if (st.skipped) {
            skips++;
            AX_SAY(r, "%sstep %d: loss %g, gradient norm %g: not finite, update skipped (%d in a row, at most %d)\n",
                   r->tty ? "\r\033[K" : "", step + 1, st.loss, st.gnorm, skips, o->max_skips);
            if (r->metrics) {
                fprintf(r->metrics, "{\"step\": %d, \"skipped\": true}\n", step + 1);
                fflush(r->metrics);
            }
            if (skips >= o->max_skips) {
                /* the save in flight committed: the stop names it as the last good one */
                AX_TRY(poll_save(r, AX_SAVE_COMMIT));
                ax_err_set("step %d: %d consecutive steps with a non-finite loss or gradient norm; stopped "
                           "(lower --lr or raise --warmup); last good checkpoint: %s",
                           step + 1, skips, r->last_ckpt);
                return AX_TRAIN_DIVERGED;
            }
            AX_TRY(poll_save(r, AX_SAVE_ADVANCE));
            if (sig) return stop_for_signal(r, step + 1, sig);
            continue;
        }
        skips = 0;
        if (st.captured && step > first + 1)
            AX_SAY(r, "%sCUDA graph: step %d captured again (the device memory or the loss weighting changed)\n",
                   r->tty ? "\r\033[K" : "", step + 1);
        if (step - first >= 2) {
            t_sum += dt;
            t_n++;
        }
        if (o->profile && step - first == 1) reset_profile(r);
        ms_avg = ms_avg ? 0.9 * ms_avg + 0.1 * dt * 1e3 : dt * 1e3;
        int log_now = (step + 1) % (o->log_every > 0 ? o->log_every : 1) == 0 || step == first || step + 1 == end;
        record_step(r, step, &st, dt, flops, agreed[2], log_now, ms_avg);
        if (r->val.set && o->val_every > 0 && ((step + 1) % o->val_every == 0 || step + 1 == o->steps))
            log_val_loss(r, step);
        AX_TRY(poll_save(r, AX_SAVE_ADVANCE));
        int last = step + 1 == end;
        if (o->out && ((o->save_every > 0 && (step + 1) % o->save_every == 0) || last))
            AX_TRY(save(r, step + 1, ms_avg));
        if (sig && !last) return stop_for_signal(r, step + 1, sig);
    }
    AX_TRY(poll_save(r, AX_SAVE_COMMIT)); /* the run ends with its last checkpoint committed */
    if (r->tty) printf("\r\033[K");
    if (t_n > 0) {
        double dt = t_sum / t_n;
        if (o->profile) report_profile(r, t_sum);
        char mfu[48] = "";
        if (r->peak > 0) snprintf(mfu, sizeof mfu, ", MFU %.1f%%", 100 * run_mfu(r, flops / dt));
        AX_SAY(r,
               "summary: %d steps timed (first 2 excluded): %.1f ms/step, %.0f tokens/s, model %.3f TFLOP/s "
               "(%.3f per rank)%s, hardware-with-recompute formula %.3f TFLOP/s\n",
               t_n, dt * 1e3, o->batch * o->seq / dt, flops / dt / 1e12, flops / dt / 1e12 / r->g.size, mfu,
               hflops / dt / 1e12);
    }
    return end == o->steps ? export_model(r) : 0;
}

int ax_train(const ax_train_opts *o, MPI_Comm comm) {
    ax_run r;
    ax_run_init(&r, o, comm);
    int rc = ax_run_setup(&r);
    if (rc == 0) rc = loop(&r);
    ax_run_teardown(&r);
    return rc;
}
