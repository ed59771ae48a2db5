#!/usr/bin/env bash
# Planner accuracy on this machine. In each of --rounds rounds, for each of two
# tiny models: measure the machine with the model's kernels (axonn bench comm
# with the model's options), ask axonn plan for every grid of P ranks, and time
# every runnable grid with axonn bench (in a rotated order each round), so that
# slow and fast spells of a shared VM fall on every grid and the calibration
# alike. The same machine file without the model's own kernel shapes gives a
# second prediction (plan_K_generic.json: what a machine measured without the
# model would predict). bench/plan_accuracy.py compares predicted with measured
# per round and on the per-grid medians, and states the round-to-round spread of
# the measurements (the noise floor). A grid's measured step is the median over
# its timed iterations: a burst of other work on the VM (one iteration of 4 at
# 35 ms where the others took 21) moves the mean, not the median.
#   bash bench/plan_accuracy.sh [--ranks 4] [--iters 20] [--rounds 3] [--out DIR] [--axonn build/axonn]
set -eu
P=4; ITERS=20; ROUNDS=3; AX=build/axonn; OUT=; OUTSET=0
while [ $# -gt 0 ]; do case $1 in
  --ranks) P=$2; shift 2;; --iters) ITERS=$2; shift 2;; --rounds) ROUNDS=$2; shift 2;; --axonn) AX=$2; shift 2;;
  --out) OUT=$2; OUTSET=1; shift 2;; *) echo "unknown option $1" >&2; exit 2;; esac; done
[ "$OUTSET" = 1 ] || OUT=bench/results/$(date +%F)-plan-accuracy-p$P
mkdir -p "$OUT"
# ranks bound to cores as on a cluster: a core each where there are enough, else
# P / cores to a core, dealt round robin (rank r on core r mod cores), where the
# cores divide P; else the scheduler's placement. Unbound, 4 ranks on 2 cores
# measured a grid's step at 13 ms in one round and 20 in the next (model a).
NC=$(nproc); BIND=none
if [ "$P" -le "$NC" ]; then BIND=core; elif [ $((P % NC)) = 0 ]; then BIND=core:overload-allowed; fi
MPI=(mpirun --allow-run-as-root --oversubscribe --bind-to "$BIND" -np "$P")
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
# two tiny models (the VM has 2 cores: more than 2 ranks oversubscribe them)
declare -A MODELS=(
  [a]="--n-layer 2 --n-head 4 --n-embd 128 --vocab-size 512 --block-size 64 --batch 8"
  [b]="--n-layer 4 --n-head 8 --n-embd 256 --vocab-size 1024 --block-size 128 --batch 8"
)
# CPU time stolen by the hypervisor, and all CPU time, in jiffies (/proc/stat)
cpu_ticks() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
{ echo "date: $(date -Is)"; echo "commit: $(git rev-parse HEAD)"; lscpu | grep -E "Model name|^CPU\(s\)"
  echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512_bf16|avx512_fp16|amx_bf16|amx_tile)$' | tr '\n' ' ')"
  lscpu | grep -E "^L2 cache|^L3 cache"
  echo "BLAS: $("$AX" bench --n-layer 1 --n-head 1 --n-embd 64 --vocab-size 64 --block-size 8 --batch 1 --iters 3 2>&1 | grep -o 'GEMMs: .*' | head -1)"
  echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"; echo "ranks: $P, 1 thread each, bound to $BIND; iters $ITERS; rounds $ROUNDS"
  for k in a b; do echo "model $k: ${MODELS[$k]}"; done; uptime; } > "$OUT/config.txt"
for r in $(seq 1 "$ROUNDS"); do
  R=$OUT/round$r; mkdir -p "$R"
  read -r s0 t0 < <(cpu_ticks); start=$(date +%s)
  for k in a b; do
    "${MPI[@]}" "$AX" bench comm --out "$R/machine_$k.json" --max-kib 16384 ${MODELS[$k]} > "$R/bench_comm_$k.txt" < /dev/null
    python3 -c "
import json; m=json.load(open('$R/machine_$k.json'))
m['gemm']['shapes']=[s for s in m['gemm']['shapes'] if s['m']==s['n']==s['k'] and not s['ta'] and s['tb']]; m.pop('attention_shapes',None)
json.dump(m,open('$R/machine_${k}_generic.json','w'),indent=1)"
    "$AX" plan --ranks "$P" --machine "$R/machine_${k}_generic.json" ${MODELS[$k]} --zero 0 --json --top 1000 > "$R/plan_${k}_generic.json"
    "$AX" plan --ranks "$P" --machine "$R/machine_$k.json" ${MODELS[$k]} --zero 0 --json --top 1000 > "$R/plan_$k.json"
    mapfile -t grids < <(python3 -c "
import json; p=json.load(open('$R/plan_$k.json'))
g=[','.join(map(str,x['grid'])) for x in p['ranked']]; n=len(g); s=($r-1)*n//$ROUNDS
print('\n'.join(g[s:]+g[:s]))")
    for g in "${grids[@]}"; do
      "${MPI[@]}" "$AX" bench ${MODELS[$k]} --grid "$g" --iters "$ITERS" --json > "$R/bench_${k}_${g//,/_}.json" < /dev/null
    done
  done
  read -r s1 t1 < <(cpu_ticks)
  echo "round $r: $(( $(date +%s) - start )) s, steal $(awk -v a=$((s1 - s0)) -v b=$((t1 - t0)) 'BEGIN{printf "%.1f", b ? 100*a/b : 0}')% of CPU time, $(cut -d' ' -f1-3 /proc/loadavg) load" | tee -a "$OUT/config.txt"
done
# the folder's summary (bench/README.md, "results/"): README.md, points.tsv and config.txt are
# committed; the rounds' raw files (round*/) are not (bench/results/.gitignore)
{ echo "# Planner accuracy: $(basename "$OUT")"; echo
  echo "\`bash bench/plan_accuracy.sh --ranks $P --iters $ITERS --rounds $ROUNDS\` at $(git rev-parse --short HEAD), $(date +%F);"
  echo "machine, commit and load in \`config.txt\`; predicted and measured ms per grid in \`points.tsv\`."; echo
  python3 bench/plan_accuracy.py "$OUT"; echo "# without the models' own kernel shapes (the generic machine file)"; echo
  python3 bench/plan_accuracy.py "$OUT" --variant generic --no-points; } | tee "$OUT/README.md"
