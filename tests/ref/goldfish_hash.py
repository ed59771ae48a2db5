"""The goldfish hash and mask of src/memo/goldfish.h, re-implemented in plain
Python (stdlib only) as an independent reference for the tests."""
M64 = (1 << 64) - 1


def mix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def window_hash(ids):
    s = 0x676F6C6466697368
    for i in ids:
        s = mix64(s ^ (i & 0xFFFFFFFF))
    return s


def stream_mask(stream, k, h):
    """1 keeps the target stream[p], 0 drops it; the first h-1 tokens of the
    stream have no full window and are kept."""
    thresh = M64 // k
    return [1 if p < h - 1 or window_hash(stream[p - h + 1:p + 1]) >= thresh else 0 for p in range(len(stream))]


def mask_of(seq, k, h):
    """seq: T+1 ids with no stream before them; 1.0 keeps target i (= seq[i+1]),
    0.0 drops it. Its window is the h ids ending at it, seq[i+2-h .. i+1]; a
    target whose window would start before seq[0] is kept."""
    thresh = M64 // k
    return [1.0 if i + 2 - h < 0 or window_hash(seq[i + 2 - h:i + 2]) >= thresh else 0.0
            for i in range(len(seq) - 1)]
