/* Host emulation of src/backend/cuda/attention_flash.cu, for checking it
 * without a GPU: tests/flash_emu/run.sh compiles the kernel source with g++
 * against the device language of tests/cuda_emu (its blocks' threads as
 * fibers with real barriers, shared memory that starts as NaN and must be
 * used exactly as the launch asked; include/emu_device.h) and a mock of the
 * backend's cuda.h (include/). WMMA fragments hold the whole 16x16 tile,
 * each warp-collective call done once, in lane 0 (cuda_emu/include/mma.h).
 * The outputs are compared with an fp64 attention; errors should be those
 * of bf16 operands (~2-3e-3 for out and dqkv). Arguments: shapes
 * B,T,Hl,KVl,hd.
 *
 * With --ring, each shape is B,Tc,Hl,KVl,hd: sequences of 3 chunks of Tc
 * rows, attended as ring attention's blocks (backend.h: ax_attn_block; each
 * chunk's queries against their own chunk, causal, then merged with the
 * earlier chunks', full, whose keys and values come from packed copies;
 * the backward's shares added), through the block entries on the tiled path
 * (attention.cu, its warp shuffles emulated) and, at head sizes flash takes,
 * on flash; the tiled path's whole causal attention of the 3 Tc rows; and
 * with --ring --stored the blocks again with q|k|v and the packed copies
 * stored in bf16 (their values are bf16 ones), bit for bit the fp32-stored
 * blocks' results.
 *
 * With --stored, each shape is B,T,Hl,KVl,hd: the whole attention with q|k|v
 * and out stored in bf16 against fp32 copies of the same values. */
#include <vector>
#include <string.h>
#include <stdarg.h>
#include "backend/cuda/cuda.h"
#include "mma.h"
#include "flash.cc"

void ax_fatal(const char *file, int line, const char *fmt, ...) {
    va_list a;
    va_start(a, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, a);
    fputc('\n', stderr);
    va_end(a);
    exit(1);
}
static std::vector<char> tmp;
void *ax_cuda_tmp(int, size_t bytes) { if (tmp.size() < bytes) tmp.resize(bytes); return tmp.data(); }
/* the backward's row term D comes from attention.cu's kernel, emulated too (tiled_emu.cc) */
int emu_attn_mode = AX_CUDA_ATTN_FLASH;
static uint64_t rng = 88172645463325252ull;
static float uni() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return -1 + 2 * (float)((rng >> 40) / 16777216.0); }

