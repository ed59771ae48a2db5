#include "fuzz_file.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ax_fuzz_path(const char *name) {
    static char dir[256];
    static _Thread_local char path[512];
    if (!dir[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        snprintf(dir, sizeof dir, "%s/axonn-fuzz-%d", base, (int)getpid());
        mkdir(dir, 0700);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

const char *ax_fuzz_write(const char *name, const void *data, size_t size) {
    const char *p = ax_fuzz_path(name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        perror(p);
        abort();
    }
    if (size && fwrite(data, 1, size, f) != size) {
        perror(p);
        abort();
    }
    fclose(f);
    return p;
}
