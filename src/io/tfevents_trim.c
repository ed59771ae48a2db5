/* Event files read back and cut at a step (io/tfevents.h: ax_tfevents_trim),
 * so that a run resumed from a checkpoint continues its series without the
 * points logged after that checkpoint by the run it replaces. */
#define _GNU_SOURCE 1
#include "io/tfevents.h"
#include "util/err.h"
#include "util/fileio.h"
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static uint64_t le(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* a varint at *p (before end) into *v; 0: malformed */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return 1;
    }
    return 0;
}

/* the step of an Event message (field 2; 0 when absent or malformed) */
static int64_t event_step(const uint8_t *p, size_t n) {
    const uint8_t *end = p + n;
    int64_t step = 0;
    uint64_t key, v;
    while (p < end && varint(&p, end, &key)) {
        switch (key & 7) {
        case 0:
            if (!varint(&p, end, &v)) return step;
            if (key >> 3 == 2) step = (int64_t)v;
            break;
        case 1: p += 8; break;
        case 5: p += 4; break;
        case 2:
            if (!varint(&p, end, &v) || v > (uint64_t)(end - p)) return step;
            p += v;
            break;
        default: return step;
        }
    }
    return step;
}

/* the record at p (of n bytes left): its length in *rec, its data in *data;
 * 0: torn (cut short) or corrupt (a CRC differs) */
static int record_at(const uint8_t *p, size_t n, size_t *rec, const uint8_t **data, size_t *len) {
    if (n < 16 || le(p + 8, 4) != ax_crc32c_mask(ax_crc32c(p, 8))) return 0;
    uint64_t l = le(p, 8);
    if (l > n - 16) return 0;
    if (le(p + 12 + l, 4) != ax_crc32c_mask(ax_crc32c(p + 12, l))) return 0;
    *data = p + 12, *len = l, *rec = l + 16;
    return 1;
}

static int trim_file(const char *path, int64_t step) {
    char *buf;
    size_t n, off = 0, rec, len, kept = 0;
    AX_TRY(ax_read_file(path, &buf, &n));
    const uint8_t *b = (const uint8_t *)buf, *data;
    uint8_t *keep = ax_malloc(n + 1);
    while (off < n && record_at(b + off, n - off, &rec, &data, &len)) {
        if (event_step(data, len) <= step) memcpy(keep + kept, b + off, rec), kept += rec;
        off += rec;
    }
    int rc = 0;
    if (kept < n) { /* something to drop */
        ax_outfile out;
        rc = ax_out_open(&out, path);
        if (rc == 0 && ax_out_write(&out, keep, kept)) ax_out_abort(&out), rc = -1;
        else if (rc == 0) rc = ax_out_commit(&out);
    }
    free(keep);
    free(buf);
    return rc;
}

int ax_tfevents_trim(const char *dir, int64_t step) {
    DIR *d = opendir(dir);
    if (!d) return 0; /* nothing written yet */
    struct dirent *e;
    int rc = 0;
    char path[4352];
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_type == DT_DIR || !strstr(e->d_name, "tfevents") || strstr(e->d_name, ".tmp.")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        rc = trim_file(path, step);
    }
    closedir(d);
    return rc;
}
