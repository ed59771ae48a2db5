#define _GNU_SOURCE 1
/* Safetensors: reads a file written by the Python `safetensors` package
 * (tests/ref/make_safetensors_fixture.py), round-trips our writer, and checks
 * that corrupt files and API misuse fail with a message instead of crashing. */
#include "io/safetensors.h"
#include "util/err.h"
#include "util/fileio.h"
#include "test.h"
#include <stdint.h>
#include <unistd.h>

static char tmpdir[64];

static void tmp_path(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", tmpdir, name); }

/* Writes an 8-byte length, the header text and data bytes verbatim. */
static void write_raw(const char *path, uint64_t hlen, const char *header, const void *data, size_t dlen) {
    FILE *fp = fopen(path, "wb");
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)(hlen >> (8 * i));
    fwrite(lb, 1, 8, fp);
    fwrite(header, 1, strlen(header), fp);
    if (dlen) fwrite(data, 1, dlen, fp);
    fclose(fp);
}

static void write_st(const char *name, const char *header, size_t dlen) {
    char path[256];
    tmp_path(path, sizeof path, name);
    static const unsigned char zeros[64];
    write_raw(path, strlen(header), header, zeros, dlen);
}

/* Checks that the last call failed with a message containing `want`; logs it. */
static void check_msg(const char *label, int rc, const char *want) {
    const char *m = ax_err_msg();
    CHECK(rc != 0, "%s: expected failure", label);
    CHECK(rc == 0 || (strcmp(m, "unknown error") != 0 && strstr(m, want)), "%s: message '%s' lacks '%s'", label, m,
          want);
    printf("  %-22s -> %s\n", label, rc ? m : "(no error!)");
}

static void expect_open_fail(const char *label, const char *name, const char *want) {
    char path[256];
    tmp_path(path, sizeof path, name);
    ax_st_file f;
    ax_err_clear();
    int rc = ax_st_open(&f, path);
    check_msg(label, rc, want);
    if (rc == 0) ax_st_close(&f);
    CHECK(f.map == NULL && f.t == NULL && f.path == NULL, "%s: struct not reset after failure", label);
}

static void test_reference(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/st_ref.safetensors", ax_t_data());
    ax_st_file f;
    int rc = ax_st_open(&f, path);
    CHECK(rc == 0, "open %s: %s", path, ax_err_msg());
    if (rc) return;
    CHECK(f.n == 4, "n=%d", f.n);
    for (int i = 1; i < f.n; i++) CHECK(f.t[i - 1].end <= f.t[i].begin, "not sorted by offset at %d", i);
    CHECK(f.n_meta == 1 && ax_st_meta(&f, "format") && strcmp(ax_st_meta(&f, "format"), "pt") == 0, "metadata");
    CHECK(ax_st_meta(&f, "nope") == NULL, "absent metadata");
    CHECK(ax_st_find(&f, "zz") == NULL, "absent tensor");

    const ax_st_tensor *a = ax_st_find(&f, "a"), *b = ax_st_find(&f, "b"), *c = ax_st_find(&f, "c"),
                       *d = ax_st_find(&f, "d");
    CHECK(a && b && c && d, "tensors present");
    if (!(a && b && c && d)) {
        ax_st_close(&f);
        return;
    }

    int64_t sa[2] = {2, 3}, sb[1] = {4}, sc[1] = {3}, sd[2] = {2, 2};
    CHECK(ax_st_expect(&f, a, AX_ST_F32, 2, sa) == 0, "a: %s", ax_err_msg());
    CHECK(ax_st_expect(&f, b, AX_ST_F16, 1, sb) == 0, "b: %s", ax_err_msg());
    CHECK(ax_st_expect(&f, c, AX_ST_BF16, 1, sc) == 0, "c: %s", ax_err_msg());
    CHECK(ax_st_expect(&f, d, AX_ST_I32, 2, sd) == 0, "d: %s", ax_err_msg());
    CHECK(a->numel == 6 && b->numel == 4 && c->numel == 3 && d->numel == 4, "numel");

    float va[6], vb[4], vc[3];
    CHECK(ax_st_read_f32(&f, a, va, 6) == 0, "read a: %s", ax_err_msg());
    for (int i = 0; i < 6; i++) CHECK(va[i] == 0.5f * i, "a[%d]=%g", i, va[i]);
    CHECK(ax_st_read_f32(&f, b, vb, 4) == 0, "read b: %s", ax_err_msg());
    const float eb[4] = {1.0f, -2.5f, 65504.0f, ldexpf(1.0f, -24)}; /* 6e-08 -> smallest subnormal */
    for (int i = 0; i < 4; i++) CHECK(vb[i] == eb[i], "b[%d]=%.9g want %.9g", i, vb[i], eb[i]);
    CHECK(ax_st_read_f32(&f, c, vc, 3) == 0, "read c: %s", ax_err_msg());
    const float ec[3] = {1.0f, -3.0f, 0.15625f};
    for (int i = 0; i < 3; i++) CHECK(vc[i] == ec[i], "c[%d]=%g", i, vc[i]);
    int32_t vd[4];
    memcpy(vd, ax_st_data(&f, d), sizeof vd);
    const int32_t ed[4] = {1, 2, 3, -4};
    for (int i = 0; i < 4; i++) CHECK(vd[i] == ed[i], "d[%d]=%d", i, vd[i]);

    ax_err_clear();
    check_msg("read_f32 on I32", ax_st_read_f32(&f, d, va, 4), "I32");
    ax_err_clear();
    check_msg("read_f32 wrong count", ax_st_read_f32(&f, a, va, 5), "5");
    int64_t wrong[2] = {3, 2};
    ax_err_clear();
    check_msg("expect wrong shape", ax_st_expect(&f, a, AX_ST_F32, 2, wrong), "expected F32 [3,2], found F32 [2,3]");
    ax_err_clear();
    check_msg("expect wrong dtype", ax_st_expect(&f, a, AX_ST_BF16, 2, sa), "found F32");
    ax_st_close(&f);
}

