/* Command-line options from a table: "--name value", "--name=value", boolean
 * "--name", and "--config FILE" (a JSON object whose keys are option names,
 * '-' or '_'); flags given on the command line win over the file. Numbers
 * are checked at parse time: NaN and infinities are never accepted, and an
 * option with a range rejects values outside it (one line, naming the range),
 * so a bad value cannot fall through to a default or into the run. */
#ifndef AX_CLI_ARGS_H
#define AX_CLI_ARGS_H
#include <stdint.h>

/* AX_OPT_BYTES: an int64_t count of bytes, "5GB" (decimal units) or "512MiB" */
typedef enum { AX_OPT_INT, AX_OPT_DOUBLE, AX_OPT_STR, AX_OPT_FLAG, AX_OPT_U64, AX_OPT_GRID, AX_OPT_BYTES } ax_opt_type;

typedef struct {
    const char *name; /* without the leading dashes */
    ax_opt_type type;
    void *dst;
    const char *metavar, *help;
    /* accepted values of an INT or DOUBLE option: lo..hi, each end '[' / ']'
     * inclusive or '(' / ')' exclusive; lb 0: any value of the type */
    double lo, hi;
    char lb, rb;
    int set; /* filled by the parser */
} ax_opt;

/* {"steps", AX_OPT_INT, &n, "N", "help (default {})", AX_RANGE('[', 1, 1e9, ']')}: "{}" in the help
 * is replaced by the value the option holds when --help is printed, its default,
 * so that the default is written down once, where it is set. */
#define AX_RANGE(l, a, b, r) .lo = (a), .hi = (b), .lb = (l), .rb = (r)

/* Parses argv[first..]; positional arguments are collected in pos (may be NULL
 * to reject them). Returns 0, 1 for --help (usage printed), -1 on error. */
int ax_args_parse(ax_opt *opts, int argc, char **argv, int first, const char *usage, const char **pos, int *npos,
                  int maxpos);
/* whether the option of that name was given (flag or config file) */
int ax_args_given(const ax_opt *opts, const char *name);
void ax_args_usage(const ax_opt *opts, const char *usage);
#endif
