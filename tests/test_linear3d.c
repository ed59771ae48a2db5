/* The 3D-parallel FC layer (docs/algorithm.md §2) against a serial computation, on every
 * ordered factorisation (D, X, Y, Z) of the world size in one launch.
 *
 * Every rank builds the same logical W [out, in], b [out], X [Mtot, in] and
 * dY [Mtot, out] from a counter-based generator, takes its own slice (rows of
 * data x Z shard r = d*Gz + z, input columns of its X or Y coordinate), runs
 * forward and backward, and compares with the serial results computed in
 * double: the output and dX slices locally, dW and db after reassembling the
 * logical tensors from the owning ranks (so a gap or an overlap in the
 * sharding is an error too).
 *
 * Cases per grid: both orientations with bias and a weight block whose size is
 * not a multiple of Gz (zero-padded Z chunks), both orientations with
 * unconstrained sizes, a head-grouped QKV layer (out = 3*in), a grouped-query
 * QKV layer (fewer key/value heads) and an SwiGLU [gate | up] layer (the
 * output in parts, nn/shard.h), and a padded output (the LM head: out_pad >
 * out, no bias).
 *
 * Every case runs in fp32 and in bf16. Under bf16 the serial layer reads W, X
 * and dY rounded to bf16 (db the fp32 dY): the layer must round dY itself, and
 * gather the bf16 weight chunks over Z; products of bf16 values are exact in
 * fp32, so the tolerance stays the fp32 one. Both dtypes run again with the
 * backward's collectives left in flight (OAR, ORS), completed afterwards. */
#include "test.h"
#include "grids.h"
#include "backend/bf16.h"
#include "backend/kmath.h"
#include "grid/grid.h"
#include "nn/linear.h"
#include "nn/shard.h"
#include "util/err.h"
#include "util/rng.h"
#include <stdint.h>

#define SEED 777u
#define TOL  1e-5

static ax_grid g;
static ax_dtype dt;                  /* of the GEMM inputs in the case running */
static int overlap;                  /* dX all-reduce and dW reduce-scatter left in flight (OAR, ORS) */
static ax_rng sizes = {SEED, 99, 0}; /* identical sequence on every rank */

typedef struct {
    const char *name;
    int in, out, out_pad, transposed, bias, mloc;
    int nparts;
    int64_t part[3]; /* output parts, each split over Y */
} lcase;

/* ---- small helpers ---- */

