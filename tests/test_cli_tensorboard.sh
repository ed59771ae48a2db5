#!/usr/bin/env bash
# cli_tensorboard: `train --tensorboard DIR` writes event files that the
# `tensorboard` package's own reader reads back (PyPI, installed by
# scripts/test.sh; without it this test SKIPs, exit 77). Every record is read
# with TensorBoard's record reader, which checks both CRCs of each; the values
# come from its EventAccumulator. Each metrics.jsonl value is under its tag at
# its step, once: equal to the printed value within half its last printed
# digit plus float32 rounding (2^-23 relative; scalars are float32 in the file).
#  (a) 1 rank, validation, --peak-tflops (MFU), the option from a --config
#      file: every tag, one point per logged step, the configuration as JSON text.
#  (b) that run stopped after step 10 with ckpt-000008 its newest checkpoint
#      (ckpt-000010 removed, as after a crash before it), resumed with
#      --resume auto: a second file; steps 9 and 10 appear once, with the
#      resumed run's values (step_ms differs between the two runs), in the
#      raw records of all files and in EventAccumulator; a SessionLog START at
#      step 9; the configuration again at step 9.
#  (c) 2 ranks (grid 1,1,2,1): one event file (rank 0's), its values those of
#      metrics.jsonl.
. "$(dirname "$0")/cli_lib.sh"
if ! python3 -c 'import tensorboard' 2>/dev/null; then
  echo "SKIP cli_tensorboard: python3 has no tensorboard package (scripts/test.sh installs it from PyPI)"
  exit 77
fi

SIZE=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16)
RUN=(--seq 16 --batch 8 --threads 1 --quiet --lr 3e-3 --warmup 2)

