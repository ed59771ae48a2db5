/* Host emulation of src/backend/cuda/attention_flash.cu, for checking it
 * without a GPU: tests/flash_emu/run.sh compiles the kernel source with g++
 * against mock CUDA headers (include/): a block's threads run as ucontext
 * fibers with real barriers, and WMMA fragments hold the whole 16x16 tile in
 * every lane (valid because the kernels never index fragment elements). The
 * outputs are compared with an fp64 attention; errors should be those of
 * bf16 operands (~2-3e-3 for out and dqkv). Shared memory starts as NaN,
 * writes past the launch's size abort, and a warp whose barrier opens runs
 * ahead of the others (EMU_FAIR=1: round robin; EMU_SHUFFLE=1: a random
 * order each round), so a missing __syncthreads shows as NaN. */
#include <ucontext.h>
#include <vector>
#include <string.h>
#include "backend/cuda/cuda.h"
#include "mma.h"
unsigned char ax_fsm[1 << 20] __attribute__((aligned(128)));
#include "flash.cc"

uint3e threadIdx, blockIdx;
dim3 gridDim, blockDim;
static ucontext_t sched;
struct Fiber { ucontext_t ctx; int done; };
static std::vector<Fiber> fib;
static std::vector<char> stacks;
static int cur, nthr;
static std::function<void()> body;
static int bar_n, bar_gen, wbar_n[32], wbar_gen[32];

static void yield_() { swapcontext(&fib[cur].ctx, &sched); }
static void barrier(int &n, int &gen, int size) {
    int g = gen;
    if (++n == size) { n = 0; gen++; return; }
    while (gen == g) yield_();
}
void emu_syncthreads() { barrier(bar_n, bar_gen, nthr); }
static int prio = -1;   /* a warp whose barrier just opened: its lanes run next, ahead of the other warps */
void emu_syncwarp() { int w = cur / 32, g = wbar_gen[w]; barrier(wbar_n[w], wbar_gen[w], 32); if (wbar_gen[w] != g && !getenv("EMU_FAIR")) prio = w; }
static void entry() { body(); fib[cur].done = 1; }
static size_t allowed = 48 << 10;
int cudaFuncSetAttribute(const void *, int, int v) { allowed = v; if (v > 227 * 1024) { fprintf(stderr, "smem %d too big\n", v); exit(1); } return 0; }
void emu_launch(dim3 g, int nt, size_t smem, cudaStream_t, std::function<void()> f) {
    if (smem > allowed || smem > sizeof ax_fsm) { fprintf(stderr, "smem %zu > allowed %zu\n", smem, allowed); exit(1); }
    nthr = nt; body = f; gridDim = g; blockDim = dim3(nt);
    const size_t SS = 256 << 10;
    fib.resize(nt); stacks.resize(SS * nt);
    for (unsigned by = 0; by < g.y; by++) for (unsigned bx = 0; bx < g.x; bx++) {
        blockIdx = {bx, by, 0};
        memset(ax_fsm, 0xff, smem + (64 << 10));   /* NaN: reads of unwritten or out-of-range shared memory show */
        bar_n = 0; memset(wbar_n, 0, sizeof wbar_n);
        for (int t = 0; t < nt; t++) {
            getcontext(&fib[t].ctx);
            fib[t].ctx.uc_stack.ss_sp = &stacks[SS * t]; fib[t].ctx.uc_stack.ss_size = SS; fib[t].ctx.uc_link = &sched;
            fib[t].done = 0;
            makecontext(&fib[t].ctx, entry, 0);
        }
        int left = nt;
        while (left) {
            left = 0;
            static unsigned seed = 12345;
            std::vector<int> ord(nt);
            for (int t = 0; t < nt; t++) ord[t] = t;
            if (getenv("EMU_SHUFFLE")) for (int t = nt - 1; t > 0; t--) { seed = seed * 1103515245u + 12345u; std::swap(ord[t], ord[(seed >> 8) % (t + 1)]); }
            for (int u = 0; u < nt; u++) { int t = ord[u]; if (fib[t].done) continue;
                cur = t; threadIdx = {(unsigned)t, 0, 0};
                swapcontext(&sched, &fib[t].ctx);
                while (prio >= 0) {
                    int w = prio; prio = -1;
                    for (int x = 32 * w; x < 32 * w + 32; x++) if (!fib[x].done && x != cur) { int c = cur; cur = x; threadIdx = {(unsigned)x, 0, 0}; swapcontext(&sched, &fib[x].ctx); cur = c; }
                }
                if (!fib[t].done) left++;
            }
        }
        for (size_t i = smem; i < smem + (64 << 10); i++) if (ax_fsm[i] != 0xff) { fprintf(stderr, "shared write past %zu bytes at %zu\n", smem, i); exit(1); }
        if (bar_n) { fprintf(stderr, "threads ended with a barrier pending\n"); exit(1); }
    }
}
static std::vector<char> tmp;
void *ax_cuda_tmp(int, size_t bytes) { if (tmp.size() < bytes) tmp.resize(bytes); return tmp.data(); }
void ax_cuda_attention_rowdot(float *D, const float *dout, const float *out, int B, int T, int Hl, int hd) {
    for (int b = 0; b < B; b++) for (int h = 0; h < Hl; h++) for (int i = 0; i < T; i++) {
        float d = 0; size_t o = ((size_t)b * T + i) * Hl * hd + h * hd;
        for (int e = 0; e < hd; e++) d += dout[o + e] * out[o + e];
        D[((size_t)b * Hl + h) * T + i] = d;
    }
}

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
int main(int argc, char **argv) {
    int shapes[][5] = {{2, 100, 4, 2, 64}, {1, 64, 2, 2, 128}, {2, 33, 4, 4, 16}, {1, 1024, 2, 2, 64}, {1, 130, 6, 2, 32}, {1, 1, 2, 1, 48}};
    int ns = argc > 1 ? atoi(argv[1]) : 6;
    int fail = 0;
    for (int s = 0; s < ns; s++) {
        int B = shapes[s][0], T = shapes[s][1], Hl = shapes[s][2], KVl = shapes[s][3], hd = shapes[s][4];
        int ld = (Hl + 2 * KVl) * hd, Cl = Hl * hd;
        std::vector<float> qkv((size_t)B * T * ld), dout((size_t)B * T * Cl), out(dout.size(), NAN), lse((size_t)B * Hl * T, NAN), dq(qkv.size(), NAN);
        for (auto &x : qkv) x = uni();
        for (auto &x : dout) x = uni();
        std::vector<double> ro, rl, rd;
        ref(B, T, Hl, KVl, hd, qkv.data(), dout.data(), ro, rl, rd);
        ax_cuda_attention_flash_forward(out.data(), lse.data(), qkv.data(), B, T, Hl, KVl, hd);
        ax_cuda_attention_flash_backward(dq.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, Hl, KVl, hd);
        double eo = err(out.data(), ro), el = err(lse.data(), rl), ed = err(dq.data(), rd);
        int ok = eo < 1e-2 && el < 2e-3 && ed < 1e-2;
        fail |= !ok;
        printf("B%d T%d H%d KV%d hd%d: out %.2e lse %.2e dqkv %.2e %s\n", B, T, Hl, KVl, hd, eo, el, ed, ok ? "ok" : "FAIL");
        fflush(stdout);
    }
    return fail;
}
