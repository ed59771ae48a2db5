/* How one logical (unsharded) parameter tensor lives on the grid (SPEC §2-3).
 *
 * A logical tensor is [rows, cols] row-major (a vector is [1, cols]). Its rows
 * may be split over the X or Y group, and so may its columns; rows may be padded
 * (the vocabulary, to a multiple the grid needs). A rank's block is
 * [rows_pad/G_row, cols/G_col]. A "zchunk" tensor (every FC weight and the
 * embedding) is further cut, flattened row-major, into Gz contiguous chunks;
 * rank z stores chunk z only (zero-padded to equal length). A permuted axis
 * (the QKV output features) reorders the logical features so that each Y shard
 * holds q, k and v of whole heads.
 *
 *   ax_shard s = {.rows = 3*C, .cols = C, .row_axis = AX_AXIS_Y, .col_axis = AX_AXIS_X,
 *                 .zchunk = 1, .qkv = AX_QKV_ROWS, .qkv_c = C, .qkv_heads = NH};
 *   float *mine = malloc(ax_shard_numel(&s, g) * 4);
 *   ax_shard_extract(&s, g, logical, mine);
 */
#ifndef AX_NN_SHARD_H
#define AX_NN_SHARD_H
#include <stdint.h>
#include "grid/grid.h"

enum { AX_AXIS_NONE = 0, AX_AXIS_X = 1, AX_AXIS_Y = 2 };
enum { AX_QKV_NONE = 0, AX_QKV_ROWS = 1, AX_QKV_COLS = 2 };

typedef struct {
    int64_t rows, cols;      /* logical shape */
    int64_t rows_pad;        /* >= rows; 0 means rows */
    int row_axis, col_axis;  /* AX_AXIS_* */
    int zchunk;
    int qkv;                 /* which axis carries [q | k | v] features */
    int64_t qkv_c;           /* C: features per q/k/v part */
    int qkv_heads;           /* heads, split over the Y group */
} ax_shard;

/* block shape on a rank */
int64_t ax_shard_block_rows(const ax_shard *s, const ax_grid *g);
int64_t ax_shard_block_cols(const ax_shard *s, const ax_grid *g);
int64_t ax_shard_block_numel(const ax_shard *s, const ax_grid *g);
/* elements stored per rank (a zchunk's padded length, or the block) */
int64_t ax_shard_numel(const ax_shard *s, const ax_grid *g);
/* Axes (bit 1 = X, 2 = Y, 4 = Z) over which identical copies are stored. */
int ax_shard_replicated(const ax_shard *s, const ax_grid *g);

/* Logical flat index of local element i on the rank at (x, y, z), or -1 for padding. */
int64_t ax_shard_logical_index(const ax_shard *s, const ax_grid *g, int x, int y, int z, int64_t i);
void ax_shard_extract(const ax_shard *s, const ax_grid *g, const float *logical, float *local);
/* Places a local tensor of the rank at (x, y, z) into the logical tensor. */
void ax_shard_insert(const ax_shard *s, const ax_grid *g, int x, int y, int z, const float *local, float *logical);
#endif
