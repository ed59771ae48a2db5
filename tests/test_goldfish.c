/* Goldfish mask properties: the same passage drops the same tokens at any
 * offset and in any batch; the first h-1 targets are always kept; the dropped
 * share is about 1/k; the hash is order-sensitive; the values are pinned so a
 * change of the hash (which would change every published mask) fails. */
#include "test.h"
#include "memo/goldfish.h"
#include "util/rng.h"

#define T 200
#define H 13

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int32_t passage[150], a[T + 1], b[T + 1];
    for (int i = 0; i < 150; i++) passage[i] = (int32_t)(ax_rng_u64(1, 2, i) % 50257);
    /* the passage at offset 10 of one sequence and offset 37 of another, with other text around it */
    for (int i = 0; i <= T; i++) { a[i] = (int32_t)(ax_rng_u64(3, 4, i) % 50257); b[i] = (int32_t)(ax_rng_u64(5, 6, i) % 50257); }
    memcpy(a + 10, passage, sizeof passage);
    memcpy(b + 37, passage, 150 * sizeof(int32_t) - 37 * 4);
    float wa[T], wb[T];
    ax_goldfish_mask(a, T, 4, H, wa);
    ax_goldfish_mask(b, T, 4, H, wb);
    /* target i is seq[i+1]; passage token j sits at a[10+j], b[37+j]; its window is
     * inside the passage once j >= H-1 */
    int same = 1, dropped = 0;
    for (int j = H - 1; j < 150 - 37; j++) {
        same &= wa[10 + j - 1] == wb[37 + j - 1];
        dropped += wa[10 + j - 1] == 0;
    }
    CHECK(same, "the passage's mask depends on where it appears");
    CHECK(dropped > 0, "no token of the passage was dropped (k = 4)");
    int head = 1;
    for (int i = 0; i < H - 1; i++) head &= wa[i] == 1.0f && wb[i] == 1.0f;
    CHECK(head, "one of the first h-1 targets was dropped");

    /* dropped share over many random targets: 1/k within 5 standard deviations */
    for (int k = 2; k <= 8; k *= 2) {
        long n = 0, d = 0;
        for (int s = 0; s < 200; s++) {
            for (int i = 0; i <= T; i++) a[i] = (int32_t)(ax_rng_u64(s, 9, i) % 50257);
            ax_goldfish_mask(a, T, k, H, wa);
            for (int i = H - 1; i < T; i++) { n++; d += wa[i] == 0; }
        }
        double p = 1.0 / k, sd = sqrt(n * p * (1 - p));
        CHECK(fabs(d - n * p) < 5 * sd, "k = %d: dropped %ld of %ld, expected about %.0f", k, d, n, n * p);
    }

    /* order-sensitive; pinned values */
    int32_t w1[3] = {1, 2, 3}, w2[3] = {3, 2, 1};
    CHECK(ax_goldfish_hash(w1, 3) != ax_goldfish_hash(w2, 3), "hash ignores order");
    uint64_t h1 = ax_goldfish_hash(w1, 3);
    printf("hash(1,2,3) = 0x%016llx\n", (unsigned long long)h1);
    CHECK(h1 == 0x0b4046fd006a3b24ULL, "hash(1,2,3) changed: 0x%016llx (it defines every mask)", (unsigned long long)h1);
    int rc = ax_test_done("goldfish");
    MPI_Finalize();
    return rc;
}
