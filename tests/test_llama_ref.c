/* The Llama architecture against Hugging Face transformers (tests/ref/llama_ref.py):
 * the checkpoint as save_pretrained wrote it, then logits, loss and every
 * parameter gradient at those weights, on the grid given as "--grid
 * D,X,Y,Z" (the serial numbers on every one). The model has grouped-query
 * attention, an MLP width that is not 4x, untied embeddings, rope_theta 500
 * with Llama-3 scaling and a vocabulary no grid divides. Then greedy KV-cache
 * decoding must pick the tokens a full forward picks. The checkpoint loaded
 * on the grid and saved again holds the fixture's tensors bit for bit.
 * "--fixture llama_mqa"
 * (after --grid): 4 query heads over one key/value head, replicated on
 * every Y shard when Y > 1. */
#include "test.h"
#include "model_check.h"
#include "model/gpt.h"
#include "model/gpt_decode.h"
#include "train/step.h"
#include "train/checkpoint.h"
#include "util/fileio.h"
#include <unistd.h>
#include "util/err.h"

static ax_gpt m;
static ax_grid g;

/* One scenario read top to bottom (set up, run, check each quantity in order): kept whole on purpose. */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    char path[1300], dir[1024];
    const char *fixture = argc > 4 && !strcmp(argv[3], "--fixture") ? argv[4] : "llama_tiny";
    int mqa = !strcmp(fixture, "llama_mqa");
    ax_gpt_config cfg = ax_t_open_fixture(argc, argv, fixture, &g, &m, dir, sizeof dir);
    CHECK(cfg.arch == AX_ARCH_LLAMA && cfg.n_kv_head == (mqa ? 1 : 2) && cfg.n_inner == (mqa ? 48 : 80) && cfg.untied &&
              cfg.rope_factor == 4,
          "config.json read as arch %d, kv heads %d, inner %d, untied %d, rope factor %g", cfg.arch, cfg.n_kv_head,
          cfg.n_inner, cfg.untied, cfg.rope_factor);
    CHECK(m.kv_copies == (mqa ? g.gy : 1), "key/value head copies %d on G_y = %d", m.kv_copies, g.gy);

    /* loaded, then saved: the fixture's tensors, bit for bit */
    char out[64];
    int pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(out, sizeof out, "/tmp/axonn_llama_ref_%d", pid);
    CHECK(ax_model_save(out, &m, 0, AX_ST_F32) == 0, "save: %s", ax_err_msg());
    ax_st_file orig, saved;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (ax_st_open(&orig, path)) ax_err_exit(0);
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    if (ax_st_open(&saved, path)) ax_err_exit(0);
    int same_all = orig.n == saved.n;
    for (int i = 0; i < orig.n; i++) {
        const ax_st_tensor *a = &orig.t[i], *b = ax_st_find(&saved, a->name);
        int same = b && b->end - b->begin == a->end - a->begin &&
                   !memcmp(ax_st_data(&orig, a), ax_st_data(&saved, b), a->end - a->begin);
        CHECK(same, "%s saved from grid %d,%d,%d,%d differs from the fixture", a->name, g.gd, g.gx, g.gy, g.gz);
        same_all &= same;
    }
    CHECK(same_all, "the saved checkpoint has %d tensors, the fixture %d", saved.n, orig.n);
    ax_st_close(&orig);
    ax_st_close(&saved);
    MPI_Barrier(MPI_COMM_WORLD);
    if (g.rank == 0) ax_remove_tree(out);

    ax_st_file ref;
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    if (ax_st_open(&ref, path)) ax_err_exit(0);
    const ax_st_tensor *tt = ax_st_find(&ref, "tokens");
    const int32_t *tokens = ax_st_data(&ref, tt);
    int B = (int)tt->shape[1], T = (int)tt->shape[2] - 1, V = cfg.vocab_size;
    int Bl = B / (g.gd * g.gz), M = Bl * T;
    int32_t *in = ax_malloc((size_t)M * 4), *tg = ax_malloc((size_t)M * 4);
    for (int b = 0; b < Bl; b++) {
        const int32_t *s = tokens + ax_seq_pos(&g, B, 1, 0, 0, b) * (T + 1);
        memcpy(in + b * T, s, T * 4);
        memcpy(tg + b * T, s + 1, T * 4);
    }

    /* logits and loss */
    double lsum = ax_gpt_forward(&m, in, tg, NULL, Bl, T, 0.0f);
    float *lg = ax_malloc((size_t)M * m.Vl * sizeof(float)); /* every row's logits, as the classifier computes them */
    ax_gpt_logits(&m, lg, 0, M);
    float *rlog = ax_malloc((size_t)B * T * V * sizeof(float));
    ax_st_read_f32(&ref, ax_st_find(&ref, "logits"), rlog, (int64_t)B * T * V);
    double both[2] = {0, 0};
    for (int b = 0; b < Bl; b++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < m.Vl && m.v0 + j < V; j++) {
                int64_t gs = ax_seq_pos(&g, B, 1, 0, 0, b);
                double r = rlog[(gs * T + t) * V + m.v0 + j], c = lg[(int64_t)(b * T + t) * m.Vl + j];
                both[0] += (r - c) * (r - c);
                both[1] += r * r;
            }
    MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE, MPI_SUM, g.world);
    double el = sqrt(both[0] / both[1]);
    CHECK(el < 1e-5, "logits rel diff %.3g", el);
    ax_allreduce_f64(&g.dz, &lsum, 1);
    float loss0;
    ax_st_read_f32(&ref, ax_st_find(&ref, "loss0"), &loss0, 1);
    CHECK(fabs(lsum / (B * T) - loss0) < 1e-5 * loss0, "loss %.8f vs %.8f", lsum / (B * T), loss0);

    /* gradients (fp32 sums in another order than PyTorch's: 1e-4 norm-wise) */
    memset(m.grads, 0, m.n_local * sizeof(float)); /* the forward's classifier accumulates the LM head's */
    ax_gpt_forward(&m, in, tg, NULL, Bl, T, 1.0f / (B * T));
    ax_gpt_backward(&m, in, Bl, T);
    ax_gpt_grad_sync(&m);
    float *want = ax_calloc(m.n_local, sizeof(float)), *tmp = ax_malloc(m.n_local * sizeof(float));
    if (ax_gpt_read_flat(&m, &ref, "grad.", want)) ax_err_exit(0);
    const char *worst = "";
    double gd = ax_t_worst_param_diff(&m, m.grads, want, tmp, NULL, &worst);
    CHECK(gd < 1e-4, "gradient rel diff %.3g (worst %s)", gd, worst);
    if (g.rank == 0)
        printf("%s, grid %d,%d,%d,%d: logits %.2g, loss %.8f (transformers %.8f), worst gradient %.2g (%s)\n", fixture,
               g.gd, g.gx, g.gy, g.gz, el, lsum / (B * T), loss0, gd, worst);

    /* greedy decoding with the KV cache: each step's logits equal a full
     * forward's at that position, so both pick the same tokens */
    enum { P0 = 3, NEW = 6 };
    ax_kvcache c;
    ax_kv_init(&c, &m, 1, P0 + NEW);
    ax_kv_prefill(&c, &m, 0, tokens, P0);
    int32_t seq[P0 + NEW];
    memcpy(seq, tokens, P0 * 4);
    int same = 1;
    for (int t = P0; t < P0 + NEW; t++) {
        ax_kv_argmax(&c, &m, 1, &seq[t]);
        ax_gpt_forward(&m, seq, NULL, NULL, 1, t, 0.0f); /* the whole prefix again */
        ax_gpt_logits(&m, lg, t - 1, 1);
        float best = -INFINITY;
        int arg = 0;
        for (int j = 0; j < m.Vl && m.v0 + j < V; j++) {
            float v = lg[j];
            if (v > best) {
                best = v;
                arg = m.v0 + j;
            }
        }
        struct {
            float v;
            int i;
        } bi = {best, arg};
        MPI_Allreduce(MPI_IN_PLACE, &bi, 1, MPI_FLOAT_INT, MPI_MAXLOC, g.Y.comm);
        same &= bi.i == seq[t];
        ax_kv_step(&c, &m, &seq[t], 1);
    }
    CHECK(same, "KV-cache decoding picks other tokens than a full forward");
    ax_kv_free(&c);

    free(in);
    free(tg);
    free(rlog);
    free(lg);
    free(want);
    free(tmp);
    ax_st_close(&ref);
    ax_gpt_free(&m);
    ax_grid_free(&g);
    int rc = ax_test_done("llama_ref");
    MPI_Finalize();
    return rc;
}
