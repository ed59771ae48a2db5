/* Minimal test harness: CHECK macros count failures; ax_test_done() prints the
 * closing "N passed, N failed" line on rank 0 and returns the exit code. */
#ifndef AX_TEST_H
#define AX_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mpi.h>

static int ax_t_pass, ax_t_fail;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (cond) ax_t_pass++;                                              \
        else {                                                              \
            ax_t_fail++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

/* Norm-wise relative difference ||a-b|| / max(||b||, tiny). */
static inline double ax_t_reldiff(const float *a, const float *b, long n) {
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return sqrt(num) / (den > 1e-30 ? sqrt(den) : 1.0);
}

/* dir/name, in one of 4 rotating buffers (so up to 4 may be used in one call) */
static inline const char *ax_t_join(const char *dir, const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Removes dir and everything under it: a test's scratch (the library's
 * ax_remove_tree takes only a directory of plain files, on purpose). */
static inline void ax_t_rmtree(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[4096];
        struct stat sb;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) ax_t_rmtree(p);
        else unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

static inline const char *ax_t_data(void) {
    const char *d = getenv("AXONN_TEST_DATA");
    return d ? d : "tests/fixtures";
}

/* Collective over MPI_COMM_WORLD: a failure on any rank fails the test. */
static inline int ax_test_done(const char *name) {
    int counts[2] = {ax_t_pass, ax_t_fail}, tot[2];
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) MPI_Allreduce(counts, tot, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else {
        tot[0] = counts[0];
        tot[1] = counts[1];
    }
    int rank = 0;
    if (inited) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("%s: %d passed, %d failed\n", name, tot[0], tot[1]);
    return tot[1] ? 1 : 0;
}
#endif
