/* The block scheduler of the host emulation (include/emu_device.h): a
 * block's threads run as fibers with real barriers. A warp whose barrier
 * opens runs on ahead of the others, barrier to barrier, until it waits on
 * the block (EMU_FAIR=1: round robin; EMU_SHUFFLE=1: the warps in a random
 * order each round), so a missing __syncthreads shows as a read of NaN
 * shared memory or a wrong result. A launch aborts, naming the block, when
 * every live thread waits on a barrier that cannot open, when threads end
 * with a barrier pending, when it asks for more dynamic shared memory than
 * allowed, and when a block writes past, or short of, the dynamic shared
 * memory its launch asked for (the kernel's layout must be the one its
 * launch computes). */
#include "emu_device.h"
#include <map>
#include <stdarg.h>
#include <string>
#include <unordered_map>
#include <vector>

uint3e threadIdx, blockIdx;
dim3 gridDim, blockDim;
#define GUARD (64u << 10) /* bytes past a launch's dynamic shared memory that must stay untouched */
unsigned char emu_smem[EMU_SMEM_MAX + GUARD] __attribute__((aligned(128)));
static std::unordered_map<const void *, size_t> smem_limit; /* the kernels cudaFuncSetAttribute raised */

int emu_smem_raise(const void *kernel, int bytes) {
    if (bytes < 0 || (size_t)bytes > EMU_SMEM_OPTIN) return -1;
    smem_limit[kernel] = (size_t)bytes;
    return 0;
}

/* A fiber switch that saves only what the ABI says a callee keeps (x86-64
 * System V): glibc's swapcontext also saves the signal mask, a system call
 * per switch, which made the emulation ten times slower. */
extern "C" void emu_switch(void **save_sp, void *load_sp);
asm(".text\n.globl emu_switch\n.type emu_switch,@function\nemu_switch:\n"
    "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
    "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
    "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n");

namespace {
struct Fiber {
    void *sp;
    int done;
    const int *gen; /* the barrier generation it waits on to move */
    int gen_seen;
    uint3e idx; /* its threadIdx */
};
void *sched;
std::vector<Fiber> fib;
std::vector<char> stacks;
int cur, nthr, last_warp; /* last_warp: the lanes of the block's last warp */
std::function<void()> body;
int bar_n, bar_gen, wbar_n[32], wbar_gen[32];
int prio = -1; /* a warp whose barrier just opened: its lanes run next, ahead of the other warps */
const int fair = getenv("EMU_FAIR") != 0, shuffle = getenv("EMU_SHUFFLE") != 0;
const size_t STACK = 256u << 10;
float shfl_slot[2][1024];
unsigned shfl_count[1024];

void yield_() { emu_switch(&fib[cur].sp, sched); }
void barrier(int &n, int &gen, int size) {
    int g = gen;
    if (++n == size) {
        n = 0;
        gen++;
        return;
    }
    fib[cur].gen = &gen;
    fib[cur].gen_seen = g;
    yield_(); /* the scheduler resumes a fiber only once its barrier has opened */
    fib[cur].gen = 0;
}
void entry() {
    body();
    fib[cur].done = 1;
    emu_switch(&fib[cur].sp, sched); /* never resumed */
}
/* a fresh fiber on the stack [lo, lo + size): its first switch-in "returns" into entry */
void *fiber_new(char *lo, size_t size) {
    void **sp = (void **)(((uintptr_t)(lo + size)) & ~(uintptr_t)15);
    *--sp = 0;                             /* entry's return address: entry never returns */
    *--sp = (void *)entry;                 /* where emu_switch's ret goes */
    for (int r = 0; r < 6; r++) *--sp = 0; /* rbp, rbx, r12..r15 */
    return sp;
}
int ready(int t) { return !fib[t].done && !(fib[t].gen && *fib[t].gen == fib[t].gen_seen); }
void run(int t) {
    cur = t;
    threadIdx = fib[t].idx;
    emu_switch(&sched, fib[t].sp);
}
/* the highest byte of shared memory a block wrote, plus one (the rest is still 0xff) */
size_t smem_used(size_t smem) {
    size_t n = smem;
    while (n && emu_smem[n - 1] == 0xff) n--;
    return n;
}
__attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...) {
    va_list a;
    va_start(a, fmt);
    fprintf(stderr, "emulated launch, block %u,%u,%u: ", blockIdx.x, blockIdx.y, blockIdx.z);
    vfprintf(stderr, fmt, a);
    va_end(a);
    fputc('\n', stderr);
    exit(1);
}
void run_block(size_t smem) {
    /* NaN: reads of unwritten or out-of-range shared memory show (a launch
     * without dynamic shared memory does not touch it) */
    if (smem) memset(emu_smem, 0xff, smem + GUARD);
    bar_n = 0;
    memset(wbar_n, 0, sizeof wbar_n);
    for (int t = 0; t < nthr; t++) {
        uint3e idx = {t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y)};
        fib[t] = {fiber_new(&stacks[STACK * t], STACK), 0, 0, 0, idx};
        shfl_count[t] = 0;
    }
    static unsigned seed = 12345;
    static std::vector<int> ord;
    ord.resize(nthr);
    for (int left = nthr, ran = 1; left;) {
        if (!ran) fail("every live thread waits on a barrier that cannot open");
        left = ran = 0;
        for (int t = 0; t < nthr; t++) ord[t] = t;
        if (shuffle)
            for (int t = nthr - 1; t > 0; t--) {
                seed = seed * 1103515245u + 12345u;
                std::swap(ord[t], ord[(seed >> 8) % (t + 1)]);
            }
        for (int u = 0; u < nthr; u++) {
            int t = ord[u];
            if (fib[t].done) continue;
            if (ready(t)) {
                run(t);
                ran = 1;
            }
            while (prio >= 0) { /* the warp runs on, barrier to barrier, until it waits on the block */
                int w = prio;
                prio = -1;
                for (int x = 32 * w; x < 32 * w + 32 && x < nthr; x++)
                    if (ready(x)) run(x);
            }
            if (!fib[t].done) left++;
        }
    }
    for (size_t i = smem; smem && i < smem + GUARD; i++)
        if (emu_smem[i] != 0xff) fail("shared memory written past the launch's %zu bytes, at %zu", smem, i);
    if (smem_used(smem) != smem)
        fail("wrote %zu of the %zu bytes of shared memory its launch asked for", smem_used(smem), smem);
    if (bar_n) fail("threads ended with a barrier pending");
}
} // namespace

