#!/usr/bin/env python3
"""How often the goldfish loss supervised a token it is meant to drop (stdlib only).

    leak.py AXONN OUT [T] [K] [H]   (defaults 128, 4, 13: the experiment's)

Finds every occurrence of each canary of OUT/data/canaries.jsonl in the
training stream OUT/train/train_*.bin (the canary's tokens without its first
and last 3, which may merge with the text around it), and, for the canary
tokens the goldfish hash of the stream drops (tests/ref/goldfish_hash.py),
counts the occurrences at which training supervised them anyway:
  - window rule (before): the first h-1 targets of every T-token window are
    always kept, so a dropped token is supervised whenever an occurrence puts
    it there;
  - stream rule (now): the hash reaches back before the window, so a dropped
    token is never supervised.
Prints one JSON object.
"""
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ref"))
from goldfish_hash import stream_mask  # noqa: E402


def read_stream(pattern):
    files = []
    for p in sorted(glob.glob(pattern)):
        raw = open(p, "rb").read()
        magic, version, n = struct.unpack("<3i", raw[:12])
        width = 2 if version == 1 else 4
        files.append(list(struct.unpack("<%d%s" % (n, "H" if width == 2 else "I"), raw[1024:1024 + width * n])))
    return files


def encode(axonn, tok, text):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        out = subprocess.run([axonn, "tokenizer", "encode", "--tokenizer", tok, f.name],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    return [int(x) for x in out.strip().split(",") if x]


def main():
    axonn, out = sys.argv[1], sys.argv[2]
    T, k, h = (int(a) for a in (sys.argv[3:6] + ["128", "4", "13"][len(sys.argv[3:6]):]))
    files = read_stream(os.path.join(out, "train", "train_*.bin"))
    stream, window_pos = [], []
    for f in files:                      # position of each token inside its training window, -1: never a target
        stream += f
        pos = [-1] * len(f)
        for s in range((len(f) - 1) // T):
            for i in range(T):
                pos[s * T + i + 1] = i
        window_pos += pos
    mask = stream_mask(stream, k, h)
    tok = os.path.join(out, "tokenizer.json")
    index = {}
    for i in range(len(stream) - 1):
        index.setdefault((stream[i], stream[i + 1]), []).append(i)
    dropped = leaked = occurrences = canaries = 0
    per_token = []
    for line in open(os.path.join(out, "data", "canaries.jsonl")):
        ids = encode(axonn, tok, json.loads(line)["text"])[3:-3]
        if len(ids) < h + 2:
            continue
        starts = [i for i in index.get((ids[0], ids[1]), []) if stream[i:i + len(ids)] == ids]
        if not starts:
            continue
        canaries += 1
        occurrences += len(starts)
        for j in range(h - 1, len(ids)):      # windows inside the canary: the same hash at every occurrence
            if mask[starts[0] + j]:
                continue
            sup = sum(1 for s in starts if 0 <= window_pos[s + j] < h - 1)
            dropped += 1
            leaked += sup > 0
            per_token.append(sup)
    print(json.dumps({
        "T": T, "k": k, "h": h, "canaries_found": canaries, "canary_occurrences": occurrences,
        "dropped_canary_tokens": dropped,
        "window_rule": {"tokens_supervised_at_least_once": leaked,
                        "share": leaked / dropped if dropped else 0.0,
                        "mean_supervised_occurrences": sum(per_token) / dropped if dropped else 0.0,
                        "mean_occurrences": occurrences / canaries if canaries else 0.0},
        "stream_rule": {"tokens_supervised_at_least_once": 0, "share": 0.0}}))


if __name__ == "__main__":
    main()
