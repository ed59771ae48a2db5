#!/usr/bin/env bash
# cli_eval: `axonn eval --json` and `axonn sample` on the fixture model
# (tests/fixtures/gpt_tiny: GPT-2, 2 layers, 4 heads, n_embd 24, vocab 67,
# n_positions 16), against a plain-Python (stdlib only) GPT-2 forward that is
# first checked against the PyTorch logits and loss stored in ref.safetensors.
#  - eval: loss equals the reference to relative 1e-5 on 1 rank and on grids
#    1,1,2,1 / 2,1,1,1 / 1,2,1,1 / 1,2,2,1 / 2,1,1,2, with --batch 3 (a last
#    partial batch) and --batch 4; perplexity = exp(loss); tokens = nseq * T;
#    --max-batches limits the sequences.
#  - sample: greedy (--temperature 0) tokens equal on 1 rank and on grid
#    1,2,2,1 (4 ranks) and equal the reference greedy decode (also past
#    n_positions, with the sliding window); seeded sampling is reproducible.
. "$(dirname "$0")/cli_lib.sh"


MODEL="$FIX/gpt_tiny/model.safetensors"
PROMPT=5,60,22,41,8,30

# ---------------------------------------------------------------- reference (plain Python)
cat >"$W/gpt.py" <<'EOF'
# A GPT-2 forward in plain Python (float64 over the fp32 weights).
import array, json, math, struct

def load_st(path):
    b = open(path, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n]); d = b[8 + n:]; out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']
        a = array.array({'F32': 'f', 'I32': 'i'}[v['dtype']]); a.frombytes(d[s:e])
        out[k] = (v['shape'], list(a))
    return out

def rows(t):
    shape, a = t
    c = shape[-1]
    return [a[i * c:(i + 1) * c] for i in range(len(a) // c)]

class GPT:
    def __init__(self, path, cfg):
        t = load_st(path); c = json.load(open(cfg))
        self.L, self.nh, self.C, self.V = c['n_layer'], c['n_head'], c['n_embd'], c['vocab_size']
        self.wte, self.wpe = rows(t['wte.weight']), rows(t['wpe.weight'])
        g = lambda k: t[k][1]
        self.blocks = []
        for l in range(self.L):
            p = 'h.%d.' % l
            names = ['ln_1.weight', 'ln_1.bias', 'attn.c_attn.weight', 'attn.c_attn.bias', 'attn.c_proj.weight',
                     'attn.c_proj.bias', 'ln_2.weight', 'ln_2.bias', 'mlp.c_fc.weight', 'mlp.c_fc.bias',
                     'mlp.c_proj.weight', 'mlp.c_proj.bias']
            # matrices as lists of rows, vectors as lists
            self.blocks.append({k: rows(t[p + k]) if len(t[p + k][0]) == 2 else g(p + k) for k in names})
        self.lnf_w, self.lnf_b = g('ln_f.weight'), g('ln_f.bias')

    @staticmethod
    def ln(x, w, b):
        n = len(x); mu = sum(x) / n; var = sum((v - mu) ** 2 for v in x) / n
        r = 1.0 / math.sqrt(var + 1e-5)
        return [(v - mu) * r * wi + bi for v, wi, bi in zip(x, w, b)]

    @staticmethod
    def conv1d(x, W, b):          # HF Conv1D: W is [in, out]
        y = list(b)
        for xi, wrow in zip(x, W):
            if xi: y = [yj + xi * wj for yj, wj in zip(y, wrow)]
        return y

    def logits(self, toks):
        T, C, nh = len(toks), self.C, self.nh; hs = C // nh
        x = [[a + b for a, b in zip(self.wte[t], self.wpe[i])] for i, t in enumerate(toks)]
        for B in self.blocks:
            qkv = [self.conv1d(self.ln(r, B['ln_1.weight'], B['ln_1.bias']), B['attn.c_attn.weight'], B['attn.c_attn.bias']) for r in x]
            y = [[0.0] * C for _ in range(T)]
            for h in range(nh):
                o = h * hs
                for i in range(T):
                    q = qkv[i][o:o + hs]
                    s = [sum(a * b for a, b in zip(q, qkv[j][C + o:C + o + hs])) / math.sqrt(hs) for j in range(i + 1)]
                    m = max(s); e = [math.exp(v - m) for v in s]; z = sum(e)
                    for d in range(hs):
                        y[i][o + d] = sum(e[j] * qkv[j][2 * C + o + d] for j in range(i + 1)) / z
            x = [[a + b for a, b in zip(r, self.conv1d(yr, B['attn.c_proj.weight'], B['attn.c_proj.bias']))] for r, yr in zip(x, y)]
            for i in range(T):
                hh = self.conv1d(self.ln(x[i], B['ln_2.weight'], B['ln_2.bias']), B['mlp.c_fc.weight'], B['mlp.c_fc.bias'])
                hh = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))) for v in hh]
                x[i] = [a + b for a, b in zip(x[i], self.conv1d(hh, B['mlp.c_proj.weight'], B['mlp.c_proj.bias']))]
        x = [self.ln(r, self.lnf_w, self.lnf_b) for r in x]
        return [[sum(a * b for a, b in zip(r, e)) for e in self.wte] for r in x]

    def loss_sum(self, seq):      # seq has T+1 tokens; summed cross-entropy of the T targets
        tot = 0.0
        for row, tgt in zip(self.logits(seq[:-1]), seq[1:]):
            m = max(row); tot += m + math.log(sum(math.exp(v - m) for v in row)) - row[tgt]
        return tot
