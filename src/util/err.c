#include "util/err.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char ax_msg[1024];

int ax_err_set(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ax_msg, sizeof ax_msg, fmt, ap);
    va_end(ap);
    return -1;
}

int ax_err_sys(const char *file, int line, const char *fmt, ...) {
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    snprintf(ax_msg, sizeof ax_msg, "%s (%s:%d)", buf, file, line);
    return -1;
}

const char *ax_err_msg(void) { return ax_msg[0] ? ax_msg : "unknown error"; }
void ax_err_clear(void) { ax_msg[0] = 0; }

int ax_agree(MPI_Comm comm, int rc) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int who = rc ? rank : size;
    AX_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &who, 1, MPI_INT, MPI_MIN, comm));
    if (who == size) return 0;
    char msg[sizeof ax_msg];
    snprintf(msg, sizeof msg, "%s", rank == who ? ax_err_msg() : "");
    AX_CHECK_MPI(MPI_Bcast(msg, sizeof msg, MPI_CHAR, who, comm));
    ax_err_set("%s", msg);
    return -1;
}

void ax_err_exit(int only_rank0) { ax_err_exit_status(only_rank0, 2); }

void ax_err_exit_status(int only_rank0, int status) {
    int inited = 0, fin = 0, rank = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!only_rank0 || rank == 0) {
        fprintf(stderr, "axonn: error: %s\n", ax_err_msg());
        fflush(stderr);
    }
    if (inited && !fin) MPI_Finalize();
    exit(status);
}

void ax_fatal(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "axonn: fatal: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (%s:%d)\n", file, line);
    va_end(ap);
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin) MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

void *ax_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) ax_fatal(__FILE__, __LINE__, "out of memory allocating %zu bytes", n);
    return p;
}
void *ax_calloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) ax_fatal(__FILE__, __LINE__, "out of memory allocating %zu x %zu bytes", n, sz);
    return p;
}
void *ax_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) ax_fatal(__FILE__, __LINE__, "out of memory allocating %zu bytes", n);
    return q;
}
char *ax_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = ax_malloc(n);
    memcpy(d, s, n);
    return d;
}