static int rnd(int lo, int hi) { return lo + (int)ax_rng_below(&sizes, (uint64_t)(hi - lo + 1)); }
static int gcd(int a, int b) {
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static float *logical(uint64_t stream, long n) {
    float *p = ax_malloc(n * sizeof(float));
    for (long i = 0; i < n; i++) p[i] = (float)ax_rng_normal(SEED, stream, i);
    return p;
}

static float *zeros(long n) { return ax_calloc(n ? n : 1, sizeof(float)); }

/* outputs and scratch start as garbage: the layer must not rely on zeros there */
static float *garbage(long n) {
    float *p = ax_malloc((n ? n : 1) * sizeof(float));
    for (long i = 0; i < n; i++) p[i] = 1e30f;
    return p;
}

/* Logical output feature of local output column j, or -1 for padding. The
 * order of an output in parts is derived here from its description in
 * shard.h (shard y holds [part 0's y-th block | part 1's | ...]),
 * independently of shard.c: walk shard y's columns. */
static int out_feature(const lcase *c, const ax_linear *L, int j) {
    int coord = c->transposed ? g.x : g.y, p = coord * L->out_l + j;
    if (c->nparts) {
        int first = 0;
        for (int i = 0; i < c->nparts; i++) {
            int w = (int)c->part[i] / g.gy;
            if (j < w) return first + g.y * w + j;
            j -= w;
            first += (int)c->part[i];
        }
    }
    return p < c->out ? p : -1;
}

/* A rank owns the copy of a shard it reassembles when it is d = 0 and
 * coordinate 0 of every axis the shard is replicated over. */
static int owns(const ax_shard *s) {
    int rep = ax_shard_replicated(s, &g);
    return g.d == 0 && !((rep & 1) && g.x) && !((rep & 2) && g.y) && !((rep & 4) && g.z);
}

/* The logical tensor from every owner's local piece (zeros elsewhere). */
static void reassemble(const ax_shard *s, const float *local, float *full, long n) {
    memset(full, 0, n * sizeof(float));
    if (owns(s)) ax_shard_insert(s, &g, g.x, g.y, g.z, local, full);
    MPI_Allreduce(MPI_IN_PLACE, full, (int)n, MPI_FLOAT, MPI_SUM, g.world);
}

/* every stored element that maps to no logical one must be exactly zero */
static int padding_zero(const ax_shard *s, const float *local) {
    for (int64_t i = 0; i < ax_shard_numel(s, &g); i++)
        if (ax_shard_logical_index(s, &g, g.x, g.y, g.z, i) < 0 && local[i] != 0.0f) return 0;
    return 1;
}

/* ax_shard_run's promise: the run is logical j .. j+k-1 in one logical row,
 * or all padding. Walked as the readers and the parallel writer walk it (run
 * after run, every element checked), and from every element its last one. */
static int run_holds(const ax_shard *s, int64_t i, int64_t n, int every) {
    int64_t j = ax_shard_logical_index(s, &g, g.x, g.y, g.z, i), k = ax_shard_run(s, &g, g.x, g.y, g.z, i);
    if (k < 1 || i + k > n || (j >= 0 && j / s->cols != (j + k - 1) / s->cols)) return 0;
    for (int64_t t = every ? 1 : k - 1; t < k; t++) {
        int64_t jt = ax_shard_logical_index(s, &g, g.x, g.y, g.z, i + t);
        if (j < 0 ? jt >= 0 : jt != j + t) return 0;
    }
    return 1;
}

static int runs_hold(const ax_shard *s) {
    int64_t n = ax_shard_numel(s, &g);
    for (int64_t i = 0; i < n; i += ax_shard_run(s, &g, g.x, g.y, g.z, i))
        if (!run_holds(s, i, n, 1)) return 0;
    for (int64_t i = 0; i < n; i++)
        if (!run_holds(s, i, n, 0)) return 0;
    return 1;
}

/* ax_linear_forward_to into bf16 (the LM head's logits): ax_linear_forward's
 * y rounded, to within one bf16 rounding (a native bf16-output GEMM may
 * accumulate in another order than the fp32-output one) */
static int forward_to_holds(const ax_linear *L, ax_mat W, ax_mat X) {
    int64_t n = (int64_t)X.rows * L->out_l;
    float *y = ax_calloc(n + 1, sizeof(float)), *y32 = ax_calloc(n + 1, sizeof(float));
    ax_bf16 *yh = ax_calloc(n + 1, sizeof(ax_bf16));
    ax_linear_forward(L, W, NULL, X, y);
    ax_linear_forward_to(L, W, X, ax_mat_of(yh, AX_BF16, X.rows, L->out_l), y32);
    double scale = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(y[i]));
    int ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= fabs(ax_bf16_widen(yh[i]) - y[i]) <= 0x1p-8 * fabs(y[i]) + 1e-6 * scale;
    free(y);
    free(y32);
    free(yh);
    return ok;
}

/* ---- the serial layer, in double ---- */

typedef struct {
    float *W, *b, *X, *dY, *Y, *dX, *dW, *db;
} serial;

static void round_bf16(float *p, long n) {
    for (long i = 0; dt == AX_BF16 && i < n; i++) p[i] = ax_bf16_widen(ax_bf16_round(p[i]));
}

static serial serial_layer(const lcase *c, int Mtot) {
    int in = c->in, out = c->out;
    serial s = {
        logical(1, (long)out * in), logical(2, out),        logical(3, (long)Mtot * in), logical(4, (long)Mtot * out),
        zeros((long)Mtot * out),    zeros((long)Mtot * in), zeros((long)out * in),       zeros(out)};
    round_bf16(s.W, (long)out * in);
    round_bf16(s.X, (long)Mtot * in);
    float *dY = logical(4, (long)Mtot * out); /* as the GEMMs read it */
    round_bf16(dY, (long)Mtot * out);
    for (int m = 0; m < Mtot; m++)
        for (int o = 0; o < out; o++) {
            double y = c->bias ? s.b[o] : 0;
            for (int k = 0; k < in; k++) y += (double)s.X[(long)m * in + k] * s.W[(long)o * in + k];
            s.Y[(long)m * out + o] = (float)y;
        }
    for (int m = 0; m < Mtot; m++)
        for (int k = 0; k < in; k++) {
            double d = 0;
            for (int o = 0; o < out; o++) d += (double)dY[(long)m * out + o] * s.W[(long)o * in + k];
            s.dX[(long)m * in + k] = (float)d;
        }
    for (int o = 0; o < out; o++) {
        double sb = 0;
        for (int m = 0; m < Mtot; m++) sb += s.dY[(long)m * out + o];
        s.db[o] = (float)sb;
        for (int k = 0; k < in; k++) {
            double d = 0;
            for (int m = 0; m < Mtot; m++) d += (double)dY[(long)m * out + o] * s.X[(long)m * in + k];
            s.dW[(long)o * in + k] = (float)d;
        }
    }
    free(dY);
    return s;
}

