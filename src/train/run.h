/* One training run's state: what `axonn train` and `axonn bench` share, so a
 * benchmark times the very setup and step that training runs.
 *
 *   ax_run r;
 *   ax_run_init(&r, &opts, comm);         // copies the options
 *   if (ax_run_setup(&r) == 0)            // grid, model, optimizer, data (collective)
 *       for (...) { ax_run_load_step(&r, s); ax_train_step(&r.m, &r.opt, &r.h, s, r.seqs, r.weights, ...); }
 *   ax_run_teardown(&r);                  // also after a failed setup
 */
#ifndef AX_TRAIN_RUN_H
#define AX_TRAIN_RUN_H
#include "axonn/axonn.h"
#include "grid/grid.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/step.h"
#include "train/source.h"
#include <stdbool.h>
#include <stdio.h>

typedef struct ax_tblog ax_tblog; /* train/tblog.h */

typedef struct {
    ax_train_opts args; /* the caller's options, defaults resolved */
    const ax_train_opts *o;
    MPI_Comm comm;
    ax_grid g;
    ax_gpt m;
    ax_adamw opt;
    ax_source data, val;
    ax_hparams h;
    ax_ckpt_state st;
    ax_ckpt_writer *ckw;  /* with out: the checkpoint writer (its buffers allocated once) */
    char last_ckpt[4200]; /* the last one committed by this run */
    FILE *metrics;
    ax_tblog *tb; /* rank 0 with --tensorboard */
    int root, tty, Bl;
    int resumed; /* started from a checkpoint */
    int32_t *seqs;
    ax_train_scratch *scratch;
    float *weights;  /* loss weights of the step's targets (instruction data, goldfish), or NULL */
    float *mask;     /* goldfish: one sequence's mask, to multiply into instruction weights */
    int32_t *window; /* goldfish: h-1 tokens of stream context, then one sequence */
    bool silent;     /* no start-up lines (axonn bench --json) */
    double peak;     /* a rank's peak FLOP/s for MFU, 0: unknown (ax_run_setup) */
    char peak_from[200];
} ax_run;

/* The one place batch and seq left 0 (ax_train_opts: "from the checkpoint")
 * get their values when there is none: 8 sequences of c's n_positions. */
void ax_train_default_shape(int *batch, int *seq, const ax_gpt_config *c);

void ax_run_init(ax_run *r, const ax_train_opts *o, MPI_Comm comm);
int ax_run_setup(ax_run *r);
/* A run set up for measuring (axonn bench): o's model, grid and step options
 * for `steps` steps, writing nothing (no outputs, metrics, checkpoints or
 * resumption); flags: AX_MEASURE_PROFILE the GEMMs timed, AX_MEASURE_SILENT
 * no start-up lines. Collective; torn down on failure. */
enum { AX_MEASURE_PROFILE = 1, AX_MEASURE_SILENT = 2 };
int ax_run_setup_measure(ax_run *r, const ax_train_opts *o, int steps, int flags, MPI_Comm comm);
/* the sequences (and goldfish masks) of `step` into r->seqs (r->weights) */
void ax_run_load_step(ax_run *r, int step);
void ax_run_teardown(ax_run *r);
/* a line on rank 0's stdout, unless the run is silent */
#define AX_SAY(r, ...)                   \
    do {                                 \
        if ((r)->root && !(r)->silent) { \
            printf(__VA_ARGS__);         \
            fflush(stdout);              \
        }                                \
    } while (0)
#endif
