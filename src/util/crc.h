/* Checksums, computed by ISA-L: CRC-32C (Castagnoli; "123456789" gives
 * 0xe3069283), which TensorBoard's record format asks for, and CRC-64/XZ
 * (ECMA-182 polynomial, reflected, init and final XOR all ones:
 * "123456789" gives 0x995dc9bbdf1939fa), the checkpoints', with its algebra
 * for checksums assembled from pieces written by different ranks
 * (docs/reliability.md, "Why CRC-64, from ISA-L").
 *
 *   uint64_t c = ax_crc64(0, buf, n);             // the standard CRC of buf
 *   c = ax_crc64(c, more, m);                     // ... extended by more
 *
 * A "raw" CRC is the remainder alone (zero initial register, no final XOR):
 * it is linear, so the raw CRC of a range is the XOR of the raw CRCs of its
 * pieces each followed by the zeros up to the range's end, and pieces held
 * by different ranks meet by an XOR reduction:
 *   uint64_t r = ax_crc64_shift(ax_crc64_raw(0, piece, len), end - (off + len));
 *   ... XOR over every piece of [0, end) ...;  ax_crc64_finish(r, end) == ax_crc64(0, range, end)
 * Pieces taken in order need one shift per gap between them instead:
 *   r = ax_crc64_raw(ax_crc64_shift(r, off - last_end), piece, len); ... ax_crc64_shift(r, end - last_end) */
#ifndef AX_UTIL_CRC_H
#define AX_UTIL_CRC_H
#include <stddef.h>
#include <stdint.h>

/* standard CRC-32C of n bytes */
uint32_t ax_crc32c(const void *p, size_t n);

/* standard CRC-64/XZ of n bytes, extending crc (0: a new one) */
uint64_t ax_crc64(uint64_t crc, const void *p, int64_t n);
/* raw CRC of n bytes, extending the raw CRC r of what precedes them (0: none) */
uint64_t ax_crc64_raw(uint64_t r, const void *p, int64_t n);
/* raw CRC r followed by n zero bytes */
uint64_t ax_crc64_shift(uint64_t r, int64_t n);
/* the same in two halves, for many shifts by one n: op = x^(8n) modulo the
 * polynomial (made in about 30 multiplications), applied in one:
 * ax_crc64_apply(ax_crc64_shift_op(n), r) == ax_crc64_shift(r, n) */
uint64_t ax_crc64_shift_op(int64_t n);
uint64_t ax_crc64_apply(uint64_t op, uint64_t r);
/* the standard CRC of a message of n bytes from its raw CRC */
uint64_t ax_crc64_finish(uint64_t r, int64_t n);
/* standard CRC-64/XZ of a whole file and its size, read in blocks */
int ax_crc64_file(const char *path, uint64_t *crc, int64_t *size);
#endif
