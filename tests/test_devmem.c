/* devmem: the model keeps to a device backend's rules without a device.
 *
 * A GPU backend's memory is not the host's: the host may reach it only
 * through the backend's copy, and only kernels may touch it. This test
 * installs the CPU backend behind a guard: alloc returns pages of their own
 * that stay PROT_NONE except while a backend entry runs, and the table says
 * host_memory = 0, so the model takes the device paths (host views, the
 * micro-batch sent to the backend through copy_async, the loss summed there
 * and read back once per step). Every rank reports
 * the same device, as ranks sharing one GPU do, so no group gets NCCL and
 * every collective is staged through host buffers (comm/comm.h): MPI never
 * sees a device buffer, and the guard stays closed in MPI calls. Any host or
 * MPI access elsewhere faults, and the handler names the address.
 *
 * On every grid of the world size, 3 training steps of 2 micro-batches with
 * every overlap on (goldfish weights at step 1: the weights are sent too),
 * then a checkpoint written (every rank its share, in the background) and
 * read back into a second model, must give the
 * plain CPU run's losses, gradient norms, parameters and optimizer moments
 * bit for bit: the kernels and collectives are the same ones, only where the
 * host reads differs. Then a whole ax_train run (evaluation, checkpoints, the
 * final model) on 1,1,1,P writes the same files byte for byte, and greedy
 * decoding through the KV cache gives the same tokens and logits, and (on 2
 * ranks) axonn bench comm's calibration runs (its operands and collective
 * buffers the backend's memory, filled only through copy). Each group of
 * more than one rank reports time blocked in its staged collectives, a group
 * of one none. Also the rules for ranks that share a device
 * (comm/devices.h). Arguments: --llama
 * (replicated key/value heads, RMSNorm, rotary tables), --bf16.
 *
 * Run with OMPI_MCA_btl_vader_single_copy_mechanism=none (tests/devmem.cmake):
 * single-copy transfers would let a peer read this rank's pages from its own
 * MPI calls; staged buffers are host memory, but the guard must not depend on
 * the transport. */
#define _GNU_SOURCE
#include "test.h"
#include "train_steps.h"
#include "grids.h"
#include "backend/cpu/cpu.h"
#include "model/gpt.h"
#include "model/gpt_decode.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "train/source.h"
#include "util/fileio.h"
#include "util/err.h"
#include "comm/devices.h"
#include "plan/calibrate.h"
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the guard: every allocation, opened while depth > 0 ---- */

#define MAX_BLOCKS 4096
static struct {
    void *p;
    size_t len;
} blocks[MAX_BLOCKS];
static int nblocks, depth, guarding;

static void protect_all(int prot) {
    for (int i = 0; i < nblocks; i++)
        if (mprotect(blocks[i].p, blocks[i].len, prot)) {
            perror("mprotect");
            abort();
        }
}
static void open_guard(void) {
    if (depth++ == 0 && guarding) protect_all(PROT_READ | PROT_WRITE);
}
static void close_guard(void) {
    if (--depth == 0 && guarding) protect_all(PROT_NONE);
}

static void on_fault(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)ctx;
    char msg[160];
    int n = snprintf(msg, sizeof msg, "FAIL devmem: the host touched backend memory at %p outside the backend\n",
                     si->si_addr);
    if (write(2, msg, (size_t)n) < 0) _exit(3);
    _exit(3);
}

static size_t pages(size_t bytes) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + pg - 1) / pg * pg;
}

static void *g_alloc(size_t bytes) {
    size_t len = pages(bytes ? bytes : 1);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || nblocks == MAX_BLOCKS) {
        perror("devmem alloc");
        abort();
    }
    blocks[nblocks].p = p;
    blocks[nblocks].len = len;
    nblocks++;
    if (depth == 0 && guarding && mprotect(p, len, PROT_NONE)) abort();
    return p;
}

static void g_free(void *p) {
    if (!p) return;
    for (int i = 0; i < nblocks; i++)
        if (blocks[i].p == p) {
            munmap(p, blocks[i].len);
            blocks[i] = blocks[--nblocks];
            return;
        }
    fprintf(stderr, "FAIL devmem: free of %p, which the backend did not allocate\n", p);
    abort();
}

