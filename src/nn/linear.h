/* The 3D-parallel fully-connected layer (docs/algorithm.md §2): y = x W^T + b, W [out, in].
 *
 * Non-transposed (QKV, MLP up, LM head): input columns split over X, output
 * columns over Y; the forward partial products are all-reduced over X, the
 * backward dX over Y. Transposed (attention and MLP out-projections): the roles
 * of X and Y swapped. Weights are stored as Z chunks of the (y, x) block and
 * gathered before use; weight gradients are reduce-scattered back over Z.
 *
 * GEMMs read x, the weight and dy in one dtype (fp32, or bf16 under mixed
 * precision: the weight chunk is then its bf16 copy and gathered as such; x
 * and dy as the kernels before wrote them, an fp32 dy rounded here);
 * outputs, reductions and gradients stay fp32, except where a caller asks
 * for y in the GEMM dtype (ax_linear_forward_to: the LM head's logits).
 *
 *   ax_linear fc; ax_linear_init(&fc, g, C, 4*C, (ax_linear_opts){0});
 *   ax_linear_ws ws; ax_linear_ws_init(&ws, g, (const ax_linear *[]){&fc}, 1, 1, 0);
 *   ax_mat W = ax_linear_weight(&fc, g, w_chunk, AX_F32, wblock);      // (out_l, in_l)
 *   ax_linear_forward(&fc, W, b, ax_mat_f32(x, M, fc.in_l), y);        // y (M, out_l)
 *   ax_linear_backward(&fc, g, W, ax_mat_f32(x, M, fc.in_l), ax_mat_f32(dy, M, fc.out_l), dx, dw_chunk,
 *                      db, &ws, NULL);
 *   ax_zscatter_drain(&ws.rs);                                         // dw_chunk final
 */
#ifndef AX_NN_LINEAR_H
#define AX_NN_LINEAR_H
#include "grid/grid.h"
#include "nn/shard.h"
#include "nn/zcomm.h"

typedef struct {
    int in, out, out_pad; /* logical sizes (out_pad: padded rows, e.g. the vocabulary) */
    int transposed;
    int in_l, out_l; /* local widths of x and y */
    ax_shard w, b;
    ax_comm *fwd, *bwd; /* all-reduce groups: forward output, backward dX */
} ax_linear;

/* What backward shares across layers: the weight-gradient reduce-scatters
 * over Z (nn/zcomm.h) and which communication it leaves running behind
 * compute. oar: the dX all-reduce runs during the dW GEMM (docs/algorithm.md §4 OAR);
 * ors: reduce-scatters complete when their slot is next needed, or at
 * ax_zscatter_drain (ORS). Results are the same bits either way. */
typedef struct {
    ax_zscatter rs;
    int oar, ors;
} ax_linear_ws;

/* What sets a layer apart from the plain non-transposed one of in x out;
 * give the fields that apply by name, the others are 0:
 *   (ax_linear_opts){.transposed = 1}, (ax_linear_opts){.out_pad = Vp} */
typedef struct {
    int out_pad;    /* padded output rows (the vocabulary); 0: out */
    int transposed; /* an out-projection: the roles of X and Y swapped */
    /* nparts > 0: the output features are nparts parts of part[i] features
     * (summing to out) made of units of unit[i] features (NULL: 1), grouped
     * per Y shard (nn/shard.h): the fused [q|k|v] of whole heads (a part of
     * fewer heads than G_y replicated), or [gate|up]. */
    int nparts;
    const int64_t *part, *unit;
} ax_linear_opts;

void ax_linear_init(ax_linear *L, ax_grid *g, int in, int out, ax_linear_opts o);
/* slots of reduce-scatter, each for the largest of the layers' blocks, and
 * chunks of at least chunk_min (blocks the caller reduces from its own
 * buffers, like the embedding's) */
void ax_linear_ws_init(ax_linear_ws *ws, ax_grid *g, const ax_linear *const *layers, int nl, int slots,
                       int64_t chunk_min);
void ax_linear_ws_free(ax_linear_ws *ws);
/* The gathered (out_l, in_l) block of a chunk of dtype t: the chunk itself
 * when Gz = 1, else gathered (blocking) into wblock. */
ax_mat ax_linear_weight(const ax_linear *L, ax_grid *g, const void *chunk, ax_dtype t, void *wblock);
/* y (M, out_l) = x (M, in_l) W^T, all-reduced, + bias (NULL: none); M = x.rows;
 * the bias in the GEMM's epilogue where the backend has one (same bits) */
void ax_linear_forward(const ax_linear *L, ax_mat W, const float *bias, ax_mat x, float *y);
/* The same without bias into y's dtype: bf16 y is the fp32 result rounded
 * once, by the GEMM itself where the forward group is one rank (no
 * all-reduce), else after an fp32 all-reduce in y32 (M, out_l floats; unused
 * otherwise, may be NULL then). Every grid rounds the same fp32 sum. */
void ax_linear_forward_to(const ax_linear *L, ax_mat W, ax_mat x, ax_mat y, float *y32);
/* y (M, out_l) = x W^T + bias in y's dtype, rounded once: in the GEMM's
 * epilogue where the backend has one and the forward group is one rank,
 * else through y32 (M, out_l floats), which then holds y's values */
void ax_linear_forward_bias_to(const ax_linear *L, ax_mat W, const float *bias, ax_mat x, ax_mat y, float *y32);
/* pre = x W^T + bias and act = gelu(pre), both (M, out_l) in act's dtype,
 * fused as ax_linear_forward_bias_to (y32: the unfused path's fp32 product) */
void ax_linear_forward_gelu(const ax_linear *L, ax_mat W, const float *bias, ax_mat x, ax_mat act, void *pre,
                            float *y32);
/* dx (M, in_l) = dy W (all-reduced; NULL: not needed); dw_chunk += this rank's
 * chunk of the Z-reduced dy^T x (final after the reduce-scatter completes,
 * see ax_linear_ws); dbias += column sums of dy (fp32 dy only; a bf16 dy's
 * producer sums them, e.g. the fused GELU backward). When W is bf16 and dy
 * fp32, the GEMMs read dy rounded into dy_cast (M * out_l bf16). */
void ax_linear_backward(const ax_linear *L, ax_grid *g, ax_mat W, ax_mat x, ax_mat dy, float *dx, float *dw_chunk,
                        float *dbias, ax_linear_ws *ws, ax_bf16 *dy_cast);
/* dw_chunk += Z-reduce-scatter of a full gradient block gblock (out_l, in_l),
 * which stays in use until the reduce-scatter completes. */
void ax_linear_reduce_grad(const ax_linear *L, ax_grid *g, float *gblock, float *dw_chunk, ax_linear_ws *ws);
#endif
