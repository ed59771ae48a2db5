#!/usr/bin/python3
"""Reload a Llama model directory written by axonn (e.g. after fine-tuning) in
Hugging Face transformers and greedy-decode, to compare with `axonn sample`.

    /usr/bin/python3 tests/ref/check_llama_hf.py DIR --tokens 1,2,3 --max-new 8 [--expect 1,2,3,...]

Prints the prompt and generated ids (comma-separated, as `axonn sample
--temperature 0 --prompt-tokens` prints them); with --expect, exits 1 unless equal.
"""
import argparse
import sys

import torch
from transformers import AutoModelForCausalLM

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--tokens", required=True)
ap.add_argument("--max-new", type=int, default=8)
ap.add_argument("--expect")
a = ap.parse_args()
m = AutoModelForCausalLM.from_pretrained(a.dir, torch_dtype=torch.float32, attn_implementation="eager")
prompt = torch.tensor([[int(t) for t in a.tokens.split(",")]])
out = m.generate(prompt, max_new_tokens=a.max_new, do_sample=False, pad_token_id=0)
got = ",".join(str(t) for t in out[0].tolist())
print(got)
if a.expect and a.expect != got:
    print("differs from --expect %s" % a.expect)
    sys.exit(1)