/* ---- the CPU backend's entries, each run with the guard open ---- */

#define CPU ax_cpu_backend
#define WRAP(name, params, args)  \
    static void g_##name params { \
        open_guard();             \
        CPU.name args;            \
        close_guard();            \
    }
static int nwaits; /* the host waiting for the device: a copy (complete on return) or a sum read back */
static void g_copy(void *d, const void *s, size_t n) {
    nwaits++;
    open_guard();
    CPU.copy(d, s, n);
    close_guard();
}
static void g_copy_async(void *d, const void *s, size_t n) { /* done at once: one way of being queued */
    open_guard();
    CPU.copy(d, s, n);
    close_guard();
}
WRAP(zero, (void *p, size_t n), (p, n))
WRAP(copy_rows, (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t r), (d, dp, s, sp, w, r))
WRAP(wsum, (double *acc, const float *x, const float *w, int64_t n), (acc, x, w, n))
WRAP(gemm, (int bt, float al, ax_mat A, int ta, ax_mat B, int tb, float be, ax_mat C), (bt, al, A, ta, B, tb, be, C))
WRAP(cast, (void *d, ax_dtype dt, const void *s, ax_dtype st, size_t n), (d, dt, s, st, n))
WRAP(transpose, (ax_mat d, ax_mat s, float beta), (d, s, beta))
WRAP(layernorm_forward,
     (void *o, ax_dtype ot, float *mu, float *rs, float *x, const float *bi, const float *r, const float *w,
      const float *b, int M, int Cl, int C, float eps, float *sc, const ax_reducer *X),
     (o, ot, mu, rs, x, bi, r, w, b, M, Cl, C, eps, sc, X))
WRAP(layernorm_backward,
     (float *dx, float *dw, float *db, const float *d, const float *x, const float *w, const float *mu, const float *rs,
      int M, int Cl, int C, float *sc, const ax_reducer *X),
     (dx, dw, db, d, x, w, mu, rs, M, Cl, C, sc, X))
WRAP(rmsnorm_forward,
     (void *o, ax_dtype ot, float *rs, float *x, const float *bi, const float *r, const float *w, int M, int Cl, int C,
      float eps, const ax_reducer *X),
     (o, ot, rs, x, bi, r, w, M, Cl, C, eps, X))
WRAP(rmsnorm_backward,
     (float *dx, float *dw, const float *d, const float *x, const float *w, const float *rs, int M, int Cl, int C,
      float *sc, const ax_reducer *X),
     (dx, dw, d, x, w, rs, M, Cl, C, sc, X))
WRAP(bias_gelu_forward, (void *o, ax_dtype ot, void *p, ax_dtype pt, const float *y, const float *b, int M, int n),
     (o, ot, p, pt, y, b, M, n))
WRAP(gelu_backward, (void *dx, ax_dtype dt, float *db, const void *x, ax_dtype xt, const float *d, int M, int n),
     (dx, dt, db, x, xt, d, M, n))
WRAP(swiglu_forward, (void *o, ax_dtype ot, void *p, ax_dtype pt, const float *gu, int M, int F),
     (o, ot, p, pt, gu, M, F))
WRAP(swiglu_backward, (void *d, ax_dtype dt, const void *gu, ax_dtype gt, const float *o, int M, int F),
     (d, dt, gu, gt, o, M, F))
WRAP(rope, (float *x, int ld, int M, int T, const int32_t *pos, int nh, int hd, const float *cs, float sg),
     (x, ld, M, T, pos, nh, hd, cs, sg))
WRAP(add, (float *y, const float *x, size_t n), (y, x, n))
WRAP(bias_add, (float *y, const float *b, int M, int n), (y, b, M, n))
WRAP(bias_round, (float *y, void *o, ax_dtype ot, const float *b, int M, int n), (y, o, ot, b, M, n))
WRAP(bias_grad, (float *db, const float *dy, int M, int n), (db, dy, M, n))
WRAP(embedding_forward,
     (float *o, const int32_t *t, const int32_t *pos, const float *wte, const float *wpe, int M, int T, int v0, int Vl,
      int Cl, const ax_reducer *Y),
     (o, t, pos, wte, wpe, M, T, v0, Vl, Cl, Y))
