#define _GNU_SOURCE 1
/* Safetensors reader (mmap + full header validation) and streaming writer.
 * Multi-byte values in the file are little-endian; the reader assembles them
 * byte by byte so it neither depends on the host order nor on alignment (the
 * data section of a file with an unpadded header need not be aligned). */
#include "io/safetensors.h"
#include "util/err.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define AX_ST_NDTYPE 13
static const char *const ax_st_dtype_names[AX_ST_NDTYPE] = {"F32", "F16", "BF16", "F64", "I64", "I32", "I16",
                                                            "I8",  "U8",  "U16",  "U32", "U64", "BOOL"};
static const unsigned char ax_st_dtype_sizes[AX_ST_NDTYPE] = {4, 2, 2, 8, 8, 4, 2, 1, 1, 2, 4, 8, 1};

size_t ax_st_dtype_size(ax_st_dtype t) { return (unsigned)t < AX_ST_NDTYPE ? ax_st_dtype_sizes[t] : 0; }
const char *ax_st_dtype_name(ax_st_dtype t) { return (unsigned)t < AX_ST_NDTYPE ? ax_st_dtype_names[t] : "?"; }

static int st_dtype_parse(const char *s, ax_st_dtype *out) {
    for (int i = 0; i < AX_ST_NDTYPE; i++)
        if (strcmp(s, ax_st_dtype_names[i]) == 0) {
            *out = (ax_st_dtype)i;
            return 0;
        }
    return -1;
}

/* "[2,3]" into buf, for messages. */
static const char *st_shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? "," : "", shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

/* Element count, or -1 when the product overflows int64. */
static int64_t st_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 0 && n > INT64_MAX / shape[i]) return -1;
        n *= shape[i];
    }
    return n;
}

/* ---------------------------------------------------------------- reader */

static uint64_t st_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int st_map(ax_st_file *f, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return AX_ERR("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return AX_ERR("%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return AX_ERR("%s: not a regular file", path);
    }
    /* Checked before mapping: mmap of an empty file fails with a confusing errno. */
    if (st.st_size < 8) {
        close(fd);
        return AX_ERR("%s: not a safetensors file: %lld bytes, expected at least an 8-byte header length", path,
                      (long long)st.st_size);
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    if (m == MAP_FAILED) {
        close(fd);
        return AX_ERR("%s: cannot mmap: %s", path, strerror(e));
    }
    f->fd = fd; /* kept for ax_st_read_f32_at */
    f->map = m;
    f->map_len = (size_t)st.st_size;
    return 0;
}

/* Reads a JSON array of non-negative integers into v[0..*n). */
static int st_uint_array(const json_t *a, int64_t *v, int max, int *n) {
    if (!json_is_array(a) || (int)json_array_size(a) > max) return -1;
    *n = (int)json_array_size(a);
    for (int i = 0; i < *n; i++) {
        const json_t *x = json_array_get(a, (size_t)i);
        if (!json_is_integer(x) || json_integer_value(x) < 0) return -1;
        v[i] = (int64_t)json_integer_value(x);
    }
    return 0;
}

static int st_parse_tensor(const ax_st_file *f, const char *name, const json_t *e, ax_st_tensor *t) {
    const char *p = f->path;
    if (!json_is_object(e))
        return AX_ERR("%s: tensor '%s': expected a JSON object, found %s", p, name,
                      json_is_array(e) ? "an array" : "a scalar");
    const json_t *dt = json_object_get(e, "dtype");
    if (!json_is_string(dt)) return AX_ERR("%s: tensor '%s': missing or non-string \"dtype\"", p, name);
    if (st_dtype_parse(json_string_value(dt), &t->dtype) != 0)
        return AX_ERR(
            "%s: tensor '%s': unknown dtype '%s' (expected one of F32 F16 BF16 F64 I64 I32 I16 I8 U8 U16 U32 U64 BOOL)",
            p, name, json_string_value(dt));
    const json_t *sh = json_object_get(e, "shape");
    if (json_is_array(sh) && json_array_size(sh) > AX_ST_MAXDIM)
        return AX_ERR("%s: tensor '%s': %zu dimensions, at most %d supported", p, name, json_array_size(sh),
                      AX_ST_MAXDIM);
    if (st_uint_array(sh, t->shape, AX_ST_MAXDIM, &t->ndim) != 0)
        return AX_ERR("%s: tensor '%s': \"shape\" must be an array of non-negative integers", p, name);
    int64_t off[2];
    int noff = 0;
    if (st_uint_array(json_object_get(e, "data_offsets"), off, 2, &noff) != 0 || noff != 2 || off[0] > off[1])
        return AX_ERR("%s: tensor '%s': \"data_offsets\" must be [begin, end] with 0 <= begin <= end", p, name);
    t->begin = (uint64_t)off[0];
    t->end = (uint64_t)off[1];
    t->numel = st_numel(t->ndim, t->shape);
    uint64_t need = (uint64_t)t->numel * ax_st_dtype_size(t->dtype);
    char sb[160];
    if (t->numel < 0 || need / ax_st_dtype_size(t->dtype) != (uint64_t)t->numel)
        return AX_ERR("%s: tensor '%s': shape %s is too large", p, name,
                      st_shape_str(sb, sizeof sb, t->ndim, t->shape));
    if (need != t->end - t->begin)
        return AX_ERR("%s: tensor '%s': %s %s needs %" PRIu64 " bytes, data_offsets [%" PRIu64 ", %" PRIu64
                      "] span %" PRIu64,
                      p, name, ax_st_dtype_name(t->dtype), st_shape_str(sb, sizeof sb, t->ndim, t->shape), need,
                      t->begin, t->end, t->end - t->begin);
    uint64_t avail = f->map_len - f->data_start;
    if (t->end > avail)
        return AX_ERR("%s: truncated: tensor '%s' needs bytes up to %" PRIu64 ", data section has %" PRIu64, p, name,
                      t->end, avail);
    return 0;
}

static int st_parse_meta(ax_st_file *f, const json_t *m) {
    if (!json_is_object(m)) return AX_ERR("%s: \"__metadata__\" must be an object of strings", f->path);
    size_t n = json_object_size(m);
    f->meta_key = ax_calloc(n, sizeof(char *));
    f->meta_val = ax_calloc(n, sizeof(char *));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) {
        if (!json_is_string(v)) return AX_ERR("%s: \"__metadata__\" value of '%s' must be a string", f->path, k);
        f->meta_key[f->n_meta] = ax_strdup(k);
        f->meta_val[f->n_meta] = ax_strdup(json_string_value(v));
        f->n_meta++;
    }
    return 0;
}

