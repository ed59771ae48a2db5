/* Mock WMMA. A fragment holds the whole 16x16 tile, and the warp-collective
 * calls do their work once, in lane 0's fragments: the kernels never index
 * fragment elements, so every lane's copy would be the same, and computing
 * it 32 times made the emulation of T = 2048 take half an hour. Loads and
 * stores open with a warp barrier (every lane has written what is loaded,
 * and read what is overwritten). */
#pragma once
#include <type_traits>
#include "backend/kmath.h"
void emu_syncwarp();
int emu_lane();
struct __nv_bfloat16 {
    uint16_t x;
};
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class L = void> struct fragment { float v[256]; };
template <class Use, class L>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, __nv_bfloat16, L> &f, const __nv_bfloat16 *p, unsigned ld) {
    emu_syncwarp();
    if (emu_lane()) return;
    bool row = std::is_same<L, row_major>::value;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++) f.v[r * 16 + c] = ax_bf16_widen(p[row ? r * ld + c : c * ld + r].x);
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p, unsigned ld, layout_t l) {
    emu_syncwarp();
    if (emu_lane()) return;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++) f.v[r * 16 + c] = l == mem_row_major ? p[r * ld + c] : p[c * ld + r];
}
inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f, unsigned ld, layout_t l) {
    emu_syncwarp();
    if (emu_lane()) return;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++) (l == mem_row_major ? p[r * ld + c] : p[c * ld + r]) = f.v[r * 16 + c];
}
inline void fill_fragment(fragment<accumulator, 16, 16, 16, float> &f, float x) {
    for (int i = 0; i < 256; i++) f.v[i] = x;
}
template <class LA, class LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                     const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
                     const fragment<accumulator, 16, 16, 16, float> &c) {
    if (emu_lane()) return;
    /* each sum in k order from c's element, the loops over n innermost so that they vectorise */
    float t[256];
    for (int i = 0; i < 256; i++) t[i] = c.v[i];
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 16; k++)
            for (int n = 0; n < 16; n++) t[r * 16 + n] += a.v[r * 16 + k] * b.v[k * 16 + n];
    for (int i = 0; i < 256; i++) d.v[i] = t[i];
}
} // namespace wmma
} // namespace nvcuda
