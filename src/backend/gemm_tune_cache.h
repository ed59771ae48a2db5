/* The GEMM tuner's table and its cache file (gemm_tune_cache.c); only
 * gemm_tune.c uses these. */
#ifndef AX_BACKEND_GEMM_TUNE_CACHE_H
#define AX_BACKEND_GEMM_TUNE_CACHE_H
#include "backend/gemm_tune.h"

typedef struct {
    int m, n, k, tA, tB, threads;
    ax_dtype ta, tb, tc;
} ax_gt_key;
typedef struct {
    ax_gt_key k;
    int layout, from_file;
    double sec[AX_GT_N];
} ax_gt_entry; /* from_file: loaded, not yet looked up */

/* a new last entry of the table e (n used, capacity cap), grown by doubling */
ax_gt_entry *ax_gt_push(ax_gt_entry **e, int *n, int *cap);
/* The entries of path made on this machine, backend and libraries, appended
 * to *e (n of them, capacity *cap). A missing file holds none. Returns -1
 * with one line in ax_err_msg when the file is unreadable or not a cache. */
int ax_gt_cache_load(const char *path, const ax_backend *be, ax_gt_entry **e, int *n, int *cap);
/* Writes e[0..n) (this machine's) and the file's entries for other machines
 * or problems, atomically (temporary, then rename). */
int ax_gt_cache_save(const char *path, const ax_backend *be, const ax_gt_entry *e, int n);
#endif