WRAP(embedding_backward,
     (float *dwte, float *dwpe, const float *d, const int32_t *t, const int32_t *pos, int M, int T, int v0, int Vl,
      int Cl),
     (dwte, dwpe, d, t, pos, M, T, v0, Vl, Cl))
WRAP(xent,
     (const void *lg, float *ls, const int32_t *tg, const float *w, int M, int Vl, int v0, int V, const float *ds,
      void *dg, ax_dtype dt, float *sc, const ax_reducer *Y),
     (lg, ls, tg, w, M, Vl, v0, V, ds, dg, dt, sc, Y))
WRAP(attention_forward,
     (void *o, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd, ax_dtype dt, float *sc, int nt),
     (o, lse, qkv, B, T, Hl, KVl, hd, dt, sc, nt))
WRAP(attention_backward,
     (float *dq, const float *d, const void *o, const float *lse, const void *qkv, int B, int T, int Hl, int KVl,
      int hd, ax_dtype dt, float *sc, int nt),
     (dq, d, o, lse, qkv, B, T, Hl, KVl, hd, dt, sc, nt))
WRAP(attention_decode,
     (float *o, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl, int KVl, int hd, int Tmax),
     (o, qkv, kc, vc, len, nb, Hl, KVl, hd, Tmax))
WRAP(adamw_all,
     (float *w, const float *g, float *m, float *v, int64_t n, const int64_t *r, int nr, ax_bf16 *wh, int64_t nh,
      ax_adamw_step s),
     (w, g, m, v, n, r, nr, wh, nh, s))
static double g_sumsq(int n, const float *const *x, const size_t *len) {
    nwaits++;
    open_guard();
    double s = CPU.sumsq(n, x, len);
    close_guard();
    return s;
}
#undef WRAP

/* every rank reports the one device, as ranks sharing a GPU do */
static void g_device_id(char *id) { snprintf(id, AX_DEVICE_ID_LEN, "guarded-0"); }
static const char *g_device_name(void) { return "the CPU behind a guard"; }

static ax_backend guarded(void) {
    ax_backend b = CPU;
    b.name = "cpu-guarded";
    b.host_memory = 0;
    b.alloc = g_alloc;
    b.free = g_free;
    b.copy = g_copy;
    b.copy_rows = g_copy_rows;
    b.copy_async = g_copy_async;
    b.wsum = g_wsum;
    b.zero = g_zero;
    b.sumsq = g_sumsq;
    b.device_id = g_device_id;
    b.device_name = g_device_name;
#define E(n) b.n = g_##n
    E(gemm);
    E(cast);
    E(transpose);
    E(layernorm_forward);
    E(layernorm_backward);
    E(rmsnorm_forward);
    E(rmsnorm_backward);
    E(bias_gelu_forward);
    E(gelu_backward);
    E(swiglu_forward);
    E(swiglu_backward);
    E(rope);
    E(add);
    E(bias_add);
    E(bias_round);
    E(bias_grad);
    E(embedding_forward);
    E(embedding_backward);
    E(xent);
    E(attention_forward);
    E(attention_backward);
    E(attention_decode);
    E(adamw_all);
#undef E
    return b;
}

/* ---- one device for every rank: the host-staged collectives ----
 * The guard stays closed in MPI calls: a group without NCCL (here, every
 * group: the ranks share the one "device") must stage its collectives
 * through host buffers (comm.h), so MPI handed a device buffer faults. */

/* the sharing rules of comm/devices.h with every rank on one device */
static void check_devices(int P) {
    char line[1024];
    int a = -1, b = -1;
    CHECK(!ax_ids_repeat("a\0b\0c\0", 3, 2, &a, &b), "distinct ids seen as repeated");
    CHECK(ax_ids_repeat("a\0b\0a\0", 3, 2, &a, &b) && a == 0 && b == 2, "repeated ids: pair %d, %d", a, b);
    CHECK(ax_devices_check(MPI_COMM_WORLD, 1, line, sizeof line) == 0, "--share-gpu refused: %s", ax_err_msg());
    CHECK(strstr(line, "on 1 device") != NULL, "the devices line: %s", line);
    int rc = ax_devices_check(MPI_COMM_WORLD, 0, line, sizeof line);
    CHECK(P == 1 ? rc == 0 : rc != 0 && strstr(ax_err_msg(), "ranks 0 and 1 drive the same device"),
          "%d ranks on one device without --share-gpu: rc %d (%s)", P, rc, rc ? ax_err_msg() : "");
    ax_err_clear();
}

