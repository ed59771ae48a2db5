/* Goldfish mask properties. The mask of a target is a function of the h ids of
 * the token stream that end at it, wherever the training windows start: a
 * passage repeated at several offsets of the window grid drops the same tokens
 * at every occurrence; the mask read through shard files and the loader (any T,
 * shuffled, across file boundaries) equals the mask computed on the whole
 * stream; the dropped share is about 1/k; the hash is order-sensitive; its
 * values are pinned so a change of the hash (which would change every
 * published mask) fails. */
#include "test.h"
#include "data/shards.h"
#include "memo/goldfish.h"
#include "train/source.h"
#include "util/err.h"
#include "util/rng.h"
#include <stdint.h>
#include <unistd.h>

#define H    13
#define K    4
#define N    24000 /* stream tokens */
#define PLEN 150   /* passage tokens */
#define NOCC 9     /* passage occurrences */
#define TMAX 128

static int32_t stream[N];
static int occ[NOCC];
static float ref[N]; /* 1 keeps the target stream[p], 0 drops it */

/* the definition, on the whole stream: only the first h-1 tokens lack a window */
static void reference_mask(void) {
    uint64_t thresh = UINT64_MAX / K;
    for (int p = 0; p < N; p++) ref[p] = (p < H - 1 || ax_goldfish_hash(stream + p - H + 1, H) >= thresh) ? 1.0f : 0.0f;
}

static void make_stream(void) {
    int32_t passage[PLEN];
    for (int i = 0; i < PLEN; i++) passage[i] = (int32_t)(ax_rng_u64(1, 2, i) % 50257);
    for (int i = 0; i < N; i++) stream[i] = (int32_t)(ax_rng_u64(3, 4, i) % 50257);
    /* occurrences spread over the stream at offsets that fall everywhere in the window grid */
    for (int j = 0; j < NOCC; j++) {
        occ[j] = 200 + j * (N - 400) / NOCC + (int)(ax_rng_u64(5, 6, j) % 97);
        memcpy(stream + occ[j], passage, sizeof passage);
    }
}

/* Reads every sequence of the stream split into three shard files through a
 * shuffled loader with sequence length T, masks it with its stream context and
 * stores the weight of each target at its stream position (got[p]; -1 where no
 * sequence has that target). Returns 0, or -1 on a context-count mismatch. */
static int masks_through_loader(const char *dir, int T, int use_context, float *got) {
    static const int cut[2] = {7001, 15997}; /* file boundaries, not multiples of any T */
    char path[3][256], pat[256];
    int start[3] = {0, cut[0], cut[1]}, end[3] = {cut[0], cut[1], N};
    for (int f = 0; f < 3; f++) {
        snprintf(path[f], sizeof path[f], "%s/s_%d.bin", dir, f);
        if (ax_shard_write(path[f], stream + start[f], end[f] - start[f])) return -1;
    }
    snprintf(pat, sizeof pat, "%s/s_*.bin", dir);
    ax_shardset *s;
    ax_loader L;
    if (ax_shards_open(&s, pat, 0) || ax_loader_init(&L, s, T, 1, 99)) return -1;
    for (int p = 0; p < N; p++) got[p] = -1;
    int32_t buf[H - 1 + TMAX + 1];
    float w[TMAX];
    int bad = 0;
    for (int64_t pos = 0; pos < L.nseq; pos++) {
        int have = ax_loader_get(&L, pos, H - 1, buf);
        int64_t idx = L.perm[pos], at = 0;
        for (int f = 0; f < 3; f++) { /* stream offset of sequence idx */
            int64_t k = (end[f] - start[f] - 1) / T;
            if (idx < k) {
                at = start[f] + idx * T;
                break;
            }
            idx -= k;
        }
        int want = at < H - 1 ? (int)at : H - 1;
        if (have != want || memcmp(buf + H - 1, stream + at, (T + 1) * sizeof(int32_t)) ||
            (want && memcmp(buf + H - 1 - want, stream + at - want, want * sizeof(int32_t))))
            bad = 1;
        ax_goldfish_mask(buf + H - 1, use_context ? have : 0, T, K, H, w);
        for (int i = 0; i < T; i++) got[at + 1 + i] = w[i];
    }
    ax_loader_free(&L);
    ax_shards_close(s);
    for (int f = 0; f < 3; f++) unlink(path[f]);
    return bad ? -1 : 0;
}

