/* Portable, counter-based random numbers: the value at (seed, stream, index) is a
 * pure function, so any rank can produce any element of a logical tensor and
 * the result is independent of the grid, thread count and machine.
 * Mixing is SplitMix64 (Steele et al.); normals use Box-Muller on two uniforms. */
#ifndef AX_UTIL_RNG_H
#define AX_UTIL_RNG_H
#include <stdint.h>

static inline uint64_t ax_mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline uint64_t ax_rng_u64(uint64_t seed, uint64_t stream, uint64_t i) {
    return ax_mix64(ax_mix64(seed ^ ax_mix64(stream)) + i);
}
/* uniform in (0, 1) with 53 random bits */
static inline double ax_rng_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    return ((ax_rng_u64(seed, stream, i) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
double ax_rng_normal(uint64_t seed, uint64_t stream, uint64_t i);

/* A sequential generator for the few places that need a stream (sampling,
 * shuffles): its whole state is one counter, saved in checkpoints. */
typedef struct {
    uint64_t seed, stream, counter;
} ax_rng;
static inline uint64_t ax_rng_next(ax_rng *r) { return ax_rng_u64(r->seed, r->stream, r->counter++); }
static inline double ax_rng_next_uniform(ax_rng *r) {
    return ((ax_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
/* unbiased integer in [0, n) */
uint64_t ax_rng_below(ax_rng *r, uint64_t n);
#endif