/* Special f16 values that the fixture does not hold: built by hand. */
static void test_f16_special(void) {
    /* +inf, -0, nan, largest subnormal, smallest normal */
    const uint16_t h[5] = {0x7c00, 0x8000, 0x7e00, 0x03ff, 0x0400};
    char hdr[128];
    snprintf(hdr, sizeof hdr, "{\"h\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[0,10]}}");
    char path[256];
    tmp_path(path, sizeof path, "f16.safetensors");
    write_raw(path, strlen(hdr), hdr, h, sizeof h); /* host is little-endian */
    ax_st_file f;
    CHECK(ax_st_open(&f, path) == 0, "%s", ax_err_msg());
    float v[5];
    CHECK(ax_st_read_f32(&f, &f.t[0], v, 5) == 0, "%s", ax_err_msg());
    CHECK(isinf(v[0]) && v[0] > 0, "inf %g", v[0]);
    CHECK(v[1] == 0 && signbit(v[1]), "-0 %g", v[1]);
    CHECK(isnan(v[2]), "nan %g", v[2]);
    CHECK(v[3] == ldexpf(1023.0f, -24), "max subnormal %.9g", v[3]);
    CHECK(v[4] == ldexpf(1.0f, -14), "min normal %.9g", v[4]);
    ax_st_close(&f);
}

static const float rt_w[12] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f, 3e38f, -7.0f, 0.1f, 0.2f, 0.3f, 42.0f};
static const int32_t rt_i[5] = {0, -1, 2147483647, -2147483647 - 1, 7};
static const float rt_s = 2.5f;

static void write_roundtrip(const char *path) {
    ax_st_writer w;
    CHECK(ax_st_writer_init(&w, path) == 0, "%s", ax_err_msg());
    int64_t sw[2] = {3, 4}, se[2] = {0, 5}, si[1] = {5};
    ax_st_writer_meta(&w, "step", "41");
    ax_st_writer_meta(&w, "note", "round \"trip\"");
    ax_st_writer_meta(&w, "step", "42"); /* replaces */
    ax_st_writer_declare(&w, "w", AX_ST_F32, 2, sw);
    ax_st_writer_declare(&w, "empty", AX_ST_F32, 2, se);
    ax_st_writer_declare(&w, "i", AX_ST_I32, 1, si);
    ax_st_writer_declare(&w, "scalar", AX_ST_F32, 0, NULL);
    CHECK(ax_st_writer_write(&w, rt_w, sizeof rt_w) == 0, "%s", ax_err_msg());
    CHECK(ax_st_writer_write(&w, NULL, 0) == 0, "%s", ax_err_msg());
    CHECK(ax_st_writer_write(&w, rt_i, sizeof rt_i) == 0, "%s", ax_err_msg());
    CHECK(ax_st_writer_write(&w, &rt_s, sizeof rt_s) == 0, "%s", ax_err_msg());
    CHECK(!ax_file_exists(path), "file visible before commit");
    CHECK(ax_st_writer_commit(&w) == 0, "%s", ax_err_msg());
    CHECK(ax_file_exists(path), "file missing after commit");
}

