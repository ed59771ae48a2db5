#include "nn/shard.h"
#include "backend/backend.h"
#include <string.h>

static int axis_size(const ax_grid *g, int axis) { return axis == AX_AXIS_X ? g->gx : axis == AX_AXIS_Y ? g->gy : 1; }
static int axis_coord(int axis, int x, int y) { return axis == AX_AXIS_X ? x : axis == AX_AXIS_Y ? y : 0; }
static int64_t rows_pad(const ax_shard *s) { return s->rows_pad ? s->rows_pad : s->rows; }

/* Y blocks part i is cut into: G_y when its units split over Y, else one
 * per unit, each held by G_y / units consecutive shards */
static int64_t part_blocks(const ax_shard *s, const ax_grid *g, int i) {
    int64_t n = s->part[i] / (s->unit[i] ? s->unit[i] : 1);
    return n < g->gy ? n : g->gy;
}
static int64_t part_width(const ax_shard *s, const ax_grid *g, int i) { return s->part[i] / part_blocks(s, g, i); }
static int part_copies(const ax_shard *s, const ax_grid *g, int i) { return g->gy / (int)part_blocks(s, g, i); }
/* features of the parts axis on one Y shard */
static int64_t parts_width(const ax_shard *s, const ax_grid *g) {
    int64_t w = 0;
    for (int i = 0; i < s->nparts; i++) w += part_width(s, g, i);
    return w;
}

int64_t ax_shard_block_rows(const ax_shard *s, const ax_grid *g) {
    return s->parts_axis == AX_PARTS_ROWS ? parts_width(s, g) : rows_pad(s) / axis_size(g, s->row_axis);
}
int64_t ax_shard_block_cols(const ax_shard *s, const ax_grid *g) {
    return s->parts_axis == AX_PARTS_COLS ? parts_width(s, g) : s->cols / axis_size(g, s->col_axis);
}
int64_t ax_shard_block_numel(const ax_shard *s, const ax_grid *g) {
    return ax_shard_block_rows(s, g) * ax_shard_block_cols(s, g);
}

int64_t ax_shard_numel(const ax_shard *s, const ax_grid *g) {
    int64_t n = ax_shard_block_numel(s, g);
    return s->zchunk ? (n + g->gz - 1) / g->gz : n;
}

int ax_shard_replicated(const ax_shard *s, const ax_grid *g) {
    int used = 0;
    if (s->row_axis) used |= s->row_axis;
    if (s->col_axis) used |= s->col_axis;
    int rep = (~used) & 3;
    if (!s->zchunk) rep |= 4;
    return rep;
}

/* Logical feature of position p in the part-grouped order, where shard y
 * holds [part 0's block | part 1's | ...] (block y, or y / copies of a
 * replicated part); *left: positions from p to the end of its block. */
static int64_t parts_unpermute(const ax_shard *s, const ax_grid *g, int64_t p, int64_t *left) {
    int64_t w = parts_width(s, g), y = p / w, r = p % w, first = 0;
    for (int i = 0; i < s->nparts; i++) {
        int64_t wi = part_width(s, g, i);
        if (r < wi) {
            *left = wi - r;
            return first + y / part_copies(s, g, i) * wi + r;
        }
        r -= wi;
        first += s->part[i];
    }
    *left = 0;
    return -1; /* unreachable: p is within the shard */
}

int ax_shard_copies(const ax_shard *s, const ax_grid *g, int z, int64_t *lo, int64_t *hi) {
    int64_t a = -1, b = -1, off = 0;
    int c = 1;
    for (int i = 0; i < s->nparts; i++) {
        int64_t wi = part_width(s, g, i);
        if (part_copies(s, g, i) > 1) {
            if (a < 0) a = off;
            b = off + wi;
            c = part_copies(s, g, i);
        }
        off += wi;
    }
    *lo = *hi = 0;
    if (c == 1) return 1;
    /* rows of parts span whole block rows; columns of parts are a vector's (one row) */
    if (s->parts_axis == AX_PARTS_ROWS) {
        a *= ax_shard_block_cols(s, g);
        b *= ax_shard_block_cols(s, g);
    }
    int64_t n = ax_shard_numel(s, g), base = s->zchunk ? z * n : 0;
    a = a - base < 0 ? 0 : a - base;
    b = b - base > n ? n : b - base;
    if (a < b) {
        *lo = a;
        *hi = b;
    }
    return c;
}