/* fp64 reference */
static void ref(int B, int T, int Hl, int KVl, int hd, const float *qkv, const float *dout, std::vector<double> &out,
                std::vector<double> &lse, std::vector<double> &dqkv) {
    int ld = (Hl + 2 * KVl) * hd, Cl = Hl * hd, grp = Hl / KVl;
    double sc = 1 / sqrt((double)hd);
    out.assign((size_t)B * T * Cl, 0); lse.assign((size_t)B * Hl * T, 0); dqkv.assign((size_t)B * T * ld, 0);
    std::vector<double> p(T), dp(T);
    for (int b = 0; b < B; b++) for (int h = 0; h < Hl; h++) for (int i = 0; i < T; i++) {
        const float *q = qkv + ((size_t)b * T + i) * ld + h * hd;
        int kc = (Hl + h / grp) * hd, vc = (Hl + KVl + h / grp) * hd;
        double m = -1e300;
        for (int j = 0; j <= i; j++) {
            const float *k = qkv + ((size_t)b * T + j) * ld + kc;
            double s = 0; for (int e = 0; e < hd; e++) s += (double)q[e] * k[e];
            p[j] = s * sc; m = fmax(m, p[j]);
        }
        double l = 0; for (int j = 0; j <= i; j++) { p[j] = exp(p[j] - m); l += p[j]; }
        for (int j = 0; j <= i; j++) p[j] /= l;
        lse[((size_t)b * Hl + h) * T + i] = m + log(l);
        double *o = &out[((size_t)b * T + i) * Cl + h * hd];
        for (int j = 0; j <= i; j++) { const float *v = qkv + ((size_t)b * T + j) * ld + vc; for (int e = 0; e < hd; e++) o[e] += p[j] * v[e]; }
        const float *dO = dout + ((size_t)b * T + i) * Cl + h * hd;
        double D = 0; for (int e = 0; e < hd; e++) D += dO[e] * o[e];
        for (int j = 0; j <= i; j++) {
            const float *v = qkv + ((size_t)b * T + j) * ld + vc, *k = qkv + ((size_t)b * T + j) * ld + kc;
            double d = 0; for (int e = 0; e < hd; e++) d += (double)dO[e] * v[e];
            double ds = p[j] * (d - D) * sc;
            double *dq = &dqkv[((size_t)b * T + i) * ld + h * hd], *dk = &dqkv[((size_t)b * T + j) * ld + kc], *dv = &dqkv[((size_t)b * T + j) * ld + vc];
            for (int e = 0; e < hd; e++) { dq[e] += ds * k[e]; dk[e] += ds * q[e]; dv[e] += p[j] * dO[e]; }
        }
    }
}
static double err(const float *g, const std::vector<double> &r) {
    double m = 0, e = 0;
    for (size_t i = 0; i < r.size(); i++) { m = fmax(m, fabs(r[i])); double d = fabs(g[i] - r[i]); if (!(d <= e) || d != d) e = d; if (e != e) break; }
    return e / m;
}
/* one shape, "B,T,Hl,KVl,hd": forward and backward against fp64; 0 when within tolerance */
static int check(const char *shape) {
    int B, T, Hl, KVl, hd;
    if (sscanf(shape, "%d,%d,%d,%d,%d", &B, &T, &Hl, &KVl, &hd) != 5 || B < 1 || T < 1 || KVl < 1 || Hl % KVl) {
        fprintf(stderr, "shape '%s': expected B,T,Hl,KVl,hd with KVl dividing Hl\n", shape);
        exit(2);
    }
    int ld = (Hl + 2 * KVl) * hd, Cl = Hl * hd;
    std::vector<float> qkv((size_t)B * T * ld), dout((size_t)B * T * Cl), out(dout.size(), NAN), lse((size_t)B * Hl * T, NAN), dq(qkv.size(), NAN);
    for (auto &x : qkv) x = uni();
    for (auto &x : dout) x = uni();
    std::vector<double> ro, rl, rd;
    ref(B, T, Hl, KVl, hd, qkv.data(), dout.data(), ro, rl, rd);
    ax_cuda_attention_flash_forward(out.data(), lse.data(), qkv.data(), AX_F32, B, T, Hl, KVl, hd);
    ax_cuda_attention_flash_backward(dq.data(), dout.data(), out.data(), lse.data(), qkv.data(), AX_F32, B, T, Hl, KVl,
                                     hd);
    double eo = err(out.data(), ro), el = err(lse.data(), rl), ed = err(dq.data(), rd);
    int ok = eo < 1e-2 && el < 2e-3 && ed < 1e-2;
    printf("B%d T%d H%d KV%d hd%d: out %.2e lse %.2e dqkv %.2e, shared memory %zu/%zu/%zu bytes: %s\n", B, T, Hl, KVl, hd, eo, el,
           ed, ax_flash_smem(AX_FLASH_FWD, hd), ax_flash_smem(AX_FLASH_DQ, hd), ax_flash_smem(AX_FLASH_DKV, hd), ok ? "ok" : "FAIL");
    fflush(stdout);
    return !ok;
}
/* ring attention of nch chunks of Tc rows through the block entries on path
 * mode, into out, lse, dqkv laid out as the unsplit attention's: the
 * off-diagonal blocks read packed [k | v] copies of the earlier chunks (Tc
 * rows a sequence, row stride 2 KVl hd) and add their dk, dv to packed
 * gradients, summed into dqkv's rows at the end */
