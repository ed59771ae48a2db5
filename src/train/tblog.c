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

static void set_str(json_t *j, const char *key, const char *v) {
    if (v) json_object_set_new(j, key, json_string(v));
}

/* the run's resolved options under the names --config takes */
static json_t *run_config(const ax_run *r) {
    const ax_train_opts *o = r->o;
    const ax_gpt_config *c = &r->m.cfg;
    const ax_grid *g = &r->g;
    char grid[64];
    snprintf(grid, sizeof grid, "%d,%d,%d,%d", g->gd, g->gx, g->gy, g->gz);
    json_t *j = json_object();
    json_object_set_new(j, "arch", json_string(c->arch == AX_ARCH_LLAMA ? "llama" : "gpt2"));
    json_object_set_new(j, "n_layer", json_integer(c->n_layer));
    json_object_set_new(j, "n_head", json_integer(c->n_head));
    json_object_set_new(j, "n_kv_head", json_integer(c->n_kv_head));
    json_object_set_new(j, "n_embd", json_integer(c->n_embd));
    json_object_set_new(j, "n_inner", json_integer(c->n_inner));
    json_object_set_new(j, "block_size", json_integer(c->block_size));
    json_object_set_new(j, "vocab_size", json_integer(c->vocab_size));
    if (c->arch == AX_ARCH_LLAMA) {
        json_object_set_new(j, "untied", json_boolean(c->untied));
        json_object_set_new(j, "rope_theta", json_real(c->rope_theta));
    }
    json_object_set_new(j, "grid", json_string(grid));
    json_object_set_new(j, "cp", json_integer(g->gc));
    json_object_set_new(j, "steps", json_integer(o->steps));
    json_object_set_new(j, "batch", json_integer(o->batch));
    json_object_set_new(j, "seq", json_integer(o->seq));
    json_object_set_new(j, "grad_accum", json_integer(o->grad_accum));
    json_object_set_new(j, "lr", json_real(o->lr));
    json_object_set_new(j, "min_lr_frac", json_real(o->min_lr_frac));
    json_object_set_new(j, "warmup", json_integer(o->warmup));
    json_object_set_new(j, "weight_decay", json_real(o->weight_decay));
    json_object_set_new(j, "beta1", json_real(o->beta1));
    json_object_set_new(j, "beta2", json_real(o->beta2));
    json_object_set_new(j, "eps", json_real(o->eps));
    json_object_set_new(j, "clip", json_real(o->clip));
    json_object_set_new(j, "seed", json_integer((json_int_t)r->st.seed));
    json_object_set_new(j, "shuffle", json_boolean(o->shuffle));
    json_object_set_new(j, "dtype", json_string(o->dtype));
    json_object_set_new(j, "recompute", json_string(o->recompute));
    json_object_set_new(j, "overlap", json_string(o->overlap));
    if (o->data) set_str(j, "data", o->data);
    else json_object_set_new(j, "synthetic", json_true());
    set_str(j, "val_data", o->val_data);
    set_str(j, "init", o->init);
    set_str(j, "tokenizer", o->tokenizer);
    if (o->goldfish_k) {
        json_object_set_new(j, "goldfish_k", json_integer(o->goldfish_k));
        json_object_set_new(j, "goldfish_h", json_integer(o->goldfish_h));
    }
    json_object_set_new(j, "val_every", json_integer(o->val_every));
    json_object_set_new(j, "val_batches", json_integer(o->val_batches));
    json_object_set_new(j, "log_every", json_integer(o->log_every));
    json_object_set_new(j, "save_every", json_integer(o->save_every));
    set_str(j, "out", o->out);
    if (r->resumed) set_str(j, "resume", o->resume);
    set_str(j, "backend", ax_be()->name);
    json_object_set_new(j, "threads", json_integer(ax_be()->threads()));
    set_str(j, "tensorboard", o->tensorboard);
    return j;
}

/* the configuration as a Markdown code block (the text plugin renders Markdown) */
static char *config_text(const ax_run *r) {
    json_t *j = run_config(r);
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
