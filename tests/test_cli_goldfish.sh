#!/usr/bin/env bash
# cli_goldfish: the goldfish mask of a training run is a function of the token
# stream alone. A stream of two shard files (a passage repeated at offsets that
# fall everywhere in the T = 16 window grid) is trained with k = 3, h = 5 and
# --shuffle=false; the supervised-token count of every step must equal an
# independent stdlib-Python count over the stream (tests/ref/goldfish_hash.py:
# the h ids of the stream ending at each target, across the file boundary) on
#   1 rank, batch 8;  2 ranks (2,1,1,1), batch 4, --grad-accum 2;
#   4 ranks (1,2,1,2), batch 8, --grad-accum 2, stopped with --exit-after 3 and
#   resumed on 2 ranks (1,1,2,1).
# Counts are integers: they must match exactly. The former rule (every window's
# first h-1 targets kept) would supervise more tokens per step than the reference.
REF=$(cd "$(dirname "$0")/ref" && pwd)
. "$(dirname "$0")/cli_lib.sh"
SIZE=(--n-layer 1 --n-head 2 --n-embd 16 --vocab-size 97 --block-size 16)
RUN=(--seq 16 --threads 1 --quiet --lr 1e-3 --warmup 2 --steps 6 --shuffle=false --goldfish-k 3 --goldfish-h 5
     --data "$W/train_*.bin")

python3 - "$W" <<'PY'
import random, struct, sys
w = sys.argv[1]
rng = random.Random(5)
passage = [rng.randrange(97) for _ in range(40)]
stream = []
while len(stream) < 1300:
    stream += [rng.randrange(97) for _ in range(rng.randrange(3, 30))] + passage
def shard(path, toks):
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, len(toks), *([0] * 253)))
        f.write(struct.pack("<%dH" % len(toks), *toks))
shard(w + "/train_000.bin", stream[:611])       # a boundary inside the stream, not on the window grid
shard(w + "/train_001.bin", stream[611:1300])
PY

cat >"$W/expect.py" <<PY
# expect.py B STEPS: supervised tokens of each step under the stream rule
import struct, sys
sys.path.insert(0, "$REF")
from goldfish_hash import stream_mask
B, steps, T, k, h = int(sys.argv[1]), int(sys.argv[2]), 16, 3, 5
files = []
for p in ("$W/train_000.bin", "$W/train_001.bin"):
    raw = open(p, "rb").read()
    n = struct.unpack("<3i", raw[:12])[2]
    files.append(list(struct.unpack("<%dH" % n, raw[1024:1024 + 2 * n])))
stream = sum(files, [])
mask = stream_mask(stream, k, h)
starts, off = [], 0               # stream offset of each sequence, file after file
for f in files:
    starts += [off + i * T for i in range((len(f) - 1) // T)]
    off += len(f)
for s in range(steps):
    print(s + 1, sum(sum(mask[a + 1:a + T + 1]) for a in (starts[p % len(starts)] for p in range(s * B, s * B + B))))
PY

# check NAME METRICS B: the run's supervised counts against the reference
check() {
  local name=$1 metrics=$2 B=$3 got want
  want=$(python3 "$W/expect.py" "$B" 6)
  got=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if "supervised_tokens" in j: print(j["step"], int(j["supervised_tokens"]))' "$metrics")
  if [ -n "$got" ] && [ "$got" = "$want" ]; then ok "$name: supervised tokens per step = stream reference ($(echo $got | tr '\n' ' '))"
  else bad "$name: supervised tokens per step differ from the stream reference"; paste <(echo "$got") <(echo "$want") | sed 's/^/       | got, want: /'; fi
}

# run NAME NP ARGS...: axonn train under mpirun (1 rank: directly), 0 on success
run() {
  local name=$1 np=$2 rc; shift 2
  if [ "$np" = 1 ]; then "$BIN" train "$@" >"$W/$name.log" 2>&1; rc=$?
  else timeout 300 "${MPI[@]}" -np "$np" "$BIN" train "$@" >"$W/$name.log" 2>&1; rc=$?; fi
  [ "$rc" = 0 ] || { bad "$name: axonn train exited $rc"; tail -n 5 "$W/$name.log" | sed 's/^/       | /'; }
  return "$rc"
}

run one 1 "${SIZE[@]}" "${RUN[@]}" --batch 8 --out "$W/one" && check "1 rank, batch 8" "$W/one/metrics.jsonl" 8
run d2 2 "${SIZE[@]}" "${RUN[@]}" --batch 4 --grad-accum 2 --grid 2,1,1,1 --out "$W/d2" &&
  check "grid 2,1,1,1, batch 4, accumulation 2" "$W/d2/metrics.jsonl" 4
run xz 4 "${SIZE[@]}" "${RUN[@]}" --batch 8 --grad-accum 2 --grid 1,2,1,2 --exit-after 3 --out "$W/xz" &&
  run xz_resumed 2 "${RUN[@]}" --grid 1,1,2,1 --resume "$W/xz" --out "$W/xz" &&
  check "grid 1,2,1,2 stopped at step 3, resumed on 1,1,2,1" "$W/xz/metrics.jsonl" 8
finish cli_goldfish
