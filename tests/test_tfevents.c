#define _GNU_SOURCE 1
/* TensorBoard event files (io/tfevents.h) without the tensorboard package:
 * the CRC mask (the CRC-32C itself: test_crc), a scalar record's bytes field
 * by field as event.proto and summary.proto lay them out, and trimming at a
 * step (later events and a torn tail dropped, a file with nothing to drop left
 * as it was). tests/test_cli_tensorboard.sh reads the files with TensorBoard. */
#include "io/tfevents.h"
#include "util/fileio.h"
#include "test.h"
#include <stdint.h>

static char tmpdir[64];

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The steps of a file's records (step: the byte after key 0x10, one-byte
 * varints only; 0 when absent), checking both CRCs of each; -1: a bad record. */
static int read_steps(const char *path, int *steps, int max) {
    char *buf;
    size_t n, off = 0;
    if (ax_read_file(path, &buf, &n)) return -1;
    const uint8_t *b = (const uint8_t *)buf;
    int k = 0;
    while (off < n && k < max) {
        if (n - off < 16) break;
        uint64_t len = le(b + off, 8);
        if (le(b + off + 8, 4) != ax_crc32c_mask(ax_crc32c(b + off, 8)) || off + 16 + len > n ||
            le(b + off + 12 + len, 4) != ax_crc32c_mask(ax_crc32c(b + off + 12, len))) {
            k = -1;
            break;
        }
        const uint8_t *e = b + off + 12;
        steps[k++] = len > 10 && e[9] == 0x10 ? e[10] : 0; /* after wall_time: key 0x09 + 8 bytes */
        off += 16 + len;
    }
    free(buf);
    return k;
}

/* the CRC-32C itself: tests/test_crc.c */
static void test_crc(void) { CHECK(ax_crc32c_mask(0) == 0xA282EAD8u && ax_crc32c_mask(1) == 0xA284EAD8u, "mask"); }

/* Event {1: wall_time, 2: step 7, 5: Summary {1: Value {1: "a", 2: 1.5f}}} */
static void test_scalar_bytes(void) {
    ax_tfevents w;
    CHECK(ax_tfevents_create(&w, tmpdir) == 0, "create");
    ax_tfevents_scalar(&w, 7, "a", 1.5);
    ax_tfevents_close(&w);
    char *buf;
    size_t n;
    CHECK(ax_read_file(w.path, &buf, &n) == 0, "read");
    const uint8_t *b = (const uint8_t *)buf, *r = b + 16 + le(b, 8); /* the second record */
    static const uint8_t want[] = {0x10, 7, 0x2A, 10, 0x0A, 8, 0x0A, 1, 'a', 0x15, 0x00, 0x00, 0xC0, 0x3F};
    CHECK(le(r, 8) == 9 + sizeof want, "record length %d", (int)le(r, 8));
    CHECK(r[12] == 0x09 && !memcmp(r + 21, want, sizeof want), "event bytes");
    int steps[4];
    CHECK(read_steps(w.path, steps, 4) == 2 && steps[0] == 0 && steps[1] == 7, "two records, steps 0 and 7");
    free(buf);
    unlink(w.path);
}

static void test_trim(void) {
    ax_tfevents a, b;
    CHECK(ax_tfevents_create(&a, tmpdir) == 0 && ax_tfevents_create(&b, tmpdir) == 0, "two files");
    CHECK(strcmp(a.path, b.path) != 0, "distinct names in one second: %s", a.path);
    for (int s = 1; s <= 6; s++) ax_tfevents_scalar(&a, s, "x", s);
    ax_tfevents_text(&a, 2, "t", "text");
    ax_tfevents_start(&b, 2);
    ax_tfevents_scalar(&b, 3, "x", 3);
    ax_tfevents_close(&b);
    fwrite("\x20\0\0\0\0\0\0", 1, 7, a.fp); /* a record cut short by a crash */
    ax_tfevents_close(&a);
    struct stat before, after;
    stat(b.path, &before);
    CHECK(ax_tfevents_trim(tmpdir, 3) == 0, "trim");
    int steps[16], n = read_steps(a.path, steps, 16);
    CHECK(n == 5 && steps[0] == 0 && steps[1] == 1 && steps[2] == 2 && steps[3] == 3 && steps[4] == 2,
          "kept the steps up to 3 (the text of step 2 too), got %d records", n);
    stat(b.path, &after);
    CHECK(before.st_ino == after.st_ino, "a file with nothing to drop is not rewritten");
    CHECK(read_steps(b.path, steps, 16) == 3, "its 3 records");
    CHECK(ax_tfevents_trim(tmpdir, 0) == 0 && read_steps(a.path, steps, 16) == 1, "trim 0: the file version alone");
    CHECK(ax_tfevents_trim("/nonexistent/dir", 0) == 0, "no directory: nothing to trim");
    unlink(a.path);
    unlink(b.path);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ax_tfev_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    test_crc();
    test_scalar_bytes();
    test_trim();
    ax_t_rmtree(tmpdir);
    int rc = ax_test_done("tfevents");
    MPI_Finalize();
    return rc;
}