/* The staged collectives' blocked time (comm.h: the copies and MPI), per
 * group, since the reset before the guarded run: some in every group of more
 * than one rank (each carries the step's collectives), none in a group of one. */
static void check_seconds(ax_grid *g, int reset) {
    ax_comm *all[] = {&g->X, &g->Y, &g->Z, &g->Zg, &g->data, &g->dz, &g->tp};
    static const char *const names[] = {"X", "Y", "Z", "Z gathers", "data", "data x Z", "X x Y x Z"};
    for (int k = 0; k < 7; k++) {
        if (reset) {
            ax_comm_reset_stats(all[k]);
            continue;
        }
        double s = ax_comm_seconds(all[k]);
        CHECK(all[k]->size > 1 ? s > 0 && all[k]->bytes > 0 : s == 0 && all[k]->bytes == 0,
              "grid %d,%d,%d,%d: group %s of %d ranks: %g s blocked, %g bytes", g->gd, g->gx, g->gy, g->gz, names[k],
              all[k]->size, s, all[k]->bytes);
    }
}

/* ---- the run ---- */

#define STEPS 3
#define ACCUM 2
static ax_gpt_config cfg = {.n_layer = 2, .n_head = 4, .n_embd = 32, .block_size = 8, .vocab_size = 101};
static const int B = 8, T = 8;
static const ax_hparams hp = AX_T_HPARAMS(STEPS);

typedef struct {
    double loss[STEPS], gnorm[STEPS];
    float *params, *moment, *loaded, *loaded_moment;
    int64_t n;
} result;

/* n floats of the backend's memory, as the host sees them */
static float *host_copy(float *p, int64_t n) {
    float *h = ax_malloc(n * sizeof(float));
    ax_be()->copy(h, p, n * sizeof(float));
    return h;
}

static void run(ax_grid *g, ax_dtype t, const char *dir, result *r) {
    ax_gpt m;
    if (ax_gpt_init(&m, &cfg, g)) ax_err_exit(1);
    ax_gpt_set_dtype(&m, t);
    ax_gpt_set_overlap(&m, AX_OV_ALL, 0, 1);
    ax_gpt_init_random(&m, 7);
    ax_adamw o;
    ax_adamw_init(&o, m.n_local);
    ax_t_train(&m, &o, &hp, 3, B, ACCUM, T, STEPS, 1, r->loss, r->gnorm); /* goldfish weights at step 1 */
    r->n = m.n_local;
    r->params = host_copy(m.params, m.n_local);
    r->moment = host_copy(o.m, m.n_local);
    /* the parallel writer in the background: the state copied from the
     * backend's memory through copy into host buffers, the files written by
     * a thread (no backend memory touched there), committed by the poll */
    ax_ckpt_state cs = {.step = STEPS, .seed = 7, .batch = B, .seq = T, .steps = STEPS};
    ax_ckpt_writer *w;
    if (ax_ckpt_writer_init(&w, &m, &(ax_ckpt_opts){.async = 1}) || ax_ckpt_begin(w, dir, &o, &cs) ||
        ax_ckpt_poll(w, 1) != 1)
        ax_err_exit(1);
    ax_ckpt_writer_free(w);
    ax_gpt m2;
    ax_adamw o2;
    if (ax_gpt_init(&m2, &cfg, g)) ax_err_exit(1);
    ax_adamw_init(&o2, m2.n_local);
    if (ax_ckpt_load(dir, &m2, &o2)) ax_err_exit(1);
    r->loaded = host_copy(m2.params, m2.n_local);
    r->loaded_moment = host_copy(o2.m, m2.n_local);
    ax_adamw_free(&o2);
    ax_gpt_free(&m2);
    ax_adamw_free(&o);
    ax_gpt_free(&m);
}