static int st_cmp_begin(const void *a, const void *b) {
    const ax_st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* After sorting by (begin, end), a range overlaps an earlier one iff it starts
 * before the furthest end seen so far; an empty range touching a boundary
 * overlaps nothing. */
static int st_check_overlap(const ax_st_file *f) {
    uint64_t max_end = 0;
    const char *owner = NULL;
    for (int i = 0; i < f->n; i++) {
        const ax_st_tensor *t = &f->t[i];
        if (t->begin < max_end)
            return AX_ERR("%s: tensor '%s' data_offsets [%" PRIu64 ", %" PRIu64
                          "] overlap tensor '%s' (bytes up to %" PRIu64 ")",
                          f->path, t->name, t->begin, t->end, owner, max_end);
        if (t->end > max_end) {
            max_end = t->end;
            owner = t->name;
        }
    }
    return 0;
}

static int st_parse_header(ax_st_file *f, const json_t *root) {
    if (!json_is_object(root)) return AX_ERR("%s: header must be a JSON object", f->path);
    f->t = ax_calloc(json_object_size(root), sizeof(ax_st_tensor));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)root, k, v) {
        if (strcmp(k, "__metadata__") == 0) {
            AX_TRY(st_parse_meta(f, v));
            continue;
        }
        ax_st_tensor *t = &f->t[f->n];
        t->name = ax_strdup(k);
        f->n++; /* counted before validation so close() frees the name */
        AX_TRY(st_parse_tensor(f, k, v, t));
    }
    qsort(f->t, (size_t)f->n, sizeof *f->t, st_cmp_begin);
    return st_check_overlap(f);
}

