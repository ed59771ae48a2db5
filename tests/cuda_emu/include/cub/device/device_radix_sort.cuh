/* cub's DeviceRadixSort::SortPairs on the host: a stable sort of the pairs by
 * the key bits [begin_bit, end_bit), as the radix sort is, queued like a
 * kernel (emu_enqueue); the temporary storage query answers one byte. */
#pragma once
#include "cuda_runtime.h"
#include <vector>
namespace cub {
struct DeviceRadixSort {
    template <class K, class V>
    static cudaError_t SortPairs(void *tmp, size_t &tmp_bytes, const K *kin, K *kout, const V *vin, V *vout, int n,
                                 int begin_bit = 0, int end_bit = (int)sizeof(K) * 8, cudaStream_t s = 0) {
        if (!tmp) {
            tmp_bytes = 1;
            return cudaSuccess;
        }
        unsigned long long mask =
            end_bit - begin_bit >= 64 ? ~0ull : ((1ull << (end_bit - begin_bit)) - 1) << begin_bit;
        emu_enqueue(s, [=] {
            emu_count("sort");
            std::vector<int> at(n);
            for (int i = 0; i < n; i++) at[i] = i;
            std::stable_sort(at.begin(), at.end(), [&](int a, int b) {
                return ((unsigned long long)kin[a] & mask) < ((unsigned long long)kin[b] & mask);
            });
            std::vector<K> k(n);
            std::vector<V> v(n);
            for (int i = 0; i < n; i++) k[i] = kin[at[i]], v[i] = vin[at[i]];
            std::copy(k.begin(), k.end(), kout);
            std::copy(v.begin(), v.end(), vout);
        });
        return cudaSuccess;
    }
};
} // namespace cub
