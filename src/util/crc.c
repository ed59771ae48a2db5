/* CRC-64/XZ by ISA-L (carry-less multiplication where the CPU has it,
 * tables elsewhere, chosen at run time), and shifts by zeros as
 * multiplications by x^(8n) modulo the polynomial, in the reflected bit
 * order ISA-L uses (util/crc.h). */
#include "util/crc.h"
#include "util/err.h"
#include <errno.h>
#include <fcntl.h>
#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define POLY 0xc96c5795d7870f42ull /* ECMA-182, reflected */
#define X0   0x8000000000000000ull /* the polynomial 1, reflected */

/* ISA-L's iSCSI CRC is CRC-32C without the final inversion */
uint32_t ax_crc32c(const void *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t done = 0; done < n;) { /* ISA-L takes an int length */
        int k = n - done > (1u << 30) ? 1 << 30 : (int)(n - done);
        c = crc32_iscsi((unsigned char *)p + done, k, c);
        done += (size_t)k;
    }
    return ~c;
}

uint64_t ax_crc64(uint64_t crc, const void *p, int64_t n) {
    return crc64_ecma_refl(crc, (const unsigned char *)p, (uint64_t)n);
}

/* ISA-L starts the register at ~seed and returns ~register: seed ~r starts
 * it at r, so the result's complement is r advanced over the bytes */
uint64_t ax_crc64_raw(uint64_t r, const void *p, int64_t n) {
    return ~crc64_ecma_refl(~r, (const unsigned char *)p, (uint64_t)n);
}

/* a * b modulo the polynomial (reflected: bit 63 is x^0) */
static uint64_t mulmod(uint64_t a, uint64_t b) {
    uint64_t m = X0, p = 0;
    for (; m; m >>= 1) {
        if (a & m) {
            p ^= b;
            if (!(a & (m - 1))) break;
        }
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

/* x^(2^k) for k < 64, made once, on first use (by whichever thread comes first) */
static uint64_t x2k[64];
static pthread_once_t x2k_once = PTHREAD_ONCE_INIT;
static void x2k_init(void) {
    x2k[0] = X0 >> 1; /* x^1 */
    for (int k = 1; k < 64; k++) x2k[k] = mulmod(x2k[k - 1], x2k[k - 1]);
}

uint64_t ax_crc64_shift_op(int64_t n) {
    pthread_once(&x2k_once, x2k_init);
    uint64_t op = X0; /* x^(8n): n's bits k multiply by x^(2^(k+3)) */
    for (int k = 3; n; n >>= 1, k++)
        if (n & 1) op = mulmod(x2k[k & 63], op);
    return op;
}

uint64_t ax_crc64_apply(uint64_t op, uint64_t r) { return r ? mulmod(op, r) : 0; }

uint64_t ax_crc64_shift(uint64_t r, int64_t n) { return r && n ? mulmod(ax_crc64_shift_op(n), r) : r; }

/* the standard CRC: the all-ones initial register advanced over n bytes,
 * plus the message's remainder, complemented */
uint64_t ax_crc64_finish(uint64_t r, int64_t n) { return ~(ax_crc64_shift(~0ull, n) ^ r); }

int ax_crc64_file(const char *path, uint64_t *crc, int64_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return AX_ERR("%s: cannot open: %s", path, strerror(errno));
    static _Thread_local unsigned char buf[1 << 16];
    uint64_t c = 0;
    int64_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return AX_ERR("%s: cannot read: %s", path, strerror(e));
        }
        if (r == 0) break;
        c = ax_crc64(c, buf, r);
        n += r;
    }
    close(fd);
    *crc = c;
    *size = n;
    return 0;
}