int emu_lane() { return cur % 32; }
void emu_syncthreads() { barrier(bar_n, bar_gen, nthr); }
void emu_syncwarp() {
    int w = cur / 32, g = wbar_gen[w];
    barrier(wbar_n[w], wbar_gen[w], w == (nthr - 1) / 32 ? last_warp : 32);
    if (wbar_gen[w] != g && !fair) prio = w;
}
/* each lane leaves its value in its slot, the warp meets, each reads. The
 * slots alternate between two sets, shuffle by shuffle (every lane of a warp
 * makes the same shuffles): a lane writes a set again only after the next
 * shuffle's meeting, which every lane reaches after its read of this one. */
float emu_shfl(float v, int src) {
    int set = shfl_count[cur]++ & 1;
    shfl_slot[set][cur] = v;
    emu_syncwarp();
    return shfl_slot[set][cur / 32 * 32 + (src & 31)];
}

bool (*emu_capture_hook)(cudaStream_t, std::function<void()> &);
void emu_enqueue(cudaStream_t s, std::function<void()> work) {
    if (!emu_capture_hook || !emu_capture_hook(s, work)) work();
}

static void run_launch(dim3 g, dim3 b, size_t smem, const std::function<void()> &f) {
    nthr = (int)(b.x * b.y * b.z);
    last_warp = nthr - (nthr - 1) / 32 * 32;
    body = f;
    gridDim = g;
    blockDim = b;
    if (fib.size() < (size_t)nthr) fib.resize(nthr), stacks.resize(STACK * nthr);
    for (unsigned bz = 0; bz < g.z; bz++)
        for (unsigned by = 0; by < g.y; by++)
            for (unsigned bx = 0; bx < g.x; bx++) {
                blockIdx = {bx, by, bz};
                run_block(smem);
            }
}

namespace {
struct Tally {
    std::map<std::string, long> n;
    ~Tally() { /* at exit: the process's tally, if asked for */
        const char *path = getenv("EMU_LAUNCHES");
        FILE *f = path && *path ? fopen(path, "w") : 0;
        if (!f) return;
        for (auto &k : n) fprintf(f, "%ld %s\n", k.second, k.first.c_str());
        fclose(f);
    }
} tally;
} // namespace
void emu_count(const char *kind) { tally.n[kind]++; }

/* the launch's configuration checked as it is queued, as CUDA does */
void emu_launch(dim3 g, dim3 b, size_t smem, cudaStream_t s, const void *kernel, std::function<void()> f,
                const char *name) {
    unsigned n = b.x * b.y * b.z;
    if (n < 1 || n > 1024) fail("%u threads a block (1 to 1024)", n);
    auto raised = smem_limit.find(kernel);
    size_t allowed = raised == smem_limit.end() ? 48u << 10 : raised->second;
    if (smem > allowed || smem > EMU_SMEM_MAX)
        fail("%zu bytes of dynamic shared memory, more than the %zu this kernel is allowed", smem, allowed);
    emu_enqueue(s, [=] {
        emu_count(name);
        run_launch(g, b, smem, f);
    });
}