/* greedy decoding through the KV cache (memorize's path): two rows of other
 * lengths, three tokens each; the tokens and the last step's logits */
typedef struct {
    int32_t tok[2][3];
    float *logits; /* 2 x Vl, host */
    size_t bytes;
} decoded;

static void decode(ax_grid *g, ax_dtype t, decoded *d) {
    ax_gpt m;
    if (ax_gpt_init(&m, &cfg, g)) ax_err_exit(1);
    ax_gpt_set_dtype(&m, t);
    ax_gpt_init_random(&m, 11);
    ax_kvcache c;
    ax_kv_init(&c, &m, 2, cfg.block_size);
    const int32_t p0[] = {5, 17, 33}, p1[] = {2, 99, 41, 8, 60};
    ax_kv_prefill(&c, &m, 0, p0, 3);
    ax_kv_prefill(&c, &m, 1, p1, 5);
    for (int s = 0; s < 3; s++) {
        int32_t next[2];
        ax_kv_argmax(&c, &m, 2, next);
        d->tok[0][s] = next[0];
        d->tok[1][s] = next[1];
        if (s < 2) ax_kv_step(&c, &m, next, 2);
    }
    d->bytes = 2 * (size_t)m.Vl * sizeof(float);
    d->logits = ax_malloc(d->bytes);
    ax_be()->copy(d->logits, c.logits, d->bytes);
    ax_kv_free(&c);
    ax_gpt_free(&m);
}

/* One training step of ACCUM micro-batches (weights too) on a grid of one
 * rank, where no collective stages anything: the host waits for the device
 * twice, for the loss read back and for the gradient norm, whatever ACCUM;
 * the micro-batches go through copy_async and the loss is summed there. */
static void check_waits(ax_dtype t, const ax_backend *gb) {
    ax_grid g;
    if (ax_grid_init(&g, MPI_COMM_SELF, 1, 1, 1, 1)) ax_err_exit(1);
    ax_backend_install(gb);
    guarding = 1;
    ax_gpt m;
    if (ax_gpt_init(&m, &cfg, &g)) ax_err_exit(1);
    ax_gpt_set_dtype(&m, t);
    ax_gpt_init_random(&m, 7);
    ax_adamw o;
    ax_adamw_init(&o, m.n_local);
    double l, gn;
    ax_t_train(&m, &o, &hp, 3, B, ACCUM, T, 1, 0, &l, &gn); /* activations laid out */
    nwaits = 0;
    ax_t_train(&m, &o, &hp, 3, B, ACCUM, T, 1, 0, &l, &gn);
    CHECK(nwaits == 2, "a step of %d micro-batches waited for the device %d times, expected 2", ACCUM, nwaits);
    ax_adamw_free(&o);
    ax_gpt_free(&m);
    guarding = 0;
    protect_all(PROT_READ | PROT_WRITE);
    ax_backend_install(&ax_cpu_backend);
    ax_grid_free(&g);
}

/* a whole ax_train run (evaluation, checkpoints, the final model) into dir */
static void train(int P, const char *dir) {
    ax_train_opts o;
    ax_train_defaults(&o);
    o.model = cfg;
    o.grid[0] = 1;
    o.grid[1] = 1;
    o.grid[2] = 1;
    o.grid[3] = P;
    o.steps = 4;
    o.batch = B;
    o.seq = T;
    o.grad_accum = ACCUM;
    o.seed = 3;
    o.val_every = 2;
    o.val_batches = 1;
    o.save_every = 2;
    o.quiet = 1;
    o.out = dir;
    if (ax_train(&o, MPI_COMM_WORLD)) ax_err_exit(1);
}

static int same_file(const char *a, const char *b) {
    FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
    int same = f && g;
    while (same) {
        int c = fgetc(f), d = fgetc(g);
        if (c != d) same = 0;
        if (c == EOF) break;
    }
    if (f) fclose(f);
    if (g) fclose(g);
    return same;
}

static void result_free(result *r) {
    free(r->params);
    free(r->moment);
    free(r->loaded);
    free(r->loaded_moment);
}

static ax_backend gb; /* the guarded backend */

