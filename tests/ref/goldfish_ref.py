#!/usr/bin/python3
"""Goldfish-loss reference for the axonn.c tests (run by hand; output committed).

    /usr/bin/python3 tests/ref/goldfish_ref.py

Reads tests/fixtures/gpt_tiny/{model.safetensors,config.json,ref.safetensors},
computes the goldfish mask of batch 0 with an independent Python version of the
hash in src/memo/goldfish.h (goldfish_hash.py; k = 3, h = 4: the tiny
fixture's sequences are only 12 tokens, with no stream before them), and
writes tests/fixtures/gpt_tiny/goldfish.safetensors:
  mask F32 [B, T], loss F32 [1] (mean over kept targets), grad.<name> F32.
"""
import os
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_ref  # noqa: E402
from goldfish_hash import mask_of  # noqa: E402

K, H = 3, 4


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
