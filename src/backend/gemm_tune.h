/* GEMM layout tuning (docs/algorithm.md §4): BLAS libraries are not equally fast for NN,
 * NT and TN, nor for a problem and its transpose. For each distinct problem
 * (m, n, k, dtypes, the caller's transposes, threads) the candidate layouts
 * are timed a few times on first use and the fastest is kept:
 *
 *   stored  C = op(A) op(B) as the caller stored it
 *   tA      A copied transposed into a workspace, so the other kernel layout runs
 *   tB      B likewise
 *   tAB     both
 *   swap    T = op(B)^T op(A)^T (m and n exchange roles in the kernel), C = T^T
 *
 * Copies and the final transpose are part of a layout's time. The choice is
 * kept in a cache file keyed by machine (CPU model and SIMD flags), backend,
 * library versions and threads, so later runs time nothing. Generic over the
 * backend's gemm entry; the copies use its optional transpose entry (without
 * one, only the stored layout runs). Off by default: see docs/design.md for
 * the measurement. Not thread-safe: GEMMs are issued by one thread. */
#ifndef AX_BACKEND_GEMM_TUNE_H
#define AX_BACKEND_GEMM_TUNE_H
#include "backend/backend.h"

typedef enum { AX_GT_STORED, AX_GT_TA, AX_GT_TB, AX_GT_TAB, AX_GT_SWAP, AX_GT_N } ax_gemm_layout;
extern const char *const ax_gemm_layout_names[AX_GT_N];

/* "off" or "on"; fails with one line naming the accepted values */
int ax_gemm_tune_parse(const char *s, int *on);
/* Turns tuning on or off. cache: the cache file; NULL: $AXONN_GEMM_TUNE_CACHE,
 * else $XDG_CACHE_HOME/axonn/gemm-tune.json, else ~/.cache/axonn/gemm-tune.json;
 * "none": no file. warn: print the cache's warnings (one rank of a job). */
void ax_gemm_tune_set(int on, const char *cache, int warn);
const char *ax_gemm_tune_cache_path(void); /* "" when there is none */
/* tests: every single GEMM through this layout whether tuning is on or not; -1: as chosen */
void ax_gemm_tune_force(int layout);
/* forgets what was tuned or loaded (tests: the next GEMM reads the cache file again) */
void ax_gemm_tune_reset(void);
/* problems timed, and found in the cache file, since the last set or reset */
void ax_gemm_tune_counts(int *timed, int *from_cache);
/* the layout for this problem (batch 1), timed now if it is new */
int ax_gemm_tune_choice(const ax_backend *be, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta,
                        ax_mat C);

/* C = alpha op(A) op(B) + beta C through be->gemm in the layout chosen for the
 * problem (timing the layouts if it is new); ax_gemm_batched calls this. */
void ax_gemm_tuned(const ax_backend *be, int batch, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta,
                   ax_mat C);
/* Times each layout on this problem (batch 1): one warm-up round, then rounds
 * rounds (0: by the warm-up's time, 20 below 1.5 ms, 3 up to 0.25 s, 1
 * above), interleaved, the best of each into sec (seconds; -1 for a layout the backend cannot run). Returns
 * the fastest, or stored unless another is 5% faster. With beta != 0, C is
 * restored afterwards (it is an input); otherwise it holds some layout's result. */
int ax_gemm_tune_time(const ax_backend *be, float alpha, ax_mat A, int transA, ax_mat B, int transB, float beta,
                      ax_mat C, int rounds, double sec[AX_GT_N]);
#endif