int ax_st_open(ax_st_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->path = ax_strdup(path);
    if (st_map(f, path) != 0) {
        ax_st_close(f);
        return -1;
    }
    uint64_t hlen = st_le64(f->map);
    if (hlen > f->map_len - 8) {
        AX_ERR("%s: header length %" PRIu64 " larger than the file (%zu bytes after the length field)", path, hlen,
               f->map_len - 8);
        ax_st_close(f);
        return -1;
    }
    f->data_start = 8 + (size_t)hlen;
    json_error_t je;
    /* Duplicate names would silently shadow each other, so they are an error. */
    json_t *root = json_loadb((const char *)f->map + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        AX_ERR("%s: invalid JSON header: %s (at byte %d of %" PRIu64 ")", path, je.text, je.position, hlen);
        ax_st_close(f);
        return -1;
    }
    int rc = st_parse_header(f, root);
    json_decref(root);
    if (rc != 0) {
        ax_st_close(f);
        return -1;
    }
    return 0;
}

static void st_free_meta(int n, char **k, char **v) {
    for (int i = 0; i < n; i++) {
        free(k[i]);
        free(v[i]);
    }
    free(k);
    free(v);
}

void ax_st_close(ax_st_file *f) {
    if (f->map) {
        munmap(f->map, f->map_len);
        close(f->fd);
    }
    for (int i = 0; i < f->n; i++) free(f->t[i].name);
    free(f->t);
    st_free_meta(f->n_meta, f->meta_key, f->meta_val);
    free(f->path);
    memset(f, 0, sizeof *f);
}

const ax_st_tensor *ax_st_find(const ax_st_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

const char *ax_st_meta(const ax_st_file *f, const char *key) {
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_key[i], key) == 0) return f->meta_val[i];
    return NULL;
}

const void *ax_st_data(const ax_st_file *f, const ax_st_tensor *t) { return f->map + f->data_start + t->begin; }

/* IEEE half to single, exact: every half value is representable as a float. */
static float st_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | man << 13;         /* inf, or nan keeping its payload */
    else if (exp != 0) bits = sign | (exp + 112) << 23 | man << 13; /* rebias 15 -> 127 */
    else if (man == 0) bits = sign;                                 /* signed zero */
    else {
        /* Subnormal man * 2^-24: shift until the implicit bit (0x400) appears;
         * each shift lowers the exponent of the normalised float by one. */
        uint32_t s = 0;
        while (!(man & 0x400u)) {
            man <<= 1;
            s++;
        }
        bits = sign | (113 - s) << 23 | (man & 0x3ffu) << 13;
    }
    float x;
    memcpy(&x, &bits, 4);
    return x;
}

static int st_is_float(ax_st_dtype t) { return t == AX_ST_F32 || t == AX_ST_F16 || t == AX_ST_BF16; }

int ax_st_expect_float(const ax_st_file *f, const ax_st_tensor *t) {
    if (st_is_float(t->dtype)) return 0;
    return AX_ERR("%s: tensor '%s': dtype %s cannot be read as floats (expected F32, F16 or BF16)", f->path, t->name,
                  ax_st_dtype_name(t->dtype));
}

/* n little-endian values of a float dtype at p into dst. dst may overlap p
 * when p starts at dst's byte (n * 4 - n * size): element i is read before
 * dst[i] is written, and dst[i] ends before element i + 1 begins. */
