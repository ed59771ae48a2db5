/* The CUDA attention selection (src/backend/cuda/attn_plan.h), on the CPU:
 * which path each ask takes for the architectures flash is built for and the
 * head sizes models use, the shared memory each flash kernel needs (worked
 * by hand from the kernels' layout), and that every fallback from flash or
 * auto carries its one-line reason. tests/flash_emu checks the layout
 * against what the kernels really touch. */
#include "backend/cuda/attn_plan.h"
#include "test.h"

#define MM    AX_CUDA_ATTN_MM
#define FLASH AX_CUDA_ATTN_FLASH
#define TILED AX_CUDA_ATTN_TILED

/* the path for (ask, bf16, hd, sm) with the table's limit; why must be set
 * exactly when a flash or auto ask got mm, and name the kernel that needs
 * the most (dk/dv, at every head size) */
static int path(int ask, int bf16, int hd, int sm, const char *want_in_why) {
    ax_attn_plan p = ax_attn_plan_make(ask, bf16, hd, sm, 0);
    int fell = (ask == AX_ATTN_ASK_FLASH || ask == AX_ATTN_ASK_AUTO) && bf16 && p.mode != FLASH;
    CHECK(fell == (p.why[0] != 0), "ask %d hd %d sm_%d: mode %d, why '%s'", ask, hd, sm, p.mode, p.why);
    if (want_in_why)
        CHECK(strstr(p.why, want_in_why) != NULL, "hd %d sm_%d: '%s' does not say '%s'", hd, sm, p.why, want_in_why);
    return p.mode;
}

static void parse(void) {
    CHECK(ax_attn_ask_parse(NULL) == AX_ATTN_ASK_DEFAULT, "unset");
    CHECK(ax_attn_ask_parse("") == AX_ATTN_ASK_DEFAULT, "empty");
    CHECK(AX_ATTN_ASK_DEFAULT == AX_ATTN_ASK_MM, "the default stays mm until flash passes on a GPU (docs/gpu.md)");
    CHECK(ax_attn_ask_parse("tiled") == AX_ATTN_ASK_TILED, "tiled");
    CHECK(ax_attn_ask_parse("mm") == AX_ATTN_ASK_MM, "mm");
    CHECK(ax_attn_ask_parse("flash") == AX_ATTN_ASK_FLASH, "flash");
    CHECK(ax_attn_ask_parse("auto") == AX_ATTN_ASK_AUTO, "auto");
    CHECK(ax_attn_ask_parse("Flash") == -1 && ax_attn_ask_parse("fa2") == -1, "unknown names");
}

/* bytes from the kernels' layout, by hand: BQ = 64 rows; a bf16 tile row is
 * (hd + 8) x 2 bytes, a probability row 72 x 2, an fp32 accumulator row
 * (hd + 4) x 4, two fp32 rows of 64; fwd adds 64 x 68 fp32 scores, the
 * backward 4 warps x 2 x 16 x 20 fp32 of scratch (10240 bytes) */
static void smem(void) {
    /* hd 64: fwd 64 (3 x 144 + 144 + 272 + 8) + 17408; dq 64 (4 x 144 + 144 + 272 + 8) + 10240;
     * dkv 64 (4 x 144 + 2 x 144 + 2 x 272 + 8) + 10240 */
    CHECK(ax_flash_smem(AX_FLASH_FWD, 64) == 72192, "fwd hd 64: %zu", ax_flash_smem(AX_FLASH_FWD, 64));
    CHECK(ax_flash_smem(AX_FLASH_DQ, 64) == 74240, "dq hd 64: %zu", ax_flash_smem(AX_FLASH_DQ, 64));
    CHECK(ax_flash_smem(AX_FLASH_DKV, 64) == 100864, "dkv hd 64: %zu", ax_flash_smem(AX_FLASH_DKV, 64));
    /* hd 128: rows of 272 and 528 bytes */
    CHECK(ax_flash_smem(AX_FLASH_FWD, 128) == 113152, "fwd hd 128: %zu", ax_flash_smem(AX_FLASH_FWD, 128));
    CHECK(ax_flash_smem(AX_FLASH_DQ, 128) == 123392, "dq hd 128: %zu", ax_flash_smem(AX_FLASH_DQ, 128));
    CHECK(ax_flash_smem(AX_FLASH_DKV, 128) == 166400, "dkv hd 128: %zu", ax_flash_smem(AX_FLASH_DKV, 128));
    /* the opt-in limits per block: A100 163 KB, consumer Ampere and Ada 99 KB, Hopper 227 KB */
    CHECK(ax_flash_smem_limit(80) == 166912 && ax_flash_smem_limit(86) == 101376 && ax_flash_smem_limit(89) == 101376 &&
              ax_flash_smem_limit(90) == 232448,
          "limits");
    CHECK(ax_flash_smem_limit(75) == 0 && ax_flash_smem_limit(70) == 0, "no flash below sm_80");
}

