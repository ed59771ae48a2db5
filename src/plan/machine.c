#include "plan/machine.h"
#include "measure/peak.h"
#include "util/err.h"
#include "util/fileio.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ax_coll_names[AX_COLL_N] = {"allreduce", "allgather", "reduce_scatter"};
const char *const ax_place_names[AX_PLACE_N] = {"intra", "inter", "core"};
const char *const ax_machine_preset_list = "perlmutter, frontier, alps, h100x8, h200x8 or cpu";

static int op_of(const char *s) {
    for (int i = 0; i < AX_COLL_N; i++)
        if (strcmp(s, ax_coll_names[i]) == 0) return i;
    return -1;
}

/* how far a fit's placement is from the one asked for: one core, within a node, across nodes in a line */
static int place_dist(int a, int b) {
    static const int pos[AX_PLACE_N] = {1, 2, 0};
    return abs(pos[a] - pos[b]);
}

int ax_machine_place(const ax_machine *m, int s, int p, int P) {
    int R = m->ranks_per_node;
    /* a group of p ranks, stride s, stays in one node when the job fits in one node or s*p ranks tile the node */
    if (p > 1 && P > R && !(s * p <= R && R % (s * p) == 0)) return AX_PLACE_INTER;
    int one_core = ax_cores_one_core(R, m->cores_per_node, m->core_map, s, p); /* shared cores only */
    return one_core ? AX_PLACE_CORE : AX_PLACE_INTRA;
}

double ax_machine_coll(const ax_machine *m, int op, int p, int place, double bytes) {
    if (p <= 1) return 0;
    const ax_coll_fit *best = NULL;
    int best_score = 1 << 30;
    for (int i = 0; i < m->nfit; i++) {
        const ax_coll_fit *f = &m->fit[i];
        if (f->op != op) continue;
        /* the placement matters most, then the group size (0: any) */
        int score = place_dist(f->place, place) * (1 << 20) + (f->group ? abs(f->group - p) : 1 << 19);
        if (score < best_score) {
            best_score = score;
            best = f;
        }
    }
    if (!best) /* no fit of this collective: an all-reduce is two rounds of the others */
        for (int i = 0; i < m->nfit && !best; i++) best = &m->fit[i];
    if (!best) return 0;
    int n = best->npt;
    if (n < 2 || bytes < best->pt_bytes[0]) return best->alpha + best->beta * bytes;
    int i = 1;
    while (i < n - 1 && bytes > best->pt_bytes[i]) i++;
    const double *x = best->pt_bytes, *t = best->pt_s;
    double slope = (t[i] - t[i - 1]) / (x[i] - x[i - 1]);
    if (slope < 0) slope = 0; /* beyond the last point: never cheaper for more bytes */
    return bytes <= x[i] ? t[i - 1] + (t[i] - t[i - 1]) * (bytes - x[i - 1]) / (x[i] - x[i - 1])
                         : t[i] + slope * (bytes - x[i]);
}

double ax_machine_gemm_at(const ax_machine *m, int M, int N, int K, int ta, int tb, int bf16) {
    for (int i = 0; i < m->ngemm; i++) {
        const ax_gemm_point *p = &m->gemm[i];
        if (p->m == M && p->n == N && p->k == K && p->ta == ta && p->tb == tb && p->bf16 == bf16)
            return 2.0 * M * N * K / p->flops;
    }
    return ax_machine_gemm(m, 2.0 * M * N * K, bf16);
}

double ax_machine_attn_rate(const ax_machine *m, int T, int hd) {
    for (int i = 0; i < m->nattn; i++)
        if (m->attn[i].T == T && m->attn[i].hd == hd) return m->attn[i].flops;
    return m->attn_flops;
}

/* ---- JSON ---- */