static void st_to_f32(ax_st_dtype dt, const unsigned char *p, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t b;
        if (dt == AX_ST_F32) {
            b = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            p += 4;
        } else if (dt == AX_ST_BF16) {
            b = ((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16;
            p += 2;
        } /* a float's upper half */
        else {
            float x = st_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
            memcpy(&b, &x, 4);
            p += 2;
        }
        memcpy(&dst[i], &b, 4);
    }
}

int ax_st_read_f32(const ax_st_file *f, const ax_st_tensor *t, float *dst, int64_t n) {
    if (n != t->numel)
        return AX_ERR("%s: tensor '%s': destination holds %" PRId64 " floats, tensor has %" PRId64 " elements", f->path,
                      t->name, n, t->numel);
    AX_TRY(ax_st_expect_float(f, t));
    st_to_f32(t->dtype, ax_st_data(f, t), dst, n);
    return 0;
}

int ax_st_read_f32_at(const ax_st_file *f, const ax_st_tensor *t, int64_t first, int64_t n, float *dst) {
    if (first < 0 || n < 0 || first > t->numel - n)
        return AX_ERR("%s: tensor '%s': elements [%" PRId64 ", %" PRId64 ") outside its %" PRId64, f->path, t->name,
                      first, first + n, t->numel);
    AX_TRY(ax_st_expect_float(f, t));
    size_t es = ax_st_dtype_size(t->dtype), len = (size_t)n * es;
    /* read into the tail of dst and widen in place: no staging buffer */
    unsigned char *raw = (unsigned char *)dst + (size_t)n * 4 - len;
    off_t off = (off_t)(f->data_start + t->begin + (uint64_t)first * es);
    for (size_t got = 0; got < len;) {
        ssize_t r = pread(f->fd, raw + got, len - got, off + (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return AX_ERR("%s: tensor '%s': cannot read: %s", f->path, t->name,
                          r < 0 ? strerror(errno) : "file shrank");
        got += (size_t)r;
    }
    st_to_f32(t->dtype, raw, dst, n);
    return 0;
}

int ax_st_expect(const ax_st_file *f, const ax_st_tensor *t, ax_st_dtype dt, int ndim, const int64_t *shape) {
    int ok = t->dtype == dt && t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
    if (ok) return 0;
    char want[160], got[160];
    return AX_ERR("%s: tensor '%s': expected %s %s, found %s %s", f->path, t->name, ax_st_dtype_name(dt),
                  st_shape_str(want, sizeof want, ndim, shape), ax_st_dtype_name(t->dtype),
                  st_shape_str(got, sizeof got, t->ndim, t->shape));
}

/* ---------------------------------------------------------------- writer */

/* After commit (success or failure) or abort the writer holds no resources, so
 * a caller may always call abort on its error path. A failed write leaves the
 * writer open: the caller decides to abort. */

int ax_st_writer_init(ax_st_writer *w, const char *path) {
    memset(w, 0, sizeof *w);
    return path ? ax_out_open(&w->out, path) : 0;
}

void ax_st_writer_meta(ax_st_writer *w, const char *key, const char *val) {
    /* void API: misuse is a programming error, not a user input error */
    if (w->header_written)
        ax_fatal(__FILE__, __LINE__, "%s: metadata '%s' set after data was written", w->out.path, key);
    for (int i = 0; i < w->n_meta; i++)
        if (strcmp(w->meta_key[i], key) == 0) {
            free(w->meta_val[i]);
            w->meta_val[i] = ax_strdup(val);
            return;
        }
    w->meta_key = realloc(w->meta_key, (size_t)(w->n_meta + 1) * sizeof(char *));
    w->meta_val = realloc(w->meta_val, (size_t)(w->n_meta + 1) * sizeof(char *));
    if (!w->meta_key || !w->meta_val) ax_fatal(__FILE__, __LINE__, "out of memory");
    w->meta_key[w->n_meta] = ax_strdup(key);
    w->meta_val[w->n_meta] = ax_strdup(val);
    w->n_meta++;
}

void ax_st_writer_declare(ax_st_writer *w, const char *name, ax_st_dtype dt, int ndim, const int64_t *shape) {
    if (w->header_written)
        ax_fatal(__FILE__, __LINE__, "%s: tensor '%s' declared after data was written", w->out.path, name);
    if (ndim < 0 || ndim > AX_ST_MAXDIM || ax_st_dtype_size(dt) == 0)
        ax_fatal(__FILE__, __LINE__, "%s: tensor '%s': bad dtype %d or ndim %d", w->out.path, name, (int)dt, ndim);
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->t = realloc(w->t, (size_t)w->cap * sizeof *w->t);
        if (!w->t) ax_fatal(__FILE__, __LINE__, "out of memory");
    }
    ax_st_tensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    t->name = ax_strdup(name);
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) ax_fatal(__FILE__, __LINE__, "%s: tensor '%s': negative dimension", w->out.path, name);
        t->shape[i] = shape[i];
    }
    t->numel = st_numel(ndim, shape);
    if (t->numel < 0) ax_fatal(__FILE__, __LINE__, "%s: tensor '%s': shape too large", w->out.path, name);
    t->begin = w->n ? w->t[w->n - 1].end : 0; /* contiguous in declaration order */
    t->end = t->begin + (uint64_t)t->numel * ax_st_dtype_size(dt);
    w->n++;
}