python3 - "$W" <<'EOF'
import struct, sys
W = sys.argv[1]
def shard(path, toks):
    hdr = [0] * 256; hdr[0], hdr[1], hdr[2] = 20240520, 1, len(toks)
    open(path, 'wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % len(toks), *toks))
x, toks = 12345, []
for i in range(16 * 40 + 1):
    x = (1103515245 * x + 12345) % (1 << 31)
    toks.append((x >> 8) % 97 if i % 5 == 0 else (toks[-1] * 3 + 1) % 97)
shard(W + '/train_000.bin', toks[:16 * 30 + 1])
shard(W + '/val_000.bin', toks[16 * 30:])
EOF

cat >"$W/check_tb.py" <<'EOF'
# check_tb.py TBDIR METRICS FILES [START_STEP]: the event files of TBDIR against
# METRICS (see the header of test_cli_tensorboard.sh); FILES: how many files;
# START_STEP: the newest file begins with a SessionLog START at that step
import glob, json, os, sys, warnings
warnings.filterwarnings('ignore')
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.util import tensor_util
tbdir, metrics, nfiles = sys.argv[1], sys.argv[2], int(sys.argv[3])
start = int(sys.argv[4]) if len(sys.argv) > 4 else None
TAGS = {'train/loss': ('loss', 6), 'train/lr': ('lr', 'e6'), 'train/grad_norm': ('grad_norm', 6),
        'perf/step_ms': ('ms', 3), 'perf/tokens_per_s': ('tokens_per_s', 1), 'perf/model_tflops': ('model_tflops', 5),
        'perf/mfu': ('mfu', 5), 'memory/peak_rss_mib': ('peak_rss_mib', 1), 'val/loss': ('val_loss', 6)}
fails = []
want = {}  # tag -> {step: value}
for line in open(metrics):
    j = json.loads(line)
    for tag, (key, _) in TAGS.items():
        if key in j: want.setdefault(tag, {})[j['step']] = j[key]
files = sorted(glob.glob(os.path.join(tbdir, '*tfevents*')))
if len(files) != nfiles: fails.append('%d event files, expected %d' % (len(files), nfiles))
seen, events = {}, []
for f in files:
    r = pywrap_tensorflow.PyRecordReader_New(f.encode())
    evs = []
    while True:
        try: r.GetNext()
        except errors.OutOfRangeError: break
        except errors.DataLossError as e: fails.append('%s: %s' % (os.path.basename(f), e)); break
        evs.append(event_pb2.Event.FromString(r.record()))
    if not evs or evs[0].file_version != 'brain.Event:2': fails.append('%s: no file version first' % f)
    for e in evs:
        for v in e.summary.value: seen.setdefault((v.tag, e.step), []).append(os.path.basename(f))
    events.append(evs)
dups = sorted(k for k, v in seen.items() if len(v) > 1)
if dups: fails.append('points written more than once: %s' % dups[:6])
if start is not None:
    s = [e.step for e in events[-1] if e.HasField('session_log') and e.session_log.status == 1]
    if s != [start]: fails.append('newest file: SessionLog START at steps %s, expected [%d]' % (s, start))
acc = ea.EventAccumulator(tbdir, size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
acc.Reload()
if sorted(acc.Tags()['scalars']) != sorted(want):
    fails.append('scalar tags %s, expected %s' % (sorted(acc.Tags()['scalars']), sorted(want)))
compared = 0
for tag in want:
    got = {e.step: e.value for e in acc.Scalars(tag)} if tag in acc.Tags()['scalars'] else {}
    if sorted(got) != sorted(want[tag]):
        fails.append('%s: steps %s, metrics.jsonl has %s' % (tag, sorted(got), sorted(want[tag])))
    digits = TAGS[tag][1]
    for step, v in want[tag].items():
        if step not in got: continue
        tol = (5e-7 * abs(v) if digits == 'e6' else 0.5 * 10 ** -digits) + 2 ** -23 * abs(v)
        compared += 1
        if abs(got[step] - v) > tol: fails.append('%s step %d: %.9g, metrics.jsonl %.9g' % (tag, step, got[step], v))
texts = acc.Tensors('config') if 'config' in acc.Tags()['tensors'] else []
for t in texts:
    s = tensor_util.make_ndarray(t.tensor_proto).item().decode()
    cfg = json.loads(s.strip('`').replace('json\n', '', 1))
    if cfg.get('steps') != 12 or cfg.get('tensorboard') is None or 'n_layer' not in cfg:
        fails.append('config text at step %d: %s' % (t.step, s[:120]))
if [t.step for t in texts] != [1] + ([start] if start else []):
    fails.append('config text at steps %s' % [t.step for t in texts])
print('%d files, %d tags, %d values compared, config text at steps %s%s'
      % (len(files), len(want), compared, [t.step for t in texts], ('; ' + '; '.join(fails[:6])) if fails else ''))
sys.exit(1 if fails else 0)
EOF

# check LABEL ARGS...: check_tb.py
check() {
  local label=$1 out; shift
  if out=$(python3 "$W/check_tb.py" "$@" 2>&1); then ok "$label: $out"; else bad "$label: $out"; fi
}

# ---------------------------------------------------------------- (a) and (b)
DATA=(--data "$W/train_000.bin" --val-data "$W/val_000.bin" --val-every 4 --val-batches 2)
echo "{\"tensorboard\": \"$W/tb_a\"}" >"$W/cfg.json"
A=("${RUN[@]}" "${DATA[@]}" --steps 12 --save-every 4 --peak-tflops 0.01 --out "$W/a" --config "$W/cfg.json")
if run a 1 train "${SIZE[@]}" "${A[@]}" --exit-after 10; then
  check "a: 1 rank, stopped after step 10" "$W/tb_a" "$W/a/metrics.jsonl" 1
  rm -rf "$W/a/ckpt-000010"
  if run b 1 train "${SIZE[@]}" "${A[@]}" --resume auto; then
    grep -q "resumed from .*ckpt-000008" "$W/b.log" || bad "b: did not resume from ckpt-000008: $(grep resum "$W/b.log")"
    check "b: resumed from step 8 after step 10 was logged" "$W/tb_a" "$W/a/metrics.jsonl" 2 9
  fi
fi

# ---------------------------------------------------------------- (c) 2 ranks
if run c 2 train "${SIZE[@]}" "${RUN[@]}" --synthetic --grid 1,1,2,1 --steps 12 --out "$W/c" --tensorboard "$W/tb_c"; then
  check "c: 2 ranks (grid 1,1,2,1)" "$W/tb_c" "$W/c/metrics.jsonl" 1
fi
finish cli_tensorboard
