#!/usr/bin/python3
"""Sharded Hugging Face checkpoints of tests/fixtures/llama_tiny for the loader tests.

Run by hand from the repository root (outputs are committed):
    /usr/bin/python3 tests/ref/make_sharded_fixtures.py

Writes tests/fixtures/llama_sharded/{f32,bf16,f16}/ with save_pretrained and a
small max_shard_size, so each is config.json, model.safetensors.index.json and
2-3 shards exactly as transformers publishes big models:
  f32   the weights of llama_tiny/model.safetensors unchanged (a loader must
        give bitwise the parameters of the single file);
  bf16, f16  the weights rounded once to values both formats hold exactly
        (bf16, then f16, asserted), so the two load bitwise equal to each other
        and within bf16 rounding of the f32 weights.
Each directory is loaded back with from_pretrained and checked.
"""
import os

import torch
from transformers import LlamaForCausalLM

ROOT = os.path.join(os.path.dirname(__file__), "..", "fixtures")
SRC, OUT = os.path.join(ROOT, "llama_tiny"), os.path.join(ROOT, "llama_sharded")

model = LlamaForCausalLM.from_pretrained(SRC, torch_dtype=torch.float32)
model.config._name_or_path = "llama_tiny"  # not this machine's path: the fixtures name nothing outside the repository
ref = {n: p.detach().clone() for n, p in model.state_dict().items()}
model.save_pretrained(os.path.join(OUT, "f32"), safe_serialization=True, max_shard_size="80KB")

with torch.no_grad():
    for p in model.parameters():
        r = p.to(torch.bfloat16).to(torch.float16).float()
        assert torch.equal(r.to(torch.bfloat16).float(), r) and torch.equal(r.half().float(), r)
        p.copy_(r)
rounded = {n: p.detach().clone() for n, p in model.state_dict().items()}
for name, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
    model.to(dt).save_pretrained(os.path.join(OUT, name), safe_serialization=True, max_shard_size="60KB")

for name, want in (("f32", ref), ("bf16", rounded), ("f16", rounded)):
    d = os.path.join(OUT, name)
    back = LlamaForCausalLM.from_pretrained(d, torch_dtype=torch.float32).state_dict()
    assert all(torch.equal(back[n], want[n]) for n in want), name
    shards = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    assert len(shards) >= 2 and not os.path.exists(os.path.join(d, "model.safetensors")), (name, shards)
    print("%s: %s" % (d, ", ".join(shards)))