/* auto and flash by architecture and head size (GPT-2 64, Llama-3.2-1B 64, the 1.3B GPT 128) */
static void archs(void) {
    for (int ask = AX_ATTN_ASK_FLASH; ask <= AX_ATTN_ASK_AUTO; ask++) {
        for (int hd = 16; hd <= 128; hd += 16) {
            CHECK(path(ask, 1, hd, 80, NULL) == FLASH, "sm_80 hd %d", hd); /* dkv at 128: 166400 of 166912 */
            CHECK(path(ask, 1, hd, 90, NULL) == FLASH, "sm_90 hd %d", hd);
            /* sm_86/89: dkv needs 1024 hd + 35328 bytes, within 101376 up to hd 64 */
            int want = hd <= 64 ? FLASH : MM;
            CHECK(path(ask, 1, hd, 86, hd <= 64 ? NULL : "dk/dv kernel needs") == want, "sm_86 hd %d", hd);
            CHECK(path(ask, 1, hd, 89, hd <= 64 ? NULL : "sm_89 gives 101376") == want, "sm_89 hd %d", hd);
        }
        CHECK(path(ask, 1, 128, 86, "needs 166400 bytes") == MM, "the 1.3B GPT on sm_86");
        CHECK(path(ask, 1, 64, 75, "needs sm_80") == MM, "Turing");
        CHECK(path(ask, 1, 64, 70, "this device is sm_70") == MM, "Volta");
        /* head sizes the tiles cannot hold */
        CHECK(path(ask, 1, 72, 90, "head size 72") == MM, "hd 72");
        CHECK(path(ask, 1, 8, 90, "multiples of 16 up to 128") == MM, "hd 8");
        CHECK(path(ask, 1, 144, 90, "head size 144") == MM, "hd 144");
        CHECK(path(ask, 1, 256, 80, "head size 256") == MM, "hd 256");
        /* fp32 models: the SIMT tiles, whatever is asked, silently */
        CHECK(path(ask, 0, 64, 90, NULL) == TILED, "fp32");
    }
    CHECK(path(AX_ATTN_ASK_AUTO, 1, 72, 90, "AXONN_CUDA_ATTN=auto") == MM, "auto names itself");
    CHECK(path(AX_ATTN_ASK_FLASH, 1, 72, 90, "AXONN_CUDA_ATTN=flash") == MM, "flash names itself");
    /* mm and tiled as asked, with no line */
    CHECK(path(AX_ATTN_ASK_MM, 1, 64, 90, NULL) == MM && path(AX_ATTN_ASK_MM, 1, 72, 75, NULL) == MM, "mm");
    CHECK(path(AX_ATTN_ASK_TILED, 1, 64, 90, NULL) == TILED && path(AX_ATTN_ASK_TILED, 0, 64, 90, NULL) == TILED,
          "tiled");
    CHECK(path(AX_ATTN_ASK_DEFAULT, 1, 64, 90, NULL) == MM, "the default on Hopper");
}

/* the device's own opt-in figure wins over the table (a device with less, or an architecture not in it) */
static void device_limit(void) {
    ax_attn_plan p = ax_attn_plan_make(AX_ATTN_ASK_AUTO, 1, 128, 90, 166000);
    CHECK(p.mode == MM && strstr(p.why, "dk/dv kernel needs 166400 bytes") && strstr(p.why, "gives 166000 a block"),
          "sm_90 with 166000 bytes: '%s'", p.why);
    p = ax_attn_plan_make(AX_ATTN_ASK_AUTO, 1, 128, 95, 0);
    CHECK(p.mode == MM && strstr(p.why, "gives 0 a block") != NULL, "unknown sm_95 without a figure: '%s'", p.why);
    p = ax_attn_plan_make(AX_ATTN_ASK_AUTO, 1, 128, 95, 232448);
    CHECK(p.mode == FLASH, "unknown sm_95 with its figure: '%s'", p.why);
}

int main(void) {
    parse();
    smem();
    archs();
    device_limit();
    return ax_test_done("attn_plan");
}
