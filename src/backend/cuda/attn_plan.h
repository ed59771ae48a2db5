/* Which attention path a CUDA step takes, decided on the host from what
 * AXONN_CUDA_ATTN asks, the model's GEMM precision, the head size and the
 * device: plain C, so that tests/test_attn_plan.c checks the decisions for
 * each architecture on a machine without a GPU.
 *
 *   ax_attn_plan p = ax_attn_plan_make(AX_ATTN_ASK_AUTO, 1, 128, 86, 0);
 *   // p.mode == AX_CUDA_ATTN_MM; p.why says flash's dk/dv kernel needs
 *   // 162.5 KB of shared memory at head size 128 and sm_86 gives 99 KB
 *
 * The rules: fp32 models take the SIMT tiles (attention.cu) whatever is
 * asked. bf16 models take what is asked: tiled, mm (attention_mm.cu) or
 * flash (attention_flash.cu); auto is flash where it can run, else mm. Flash
 * runs where the device is sm_80 or newer (bf16 WMMA), the head size is a
 * multiple of 16 up to 128 (its tiles hold whole 16-wide slices of a head)
 * and each of its three kernels' shared memory fits the device's opt-in
 * limit per block; where flash or auto was asked and one of those fails,
 * the mm path runs and why names the reason (the backend logs it once).
 * Without AXONN_CUDA_ATTN the ask is AX_ATTN_ASK_DEFAULT: mm, until flash
 * has passed the GPU check's comparison with the CPU (docs/gpu.md). */
#ifndef AX_BACKEND_CUDA_ATTN_PLAN_H
#define AX_BACKEND_CUDA_ATTN_PLAN_H
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* the paths */
enum { AX_CUDA_ATTN_TILED, AX_CUDA_ATTN_MM, AX_CUDA_ATTN_FLASH };
/* what AXONN_CUDA_ATTN asks for */
enum { AX_ATTN_ASK_TILED, AX_ATTN_ASK_MM, AX_ATTN_ASK_FLASH, AX_ATTN_ASK_AUTO };
#define AX_ATTN_ASK_DEFAULT AX_ATTN_ASK_MM
#define AX_ATTN_ASK_NAMES   "tiled, mm, flash or auto"

