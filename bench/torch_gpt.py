#!/usr/bin/python3
"""PyTorch reference for `axonn train`: the same GPT-2 architecture trained on
random tokens, timed the same way (10 steps, mean of the last 8).

Model: token + position embeddings, pre-LN blocks (LN -> causal MHA ->
residual, LN -> 4x MLP with tanh GELU -> residual), final LN, LM head tied to
the token embedding. fp32, no dropout, biases on every linear and LayerNorm
(eps 1e-5). AdamW lr 3e-4, weight decay 0.1 on matrices only, betas (0.9, 0.95),
eps 1e-8, global gradient-norm clipping at 1.0.

Threads: OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS are set to
--threads before torch loads, and OMP_WAIT_POLICY to PASSIVE unless the
environment sets it (see --omp-wait-policy): Debian's torch runs GEMMs in the
pthread build of OpenBLAS, and with spinning OpenMP workers the two pools fight
over the cores (on 2 cores the tiny config is ~3x slower with ACTIVE).

Run it with Debian's torch (/usr/bin/python3), e.g.
    /usr/bin/python3 bench/torch_gpt.py --vocab 256 --seq 128 --layers 4 \
        --heads 4 --embd 128 --batch 8 --threads 2
Prints one JSON line:
    {"impl":"pytorch","ms_per_step":..,"tokens_per_s":..,"model_gflops":..,...}
where model FLOPs per step = 72 B s l h^2 (1 + s/(6h) + V/(12 h l)), the same
formula `axonn train` reports.
"""
import argparse
import json
import math
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--timed", type=int, default=8, help="average the last N steps (default 8)")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: the forward under torch.autocast('cpu', dtype=torch.bfloat16), fp32 master weights")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda: the model on the GPU, attention through F.scaled_dot_product_attention (causal), "
                        "fused AdamW, autocast on cuda; cpu (default) as before")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (cuda)")
    p.add_argument("--omp-wait-policy", default=None, choices=["passive", "active", "env"],
                   help="OMP_WAIT_POLICY for torch's OpenMP pool (default: passive unless the environment "
                        "sets it; 'env' leaves the environment alone). Debian's torch calls the pthread build "
                        "of OpenBLAS, whose threads compete with spinning OpenMP threads on a small machine.")
    a = p.parse_args()
    if a.embd % a.heads:
        p.error("--embd must be a multiple of --heads")
    if a.steps < 1 or a.timed < 1:
        p.error("--steps and --timed must be positive")
    a.timed = min(a.timed, a.steps)
    return a


args = parse_args()
# Thread counts must be in the environment before torch (and its OpenMP/MKL
# runtimes) load.
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = str(args.threads)
if args.omp_wait_policy in ("passive", "active"):
    os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy.upper()
elif args.omp_wait_policy is None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass


class GPT(torch.nn.Module):
    def __init__(self, V, T, L, H, C):
        super().__init__()
        self.V, self.T, self.L, self.H, self.C = V, T, L, H, C
        P = torch.nn.Parameter
        std, pstd = 0.02, 0.02 / math.sqrt(2 * L)

        def normal(*shape, s=std):
            return P(torch.randn(*shape) * s)

        def zeros(*shape):
            return P(torch.zeros(*shape))

        def ones(*shape):
            return P(torch.ones(*shape))

        self.wte = normal(V, C)
        self.wpe = normal(T, C)
        self.blocks = torch.nn.ModuleList()
        for _ in range(L):
            b = torch.nn.Module()
            b.ln1_w, b.ln1_b = ones(C), zeros(C)
            b.qkv_w, b.qkv_b = normal(3 * C, C), zeros(3 * C)      # F.linear layout: (out, in)
            b.proj_w, b.proj_b = normal(C, C, s=pstd), zeros(C)
            b.ln2_w, b.ln2_b = ones(C), zeros(C)
            b.fc_w, b.fc_b = normal(4 * C, C), zeros(4 * C)
            b.fcp_w, b.fcp_b = normal(C, 4 * C, s=pstd), zeros(C)
            self.blocks.append(b)
        self.lnf_w, self.lnf_b = ones(C), zeros(C)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def attention(self, b, x):
        B, T, C = x.shape
        H, D = self.H, C // self.H
        qkv = F.linear(x, b.qkv_w, b.qkv_b)
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = k.view(B, T, H, D).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        if x.is_cuda:     # SDPA: PyTorch's flash / memory-efficient kernels
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
            return F.linear(y, b.proj_w, b.proj_b)
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        return F.linear(y, b.proj_w, b.proj_b)

    def forward(self, idx, targets):
        B, T = idx.shape
        C = self.C
        pos = torch.arange(T, device=idx.device)
        x = F.embedding(idx, self.wte) + F.embedding(pos, self.wpe)
        for b in self.blocks:
            x = x + self.attention(b, F.layer_norm(x, (C,), b.ln1_w, b.ln1_b, 1e-5))
            h = F.layer_norm(x, (C,), b.ln2_w, b.ln2_b, 1e-5)
            h = F.gelu(F.linear(h, b.fc_w, b.fc_b), approximate="tanh")
            x = x + F.linear(h, b.fcp_w, b.fcp_b)
        x = F.layer_norm(x, (C,), self.lnf_w, self.lnf_b, 1e-5)
        logits = F.linear(x, self.wte)  # tied LM head
        return F.cross_entropy(logits.view(-1, self.V), targets.reshape(-1))


def model_flops(B, s, l, h, V):
    return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * l))


def main():
    a = args
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    model = GPT(a.vocab, a.seq, a.layers, a.heads, a.embd).to(dev)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    extra = {"fused": True} if a.device == "cuda" else {}
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, **extra)
    step_model = torch.compile(model) if a.compile else model
    gen = torch.Generator().manual_seed(a.seed + 1)
    times, losses = [], []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        tok = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen).to(dev)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            loss = step_model(tok[:, :-1], tok[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        lv = loss.item()          # waits for the GPU
        times.append(time.perf_counter() - t0)
        losses.append(lv)
    timed = times[-a.timed:]
    dt = sum(timed) / len(timed)
    flops = model_flops(a.batch, a.seq, a.layers, a.embd, a.vocab)
    nparams = sum(p.numel() for p in model.parameters())
    out = {
        "impl": "pytorch",
        "dtype": a.dtype,
        "ms_per_step": round(dt * 1e3, 2),
        "tokens_per_s": round(a.batch * a.seq / dt, 1),
        "model_gflops": round(flops / dt / 1e9, 3),
        "ms_min": round(min(timed) * 1e3, 2),
        "ms_max": round(max(timed) * 1e3, 2),
        "step_ms": [round(t * 1e3, 1) for t in times],
        "steps": a.steps,
        "timed_steps": len(timed),
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "<unset>"),
        "params": nparams,
        "loss_first": round(losses[0], 4),
        "loss_last": round(losses[-1], 4),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
        "compiled": a.compile,
    }
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
