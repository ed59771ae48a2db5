/* GEMM through oneDNN's matmul primitive (oneDNN 2.x C API; Debian 12 ships
 * 2.6). A primitive is compiled for one problem (shapes, strides, dtypes,
 * alpha, beta), so the ones in use are kept in a small table: a training step
 * has a dozen distinct GEMMs, each compiled once. Built only with oneDNN
 * (AX_HAVE_DNNL); otherwise the stubs at the end say it is absent. */
#include "backend/cpu/cpu.h"
#include "util/err.h"
#include <stdio.h>
#include <string.h>

#ifdef AX_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        dnnl_status_t s_ = (call);                                                                    \
        if (s_ != dnnl_success) ax_fatal(__FILE__, __LINE__, "%s: oneDNN status %d", #call, (int)s_); \
    } while (0)

typedef struct {
    int batch, tA, tB, ar, ac, lda, br, bc, ldb, cr, cc, ldc;
    int64_t sa, sb, sc;
    ax_dtype ta, tb, tc;
    float alpha, beta;
} key;

typedef struct {
    key k;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
} entry;

#define CACHE 64
static entry cache[CACHE];
static int used, next_evict;
static dnnl_engine_t engine;
static dnnl_stream_t stream;

static void init_engine(void) {
    if (engine) return;
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
}

static dnnl_data_type_t dt(ax_dtype t) { return t == AX_BF16 ? dnnl_bf16 : dnnl_f32; }

/* op(m) (rows x cols of the product) as a oneDNN descriptor over m's memory */
static void desc(dnnl_memory_desc_t *d, int batch, int trans, int rows, int cols, int ld, int64_t stride, ax_dtype t) {
    int r = trans ? cols : rows, c = trans ? rows : cols;
    if (batch > 1) {
        dnnl_dims_t dims = {batch, r, c}, st = {stride, trans ? 1 : ld, trans ? ld : 1};
        CHECK(dnnl_memory_desc_init_by_strides(d, 3, dims, dt(t), st));
    } else {
        dnnl_dims_t dims = {r, c}, st = {trans ? 1 : ld, trans ? ld : 1};
        CHECK(dnnl_memory_desc_init_by_strides(d, 2, dims, dt(t), st));
    }
}

/* a primitive for k, or NULL with *impl untouched when oneDNN has none */
static dnnl_primitive_t create(const key *k, const char **impl, dnnl_memory_desc_t md[3]) {
    desc(&md[0], k->batch, k->tA, k->ar, k->ac, k->lda, k->sa, k->ta);
    desc(&md[1], k->batch, k->tB, k->br, k->bc, k->ldb, k->sb, k->tb);
    desc(&md[2], k->batch, 0, k->cr, k->cc, k->ldc, k->sc, k->tc);
    dnnl_matmul_desc_t op;
    CHECK(dnnl_matmul_desc_init(&op, &md[0], &md[1], NULL, &md[2]));
    dnnl_primitive_attr_t attr;
    CHECK(dnnl_primitive_attr_create(&attr));
    if (k->alpha != 1.0f) CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &k->alpha));
    if (k->beta != 0.0f) {
        dnnl_post_ops_t po;
        CHECK(dnnl_post_ops_create(&po));
        CHECK(dnnl_post_ops_append_sum(po, k->beta));
        CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
        dnnl_post_ops_destroy(po);
    }
    dnnl_primitive_desc_t pd;
    dnnl_status_t s = dnnl_primitive_desc_create(&pd, &op, attr, engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) return NULL;
    const char *name = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
    if (impl) *impl = name;
    dnnl_primitive_t p = NULL;
    /* a reference (unoptimised) implementation is slower than widening to sgemm */
    if (name && strncmp(name, "ref", 3)) CHECK(dnnl_primitive_create(&p, pd));
    dnnl_primitive_desc_destroy(pd);
    return p;
}

