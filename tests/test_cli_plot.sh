#!/usr/bin/env bash
# cli_plot: `axonn plot` of two training runs (with validation) and a
# hand-written metrics file (a skipped step, a blank line, validation before
# the last step) writes an SVG that parses as XML (Python's xml.etree) and holds,
# per run, one "train" polyline with one point per loss line and one "val"
# polyline with one point per validation line, a legend naming each run's
# folder; every point of every curve on one affine map of (step, loss) to
# pixels (2 decimals printed: 0.02 px), and each tick label at the pixel that
# map gives its value. Then --x tokens (x = step x the line's tokens), --log-x
# (x affine in log step) and --smooth 3 (y the mean of the last 3 losses).
. "$(dirname "$0")/cli_lib.sh"

SIZE=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16)
RUN=(--seq 16 --batch 8 --threads 1 --quiet --warmup 2 --steps 20 --val-every 5 --val-batches 2)
python3 - "$W" <<'EOF'
import json, struct, sys
W = sys.argv[1]
def shard(path, toks):
    hdr = [0] * 256; hdr[0], hdr[1], hdr[2] = 20240520, 1, len(toks)
    open(path, 'wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % len(toks), *toks))
toks = [(i * 7 + i // 3) % 97 for i in range(16 * 40 + 1)]
shard(W + '/train_000.bin', toks[:16 * 30 + 1])
shard(W + '/val_000.bin', toks[16 * 30:])
import os; os.makedirs(W + '/runs/hand')
with open(W + '/runs/hand/metrics.jsonl', 'w') as f:
    for s, l in [(1, 4.0), (2, 3.5), (3, 3.6)]: f.write(json.dumps({'step': s, 'loss': l, 'tokens': 100}) + '\n')
    f.write('{"step": 4, "skipped": true}\n\n')
    f.write(json.dumps({'step': 3, 'val_loss': 3.7, 'val_tokens': 10}) + '\n')
    f.write(json.dumps({'step': 5, 'loss': 3.2, 'tokens': 100}) + '\n')
EOF
DATA=(--data "$W/train_000.bin" --val-data "$W/val_000.bin")
run lr1 1 train "${SIZE[@]}" "${RUN[@]}" "${DATA[@]}" --lr 1e-3 --out "$W/runs/lr1" || exit 1
run lr3 1 train "${SIZE[@]}" "${RUN[@]}" "${DATA[@]}" --lr 3e-3 --out "$W/runs/lr3" || exit 1

cat >"$W/check_svg.py" <<'EOF'
# check_svg.py SVG X SMOOTH LABEL=METRICS...: X is step, tokens or logstep
import json, math, sys
import xml.etree.ElementTree as ET
svg, xkind, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [a.split('=', 1) for a in sys.argv[4:]]
NS = '{http://www.w3.org/2000/svg}'
root = ET.parse(svg).getroot()
fails = []
if root.tag != NS + 'svg': fails.append('root element %s' % root.tag)
def xval(j): return j['step'] * (j['tokens'] if xkind == 'tokens' else 1)
pts = []   # (x value, y value, x px, y px)
for label, path in runs:
    lines = [json.loads(l) for l in open(path) if l.strip()]
    train = [(xval(j), j['loss']) for j in lines if 'loss' in j]
    per = {j['step']: j['tokens'] for j in lines if 'loss' in j}
    val = [(j['step'] * (max(v for s, v in per.items() if s <= j['step']) if xkind == 'tokens' else 1), j['val_loss'])
           for j in lines if 'val_loss' in j]
    ys = [y for _, y in train]
    train = [(x, sum(ys[max(0, i - width + 1):i + 1]) / len(ys[max(0, i - width + 1):i + 1]))
             for i, (x, _) in enumerate(train)]
    for cls, want in (('train', train), ('val', val)):
        got = [p for p in root.iter(NS + 'polyline') if p.get('class') == cls and p.get('data-run') == label]
        if not want and not got: continue
        if len(got) != 1: fails.append('%s %s: %d polylines' % (label, cls, len(got))); continue
        xy = [tuple(map(float, p.split(','))) for p in got[0].get('points').split()]
        if len(xy) != len(want): fails.append('%s %s: %d points, %d lines' % (label, cls, len(xy), len(want)))
        pts += [(w[0], w[1], g[0], g[1]) for w, g in zip(want, xy)]
n_train = sum(1 for p in root.iter(NS + 'polyline') if p.get('class') == 'train')
if n_train != len(runs): fails.append('%d train curves for %d runs' % (n_train, len(runs)))
legend = [t.text for t in root.iter(NS + 'text') if t.get('class') == 'run']
if legend != [l for l, _ in runs]: fails.append('legend %s' % legend)
# one affine map per axis, from the two points farthest apart
def fit(vals, px):
    i, k = vals.index(min(vals)), vals.index(max(vals))
    a = (px[k] - px[i]) / (vals[k] - vals[i])
    return lambda v: px[i] + a * (v - vals[i])
fx = lambda v: math.log10(v) if xkind == 'logstep' else v
X = fit([fx(p[0]) for p in pts], [p[2] for p in pts])
Y = fit([p[1] for p in pts], [p[3] for p in pts])
worst = max(max(abs(X(fx(p[0])) - p[2]), abs(Y(p[1]) - p[3])) for p in pts)
if worst > 0.02: fails.append('a point %.3f px off the affine map' % worst)
def num(s):
    m = {'k': 1e3, 'M': 1e6, 'G': 1e9}
    return float(s[:-1]) * m[s[-1]] if s[-1] in m else float(s)
ticks = {c: [t for t in root.iter(NS + 'text') if t.get('class') == c] for c in ('xtick', 'ytick')}
if len(ticks['xtick']) < 3 or len(ticks['ytick']) < 3: fails.append('ticks %s' % {c: len(t) for c, t in ticks.items()})
for t in ticks['xtick']:
    if abs(X(fx(num(t.text))) - float(t.get('x'))) > 0.06: fails.append('x tick %s at %s' % (t.text, t.get('x')))
for t in ticks['ytick']:
    if abs(Y(num(t.text)) - (float(t.get('y')) - 4)) > 0.06: fails.append('y tick %s at %s' % (t.text, t.get('y')))
xl = [t.text for t in root.iter(NS + 'text') if t.get('class') == 'xlabel']
if xl != [{'step': 'step', 'tokens': 'tokens', 'logstep': 'step (log scale)'}[xkind]]: fails.append('x label %s' % xl)
print('%d points of %d runs on the axes (worst %.3f px), %d+%d ticks, legend %s%s'
      % (len(pts), len(runs), worst, len(ticks['xtick']), len(ticks['ytick']), legend,
         ('; ' + '; '.join(fails[:6])) if fails else ''))
sys.exit(1 if fails else 0)
EOF

# plot LABEL X SMOOTH -- PLOT ARGS...: axonn plot, then check_svg.py on the runs lr1, lr3, hand
plot() {
  local label=$1 x=$2 width=$3 out; shift 4
  if ! "$BIN" plot "$W/runs/lr1" "$W/runs/lr3/metrics.jsonl" "$W/runs/hand" --out "$W/p.svg" "$@" >"$W/plot.log" 2>&1; then
    bad "$label: axonn plot exited $?: $(head -n 2 "$W/plot.log")"; return
  fi
  if out=$(python3 "$W/check_svg.py" "$W/p.svg" "$x" "$width" lr1="$W/runs/lr1/metrics.jsonl" \
           lr3="$W/runs/lr3/metrics.jsonl" hand="$W/runs/hand/metrics.jsonl" 2>&1); then ok "$label: $out"
  else bad "$label: $out"; fi
}
plot "against step" step 1 --
plot "--x tokens" tokens 1 -- --x tokens
plot "--log-x" logstep 1 -- --log-x
plot "--smooth 3" step 3 -- --smooth 3
finish cli_plot
