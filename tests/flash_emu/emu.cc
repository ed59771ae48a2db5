/* Host emulation of src/backend/cuda/attention_flash.cu, for checking it
 * without a GPU: tests/flash_emu/run.sh compiles the kernel source with g++
 * against mock CUDA headers (include/): a block's threads run as fibers
 * with real barriers, and WMMA fragments hold the whole 16x16 tile, each
 * warp-collective call done once, in lane 0 (valid because the kernels never
 * index fragment elements). The outputs are compared with an fp64 attention;
 * errors should be those of bf16 operands (~2-3e-3 for out and dqkv).
 * Shared memory starts as NaN, writes past the launch's size abort, a block
 * must write the last byte its launch asked for (the layout attn_plan.h
 * states is the kernel's), threads left waiting on a barrier abort, and a
 * warp whose barrier opens runs ahead of the others (EMU_FAIR=1: round
 * robin; EMU_SHUFFLE=1: a random order each round), so a missing
 * __syncthreads shows as NaN. Arguments: shapes B,T,Hl,KVl,hd.
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
unsigned char ax_fsm[1 << 20] __attribute__((aligned(128)));
#include "flash.cc"

uint3e threadIdx, blockIdx;
dim3 gridDim, blockDim;
/* A fiber switch that saves only what the ABI says a callee keeps (x86-64
 * System V): glibc's swapcontext also saves the signal mask, a system call
 * per switch, which made the emulation ten times slower. */
extern "C" void emu_switch(void **save_sp, void *load_sp);
asm(".text\n.globl emu_switch\n.type emu_switch,@function\nemu_switch:\n"
    "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
    "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
    "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n");
static void *sched;
struct Fiber { void *sp; int done; const int *gen; int gen_seen; }; /* gen: the barrier generation it waits on to move */
static std::vector<Fiber> fib;
static std::vector<char> stacks;
static int cur, nthr;
static std::function<void()> body;
static int bar_n, bar_gen, wbar_n[32], wbar_gen[32];

int emu_lane() { return cur % 32; }
static void yield_() { emu_switch(&fib[cur].sp, sched); }
static void barrier(int &n, int &gen, int size) {
    int g = gen;
    if (++n == size) { n = 0; gen++; return; }
    fib[cur].gen = &gen;
    fib[cur].gen_seen = g;
    yield_(); /* the scheduler resumes a fiber only once its barrier has opened */
    fib[cur].gen = 0;
}
void emu_syncthreads() { barrier(bar_n, bar_gen, nthr); }
static int prio = -1;   /* a warp whose barrier just opened: its lanes run next, ahead of the other warps */
static int fair = getenv("EMU_FAIR") != 0;
void emu_syncwarp() { int w = cur / 32, g = wbar_gen[w]; barrier(wbar_n[w], wbar_gen[w], 32); if (wbar_gen[w] != g && !fair) prio = w; }
static void entry() {
    body();
    fib[cur].done = 1;
    emu_switch(&fib[cur].sp, sched); /* never resumed */
}
/* a fresh fiber on the stack [lo, lo + size): its first switch-in "returns" into entry */
static void *fiber_new(char *lo, size_t size) {
    void **sp = (void **)(((uintptr_t)(lo + size)) & ~(uintptr_t)15);
    *--sp = 0;                    /* entry's return address: entry never returns */
    *--sp = (void *)entry;        /* where emu_switch's ret goes */
    for (int r = 0; r < 6; r++) *--sp = 0; /* rbp, rbx, r12..r15 */
    return sp;
}
static int ready(int t) { return !fib[t].done && !(fib[t].gen && *fib[t].gen == fib[t].gen_seen); }
static void run(int t) {
    cur = t;
    threadIdx = {(unsigned)t, 0, 0};
    emu_switch(&sched, fib[t].sp);
}
static size_t allowed = 48 << 10;
int cudaFuncSetAttribute(const void *, int, int v) { allowed = v; if (v > 227 * 1024) { fprintf(stderr, "smem %d too big\n", v); exit(1); } return 0; }
/* the highest byte of shared memory a block wrote, plus one (the rest is still 0xff) */
static size_t smem_used(size_t smem) {
    size_t n = smem;
    while (n && ax_fsm[n - 1] == 0xff) n--;
    return n;
}
/* a block must use all the shared memory its launch asked for, and no more:
 * ax_flash_smem (attn_plan.h), which the selection reads, is the kernel's layout */
void emu_launch(dim3 g, int nt, size_t smem, cudaStream_t, std::function<void()> f) {
    if (smem > allowed || smem > sizeof ax_fsm) { fprintf(stderr, "smem %zu > allowed %zu\n", smem, allowed); exit(1); }
    nthr = nt; body = f; gridDim = g; blockDim = dim3(nt);
    const size_t SS = 256 << 10;
    fib.resize(nt); stacks.resize(SS * nt);
    for (unsigned by = 0; by < g.y; by++) for (unsigned bx = 0; bx < g.x; bx++) {
        blockIdx = {bx, by, 0};
        memset(ax_fsm, 0xff, smem + (64 << 10));   /* NaN: reads of unwritten or out-of-range shared memory show */
        bar_n = 0; memset(wbar_n, 0, sizeof wbar_n);
        for (int t = 0; t < nt; t++) { fib[t].sp = fiber_new(&stacks[SS * t], SS); fib[t].done = 0; fib[t].gen = 0; }
        int left = nt, ran = 1;
        while (left) {
            if (!ran) { fprintf(stderr, "block %u,%u: every live thread waits on a barrier that cannot open\n", bx, by); exit(1); }
            left = ran = 0;
            static unsigned seed = 12345;
            static int shuffle = getenv("EMU_SHUFFLE") != 0;
            static std::vector<int> ord;
            ord.resize(nt);
            for (int t = 0; t < nt; t++) ord[t] = t;
            if (shuffle) for (int t = nt - 1; t > 0; t--) { seed = seed * 1103515245u + 12345u; std::swap(ord[t], ord[(seed >> 8) % (t + 1)]); }
            for (int u = 0; u < nt; u++) { int t = ord[u]; if (fib[t].done) continue;
                if (ready(t)) { run(t); ran = 1; }
                while (prio >= 0) {
                    int w = prio; prio = -1;
                    for (int x = 32 * w; x < 32 * w + 32; x++) if (x != t && ready(x)) run(x);
                }
                if (!fib[t].done) left++;
            }
        }
        for (size_t i = smem; i < smem + (64 << 10); i++) if (ax_fsm[i] != 0xff) { fprintf(stderr, "shared write past %zu bytes at %zu\n", smem, i); exit(1); }
        if (smem_used(smem) != smem) { fprintf(stderr, "block %u,%u wrote %zu of the %zu bytes of shared memory its launch asked for\n", bx, by, smem_used(smem), smem); exit(1); }
        if (bar_n) { fprintf(stderr, "threads ended with a barrier pending\n"); exit(1); }
    }
}
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
static float shfl_slot[1024];
float emu_shfl(float v, int src) {
    shfl_slot[cur] = v;
    emu_syncwarp();
    float r = shfl_slot[cur / 32 * 32 + (src & 31)];
    emu_syncwarp(); /* every lane read before a slot is written again */
    return r;
}
float emu_shfl_xor(float v, int m) { return emu_shfl(v, (cur % 32) ^ m); }

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
