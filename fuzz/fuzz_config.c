/* config.json of a model (Hugging Face GPT2Config keys). */
#include "fuzz_file.h"
#include "model/gpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ax_gpt_config c;
    ax_gpt_config_read(&c, ax_fuzz_write("config.json", data, size));
    return 0;
}
