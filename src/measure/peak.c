#include "measure/peak.h"
#include <string.h>

/* A row matches a device name holding each of its words, whole: the name is
 * cut at spaces and dashes ("NVIDIA A100-SXM4-80GB"), so that "L4" is not
 * found in "L40S". The first match counts: variants before their family. */
static const struct {
    const char *words[2];
    double bf16, fp32; /* TFLOP/s */
} rows[] = {
    {{"H100", "PCIe"}, 756, 51}, {{"H100", "NVL"}, 835, 60}, {{"H100"}, 989, 67}, /* SXM5 */
    {{"H200", "NVL"}, 835, 60},  {{"H200"}, 989, 67},        {{"GH200"}, 989, 67}, {{"A100"}, 312, 19.5},
    {{"L40S"}, 362, 91.6},       {{"L4"}, 121, 30.3},        {{"A10"}, 125, 31.2},
};

static int has_word(const char *name, const char *w) {
    size_t n = strlen(w);
    for (const char *p = name; (p = strstr(p, w)); p++) {
        int starts = p == name || p[-1] == ' ' || p[-1] == '-', ends = p[n] == 0 || p[n] == ' ' || p[n] == '-';
        if (starts && ends) return 1;
    }
    return 0;
}

double ax_peak_flops(const char *device, ax_dtype t) {
    if (!device) return 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        int all = 1;
        for (int k = 0; k < 2 && rows[i].words[k]; k++) all &= has_word(device, rows[i].words[k]);
        if (all) return 1e12 * (t == AX_BF16 ? rows[i].bf16 : rows[i].fp32);
    }
    return 0;
}
