/* Hugging Face safetensors: 8-byte little-endian header length N, N bytes of
 * JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...,
 * "__metadata__": {"k": "v"}}, then the raw little-endian data.
 *
 * Reading maps the file and validates the whole header up front (JSON syntax,
 * known dtypes, shape x dtype size == byte range, ranges inside the file and
 * not overlapping), so later accessors cannot fail on a corrupt file.
 *
 *   ax_st_file f;
 *   if (ax_st_open(&f, "model.safetensors") != 0) ax_err_exit(1);
 *   const ax_st_tensor *t = ax_st_find(&f, "wte.weight");
 *   ax_st_read_f32(&f, t, buf, t->numel);   // F32, F16 or BF16 -> float
 *   ax_st_close(&f);
 *
 * Writing is two-phase so that tensors can be streamed one at a time (e.g. as
 * they are gathered from the ranks): declare every tensor, then write each one's
 * data in declaration order; the file appears under its name only on commit. */
#ifndef AX_IO_SAFETENSORS_H
#define AX_IO_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>
#include "util/fileio.h"

typedef enum { AX_ST_F32, AX_ST_F16, AX_ST_BF16, AX_ST_F64, AX_ST_I64, AX_ST_I32, AX_ST_I16, AX_ST_I8, AX_ST_U8, AX_ST_U16, AX_ST_U32, AX_ST_U64, AX_ST_BOOL } ax_st_dtype;
size_t ax_st_dtype_size(ax_st_dtype t);
const char *ax_st_dtype_name(ax_st_dtype t);   /* "F32", ... */

#define AX_ST_MAXDIM 8
typedef struct {
    char *name;
    ax_st_dtype dtype;
    int ndim;
    int64_t shape[AX_ST_MAXDIM];
    int64_t numel;
    uint64_t begin, end;         /* byte range relative to the data section */
} ax_st_tensor;

typedef struct {
    char *path;
    unsigned char *map; size_t map_len;
    size_t data_start;           /* 8 + header length */
    int n; ax_st_tensor *t;      /* in file order of data_offsets */
    int n_meta; char **meta_key, **meta_val;
} ax_st_file;

int ax_st_open(ax_st_file *f, const char *path);
void ax_st_close(ax_st_file *f);
const ax_st_tensor *ax_st_find(const ax_st_file *f, const char *name);   /* NULL if absent */
const char *ax_st_meta(const ax_st_file *f, const char *key);            /* NULL if absent */
const void *ax_st_data(const ax_st_file *f, const ax_st_tensor *t);
/* Converts F32/F16/BF16 to float; fails (naming file and tensor) for other
 * dtypes or when n != t->numel. */
int ax_st_read_f32(const ax_st_file *f, const ax_st_tensor *t, float *dst, int64_t n);
/* Checks dtype/shape: fails with a message naming file, tensor, expected and found. */
int ax_st_expect(const ax_st_file *f, const ax_st_tensor *t, ax_st_dtype dt, int ndim, const int64_t *shape);

typedef struct {
    ax_outfile out;
    int n, cap, next;            /* declared tensors; next to be written */
    ax_st_tensor *t;
    int n_meta; char **meta_key, **meta_val;
    int header_written;
} ax_st_writer;

int ax_st_writer_init(ax_st_writer *w, const char *path);
void ax_st_writer_meta(ax_st_writer *w, const char *key, const char *val);
void ax_st_writer_declare(ax_st_writer *w, const char *name, ax_st_dtype dt, int ndim, const int64_t *shape);
/* Writes the data of the next declared tensor (nbytes must match). */
int ax_st_writer_write(ax_st_writer *w, const void *data, size_t nbytes);
int ax_st_writer_commit(ax_st_writer *w);   /* fails if tensors remain unwritten */
void ax_st_writer_abort(ax_st_writer *w);
#endif
