/* io_fault: a preloaded library that makes one kind of file-system call
 * fail, for the checkpoint fault tests (tests/fault/ckpt_faults.sh). The
 * calls still go to the C library otherwise; only the one named fails:
 *
 *   AXONN_FAULT=CALL:PATTERN[:ERRNO]   CALL is fsync, pwrite, rename or unlink;
 *       the call fails with ERRNO (EIO unless given: EIO, ENOSPC, ENOTEMPTY)
 *       when its path (fsync, pwrite: the descriptor's, via /proc/self/fd;
 *       rename: the source) contains PATTERN (ends with it, when PATTERN
 *       ends with '$')
 *   AXONN_FAULT_RANK=R                  only in the process of MPI rank R
 *
 *   LD_PRELOAD=libio_fault.so AXONN_FAULT=fsync:ckpt-000004.tmp axonn train ...
 *
 * Each failure is said once on stderr ("io_fault: ..."), so a test can tell
 * that the fault was reached. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int armed(const char *call, const char *path) {
    const char *f = getenv("AXONN_FAULT"), *want = getenv("AXONN_FAULT_RANK");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("PMI_RANK");
    size_t n = strlen(call);
    if (!f || strncmp(f, call, n) || f[n] != ':' || !path) return 0;
    if (want && strcmp(want, rank ? rank : "0")) return 0;
    char pat[512];
    snprintf(pat, sizeof pat, "%s", f + n + 1);
    char *e = strchr(pat, ':');
    int err = EIO;
    if (e) {
        *e++ = 0;
        err = !strcmp(e, "ENOSPC") ? ENOSPC : !strcmp(e, "ENOTEMPTY") ? ENOTEMPTY : EIO;
    }
    size_t lp = strlen(pat), lpath = strlen(path);
    int anchored = lp && pat[lp - 1] == '$';
    if (anchored) pat[--lp] = 0;
    if (anchored ? lpath < lp || strcmp(path + lpath - lp, pat) : !strstr(path, pat)) return 0;
    static int said;
    if (!said++) fprintf(stderr, "io_fault: %s(%s) fails: %s\n", call, path, strerror(err));
    errno = err;
    return 1;
}

static const char *fd_path(int fd, char *buf, size_t n) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, buf, n - 1);
    if (k < 0) return NULL;
    buf[k] = 0;
    return buf;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int fsync(int fd) {
    char b[4096];
    if (armed("fsync", fd_path(fd, b, sizeof b))) return -1;
    return REAL(fsync)(fd);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t off) {
    char b[4096];
    if (armed("pwrite", fd_path(fd, b, sizeof b))) return -1;
    return REAL(pwrite)(fd, p, n, off);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off_t off) {
    char b[4096];
    if (armed("pwrite", fd_path(fd, b, sizeof b))) return -1;
    return REAL(pwrite64)(fd, p, n, off);
}

int rename(const char *from, const char *to) {
    if (armed("rename", from)) return -1;
    return REAL(rename)(from, to);
}

int unlink(const char *path) {
    if (armed("unlink", path)) return -1;
    return REAL(unlink)(path);
}