int ax_dnnl_gemm(int batch, float alpha, ax_mat A, int tA, ax_mat B, int tB, float beta, ax_mat C) {
    init_engine();
    key k;
    memset(&k, 0, sizeof k); /* padding too: keys are compared bytewise */
    k.batch = batch;
    k.tA = tA;
    k.tB = tB;
    k.ar = A.rows;
    k.ac = A.cols;
    k.lda = A.ld;
    k.br = B.rows;
    k.bc = B.cols;
    k.ldb = B.ld;
    k.cr = C.rows;
    k.cc = C.cols;
    k.ldc = C.ld;
    k.sa = batch > 1 ? A.stride : 0;
    k.sb = batch > 1 ? B.stride : 0;
    k.sc = batch > 1 ? C.stride : 0;
    k.ta = A.dtype;
    k.tb = B.dtype;
    k.tc = C.dtype;
    k.alpha = alpha;
    k.beta = beta;
    entry *e = NULL;
    for (int i = 0; i < used && !e; i++)
        if (!memcmp(&cache[i].k, &k, sizeof k)) e = &cache[i];
    if (!e) {
        dnnl_memory_desc_t md[3];
        dnnl_primitive_t p = create(&k, NULL, md);
        if (!p) return -1;
        if (used < CACHE) e = &cache[used++];
        else {
            e = &cache[next_evict];
            next_evict = (next_evict + 1) % CACHE;
            dnnl_primitive_destroy(e->prim);
            dnnl_memory_destroy(e->a);
            dnnl_memory_destroy(e->b);
            dnnl_memory_destroy(e->c);
        }
        e->k = k;
        e->prim = p;
        CHECK(dnnl_memory_create(&e->a, &md[0], engine, DNNL_MEMORY_NONE));
        CHECK(dnnl_memory_create(&e->b, &md[1], engine, DNNL_MEMORY_NONE));
        CHECK(dnnl_memory_create(&e->c, &md[2], engine, DNNL_MEMORY_NONE));
    }
    CHECK(dnnl_memory_set_data_handle(e->a, A.data));
    CHECK(dnnl_memory_set_data_handle(e->b, B.data));
    CHECK(dnnl_memory_set_data_handle(e->c, C.data));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c}};
    CHECK(dnnl_primitive_execute(e->prim, stream, 3, args));
    CHECK(dnnl_stream_wait(stream));
    return 0;
}

int ax_dnnl_available(void) { return 1; }

const char *ax_dnnl_version(void) {
    static char v[32];
    const dnnl_version_t *d = dnnl_version();
    snprintf(v, sizeof v, "%d.%d.%d", d->major, d->minor, d->patch);
    return v;
}

const char *ax_dnnl_isa(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "SSE4.1";
    case dnnl_cpu_isa_avx: return "AVX";
    case dnnl_cpu_isa_avx2: return "AVX2";
    case dnnl_cpu_isa_avx512_core: return "AVX-512";
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX-512 VNNI";
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX-512 BF16";
    case dnnl_cpu_isa_avx512_core_amx: return "AMX";
    default: return "other ISA";
    }
}

/* The implementation oneDNN picks for a bf16 matmul of a model-like shape, or
 * NULL when it has none but the reference code. */
const char *ax_dnnl_bf16_kernel(void) {
    static int probed;
    static char name[64];
    if (!probed) {
        probed = 1;
        init_engine();
        key k = {.batch = 1,
                 .ar = 256,
                 .ac = 256,
                 .lda = 256,
                 .br = 256,
                 .bc = 256,
                 .ldb = 256,
                 .tB = 1,
                 .cr = 256,
                 .cc = 256,
                 .ldc = 256,
                 .ta = AX_BF16,
                 .tb = AX_BF16,
                 .tc = AX_F32,
                 .alpha = 1};
        const char *impl = NULL;
        dnnl_memory_desc_t md[3];
        dnnl_primitive_t p = create(&k, &impl, md);
        if (p) {
            snprintf(name, sizeof name, "%s, %s", impl, ax_dnnl_isa());
            dnnl_primitive_destroy(p);
        }
    }
    return name[0] ? name : NULL;
}
#else
int ax_dnnl_gemm(int batch, float alpha, ax_mat A, int tA, ax_mat B, int tB, float beta, ax_mat C) { return -1; }
int ax_dnnl_available(void) { return 0; }
const char *ax_dnnl_version(void) { return "absent"; }
const char *ax_dnnl_isa(void) { return "unknown"; }
const char *ax_dnnl_bf16_kernel(void) { return NULL; }
#endif
