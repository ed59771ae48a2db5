/* A training run's TensorBoard log (train/tblog.h). */
#include "train/tblog.h"
#include "backend/backend.h"
#include "io/tfevents.h"
#include "util/err.h"
#include "util/fileio.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ax_tblog {
    ax_tfevents w;
};

/* j[key] = v; a NULL string is left out */
static void put_s(json_t *j, const char *key, const char *v) {
    if (v) json_object_set_new(j, key, json_string(v));
}
static void put_i(json_t *j, const char *key, long long v) { json_object_set_new(j, key, json_integer(v)); }
static void put_d(json_t *j, const char *key, double v) { json_object_set_new(j, key, json_real(v)); }
static void put_b(json_t *j, const char *key, int v) { json_object_set_new(j, key, json_boolean(v)); }

/* the model and grid the run trains, resolved (a resumed run: the checkpoint's model) */
static void config_model(json_t *j, const ax_run *r) {
    const ax_gpt_config *c = &r->m.cfg;
    const ax_grid *g = &r->g;
    char grid[64];
    snprintf(grid, sizeof grid, "%d,%d,%d,%d", g->gd, g->gx, g->gy, g->gz);
    put_s(j, "arch", c->arch == AX_ARCH_LLAMA ? "llama" : "gpt2");
    put_i(j, "n_layer", c->n_layer);
    put_i(j, "n_head", c->n_head);
    put_i(j, "n_kv_head", c->n_kv_head);
    put_i(j, "n_embd", c->n_embd);
    put_i(j, "n_inner", c->n_inner);
    put_i(j, "block_size", c->block_size);
    put_i(j, "vocab_size", c->vocab_size);
    if (c->arch == AX_ARCH_LLAMA) put_b(j, "untied", c->untied), put_d(j, "rope_theta", c->rope_theta);
    put_s(j, "grid", grid);
    put_i(j, "cp", g->gc);
    put_s(j, "backend", ax_be()->name);
    put_i(j, "threads", ax_be()->threads());
}

/* the training options, resolved (a resumed run: the checkpoint's batch, seq and seed) */
static void config_training(json_t *j, const ax_run *r) {
    const ax_train_opts *o = r->o;
    put_i(j, "steps", o->steps);
    put_i(j, "batch", o->batch);
    put_i(j, "seq", o->seq);
    put_i(j, "grad_accum", o->grad_accum);
    put_d(j, "lr", o->lr);
    put_d(j, "min_lr_frac", o->min_lr_frac);
    put_i(j, "warmup", o->warmup);
    put_d(j, "weight_decay", o->weight_decay);
    put_d(j, "beta1", o->beta1);
    put_d(j, "beta2", o->beta2);
    put_d(j, "eps", o->eps);
    put_d(j, "clip", o->clip);
    put_i(j, "seed", (long long)r->st.seed);
    put_b(j, "shuffle", o->shuffle);
    put_s(j, "dtype", o->dtype);
    put_s(j, "recompute", o->recompute);
    put_s(j, "overlap", o->overlap);
    if (o->data) put_s(j, "data", o->data);
    else put_b(j, "synthetic", 1);
    put_s(j, "val_data", o->val_data);
    put_s(j, "init", o->init);
    put_s(j, "tokenizer", o->tokenizer);
    if (o->goldfish_k) put_i(j, "goldfish_k", o->goldfish_k), put_i(j, "goldfish_h", o->goldfish_h);
    put_i(j, "val_every", o->val_every);
    put_i(j, "val_batches", o->val_batches);
    put_i(j, "log_every", o->log_every);
    put_i(j, "save_every", o->save_every);
    put_s(j, "out", o->out);
    put_s(j, "resume", r->resumed ? o->resume : NULL);
    put_s(j, "tensorboard", o->tensorboard);
}

/* the configuration as a Markdown code block (the text plugin renders Markdown) */
static char *config_text(const ax_run *r) {
    json_t *j = json_object(); /* the options under the names --config takes */
    config_model(j, r);
    config_training(j, r);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(j);
    if (!s) ax_fatal(__FILE__, __LINE__, "out of memory");
    size_t n = strlen(s) + 32;
    char *text = ax_malloc(n);
    snprintf(text, n, "```json\n%s\n```", s);
    free(s);
    return text;
}

/* the error recorded (it names the path), prefixed with the option */
static int failed(void) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ax_err_msg());
    return AX_ERR("--tensorboard: %s", msg);
}

int ax_tblog_open(ax_tblog **t, const ax_run *r) {
    const char *dir = r->o->tensorboard;
    *t = NULL;
    if (ax_mkdir_p(dir)) return failed();
    int start = r->st.step; /* the steps before this run's first, kept */
    if (ax_tfevents_trim(dir, start)) return failed();
    ax_tblog *l = ax_calloc(1, sizeof *l);
    if (ax_tfevents_create(&l->w, dir)) {
        free(l);
        return failed();
    }
    /* for a TensorBoard reading the files live, which still holds the dropped points */
    ax_tfevents_start(&l->w, start + 1);
    char *text = config_text(r);
    ax_tfevents_text(&l->w, start + 1, "config", text);
    free(text);
    *t = l;
    if (ax_tfevents_flush(&l->w)) {
        ax_tblog_close(l);
        *t = NULL;
        return failed();
    }
    return 0;
}

/* A write that failed (a full disk) ends the log, said once; training goes on. */
static void flush(ax_tblog *t) {
    if (!t->w.fp || ax_tfevents_flush(&t->w) == 0) return;
    fprintf(stderr, "axonn: warning: %s; TensorBoard logging stopped\n", ax_err_msg());
    ax_tfevents_close(&t->w);
}

void ax_tblog_step(ax_tblog *t, const ax_step_metrics *m) {
    if (!t->w.fp) return;
    ax_tfevents_scalar(&t->w, m->step, "train/loss", m->loss);
    ax_tfevents_scalar(&t->w, m->step, "train/lr", m->lr);
    ax_tfevents_scalar(&t->w, m->step, "train/grad_norm", m->grad_norm);
    ax_tfevents_scalar(&t->w, m->step, "perf/step_ms", m->ms);
    ax_tfevents_scalar(&t->w, m->step, "perf/tokens_per_s", m->tokens_per_s);
    ax_tfevents_scalar(&t->w, m->step, "perf/model_tflops", m->model_tflops);
    if (m->mfu >= 0) ax_tfevents_scalar(&t->w, m->step, "perf/mfu", m->mfu);
    ax_tfevents_scalar(&t->w, m->step, "memory/peak_rss_mib", m->peak_rss_mib);
    flush(t);
}

void ax_tblog_val(ax_tblog *t, int step, double loss) {
    if (!t->w.fp) return;
    ax_tfevents_scalar(&t->w, step, "val/loss", loss);
    flush(t);
}

void ax_tblog_close(ax_tblog *t) {
    if (!t) return;
    ax_tfevents_close(&t->w);
    free(t);
}
