/* Shared by the fuzz targets: every parser here reads a path, so each input is
 * written to a file in a private directory (tmpfs when there is one) and the
 * parser runs on that path, as the command would run it. */
#ifndef AX_FUZZ_FILE_H
#define AX_FUZZ_FILE_H
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* path of NAME in this process's scratch directory (created once) */
const char *ax_fuzz_path(const char *name);
/* writes data to ax_fuzz_path(name) and returns that path */
const char *ax_fuzz_write(const char *name, const void *data, size_t size);
#endif
