/* The Z collectives of the 3D layers in flight (docs/algorithm.md §4: OAG, ORS).
 *
 * Weights are stored as Z chunks and gathered before use; weight gradients are
 * computed as full blocks and reduce-scattered back. Both can run behind
 * compute when each collective in flight has its own buffer:
 *
 * ax_zfetch: gathered weights, keyed by the caller (a layer and weight index).
 * With prefetch two buffers: the weight in use and the next one, whose
 * all-gather (over the second Z group, so gathers do not queue behind
 * reduce-scatters) runs while the current one computes. With keep, one
 * buffer per key: a weight gathered in forward is still there in backward
 * (memory for communication).
 *
 *   ax_mat W = ax_zfetch_get(&f, key, chunk, n, rows, cols);   // waits for, or gathers, key
 *   ax_zfetch_start(&f, next, next_chunk, n2);                  // prefetch, returns at once
 *   ...GEMMs with W...
 *
 * ax_zscatter: weight-gradient blocks reduce-scattered over Z, a ring of
 * slots. ax_zscatter_block hands out a slot's block (after completing what
 * the slot held), ax_zscatter_start starts its reduce-scatter; completion
 * adds the chunk into the gradient. ax_zscatter_drain completes all. Whether
 * a collective is waited for at once or later, the same MPI calls run on the
 * same buffers: the bits are the same either way. */
#ifndef AX_NN_ZCOMM_H
#define AX_NN_ZCOMM_H
#include "grid/grid.h"

typedef struct {
    ax_grid *g;
    ax_dtype dtype;
    int nbuf, keep, cur; /* cur: the buffer last handed out */
    size_t cap;          /* elements per buffer */
    void **buf;
    int *key; /* held by each buffer, -1: none */
    ax_req *req;
    int64_t prefetched; /* gets served by an earlier start (statistics) */
} ax_zfetch;

/* nbuf buffers of cap elements (the largest gathered block): 1 without
 * prefetch, 2 with; with keep one per key (keys are 0..nbuf-1) */
void ax_zfetch_init(ax_zfetch *f, ax_grid *g, ax_dtype t, size_t cap, int nbuf, int keep);
void ax_zfetch_free(ax_zfetch *f);
/* Forget every gathered weight (the chunks changed). Waits for gathers in flight. */
void ax_zfetch_reset(ax_zfetch *f);
/* Starts the gather of key (chunks of n elements) into a free buffer unless
 * it is held or in flight. */
void ax_zfetch_start(ax_zfetch *f, int key, const void *chunk, size_t n);
/* The (rows, cols) weight of key: the chunk itself when Gz = 1, else its
 * gathered block (waited for, or gathered now). Valid until the next get. */
ax_mat ax_zfetch_get(ax_zfetch *f, int key, const void *chunk, size_t n, int rows, int cols);
double ax_zfetch_bytes(const ax_zfetch *f);

typedef struct {
    ax_comm *Z;
    int n, next;
    size_t cap, chunk_cap;
    struct {
        float *block, *chunk, *dst;
        int64_t len;
        ax_req req;
    } * s;
    int64_t deferred; /* completions left for later than their start (statistics) */
} ax_zscatter;

/* n slots of blocks of cap floats, chunks of chunk_cap */
void ax_zscatter_init(ax_zscatter *z, ax_grid *g, int n, size_t cap, size_t chunk_cap);
void ax_zscatter_free(ax_zscatter *z);
/* The next slot's block (cap floats), after completing the slot's last use. */
float *ax_zscatter_block(ax_zscatter *z);
/* dw_chunk (n) += this rank's Z chunk of the sum of block, a full gradient
 * block of nb elements (the slot's from ax_zscatter_block, or the caller's,
 * which then stays untouched until completion), zero-padded to Gz * n.
 * Completes at once unless defer. */
void ax_zscatter_start(ax_zscatter *z, float *block, int64_t nb, int64_t n, float *dw_chunk, int defer);
void ax_zscatter_drain(ax_zscatter *z);
/* Completes the reduce-scatters into gradients within [lo, hi). */
void ax_zscatter_complete_range(ax_zscatter *z, const float *lo, const float *hi);
double ax_zscatter_bytes(const ax_zscatter *z);
#endif