static void ring(int mode, int bf, int B, int nch, int Tc, int Hl, int KVl, int hd, const float *qkv,
                 const float *dout, float *out, float *lse, float *dqkv) {
    int T = nch * Tc, ld = (Hl + 2 * KVl) * hd, Cl = Hl * hd, lk = 2 * KVl * hd, KV = KVl * hd;
    std::vector<std::vector<float>> kv(nch, std::vector<float>((size_t)B * Tc * lk)), dkv(kv);
    for (int d = 0; d < nch; d++)
        for (int b = 0; b < B; b++)
            for (int i = 0; i < Tc; i++)
                memcpy(&kv[d][((size_t)b * Tc + i) * lk], qkv + ((size_t)b * T + d * Tc + i) * ld + Cl, lk * 4);
    /* bf: q|k|v and the packed copies stored in bf16 (the blocks' st), as the ring sends them under --dtype bf16 */
    std::vector<uint16_t> qh(bf ? (size_t)B * T * ld : 0);
    std::vector<std::vector<uint16_t>> kvh(bf ? nch : 0);
    for (size_t i = 0; i < qh.size(); i++) qh[i] = ax_bf16_round(qkv[i]);
    for (int d = 0; d < (int)kvh.size(); d++)
        for (float x : kv[d]) kvh[d].push_back(ax_bf16_round(x));
    emu_attn_mode = mode;
    auto blk = [&](int c, int d) { /* queries of chunk c against chunk d */
        const float *q = qkv + (size_t)c * Tc * ld;
        ax_attn_block a = {B, Hl, KVl, hd, Tc, Tc, T, T, 1, q, q + Cl, q + Cl + KV, ld, ld, AX_BF16};
        if (d < c) a = {B, Hl, KVl, hd, Tc, Tc, T, Tc, 0, q, kv[d].data(), kv[d].data() + KV, ld, lk, AX_BF16};
        if (bf) {
            const uint16_t *qb = qh.data() + (size_t)c * Tc * ld, *k = d < c ? kvh[d].data() : qb + Cl;
            a.q = qb;
            a.k = k;
            a.v = k + KV;
            a.st = AX_BF16;
        }
        return a;
    };
    for (int c = 0; c < nch; c++)
        for (int d = c; d >= 0; d--) {
            ax_attn_block a = blk(c, d);
            ax_cuda_attention_block_forward(&a, out + (size_t)c * Tc * Cl, lse + c * Tc, d < c, NULL, 1);
        }
    for (size_t i = 0; i < (size_t)B * T * ld; i++) dqkv[i] = 0;
    for (int c = 0; c < nch; c++)
        for (int d = c; d >= 0; d--) {
            ax_attn_block a = blk(c, d);
            float *dq = dqkv + (size_t)c * Tc * ld, *dk = d < c ? dkv[d].data() : dq + Cl;
            ax_cuda_attention_block_backward(&a, dq, dk, dk + KV, dout + (size_t)c * Tc * Cl, out + (size_t)c * Tc * Cl,
                                             lse + c * Tc, NULL, 1);
        }
    for (int d = 0; d < nch; d++)
        for (int b = 0; b < B; b++)
            for (int i = 0; i < Tc; i++)
                for (int e = 0; e < lk; e++)
                    dqkv[((size_t)b * T + d * Tc + i) * ld + Cl + e] += dkv[d][((size_t)b * Tc + i) * lk + e];
}

static int ring_stored; /* --ring --stored: the bf16-stored blocks too */

/* one shape B,Tc,Hl,KVl,hd as ring attention of 3 chunks against fp64: the
 * tiled blocks (fp32: 1e-5, 1e-5, 1e-4), the tiled whole attention, and
 * flash's blocks where it takes hd (bf16 operands: 1e-2, 2e-3, 1e-2); q|k|v
 * hold bf16 values, so that the tiled and flash blocks on them stored in
 * bf16 must give the bits of the same blocks stored in fp32 */
