/* The model against the PyTorch reference (tests/ref/gpt_ref.py): logits,
 * loss and every parameter gradient at the initial weights, then 10 AdamW
 * steps with warm-up, cosine decay and clipping. Runs on any grid given as
 * "--grid D,X,Y,Z" and must give the serial (PyTorch) numbers on every one. */
#include "test.h"
#include "model_check.h"
#include "model/gpt.h"
#include "train/step.h"
#include "memo/goldfish.h"
#include "util/err.h"
#include <jansson.h>

static ax_gpt m;
static ax_grid g;

/* The key bias has an exactly-zero true gradient (it shifts every score of a
 * softmax row equally): its computed gradient is rounding noise, which Adam
 * normalises into updates of ~1e-6. Those entries are compared apart, in
 * absolute terms; key_bias_err returns their largest difference. */
static int is_key_bias(const ax_param *p, int64_t k) {
    if (!strstr(p->name, "c_attn.bias")) return 0;
    int64_t j = ax_shard_logical_index(&p->shard, &g, g.x, g.y, g.z, k), C = m.cfg.n_embd;
    return j >= C && j < 2 * C;
}
static double key_bias_err(const float *got, const float *ref) {
    double e = 0;
    for (int i = 0; i < m.np; i++)
        for (int64_t k = 0; k < m.p[i].numel; k++)
            if (is_key_bias(&m.p[i], k)) e = fmax(e, fabs(got[m.p[i].offset + k] - ref[m.p[i].offset + k]));
    MPI_Allreduce(MPI_IN_PLACE, &e, 1, MPI_DOUBLE, MPI_MAX, g.world);
    return e;
}

static double worst_param_diff(const float *got, const float *ref, float *tmp, const char **worst) {
    return ax_t_worst_param_diff(&m, got, ref, tmp, is_key_bias, worst);
}