static int num(json_t *o, const char *key, double *v, const char *path, const char *where, int required) {
    json_t *x = json_object_get(o, key);
    if (!x) return required ? AX_ERR("--machine %s: missing field \"%s\"%s (a number)", path, key, where) : 0;
    if (!json_is_number(x) || !isfinite(json_number_value(x)) || json_number_value(x) < 0)
        return AX_ERR("--machine %s: field \"%s\"%s must be a non-negative number", path, key, where);
    *v = json_number_value(x);
    return 0;
}

/* "cores_per_node" and "core_map", both optional: where ranks outnumber cores (plan/shared_cores.h) */
static int parse_cores(ax_machine *m, json_t *j, const char *path) {
    double cpn = 0;
    AX_TRY(num(j, "cores_per_node", &cpn, path, "", 0));
    if (cpn != floor(cpn)) return AX_ERR("--machine %s: \"cores_per_node\" must be a whole number", path);
    m->cores_per_node = (int)cpn;
    json_t *cm = json_object_get(j, "core_map");
    m->core_map = cm ? -1 : AX_CORES_UNKNOWN;
    for (int k = 0; json_is_string(cm) && k < AX_CORES_N; k++)
        if (!strcmp(json_string_value(cm), ax_core_map_names[k])) m->core_map = k;
    if (m->core_map < 0)
        return AX_ERR("--machine %s: field \"core_map\": expected unknown, round_robin or block", path);
    return 0;
}

static void write_cores(const ax_machine *m, json_t *j) {
    if (m->cores_per_node <= 0) return; /* ranks did not outnumber cores */
    json_object_set_new(j, "cores_per_node", json_integer(m->cores_per_node));
    json_object_set_new(j, "core_map", json_string(ax_core_map_names[m->core_map]));
}

/* name, source, ranks per node (and the shared cores' fields), memory and the per-element costs */
static int parse_node(ax_machine *m, json_t *j, const char *path) {
    json_t *s = json_object_get(j, "name");
    snprintf(m->name, sizeof m->name, "%s", json_is_string(s) ? json_string_value(s) : path);
    s = json_object_get(j, "source");
    if (json_is_string(s)) snprintf(m->source, sizeof m->source, "%s", json_string_value(s));
    double rpn = 0;
    AX_TRY(num(j, "ranks_per_node", &rpn, path, "", 1));
    if (rpn < 1 || rpn != floor(rpn)) return AX_ERR("--machine %s: \"ranks_per_node\" must be an integer >= 1", path);
    m->ranks_per_node = (int)rpn;
    AX_TRY(parse_cores(m, j, path));
    AX_TRY(num(j, "memory_per_rank_bytes", &m->mem_bytes, path, "", 1));
    AX_TRY(num(j, "attention_flops", &m->attn_flops, path, "", 1));
    AX_TRY(num(j, "memory_bandwidth", &m->mem_bw, path, "", 1));
    AX_TRY(num(j, "optimizer_s_per_param", &m->optim_s_per_param, path, "", 0));
    AX_TRY(num(j, "activation_forward_s_per_element", &m->act_fwd_s, path, "", 0));
    AX_TRY(num(j, "activation_backward_s_per_element", &m->act_bwd_s, path, "", 0));
    AX_TRY(num(j, "layernorm_forward_s_per_element", &m->ln_fwd_s, path, "", 0));
    AX_TRY(num(j, "layernorm_backward_s_per_element", &m->ln_bwd_s, path, "", 0));
    AX_TRY(num(j, "loss_s_per_element", &m->loss_s, path, "", 0));
    m->overlap_eff = 1;
    json_t *ov = json_object_get(j, "overlap_efficiency"); /* negative: overlapping costs (calibrate.c) */
    if (ov) {
        m->overlap_eff = json_is_number(ov) ? json_number_value(ov) : NAN;
        if (!(m->overlap_eff >= -1 && m->overlap_eff <= 1))
            return AX_ERR("--machine %s: \"overlap_efficiency\" must be a number in [-1, 1]", path);
    }
    return 0;
}

