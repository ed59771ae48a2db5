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
 *   ax_st_read_f32_at(&f, t, first, n, buf); // elements [first, first+n) only
 *   ax_st_close(&f);
 *
 * A Hugging Face checkpoint may be split over several files named by
 * model.safetensors.index.json ({"weight_map": {"tensor": "shard file"}});
 * ax_st_set opens either form and finds each tensor in its file.
 *
 * Writing is two-phase so that tensors can be streamed one at a time (e.g. as
 * they are gathered from the ranks): declare every tensor, then write each one's
 * data in declaration order; the file appears under its name only on commit. */
#ifndef AX_IO_SAFETENSORS_H
#define AX_IO_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>
#include "util/fileio.h"

typedef enum {
    AX_ST_F32,
    AX_ST_F16,
    AX_ST_BF16,
    AX_ST_F64,
    AX_ST_I64,
    AX_ST_I32,
    AX_ST_I16,
    AX_ST_I8,
    AX_ST_U8,
    AX_ST_U16,
    AX_ST_U32,
    AX_ST_U64,
    AX_ST_BOOL
} ax_st_dtype;
size_t ax_st_dtype_size(ax_st_dtype t);
const char *ax_st_dtype_name(ax_st_dtype t); /* "F32", ... */

#define AX_ST_MAXDIM 8
typedef struct {
    char *name;
    ax_st_dtype dtype;
    int ndim;
    int64_t shape[AX_ST_MAXDIM];
    int64_t numel;
    uint64_t begin, end; /* byte range relative to the data section */
} ax_st_tensor;

typedef struct {
    char *path;
    unsigned char *map;
    size_t map_len;
    int fd;            /* open while map is: ranged reads use pread */
    size_t data_start; /* 8 + header length */
    int n;
    ax_st_tensor *t; /* in file order of data_offsets */
    int n_meta;
    char **meta_key, **meta_val;
} ax_st_file;

int ax_st_open(ax_st_file *f, const char *path);
void ax_st_close(ax_st_file *f);
const ax_st_tensor *ax_st_find(const ax_st_file *f, const char *name); /* NULL if absent */
const char *ax_st_meta(const ax_st_file *f, const char *key);          /* NULL if absent */
const void *ax_st_data(const ax_st_file *f, const ax_st_tensor *t);
/* Converts F32/F16/BF16 to float; fails (naming file and tensor) for other
 * dtypes or when n != t->numel. */
int ax_st_read_f32(const ax_st_file *f, const ax_st_tensor *t, float *dst, int64_t n);
/* Elements [first, first + n) of t as floats, reading only their bytes with
 * pread (nothing else of the file is touched, so a rank loading its shards
 * does not page in whole tensors). */
int ax_st_read_f32_at(const ax_st_file *f, const ax_st_tensor *t, int64_t first, int64_t n, float *dst);
/* Fails naming file and tensor unless t converts to floats (F32, F16, BF16). */
int ax_st_expect_float(const ax_st_file *f, const ax_st_tensor *t);
/* Checks dtype/shape: fails with a message naming file, tensor, expected and found. */
int ax_st_expect(const ax_st_file *f, const ax_st_tensor *t, ax_st_dtype dt, int ndim, const int64_t *shape);

/* A checkpoint of one file or of shards under an index (above). For an
 * index, every shard it names is opened and every tensor it maps must be in
 * its shard, so lookups after open cannot fail on a broken checkpoint. */
typedef struct {
    char *path; /* the .safetensors or the .index.json, for messages */
    int nfiles;
    ax_st_file *files;
    int owned; /* 0: a view of one file the caller opened */
    int n;
    char **names;
    int *file_of; /* the weight_map; n = 0 for one file */
} ax_st_set;

int ax_st_set_open(ax_st_set *s, const char *path); /* *.index.json: shards; else one file */
void ax_st_set_view(ax_st_set *s, ax_st_file *f);   /* one open file, not owned */
void ax_st_set_close(ax_st_set *s);
/* The tensor called name and its file (*file), or NULL if absent. */
const ax_st_tensor *ax_st_set_find(const ax_st_set *s, const char *name, const ax_st_file **file);
/* 1 if path names an index (ends in .index.json) */
int ax_st_is_index(const char *path);

typedef struct {
    ax_outfile out;
    int n, cap, next; /* declared tensors; next to be written */
    ax_st_tensor *t;
    int n_meta;
    char **meta_key, **meta_val;
    int header_written;
} ax_st_writer;

/* path NULL: no file, only the layout (declare, then ax_st_writer_header;
 * free with ax_st_writer_abort), for files whose data others write. */
int ax_st_writer_init(ax_st_writer *w, const char *path);
void ax_st_writer_meta(ax_st_writer *w, const char *key, const char *val);
void ax_st_writer_declare(ax_st_writer *w, const char *name, ax_st_dtype dt, int ndim, const int64_t *shape);
/* Writes the data of the next declared tensor (nbytes must match). */
int ax_st_writer_write(ax_st_writer *w, const void *data, size_t nbytes);
int ax_st_writer_commit(ax_st_writer *w); /* fails if tensors remain unwritten */
/* The bytes a commit writes before the data (length, JSON, padding to 8):
 * *len is where the data section starts, the declared tensors at their
 * data_offsets after it. *buf is malloc'd; name is for messages. */
int ax_st_writer_header(const ax_st_writer *w, const char *name, unsigned char **buf, size_t *len);
void ax_st_writer_abort(ax_st_writer *w);
#endif
