/* Which checkpoint a run starts from (train/resume.h). Rank 0 looks at the
 * directories and every rank takes the path it broadcasts (and then reads
 * the files itself), so all ranks resume from the same step. */
#include "train/resume.h"
#include "train/checkpoint.h"
#include "util/err.h"
#include "util/fileio.h"
#include <stdio.h>
#include <string.h>

/* A checkpoint the program picked (--resume auto, or an output directory)
 * may be passed over for an older one when it fails verification
 * (c->fallback); one the user named may not. Under auto, what an
 * interrupted run left is put right first (ax_ckpt_recover).
 * 1: resume from c->dir, 0: start fresh, -1: error. Collective. */
int ax_resume_find(ax_run *r, ax_resume *c) {
    const ax_train_opts *o = r->o;
    if (!o->resume) return 0;
    int found = 1, rc = 0, n = (int)sizeof c->dir;
    char said[1024] = "";
    if (r->root) {
        int aut = strcmp(o->resume, "auto") == 0;
        if (aut && !o->out) rc = AX_ERR("--resume auto: expected --out (the directory holding the checkpoints)");
        else if (aut && (rc = ax_ckpt_recover(o->out, said, sizeof said)) == 0)
            found = ax_ckpt_latest(o->out, c->dir, n), c->fallback = 1;
        else if (!aut && (rc = ax_ckpt_resolve(o->resume, c->dir, n)) == 1) rc = 0, c->fallback = 1;
    }
    AX_TRY(ax_agree(r->g.world, rc));
    if (said[0]) AX_SAY(r, "resume: %s\n", said);
    MPI_Bcast(&found, 1, MPI_INT, 0, r->g.world);
    MPI_Bcast(&c->fallback, 1, MPI_INT, 0, r->g.world);
    MPI_Bcast(c->dir, n, MPI_CHAR, 0, r->g.world);
    if (!found) AX_SAY(r, "resume auto: no complete checkpoint in %s; starting fresh\n", o->out);
    return found;
}

/* c->dir failed verification (the error is set): with c->fallback it is
 * set aside for inspection and the next older one taken (1), or none is
 * left (0: the run starts fresh); without, the run stops (-1). Collective. */
int ax_resume_pass_over(ax_run *r, ax_resume *c) {
    if (!c->fallback) return -1;
    char err[2048], aside[4200] = "", dir[4096], bad[4096];
    snprintf(err, sizeof err, "%s", ax_err_msg());
    snprintf(bad, sizeof bad, "%s", c->dir);
    int rc = 0, found = 0;
    if (r->root) {
        ax_dirname(c->dir, dir, sizeof dir);
        rc = ax_ckpt_set_aside(c->dir, aside, sizeof aside);
        if (rc == 0) found = ax_ckpt_latest(dir, c->dir, sizeof c->dir);
    }
    AX_TRY(ax_agree(r->g.world, rc));
    AX_SAY(r, "resume: passing over %s, set aside as %s: %s\n", bad, aside, err);
    MPI_Bcast(&found, 1, MPI_INT, 0, r->g.world);
    MPI_Bcast(c->dir, (int)sizeof c->dir, MPI_CHAR, 0, r->g.world);
    if (!found) AX_SAY(r, "resume: no checkpoint left that verifies; starting fresh\n");
    return found;
}

/* From c->dir on, the first checkpoint whose files check against its
 * manifest (not the tensors' bytes: ax_ckpt_load), passing over those that
 * fail where c->fallback allows: 1, its config in cfg and its state in
 * saved; 0: none left. Collective. */
int ax_resume_peek(ax_run *r, ax_resume *c, ax_gpt_config *cfg, ax_ckpt_state *saved) {
    int found = 1;
    while (found == 1 && ax_agree(r->g.world, ax_ckpt_peek(c->dir, cfg, saved)) != 0) found = ax_resume_pass_over(r, c);
    return found;
}

/* The checkpoint's model, batch geometry and step against the options (once
 * the model is built, as `built`, it must be that model), and its step and
 * seed into r->st. */
int ax_resume_take(ax_run *r, const ax_resume *c, const ax_gpt_config *cfg, const ax_ckpt_state *saved,
                   const ax_gpt_config *built) {
    ax_train_opts *o = &r->args;
    ax_gpt_config want = o->model;
    ax_gpt_config_defaults(&want);
    const char *ckdir = c->dir;
    if (built && memcmp(cfg, built, sizeof *built) != 0)
        return AX_ERR("--resume %s: the older checkpoint %s holds another model than the newer one", o->resume, ckdir);
    if (!o->init && strcmp(o->resume, "auto") == 0 && memcmp(cfg, &want, sizeof want) != 0)
        return AX_ERR("--resume auto: %s holds a model of n_layer %d, n_head %d, n_embd %d, n_positions %d, "
                      "vocab %d; the options describe another",
                      ckdir, cfg->n_layer, cfg->n_head, cfg->n_embd, cfg->block_size, cfg->vocab_size);
    if ((o->batch && saved->batch != o->batch) || (o->seq && saved->seq != o->seq))
        return AX_ERR("--resume %s: saved with --batch %d --seq %d; resume with the same (got %d, %d)", ckdir,
                      saved->batch, saved->seq, o->batch, o->seq);
    if (saved->step > o->steps)
        return AX_ERR("--steps %d: the checkpoint %s is already at step %d", o->steps, ckdir, saved->step);
    r->st.step = saved->step;
    r->st.seed = saved->seed;
    if (!o->batch) o->batch = saved->batch;
    if (!o->seq) o->seq = saved->seq;
    return 0;
}

/* A resumed run appends to the metrics of the run it continues; the lines of
 * steps after the checkpoint (written before a crash) are dropped first, so
 * every step appears once. */
int ax_resume_trim_metrics(const char *path, int step) {
    FILE *in = fopen(path, "r");
    if (!in) return 0; /* nothing written yet */
    ax_outfile out;
    if (ax_out_open(&out, path)) {
        fclose(in);
        return -1;
    }
    char line[4096];
    int rc = 0, s;
    while (rc == 0 && fgets(line, sizeof line, in))
        if (sscanf(line, "{\"step\": %d", &s) != 1 || s <= step) rc = ax_out_write(&out, line, strlen(line));
    fclose(in);
    if (rc) {
        ax_out_abort(&out);
        return -1;
    }
    return ax_out_commit(&out);
}