/* "gemm" (the fit and its measured shapes) and "gemm_bf16" */
static int parse_gemm(ax_machine *m, json_t *j, const char *path) {
    json_t *g = json_object_get(j, "gemm");
    if (!json_is_object(g)) return AX_ERR("--machine %s: missing field \"gemm\" (an object with \"flops\")", path);
    AX_TRY(num(g, "flops", &m->gemm_flops, path, " in \"gemm\"", 1));
    AX_TRY(num(g, "alpha_s", &m->gemm_alpha, path, " in \"gemm\"", 0));
    json_t *gb = json_object_get(j, "gemm_bf16");
    if (gb) {
        if (!json_is_object(gb)) return AX_ERR("--machine %s: \"gemm_bf16\" must be an object with \"flops\"", path);
        AX_TRY(num(gb, "flops", &m->gemm_bf16_flops, path, " in \"gemm_bf16\"", 1));
        AX_TRY(num(gb, "alpha_s", &m->gemm_bf16_alpha, path, " in \"gemm_bf16\"", 0));
    }
    json_t *sh = json_object_get(g, "shapes"), *e;
    size_t i;
    if (sh && !json_is_array(sh)) return AX_ERR("--machine %s: \"shapes\" in \"gemm\" must be an array", path);
    json_array_foreach(sh, i, e) {
        if (m->ngemm == AX_MACHINE_GEMMS)
            return AX_ERR("--machine %s: more than %d GEMM shapes", path, AX_MACHINE_GEMMS);
        char where[64];
        snprintf(where, sizeof where, " in \"gemm\".\"shapes\"[%zu]", i);
        double d[5] = {0, 0, 0, 0, 1}; /* m n k ta tb: an entry without a layout is A B^T, as the fits time it */
        static const char *const key[5] = {"m", "n", "k", "ta", "tb"};
        for (int f = 0; f < 5; f++) AX_TRY(num(e, key[f], &d[f], path, where, f < 3));
        ax_gemm_point *p = &m->gemm[m->ngemm++];
        *p = (ax_gemm_point){(int)d[0], (int)d[1], (int)d[2], d[3] != 0, d[4] != 0, 0, 0};
        AX_TRY(num(e, "flops", &p->flops, path, where, 1));
        json_t *t = json_object_get(e, "dtype");
        const char *ts = json_is_string(t) ? json_string_value(t) : "";
        if (t && strcmp(ts, "fp32") && strcmp(ts, "bf16"))
            return AX_ERR("--machine %s: field \"dtype\"%s: expected fp32 or bf16", path, where);
        p->bf16 = t && !strcmp(ts, "bf16");
        if (!(p->flops > 0) || p->m < 1 || p->n < 1 || p->k < 1)
            return AX_ERR("--machine %s: %s: m, n, k and flops must be positive", path, where + 4);
    }
    return 0;
}

static int parse_attention(ax_machine *m, json_t *j, const char *path) {
    json_t *at = json_object_get(j, "attention_shapes"), *e;
    size_t i;
    if (at && !json_is_array(at)) return AX_ERR("--machine %s: \"attention_shapes\" must be an array", path);
    json_array_foreach(at, i, e) {
        if (m->nattn == AX_MACHINE_ATTNS)
            return AX_ERR("--machine %s: more than %d attention shapes", path, AX_MACHINE_ATTNS);
        char where[64];
        snprintf(where, sizeof where, " in \"attention_shapes\"[%zu]", i);
        double T = 0, hd = 0;
        ax_attn_point *p = &m->attn[m->nattn++];
        AX_TRY(num(e, "T", &T, path, where, 1));
        AX_TRY(num(e, "hd", &hd, path, where, 1));
        AX_TRY(num(e, "flops", &p->flops, path, where, 1));
        p->T = (int)T;
        p->hd = (int)hd;
        if (!(p->flops > 0) || p->T < 1 || p->hd < 1)
            return AX_ERR("--machine %s: %s: T, hd and flops must be positive", path, where + 4);
    }
    return 0;
}

