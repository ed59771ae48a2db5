/* Small statistics of repeated timings. */
#ifndef AX_UTIL_STATS_H
#define AX_UTIL_STATS_H

/* The median of x[0..n); x is sorted in place (insertion sort: n is a few
 * repeated timings). */
static inline double ax_median(double *x, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && x[j] < x[j - 1]; j--) { double t = x[j]; x[j] = x[j - 1]; x[j - 1] = t; }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}
#endif