static void test_roundtrip(void) {
    char path[256];
    tmp_path(path, sizeof path, "rt.safetensors");
    write_roundtrip(path);
    ax_st_file f;
    int rc = ax_st_open(&f, path);
    CHECK(rc == 0, "reopen: %s", ax_err_msg());
    if (rc) return;
    CHECK(f.data_start % 8 == 0, "header not padded: data_start=%zu", f.data_start);
    CHECK(f.n == 4, "n=%d", f.n);
    CHECK(f.n == 4 && strcmp(f.t[0].name, "w") == 0 && strcmp(f.t[1].name, "empty") == 0 &&
              strcmp(f.t[2].name, "i") == 0 && strcmp(f.t[3].name, "scalar") == 0,
          "declaration order lost");
    CHECK(f.map_len == f.data_start + sizeof rt_w + sizeof rt_i + sizeof rt_s, "file size %zu", f.map_len);
    const char *step = ax_st_meta(&f, "step"), *note = ax_st_meta(&f, "note");
    CHECK(f.n_meta == 2 && step && strcmp(step, "42") == 0 && note && strcmp(note, "round \"trip\"") == 0, "metadata");

    int64_t sw[2] = {3, 4}, se[2] = {0, 5}, si[1] = {5};
    const ax_st_tensor *tw = ax_st_find(&f, "w"), *te = ax_st_find(&f, "empty"), *ti = ax_st_find(&f, "i"),
                       *ts = ax_st_find(&f, "scalar");
    CHECK(tw && ax_st_expect(&f, tw, AX_ST_F32, 2, sw) == 0, "w: %s", ax_err_msg());
    CHECK(te && ax_st_expect(&f, te, AX_ST_F32, 2, se) == 0 && te->numel == 0, "empty: %s", ax_err_msg());
    CHECK(ti && ax_st_expect(&f, ti, AX_ST_I32, 1, si) == 0, "i: %s", ax_err_msg());
    CHECK(ts && ax_st_expect(&f, ts, AX_ST_F32, 0, NULL) == 0 && ts->numel == 1, "scalar: %s", ax_err_msg());
    if (tw && ti && ts && te) {
        CHECK(memcmp(ax_st_data(&f, tw), rt_w, sizeof rt_w) == 0, "w data differs");
        CHECK(memcmp(ax_st_data(&f, ti), rt_i, sizeof rt_i) == 0, "i data differs");
        CHECK(memcmp(ax_st_data(&f, ts), &rt_s, sizeof rt_s) == 0, "scalar data differs");
        float v[12];
        CHECK(ax_st_read_f32(&f, tw, v, 12) == 0 && memcmp(v, rt_w, sizeof v) == 0, "read_f32 w differs");
        CHECK(ax_st_read_f32(&f, te, v, 0) == 0, "read_f32 empty: %s", ax_err_msg());
    }
    ax_st_close(&f);

    /* A file with only metadata and no tensors is valid too. */
    tmp_path(path, sizeof path, "meta_only.safetensors");
    ax_st_writer w;
    CHECK(ax_st_writer_init(&w, path) == 0, "%s", ax_err_msg());
    ax_st_writer_meta(&w, "format", "pt");
    CHECK(ax_st_writer_commit(&w) == 0, "%s", ax_err_msg());
    CHECK(ax_st_open(&f, path) == 0 && f.n == 0 && f.n_meta == 1, "meta-only: %s", ax_err_msg());
    ax_st_close(&f);
}

/* Copies the round-trip file minus its last `cut` bytes. */
static void write_truncated(const char *name, size_t cut) {
    char src[256], dst[256];
    tmp_path(src, sizeof src, "rt.safetensors");
    tmp_path(dst, sizeof dst, name);
    char *data;
    size_t len;
    if (ax_read_file(src, &data, &len) != 0) {
        CHECK(0, "%s", ax_err_msg());
        return;
    }
    FILE *fp = fopen(dst, "wb");
    fwrite(data, 1, len - cut, fp);
    fclose(fp);
    free(data);
}

