#include "train/source.h"
#include "util/rng.h"
#include <string.h>

int ax_source_open(ax_source *s, const char *glob, int T, int V, int shuffle, uint64_t seed) {
    memset(s, 0, sizeof *s);
    s->T = T; s->V = V; s->seed = seed;
    if (!glob) return 0;
    if (ax_shards_open(&s->set, glob, V)) return -1;
    if (ax_loader_init(&s->loader, s->set, T, shuffle, seed)) { ax_shards_close(s->set); s->set = NULL; return -1; }
    return 0;
}

void ax_source_close(ax_source *s) {
    if (s->set) { ax_loader_free(&s->loader); ax_shards_close(s->set); }
    memset(s, 0, sizeof *s);
}

int64_t ax_source_nseq(const ax_source *s) { return s->set ? s->loader.nseq : 0; }

/* next token = (a*cur + c) mod V with probability 7/8, else uniform */
int ax_source_get(ax_source *s, int64_t pos, int before, int32_t *out) {
    if (s->set) return ax_loader_get(&s->loader, pos, before, out);
    for (int j = 0; j < before; j++) out[j] = -1;
    out += before;
    uint64_t a = 2 * (ax_rng_u64(s->seed, 7, 0) % 64) + 1, c = ax_rng_u64(s->seed, 7, 1) % s->V;
    uint64_t base = (uint64_t)pos * (s->T + 1);
    out[0] = (int32_t)(ax_rng_u64(s->seed, 8, base) % s->V);
    for (int t = 1; t <= s->T; t++) {
        uint64_t r = ax_rng_u64(s->seed, 8, base + t);
        out[t] = (r & 7) ? (int32_t)((a * out[t - 1] + c) % s->V) : (int32_t)((r >> 3) % s->V);
    }
    return 0;
}
