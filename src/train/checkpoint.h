/* Training checkpoints, grid-independent (docs/algorithm.md §3): a directory holding
 *   model.safetensors + config.json   the logical Hugging Face tensors (usable as a model)
 *   optim.safetensors                 AdamW moments "opt.m.<name>", "opt.v.<name>", same layout
 *   state.json                        next step, seed, data position, batch geometry
 *   manifest.json                     the commit marker: each file's size and CRC-64 (by ranges)
 * Files are written into "<dir>.tmp" and fsync'd, the manifest last, then the
 * directory is renamed and its parent fsync'd: a checkpoint either exists whole
 * (with its manifest) or is ignored, and every file is checked against the
 * manifest before it is used. A run saved on one grid resumes on any other. */
#ifndef AX_TRAIN_CHECKPOINT_H
#define AX_TRAIN_CHECKPOINT_H
#include <stdint.h>
#include "model/gpt.h"
#include "train/optim.h"

typedef struct {
    int step; /* next step to run */
    uint64_t seed;
    int64_t data_pos; /* sequences consumed */
    int batch, seq, steps;
} ax_ckpt_state;

#define AX_CKPT_MANIFEST "manifest.json"

/* Collective. Writes dir atomically (replacing an older one of the same
 * name), every rank its own share in parallel (ax_ckpt_writer, synchronous). */
int ax_ckpt_save(const char *dir, ax_gpt *m, const ax_adamw *o, const ax_ckpt_state *st);
/* The same with today's root writer: rank 0 gathers each tensor and writes alone
 * (whole-file checksums); kept as the reference the parallel files must equal. */
int ax_ckpt_save_root(const char *dir, ax_gpt *m, const ax_adamw *o, const ax_ckpt_state *st);

/* A checkpoint writer made once per run: the rank's share of the files (its
 * slices; each byte written by exactly one rank, with pwrite at its offset)
 * and host buffers for it, allocated once (docs/reliability.md).
 *   ax_ckpt_writer *w; ax_ckpt_writer_init(&w, &m, &(ax_ckpt_opts){.async = 1});
 *   opt.before_update = fence, opt.before_ctx = w;    // fence calls ax_ckpt_fence(w)
 *   ax_ckpt_begin(w, "out/ckpt-000100", &opt, &st);  // copies and writes in the background
 *   ... each step: if (ax_ckpt_poll(w, 0) == 1) ...committed: prune...
 *   ax_ckpt_poll(w, 1);                              // the end of the run, or before the next save
 *   ax_ckpt_writer_free(w); */
typedef struct {
    int root_only; /* ax_ckpt_save_root instead (the reference; bench/ckpt.sh) */
    int async;     /* begin returns at once (a device backend: once the state is copied to the host);
                    * a thread copies and writes, poll commits */
    int64_t chunk; /* bytes per checksum range of the safetensors files (0: AX_CKPT_CHUNK) */
} ax_ckpt_opts;
#define AX_CKPT_CHUNK ((int64_t)16 << 20)
typedef struct ax_ckpt_writer ax_ckpt_writer;
/* Collective. */
int ax_ckpt_writer_init(ax_ckpt_writer **w, ax_gpt *m, const ax_ckpt_opts *o);
/* Collective. Starts writing dir (a save in flight must have been polled to
 * its end). Synchronous writers return with dir committed; async ones with
 * the files created (and a device's state copied to host memory), the state
 * read in the background until ax_ckpt_fence says it is released. */
int ax_ckpt_begin(ax_ckpt_writer *w, const char *dir, const ax_adamw *o, const ax_ckpt_state *st);
/* Rank-local: returns once the save in flight no longer reads the
 * parameters or the moments (at once when none is, or they were copied in
 * begin); the optimizer calls it before its update (ax_adamw.before_update).
 * Its wait counts as training blocked. */
void ax_ckpt_fence(ax_ckpt_writer *w);
/* Collective, at a step boundary: advances the save in flight when every
 * rank's background work is done (wait: waits for it, to the commit).
 * 1: the checkpoint is committed now; 0: nothing committed; -1: the write
 * failed on some rank (the same line on every rank; not committed). */
int ax_ckpt_poll(ax_ckpt_writer *w, int wait);
int ax_ckpt_pending(const ax_ckpt_writer *w); /* a save in flight */
/* the last committed save: the directory, ms spent blocking training (begin
 * and the fence's wait, or the whole synchronous save), ms from begin to commit, and the
 * slowest rank's ms writing and checksumming (0 for the root writer) */
const char *ax_ckpt_last(const ax_ckpt_writer *w, double *blocking_ms, double *total_ms, double phase_ms[2]);
/* Waits for a background write (left uncommitted) and frees everything. */
void ax_ckpt_writer_free(ax_ckpt_writer *w);
/* Rank-local. Checks every file of dir against its manifest (sizes, the
 * headers' layout and checksum ranges, the small files' checksums; one line
 * naming the file and tensor), then reads config and state. */
int ax_ckpt_peek(const char *dir, ax_gpt_config *cfg, ax_ckpt_state *st);
/* Collective. Verifies the checksum ranges that hold what this rank reads
 * (its slices and the headers; the data replicas, which read the same,
 * split them), then, once every rank's verified, reads its slices of the
 * tensors; on a failure nothing is read. */
int ax_ckpt_load(const char *dir, ax_gpt *m, ax_adamw *o);

/* The output directory (ckpt_dir.c): the trainer creates, replaces and
 * deletes only the names it makes (ckpt-NNNNNN, and .tmp, .old, .del after
 * it); everything else there is the user's and is never touched. */
/* The newest complete ckpt-N in dir into out: 1, or 0 when there is none. */
int ax_ckpt_latest(const char *dir, char *out, size_t n);
/* A checkpoint directory (0), or an output directory whose newest complete
 * ckpt-* is taken (1); -1: neither. */
int ax_ckpt_resolve(const char *path, char *out, size_t n);
/* Rank 0, before a run looks for checkpoints: what an interrupted run left
 * put right. A ckpt-N.tmp whose write finished (manifest and state of step
 * N) is put in place, a ckpt-N.old whose replacement never arrived is put
 * back, other .tmp, .old and .del are removed; said (may be NULL) gets what
 * was adopted or put back, for the log. */
int ax_ckpt_recover(const char *dir, char *said, size_t n);
/* A checkpoint that failed verification renamed to <ckdir>.corrupt (or
 * .corrupt-K), kept for inspection and out of --keep's count; out: the new name. */
int ax_ckpt_set_aside(const char *ckdir, char *out, size_t n);
/* After ckpt-<newest> is committed: ax_ckpt_recover, then removes the
 * complete checkpoints of step <= newest beyond the `keep` newest (not collective). */
int ax_ckpt_prune(const char *dir, int newest, int keep);
/* Collective: the parameters in Hugging Face form + config.json into dir
 * (created if needed), as tensors of dtype t (F32 or BF16): model.safetensors,
 * or, when they take more than max_shard bytes (0: no limit), shards
 * model-0000k-of-0000n.safetensors of whole parameters and
 * model.safetensors.index.json, written last (on failure no shard is left).
 * Files of an earlier save of the other form are removed after. */
int ax_model_save(const char *dir, ax_gpt *m, int64_t max_shard, ax_st_dtype t);
#endif
