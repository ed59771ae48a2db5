#include "util/fileio.h"
#include "util/err.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

int ax_out_open(ax_outfile *o, const char *path) {
    memset(o, 0, sizeof *o);
    size_t n = strlen(path) + 32;
    o->path = ax_strdup(path);
    o->tmp = ax_malloc(n);
    snprintf(o->tmp, n, "%s.tmp.%d", path, (int)getpid());
    o->fp = fopen(o->tmp, "wb");
    if (!o->fp) {
        int e = errno;
        free(o->path);
        free(o->tmp);
        o->path = o->tmp = NULL;
        return AX_ERR("%s: cannot create file: %s", path, strerror(e));
    }
    return 0;
}

int ax_out_write(ax_outfile *o, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, o->fp) != n) return AX_ERR("%s: write failed: %s", o->path, strerror(errno));
    return 0;
}

static void out_free(ax_outfile *o) {
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    o->fp = NULL;
}

int ax_out_commit(ax_outfile *o) {
    int bad = fflush(o->fp) != 0 || ferror(o->fp);
    bad |= fsync(fileno(o->fp)) != 0;
    bad |= fclose(o->fp) != 0;
    if (bad) {
        int e = errno;
        unlink(o->tmp);
        AX_ERR("%s: write failed: %s", o->path, strerror(e));
        out_free(o);
        return -1;
    }
    if (rename(o->tmp, o->path) != 0) {
        int e = errno;
        unlink(o->tmp);
        AX_ERR("%s: cannot rename into place: %s", o->path, strerror(e));
        out_free(o);
        return -1;
    }
    char dir[4096];
    ax_dirname(o->path, dir, sizeof dir);
    out_free(o);
    return ax_fsync_dir(dir);
}

int ax_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return AX_ERR("%s: cannot open directory to sync: %s", dir, strerror(errno));
    int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : AX_ERR("%s: cannot sync directory: %s", dir, strerror(errno));
    close(fd);
    return rc;
}

int ax_hash_file(const char *path, uint64_t *hash, int64_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return AX_ERR("%s: cannot open: %s", path, strerror(errno));
    XXH3_state_t *st = XXH3_createState();
    if (!st) ax_fatal(__FILE__, __LINE__, "out of memory for a hash state");
    XXH3_64bits_reset(st);
    static _Thread_local char buf[1 << 16];
    size_t n;
    int64_t total = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        XXH3_64bits_update(st, buf, n);
        total += (int64_t)n;
    }
    int bad = ferror(f);
    fclose(f);
    *hash = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    if (bad) return AX_ERR("%s: read failed", path);
    *size = total;
    return 0;
}

void ax_out_abort(ax_outfile *o) {
    if (o->fp) {
        fclose(o->fp);
        unlink(o->tmp);
    }
    out_free(o);
}

int ax_read_file(const char *path, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return AX_ERR("%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return AX_ERR("%s: cannot seek", path);
    }
    long n = ftell(f);
    rewind(f);
    if (n < 0) {
        fclose(f);
        return AX_ERR("%s: cannot read size", path);
    }
    char *buf = ax_malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return AX_ERR("%s: read failed", path);
    }
    fclose(f);
    buf[n] = 0;
    *data = buf;
    if (len) *len = (size_t)n;
    return 0;
}

int ax_mkdir_p(const char *dir) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return AX_ERR("%s: cannot create directory: %s", buf, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return AX_ERR("%s: not a directory", dir);
    return 0;
}

int ax_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

void ax_dirname(const char *path, char *buf, size_t n) {
    const char *s = strrchr(path, '/');
    if (!s) snprintf(buf, n, ".");
    else if (s == path) snprintf(buf, n, "/");
    else snprintf(buf, n, "%.*s", (int)(s - path), path);
}

void ax_remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4400];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}
