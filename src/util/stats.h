/* Small statistics of repeated timings. */
#ifndef AX_UTIL_STATS_H
#define AX_UTIL_STATS_H
#include <stdlib.h>

static inline int ax_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of x[0..n), n >= 1; x is sorted in place. */
static inline double ax_median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, ax_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}
#endif
