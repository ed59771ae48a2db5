#!/usr/bin/env bash
# Planner accuracy on this machine: measure it (axonn bench comm), then every
# grid of P ranks for each model with axonn bench, and compare with axonn plan's
# predictions (bench/plan_accuracy.py: MAPE, Spearman, first choice vs best).
#   bash bench/plan_accuracy.sh [--ranks 4] [--iters 6] [--out DIR] [--axonn build/axonn]
set -eu
P=4; ITERS=6; AX=build/axonn; OUT=bench/results/$(date +%F)-plan-accuracy-p$P; OUTSET=0
while [ $# -gt 0 ]; do case $1 in
  --ranks) P=$2; shift 2;; --iters) ITERS=$2; shift 2;; --axonn) AX=$2; shift 2;;
  --out) OUT=$2; OUTSET=1; shift 2;; *) echo "unknown option $1" >&2; exit 2;; esac; done
[ "$OUTSET" = 1 ] || OUT=bench/results/$(date +%F)-plan-accuracy-p$P
mkdir -p "$OUT"
MPI=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$P")
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
# two tiny models (the VM has 2 cores: P ranks oversubscribe them)
declare -A MODELS=(
  [a]="--n-layer 2 --n-head 4 --n-embd 128 --vocab-size 512 --block-size 64 --batch 8"
  [b]="--n-layer 4 --n-head 8 --n-embd 256 --vocab-size 1024 --block-size 128 --batch 8"
)
{ echo "date: $(date -Is)"; echo "commit: $(git rev-parse HEAD)"; lscpu | grep -E "Model name|^CPU\(s\)"
  echo "avx2: $(grep -c avx2 /proc/cpuinfo | head -1) cpus, avx512f: $(grep -c avx512f /proc/cpuinfo | head -1) cpus"
  echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"; echo "ranks: $P, 1 thread each; iters $ITERS"
  for k in "${!MODELS[@]}"; do echo "model $k: ${MODELS[$k]}"; done; uptime; } > "$OUT/config.txt"
"${MPI[@]}" "$AX" bench comm --out "$OUT/machine.json" --max-kib 16384 > "$OUT/bench_comm.txt" < /dev/null
for k in a b; do
  "$AX" plan --ranks "$P" --machine "$OUT/machine.json" ${MODELS[$k]} --json --top 1000 > "$OUT/plan_$k.json"
  python3 -c "
import json,sys; p=json.load(open('$OUT/plan_$k.json'))
for g in p['ranked']: print(','.join(map(str,g['grid'])))" | while read -r g; do
    "${MPI[@]}" "$AX" bench ${MODELS[$k]} --grid "$g" --iters "$ITERS" --json > "$OUT/bench_${k}_${g//,/_}.json" < /dev/null
  done
done
python3 bench/plan_accuracy.py "$OUT" | tee "$OUT/summary.md"