static int check_ring(const char *shape) {
    int B, Tc, Hl, KVl, hd, nch = 3;
    if (sscanf(shape, "%d,%d,%d,%d,%d", &B, &Tc, &Hl, &KVl, &hd) != 5 || B < 1 || Tc < 1 || KVl < 1 || Hl % KVl) {
        fprintf(stderr, "shape '%s': expected B,Tc,Hl,KVl,hd with KVl dividing Hl\n", shape);
        exit(2);
    }
    int T = nch * Tc, ld = (Hl + 2 * KVl) * hd, Cl = Hl * hd, fail = 0;
    std::vector<float> qkv((size_t)B * T * ld), dout((size_t)B * T * Cl);
    for (auto &x : qkv) x = ax_bf16_widen(ax_bf16_round(uni()));
    for (auto &x : dout) x = uni();
    std::vector<double> ro, rl, rd;
    ref(B, T, Hl, KVl, hd, qkv.data(), dout.data(), ro, rl, rd);
    std::vector<float> kept[3][3]; /* out, lse, dqkv of the fp32-stored blocks: tiled (run 0), flash (run 2) */
    for (int run = 0; run < (ring_stored ? 5 : 3); run++) {
        int flash = run == 2 || run == 4, bf = run >= 3;
        if (flash && (hd % AX_FLASH_HD_STEP || hd > AX_FLASH_HD_MAX)) continue;
        std::vector<float> out(dout.size(), NAN), lse((size_t)B * Hl * T, NAN), dq(qkv.size(), NAN);
        if (run == 1) { /* the whole attention: the block of every row, on the same kernels */
            emu_attn_mode = AX_CUDA_ATTN_TILED;
            ax_cuda_attention_forward(out.data(), lse.data(), qkv.data(), B, T, Hl, KVl, hd, AX_F32, NULL, 1);
            ax_cuda_attention_backward(dq.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, Hl, KVl, hd,
                                       AX_F32, NULL, 1);
        } else
            ring(flash ? AX_CUDA_ATTN_FLASH : AX_CUDA_ATTN_TILED, bf, B, nch, Tc, Hl, KVl, hd, qkv.data(), dout.data(),
                 out.data(), lse.data(), dq.data());
        static const char *what[] = {"tiled blocks", "tiled whole", "flash blocks", "tiled blocks, bf16-stored",
                                     "flash blocks, bf16-stored"};
        if (bf) { /* the fp32-stored run's bits */
            std::vector<float> *k = kept[run - 3];
            int same = !memcmp(out.data(), k[0].data(), out.size() * 4) &&
                       !memcmp(lse.data(), k[1].data(), lse.size() * 4) && !memcmp(dq.data(), k[2].data(), dq.size() * 4);
            printf("B%d %dx%d H%d KV%d hd%d %s: %s\n", B, nch, Tc, Hl, KVl, hd, what[run],
                   same ? "the fp32-stored blocks' bits: ok" : "differs from the fp32-stored blocks: FAIL");
            fflush(stdout);
            fail |= !same;
            continue;
        }
        if (run != 1) {
            kept[run / 2][0] = out;
            kept[run / 2][1] = lse;
            kept[run / 2][2] = dq;
        }
        double eo = err(out.data(), ro), el = err(lse.data(), rl), ed = err(dq.data(), rd);
        double to = flash ? 1e-2 : 1e-5, tl = flash ? 2e-3 : 1e-5, td = flash ? 1e-2 : 1e-4;
        int ok = eo < to && el < tl && ed < td;
        printf("B%d %dx%d H%d KV%d hd%d %s: out %.2e lse %.2e dqkv %.2e: %s\n", B, nch, Tc, Hl, KVl, hd, what[run], eo,
               el, ed, ok ? "ok" : "FAIL");
        fflush(stdout);
        fail |= !ok;
    }
    return fail;
}

/* one shape B,T,Hl,KVl,hd: the whole attention with q|k|v and out stored in
 * bf16 (backend.h: attention_forward's dt) against the same kernels on fp32
 * copies of the same values, on the tiled path and, where it takes hd, flash.
 * Each kernel reads the values it read before, so the results must be the
 * same bits: out the fp32 run's rounded once, lse and dqkv equal (the fp32
 * backward given the bf16 out widened). */