/* 1 when every occurrence of the passage has the same weight on each of its
 * tokens past the first h-1 (whose windows reach outside the passage) */
static int passage_masks_agree(const float *got) {
    for (int j = H - 1; j < PLEN; j++)
        for (int o = 1; o < NOCC; o++)
            if (got[occ[o] + j] != got[occ[0] + j]) return 0;
    return 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    char dir[] = "/tmp/axonn_goldfish_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    make_stream();
    reference_mask();
    static float got[N];

    /* the mask through files and the loader equals the stream definition, for any T */
    const int Ts[] = {16, 37, 128};
    for (int t = 0; t < 3; t++) {
        int T = Ts[t];
        CHECK(masks_through_loader(dir, T, 1, got) == 0, "T = %d: wrong sequence or context from the loader: %s", T,
              ax_err_msg());
        long cmp = 0, diff = 0;
        for (int p = 1; p < N; p++)
            if (got[p] >= 0) {
                cmp++;
                diff += got[p] != ref[p];
            }
        CHECK(cmp > N - 4 * TMAX && diff == 0, "T = %d: %ld of %ld targets masked unlike the stream definition", T,
              diff, cmp);
        CHECK(passage_masks_agree(got), "T = %d: the passage's mask depends on where the windows cut it", T);
        int dropped = 0;
        for (int j = H - 1; j < PLEN; j++) dropped += got[occ[0] + j] == 0;
        CHECK(dropped > 0, "T = %d: no token of the passage was dropped (k = %d)", T, K);
        /* the very start of the stream has no window: kept */
        int head = 1;
        for (int p = 1; p < H - 1; p++) head &= got[p] == 1.0f;
        CHECK(head, "T = %d: a target with fewer than h-1 tokens before it was dropped", T);
    }
    /* without the stream context (the former rule: every window's first targets
     * kept) the occurrences disagree: the check above can fail */
    CHECK(masks_through_loader(dir, 37, 0, got) == 0, "T = 37 without context: %s", ax_err_msg());
    CHECK(!passage_masks_agree(got), "without stream context the passage masks agree: the test proves nothing");

    /* dropped share over the stream: 1/k within 5 standard deviations */
    for (int k = 2; k <= 8; k *= 2) {
        long n = 0, d = 0;
        uint64_t thresh = UINT64_MAX / (uint64_t)k;
        for (int p = H - 1; p < N; p++) {
            n++;
            d += ax_goldfish_hash(stream + p - H + 1, H) < thresh;
        }
        double q = 1.0 / k, sd = sqrt(n * q * (1 - q));
        CHECK(fabs(d - n * q) < 5 * sd, "k = %d: dropped %ld of %ld, expected about %.0f", k, d, n, n * q);
    }

    /* synthetic sequences are streams of their own: no context */
    ax_source syn;
    ax_source_open(&syn, NULL, NULL, 16, 97, AX_SOURCE_IN_ORDER, 5);
    int32_t sb[H - 1 + 17];
    CHECK(ax_source_get(&syn, 3, H - 1, sb) == 0 && sb[0] == -1 && sb[H - 2] == -1,
          "synthetic source reported context");
    ax_source_close(&syn);

    /* order-sensitive; pinned values */
    int32_t w1[3] = {1, 2, 3}, w2[3] = {3, 2, 1};
    CHECK(ax_goldfish_hash(w1, 3) != ax_goldfish_hash(w2, 3), "hash ignores order");
    uint64_t h1 = ax_goldfish_hash(w1, 3);
    printf("hash(1,2,3) = 0x%016llx\n", (unsigned long long)h1);
    CHECK(h1 == 0x0b4046fd006a3b24ULL, "hash(1,2,3) changed: 0x%016llx (it defines every mask)",
          (unsigned long long)h1);
    rmdir(dir);
    int rc = ax_test_done("goldfish");
    MPI_Finalize();
    return rc;
}
