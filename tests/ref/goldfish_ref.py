#!/usr/bin/python3
"""Goldfish-loss reference for the axonn.c tests (run by hand; output committed).

    /usr/bin/python3 tests/ref/goldfish_ref.py

Reads tests/fixtures/gpt_tiny/{model.safetensors,config.json,ref.safetensors},
computes the goldfish mask of batch 0 with an independent Python version of the
hash in src/memo/goldfish.h (k = 3, h = 4: the tiny fixture's sequences are only
12 tokens), and writes tests/fixtures/gpt_tiny/goldfish.safetensors:
  mask F32 [B, T], loss F32 [1] (mean over kept targets), grad.<name> F32.
"""
import os
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_ref  # noqa: E402

M64 = (1 << 64) - 1
K, H = 3, 4


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


def mask_of(seq, k, h):
    """seq: T+1 ids; 1.0 keeps target i (= seq[i+1]), 0.0 drops it."""
    tg = seq[1:]
    thresh = M64 // k
    return [1.0 if i < h - 1 or window_hash(tg[i - h + 1:i + 1]) >= thresh else 0.0
            for i in range(len(tg))]


def main():
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "gpt_tiny")
    params, cfg = gpt_ref.load_model_dir(d)
    batch = load_file(os.path.join(d, "ref.safetensors"))["tokens"][0]
    mask = torch.tensor([mask_of(row.tolist(), K, H) for row in batch])
    leaves = {n: v.clone().requires_grad_(True) for n, v in params.items()}
    logits = gpt_ref.forward(leaves, cfg, batch[:, :-1].long())
    V = logits.shape[-1]
    per = torch.nn.functional.cross_entropy(logits.reshape(-1, V), batch[:, 1:].long().reshape(-1), reduction="none")
    loss = (per * mask.reshape(-1)).sum() / mask.sum()
    loss.backward()
    out = {"mask": mask.contiguous(), "loss": loss.detach().reshape(1)}
    for n, v in leaves.items():
        out["grad." + n] = v.grad.detach().contiguous()
    save_file(out, os.path.join(d, "goldfish.safetensors"), metadata={"k": str(K), "h": str(H)})
    print("kept %d of %d targets, masked loss %.7f" % (int(mask.sum()), mask.numel(), loss.item()))


if __name__ == "__main__":
    main()
