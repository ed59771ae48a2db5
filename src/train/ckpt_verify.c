#define _GNU_SOURCE 1
/* A safetensors file of a checkpoint against its manifest entry
 * {"bytes": n, "hash": "crc64", "ranges": [[offset, length, checksum], ...]}
 * (written by every rank in parallel: ckpt_writer.c; without "hash", an
 * earlier version's XXH3-64). Before any tensor is read: the ranges must
 * tile [0, n) (no overlap, no gap), the file must hold n bytes, its header
 * must end its data at n, and the ranges that hold a byte of the header or a
 * byte this rank reads must hash to their entries. The ranks that read the
 * same bytes (the data replicas of a shard) split those ranges between them,
 * and the load goes on only when every rank's ranges verified (the ranks'
 * reads together cover the file: every byte belongs to a tensor some rank
 * loads, and every rank reads the header). Each failure is one line naming
 * the file, the byte range and the tensors at the place. */
#include "train/ckpt_impl.h"
#include "util/crc.h"
#include "util/err.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

typedef struct {
    int64_t off, len;
    uint64_t hash;
} range;

/* The header's tensors, read leniently (the file may be short or damaged):
 * data_start and the parsed JSON, or NULL. */
typedef struct {
    json_t *h;
    int64_t data_start, data_end; /* data_end: data_start + the largest end */
} header;

static void header_read(int fd, int64_t size, header *hd) {
    unsigned char lb[8];
    memset(hd, 0, sizeof *hd);
    if (size < 8 || pread(fd, lb, 8, 0) != 8) return;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | lb[i];
    if (n > (uint64_t)size - 8 || n > ((uint64_t)1 << 30)) return;
    char *b = ax_malloc(n ? n : 1);
    if (pread(fd, b, n, 8) == (ssize_t)n) hd->h = json_loadb(b, n, 0, NULL);
    free(b);
    hd->data_start = 8 + (int64_t)n;
    hd->data_end = hd->data_start;
    const char *k;
    json_t *v;
    json_object_foreach(hd->h, k, v) {
        json_t *e = json_array_get(json_object_get(v, "data_offsets"), 1);
        if (json_is_integer(e) && hd->data_start + json_integer_value(e) > hd->data_end)
            hd->data_end = hd->data_start + json_integer_value(e);
    }
}

/* what lies at byte off of the file: "tensor 'name'", or "the header" */
static const char *what_at(const header *hd, int64_t off, char *buf, size_t n) {
    if (!hd->h || off < hd->data_start) return "the header";
    const char *k;
    json_t *v;
    json_object_foreach(hd->h, k, v) {
        json_t *d = json_object_get(v, "data_offsets");
        int64_t b = json_integer_value(json_array_get(d, 0)), e = json_integer_value(json_array_get(d, 1));
        if (off - hd->data_start >= b && off - hd->data_start < e) {
            snprintf(buf, n, "tensor '%s'", k);
            return buf;
        }
    }
    return "no tensor (past the data)";
}

static int range_cmp(const void *a, const void *b) {
    const range *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static int parse_ranges(json_t *a, range **out, int *n) {
    *n = (int)json_array_size(a);
    range *r = ax_malloc((size_t)(*n ? *n : 1) * sizeof *r);
    *out = r;
    for (int i = 0; i < *n; i++) {
        json_t *x = json_array_get(a, (size_t)i);
        const char *h = json_string_value(json_array_get(x, 2));
        char *end;
        if (json_array_size(x) != 3 || !json_is_integer(json_array_get(x, 0)) ||
            !json_is_integer(json_array_get(x, 1)) || !h || strlen(h) != 16)
            return -1;
        r[i].off = json_integer_value(json_array_get(x, 0));
        r[i].len = json_integer_value(json_array_get(x, 1));
        r[i].hash = strtoull(h, &end, 16);
        if (*end || r[i].off < 0 || r[i].len <= 0) return -1;
    }
    qsort(r, (size_t)*n, sizeof *r, range_cmp);
    return 0;
}

/* the ranges cover [0, bytes) once each */
static int check_tiling(const char *path, const range *r, int n, int64_t bytes, const header *hd) {
    char w[300];
    int64_t at = 0;
    for (int i = 0; i <= n; i++) {
        int64_t off = i < n ? r[i].off : bytes;
        if (off < at)
            return AX_ERR("%s: checksum ranges overlap at bytes [%" PRId64 ", %" PRId64 ") (%s) (corrupt checkpoint)",
                          path, off, at, what_at(hd, off, w, sizeof w));
        if (off > at)
            return AX_ERR("%s: bytes [%" PRId64 ", %" PRId64 ") (%s) are in no checksum range of the checkpoint "
                          "manifest (corrupt checkpoint)",
                          path, at, off, what_at(hd, at, w, sizeof w));
        if (i < n) at = off + r[i].len;
    }
    return 0;
}

void ax_ckpt_spans_add(void *spans, int64_t off, int64_t len) {
    ax_ckpt_spans *s = spans;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->span = ax_realloc(s->span, (size_t)s->cap * 2 * sizeof(int64_t));
    }
    s->span[2 * s->n] = off;
    s->span[2 * s->n + 1] = len;
    s->n++;
}

