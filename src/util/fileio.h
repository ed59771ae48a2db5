/* File helpers. Outputs are written to "<path>.tmp.<pid>", fsync'd, and
 * renamed into place only when complete (the directory fsync'd after), so an
 * interrupted or failed write, or a crash of the machine, never leaves a
 * half-written file under the final name. */
#ifndef AX_UTIL_FILEIO_H
#define AX_UTIL_FILEIO_H
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    FILE *fp;
    char *path, *tmp;
} ax_outfile;
int ax_out_open(ax_outfile *o, const char *path); /* creates the temporary */
int ax_out_write(ax_outfile *o, const void *p, size_t n);
int ax_out_commit(ax_outfile *o); /* flush, fsync, rename, fsync the directory */
void ax_out_abort(ax_outfile *o); /* removes the temporary */

/* Reads a whole file; adds a terminating NUL. */
int ax_read_file(const char *path, char **data, size_t *len);
int ax_mkdir_p(const char *dir);
/* fsync of a directory: makes the renames and removals inside it durable */
int ax_fsync_dir(const char *dir);
/* XXH3-64 of a whole file and its size, read in blocks */
int ax_hash_file(const char *path, uint64_t *hash, int64_t *size);
int ax_file_exists(const char *path);
/* Removes a directory of plain files that we created (no recursion). */
void ax_remove_tree(const char *dir);
/* dir of path (without trailing slash) into buf */
void ax_dirname(const char *path, char *buf, size_t n);
#endif