/* axonn bench comm's calibration with every buffer the backend's memory */
static void calibrate(int P) {
    ax_calib_opts co;
    ax_calib_defaults(&co);
    co.min_bytes = co.max_bytes = 16 << 10;
    co.gemm_max = 128;
    co.min_s = 1e-4;
    co.verbose = 0;
    ax_machine mach;
    ax_backend_install(&gb);
    guarding = 1;
    CHECK(ax_calibrate(&mach, &co, MPI_COMM_WORLD) == 0, "calibration: %s", ax_err_msg());
    guarding = 0;
    protect_all(PROT_READ | PROT_WRITE);
    ax_backend_install(&ax_cpu_backend);
    CHECK(nblocks == 0, "calibration: %d backend allocations left", nblocks);
    CHECK(mach.gemm_flops > 0 && mach.mem_bw > 0 && mach.optim_s_per_param > 0 && mach.nfit > 0 &&
              mach.fit[0].group == P && mach.fit[0].pt_s[0] > 0,
          "calibration: gemm %g FLOP/s, %g B/s, %d collective fits", mach.gemm_flops, mach.mem_bw, mach.nfit);
}

/* A ring's step, ax_isendrecv_f32 on the device paths: buffers of the
 * guarded backend, so that it must stage them through host buffers (MPI
 * handed one faults); rank r gets rank r-1's floats, in one part and (chunks
 * of 700) in several, completed by ax_wait and by ax_test. One rank: a copy. */