static int span_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void ax_ckpt_spans_sort(ax_ckpt_spans *s) { qsort(s->span, (size_t)s->n, 2 * sizeof(int64_t), span_cmp); }

/* does [off, off + len) hold a byte of a span? (*k: the first span that may, advanced) */
static int holds_read(const ax_ckpt_spans *s, int *k, int64_t off, int64_t len) {
    while (*k < s->n && s->span[2 * *k] + s->span[2 * *k + 1] <= off) ++*k;
    for (int j = *k; j < s->n && s->span[2 * j] < off + len; j++)
        if (s->span[2 * j + 1] > 0) return 1;
    return 0;
}

/* the checksum of [off, off + len) of fd: CRC-64, or an earlier version's XXH3-64 */
static int hash_range(const char *path, int fd, int crc, int64_t off, int64_t len, uint64_t *out) {
    static _Thread_local char buf[1 << 16];
    XXH3_state_t *st = crc ? NULL : XXH3_createState();
    uint64_t c = 0;
    int rc = 0;
    if (!crc && !st) return AX_ERR("%s: out of memory for a hash state", path);
    if (st) XXH3_64bits_reset(st);
    for (int64_t end = off + len; off < end && rc == 0;) {
        ssize_t got = pread(fd, buf, end - off < (int64_t)sizeof buf ? (size_t)(end - off) : sizeof buf, off);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) rc = AX_ERR("%s: cannot read: %s", path, got ? strerror(errno) : "file shrank");
        else if (crc) c = ax_crc64(c, buf, got), off += got;
        else XXH3_64bits_update(st, buf, (size_t)got), off += got;
    }
    *out = st ? XXH3_64bits_digest(st) : c;
    if (st) XXH3_freeState(st);
    return rc;
}

static int hash_ranges(const char *path, int fd, int crc, const range *r, int n, const header *hd,
                       const ax_ckpt_verify_share *v) {
    int rc = 0;
    for (int i = 0, k = 0; i < n && rc == 0; i++) {
        /* the header's ranges always: it is parsed before the reads are known */
        if (r[i].off >= hd->data_start && !holds_read(v->reads, &k, r[i].off, r[i].len)) continue;
        if (i % v->nreplica != v->replica) continue; /* another replica's */
        uint64_t h = 0;
        char w[300], w2[300];
        rc = hash_range(path, fd, crc, r[i].off, r[i].len, &h);
        if (rc == 0 && h != r[i].hash)
            rc = AX_ERR("%s: checksum (%s) %016llx of bytes [%" PRId64 ", %" PRId64
                        ") (%s to %s), the checkpoint manifest says %016llx (corrupt checkpoint)",
                        path, crc ? "CRC-64" : "XXH3-64", (unsigned long long)h, r[i].off, r[i].off + r[i].len,
                        what_at(hd, r[i].off, w, sizeof w), what_at(hd, r[i].off + r[i].len - 1, w2, sizeof w2),
                        (unsigned long long)r[i].hash);
    }
    return rc;
}

int ax_ckpt_verify_ranges(const char *path, const char *manifest, json_t *entry, const ax_ckpt_verify_share *v) {
    json_t *nb = json_object_get(entry, "bytes"), *kind = json_object_get(entry, "hash");
    range *r = NULL;
    int n = 0, rc = 0, crc = kind != NULL;
    if (!json_is_integer(nb) || (kind && strcmp(json_string_value(kind) ? json_string_value(kind) : "", "crc64")) ||
        parse_ranges(json_object_get(entry, "ranges"), &r, &n) != 0) {
        free(r);
        return AX_ERR("%s: expected an entry {bytes, hash: crc64, ranges: [[offset, length, checksum], ...]} for %s",
                      manifest, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    }
    int64_t bytes = json_integer_value(nb);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        rc = AX_ERR("%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        free(r);
        return rc;
    }
    header hd;
    header_read(fd, sb.st_size, &hd);
    char w[300];
    if (sb.st_size != bytes)
        rc = AX_ERR("%s: %lld bytes, the checkpoint manifest says %lld (corrupt checkpoint%s%s)", path,
                    (long long)sb.st_size, (long long)bytes, sb.st_size < bytes ? ": cut short in " : "",
                    sb.st_size < bytes ? what_at(&hd, sb.st_size, w, sizeof w) : "");
    else if (!hd.h)
        rc = AX_ERR("%s: the header is unreadable (the checkpoint manifest says %lld bytes; corrupt checkpoint)", path,
                    (long long)bytes);
    else if (hd.data_end != bytes)
        rc = AX_ERR("%s: the header ends the data at byte %lld (%s), the checkpoint manifest says %lld bytes "
                    "(corrupt checkpoint)",
                    path, (long long)hd.data_end, what_at(&hd, hd.data_end - 1, w, sizeof w), (long long)bytes);
    if (rc == 0) rc = check_tiling(path, r, n, bytes, &hd);
    if (rc == 0 && v) rc = hash_ranges(path, fd, crc, r, n, &hd, v);
    json_decref(hd.h);
    close(fd);
    free(r);
    return rc;
}
