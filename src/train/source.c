#include "train/source.h"
#include "util/err.h"
#include "util/rng.h"
#include <stdlib.h>
#include <string.h>

static int open_instruct(ax_source *s, const char *path, const char *tok_path) {
    if (!tok_path)
        return AX_ERR("%s: instruction data needs a tokenizer (--tokenizer, or a tokenizer.json beside --init)", path);
    ax_tokenizer *tok;
    AX_TRY(ax_tok_load(&tok, tok_path));
    s->inst = ax_calloc(1, sizeof *s->inst);
    int rc = ax_instruct_open(s->inst, path, tok, s->T);
    if (rc == 0 && ax_tok_vocab_size(tok) > s->V)
        rc = AX_ERR("%s: its %d ids do not fit the model's vocabulary of %d", tok_path, ax_tok_vocab_size(tok), s->V);
    ax_tok_free(tok);
    if (rc) {
        ax_instruct_close(s->inst);
        free(s->inst);
        s->inst = NULL;
        return rc;
    }
    s->tmp_tok = ax_malloc((size_t)(s->T + 1) * sizeof(int32_t));
    s->tmp_w = ax_malloc((size_t)s->T * sizeof(float));
    return 0;
}

int ax_source_open(ax_source *s, const char *glob, const char *tok_path, int T, int V, int shuffle, uint64_t seed) {
    memset(s, 0, sizeof *s);
    s->T = T;
    s->V = V;
    s->seed = seed;
    s->shuffle = shuffle;
    if (!glob) return 0;
    size_t n = strlen(glob);
    if (n > 6 && !strcmp(glob + n - 6, ".jsonl")) return open_instruct(s, glob, tok_path);
    if (ax_shards_open(&s->set, glob, V)) return -1;
    if (ax_loader_init(&s->loader, s->set, T, shuffle, seed)) {
        ax_shards_close(s->set);
        s->set = NULL;
        return -1;
    }
    return 0;
}

void ax_source_close(ax_source *s) {
    if (s->set) {
        ax_loader_free(&s->loader);
        ax_shards_close(s->set);
    }
    if (s->inst) {
        ax_instruct_close(s->inst);
        free(s->inst);
        free(s->tmp_tok);
        free(s->tmp_w);
    }
    memset(s, 0, sizeof *s);
}

int64_t ax_source_nseq(const ax_source *s) {
    return s->set ? s->loader.nseq : s->inst ? ax_instruct_count(s->inst) : 0;
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* the example at position pos: epoch pos / n, permuted within the epoch */
static int64_t example(const ax_source *s, int64_t pos) {
    int64_t n = ax_instruct_count(s->inst), e = pos / n, i = pos % n;
    if (!s->shuffle || n == 1) return i;
    int64_t a = 1 + (int64_t)(ax_rng_u64(s->seed, 9, 2 * (uint64_t)e) % (uint64_t)(n - 1));
    while (gcd64(a, n) != 1) a = a % (n - 1) + 1;
    int64_t b = (int64_t)(ax_rng_u64(s->seed, 9, 2 * (uint64_t)e + 1) % (uint64_t)n);
    return (int64_t)(((unsigned __int128)a * i + b) % n);
}

int ax_source_weights(ax_source *s, int64_t pos, float *w) {
    if (!s->inst) return 0;
    ax_instruct_get(s->inst, example(s, pos), s->tmp_tok, w);
    return 1;
}

/* next token = (a*cur + c) mod V with probability 7/8, else uniform */
int ax_source_get(ax_source *s, int64_t pos, int before, int32_t *out) {
    if (s->set) return ax_loader_get(&s->loader, pos, before, out);
    for (int j = 0; j < before; j++) out[j] = -1;
    out += before;
    if (s->inst) {
        ax_instruct_get(s->inst, example(s, pos), out, s->tmp_w);
        return 0;
    }
    uint64_t a = 2 * (ax_rng_u64(s->seed, 7, 0) % 64) + 1, c = ax_rng_u64(s->seed, 7, 1) % s->V;
    uint64_t base = (uint64_t)pos * (s->T + 1);
    out[0] = (int32_t)(ax_rng_u64(s->seed, 8, base) % s->V);
    for (int t = 1; t <= s->T; t++) {
        uint64_t r = ax_rng_u64(s->seed, 8, base + t);
        out[t] = (r & 7) ? (int32_t)((a * out[t - 1] + c) % s->V) : (int32_t)((r >> 3) % s->V);
    }
    return 0;
}