/* a collective's measured [bytes, seconds] points, bytes ascending */
static int parse_points(ax_coll_fit *f, json_t *e, const char *path, const char *where) {
    json_t *pts = json_object_get(e, "points"), *q;
    size_t k;
    if (pts && (!json_is_array(pts) || json_array_size(pts) > AX_COLL_POINTS))
        return AX_ERR("--machine %s: field \"points\"%s: expected an array of at most %d [bytes, seconds]", path, where,
                      AX_COLL_POINTS);
    json_array_foreach(pts, k, q) {
        json_t *b = json_array_get(q, 0), *t = json_array_get(q, 1);
        double bb = json_is_number(b) ? json_number_value(b) : -1, tt = json_is_number(t) ? json_number_value(t) : -1;
        if (!json_is_array(q) || json_array_size(q) != 2 || !(bb > 0) || !(tt > 0) || !isfinite(bb) || !isfinite(tt) ||
            (k > 0 && bb <= f->pt_bytes[k - 1]))
            return AX_ERR("--machine %s: field \"points\"[%zu]%s: expected [bytes, seconds], positive, bytes "
                          "ascending",
                          path, k, where);
        f->pt_bytes[k] = bb;
        f->pt_s[k] = tt;
        f->npt = (int)k + 1;
    }
    return 0;
}

static int parse_collectives(ax_machine *m, json_t *j, const char *path) {
    json_t *c = json_object_get(j, "collectives"), *e;
    size_t i;
    if (!json_is_array(c) || json_array_size(c) == 0)
        return AX_ERR("--machine %s: missing field \"collectives\" (a non-empty array of alpha-beta fits)", path);
    json_array_foreach(c, i, e) {
        if (m->nfit == AX_MACHINE_FITS) return AX_ERR("--machine %s: more than %d collectives", path, AX_MACHINE_FITS);
        char where[64];
        snprintf(where, sizeof where, " in \"collectives\"[%zu]", i);
        ax_coll_fit *f = &m->fit[m->nfit++];
        json_t *op = json_object_get(e, "op"), *pl = json_object_get(e, "placement");
        if (!json_is_string(op) || (f->op = op_of(json_string_value(op))) < 0)
            return AX_ERR("--machine %s: field \"op\"%s: expected allreduce, allgather or reduce_scatter", path, where);
        f->place = AX_PLACE_N;
        for (int k = 0; json_is_string(pl) && k < AX_PLACE_N; k++)
            if (!strcmp(json_string_value(pl), ax_place_names[k])) f->place = k;
        if (f->place == AX_PLACE_N)
            return AX_ERR("--machine %s: field \"placement\"%s: expected intra, inter or core", path, where);
        double gs = 0;
        AX_TRY(num(e, "group", &gs, path, where, 1));
        f->group = (int)gs;
        AX_TRY(num(e, "alpha_s", &f->alpha, path, where, 1));
        AX_TRY(num(e, "beta_s_per_byte", &f->beta, path, where, 1));
        AX_TRY(parse_points(f, e, path, where));
    }
    return 0;
}

static int parse(ax_machine *m, json_t *j, const char *path) {
    if (!json_is_object(j)) return AX_ERR("--machine %s: expected a JSON object", path);
    AX_TRY(parse_node(m, j, path));
    AX_TRY(parse_gemm(m, j, path));
    AX_TRY(parse_attention(m, j, path));
    if (!(m->gemm_flops > 0) || !(m->attn_flops > 0) || !(m->mem_bw > 0) || !(m->mem_bytes > 0))
        return AX_ERR("--machine %s: \"gemm\".\"flops\", \"attention_flops\", \"memory_bandwidth\" and "
                      "\"memory_per_rank_bytes\" must be positive",
                      path);
    return parse_collectives(m, j, path);
}

int ax_machine_read(ax_machine *m, const char *path) {
    memset(m, 0, sizeof *m);
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) return AX_ERR("--machine %s: %s (line %d)", path, e.text, e.line);
    int rc = parse(m, j, path);
    json_decref(j);
    return rc;
}

