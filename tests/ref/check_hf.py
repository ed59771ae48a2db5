#!/usr/bin/python3
"""Check a GPT-2 model directory (model.safetensors + config.json, e.g. written by
the C engine) against transformers' GPT2LMHeadModel and the gpt_ref.py model.

    /usr/bin/python3 tests/ref/check_hf.py DIR [--tokens 1,2,3] [--c-logits FILE] [--tol 1e-4]

--tokens    comma-separated token ids (default: 16 random ids, seed 0, at most n_positions)
--c-logits  raw little-endian float32 [T, V] logits from the C engine for the same tokens
Prints the max abs logit differences; prints OK, or exits 1 when any exceeds --tol.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_ref  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--tokens", default=None)
    ap.add_argument("--c-logits", default=None)
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args()

    import transformers
    torch.set_num_threads(1)
    print("torch %s, transformers %s" % (torch.__version__, transformers.__version__))

    try:
        params, cfg = gpt_ref.load_model_dir(args.dir)
    except (OSError, ValueError, KeyError) as e:
        print("cannot load %s: %s" % (args.dir, e))
        return 1
    V, P = cfg["vocab_size"], cfg["n_positions"]
    if args.tokens:
        toks = [int(t) for t in args.tokens.replace(" ", "").split(",") if t != ""]
    else:
        g = torch.Generator().manual_seed(0)
        toks = torch.randint(0, V, (min(16, P),), generator=g).tolist()
    if not toks or any(t < 0 or t >= V for t in toks) or len(toks) > P:
        print("bad tokens: need 1..%d ids in [0, %d)" % (P, V))
        return 2
    idx = torch.tensor([toks], dtype=torch.int64)
    T = len(toks)
    print("tokens (%d): %s" % (T, ",".join(str(t) for t in toks)))

    with torch.no_grad():
        ref = gpt_ref.forward(params, cfg, idx)[0]
        hf = gpt_ref.hf_model_from_dir(args.dir)(input_ids=idx).logits[0].to(torch.float32)
    worst = float((hf - ref).abs().max())
    print("max abs logit diff, gpt_ref vs transformers: %.3e" % worst)

    if args.c_logits:
        raw = np.fromfile(args.c_logits, dtype="<f4")
        if raw.size != T * V:
            print("%s: %d floats, expected T*V = %d*%d = %d" % (args.c_logits, raw.size, T, V, T * V))
            return 1
        c = torch.from_numpy(raw.reshape(T, V).astype(np.float32))
        d_ref = float((c - ref).abs().max())
        d_hf = float((c - hf).abs().max())
        print("max abs logit diff, C engine vs gpt_ref: %.3e" % d_ref)
        print("max abs logit diff, C engine vs transformers: %.3e" % d_hf)
        worst = max(worst, d_ref, d_hf)

    if not np.isfinite(worst) or worst > args.tol:
        print("FAIL (max diff %.3e > tol %.1e)" % (worst, args.tol))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