EOF

cat >"$W/prep.py" <<'EOF'
# Checks the Python model against PyTorch (ref.safetensors: logits and loss of
# step 0's batch), writes the token shards and the reference results.
import json, math, struct, sys
sys.path.insert(0, sys.argv[1])
from gpt import GPT, load_st
W, FIX, prompt = sys.argv[1], sys.argv[2], [int(v) for v in sys.argv[3].split(',')]
m = GPT(FIX + '/gpt_tiny/model.safetensors', FIX + '/gpt_tiny/config.json')
ref = load_st(FIX + '/gpt_tiny/ref.safetensors')
B, T1 = ref['tokens'][0][1], ref['tokens'][0][2]
toks = ref['tokens'][1][:B * T1]                  # step 0: B sequences of T+1 = 13 tokens
seqs0 = [toks[i * T1:(i + 1) * T1] for i in range(B)]
V = m.V; tl = ref['logits'][1]; worst = 0.0
for b, s in enumerate(seqs0):
    lg = m.logits(s[:-1])
    for t in range(T1 - 1):
        for v in range(V):
            worst = max(worst, abs(lg[t][v] - tl[(b * (T1 - 1) + t) * V + v]))
loss0 = sum(m.loss_sum(s) for s in seqs0) / (B * (T1 - 1))
torch_loss0 = ref['loss0'][1][0]
res = {'logit_diff': worst, 'py_loss0': loss0, 'torch_loss0': torch_loss0}

