#!/usr/bin/python3
"""Llama reference for the axonn.c tests, from Hugging Face transformers.

Run by hand (outputs are committed):
    /usr/bin/python3 tests/ref/llama_ref.py [OUTDIR]
    /usr/bin/python3 tests/ref/llama_ref.py --mqa [OUTDIR]

Writes OUTDIR (default tests/fixtures/llama_tiny/, with --mqa
tests/fixtures/llama_mqa/): config.json and
model.safetensors (as LlamaForCausalLM.save_pretrained writes them), and
ref.safetensors: the token batch, the logits, the mean loss and the gradient
of every parameter ("grad." + its Hugging Face name) at those weights.

The model has odd sizes on purpose: grouped-query attention (6 query heads
over 2 key/value heads), an MLP width that is not 4x, untied embeddings, a
vocabulary no grid divides, rope_theta 500 with Llama-3 frequency scaling
(at head size 8 its smoothed middle band and its rescaled low band both
occur), and RMSNorm weights away from 1. --mqa: the same with 4 query heads
over one key/value head (hidden 32, MLP 48), so that on every Y > 1 the
key/value head is replicated over the Y shards.
"""
import os
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM
from safetensors.torch import save_file

MQA = "--mqa" in sys.argv[1:]
args = [a for a in sys.argv[1:] if a != "--mqa"]
OUT = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "fixtures", "llama_mqa" if MQA else "llama_tiny")
SEED, B, T = 4321, 4, 12
C, F, H, KV = (32, 48, 4, 1) if MQA else (48, 80, 6, 2)

cfg = LlamaConfig(
    vocab_size=101, hidden_size=C, intermediate_size=F, num_hidden_layers=2,
    num_attention_heads=H, num_key_value_heads=KV, max_position_embeddings=16,
    rms_norm_eps=1e-6, rope_theta=500.0, tie_word_embeddings=False, hidden_act="silu",
    rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8},
    attention_bias=False, mlp_bias=False, bos_token_id=100, eos_token_id=100,
    torch_dtype="float32")
cfg._attn_implementation = "eager"
torch.manual_seed(SEED)
model = LlamaForCausalLM(cfg).float()
with torch.no_grad():   # norm weights away from 1, so their gradients matter
    for n, p in model.named_parameters():
        if n.endswith("norm.weight"):
            p.copy_(1.0 + 0.1 * torch.randn_like(p))
os.makedirs(OUT, exist_ok=True)
model.save_pretrained(OUT, safe_serialization=True)

gen = torch.Generator().manual_seed(SEED + 1)
tokens = torch.randint(0, cfg.vocab_size, (B, T + 1), generator=gen)
model.zero_grad()
logits = model(input_ids=tokens[:, :-1]).logits
loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab_size), tokens[:, 1:].reshape(-1))
loss.backward()
ref = {"tokens": tokens.to(torch.int32).unsqueeze(0).contiguous(), "logits": logits.detach().contiguous(),
       "loss0": loss.detach().reshape(1)}
for n, p in model.named_parameters():
    ref["grad." + n] = p.grad.detach().contiguous()
save_file(ref, os.path.join(OUT, "ref.safetensors"))
print("wrote %s: loss %.6f, %d parameters" % (OUT, loss.item(), sum(p.numel() for p in model.parameters())))