static void check_sendrecv(int P, int rank) {
    ax_comm c;
    MPI_Comm w;
    MPI_Comm_dup(MPI_COMM_WORLD, &w);
    ax_comm_from(&c, w);
    size_t n = 3001;
    float *h = malloc(n * sizeof(float)), *send = gb.alloc(n * sizeof(float)), *recv = gb.alloc(n * sizeof(float));
    int src = (rank + P - 1) % P;
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < n; i++) h[i] = (float)(rank * 10000 + round * 5000) + (float)i;
        gb.copy(send, h, n * sizeof(float));
        ax_comm_set_chunk(round ? 700 : 0);
        ax_req r;
        guarding = 1;
        protect_all(PROT_NONE);
        ax_isendrecv_f32(&c, send, (rank + 1) % P, recv, src, n, &r);
        if (round) ax_wait(&r);
        else
            while (!ax_test(&r)) {}
        guarding = 0;
        protect_all(PROT_READ | PROT_WRITE);
        gb.copy(h, recv, n * sizeof(float));
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += h[i] != (float)(src * 10000 + round * 5000) + (float)i;
        CHECK(bad == 0, "isendrecv round %d: %zu of %zu floats not rank %d's", round, bad, n, src);
    }
    ax_comm_set_chunk(0);
    CHECK(P == 1 ? c.bytes == 0 : c.bytes == 2.0 * n * sizeof(float), "isendrecv: %g bytes counted", c.bytes);
    gb.free(send);
    gb.free(recv);
    free(h);
    ax_comm_free(&c);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int P, rank, ngrids = 0;
    ax_dtype t = AX_F32;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--llama")) {
            cfg.arch = AX_ARCH_LLAMA;
            cfg.n_kv_head = 1;
            cfg.n_inner = 40;
            cfg.untied = 1;
        }
        if (!strcmp(argv[i], "--bf16")) t = AX_BF16;
    }
    struct sigaction sa = {0};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    gb = guarded();
    char dir[256];
    ax_backend_install(&gb);
    check_devices(P);
    check_sendrecv(P, rank);
    ax_backend_install(&ax_cpu_backend);
    snprintf(dir, sizeof dir, "%s/axonn-devmem-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getppid());
    for (ax_t_grids q = {.P = P}; ax_t_grids_next(&q);) {
        int d = q.d, x = q.x, y = q.y, z = q.z;
        ax_grid g;
        if (ax_grid_init(&g, MPI_COMM_WORLD, d, x, y, z)) ax_err_exit(1);
        if (ax_gpt_check_grid(&cfg, &g)) {
            ax_grid_free(&g);
            continue;
        }
        result plain, dev;
        decoded dplain, ddev;
        ax_backend_install(&gb);
        ax_comm *groups[] = {&g.X, &g.Y, &g.Z, &g.data, &g.dz, &g.tp};
        for (int k = 0; k < 6; k++)
            CHECK(ax_comm_shares_device(groups[k]) == (groups[k]->size > 1),
                  "grid %d,%d,%d,%d: group %d of %d ranks shares the device", d, x, y, z, k, groups[k]->size);
        ax_backend_install(&ax_cpu_backend);
        run(&g, t, dir, &plain);
        decode(&g, t, &dplain);
        ax_backend_install(&gb);
        check_seconds(&g, 1);
        guarding = 1;
        run(&g, t, dir, &dev);
        decode(&g, t, &ddev);
        guarding = 0;
        check_seconds(&g, 0);
        protect_all(PROT_READ | PROT_WRITE);
        ax_backend_install(&ax_cpu_backend);
        CHECK(nblocks == 0, "grid %d,%d,%d,%d: %d backend allocations left after free", d, x, y, z, nblocks);
        CHECK(!memcmp(plain.loss, dev.loss, sizeof plain.loss) && !memcmp(plain.gnorm, dev.gnorm, sizeof plain.gnorm),
              "grid %d,%d,%d,%d: losses or gradient norms differ (%.9g vs %.9g)", d, x, y, z, plain.loss[STEPS - 1],
              dev.loss[STEPS - 1]);
        size_t bytes = plain.n * sizeof(float);
        CHECK(!memcmp(plain.params, dev.params, bytes) && !memcmp(plain.moment, dev.moment, bytes),
              "grid %d,%d,%d,%d: parameters or moments differ", d, x, y, z);
        CHECK(!memcmp(dev.params, dev.loaded, bytes) && !memcmp(dev.moment, dev.loaded_moment, bytes),
              "grid %d,%d,%d,%d: the checkpoint read back differs from what was written", d, x, y, z);
        CHECK(!memcmp(dplain.tok, ddev.tok, sizeof dplain.tok) && !memcmp(dplain.logits, ddev.logits, dplain.bytes),
              "grid %d,%d,%d,%d: KV-cache decoding differs (tokens %d %d vs %d %d)", d, x, y, z, dplain.tok[0][2],
              dplain.tok[1][2], ddev.tok[0][2], ddev.tok[1][2]);
        free(dplain.logits);
        free(ddev.logits);
        if (rank == 0)
            printf("grid %d,%d,%d,%d: guarded device memory = host memory, checkpoint round trip, decoding\n", d, x, y,
                   z);
        result_free(&plain);
        result_free(&dev);
        ax_grid_free(&g);
        ngrids++;
    }
    CHECK(ngrids > 0, "no grid of %d ranks fits the model", P);
    check_waits(t, &gb);
    /* the trainer around the step: evaluation, checkpoints, the final model */
    char plain_dir[300], dev_dir[300];
    snprintf(plain_dir, sizeof plain_dir, "%s-plain", dir);
    snprintf(dev_dir, sizeof dev_dir, "%s-dev", dir);
    ax_backend_install(&ax_cpu_backend);
    train(P, plain_dir);
    ax_backend_install(&gb);
    guarding = 1;
    train(P, dev_dir);
    guarding = 0;
    protect_all(PROT_READ | PROT_WRITE);
    ax_backend_install(&ax_cpu_backend);
    /* bench comm's calibration on the device paths, on 2 ranks (groups of 2,
     * staged, and every kernel; its 64 MiB operand pool makes the guard slow) */
    if (P == 2) calibrate(P);
    if (rank == 0) {
        CHECK(same_file(ax_t_join(plain_dir, "model.safetensors"), ax_t_join(dev_dir, "model.safetensors")),
              "ax_train on 1,1,1,%d: the final models differ", P);
        CHECK(same_file(ax_t_join(plain_dir, "ckpt-000004/optim.safetensors"),
                        ax_t_join(dev_dir, "ckpt-000004/optim.safetensors")),
              "ax_train on 1,1,1,%d: the checkpoints' optimizer states differ", P);
        ax_t_rmtree(plain_dir);
        ax_t_rmtree(dev_dir);
        ax_t_rmtree(dir);
    }
    int rc = ax_test_done("devmem");
    MPI_Finalize();
    return rc;
}
