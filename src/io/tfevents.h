/* TensorBoard event files, written without a protobuf library.
 *
 * A file is a sequence of records: the data's length (uint64, little-endian),
 * the masked CRC-32C of those 8 bytes, the data (one serialized Event
 * message), the masked CRC-32C of the data. This module encodes the few
 * messages a training log needs (tensorflow/core/util/event.proto and
 * summary.proto): Event {wall_time, step, file_version | summary | session_log},
 * Summary.Value {tag, simple_value} for scalars and {tag, metadata, tensor}
 * for a text plugin string. Why by hand: docs/usage.md, "Watching runs".
 *
 *   ax_tfevents w;
 *   if (ax_tfevents_create(&w, "runs/a") == 0) {     // events.out.tfevents.<time>.<host>.<pid>.<n>
 *       ax_tfevents_scalar(&w, 1, "train/loss", 5.25);
 *       ax_tfevents_flush(&w);
 *       ax_tfevents_close(&w);
 *   }
 */
#ifndef AX_IO_TFEVENTS_H
#define AX_IO_TFEVENTS_H
#include <stddef.h>
#include <stdint.h>
#include "util/crc.h"
#include <stdio.h>

typedef struct {
    FILE *fp;
    char path[4352];
} ax_tfevents;

/* A new event file in dir (which must exist), its first record the file
 * version TensorBoard expects ("brain.Event:2"). */
int ax_tfevents_create(ax_tfevents *w, const char *dir);
void ax_tfevents_scalar(ax_tfevents *w, int64_t step, const char *tag, double value);
/* text: a string for TensorBoard's text plugin (rendered as Markdown) */
void ax_tfevents_text(ax_tfevents *w, int64_t step, const char *tag, const char *text);
/* SessionLog START at step: a reader drops the points of steps >= step read
 * before it, those of a run that went on past the checkpoint it restarts from */
void ax_tfevents_start(ax_tfevents *w, int64_t step);
/* the records so far handed to the operating system (a live TensorBoard sees them) */
int ax_tfevents_flush(ax_tfevents *w);
void ax_tfevents_close(ax_tfevents *w);

/* Every event file of dir (names holding "tfevents", as TensorBoard reads
 * them) rewritten without the events of steps after `step`, and without a
 * torn or corrupt tail; files with nothing to drop are left as they are. */
int ax_tfevents_trim(const char *dir, int64_t step);

/* the masked form of a CRC-32C (util/crc.h) the records store */
uint32_t ax_crc32c_mask(uint32_t crc);
#endif