int ax_shard_sumsq_ranges(const ax_shard *s, const ax_grid *g, const float *local, const float **x, size_t *len) {
    int rep = ax_shard_replicated(s, g), k = 0;
    if (((rep & 1) && g->x) || ((rep & 2) && g->y) || ((rep & 4) && g->z)) return 0;
    int64_t lo, hi, n = ax_shard_numel(s, g);
    if (g->y % ax_shard_copies(s, g, g->z, &lo, &hi) == 0) lo = hi = n; /* the counted copy (or none replicated) */
    if (lo > 0) {
        x[k] = local;
        len[k++] = (size_t)lo;
    }
    if (n > hi) {
        x[k] = local + hi;
        len[k++] = (size_t)(n - hi);
    }
    return k;
}

int64_t ax_shard_logical_index(const ax_shard *s, const ax_grid *g, int x, int y, int z, int64_t i) {
    int64_t br = ax_shard_block_rows(s, g), bc = ax_shard_block_cols(s, g);
    if (s->zchunk) {
        i += z * ax_shard_numel(s, g);
        if (i >= br * bc) return -1;
    }
    int64_t r = axis_coord(s->row_axis, x, y) * br + i / bc;
    int64_t c = axis_coord(s->col_axis, x, y) * bc + i % bc;
    int64_t left = 0;
    if (s->parts_axis == AX_PARTS_ROWS) r = parts_unpermute(s, g, r, &left);
    if (s->parts_axis == AX_PARTS_COLS) c = parts_unpermute(s, g, c, &left);
    if (r >= s->rows) return -1;
    return r * s->cols + c;
}

/* A run stays in one block row, one Z chunk and one permuted segment: the
 * logical index moves by one with the local index inside it. */
int64_t ax_shard_run(const ax_shard *s, const ax_grid *g, int x, int y, int z, int64_t i) {
    int64_t n = ax_shard_numel(s, g), bc = ax_shard_block_cols(s, g), ie = s->zchunk ? i + z * n : i;
    if (s->zchunk && ie >= ax_shard_block_numel(s, g)) return n - i;
    int64_t run = bc - ie % bc;
    if (s->parts_axis == AX_PARTS_COLS) {
        int64_t left = 0;
        parts_unpermute(s, g, axis_coord(s->col_axis, x, y) * bc + ie % bc, &left);
        if (left < run) run = left;
    }
    return run < n - i ? run : n - i;
}

void ax_shard_extract(const ax_shard *s, const ax_grid *g, const float *logical, float *local) {
    int64_t n = ax_shard_numel(s, g);
    for (int64_t i = 0, k; i < n; i += k) {
        k = ax_shard_run(s, g, g->x, g->y, g->z, i);
        int64_t j = ax_shard_logical_index(s, g, g->x, g->y, g->z, i);
        if (j < 0) memset(local + i, 0, k * sizeof(float));
        else memcpy(local + i, logical + j, k * sizeof(float));
    }
}

void ax_shard_insert(const ax_shard *s, const ax_grid *g, int x, int y, int z, const float *local, float *logical) {
    int64_t n = ax_shard_numel(s, g);
    for (int64_t i = 0, k; i < n; i += k) {
        k = ax_shard_run(s, g, x, y, z, i);
        int64_t j = ax_shard_logical_index(s, g, x, y, z, i);
        if (j >= 0) memcpy(logical + j, local + i, k * sizeof(float));
    }
}
