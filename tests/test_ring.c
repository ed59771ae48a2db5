/* Context parallelism's attention (nn/ring_attention.h) against the unsplit
 * attention, forward (out, lse) and backward (dqkv), fp32.
 *
 * Blocks (one rank): each sequence of T rows cut into chunks (of unequal
 * lengths, partial tiles), every query chunk against the chunks at or before
 * it (the diagonal causal), merged in an order that starts on the diagonal,
 * and the backward of the same blocks added up, equal to the whole causal
 * attention (ax_attention_forward/backward) within 2e-6 norm-wise relative:
 * the same fp32 products summed in another order (a merge weighs the earlier
 * result instead of rescaling tile by tile) leave differences of a few ulp,
 * while a wrong chunk, mask or merge weight is off by 1e-2 or more. The
 * blocks give the same bits with 1 and 2 threads.
 *
 * Ring (every rank of the run is the C group, C = 1 .. 4): each rank builds
 * the same full sequences, computes the unsplit attention on them, and
 * compares its rows (chunks c and 2C-1-c) of out, lse and dqkv with what the
 * ring gives from its own rows, within the same 2e-6; C = 1 is the unsplit
 * attention bit for bit (the ring hands it over whole). The transfers cut
 * into parts (ax_comm_set_chunk) give the same bits as whole ones. On the
 * CPU with C > 1 the blocks poll the transfers in flight between their tiles
 * (counted through a hook around ax_progress; a ring without GEMMs has no
 * other caller), so the transfers move during the compute, not only in the
 * wait after it.
 * Shapes: grouped-query heads (Hl = 4 over KVl = 1 and 2), head sizes 16
 * and 64, chunks shorter and longer than the CPU's 64-row tiles.
 *
 * bf16 (CPU): q|k|v stored in bf16, so the key/value chunks travel in bf16,
 * against the ring on fp32 copies of the same values: the CPU's products
 * are fp32 either way, so out, lse and dqkv must be the same bits.
 *
 * --backend cuda: the ring runs on the device (its blocks the CUDA kernels,
 * its transfers NCCL or staged through the host), the references on the CPU
 * backend; within 1e-5 (backend_cmp's tolerance for the fp32 attention
 * tiles: another summation order on another machine). SKIP (77) without the
 * backend or a device. */
#include "test.h"
#include "backend/bf16.h"
#include "grid/grid.h"
#include "nn/attention.h"
#include "nn/ring_attention.h"
#include "util/err.h"
#include "util/rng.h"
#include "comm/devices.h"
#include <stdint.h>

#define TOL 2e-6

static ax_grid g;
static int nthr;
static const char *device; /* --backend NAME: where the ring runs (NULL: the CPU, with the references) */
static int local_rank;
#define RING_TOL (device ? 1e-5 : TOL)

/* ax_progress, counted: the polls the kernels make */
static long polls;
static int counted_progress(void) {
    polls++;
    return ax_progress();
}

typedef struct {
    int B, Hl, KVl, hd;
} shape;

static float *randn(size_t n, uint64_t stream) {
    float *p = ax_malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = (float)(1.5 * ax_rng_normal(7, stream, i));
    return p;
}

static float *filled(size_t n, float v) {
    float *p = ax_malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = v;
    return p;
}

/* ---- blocks ---- */

/* query chunk [q0, q0+nq) against key chunk [k0, k0+nk) of the whole sequences */
static ax_attn_block block_of(shape s, const float *qkv, int T, int q0, int nq, int k0, int nk) {
    int ld = (s.Hl + 2 * s.KVl) * s.hd;
    return (ax_attn_block){.B = s.B,
                           .Hl = s.Hl,
                           .KVl = s.KVl,
                           .hd = s.hd,
                           .Tq = nq,
                           .Tk = nk,
                           .Sq = T,
                           .Sk = T,
                           .causal = q0 == k0,
                           .q = qkv + (size_t)q0 * ld,
                           .k = qkv + (size_t)k0 * ld + s.Hl * s.hd,
                           .v = qkv + (size_t)k0 * ld + (s.Hl + s.KVl) * s.hd,
                           .ldq = ld,
                           .ldk = ld,
                           .dt = AX_F32};
}

