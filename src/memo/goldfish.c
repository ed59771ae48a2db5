#include "memo/goldfish.h"
#include "util/rng.h"

uint64_t ax_goldfish_hash(const int32_t *ids, int h) {
    uint64_t s = 0x676F6C6466697368ull;
    for (int i = 0; i < h; i++) s = ax_mix64(s ^ (uint64_t)(uint32_t)ids[i]);
    return s;
}

void ax_goldfish_mask(const int32_t *seq, int have, int T, int k, int h, float *w) {
    uint64_t thresh = UINT64_MAX / (uint64_t)k;
    for (int i = 0; i < T; i++) {
        int first = i + 2 - h; /* target seq[i+1]'s window is seq[first .. i+1] */
        w[i] = (first < -have || ax_goldfish_hash(seq + first, h) >= thresh) ? 1.0f : 0.0f;
    }
}