/* One scenario read top to bottom (set up, run, check each quantity in order): kept whole on purpose. */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    char path[1300], dir[1024];
    ax_gpt_config cfg = ax_t_open_fixture(argc, argv, "gpt_tiny", &g, &m, dir, sizeof dir);
    float *init = ax_malloc(m.n_local * sizeof(float));
    memcpy(init, m.params, m.n_local * sizeof(float));

    ax_st_file ref;
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    if (ax_st_open(&ref, path)) ax_err_exit(0);
    const ax_st_tensor *tt = ax_st_find(&ref, "tokens");
    const int32_t *tokens = ax_st_data(&ref, tt);
    int S = (int)tt->shape[0], B = (int)tt->shape[1], T = (int)tt->shape[2] - 1, V = cfg.vocab_size;
    int Bl = B / (g.gd * g.gz), M = Bl * T;

    /* forward at the initial weights on batch 0 */
    int32_t *seqs = ax_malloc((size_t)B * (T + 1) * sizeof(int32_t)),
            *scr = ax_malloc(3 * (size_t)B * T * sizeof(int32_t));
    int32_t *in = scr, *tg = scr + M;
    for (int b = 0; b < Bl; b++) {
        const int32_t *s = tokens + ax_seq_pos(&g, B, 1, 0, 0, b) * (T + 1);
        memcpy(in + b * T, s, T * 4);
        memcpy(tg + b * T, s + 1, T * 4);
    }
    double lsum = ax_gpt_forward(&m, in, tg, NULL, Bl, T, 0.0f);
    float *lg = ax_malloc((size_t)M * m.Vl * sizeof(float)); /* every row's logits, as the classifier computes them */
    ax_gpt_logits(&m, lg, 0, M);
    float *rlog = ax_malloc(B * T * V * sizeof(float));
    ax_st_read_f32(&ref, ax_st_find(&ref, "logits"), rlog, (int64_t)B * T * V);
    double dn = 0, rn = 0;
    for (int b = 0; b < Bl; b++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < m.Vl && m.v0 + j < V; j++) {
                int64_t gs = ax_seq_pos(&g, B, 1, 0, 0, b);
                double r = rlog[(gs * T + t) * V + m.v0 + j], c = lg[(int64_t)(b * T + t) * m.Vl + j];
                dn += (r - c) * (r - c);
                rn += r * r;
            }
    double both[2] = {dn, rn};
    MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE, MPI_SUM, g.world);
    CHECK(sqrt(both[0] / both[1]) < 1e-5, "logits rel diff %.3g", sqrt(both[0] / both[1]));
    ax_allreduce_f64(&g.dz, &lsum, 1);
    float loss0;
    ax_st_read_f32(&ref, ax_st_find(&ref, "loss0"), &loss0, 1);
    CHECK(fabs(lsum / (B * T) - loss0) < 1e-5 * loss0, "loss %.8f vs %.8f", lsum / (B * T), loss0);

    /* gradients at the initial weights */
    memset(m.grads, 0, m.n_local * sizeof(float)); /* the forward's classifier accumulates the LM head's */
    ax_gpt_forward(&m, in, tg, NULL, Bl, T, 1.0f / (B * T));
    ax_gpt_backward(&m, in, Bl, T);
    ax_gpt_grad_sync(&m);
    float *want = ax_calloc(m.n_local, sizeof(float)), *tmp = ax_malloc(m.n_local * sizeof(float));
    if (ax_gpt_read_flat(&m, &ref, "grad.", want)) ax_err_exit(0);
    const char *worst = "";
    double gd = worst_param_diff(m.grads, want, tmp, &worst);
    CHECK(gd < 1e-4, "gradient rel diff %.3g (worst %s)", gd, worst);
    double kb = key_bias_err(m.grads, want);
    CHECK(kb < 1e-6, "key-bias gradient (true value 0) differs by %.3g", kb);
    if (g.rank == 0)
        printf("grid %d,%d,%d,%d: logits %.2g, worst gradient %.2g (%s)\n", g.gd, g.gx, g.gy, g.gz,
               sqrt(both[0] / both[1]), gd, worst);

    /* goldfish loss (k = 3, h = 4) on batch 0: mask, masked mean loss, gradients */
    ax_st_file gf;
    snprintf(path, sizeof path, "%s/goldfish.safetensors", dir);
    if (ax_st_open(&gf, path)) ax_err_exit(0);
    float *rmask = ax_malloc((size_t)B * T * sizeof(float)), *w = ax_malloc((size_t)M * sizeof(float)), gloss;
    ax_st_read_f32(&gf, ax_st_find(&gf, "mask"), rmask, (int64_t)B * T);
    ax_st_read_f32(&gf, ax_st_find(&gf, "loss"), &gloss, 1);
    int mask_ok = 1;
    double kept = 0;
    for (int b = 0; b < Bl; b++) {
        int64_t gs = ax_seq_pos(&g, B, 1, 0, 0, b);
        ax_goldfish_mask(tokens + gs * (T + 1), 0, T, 3, 4, w + b * T);
        for (int t = 0; t < T; t++) {
            mask_ok &= w[b * T + t] == rmask[gs * T + t];
            kept += w[b * T + t];
        }
    }
    CHECK(mask_ok, "goldfish mask differs from the Python reference");
    ax_allreduce_f64(&g.dz, &kept, 1);
    memset(m.grads, 0, m.n_local * sizeof(float));
    lsum = ax_gpt_forward(&m, in, tg, w, Bl, T, (float)(1.0 / kept));
    ax_allreduce_f64(&g.dz, &lsum, 1);
    CHECK(fabs(lsum / kept - gloss) < 1e-5 * gloss, "goldfish loss %.8f vs %.8f", lsum / kept, gloss);
    ax_gpt_backward(&m, in, Bl, T);
    ax_gpt_grad_sync(&m);
    memset(want, 0, m.n_local * sizeof(float));
    if (ax_gpt_read_flat(&m, &gf, "grad.", want)) ax_err_exit(0);
    double gfd = worst_param_diff(m.grads, want, tmp, &worst);
    CHECK(gfd < 1e-4, "goldfish gradient rel diff %.3g (worst %s)", gfd, worst);
    if (g.rank == 0)
        printf("goldfish: kept %.0f of %d, loss %.7f, worst gradient %.2g (%s)\n", kept, B * T, lsum / kept, gfd,
               worst);
    ax_st_close(&gf);

    /* 10 AdamW steps; two micro-batches when the grid leaves room */
    char *js;
    size_t jl;
    snprintf(path, sizeof path, "%s/ref.json", dir);
    if (ax_read_file(path, &js, &jl)) ax_err_exit(0);
    json_t *hj = json_loads(js, 0, NULL);
    ax_hparams h = {.lr = json_real_value(json_object_get(hj, "lr")),
                    .min_lr_frac = json_real_value(json_object_get(hj, "min_lr_frac")),
                    .beta1 = json_real_value(json_object_get(hj, "beta1")),
                    .beta2 = json_real_value(json_object_get(hj, "beta2")),
                    .eps = json_real_value(json_object_get(hj, "eps")),
                    .weight_decay = json_real_value(json_object_get(hj, "weight_decay")),
                    .clip = json_number_value(json_object_get(hj, "clip")),
                    .warmup = (int)json_integer_value(json_object_get(hj, "warmup")),
                    .steps = S};
    int accum = B % (2 * g.gd * g.gz) == 0 ? 2 : 1;
    int Blm = B / accum / (g.gd * g.gz);
    memcpy(m.params, init, m.n_local * sizeof(float));
    ax_adamw opt;
    ax_adamw_init(&opt, m.n_local);
    ax_train_scratch *ts = ax_train_scratch_alloc(accum, Blm, T, 0);
    float losses[64], gnorms[64];
    ax_st_read_f32(&ref, ax_st_find(&ref, "losses"), losses, S);
    ax_st_read_f32(&ref, ax_st_find(&ref, "gradnorms"), gnorms, S);
    double wl = 0, wg = 0;
    for (int s = 0; s < S; s++) {
        for (int a = 0; a < accum; a++)
            for (int b = 0; b < Blm; b++)
                memcpy(seqs + ((size_t)a * Blm + b) * (T + 1),
                       tokens + ax_seq_pos(&g, B, accum, s, a, b) % ((int64_t)S * B) * (T + 1), (T + 1) * 4);
        ax_step_stats st;
        ax_train_step(&m, &opt, &h, s, seqs, NULL, accum, Blm, T, &st, ts);
        double el = fabs(st.loss - losses[s]) / losses[s], eg = fabs(st.gnorm - gnorms[s]) / gnorms[s];
        wl = el > wl ? el : wl;
        wg = eg > wg ? eg : wg;
    }
    ax_train_scratch_free(ts);
    CHECK(wl < 1e-5, "10-step losses: worst rel diff %.3g", wl);
    CHECK(wg < 1e-4, "10-step grad norms: worst rel diff %.3g", wg);
    if (ax_gpt_read_flat(&m, &ref, "final.", want)) ax_err_exit(0);
    double pd = worst_param_diff(m.params, want, tmp, &worst);
    CHECK(pd < 1e-5, "parameters after 10 steps: rel diff %.3g (worst %s)", pd, worst);
    kb = key_bias_err(m.params, want);
    CHECK(kb < 2e-5, "key bias after 10 steps differs by %.3g", kb);
    if (g.rank == 0)
        printf("accum %d: worst loss %.2g, grad norm %.2g, final params %.2g (%s), key bias %.2g\n", accum, wl, wg, pd,
               worst, kb);
    int rc = ax_test_done("gpt_ref");
    MPI_Finalize();
    return rc;
}
