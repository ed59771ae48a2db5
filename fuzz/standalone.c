/* Runs a fuzz target over files and directories of files (its seed corpus and
 * the inputs of past crashes) without libFuzzer: the regression tests of the
 * ordinary build. */
#include "fuzz_file.h"
#include "util/fileio.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run(const char *path, int *count) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "%s: no such file\n", path);
        return 1;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        char p[4096];
        int rc = 0;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.') {
                snprintf(p, sizeof p, "%s/%s", path, e->d_name);
                rc |= run(p, count);
            }
        if (d) closedir(d);
        return rc;
    }
    char *data;
    size_t n;
    if (ax_read_file(path, &data, &n)) {
        fprintf(stderr, "%s: cannot read\n", path);
        return 1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)data, n);
    free(data);
    (*count)++;
    return 0;
}

int main(int argc, char **argv) {
    int count = 0, rc = 0;
    for (int i = 1; i < argc; i++) rc |= run(argv[i], &count);
    printf("%d inputs, no crash\n", count);
    return rc;
}
