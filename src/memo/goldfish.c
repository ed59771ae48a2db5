#include "memo/goldfish.h"
#include "util/rng.h"

uint64_t ax_goldfish_hash(const int32_t *ids, int h) {
    uint64_t s = 0x676F6C6466697368ull;
    for (int i = 0; i < h; i++) s = ax_mix64(s ^ (uint64_t)(uint32_t)ids[i]);
    return s;
}

void ax_goldfish_mask(const int32_t *seq, int T, int k, int h, float *w) {
    uint64_t thresh = UINT64_MAX / (uint64_t)k;
    const int32_t *tg = seq + 1;
    for (int i = 0; i < T; i++)
        w[i] = (i < h - 1 || ax_goldfish_hash(tg + i - h + 1, h) >= thresh) ? 1.0f : 0.0f;
}
