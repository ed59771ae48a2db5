#include "util/rng.h"
#include <math.h>

double ax_rng_normal(uint64_t seed, uint64_t stream, uint64_t i) {
    double u1 = ax_rng_uniform(seed, stream, 2 * i), u2 = ax_rng_uniform(seed, stream, 2 * i + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t ax_rng_below(ax_rng *r, uint64_t n) {
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
        uint64_t x = ax_rng_next(r);
        if (x < lim) return x % n;
    }
}