/* AXONN_CUDA_ATTN's value as an ask; unset or empty: the default; -1: none of the names */
static inline int ax_attn_ask_parse(const char *s) {
    static const char *names[] = {"tiled", "mm", "flash", "auto"};
    if (!s || !*s) return AX_ATTN_ASK_DEFAULT;
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* The flash kernels' tiles (attention_flash.cu): a block of 4 warps owns
 * AX_FLASH_BQ rows, 16 per warp; row strides padded off the bank stride and
 * to WMMA's multiples (4 floats, 8 bf16). */
#define AX_FLASH_BQ      64
#define AX_FLASH_LDS     (AX_FLASH_BQ + 4)                          /* fp32 score rows */
#define AX_FLASH_LDP     (AX_FLASH_BQ + 8)                          /* bf16 probability rows */
#define AX_FLASH_LDW     (16 + 4)                                   /* fp32 rows of a warp's 16 x 16 scratch */
#define AX_FLASH_SCRATCH (AX_FLASH_BQ / 16 * 2 * 16 * AX_FLASH_LDW) /* floats: a pair of chunks per warp */
enum { AX_FLASH_FWD, AX_FLASH_DQ, AX_FLASH_DKV, AX_FLASH_KERNELS };

/* bytes of dynamic shared memory: nb bf16 tiles (BQ, hd + 8), np bf16
 * probability tiles (BQ, LDP), na fp32 accumulators (BQ, hd + 4), nr fp32
 * rows of BQ, and nf more floats */
static inline size_t ax_flash_smem_of(int hd, int nb, int np, int na, int nr, int nf) {
    return (size_t)AX_FLASH_BQ * (nb * (hd + 8) * 2 + np * AX_FLASH_LDP * 2 + na * (hd + 4) * 4 + nr * 4) +
           (size_t)nf * 4;
}

/* what each kernel lays out (the kernels' own partition of ax_fsm follows
 * these counts): fwd Q K V, P, O, two rows, the scores; dq Q dO K V, dS,
 * dQ, two rows, the scratch; dkv K V Q dO, P dS, dK dV, two rows, the scratch */
static inline size_t ax_flash_smem(int kernel, int hd) {
    switch (kernel) {
    case AX_FLASH_FWD: return ax_flash_smem_of(hd, 3, 1, 1, 2, AX_FLASH_BQ * AX_FLASH_LDS);
    case AX_FLASH_DQ: return ax_flash_smem_of(hd, 4, 1, 1, 2, AX_FLASH_SCRATCH);
    default: return ax_flash_smem_of(hd, 4, 2, 2, 2, AX_FLASH_SCRATCH);
    }
}
static inline const char *ax_flash_kernel_name(int kernel) {
    return kernel == AX_FLASH_FWD ? "forward" : kernel == AX_FLASH_DQ ? "backward dq" : "backward dk/dv";
}

/* the opt-in shared memory per block (bytes) of compute capability sm (10
 * major + minor) as CUDA documents it; 0 where flash cannot run (below
 * sm_80) or the architecture is not in the table */
static inline size_t ax_flash_smem_limit(int sm) {
    switch (sm) {
    case 80:
    case 87: return (size_t)163 << 10; /* A100, Orin */
    case 86:
    case 89:
    case 120: return (size_t)99 << 10; /* consumer Ampere, Ada, Blackwell */
    case 90:
    case 100: return (size_t)227 << 10; /* H100/H200, B200 */
    default: return 0;
    }
}

/* the largest head size flash takes, and its granularity */
#define AX_FLASH_HD_MAX  128
#define AX_FLASH_HD_STEP 16

typedef struct {
    int mode;      /* AX_CUDA_ATTN_* */
    char why[240]; /* where flash or auto was asked and mm runs instead: why, one line; else "" */
} ax_attn_plan;

/* the path for ask (AX_ATTN_ASK_*), a bf16 model or not, head size hd, on
 * compute capability sm whose opt-in shared memory per block is optin bytes
 * (0: the table's figure for sm) */
static inline ax_attn_plan ax_attn_plan_make(int ask, int bf16, int hd, int sm, size_t optin) {
    ax_attn_plan p = {AX_CUDA_ATTN_MM, ""};
    if (!bf16 || ask == AX_ATTN_ASK_TILED) p.mode = AX_CUDA_ATTN_TILED;
    if (!bf16 || ask == AX_ATTN_ASK_TILED || ask == AX_ATTN_ASK_MM) return p;
    const char *asked = ask == AX_ATTN_ASK_AUTO ? "AXONN_CUDA_ATTN=auto" : "AXONN_CUDA_ATTN=flash";
    if (sm < 80) {
        snprintf(p.why, sizeof p.why, "%s: flash attention needs sm_80 or newer (bf16 WMMA), this device is sm_%d; mm",
                 asked, sm);
        return p;
    }
    if (hd % AX_FLASH_HD_STEP || hd < AX_FLASH_HD_STEP || hd > AX_FLASH_HD_MAX) {
        snprintf(p.why, sizeof p.why, "%s: head size %d: flash attention takes multiples of %d up to %d; mm", asked, hd,
                 AX_FLASH_HD_STEP, AX_FLASH_HD_MAX);
        return p;
    }
    size_t limit = optin ? optin : ax_flash_smem_limit(sm);
    int big = 0; /* the kernel that needs the most names the fallback */
    for (int k = 1; k < AX_FLASH_KERNELS; k++)
        if (ax_flash_smem(k, hd) > ax_flash_smem(big, hd)) big = k;
    if (ax_flash_smem(big, hd) > limit) {
        snprintf(p.why, sizeof p.why,
                 "%s: flash attention's %s kernel needs %zu bytes of shared memory at head size %d, sm_%d gives %zu "
                 "a block; mm",
                 asked, ax_flash_kernel_name(big), ax_flash_smem(big, hd), hd, sm, limit);
        return p;
    }
    p.mode = AX_CUDA_ATTN_FLASH;
    return p;
}
#endif
