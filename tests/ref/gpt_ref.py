#!/usr/bin/python3
"""Independent pure-PyTorch GPT-2 reference for the axonn.c tests.

Run by hand (outputs are committed):
    /usr/bin/python3 tests/ref/gpt_ref.py [OUTDIR]

Writes OUTDIR (default tests/fixtures/gpt_tiny/): model.safetensors, config.json,
ref.safetensors, ref.json.  See tests/ref/README.md.

The model is written from scratch here (transformers is only used as an outside
check of the logits and gradients).  Parameters use Hugging Face GPT-2 names and
layouts; Conv1D weights are [in, out] and are applied as y = x @ W + b.
"""
import json
import math
import os
import sys

import torch

torch.set_default_dtype(torch.float32)

LN_EPS = 1e-5

# ----------------------------------------------------------------------------
# configuration of the tiny fixture

TINY_CONFIG = {
    "model_type": "gpt2",
    "architectures": ["GPT2LMHeadModel"],
    "n_layer": 2,
    "n_head": 4,
    "n_embd": 24,
    "n_positions": 16,
    "n_ctx": 16,
    "vocab_size": 67,
    "layer_norm_epsilon": 1e-05,
    "activation_function": "gelu_new",
    "resid_pdrop": 0.0,
    "embd_pdrop": 0.0,
    "attn_pdrop": 0.0,
    "tie_word_embeddings": True,
    "bos_token_id": 66,
    "eos_token_id": 66,
}

SEED = 1234
STEPS = 10
BATCH = 4
SEQ = 12
LR_MAX = 3e-3
WARMUP = 3
MIN_LR_FRAC = 0.1
BETA1, BETA2 = 0.9, 0.95
ADAM_EPS = 1e-8
WEIGHT_DECAY = 0.1
CLIP = 0.5


# ----------------------------------------------------------------------------
# parameters

def param_shapes(cfg):
    """Ordered list of (hf_name, shape, kind); kind in {matrix, bias, ln_w, ln_b}."""
    V, C, L = cfg["vocab_size"], cfg["n_embd"], cfg["n_layer"]
    P = cfg["n_positions"]
    out = [("wte.weight", (V, C), "matrix"), ("wpe.weight", (P, C), "matrix")]
    for i in range(L):
        h = "h.%d." % i
        out += [
            (h + "ln_1.weight", (C,), "ln_w"),
            (h + "ln_1.bias", (C,), "ln_b"),
            (h + "attn.c_attn.weight", (C, 3 * C), "matrix"),
            (h + "attn.c_attn.bias", (3 * C,), "bias"),
            (h + "attn.c_proj.weight", (C, C), "matrix"),
            (h + "attn.c_proj.bias", (C,), "bias"),
            (h + "ln_2.weight", (C,), "ln_w"),
            (h + "ln_2.bias", (C,), "ln_b"),
            (h + "mlp.c_fc.weight", (C, 4 * C), "matrix"),
            (h + "mlp.c_fc.bias", (4 * C,), "bias"),
            (h + "mlp.c_proj.weight", (4 * C, C), "matrix"),
            (h + "mlp.c_proj.bias", (C,), "bias"),
        ]
    out += [("ln_f.weight", (C,), "ln_w"), ("ln_f.bias", (C,), "ln_b")]
    return out


def init_params(cfg, gen):
    """Deterministic init; every tensor is drawn from `gen` in param_shapes order."""
    params = {}
    for name, shape, kind in param_shapes(cfg):
        z = torch.randn(shape, generator=gen, dtype=torch.float32)
        if kind in ("matrix", "bias"):
            t = 0.02 * z
        elif kind == "ln_w":
            t = 1.0 + 0.1 * z
        else:  # ln_b
            t = 0.05 * z
        params[name] = t.contiguous()
    return params


def is_decayed(name):
    """Weight decay only on the 2-D tensors (wte, wpe, Conv1D weights)."""
    return name in ("wte.weight", "wpe.weight") or (
        name.endswith(".weight") and (".attn." in name or ".mlp." in name))


# ----------------------------------------------------------------------------
# model (functional: forward(params, cfg, idx) -> logits)

