/* crc64: CRC-64/XZ and its algebra (util/crc.h). The check value of
 * "123456789" pins the standard; a buffer cut into pieces at random places,
 * each piece's raw CRC shifted to the end and the pieces XORed in random
 * order (as ranks meet in a reduction), must give the CRC of the whole
 * buffer; so must a raw CRC extended piece by piece and across zeros. */
#include "test.h"
#include "util/crc.h"
#include "util/rng.h"
#include <stdint.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    unsigned char zeros32[32] = {0}, ones32[32];
    memset(ones32, 0xff, sizeof ones32);
    CHECK(ax_crc32c("123456789", 9) == 0xe3069283u, "CRC-32C check value %08x", ax_crc32c("123456789", 9));
    CHECK(ax_crc32c(zeros32, 32) == 0x8a9136aau && ax_crc32c(ones32, 32) == 0x62a8ab43u,
          "CRC-32C of RFC 3720's vectors");
    CHECK(ax_crc64(0, "123456789", 9) == 0x995dc9bbdf1939faull, "check value %016llx",
          (unsigned long long)ax_crc64(0, "123456789", 9));
    CHECK(ax_crc64(ax_crc64(0, "1234", 4), "56789", 5) == 0x995dc9bbdf1939faull, "extended");
    CHECK(ax_crc64_finish(ax_crc64_raw(0, "123456789", 9), 9) == 0x995dc9bbdf1939faull, "raw, finished");
    enum { N = 1 << 20 };
    unsigned char *buf = malloc(N), *zeros = calloc(N, 1);
    ax_rng s = {.seed = 12345};
    for (int i = 0; i < N; i++) buf[i] = (unsigned char)(ax_rng_next(&s) >> 56);
    for (int trial = 0; trial < 20; trial++) {
        int64_t n = 1 + (int64_t)(ax_rng_next(&s) % N), cut[65], k = 1 + (int64_t)(ax_rng_next(&s) % 64);
        cut[0] = 0;
        for (int64_t i = 1; i < k; i++) cut[i] = (int64_t)(ax_rng_next(&s) % (uint64_t)(n + 1));
        cut[k] = n;
        for (int64_t i = 1; i < k; i++) /* sorted: pieces may be empty */
            for (int64_t j = i; j > 0 && cut[j] < cut[j - 1]; j--) {
                int64_t t = cut[j];
                cut[j] = cut[j - 1], cut[j - 1] = t;
            }
        uint64_t x = 0, ext = 0;
        for (int64_t i = k - 1; i >= 0; i--) /* the XOR's order does not matter */
            x ^= ax_crc64_shift(ax_crc64_raw(0, buf + cut[i], cut[i + 1] - cut[i]), n - cut[i + 1]);
        for (int64_t i = 0; i < k; i++) ext = ax_crc64_raw(ext, buf + cut[i], cut[i + 1] - cut[i]);
        uint64_t want = ax_crc64(0, buf, n);
        CHECK(ax_crc64_finish(x, n) == want, "trial %d: %lld bytes in %lld pieces, XOR of shifted pieces", trial,
              (long long)n, (long long)k);
        CHECK(ax_crc64_finish(ext, n) == want, "trial %d: raw CRC extended piece by piece", trial);
        int64_t z = (int64_t)(ax_rng_next(&s) % (N - (uint64_t)n + 1)); /* n bytes, then z zeros */
        memcpy(zeros, buf, (size_t)n);
        CHECK(ax_crc64_finish(ax_crc64_shift(ax_crc64_raw(0, buf, n), z), n + z) == ax_crc64(0, zeros, n + z),
              "trial %d: shift by %lld zeros", trial, (long long)z);
        CHECK(ax_crc64_apply(ax_crc64_shift_op(z), ax_crc64_raw(0, buf, n)) ==
                  ax_crc64_shift(ax_crc64_raw(0, buf, n), z),
              "trial %d: shift by an operator made once", trial);
        memset(zeros, 0, (size_t)n);
    }
    free(buf);
    free(zeros);
    int rc = ax_test_done("crc");
    MPI_Finalize();
    return rc;
}