static json_t *st_tensor_json(const ax_st_tensor *t) {
    json_t *shape = json_array();
    for (int i = 0; i < t->ndim; i++) json_array_append_new(shape, json_integer(t->shape[i]));
    return json_pack("{s:s, s:o, s:[I,I]}", "dtype", ax_st_dtype_name(t->dtype), "shape", shape, "data_offsets",
                     (json_int_t)t->begin, (json_int_t)t->end);
}

static json_t *st_header_json(const ax_st_writer *w) {
    json_t *root = json_object();
    if (w->n_meta) { /* first, as the Python library writes it */
        json_t *m = json_object();
        for (int i = 0; i < w->n_meta; i++) json_object_set_new(m, w->meta_key[i], json_string(w->meta_val[i]));
        json_object_set_new(root, "__metadata__", m);
    }
    /* jansson >= 2.8 keeps insertion order, so tensors appear as declared. */
    for (int i = 0; i < w->n; i++) json_object_set_new(root, w->t[i].name, st_tensor_json(&w->t[i]));
    return root;
}

int ax_st_writer_header(const ax_st_writer *w, const char *name, unsigned char **buf, size_t *len) {
    for (int i = 0; i < w->n; i++) {
        if (strcmp(w->t[i].name, "__metadata__") == 0)
            return AX_ERR("%s: '__metadata__' is reserved and cannot name a tensor", name);
        for (int j = 0; j < i; j++)
            if (strcmp(w->t[i].name, w->t[j].name) == 0)
                return AX_ERR("%s: tensor '%s' declared twice", name, w->t[i].name);
    }
    json_t *root = st_header_json(w);
    char *js = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!js) return AX_ERR("%s: cannot encode the header (invalid UTF-8 in a name or metadata?)", name);
    size_t n = strlen(js), padded = (n + 7) / 8 * 8; /* keeps the data section 8-byte aligned */
    unsigned char *b = ax_malloc(8 + padded);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(b + 8, js, n);
    memset(b + 8 + n, ' ', padded - n);
    free(js);
    *buf = b;
    *len = 8 + padded;
    return 0;
}

static int st_write_header(ax_st_writer *w) {
    unsigned char *b;
    size_t n;
    AX_TRY(ax_st_writer_header(w, w->out.path, &b, &n));
    int rc = ax_out_write(&w->out, b, n);
    free(b);
    if (rc == 0) w->header_written = 1;
    return rc;
}

int ax_st_writer_write(ax_st_writer *w, const void *data, size_t nbytes) {
    if (!w->out.fp) return AX_ERR("safetensors writer: write on a writer that is not open");
    if (!w->header_written) AX_TRY(st_write_header(w));
    if (w->next >= w->n)
        return AX_ERR("%s: write of %zu bytes but all %d declared tensors are already written", w->out.path, nbytes,
                      w->n);
    const ax_st_tensor *t = &w->t[w->next];
    if (nbytes != t->end - t->begin)
        return AX_ERR("%s: tensor '%s': expected %" PRIu64 " bytes, got %zu", w->out.path, t->name, t->end - t->begin,
                      nbytes);
    AX_TRY(ax_out_write(&w->out, data, nbytes)); /* host order: little-endian on all supported hosts */
    w->next++;
    return 0;
}

static void st_writer_free(ax_st_writer *w) {
    for (int i = 0; i < w->n; i++) free(w->t[i].name);
    free(w->t);
    st_free_meta(w->n_meta, w->meta_key, w->meta_val);
    w->t = NULL;
    w->meta_key = w->meta_val = NULL;
    w->n = w->cap = w->next = w->n_meta = 0;
}

int ax_st_writer_commit(ax_st_writer *w) {
    if (!w->out.fp) return AX_ERR("safetensors writer: commit on a writer that is not open");
    int rc = w->header_written ? 0 : st_write_header(w); /* a file of zero-size tensors needs no write */
    if (rc == 0 && w->next < w->n)
        rc = AX_ERR("%s: tensor '%s' was declared but not written (%d of %d written)", w->out.path, w->t[w->next].name,
                    w->next, w->n);
    if (rc != 0) ax_out_abort(&w->out);
    else rc = ax_out_commit(&w->out);
    st_writer_free(w);
    return rc;
}

void ax_st_writer_abort(ax_st_writer *w) {
    if (w->out.fp || w->out.path) ax_out_abort(&w->out);
    st_writer_free(w);
}
