/* llm.c token shards: the 256 x int32 header, versions 1 and 7, counts, and
 * every token against the vocabulary; a shard that opens is read through the
 * loader (shuffled), with 3 tokens of stream context, to its last sequence. */
#include "fuzz_file.h"
#include "data/shards.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ax_shardset *s;
    if (ax_shards_open(&s, ax_fuzz_write("train_000.bin", data, size), 50257) != 0) return 0;
    ax_loader L;
    if (ax_loader_init(&L, s, 4, 1, 7) == 0) {
        int32_t seq[3 + 5];
        for (int64_t p = 0; p < L.nseq && p < 64; p++) ax_loader_get(&L, p, 3, seq);
        ax_loader_free(&L);
    }
    ax_shards_close(s);
    return 0;
}
