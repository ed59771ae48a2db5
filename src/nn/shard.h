/* How one logical (unsharded) parameter tensor lives on the grid (docs/algorithm.md §2-3).
 *
 * A logical tensor is [rows, cols] row-major (a vector is [1, cols]). Its rows
 * may be split over the X or Y group, and so may its columns; rows may be padded
 * (the vocabulary, to a multiple the grid needs). A rank's block is
 * [rows_pad/G_row, cols/G_col]. A "zchunk" tensor (every FC weight and the
 * embedding) is further cut, flattened row-major, into Gz contiguous chunks;
 * rank z stores chunk z only (zero-padded to equal length). A Y-split axis
 * made of parts (the fused [q | k | v] features, or Llama's [gate | up]) is
 * reordered so that Y shard y holds [part 0's y-th block | part 1's | ...]:
 * whole heads of q, k and v, or the gate and up features one product needs.
 * A part is made of units (unit[i] features: a head) that are never cut. A
 * part of fewer units than G_y is replicated instead of split: it is cut into
 * its units, and G_y / units consecutive Y shards hold each (grouped-query
 * attention's k and v heads when there are fewer than G_y: shard y holds the
 * one key/value head its query heads read). Such copies must receive the sum
 * of their gradients (ax_shard_copies) and are counted once (ax_shard_sumsq).
 *
 *   ax_shard s = {.rows = 3*C, .cols = C, .row_axis = AX_AXIS_Y, .col_axis = AX_AXIS_X,
 *                 .zchunk = 1, .parts_axis = AX_PARTS_ROWS, .nparts = 3, .part = {C, C, C}};
 *   float *mine = malloc(ax_shard_numel(&s, g) * 4);
 *   ax_shard_extract(&s, g, logical, mine);
 */
#ifndef AX_NN_SHARD_H
#define AX_NN_SHARD_H
#include <stdint.h>
#include "grid/grid.h"

enum { AX_AXIS_NONE = 0, AX_AXIS_X = 1, AX_AXIS_Y = 2 };
enum { AX_PARTS_NONE = 0, AX_PARTS_ROWS = 1, AX_PARTS_COLS = 2 };

typedef struct {
    int64_t rows, cols;     /* logical shape */
    int64_t rows_pad;       /* >= rows; 0 means rows */
    int row_axis, col_axis; /* AX_AXIS_* */
    int zchunk;
    int parts_axis; /* which axis (split over Y) is made of parts */
    int nparts;
    int64_t part[3]; /* logical features of each part, in order */
    int64_t unit[3]; /* features of a part's unit (0: 1); a part's units divide by G_y or divide G_y */
} ax_shard;

/* block shape on a rank */
int64_t ax_shard_block_rows(const ax_shard *s, const ax_grid *g);
int64_t ax_shard_block_cols(const ax_shard *s, const ax_grid *g);
int64_t ax_shard_block_numel(const ax_shard *s, const ax_grid *g);
/* elements stored per rank (a zchunk's padded length, or the block) */
int64_t ax_shard_numel(const ax_shard *s, const ax_grid *g);
/* Axes (bit 1 = X, 2 = Y, 4 = Z) over which identical copies of the whole
 * block are stored (replicated parts are not a whole axis: ax_shard_copies). */
int ax_shard_replicated(const ax_shard *s, const ax_grid *g);
/* Parts replicated over Y: each is held by the returned number of
 * consecutive Y shards (1: no part is), in the local elements [*lo, *hi) of
 * the rank at depth z (empty when its Z chunk holds none). Replicated parts
 * are consecutive and equally replicated (k and v). */
int ax_shard_copies(const ax_shard *s, const ax_grid *g, int z, int64_t *lo, int64_t *hi);
/* The ranges (at most 2, into x and len; returns how many) of this rank's
 * local elements that it counts for the grid, so that a sum of squares over
 * X x Y x Z counts every logical element once: only coordinate 0 of a
 * replicated axis, and of each replicated part's copies. */
int ax_shard_sumsq_ranges(const ax_shard *s, const ax_grid *g, const float *local, const float **x, size_t *len);

/* Logical flat index of local element i on the rank at (x, y, z), or -1 for padding. */
int64_t ax_shard_logical_index(const ax_shard *s, const ax_grid *g, int x, int y, int z, int64_t i);
/* Length of the run of local elements from i that are consecutive logical
 * elements (all within one logical row), or all padding: elements i .. i+k-1
 * are logical j .. j+k-1 for j = ax_shard_logical_index(.., i) >= 0. */
int64_t ax_shard_run(const ax_shard *s, const ax_grid *g, int x, int y, int z, int64_t i);
void ax_shard_extract(const ax_shard *s, const ax_grid *g, const float *logical, float *local);
/* Places a local tensor of the rank at (x, y, z) into the logical tensor. */
void ax_shard_insert(const ax_shard *s, const ax_grid *g, int x, int y, int z, const float *local, float *logical);
#endif
