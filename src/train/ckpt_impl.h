/* What checkpoint.c (layout, manifest, verification, the root writer) and
 * ckpt_writer.c (the parallel and background writer) share; not an API.
 *   ax_ckpt_ranges r = {.chunk = AX_CKPT_CHUNK, ...};  ax_ckpt_write_manifest(tmp, &r); */
#ifndef AX_TRAIN_CKPT_IMPL_H
#define AX_TRAIN_CKPT_IMPL_H
#include <jansson.h>
#include <stdint.h>
#include "train/checkpoint.h"

#define AX_CKPT_MODEL "model.safetensors"
#define AX_CKPT_OPTIM "optim.safetensors"
/* the tensor-name prefixes of the model file and of the optimizer's (AdamW's
 * first and second moments), each naming every parameter */
static const char *const ax_ckpt_prefix[2][2] = {{"", NULL}, {"opt.m.", "opt.v."}};

/* Checksums of the two safetensors files by ranges of `chunk` bytes (the
 * last one shorter): file f's chunk k has hash[first[f] + k]. */
typedef struct {
    int64_t chunk, bytes[2], nchunk[2], first[2];
    const uint64_t *hash;
} ax_ckpt_ranges;

/* The commit marker into dir: config.json and state.json hashed whole;
 * the safetensors files by r's ranges, or whole when r is NULL. */
int ax_ckpt_write_manifest(const char *dir, const ax_ckpt_ranges *r);
int ax_ckpt_write_state(const char *path, const ax_ckpt_state *st);
/* The byte spans of one file a rank reads: n pairs (offset, length) in span,
 * sorted by offset once complete (ax_ckpt_spans_sort). */
typedef struct {
    int64_t *span;
    int n, cap;
} ax_ckpt_spans;
void ax_ckpt_spans_add(void *spans, int64_t off, int64_t len); /* an ax_span_fn */
void ax_ckpt_spans_sort(ax_ckpt_spans *s);
/* Which checksum ranges of a file a rank hashes: those holding a byte of
 * the header or of reads, and of those the ones i with i mod nreplica =
 * replica (the ranks that read the same bytes split them). */
typedef struct {
    const ax_ckpt_spans *reads;
    int replica, nreplica;
} ax_ckpt_verify_share;
/* path against its manifest entry {bytes, hash, ranges} (ckpt_verify.c;
 * manifest names the manifest): the layout, and with v the checksums of
 * v's ranges (without: the layout alone). */
int ax_ckpt_verify_ranges(const char *path, const char *manifest, json_t *entry, const ax_ckpt_verify_share *v);
/* Puts the complete checkpoint tmp in place as dir: a checkpoint already
 * there is renamed aside to <dir>.old first and removed last, so a crash or
 * a failed rename leaves one of them whole (ax_ckpt_recover puts it right). */
int ax_ckpt_install(const char *tmp, const char *dir);
/* Removes a checkpoint directory: renamed to <dir>.del, then emptied and
 * removed (ckpt_dir.c). */
void ax_ckpt_remove(const char *dir);
#endif
