/* TensorBoard event files (io/tfevents.h): CRC-32C, records, and the
 * protobuf encoding of the few messages written. */
#define _GNU_SOURCE 1
#include "io/tfevents.h"
#include "util/crc.h"
#include "util/err.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- CRC-32C (util/crc.h) */

/* the record format's mask: a CRC of data that holds CRCs is not a CRC of a CRC */
uint32_t ax_crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

/* ---------------------------------------------------------------- protobuf */

/* a growing buffer of one message's encoded fields */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} pb_msg;

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2, PB_FIXED32 = 5 };

/* field numbers of event.proto, summary.proto, tensor.proto */
enum { EV_WALL_TIME = 1, EV_STEP = 2, EV_FILE_VERSION = 3, EV_SUMMARY = 5, EV_SESSION_LOG = 7 };
enum { SUMMARY_VALUE = 1 };
enum { VALUE_TAG = 1, VALUE_SIMPLE = 2, VALUE_TENSOR = 8, VALUE_METADATA = 9 };
enum { META_PLUGIN_DATA = 1, PLUGIN_NAME = 1 };
enum { TENSOR_DTYPE = 1, TENSOR_SHAPE = 2, TENSOR_STRING_VAL = 8, DT_STRING = 7 };
enum { SESSION_STATUS = 1, SESSION_START = 1 };

static void put(pb_msg *m, const void *s, size_t n) {
    if (n == 0) return; /* an empty message's bytes: s may be NULL, which memcpy may not take */
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2 + 64;
        m->p = ax_realloc(m->p, m->cap);
    }
    memcpy(m->p + m->n, s, n);
    m->n += n;
}

static void put_varint(pb_msg *m, uint64_t v) {
    uint8_t b[10];
    int n = 0;
    do {
        b[n++] = (uint8_t)(v & 0x7F) | (v > 0x7F ? 0x80 : 0);
        v >>= 7;
    } while (v);
    put(m, b, n);
}

static void put_key(pb_msg *m, int field, int wire) { put_varint(m, (uint64_t)field << 3 | wire); }

static void put_uint(pb_msg *m, int field, uint64_t v) {
    put_key(m, field, PB_VARINT);
    put_varint(m, v);
}

static void put_le(pb_msg *m, uint64_t v, int bytes) {
    uint8_t b[8];
    for (int i = 0; i < bytes; i++) b[i] = (uint8_t)(v >> (8 * i));
    put(m, b, bytes);
}

static void put_double(pb_msg *m, int field, double x) {
    uint64_t v;
    memcpy(&v, &x, 8);
    put_key(m, field, PB_FIXED64);
    put_le(m, v, 8);
}

static void put_float(pb_msg *m, int field, float x) {
    uint32_t v;
    memcpy(&v, &x, 4);
    put_key(m, field, PB_FIXED32);
    put_le(m, v, 4);
}

static void put_bytes(pb_msg *m, int field, const void *s, size_t n) {
    put_key(m, field, PB_BYTES);
    put_varint(m, n);
    put(m, s, n);
}

static void put_str(pb_msg *m, int field, const char *s) { put_bytes(m, field, s, strlen(s)); }

/* inner as a field of m; inner is consumed */
static void put_msg(pb_msg *m, int field, pb_msg *inner) {
    put_bytes(m, field, inner->p, inner->n);
    free(inner->p);
    *inner = (pb_msg){0};
}

/* ---------------------------------------------------------------- records */

static double wall_time(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* an Event's header: when, and at which step */
static pb_msg event(int64_t step) {
    pb_msg e = {0};
    put_double(&e, EV_WALL_TIME, wall_time());
    if (step) put_uint(&e, EV_STEP, (uint64_t)step);
    return e;
}

/* e as one record; e is consumed */
static void write_record(ax_tfevents *w, pb_msg *e) {
    pb_msg r = {0};
    put_le(&r, e->n, 8);
    put_le(&r, ax_crc32c_mask(ax_crc32c(r.p, 8)), 4);
    put(&r, e->p, e->n);
    put_le(&r, ax_crc32c_mask(ax_crc32c(e->p, e->n)), 4);
    if (w->fp) fwrite(r.p, 1, r.n, w->fp); /* errors: ax_tfevents_flush */
    free(r.p);
    free(e->p);
    *e = (pb_msg){0};
}

/* an Event holding a Summary of the one value v (consumed) */
static void write_summary(ax_tfevents *w, int64_t step, pb_msg *v) {
    pb_msg s = {0}, e = event(step);
    put_msg(&s, SUMMARY_VALUE, v);
    put_msg(&e, EV_SUMMARY, &s);
    write_record(w, &e);
}

void ax_tfevents_scalar(ax_tfevents *w, int64_t step, const char *tag, double value) {
    pb_msg v = {0};
    put_str(&v, VALUE_TAG, tag);
    put_float(&v, VALUE_SIMPLE, (float)value);
    write_summary(w, step, &v);
}

void ax_tfevents_text(ax_tfevents *w, int64_t step, const char *tag, const char *text) {
    pb_msg plugin = {0}, meta = {0}, shape = {0}, tensor = {0}, v = {0};
    put_str(&plugin, PLUGIN_NAME, "text"); /* content: TextPluginData version 0, empty */
    put_msg(&meta, META_PLUGIN_DATA, &plugin);
    put_uint(&tensor, TENSOR_DTYPE, DT_STRING);
    put_msg(&tensor, TENSOR_SHAPE, &shape); /* no dimensions: a scalar string */
    put_str(&tensor, TENSOR_STRING_VAL, text);
    put_str(&v, VALUE_TAG, tag);
    put_msg(&v, VALUE_METADATA, &meta);
    put_msg(&v, VALUE_TENSOR, &tensor);
    write_summary(w, step, &v);
}

void ax_tfevents_start(ax_tfevents *w, int64_t step) {
    pb_msg log = {0}, e = event(step);
    put_uint(&log, SESSION_STATUS, SESSION_START);
    put_msg(&e, EV_SESSION_LOG, &log);
    write_record(w, &e);
}

int ax_tfevents_create(ax_tfevents *w, const char *dir) {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    memset(w, 0, sizeof *w);
    /* TensorBoard reads a directory's files in name order: the time first, zero-padded */
    for (int n = 0; !w->fp; n++) {
        snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%010lld.%s.%d.%d", dir, (long long)time(NULL), host,
                 (int)getpid(), n);
        w->fp = fopen(w->path, "wbx");
        if (!w->fp && errno != EEXIST) return AX_ERR("%s: cannot create the event file: %s", w->path, strerror(errno));
    }
    pb_msg e = event(0);
    put_str(&e, EV_FILE_VERSION, "brain.Event:2");
    write_record(w, &e);
    return ax_tfevents_flush(w);
}

int ax_tfevents_flush(ax_tfevents *w) {
    if (w->fp && (fflush(w->fp) || ferror(w->fp))) return AX_ERR("%s: write failed: %s", w->path, strerror(errno));
    return 0;
}

void ax_tfevents_close(ax_tfevents *w) {
    if (w->fp) fclose(w->fp);
    w->fp = NULL;
}
