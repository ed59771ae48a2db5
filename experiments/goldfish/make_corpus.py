#!/usr/bin/env python3
"""Builds the corpora of the goldfish experiment from the fortunes (stdlib only).

    make_corpus.py OUTDIR [--canaries 100] [--repeats R] [--heldout 400] [--base-frac F] [--seed 1]

Records of /usr/share/games/fortunes (files without .dat/.u8) are split into
  canaries.jsonl  records of 350..700 characters, repeated R times in training
  heldout.jsonl   records never trained on (validation loss)
  train.jsonl     a share F of the other records once, plus R copies of each
                  canary, shuffled
"""
import argparse
import json
import os
import random

FORTUNES = "/usr/share/games/fortunes"


def records():
    out = []
    for name in sorted(os.listdir(FORTUNES)):
        path = os.path.join(FORTUNES, name)
        if name.startswith(".") or name.endswith((".dat", ".u8")) or not os.path.isfile(path):
            continue
        text = open(path, "rb").read().decode("utf-8", "replace")
        cur = []
        for line in text.splitlines(keepends=True):
            if line.rstrip("\r\n") == "%":
                if cur:
                    out.append("".join(cur))
                cur = []
            else:
                cur.append(line)
        if cur:
            out.append("".join(cur))
    return [r for r in out if r.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--canaries", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--heldout", type=int, default=400)
    ap.add_argument("--base-frac", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    recs = records()
    idx = list(range(len(recs)))
    rng.shuffle(idx)
    canary_idx = [i for i in idx if 350 <= len(recs[i]) <= 700][:a.canaries]
    chosen = set(canary_idx)
    heldout_idx = [i for i in idx if i not in chosen][:a.heldout]
    chosen |= set(heldout_idx)
    rest = [i for i in idx if i not in chosen]
    train = [recs[i] for i in sorted(rest[:int(len(rest) * a.base_frac)])]
    train += [recs[i] for i in canary_idx] * a.repeats
    rng.shuffle(train)
    os.makedirs(a.out, exist_ok=True)
    for name, docs in (("canaries", [recs[i] for i in canary_idx]), ("heldout", [recs[i] for i in heldout_idx]),
                       ("train", train)):
        with open(os.path.join(a.out, name + ".jsonl"), "w") as f:
            for d in docs:
                f.write(json.dumps({"text": d}) + "\n")
    print("corpus: %d records; %d canaries x %d repeats; %d held out; %d training documents"
          % (len(recs), len(canary_idx), a.repeats, len(heldout_idx), len(train)))


if __name__ == "__main__":
    main()