static int check_stored(const char *shape) {
    int B, T, Hl, KVl, hd;
    if (sscanf(shape, "%d,%d,%d,%d,%d", &B, &T, &Hl, &KVl, &hd) != 5 || B < 1 || T < 1 || KVl < 1 || Hl % KVl) {
        fprintf(stderr, "shape '%s': expected B,T,Hl,KVl,hd with KVl dividing Hl\n", shape);
        exit(2);
    }
    size_t nq = (size_t)B * T * (Hl + 2 * KVl) * hd, no = (size_t)B * T * Hl * hd, nl = (size_t)B * Hl * T;
    std::vector<uint16_t> qh(nq), oh(no);
    std::vector<float> qw(nq), dout(no), ow(no);
    for (size_t i = 0; i < nq; i++) qw[i] = ax_bf16_widen(qh[i] = ax_bf16_round(uni()));
    for (auto &x : dout) x = uni();
    int fail = 0;
    for (int flash = 0; flash < 2; flash++) {
        if (flash && (hd % AX_FLASH_HD_STEP || hd > AX_FLASH_HD_MAX)) continue;
        emu_attn_mode = flash ? AX_CUDA_ATTN_FLASH : AX_CUDA_ATTN_TILED;
        std::vector<float> o32(no, NAN), l32(nl, NAN), lh(nl, NAN), d32(nq, NAN), dh(nq, NAN);
        ax_cuda_attention_forward(o32.data(), l32.data(), qw.data(), B, T, Hl, KVl, hd, AX_F32, NULL, 1);
        ax_cuda_attention_forward(oh.data(), lh.data(), qh.data(), B, T, Hl, KVl, hd, AX_BF16, NULL, 1);
        for (size_t i = 0; i < no; i++) ow[i] = ax_bf16_widen(oh[i]);
        ax_cuda_attention_backward(d32.data(), dout.data(), ow.data(), l32.data(), qw.data(), B, T, Hl, KVl, hd, AX_F32,
                                   NULL, 1);
        ax_cuda_attention_backward(dh.data(), dout.data(), oh.data(), lh.data(), qh.data(), B, T, Hl, KVl, hd, AX_BF16,
                                   NULL, 1);
        size_t bad_o = 0, bad_l = 0, bad_d = 0;
        for (size_t i = 0; i < no; i++) bad_o += oh[i] != ax_bf16_round(o32[i]);
        for (size_t i = 0; i < nl; i++) bad_l += memcmp(&lh[i], &l32[i], 4) != 0;
        for (size_t i = 0; i < nq; i++) bad_d += memcmp(&dh[i], &d32[i], 4) != 0;
        int ok = !bad_o && !bad_l && !bad_d;
        printf("B%d T%d H%d KV%d hd%d %s, bf16-stored against fp32: %zu out, %zu lse, %zu dqkv differ: %s\n", B, T,
               Hl, KVl, hd, flash ? "flash" : "tiled", bad_o, bad_l, bad_d, ok ? "ok" : "FAIL");
        fflush(stdout);
        fail |= !ok;
    }
    return fail;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--ring")) {
        int fail = 0, a = 2;
        if (argc > 2 && !strcmp(argv[2], "--stored")) ring_stored = 1, a = 3;
        for (; a < argc; a++) fail |= check_ring(argv[a]);
        return fail;
    }
    if (argc > 1 && !strcmp(argv[1], "--stored")) {
        int fail = 0;
        for (int a = 2; a < argc; a++) fail |= check_stored(argv[a]);
        return fail;
    }
    /* without arguments: partial tiles, one tile, hd 16, 16 tiles, 3:1 groups, T = 1 */
    const char *dflt[] = {"2,100,4,2,64", "1,64,2,2,128", "2,33,4,4,16", "1,1024,2,2,64", "1,130,6,2,32", "1,1,2,1,48"};
    int fail = 0;
    if (argc > 1) for (int a = 1; a < argc; a++) fail |= check(argv[a]);
    else for (const char *s : dflt) fail |= check(s);
    return fail;
}
