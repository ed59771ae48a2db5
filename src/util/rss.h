/* Host memory of this process. */
#ifndef AX_UTIL_RSS_H
#define AX_UTIL_RSS_H
#include <sys/resource.h>

/* The peak resident set so far, MiB (Linux counts ru_maxrss in KiB). Device
 * memory of a GPU backend is not in it. */
static inline double ax_peak_rss_mib(void) {
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u)) return 0;
    return u.ru_maxrss / 1024.0;
}
#endif
