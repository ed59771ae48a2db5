#include "nn/linear.h"
#include "backend/backend.h"
#include <string.h>

void ax_linear_init(ax_linear *L, ax_grid *g, int in, int out, ax_linear_opts o) {
    int out_pad = o.out_pad, transposed = o.transposed, nparts = o.nparts;
    const int64_t *part = o.part, *unit = o.unit;
    memset(L, 0, sizeof *L);
    L->in = in;
    L->out = out;
    L->out_pad = out_pad ? out_pad : out;
    L->transposed = transposed;
    int in_axis = transposed ? AX_AXIS_Y : AX_AXIS_X, out_axis = transposed ? AX_AXIS_X : AX_AXIS_Y;
    L->w = (ax_shard){
        .rows = out, .rows_pad = L->out_pad, .cols = in, .row_axis = out_axis, .col_axis = in_axis, .zchunk = 1};
    L->b = (ax_shard){.rows = 1, .cols = out, .col_axis = out_axis};
    if (nparts) {
        L->w.parts_axis = AX_PARTS_ROWS;
        L->b.parts_axis = AX_PARTS_COLS;
        L->w.nparts = L->b.nparts = nparts;
        for (int i = 0; i < nparts; i++) {
            L->w.part[i] = L->b.part[i] = part[i];
            L->w.unit[i] = L->b.unit[i] = unit ? unit[i] : 0;
        }
    }
    /* the weight block's shape: with replicated parts, more than out / G_y rows */
    L->in_l = (int)ax_shard_block_cols(&L->w, g);
    L->out_l = (int)ax_shard_block_rows(&L->w, g);
    L->fwd = transposed ? &g->Y : &g->X;
    L->bwd = transposed ? &g->X : &g->Y;
}

ax_mat ax_linear_weight(const ax_linear *L, ax_grid *g, const void *chunk, ax_dtype t, void *wblock) {
    const void *w = chunk;
    if (g->gz > 1) {
        size_t n = ax_shard_numel(&L->w, g);
        if (t == AX_BF16) ax_allgather_bf16(&g->Zg, chunk, wblock, n);
        else ax_allgather_f32(&g->Zg, chunk, wblock, n);
        w = wblock;
    }
    return ax_mat_of(w, t, L->out_l, L->in_l);
}

/* the backend's GEMM epilogue applies where no all-reduce comes between the
 * product and the bias (a forward group of one rank) */
static int fusable(const ax_linear *L, const float *bias) {
    return bias && ax_be()->gemm_epilogue && L->fwd->size == 1;
}

void ax_linear_forward(const ax_linear *L, ax_mat W, const float *bias, ax_mat x, float *y) {
    int M = x.rows;
    if (fusable(L, bias)) {
        ax_be()->gemm_epilogue(AX_EPI_BIAS, x, 0, W, 1, ax_mat_f32(y, M, L->out_l), bias, NULL);
        return;
    }
    ax_gemm(1.0f, x, 0, W, 1, 0.0f, ax_mat_f32(y, M, L->out_l));
    ax_allreduce_f32(L->fwd, y, (size_t)M * L->out_l);
    if (bias) ax_be()->bias_add(y, bias, M, L->out_l);
}

void ax_linear_forward_to(const ax_linear *L, ax_mat W, ax_mat x, ax_mat y, float *y32) {
    if (y.dtype == AX_F32) {
        ax_linear_forward(L, W, NULL, x, y.data);
    } else if (L->fwd->size == 1) {
        ax_gemm(1.0f, x, 0, W, 1, 0.0f, y);
    } else {
        ax_linear_forward(L, W, NULL, x, y32);
        ax_be()->cast(y.data, y.dtype, y32, AX_F32, (size_t)y.rows * y.cols);
    }
}

void ax_linear_forward_bias_to(const ax_linear *L, ax_mat W, const float *bias, ax_mat x, ax_mat y, float *y32) {
    if (fusable(L, bias)) ax_be()->gemm_epilogue(AX_EPI_BIAS, x, 0, W, 1, y, bias, NULL);
    else {
        ax_linear_forward(L, W, NULL, x, y32);
        ax_be()->bias_round(y32, y.data, y.dtype, bias, y.rows, y.cols);
    }
}

void ax_linear_forward_gelu(const ax_linear *L, ax_mat W, const float *bias, ax_mat x, ax_mat act, void *pre,
                            float *y32) {
    if (fusable(L, bias)) ax_be()->gemm_epilogue(AX_EPI_BIAS_GELU, x, 0, W, 1, act, bias, pre);
    else {
        ax_linear_forward(L, W, NULL, x, y32);
        ax_be()->bias_gelu_forward(act.data, act.dtype, pre, act.dtype, y32, bias, act.rows, act.cols);
    }
}

void ax_linear_ws_init(ax_linear_ws *ws, ax_grid *g, const ax_linear *const *layers, int nl, int slots,
                       int64_t chunk_min) {
    size_t cap = 0, chunk = (size_t)chunk_min;
    for (int i = 0; i < nl; i++) {
        size_t n = (size_t)ax_shard_numel(&layers[i]->w, g);
        if (n * g->gz > cap) cap = n * g->gz;
        if (n > chunk) chunk = n;
    }
    memset(ws, 0, sizeof *ws);
    ax_zscatter_init(&ws->rs, g, slots, cap, chunk);
}

void ax_linear_ws_free(ax_linear_ws *ws) { ax_zscatter_free(&ws->rs); }

void ax_linear_reduce_grad(const ax_linear *L, ax_grid *g, float *gblock, float *dw_chunk, ax_linear_ws *ws) {
    ax_zscatter_start(&ws->rs, gblock, ax_shard_block_numel(&L->w, g), ax_shard_numel(&L->w, g), dw_chunk, ws->ors);
}

void ax_linear_backward(const ax_linear *L, ax_grid *g, ax_mat W, ax_mat x, ax_mat dy, float *dx, float *dw_chunk,
                        float *dbias, ax_linear_ws *ws, ax_bf16 *dy_cast) {
    int M = x.rows, in = L->in_l, out = L->out_l;
    ax_mat d = ax_mat_of(dy.data, dy.dtype, M, out);
    if (W.dtype == AX_BF16 && dy.dtype == AX_F32) { /* a dy the kernel before did not write in bf16 */
        ax_be()->cast(dy_cast, AX_BF16, dy.data, AX_F32, (size_t)M * out);
        d = ax_mat_of(dy_cast, AX_BF16, M, out);
    }
    ax_req r;
    if (dx) {
        ax_gemm(1.0f, d, 0, W, 0, 0.0f, ax_mat_f32(dx, M, in));
        ax_iallreduce_f32(L->bwd, dx, (size_t)M * in, &r);
        if (!ws->oar) ax_wait(&r);
    }
    if (g->gz == 1) {
        ax_gemm(1.0f, d, 1, x, 0, 1.0f, ax_mat_f32(dw_chunk, out, in));
    } else {
        float *block = ax_zscatter_block(&ws->rs);
        ax_gemm(1.0f, d, 1, x, 0, 0.0f, ax_mat_f32(block, out, in));
        ax_linear_reduce_grad(L, g, block, dw_chunk, ws);
    }
    if (dbias) ax_be()->bias_grad(dbias, dy.data, M, out);
    if (dx) ax_wait(&r);
}
