#!/usr/bin/env python3
"""Builds the corpora of the goldfish experiment from the fortunes (stdlib only).

    make_corpus.py OUTDIR [--kind fortunes|invented] [--canaries 100] [--repeats R]
                   [--heldout 400] [--base-frac F] [--seed 1]

Records of /usr/share/games/fortunes (files without .dat/.u8) are split into
  canaries.jsonl  the passages repeated R times in training
  heldout.jsonl   records never trained on (validation loss)
  train.jsonl     a share F of the other records once, plus R copies of each
                  canary, shuffled

--kind fortunes: the canaries are records of 350..700 characters, each copy a
document of its own (it starts right after <|endoftext|>).
--kind invented: the canaries are passages of 60..90 invented words (random
syllables: nothing in the rest of the corpus predicts them), and each copy is
pasted at a random word boundary inside a random other record, so it starts at
an arbitrary offset of the token stream, never at a document start.
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


SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def invented_passage(rng):
    words = []
    for _ in range(rng.randint(60, 90)):
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.3:
            w += rng.choice("rnslk")
        words.append(w)
    out = []
    for i, w in enumerate(words):
        out.append(w.capitalize() if i == 0 or out[-1].endswith(".") else w)
        if rng.random() < 0.08:
            out[-1] += rng.choice(".,")
    return " ".join(out) + ".\n"


def paste(host, passage, rng):
    """passage inside host at a random word boundary"""
    cuts = [i + 1 for i, ch in enumerate(host) if ch == " "] or [len(host)]
    at = rng.choice(cuts)
    return host[:at] + passage + host[at:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--kind", choices=("fortunes", "invented"), default="fortunes")
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
    canary_idx = [i for i in idx if 350 <= len(recs[i]) <= 700][:a.canaries] if a.kind == "fortunes" else []
    chosen = set(canary_idx)
    heldout_idx = [i for i in idx if i not in chosen][:a.heldout]
    chosen |= set(heldout_idx)
    rest = [i for i in idx if i not in chosen]
    train = [recs[i] for i in sorted(rest[:int(len(rest) * a.base_frac)])]
    if a.kind == "fortunes":
        canaries = [recs[i] for i in canary_idx]
        train += canaries * a.repeats
    else:
        canaries = [invented_passage(rng) for _ in range(a.canaries)]
        hosts = [recs[i] for i in rest[int(len(rest) * a.base_frac):]]
        train += [paste(rng.choice(hosts), c, rng) for c in canaries for _ in range(a.repeats)]
    rng.shuffle(train)
    os.makedirs(a.out, exist_ok=True)
    for name, docs in (("canaries", canaries), ("heldout", [recs[i] for i in heldout_idx]),
                       ("train", train)):
        with open(os.path.join(a.out, name + ".jsonl"), "w") as f:
            for d in docs:
                f.write(json.dumps({"text": d}) + "\n")
    print("corpus (%s): %d records; %d canaries x %d repeats; %d held out; %d training documents"
          % (a.kind, len(recs), len(canaries), a.repeats, len(heldout_idx), len(train)))


if __name__ == "__main__":
    main()
