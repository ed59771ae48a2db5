#!/usr/bin/python3
"""Writes tests/fixtures/st_ref.safetensors with the real `safetensors` package,
so that the C reader is checked against files produced by the reference
implementation rather than by our own writer.

Run with the system interpreter that has safetensors, torch and numpy:
    /usr/bin/python3 tests/ref/make_safetensors_fixture.py
"""
import os

import numpy as np
import torch
from safetensors.torch import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "st_ref.safetensors")


def main():
    arrays = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(0.5),
        # 65504 is the largest finite half; 6e-08 rounds to the smallest
        # subnormal half, 2^-24.
        "b": np.array([1.0, -2.5, 65504.0, 6e-08], dtype=np.float16),
        "d": np.array([[1, 2], [3, -4]], dtype=np.int32),
    }
    # numpy has no bfloat16, so the whole file is written through the torch
    # front end of safetensors (the same Rust serializer as safetensors.numpy).
    tensors = {k: torch.from_numpy(v) for k, v in arrays.items()}
    tensors["c"] = torch.tensor([1.0, -3.0, 0.15625], dtype=torch.bfloat16)
    save_file(tensors, OUT, metadata={"format": "pt"})

    back = load_file(OUT)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v), k
    assert float(back["b"][3]) == 2.0 ** -24
    print(f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