def layer_norm(x, w, b, eps=LN_EPS):
    mean = x.mean(dim=-1, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(dim=-1, keepdim=True)  # biased variance
    return xc / torch.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def conv1d(x, w, b):
    return x @ w + b


def attention(x, w_attn, b_attn, w_proj, b_proj, n_head):
    B, T, C = x.shape
    hd = C // n_head
    qkv = conv1d(x, w_attn, b_attn)  # [B, T, 3C]
    q, k, v = qkv[..., 0:C], qkv[..., C:2 * C], qkv[..., 2 * C:3 * C]

    def heads(t):  # [B, T, C] -> [B, nh, T, hd]; head h = columns h*hd..(h+1)*hd
        return t.reshape(B, T, n_head, hd).permute(0, 2, 1, 3)

    q, k, v = heads(q), heads(k), heads(v)
    att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)  # [B, nh, T, T]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    att = att.masked_fill(~causal, float("-inf"))
    att = torch.softmax(att, dim=-1)
    y = att @ v  # [B, nh, T, hd]
    y = y.permute(0, 2, 1, 3).reshape(B, T, C)
    return conv1d(y, w_proj, b_proj)


def forward(params, cfg, idx):
    """idx: int64 [B, T] -> logits [B, T, V]."""
    B, T = idx.shape
    assert T <= cfg["n_positions"]
    p = params
    eps = cfg.get("layer_norm_epsilon", LN_EPS)
    x = p["wte.weight"][idx] + p["wpe.weight"][torch.arange(T)][None, :, :]
    for i in range(cfg["n_layer"]):
        h = "h.%d." % i
        a = layer_norm(x, p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps)
        x = x + attention(a, p[h + "attn.c_attn.weight"], p[h + "attn.c_attn.bias"],
                          p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"], cfg["n_head"])
        m = layer_norm(x, p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps)
        m = gelu_tanh(conv1d(m, p[h + "mlp.c_fc.weight"], p[h + "mlp.c_fc.bias"]))
        x = x + conv1d(m, p[h + "mlp.c_proj.weight"], p[h + "mlp.c_proj.bias"])
    x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"], eps)
    return x @ p["wte.weight"].t()


def loss_fn(logits, targets):
    V = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


# ----------------------------------------------------------------------------
# loading a model directory (model.safetensors + config.json), used by check_hf.py

def load_model_dir(path):
    """Returns (params, cfg).  Accepts an optional 'transformer.' prefix and ignores
    the attn.bias / attn.masked_bias buffers and a tied lm_head.weight."""
    from safetensors.torch import load_file
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    act = cfg.get("activation_function", "gelu_new")
    if act not in ("gelu_new", "gelu_pytorch_tanh"):
        raise ValueError("unsupported activation_function %r" % act)
    if "n_positions" not in cfg and "n_ctx" in cfg:
        cfg["n_positions"] = cfg["n_ctx"]
    raw = load_file(os.path.join(path, "model.safetensors"))
    params, lm_head = {}, None
    for k, v in raw.items():
        name = k[len("transformer."):] if k.startswith("transformer.") else k
        if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias"):  # buffers
            continue
        if name == "lm_head.weight":
            lm_head = v
            continue
        params[name] = v.to(torch.float32).contiguous()
    want = param_shapes(cfg)
    missing = [n for n, _, _ in want if n not in params]
    extra = sorted(set(params) - {n for n, _, _ in want})
    if missing or extra:
        raise ValueError("parameter names: missing %s, unexpected %s" % (missing, extra))
    for n, shape, _ in want:
        if tuple(params[n].shape) != tuple(shape):
            raise ValueError("%s: shape %s, expected %s" % (n, tuple(params[n].shape), shape))
    if lm_head is not None and not torch.equal(lm_head.to(torch.float32), params["wte.weight"]):
        print("warning: lm_head.weight differs from wte.weight; using wte (tied)")
    return params, cfg


# ----------------------------------------------------------------------------
# training reference

def lr_at(s, lr_max=LR_MAX, warmup=WARMUP, steps=STEPS, min_frac=MIN_LR_FRAC):
    min_lr = lr_max * min_frac
    if s < warmup:
        return lr_max * (s + 1) / warmup
    progress = (s - warmup) / (steps - warmup)
    return min_lr + 0.5 * (lr_max - min_lr) * (1.0 + math.cos(math.pi * progress))


def global_norm(grads):
    tot = torch.zeros((), dtype=torch.float64)
    for g in grads:
        tot = tot + (g.to(torch.float64) ** 2).sum()
    return float(torch.sqrt(tot).to(torch.float32))


def compute_grads(params, cfg, batch):
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    idx = batch[:, :-1].long()
    tgt = batch[:, 1:].long()
    logits = forward(leaves, cfg, idx)
    loss = loss_fn(logits, tgt)
    loss.backward()
    return loss.detach(), logits.detach(), {k: v.grad.detach().clone() for k, v in leaves.items()}


def train_by_hand(params0, cfg, tokens, clip):
    """Hand-written AdamW with decoupled weight decay and global-norm clipping."""
    p = {k: v.clone() for k, v in params0.items()}
    m = {k: torch.zeros_like(v) for k, v in p.items()}
    v2 = {k: torch.zeros_like(v) for k, v in p.items()}
    losses, norms, lrs, clipped = [], [], [], []
    for s in range(tokens.shape[0]):
        loss, _, grads = compute_grads(p, cfg, tokens[s])
        norm = global_norm(grads.values())
        coef = clip / (norm + 1e-6)
        if coef < 1.0:
            grads = {k: g * coef for k, g in grads.items()}
        lr = lr_at(s)
        t = s + 1
        for k in p:
            g = grads[k]
            if is_decayed(k):
                p[k] = p[k] - lr * WEIGHT_DECAY * p[k]
            m[k] = BETA1 * m[k] + (1 - BETA1) * g
            v2[k] = BETA2 * v2[k] + (1 - BETA2) * g * g
            mhat = m[k] / (1 - BETA1 ** t)
            vhat = v2[k] / (1 - BETA2 ** t)
            p[k] = p[k] - lr * mhat / (torch.sqrt(vhat) + ADAM_EPS)
        losses.append(float(loss))
        norms.append(norm)
        lrs.append(lr)
        clipped.append(coef < 1.0)
    return p, losses, norms, lrs, clipped


def train_torch_optim(params0, cfg, tokens, clip):
    """Same run with torch.optim.AdamW and clip_grad_norm_ (cross-check)."""
    names = list(params0.keys())
    leaves = {k: torch.nn.Parameter(params0[k].clone()) for k in names}
    groups = [
        {"params": [leaves[k] for k in names if is_decayed(k)], "weight_decay": WEIGHT_DECAY},
        {"params": [leaves[k] for k in names if not is_decayed(k)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=LR_MAX, betas=(BETA1, BETA2), eps=ADAM_EPS)
    losses = []
    for s in range(tokens.shape[0]):
        for g in opt.param_groups:
            g["lr"] = lr_at(s)
        opt.zero_grad(set_to_none=True)
        batch = tokens[s]
        loss = loss_fn(forward(leaves, cfg, batch[:, :-1].long()), batch[:, 1:].long())
        loss.backward()
        torch.nn.utils.clip_grad_norm_([leaves[k] for k in names], clip)
        opt.step()
        losses.append(float(loss))
    return {k: v.detach().clone() for k, v in leaves.items()}, losses


# ----------------------------------------------------------------------------
# checks against transformers

def hf_model_from_dir(path):
    from transformers import GPT2LMHeadModel
    try:
        model = GPT2LMHeadModel.from_pretrained(path, attn_implementation="eager")
    except TypeError:
        model = GPT2LMHeadModel.from_pretrained(path)
    model.eval()
    return model


def check_against_hf(outdir, params, cfg, batch):
    model = hf_model_from_dir(outdir)
    idx = batch[:, :-1].long()
    tgt = batch[:, 1:].long()
    out = model(input_ids=idx)
    hf_logits = out.logits
    loss = loss_fn(hf_logits, tgt)
    loss.backward()
    with torch.no_grad():
        ours = forward(params, cfg, idx)
    logit_diff = float((hf_logits.detach() - ours).abs().max())
    named = dict(model.named_parameters())
    grads_hf = {}
    for k in params:
        grads_hf[k] = named["transformer." + k].grad
    return logit_diff, float(loss), grads_hf


# ----------------------------------------------------------------------------

def main():
    import numpy as np
    import safetensors
    import transformers
    from safetensors.torch import save_file

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "fixtures", "gpt_tiny")
    outdir = os.path.normpath(outdir)
    os.makedirs(outdir, exist_ok=True)
    print("python %s, torch %s, numpy %s, safetensors %s, transformers %s" % (
        sys.version.split()[0], torch.__version__, np.__version__, safetensors.__version__,
        transformers.__version__))

    cfg = dict(TINY_CONFIG)
    V = cfg["vocab_size"]
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    params = init_params(cfg, gen)
    tokens = torch.randint(0, V, (STEPS, BATCH, SEQ + 1), generator=gen, dtype=torch.int64)
    tokens = tokens.to(torch.int32).contiguous()

    # model directory
    save_file(params, os.path.join(outdir, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")

    # step-0 forward/backward
    loss0, logits0, grads0 = compute_grads(params, cfg, tokens[0])
    print("loss0 %.7f (ln V = %.7f)" % (float(loss0), math.log(V)))

    # transformers cross-check of logits, loss and gradients
    logit_diff, hf_loss, grads_hf = check_against_hf(outdir, params, cfg, tokens[0])
    grad_diff = max(float((grads_hf[k] - grads0[k]).abs().max()) for k in grads0)
    print("HF GPT2LMHeadModel: logits max abs diff %.3e, loss diff %.3e, grads max abs diff %.3e" % (
        logit_diff, abs(hf_loss - float(loss0)), grad_diff))
    assert logit_diff < 1e-5, "logits differ from transformers"
    assert grad_diff < 1e-5, "gradients differ from transformers"

    # training
    clip = CLIP
    final, losses, norms, lrs, clipped = train_by_hand(params, cfg, tokens, clip)
    if sum(clipped) < 3:
        raise SystemExit("clipping triggers on only %d steps; lower CLIP" % sum(clipped))
    final_t, losses_t = train_torch_optim(params, cfg, tokens, clip)
    # The key slice [C, 2C) of every c_attn.bias has a mathematically zero gradient
    # (softmax is invariant to adding q.b_k to a whole row of scores), so its
    # gradient is pure float32 roundoff (~1e-13) and Adam turns that noise into
    # updates of up to a few 1e-6.  Those entries are compared separately, with a
    # looser bound; tests of the C engine need an atol of ~1e-5 there.
    C = cfg["n_embd"]
    opt_diff, kb_diff, kb_moved = 0.0, 0.0, 0.0
    for k in final:
        d = (final[k] - final_t[k]).abs()
        if k.endswith("attn.c_attn.bias"):
            kb_diff = max(kb_diff, float(d[C:2 * C].max()))
            kb_moved = max(kb_moved, float((final[k] - params[k])[C:2 * C].abs().max()))
            d = torch.cat([d[:C], d[2 * C:]])
        opt_diff = max(opt_diff, float(d.max()))
    print("hand AdamW vs torch.optim.AdamW: params max abs diff %.3e (key-bias slices: %.3e, "
          "moved at most %.3e from init), losses max diff %.3e" % (
              opt_diff, kb_diff, kb_moved, max(abs(a - b) for a, b in zip(losses, losses_t))))
    assert opt_diff < 1e-6, "hand AdamW differs from torch.optim.AdamW"
    assert kb_diff < 1e-5 and kb_moved < 1e-5, "key-bias slices moved more than roundoff"

    print("step  lr          loss        gradnorm    clipped")
    for s in range(STEPS):
        print("%4d  %.6e  %.7f  %.7f  %s" % (s, lrs[s], losses[s], norms[s], clipped[s]))

    ref = {
        "tokens": tokens,
        "logits": logits0.contiguous(),
        "loss0": loss0.reshape(1).to(torch.float32),
        "losses": torch.tensor(losses, dtype=torch.float32),
        "gradnorms": torch.tensor(norms, dtype=torch.float32),
        "lrs": torch.tensor(lrs, dtype=torch.float32),
    }
    for k, g in grads0.items():
        ref["grad." + k] = g.contiguous()
    for k, p in final.items():
        ref["final." + k] = p.contiguous()
    save_file(ref, os.path.join(outdir, "ref.safetensors"), metadata={"format": "pt"})
    meta = {
        "lr": LR_MAX, "warmup": WARMUP, "steps": STEPS, "min_lr_frac": MIN_LR_FRAC,
        "beta1": BETA1, "beta2": BETA2, "eps": ADAM_EPS, "weight_decay": WEIGHT_DECAY,
        "clip": clip, "batch": BATCH, "seq": SEQ, "seed_torch": SEED,
    }
    with open(os.path.join(outdir, "ref.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    for n in ("model.safetensors", "config.json", "ref.safetensors", "ref.json"):
        os.chmod(os.path.join(outdir, n), 0o644)
    total = sum(os.path.getsize(os.path.join(outdir, n)) for n in os.listdir(outdir))
    print("wrote %s (%d bytes)" % (outdir, total))


if __name__ == "__main__":
    main()
