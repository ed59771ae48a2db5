#define _GNU_SOURCE 1
/* Command-line options: the input's NUL-separated fields are argv; a field
 * "@" stands for "--config FILE" where FILE holds the bytes after the last
 * NUL (JSON option files). The table has one option of every type, ranges
 * included. */
#include "fuzz_file.h"
#include "cli/args.h"
#include "util/err.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[66] = {"axonn", "train"};
    int argc = 2;
    char *last = memrchr(buf, 0, size);
    const char *cfg = ax_fuzz_write("opts.json", last ? last + 1 : "", last ? strlen(last + 1) : 0);
    for (char *p = buf; p < (last ? last : buf + size) && argc < 64; p += strlen(p) + 1) {
        if (strcmp(p, "@") == 0) {
            argv[argc++] = "--config";
            argv[argc++] = (char *)cfg;
        } else argv[argc++] = p;
    }
    int n = 0, flag = 0, grid[4] = {1, 1, 1, 1};
    double x = 0;
    const char *s = NULL, *pos[4];
    uint64_t u = 0;
    int npos = 0;
    ax_opt opts[] = {
        {"steps", AX_OPT_INT, &n, "N", "", AX_RANGE('[', 1, 1e9, ']')},
        {"lr", AX_OPT_DOUBLE, &x, "X", "", AX_RANGE('(', 0, 10, ']')},
        {"out", AX_OPT_STR, &s, "DIR", ""},
        {"quiet", AX_OPT_FLAG, &flag, NULL, ""},
        {"seed", AX_OPT_U64, &u, "N", ""},
        {"grid", AX_OPT_GRID, grid, "D,X,Y,Z", ""},
        {NULL},
    };
    /* --help prints the usage on stdout: harmless, but the fuzzer's output is noise */
    int help = 0;
    for (int i = 2; i < argc; i++) help |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
    if (!help) ax_args_parse(opts, argc, argv, 2, "usage: fuzz", pos, &npos, 4);
    free(buf);
    return 0;
}
