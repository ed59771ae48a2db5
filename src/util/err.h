/* Error reporting. Library functions return 0 on success and -1 on failure,
 * after recording one line that names the input and what was expected.
 * The command line prints that line and exits with status 2.
 *
 *   if (n < 0) return AX_ERR("--steps: expected a positive integer, got '%s'", s);
 *
 * Failures of the machinery (MPI, BLAS, CUDA, the OS) carry the source file and
 * line and the library's own error text: AX_CHECK_MPI(MPI_Allreduce(...)). */
#ifndef AX_UTIL_ERR_H
#define AX_UTIL_ERR_H
#include <mpi.h>

int ax_err_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ax_err_sys(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *ax_err_msg(void);
void ax_err_clear(void);
/* Collective over comm: makes one outcome of every rank's rc (0 or -1). If any
 * rank failed, every rank takes the message of the lowest failing rank and
 * returns -1; otherwise 0. Called after rank-local work that can fail (opening
 * or parsing a file, checking its contents), so that a failure seen by one rank
 * is the same line on all of them and none is left waiting in a collective. */
int ax_agree(MPI_Comm comm, int rc);
/* Prints "axonn: error: <msg>" once (rank 0 of MPI_COMM_WORLD, or any rank when
 * only_rank0 is 0) and exits with status 2 on every rank that calls it. */
void ax_err_exit(int only_rank0) __attribute__((noreturn));
void ax_err_exit_status(int only_rank0, int status) __attribute__((noreturn));
/* Aborts all ranks for failures that cannot be recovered collectively. */
void ax_fatal(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));

#define AX_ERR(...) ax_err_set(__VA_ARGS__)
#define AX_SYS(...) ax_err_sys(__FILE__, __LINE__, __VA_ARGS__)
#define AX_CHECK_MPI(call)                                        \
    do {                                                          \
        int ax_rc_ = (call);                                      \
        if (ax_rc_ != MPI_SUCCESS) {                              \
            char ax_s_[MPI_MAX_ERROR_STRING];                     \
            int ax_l_;                                            \
            MPI_Error_string(ax_rc_, ax_s_, &ax_l_);              \
            ax_fatal(__FILE__, __LINE__, "%s: %s", #call, ax_s_); \
        }                                                         \
    } while (0)
#define AX_TRY(call)                \
    do {                            \
        if ((call) != 0) return -1; \
    } while (0)

void *ax_malloc(size_t n); /* aborts on failure (memory is not user input) */
void *ax_calloc(size_t n, size_t sz);
void *ax_realloc(void *p, size_t n);
char *ax_strdup(const char *s);
#endif