/* out, lse and dqkv of the chunked attention: query chunk i merges key chunks
 * i, i-1, .., 0 (the diagonal written first, the others merged) */
static void chunked(shape s, const int *len, int nch, const float *qkv, const float *dout, float *out, float *lse,
                    float *dqkv, float *scratch, int nt) {
    int T = 0, ld = (s.Hl + 2 * s.KVl) * s.hd, Cl = s.Hl * s.hd;
    for (int i = 0; i < nch; i++) T += len[i];
    memset(dqkv, 0, (size_t)s.B * T * ld * sizeof(float));
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0, q0 = 0; i < nch; q0 += len[i++]) {
            int k0 = q0;
            for (int j = i; j >= 0; j--) {
                if (j < i) k0 -= len[j];
                ax_attn_block a = block_of(s, qkv, T, q0, len[i], k0, len[j]);
                if (pass == 0)
                    ax_be()->attention_block_forward(&a, out + (size_t)q0 * Cl, lse + q0, j < i, scratch, nt);
                else
                    ax_be()->attention_block_backward(&a, dqkv + (size_t)q0 * ld, dqkv + (size_t)k0 * ld + Cl,
                                                      dqkv + (size_t)k0 * ld + Cl + s.KVl * s.hd,
                                                      dout + (size_t)q0 * Cl, out + (size_t)q0 * Cl, lse + q0, scratch,
                                                      nt);
            }
        }
}

static void test_blocks(shape s) {
    int len[] = {50, 80, 70, 13}, nch = 4, T = 213, ld = (s.Hl + 2 * s.KVl) * s.hd;
    size_t nq = (size_t)s.B * T * ld, no = (size_t)s.B * T * s.Hl * s.hd, nl = (size_t)s.B * s.Hl * T;
    float *qkv = randn(nq, 1), *dout = randn(no, 2), *scratch = filled(2 * ax_attention_scratch(T, s.hd), 1e30f);
    float *out = filled(no, 1e30f), *lse = filled(nl, 1e30f), *dqkv = filled(nq, 1e30f);
    ax_attention_forward(out, lse, qkv, s.B, T, s.Hl, s.KVl, s.hd, AX_F32, scratch, 1);
    ax_attention_backward(dqkv, dout, out, lse, qkv, s.B, T, s.Hl, s.KVl, s.hd, AX_F32, scratch, 1);
    float *o[2], *l[2], *d[2];
    for (int t = 0; t < 2; t++) {
        o[t] = filled(no, 1e30f), l[t] = filled(nl, 1e30f), d[t] = filled(nq, 1e30f);
        chunked(s, len, nch, qkv, dout, o[t], l[t], d[t], scratch, t + 1);
    }
    double eo = ax_t_reldiff(o[0], out, no), el = ax_t_reldiff(l[0], lse, nl), ed = ax_t_reldiff(d[0], dqkv, nq);
    printf("blocks B=%d T=%d Hl=%d KVl=%d hd=%d: out %.2g lse %.2g dqkv %.2g relative to the whole attention\n", s.B, T,
           s.Hl, s.KVl, s.hd, eo, el, ed);
    CHECK(eo < TOL && el < TOL && ed < TOL, "chunked attention differs: out %.3g lse %.3g dqkv %.3g", eo, el, ed);
    CHECK(!memcmp(o[0], o[1], no * 4) && !memcmp(l[0], l[1], nl * 4) && !memcmp(d[0], d[1], nq * 4),
          "blocks with 2 threads differ from 1 thread");
    float *all[] = {qkv, dout, scratch, out, lse, dqkv, o[0], o[1], l[0], l[1], d[0], d[1]};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* ---- the ring ---- */

/* rows of this rank's chunks c and 2C-1-c of each sequence: dst (B*2Tc, w)
 * from src (B*2C*Tc, w), or back with back set */
static void my_rows(float *dst, const float *src, int B, int Tc, size_t w, int back) {
    int c = g.C.rank, C = g.C.size;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < 2; h++) {
            int chunk = h ? 2 * C - 1 - c : c;
            float *a = dst + ((size_t)b * 2 * Tc + (size_t)h * Tc) * w;
            const float *f = src + ((size_t)b * 2 * C * Tc + (size_t)chunk * Tc) * w;
            if (back) memcpy((float *)f, a, Tc * w * sizeof(float));
            else memcpy(a, f, Tc * w * sizeof(float));
        }
}