static void serial_free(serial *s) {
    float *all[] = {s->W, s->b, s->X, s->dY, s->Y, s->dX, s->dW, s->db};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* rows [row0, row0 + mloc) of a [Mtot, ld] matrix, logical columns cols[0..w) (-1: zero) */
static void take(float *dst, const float *src, long ld, int row0, int mloc, const int *cols, int w) {
    for (int i = 0; i < mloc; i++)
        for (int j = 0; j < w; j++) dst[(long)i * w + j] = cols[j] < 0 ? 0.0f : src[(long)(row0 + i) * ld + cols[j]];
}

/* ---- one case on the current grid ---- */

static void run_case(const lcase *c, const char *grid) {
    int Mtot = g.gd * g.gz * c->mloc, row0 = (g.d * g.gz + g.z) * c->mloc;
    serial s = serial_layer(c, Mtot);
    ax_linear L;
    ax_linear_init(
        &L, &g, c->in, c->out,
        (ax_linear_opts){.out_pad = c->out_pad, .transposed = c->transposed, .nparts = c->nparts, .part = c->part});
    int in_l = L.in_l, out_l = L.out_l, in0 = (c->transposed ? g.y : g.x) * in_l;
    int *icol = ax_malloc(in_l * sizeof(int)), *ocol = ax_malloc(out_l * sizeof(int));
    for (int j = 0; j < in_l; j++) icol[j] = in0 + j;
    for (int j = 0; j < out_l; j++) ocol[j] = out_feature(c, &L, j);
    long nw = ax_shard_numel(&L.w, &g), nb = ax_shard_numel(&L.b, &g);

    float *chunk = zeros(nw), *bias = zeros(nb);
    ax_shard_extract(&L.w, &g, s.W, chunk);
    ax_shard_extract(&L.b, &g, s.b, bias);
    ax_linear_ws ws;
    ax_linear_ws_init(&ws, &g, (const ax_linear *[]){&L}, 1, 2, 0);
    ws.oar = ws.ors = overlap;
    float *wblock = g.gz > 1 ? garbage(nw * g.gz) : NULL;

    float *x = zeros((long)c->mloc * in_l), *dy = zeros((long)c->mloc * out_l), *y = garbage((long)c->mloc * out_l);
    float *ey = zeros((long)c->mloc * out_l), *dx = garbage((long)c->mloc * in_l), *edx = zeros((long)c->mloc * in_l);
    take(x, s.X, c->in, row0, c->mloc, icol, in_l);
    take(dy, s.dY, c->out, row0, c->mloc, ocol, out_l); /* padded columns: 0, as the loss leaves them */
    take(ey, s.Y, c->out, row0, c->mloc, ocol, out_l);
    take(edx, s.dX, c->in, row0, c->mloc, icol, in_l);

    /* under bf16 the chunk and x as the model passes them: rounded copies */
    ax_bf16 *chunk_h = ax_calloc(nw + 1, 2), *x_h = ax_calloc((long)c->mloc * in_l + 1, 2);
    ax_bf16 *dy_cast = ax_calloc((long)c->mloc * out_l + 1, 2);
    ax_be()->cast(chunk_h, AX_BF16, chunk, AX_F32, nw);
    ax_be()->cast(x_h, AX_BF16, x, AX_F32, (size_t)c->mloc * in_l);
    ax_mat W = ax_linear_weight(&L, &g, dt == AX_BF16 ? (void *)chunk_h : (void *)chunk, dt, wblock);
    ax_mat X = ax_mat_of(dt == AX_BF16 ? (void *)x_h : (void *)x, dt, c->mloc, in_l);
    ax_linear_forward(&L, W, c->bias ? bias : NULL, X, y);
    if (dt == AX_BF16)
        CHECK(forward_to_holds(&L, W, X), "grid %s, %s: ax_linear_forward_to's bf16 y is not y rounded", grid, c->name);
    float *dw = zeros(nw), *db = zeros(nb);
    ax_linear_backward(&L, &g, W, X, ax_mat_f32(dy, c->mloc, out_l), dx, dw, c->bias ? db : NULL, &ws, dy_cast);
    ax_zscatter_drain(&ws.rs);
    ax_linear_ws_free(&ws);
    free(chunk_h);
    free(x_h);
    free(dy_cast);
    /* as the model does: db is replicated over X (non-transposed) but its rows
     * were split over data x Z; dW was already reduce-scattered over Z */
    ax_allreduce_f32(&g.dz, db, nb);
    ax_allreduce_f32(&g.data, dw, nw);

    float *fW = zeros((long)c->out * c->in), *fb = zeros(c->out);
    reassemble(&L.w, dw, fW, (long)c->out * c->in);
    if (c->bias) reassemble(&L.b, db, fb, c->out);

    double e[4] = {ax_t_reldiff(y, ey, (long)c->mloc * out_l), ax_t_reldiff(dx, edx, (long)c->mloc * in_l),
                   ax_t_reldiff(fW, s.dW, (long)c->out * c->in), c->bias ? ax_t_reldiff(fb, s.db, c->out) : 0};
    const char *what[4] = {"forward y", "dX", "dW", "db"};
    for (int k = 0; k < 4; k++)
        CHECK(e[k] < TOL, "grid %s, %s%s %s (in %d out %d pad %d parts %d mloc %d): %s rel diff %.3g", grid,
              ax_dtype_name(dt), overlap ? " overlapped" : "", c->name, c->in, c->out, c->out_pad, c->nparts, c->mloc,
              what[k], e[k]);
    CHECK(padding_zero(&L.w, dw), "grid %s, %s: dW chunk padding is not zero", grid, c->name);
    CHECK(runs_hold(&L.w) && runs_hold(&L.b), "grid %s, %s: a local run is not one logical run", grid, c->name);

    float *all[] = {chunk, bias, wblock, x, dy, y, ey, dx, edx, dw, db, fW, fb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
    free(icol);
    free(ocol);
    serial_free(&s);
}

/* ---- the cases for one grid ----
 * (sizes are drawn in statement order, so every rank draws the same) */

/* in = gin*a, out = gout*b; with odd_block the block a*b shares no factor with
 * Gz, so (Gz > 1) its Z chunks end in padding */
static lcase plain(const char *name, int transposed, int odd_block) {
    int gin = transposed ? g.gy : g.gx, gout = transposed ? g.gx : g.gy, a, b;
    do {
        a = rnd(1, 5);
        b = rnd(1, 5);
    } while (odd_block && g.gz > 1 && gcd(a * b, g.gz) != 1);
    int mloc = rnd(1, 4);
    return (lcase){name, gin * a, gout * b, 0, transposed, 1, mloc, 0, {0}};
}

/* heads split over Y, C = heads * hd divisible by Gx; kv_div > 1: grouped-query,
 * heads / kv_div key/value heads (themselves divisible by Gy) */
static lcase qkv(int kv_div) {
    int hd = rnd(1, 3);
    int heads = kv_div * g.gy * (g.gx / gcd(g.gx, kv_div * g.gy * hd)) * rnd(1, 2), kv = heads / kv_div;
    int mloc = rnd(1, 3);
    return (lcase){kv_div > 1 ? "qkv, grouped-query" : "qkv",
                   heads * hd,
                   (heads + 2 * kv) * hd,
                   0,
                   0,
                   1,
                   mloc,
                   3,
                   {heads * hd, kv * hd, kv * hd}};
}

/* [gate | up] of F features each, F divisible by Gy; no bias (Llama) */
static lcase gate_up(void) {
    int in = g.gx * rnd(1, 3), F = g.gy * rnd(1, 4);
    int mloc = rnd(1, 3);
    return (lcase){"gate|up", in, 2 * F, 0, 0, 0, mloc, 2, {F, F}};
}

/* the tied LM head: vocabulary rows padded to a multiple of Gy, no bias; the
 * padding may cover whole Y blocks and Z chunks */
static lcase padded(void) {
    int out_pad = g.gy * rnd(2, 4);
    int pad = rnd(1, out_pad - 1 < g.gy + 1 ? out_pad - 1 : g.gy + 1);
    int in = g.gx * rnd(1, 4);
    int mloc = rnd(1, 3);
    return (lcase){"padded", in, out_pad - pad, out_pad, 0, 0, mloc, 0, {0}};
}

static void run_grid(int D, int X, int Y, int Z) {
    if (ax_grid_init(&g, MPI_COMM_WORLD, D, X, Y, Z)) ax_err_exit(1);
    char grid[48];
    snprintf(grid, sizeof grid, "%d,%d,%d,%d", D, X, Y, Z);
    for (int t = 0; t < 4; t++) {
        dt = t & 1 ? AX_BF16 : AX_F32;
        overlap = t >> 1;
        lcase c;
        c = plain("non-transposed, chunk padding", 0, 1);
        run_case(&c, grid);
        c = plain("transposed, chunk padding", 1, 1);
        run_case(&c, grid);
        c = plain("non-transposed", 0, 0);
        run_case(&c, grid);
        c = plain("transposed", 1, 0);
        run_case(&c, grid);
        c = qkv(1);
        run_case(&c, grid);
        c = qkv(rnd(2, 3));
        run_case(&c, grid);
        c = gate_up();
        run_case(&c, grid);
        c = padded();
        run_case(&c, grid);
    }
    ax_grid_free(&g);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int P, rank, n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double t0 = MPI_Wtime();
    for (ax_t_grids q = {.P = P}; ax_t_grids_next(&q); n++) run_grid(q.d, q.x, q.y, q.z);
    if (rank == 0) printf("linear3d: %d grids of %d ranks in %.2f s\n", n, P, MPI_Wtime() - t0);
    int rc = ax_test_done("linear3d");
    MPI_Finalize();
    return rc;
}