int ax_machine_write(const ax_machine *m, const char *path) {
    json_t *j = json_object(), *g = json_object(), *sh = json_array(), *c = json_array();
    json_object_set_new(j, "name", json_string(m->name));
    json_object_set_new(j, "source", json_string(m->source));
    json_object_set_new(j, "ranks_per_node", json_integer(m->ranks_per_node));
    write_cores(m, j);
    json_object_set_new(j, "memory_per_rank_bytes", json_real(m->mem_bytes));
    json_object_set_new(g, "flops", json_real(m->gemm_flops));
    json_object_set_new(g, "alpha_s", json_real(m->gemm_alpha));
    for (int i = 0; i < m->ngemm; i++) {
        const ax_gemm_point *p = &m->gemm[i];
        json_array_append_new(sh,
                              json_pack("{s:i, s:i, s:i, s:i, s:i, s:s, s:f}", "m", p->m, "n", p->n, "k", p->k, "ta",
                                        p->ta, "tb", p->tb, "dtype", p->bf16 ? "bf16" : "fp32", "flops", p->flops));
    }
    json_object_set_new(g, "shapes", sh);
    json_object_set_new(j, "gemm", g);
    if (m->gemm_bf16_flops > 0)
        json_object_set_new(j, "gemm_bf16",
                            json_pack("{s:f, s:f}", "flops", m->gemm_bf16_flops, "alpha_s", m->gemm_bf16_alpha));
    json_object_set_new(j, "attention_flops", json_real(m->attn_flops));
    if (m->nattn) {
        json_t *at = json_array();
        for (int i = 0; i < m->nattn; i++)
            json_array_append_new(
                at, json_pack("{s:i, s:i, s:f}", "T", m->attn[i].T, "hd", m->attn[i].hd, "flops", m->attn[i].flops));
        json_object_set_new(j, "attention_shapes", at);
    }
    json_object_set_new(j, "memory_bandwidth", json_real(m->mem_bw));
    if (m->optim_s_per_param > 0) json_object_set_new(j, "optimizer_s_per_param", json_real(m->optim_s_per_param));
    if (m->ln_fwd_s > 0) json_object_set_new(j, "layernorm_forward_s_per_element", json_real(m->ln_fwd_s));
    if (m->ln_bwd_s > 0) json_object_set_new(j, "layernorm_backward_s_per_element", json_real(m->ln_bwd_s));
    if (m->loss_s > 0) json_object_set_new(j, "loss_s_per_element", json_real(m->loss_s));
    if (m->act_fwd_s > 0) json_object_set_new(j, "activation_forward_s_per_element", json_real(m->act_fwd_s));
    if (m->act_bwd_s > 0) json_object_set_new(j, "activation_backward_s_per_element", json_real(m->act_bwd_s));
    json_object_set_new(j, "overlap_efficiency", json_real(m->overlap_eff));
    for (int i = 0; i < m->nfit; i++) {
        const ax_coll_fit *f = &m->fit[i];
        json_t *e = json_pack("{s:s, s:i, s:s, s:f, s:f}", "op", ax_coll_names[f->op], "group", f->group, "placement",
                              ax_place_names[f->place], "alpha_s", f->alpha, "beta_s_per_byte", f->beta);
        if (f->npt) {
            json_t *pts = json_array();
            for (int k = 0; k < f->npt; k++)
                json_array_append_new(pts, json_pack("[f, f]", f->pt_bytes[k], f->pt_s[k]));
            json_object_set_new(e, "points", pts);
        }
        json_array_append_new(c, e);
    }
    json_object_set_new(j, "collectives", c);
    char *text = json_dumps(j, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    json_decref(j);
    size_t n = strlen(text);
    text = realloc(text, n + 2);
    text[n] = '\n';
    text[n + 1] = 0;
    ax_outfile out;
    int rc = ax_out_open(&out, path);
    if (rc == 0 && ax_out_write(&out, text, n + 1)) {
        ax_out_abort(&out);
        rc = -1;
    } else if (rc == 0) rc = ax_out_commit(&out);
    free(text);
    return rc;
}

/* ---- presets: nominal figures, sources in docs/planner.md ----
 * Sustained rates are taken as fixed shares of the datasheet: GEMMs 80% of
 * the dense bf16 peak (the measured share behind it: docs/algorithm.md §5),
 * fused attention half the GEMM rate, elementwise kernels 80% of the HBM
 * bandwidth, collectives 80% of the link's one-direction bandwidth per rank
 * with 5 us (in a node) and 15 us (across nodes) latency. */
typedef struct {
    const char *name, *desc;
    int rpn;
    const char *gpu; /* NVIDIA's: its name as CUDA gives it, whose peak measure/peak.c holds; else peak below */
    double peak, mem, hbm, intra_bw, inter_bw; /* per rank: FLOP/s, bytes, bytes/s, bytes/s, bytes/s */
} ax_preset;

static const ax_preset presets[] = {
    {"perlmutter", "Perlmutter GPU node: 4 x A100-SXM4-40GB, NVLink 3, 4 x Slingshot-11 NICs", 4,
     "NVIDIA A100-SXM4-40GB", 0, 40e9, 1.555e12, 300e9, 25e9},
    {"frontier", "Frontier node: 4 x MI250X = 8 GCDs of 64 GB, Infinity Fabric, 4 x Slingshot-11 NICs", 8, NULL,
     191.5e12, 64e9, 1.6e12, 50e9, 12.5e9},
    {"alps", "Alps node: 4 x GH200 (H100 96 GB), NVLink 4, 4 x Slingshot-11 NICs", 4, "NVIDIA GH200 96GB HBM3", 0, 96e9,
     4.0e12, 450e9, 25e9},
    {"h100x8", "one 8 x H100-SXM5-80GB node (DGX H100), NVLink 4 / NVSwitch, 8 x 400 Gb/s InfiniBand", 8,
     "NVIDIA H100 80GB HBM3", 0, 80e9, 3.35e12, 450e9, 50e9},
    {"h200x8", "one 8 x H200-SXM-141GB node, NVLink 4 / NVSwitch, 8 x 400 Gb/s InfiniBand", 8, "NVIDIA H200", 0, 141e9,
     4.8e12, 450e9, 50e9},
    /* a guess for a small x86 node when nothing was measured: run axonn bench comm instead */
    {"cpu", "a generic CPU node (estimate; axonn bench comm measures the real one)", 2, NULL, 100e9, 4e9, 10e9, 5e9,
     1e9},
};

int ax_machine_preset(ax_machine *m, const char *name) {
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++) {
        const ax_preset *p = &presets[i];
        if (strcmp(name, p->name)) continue;
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", p->name);
        snprintf(m->source, sizeof m->source, "preset: %s (nominal)", p->desc);
        m->ranks_per_node = p->rpn;
        m->mem_bytes = p->mem;
        m->gemm_flops = 0.8 * (p->gpu ? ax_peak_flops(p->gpu, AX_BF16) : p->peak);
        m->gemm_alpha = strcmp(p->name, "cpu") ? 5e-6 : 2e-6;
        m->attn_flops = 0.5 * m->gemm_flops;
        m->mem_bw = 0.8 * p->hbm;
        /* GPUs: an assumption, collectives on their own engine (NCCL/RCCL streams); the cpu
         * guess: what bench comm measured on 2-core VMs (docs/planner.md), nothing hidden */
        m->overlap_eff = strcmp(p->name, "cpu") ? 1 : 0;
        for (int op = 0; op < AX_COLL_N; op++)
            for (int inter = 0; inter < 2; inter++)
                m->fit[m->nfit++] = (ax_coll_fit){op, 0, inter ? AX_PLACE_INTER : AX_PLACE_INTRA, inter ? 15e-6 : 5e-6,
                                                  1.0 / (0.8 * (inter ? p->inter_bw : p->intra_bw))};
        return 0;
    }
    return AX_ERR("--machine '%s': no such file, and not a preset (expected a machine description JSON or %s)", name,
                  ax_machine_preset_list);
}