static void test_bad_inputs(void) {
    printf("bad inputs (each must fail with a message):\n");
    char path[256];
    tmp_path(path, sizeof path, "three.safetensors");
    FILE *fp = fopen(path, "wb");
    fwrite("abc", 1, 3, fp);
    fclose(fp);
    expect_open_fail("3-byte file", "three.safetensors", "at least");
    expect_open_fail("missing file", "no_such.safetensors", "cannot open");
    tmp_path(path, sizeof path, "biglen.safetensors");
    write_raw(path, 1000, "{}", NULL, 0);
    expect_open_fail("header length too big", "biglen.safetensors", "header length 1000");
    tmp_path(path, sizeof path, "hugelen.safetensors");
    write_raw(path, UINT64_MAX, "{}", NULL, 0);
    expect_open_fail("header length 2^64-1", "hugelen.safetensors", "header length");

    write_st("badjson.safetensors", "{\"a\": {\"dtype\": \"F32\",", 0);
    expect_open_fail("invalid JSON", "badjson.safetensors", "invalid JSON");
    write_st("notobj.safetensors", "[1,2]", 0);
    expect_open_fail("header not object", "notobj.safetensors", "object");
    write_st("entry.safetensors", "{\"a\":[1]}", 0);
    expect_open_fail("entry not object", "entry.safetensors", "'a'");
    write_st("dup.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4,8]}}",
             8);
    expect_open_fail("duplicate name", "dup.safetensors", "duplicate");
    write_st("dtype.safetensors", "{\"a\":{\"dtype\":\"F99\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    expect_open_fail("unknown dtype", "dtype.safetensors", "F99");
    write_st("negshape.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4);
    expect_open_fail("negative dim", "negshape.safetensors", "shape");
    write_st("fshape.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4);
    expect_open_fail("float dim", "fshape.safetensors", "shape");
    write_st("ndim.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1);
    expect_open_fail("ndim > MAXDIM", "ndim.safetensors", "9 dimensions");
    write_st("noofs.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4);
    expect_open_fail("data_offsets missing", "noofs.safetensors", "data_offsets");
    write_st("revofs.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4);
    expect_open_fail("data_offsets reversed", "revofs.safetensors", "data_offsets");
    write_st("size.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 12);
    expect_open_fail("shape/size mismatch", "size.safetensors", "needs 16 bytes");
    write_st("ovf.safetensors", "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}",
             0);
    expect_open_fail("numel overflow", "ovf.safetensors", "too large");
    write_st("overlap.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
             12);
    expect_open_fail("overlapping offsets", "overlap.safetensors", "overlap");
    write_st("meta.safetensors", "{\"__metadata__\":{\"k\":1}}", 0);
    expect_open_fail("metadata not string", "meta.safetensors", "__metadata__");
    write_truncated("trunc.safetensors", 4);
    expect_open_fail("truncated data", "trunc.safetensors",
                     "truncated: tensor 'scalar' needs bytes up to 72, data section has 68");
}

static void test_writer_misuse(void) {
    printf("writer misuse:\n");
    char path[256], tmp[300];
    tmp_path(path, sizeof path, "misuse.safetensors");
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int64_t s[1] = {4};
    float x[4] = {0};

    ax_st_writer w;
    CHECK(ax_st_writer_init(&w, path) == 0, "%s", ax_err_msg());
    ax_st_writer_declare(&w, "x", AX_ST_F32, 1, s);
    ax_err_clear();
    check_msg("wrong nbytes", ax_st_writer_write(&w, x, 12), "expected 16 bytes, got 12");
    ax_st_writer_abort(&w);
    CHECK(!ax_file_exists(path) && !ax_file_exists(tmp), "abort left a file");

    CHECK(ax_st_writer_init(&w, path) == 0, "%s", ax_err_msg());
    ax_st_writer_declare(&w, "x", AX_ST_F32, 1, s);
    ax_st_writer_declare(&w, "y", AX_ST_F32, 1, s);
    CHECK(ax_st_writer_write(&w, x, sizeof x) == 0, "%s", ax_err_msg());
    ax_err_clear();
    check_msg("commit with unwritten", ax_st_writer_commit(&w), "'y'");
    CHECK(!ax_file_exists(path) && !ax_file_exists(tmp), "failed commit left a file");
    ax_st_writer_abort(&w); /* harmless after commit */

    CHECK(ax_st_writer_init(&w, path) == 0, "%s", ax_err_msg());
    ax_st_writer_declare(&w, "x", AX_ST_F32, 1, s);
    CHECK(ax_st_writer_write(&w, x, sizeof x) == 0, "%s", ax_err_msg());
    ax_err_clear();
    check_msg("write past last", ax_st_writer_write(&w, x, sizeof x), "already written");
    ax_st_writer_abort(&w);

    CHECK(ax_st_writer_init(&w, path) == 0, "%s", ax_err_msg());
    ax_st_writer_declare(&w, "x", AX_ST_F32, 1, s);
    ax_st_writer_declare(&w, "x", AX_ST_F32, 1, s);
    ax_err_clear();
    check_msg("duplicate declare", ax_st_writer_write(&w, x, sizeof x), "twice");
    ax_st_writer_abort(&w);
    CHECK(!ax_file_exists(path) && !ax_file_exists(tmp), "misuse left a file");

    ax_err_clear();
    check_msg("init in missing dir", ax_st_writer_init(&w, "/nonexistent_dir_ax/x.safetensors"), "cannot create");
    ax_st_writer_abort(&w);
}

static void cleanup(void) {
    static const char *names[] = {"f16",    "rt",     "meta_only", "three", "biglen",   "hugelen", "badjson",
                                  "notobj", "entry",  "dup",       "dtype", "negshape", "fshape",  "ndim",
                                  "noofs",  "revofs", "size",      "ovf",   "overlap",  "meta",    "trunc"};
    char path[256];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s.safetensors", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ax_st_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    test_reference();
    test_f16_special();
    test_roundtrip();
    test_bad_inputs();
    test_writer_misuse();
    cleanup();
    int rc = ax_test_done("safetensors");
    MPI_Finalize();
    return rc;
}