typedef struct {
    float *out, *lse, *dqkv;
} result;

/* n floats of host memory in the device backend's memory, and back (freed) */
static float *to_dev(const float *h, size_t n) {
    float *d = ax_be()->alloc(n * sizeof(float));
    ax_be()->copy(d, h, n * sizeof(float));
    return d;
}
static void from_dev(float *h, float *d, size_t n) {
    ax_be()->copy(h, d, n * sizeof(float));
    ax_be()->free(d);
}

static void ring_fwd_bwd(shape s, int Tc, const float *qkv, const float *dout, result *r, float *ws, float *scratch) {
    ax_ring_attention_forward(&g.C, r->out, r->lse, qkv, s.B, Tc, s.Hl, s.KVl, s.hd, AX_F32, ws, scratch, nthr);
    ax_ring_attention_backward(&g.C, r->dqkv, dout, r->out, r->lse, qkv, s.B, Tc, s.Hl, s.KVl, s.hd, AX_F32, ws,
                               scratch, nthr);
}

/* the ring on this rank's rows; with a device, there (its own buffers), results brought back */
static result ring_run(shape s, int Tc, const float *qkv, const float *dout, float *ws, float *scratch) {
    size_t ld = (s.Hl + 2 * s.KVl) * s.hd, M = (size_t)s.B * 2 * Tc, Cl = s.Hl * s.hd, nl = (size_t)s.B * s.Hl * 2 * Tc;
    result r = {filled(M * Cl, 1e30f), filled(nl, 1e30f), filled(M * ld, 1e30f)};
    if (!device) {
        ring_fwd_bwd(s, Tc, qkv, dout, &r, ws, scratch);
        return r;
    }
    if (ax_backend_use(device, local_rank)) ax_err_exit(1);
    size_t nws = ax_ring_workspace_floats(s.B, Tc, s.KVl, s.hd), nsc = nthr * ax_attention_scratch(2 * Tc, s.hd);
    float *dq = to_dev(qkv, M * ld), *dd = to_dev(dout, M * Cl), *dw = ax_be()->alloc(nws * 4),
          *ds = ax_be()->alloc(nsc * 4);
    result d = {to_dev(r.out, M * Cl), to_dev(r.lse, nl), to_dev(r.dqkv, M * ld)};
    ring_fwd_bwd(s, Tc, dq, dd, &d, dw, ds);
    from_dev(r.out, d.out, M * Cl);
    from_dev(r.lse, d.lse, nl);
    from_dev(r.dqkv, d.dqkv, M * ld);
    float *dev[] = {dq, dd, dw, ds};
    for (int i = 0; i < 4; i++) ax_be()->free(dev[i]);
    if (ax_backend_use("cpu", 0)) ax_err_exit(1);
    return r;
}

