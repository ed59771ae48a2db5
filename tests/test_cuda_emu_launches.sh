#!/usr/bin/env bash
# cuda_emu_launches EMU_AXONN [LIMIT_MM LIMIT_FLASH]: the device work of one
# bf16 GPT-2 training step on the emulated device (tests/cuda_emu), counted
# by the emulation as it runs (EMU_LAUNCHES: kernels by name, GEMMs, memsets,
# sorts, copies). One step's count is a run of 3 steps less a run of 2 (the
# first step tunes, allocates and casts; the later ones are alike). A model
# with GPT-2's layer (LayerNorm, GELU, biases, head size 64) at 1 and 2
# layers gives the per-layer table, launches = a + b*L; the count at L = 12,
# counted (the gradient norm takes its ranges in batches, so it is not quite
# a + 12 b), must stay within the limit, under the mm and the flash attention
# paths. Launches: everything but copies. The shape has one classifier chunk
# (as GPT-2 small has on a GPU with room for it) and one chunk of heads in
# mm's attention (GPT-2 small: 3 forward, 5 backward); docs/gpu.md,
# "Launches per step", gives the difference.
. "$(dirname "$0")/cli_lib.sh"
EMU=${1:?usage: test_cuda_emu_launches.sh EMU_AXONN [LIMIT_MM LIMIT_FLASH]}
LIMIT_MM=${2:-500}
LIMIT_FLASH=${3:-500}
BIN=$EMU
MODEL=(--n-head 2 --n-embd 128 --vocab-size 97 --block-size 64 --seq 64 --batch 2)
TRAIN=(train --synthetic "${MODEL[@]}" --quiet --lr 3e-3 --warmup 1 --val-every 0 --seed 5 --dtype bf16
  --backend cuda --device-comm mpi)

for path in mm flash; do
  for L in 1 2 12; do
    for s in 2 3; do
      EMU_LAUNCHES=$W/${path}_${L}_$s.txt AXONN_CUDA_ATTN=$path run "${path}_${L}_$s" 1 "${TRAIN[@]}" --n-layer $L \
        --steps $s --out "$W/${path}_${L}_$s" || continue
    done
  done
  limit=$([ $path = mm ] && echo "$LIMIT_MM" || echo "$LIMIT_FLASH")
  python3 - "$W" "$path" "$limit" <<'PY' && ok "$path: launches per step within $limit at L = 12" || bad "$path: launches per step"
import collections, sys
w, path, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
def tally(L, s):
    t = collections.Counter()
    for line in open(f"{w}/{path}_{L}_{s}.txt"):
        n, k = line.split()
        t[k] = int(n)
    return t
step = {L: tally(L, 3) - tally(L, 2) for L in (1, 2, 12)}  # one step's work, by kind
kinds = sorted(set().union(*step.values()))
def launches(t): return sum(n for k, n in t.items() if k != "copy")
b = {k: step[2][k] - step[1][k] for k in kinds}
a = {k: step[1][k] - b[k] for k in kinds}
A, Bl, n12 = sum(a[k] for k in kinds if k != "copy"), sum(b[k] for k in kinds if k != "copy"), launches(step[12])
print(f"  {path}: launches per step = {A} + {Bl}*L; at L = 12 counted {n12} (limit {limit}); "
      f"copies {a.get('copy', 0)} + {b.get('copy', 0)}*L")
print("  per kind (a + b*L):")
for k in sorted(kinds, key=lambda k: -(a[k] + 12 * b[k])):
    print(f"    {k:<34} {a[k]:>3} + {b[k]:>3}*L")
for k in kinds:
    if step[12][k] != a[k] + 12 * b[k]: print(f"    L = 12: {k} {step[12][k]}, not {a[k] + 12 * b[k]}")
sys.exit(n12 > limit)
PY
done
finish cuda_emu_launches
