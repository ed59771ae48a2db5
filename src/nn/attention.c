#include "nn/attention.h"
#include "backend/backend.h"

size_t ax_attention_scratch(int T, int hd) { return ax_be()->attention_scratch(T, hd); }

void ax_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int Hl, int KVl, int hd, ax_dtype dt,
                          float *scratch, int nthr) {
    ax_be()->attention_forward(out, lse, qkv, B, T, Hl, KVl, hd, dt, scratch, nthr);
}

void ax_attention_backward(float *dqkv, const float *dout, const void *out, const float *lse, const void *qkv, int B,
                           int T, int Hl, int KVl, int hd, ax_dtype dt, float *scratch, int nthr) {
    ax_be()->attention_backward(dqkv, dout, out, lse, qkv, B, T, Hl, KVl, hd, dt, scratch, nthr);
}

void ax_attention_decode(float *out, const float *qkv, float *kc, float *vc, const int *len, int nb, int Hl, int KVl,
                         int hd, int Tmax) {
    ax_be()->attention_decode(out, qkv, kc, vc, len, nb, Hl, KVl, hd, Tmax);
}