static void test_ring(shape s, int Tc) {
    int C = g.C.size, T = 2 * C * Tc;
    size_t ld = (s.Hl + 2 * s.KVl) * s.hd, Cl = s.Hl * s.hd, M = (size_t)s.B * 2 * Tc;
    size_t nq = (size_t)s.B * T * ld, no = (size_t)s.B * T * Cl, nl = (size_t)s.B * s.Hl * T;
    float *qkv = randn(nq, 3), *dout = randn(no, 4), *scratch = filled(nthr * ax_attention_scratch(T, s.hd), 1e30f);
    float *out = filled(no, 1e30f), *lse = filled(nl, 1e30f), *dqkv = filled(nq, 1e30f);
    ax_attention_forward(out, lse, qkv, s.B, T, s.Hl, s.KVl, s.hd, AX_F32, scratch, nthr);
    ax_attention_backward(dqkv, dout, out, lse, qkv, s.B, T, s.Hl, s.KVl, s.hd, AX_F32, scratch, nthr);
    /* the unsplit results at this rank's rows; lse as (B*Hl, T) rows of one */
    float *lq = ax_malloc(M * ld * 4), *ld_ = ax_malloc(M * Cl * 4), *eo = ax_malloc(M * Cl * 4),
          *el = ax_malloc((size_t)s.B * s.Hl * 2 * Tc * 4), *ed = ax_malloc(M * ld * 4);
    my_rows(lq, qkv, s.B, Tc, ld, 0);
    my_rows(ld_, dout, s.B, Tc, Cl, 0);
    my_rows(eo, out, s.B, Tc, Cl, 0);
    my_rows(el, lse, s.B * s.Hl, Tc, 1, 0);
    my_rows(ed, dqkv, s.B, Tc, ld, 0);
    /* the ring's buffers at the sizes ring_attention.h states */
    float *ws = filled(ax_ring_workspace_floats(s.B, Tc, s.KVl, s.hd), 1e30f),
          *rs = filled(nthr * ax_attention_scratch(2 * Tc, s.hd), 1e30f);
    polls = 0;
    result r = ring_run(s, Tc, lq, ld_, ws, rs);
    /* With one thread every tile is thread 0's, the thread that polls; with
     * more, which tiles thread 0 takes is the scheduler's (under load another
     * thread may take them all), so only the one-thread runs count polls. */
    if (C > 1 && !device && nthr == 1)
        CHECK(polls > 0, "rank %d: the ring's blocks never polled its transfers", g.C.rank);
    double xo = ax_t_reldiff(r.out, eo, M * Cl), xl = ax_t_reldiff(r.lse, el, (size_t)s.B * s.Hl * 2 * Tc),
           xd = ax_t_reldiff(r.dqkv, ed, M * ld);
    double mx[3] = {xo, xl, xd};
    MPI_Allreduce(MPI_IN_PLACE, mx, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (g.C.rank == 0)
        printf("ring C=%d (%d threads) B=%d Tc=%d Hl=%d KVl=%d hd=%d: out %.2g lse %.2g dqkv %.2g (worst rank)\n", C,
               nthr, s.B, Tc, s.Hl, s.KVl, s.hd, mx[0], mx[1], mx[2]);
    CHECK(xo < RING_TOL && xl < RING_TOL && xd < RING_TOL, "rank %d: ring differs: out %.3g lse %.3g dqkv %.3g",
          g.C.rank, xo, xl, xd);
    if (C == 1 && !device)
        CHECK(!memcmp(r.out, eo, M * Cl * 4) && !memcmp(r.lse, el, (size_t)s.B * s.Hl * 2 * Tc * 4) &&
                  !memcmp(r.dqkv, ed, M * ld * 4),
              "C = 1: not the unsplit attention's bits");
    ax_comm_set_chunk(97); /* transfers in parts: the same bits */
    result p = ring_run(s, Tc, lq, ld_, ws, rs);
    ax_comm_set_chunk(0);
    CHECK(!memcmp(p.out, r.out, M * Cl * 4) && !memcmp(p.dqkv, r.dqkv, M * ld * 4),
          "rank %d: ring with transfers in parts differs", g.C.rank);
    float *all[] = {qkv, dout, scratch, out,   lse,   dqkv,   lq,    ld_,   eo,    el,
                    ed,  ws,   rs,      r.out, r.lse, r.dqkv, p.out, p.lse, p.dqkv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

static void test_ring_bf16(shape s, int Tc) {
    size_t ld = (s.Hl + 2 * s.KVl) * s.hd, Cl = s.Hl * s.hd, M = (size_t)s.B * 2 * Tc, nl = (size_t)s.B * s.Hl * 2 * Tc;
    float *qw = randn(M * ld, 5), *dout = randn(M * Cl, 6);
    ax_bf16 *qh = ax_malloc(M * ld * sizeof *qh);
    for (size_t i = 0; i < M * ld; i++) qw[i] = ax_bf16_widen(qh[i] = ax_bf16_round(qw[i]));
    float *ws = filled(ax_ring_workspace_floats(s.B, Tc, s.KVl, s.hd), 1e30f),
          *rs = filled(nthr * ax_attention_scratch(2 * Tc, s.hd), 1e30f);
    result r[2];
    for (int h = 0; h < 2; h++) {
        r[h] = (result){filled(M * Cl, 1e30f), filled(nl, 1e30f), filled(M * ld, 1e30f)};
        const void *q = h ? (const void *)qh : qw;
        ax_dtype dt = h ? AX_BF16 : AX_F32;
        ax_ring_attention_forward(&g.C, r[h].out, r[h].lse, q, s.B, Tc, s.Hl, s.KVl, s.hd, dt, ws, rs, nthr);
        ax_ring_attention_backward(&g.C, r[h].dqkv, dout, r[h].out, r[h].lse, q, s.B, Tc, s.Hl, s.KVl, s.hd, dt, ws, rs,
                                   nthr);
    }
    int same = !memcmp(r[0].out, r[1].out, M * Cl * 4) && !memcmp(r[0].lse, r[1].lse, nl * 4) &&
               !memcmp(r[0].dqkv, r[1].dqkv, M * ld * 4);
    CHECK(same, "rank %d: the ring on bf16-stored q|k|v differs from the same values in fp32", g.C.rank);
    if (g.C.rank == 0)
        printf("ring C=%d (%d threads) B=%d Tc=%d Hl=%d KVl=%d hd=%d, bf16-stored: %s\n", g.C.size, nthr, s.B, Tc, s.Hl,
               s.KVl, s.hd, same ? "the fp32 run's bits" : "DIFFERENT");
    float *all[] = {qw, dout, ws, rs, r[0].out, r[0].lse, r[0].dqkv, r[1].out, r[1].lse, r[1].dqkv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
    free(qh);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size, nlocal;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--backend")) device = argv[i + 1];
    if (device) { /* opened once here, to SKIP where it cannot; the ring switches to it and back */
        ax_node_rank(MPI_COMM_WORLD, &local_rank, &nlocal);
        if (ax_backend_use(device, local_rank) || ax_backend_use("cpu", 0)) {
            printf("SKIP ring: %s\n", ax_err_msg());
            MPI_Finalize();
            return 77;
        }
    }
    /* the grid on the CPU backend: no NCCL, so a device's transfers are staged (ranks may share a GPU) */
    if (ax_grid_init_cp(&g, MPI_COMM_WORLD, 1, 1, 1, 1, size)) ax_err_exit(1);
    nthr = ax_be()->threads();
    /* after the grid's ax_comm_from calls, each of which sets ax_progress */
    ax_backend_set_progress(counted_progress);
    if (size == 1) { /* the blocks: one rank is enough */
        test_blocks((shape){2, 4, 1, 16});
        test_blocks((shape){2, 4, 2, 64});
        test_blocks((shape){1, 4, 4, 16});
    }
    test_ring((shape){2, 4, 2, 16}, 40);
    test_ring((shape){1, 4, 1, 64}, 70);
    if (!device) {
        test_ring_bf16((shape){2, 4, 2, 16}, 40);
        test_ring_bf16((shape){1, 4, 1, 64}, 70);
    }
    ax_grid_free(&g);
    int rc = ax_test_done("ring");
    MPI_Finalize();
    return rc;
}
