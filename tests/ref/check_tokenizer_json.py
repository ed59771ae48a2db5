#!/usr/bin/env python3
"""Checks a tokenizer.json written by the C tokenizer (ax_tok_save_json)
against Hugging Face `tokenizers`: the file must load with
Tokenizer.from_file, and encode every text of TEXTFILE to the ids the C side
wrote next to it (TEXTFILE: JSON lines {"text": ..., "ids": [...]}, encoded
with special tokens allowed, as `tokenizers` always matches them, and with
the post-processor's template), and decode those ids back to the text.

With --retrain TEXTS.jsonl (the texts the C trainer was given, one document
per line as {"text": ...}), it also retrains the same vocabulary with a plain,
recount-everything BPE written here and asserts the merges are identical:
highest pair count first, ties to the lowest (left id, right id), byte ids in
GPT-2's order, a merge that remakes an existing token reusing its id.

    AXONN_TOK_DUMP=/tmp/tokdump build/tests/test_tokenizer
    python3 tests/ref/check_tokenizer_json.py /tmp/tokdump/gpt2.json /tmp/tokdump/gpt2_ids.jsonl
    python3 tests/ref/check_tokenizer_json.py /tmp/tokdump/trained.json /tmp/tokdump/trained_ids.jsonl \\
        --retrain tests/fixtures/tokenizer/texts.jsonl
    AXONN_TOK_DUMP=/tmp/tokdump build/tests/test_tokenizer_hf      # Llama-3 style, saved again
    python3 tests/ref/check_tokenizer_json.py /tmp/tokdump/llama3.json /tmp/tokdump/llama3_ids.jsonl

Prints OK or the first differences and exits 1.
"""
import argparse
import collections
import json
import sys

import tokenizers
from tokenizers import Tokenizer, pre_tokenizers

EOT = "<|endoftext|>"


def byte_level_tables():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, {chr(c): b for b, c in zip(bs, cs)}


def check_ids(tk, textfile):
    bad = 0
    rows = [json.loads(line) for line in open(textfile, encoding="utf-8")]
    # what the post-processor puts before a text (Llama-3: <|begin_of_text|>)
    prefix = tk.decode(tk.encode("").ids, skip_special_tokens=False)
    for i, row in enumerate(rows):
        got = tk.encode(row["text"]).ids
        back = tk.decode(row["ids"], skip_special_tokens=False)
        if got != row["ids"] or back != prefix + row["text"]:
            bad += 1
            if bad <= 3:
                print(f"text {i} {row['text'][:60]!r}:\n  C          {row['ids'][:20]}\n  tokenizers {got[:20]}"
                      f"\n  decoded ok: {back == row['text']}")
    return len(rows), bad


def naive_train(docs, vocab_size):
    """Plain BPE: recount every pair after every merge."""
    order, char_byte = byte_level_tables()
    byte_id = {b: i for i, b in enumerate(order)}
    split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    counts = collections.Counter()
    for doc in docs:
        for part in doc.split(EOT):
            for piece, _ in split.pre_tokenize_str(part):
                counts[bytes(char_byte[c] for c in piece)] += 1
    words = [[list(byte_id[b] for b in w), n] for w, n in counts.items()]
    tokens = {bytes([b]): i for i, b in enumerate(order)}
    by_id = {i: t for t, i in tokens.items()}
    merges = []
    while len(tokens) < vocab_size - 1:
        pairs = collections.Counter()
        for syms, n in words:
            for p in zip(syms, syms[1:]):
                pairs[p] += n
        if not pairs:
            break
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        new = by_id[a] + by_id[b]
        z = tokens.setdefault(new, len(tokens))
        by_id[z] = new
        merges.append((a, b))
        for w in words:
            syms, out, i = w[0], [], 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(z)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            w[0] = out
    return merges, by_id


def check_retrain(path, texts_path):
    model = json.load(open(path, encoding="utf-8"))["model"]
    docs = [json.loads(line)["text"] for line in open(texts_path, encoding="utf-8")]
    vocab_size = max(model["vocab"].values()) + 1
    merges, by_id = naive_train(docs, vocab_size)
    order, _ = byte_level_tables()
    to_char = {b: c for c, b in byte_level_tables()[1].items()}
    as_str = lambda i: "".join(to_char[x] for x in by_id[i])
    want = [f"{as_str(a)} {as_str(b)}" for a, b in merges]
    got = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            print(f"merge {i}: C {g!r}, reference {w!r}")
            return False
    if len(got) != len(want):
        print(f"{len(got)} merges from C, {len(want)} from the reference")
        return False
    print(f"retrained: {len(want)} merges identical")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("textfile")
    ap.add_argument("--retrain", metavar="TEXTS.jsonl")
    args = ap.parse_args()
    tk = Tokenizer.from_file(args.file)
    n, bad = check_ids(tk, args.textfile)
    ok = bad == 0
    print(f"tokenizers {tokenizers.__version__}: {n - bad} of {n} texts encode and decode identically")
    if args.retrain:
        ok = check_retrain(args.file, args.retrain) and ok
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