def shard(path, toks):
    hdr = [0] * 256; hdr[0], hdr[1], hdr[2] = 20240520, 1, len(toks)
    open(path, 'wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % len(toks), *toks))
# set "ref": one file per step-0 sequence (13 tokens = one sequence of T = 12)
for b, s in enumerate(seqs0): shard('%s/ref_%03d.bin' % (W, b), s)
# set "det": 7 sequences of T = 16 in one shard (llm.c: consecutive sequences share a boundary token)
T, n = 16, 7
det = [(7 * i * i + 3 * i + 11) % V if i % 3 else (5 * i + 1) % V for i in range(n * T + 1)]
shard(W + '/det.bin', det)
dseqs = [det[i * T:i * T + T + 1] for i in range(n)]
res['det_loss'] = sum(m.loss_sum(s) for s in dseqs) / (n * T)
res['det_loss_first4'] = sum(m.loss_sum(s) for s in dseqs[:4]) / (4 * T)
# greedy decoding (sliding window of n_positions), with the smallest top-2 margin seen
def greedy(p, new):
    t = list(p); margin = []
    for _ in range(new):
        row = m.logits(t[-16:])[-1]
        o = sorted(range(V), key=lambda j: -row[j])
        margin.append(row[o[0]] - row[o[1]]); t.append(o[0])
    return t, margin
g, mg = greedy(prompt, 16)
res['greedy'] = g; res['greedy_margin'] = mg
json.dump(res, open(W + '/ref.json', 'w'))
print('python GPT-2 vs PyTorch: worst logit difference %.3g, loss %.7f vs %.7f' % (worst, loss0, torch_loss0))
EOF

if ! python3 "$W/prep.py" "$W" "$FIX" "$PROMPT" >"$W/prep.log" 2>&1; then
  bad "reference: prep.py failed"; sed 's/^/       | /' "$W/prep.log" | tail; finish cli_eval
fi
read -r LOGIT_DIFF PY0 TORCH0 <<<"$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["logit_diff"], r["py_loss0"], r["torch_loss0"])' "$W/ref.json")"
if python3 -c 'import sys; d,a,b=map(float,sys.argv[1:]); sys.exit(0 if d<1e-4 and abs(a-b)<=1e-5*abs(b) else 1)' "$LOGIT_DIFF" "$PY0" "$TORCH0"; then
  ok "reference: $(cat "$W/prep.log")"
else bad "reference: $(cat "$W/prep.log")"; finish cli_eval; fi

# ---------------------------------------------------------------- eval
# ev LABEL NRANKS ARGS...: stdout of axonn eval --json in $W/LABEL.json; 0 on success
ev() {
  local label=$1 np=$2 rc; shift 2
  if [ "$np" = 1 ]; then "$BIN" eval --json --threads 1 "$@" >"$W/ev.out" 2>"$W/ev.err"; rc=$?
  else timeout 120 "${MPI[@]}" -np "$np" "$BIN" eval --json --threads 1 "$@" >"$W/ev.out" 2>"$W/ev.err"; rc=$?; fi
  if [ "$rc" != 0 ]; then bad "$label: axonn eval exited $rc: $(tail -n 3 "$W/ev.err" | tr '\n' ' ')"; return 1; fi
  return 0
}
# check_eval LABEL REFKEY NSEQ T: the JSON line of $W/ev.out against ref.json
check_eval() {
  local out
  if out=$(python3 - "$W/ev.out" "$W/ref.json" "$2" "$3" "$4" <<'EOF'
import json, math, sys
text, ref, key, nseq, T = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
lines = [l for l in text.splitlines() if l.strip()]
if len(lines) != 1: print('expected one line of JSON on stdout, got %d: %r' % (len(lines), text[:200])); sys.exit(1)
j = json.loads(lines[0]); want = ref[key]; err = []
for k in ('loss', 'perplexity', 'tokens'):
    if k not in j: err.append('no "%s"' % k)
if not err:
    rel = abs(j['loss'] - want) / abs(want)
    if rel > 1e-5: err.append('loss %.7f, reference %.7f (relative %.3g)' % (j['loss'], want, rel))
    if abs(j['perplexity'] - math.exp(j['loss'])) > 1e-5 * math.exp(j['loss']):
        err.append('perplexity %s != exp(loss) %.6f' % (j['perplexity'], math.exp(j['loss'])))
    if j['tokens'] != nseq * T: err.append('tokens %s, expected %d x %d = %d' % (j['tokens'], nseq, T, nseq * T))
    if 'sequences' in j and j['sequences'] != nseq: err.append('sequences %s, expected %d' % (j['sequences'], nseq))
if err: print('; '.join(err)); sys.exit(1)
print('loss %.6f (reference %.7f, relative %.2g), perplexity %.4f, tokens %d' % (j['loss'], want, abs(j['loss'] - want) / want, j['perplexity'], j['tokens']))
EOF
  ); then ok "$1: $out"; else bad "$1: $out"; fi
}

for cfg in "1 1,1,1,1 3" "1 1,1,1,1 4" "2 1,1,2,1 3" "2 1,1,2,1 4" "2 2,1,1,1 4" "2 1,2,1,1 3" "4 1,2,2,1 3" "4 2,1,1,2 4"; do
  read -r np grid batch <<<"$cfg"
  ev "eval det np=$np grid $grid batch $batch" "$np" --model "$MODEL" --data "$W/det.bin" --grid "$grid" --batch "$batch" &&
    check_eval "eval det (7 x 16) np=$np grid $grid batch $batch" det_loss 7 16
done
for cfg in "1 1,1,1,1 3" "2 1,1,2,1 3" "2 2,1,1,1 4"; do
  read -r np grid batch <<<"$cfg"
  ev "eval ref np=$np grid $grid batch $batch" "$np" --model "$MODEL" --data "$W/ref_*.bin" --seq 12 --grid "$grid" --batch "$batch" &&
    check_eval "eval PyTorch batch (4 x 12) np=$np grid $grid batch $batch" torch_loss0 4 12
done
ev "eval det --max-batches 2" 1 --model "$MODEL" --data "$W/det.bin" --batch 2 --max-batches 2 &&
  check_eval "eval det --batch 2 --max-batches 2 (4 sequences)" det_loss_first4 4 16

# ---------------------------------------------------------------- sample
# sm NRANKS ARGS...: prints the token line of axonn sample (empty on failure)
sm() {
  local np=$1; shift
  if [ "$np" = 1 ]; then "$BIN" sample --threads 1 --model "$MODEL" --prompt-tokens "$PROMPT" "$@" 2>"$W/sm.err"
  else timeout 120 "${MPI[@]}" -np "$np" "$BIN" sample --threads 1 --model "$MODEL" --prompt-tokens "$PROMPT" "$@" 2>"$W/sm.err"; fi
}
# the reference greedy tokens, up to the first near-tie (top-2 margin < 1e-3) where fp32 may differ
read -r GREEDY_REF NSURE <<<"$(python3 -c '
import json,sys; r=json.load(open(sys.argv[1])); g=r["greedy"]; m=r["greedy_margin"]; p=len(g)-len(m)
k=next((i for i,v in enumerate(m) if v<1e-3), len(m)); print(",".join(map(str,g)), p+k)' "$W/ref.json")"
prefix() { cut -d, -f1-"$2" <<<"$1"; }

g1=$(sm 1 --temperature 0 --max-new 8)
g4=$(sm 4 --temperature 0 --max-new 8 --grid 1,2,2,1)
n8=$(( $(tr ',' '\n' <<<"$PROMPT" | wc -l) + 8 ))
[ "$NSURE" -lt "$n8" ] && n8=$NSURE
if [ -n "$g1" ] && [ "$g1" = "$g4" ]; then ok "sample greedy: 1 rank and grid 1,2,2,1 agree: $g1"
else bad "sample greedy: 1 rank '$g1' vs grid 1,2,2,1 '$g4' $(tail -n 2 "$W/sm.err" | tr '\n' ' ')"; fi
if [ "$(prefix "$g1" "$n8")" = "$(prefix "$GREEDY_REF" "$n8")" ]; then ok "sample greedy equals the reference decode ($n8 tokens compared)"
else bad "sample greedy: '$g1', reference '$(prefix "$GREEDY_REF" "$n8")' (first $n8 tokens)"; fi
# past n_positions (16): 6 + 16 = 22 tokens, the window slides
l1=$(sm 1 --temperature 0 --max-new 16)
l4=$(sm 4 --temperature 0 --max-new 16 --grid 1,2,2,1)
if [ -n "$l1" ] && [ "$l1" = "$l4" ]; then ok "sample greedy past n_positions: 1 rank and grid 1,2,2,1 agree ($(tr ',' '\n' <<<"$l1" | wc -l) tokens)"
else bad "sample greedy past n_positions: 1 rank '$l1' vs grid 1,2,2,1 '$l4'"; fi
if [ "$(prefix "$l1" "$NSURE")" = "$(prefix "$GREEDY_REF" "$NSURE")" ]; then ok "sample greedy past n_positions equals the reference decode ($NSURE tokens compared)"
else bad "sample greedy past n_positions: '$l1', reference '$(prefix "$GREEDY_REF" "$NSURE")' (first $NSURE tokens)"; fi

s1=$(sm 1 --temperature 1 --seed 42 --max-new 16)
s2=$(sm 1 --temperature 1 --seed 42 --max-new 16)
s3=$(sm 1 --temperature 1 --seed 43 --max-new 16)
k1=$(sm 1 --temperature 0.8 --top-k 5 --seed 7 --max-new 16)
k2=$(sm 1 --temperature 0.8 --top-k 5 --seed 7 --max-new 16)
k4=$(sm 4 --temperature 0.8 --top-k 5 --seed 7 --max-new 16 --grid 1,2,2,1)
if [ -n "$s1" ] && [ "$s1" = "$s2" ]; then ok "sample --seed 42 reproducible: $s1"; else bad "sample --seed 42: '$s1' then '$s2'"; fi
if [ -n "$s3" ] && [ "$s1" != "$s3" ]; then ok "sample --seed 43 differs from --seed 42"; else bad "sample --seed 43 gave '$s3' (same as --seed 42 or empty)"; fi
if [ -n "$k1" ] && [ "$k1" = "$k2" ]; then ok "sample --top-k 5 --seed 7 reproducible: $k1"; else bad "sample --top-k 5 --seed 7: '$k1' then '$k2'"; fi
if [ -n "$k1" ] && [ "$k1" = "$k4" ]; then ok "sample --top-k 5 --seed 7: grid 1,2,2,1 gives the same tokens"; else bad "sample --top-k 5 --seed 7: 1 rank '$k1', grid 1,2,2,1 '$k4'"; fi
if [ -n "$k1" ] && python3 -c '
import json,sys
sys.path.insert(0, sys.argv[1]); from gpt import GPT
m = GPT(sys.argv[2] + "/gpt_tiny/model.safetensors", sys.argv[2] + "/gpt_tiny/config.json")
t = [int(v) for v in sys.argv[3].split(",")]; p = len(sys.argv[4].split(","))
for i in range(p, len(t)):
    row = m.logits(t[max(0, i - 16):i])[-1]
    top = sorted(range(m.V), key=lambda j: -row[j])[:5]
    if t[i] not in top: print("token", i, "=", t[i], "not in the top 5", top); sys.exit(1)
' "$W" "$FIX" "$k1" "$PROMPT"; then ok "sample --top-k 5: every new token is among the reference top 5"
else bad "sample --top-k 5: a token outside the top 5"; fi

finish cli_eval
