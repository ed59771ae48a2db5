/* safetensors: the 8-byte length, the JSON header (dtypes, shapes, offsets,
 * __metadata__), and reading every tensor that converts to float. */
#include "fuzz_file.h"
#include "io/safetensors.h"
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ax_st_file f;
    if (ax_st_open(&f, ax_fuzz_write("m.safetensors", data, size)) != 0) return 0;
    for (int i = 0; i < f.n; i++) {
        const ax_st_tensor *t = &f.t[i];
        if (t->numel > (1 << 16)) continue;
        float *buf = malloc((size_t)(t->numel ? t->numel : 1) * sizeof(float));
        ax_st_read_f32(&f, t, buf, t->numel);
        free(buf);
    }
    ax_st_close(&f);
    return 0;
}
