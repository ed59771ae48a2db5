#!/usr/bin/env bash
# A Llama bench row: `axonn bench --arch llama` on one small Llama config
# (grouped-query attention, SwiGLU, untied head), 1 rank x 2 threads and
# 2 ranks x 1 thread (grids 1,1,2,1 and 2,1,1,1), each repeated, as a
# markdown report on stdout. On a shared machine the runs are noisy: each
# layout runs --repeat times and the report gives the min and median of
# their ms/step (each run: axonn bench's mean of all but its first two
# iterations) and the GEMM ceiling measured in the run of the median.
#
#   bash bench/llama.sh [--iters N] [--repeat R]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=$ROOT/build/axonn PY=/usr/bin/python3 ITERS=6 REPEAT=3
. "$ROOT/bench/lib.sh"
while [ $# -gt 0 ]; do
  case $1 in
    --iters) ITERS=$2; shift ;; --repeat) REPEAT=$2; shift ;; --axonn) AXONN=$2; shift ;;
    *) echo "llama.sh: unknown option $1 (expected --iters, --repeat, --axonn)" >&2; exit 2 ;;
  esac; shift
done
MPI=(mpiexec); mpiexec --version 2>/dev/null | grep -qE "Open MPI|OpenRTE" && MPI=(mpiexec --oversubscribe --allow-run-as-root --bind-to none)
# Llama-style proportions at a size this VM runs in about a second a step
MODEL=(--arch llama --n-layer 4 --n-head 8 --n-kv-head 2 --n-embd 512 --n-inner 1376 --untied
       --vocab-size 8192 --block-size 256 --batch 4 --seq 256)
echo "# Llama bench: V=8192 T=256 L=4 H=8 KV=2 C=512 F=1376 (SwiGLU) untied, B=4, fp32"
echo
bench_provenance
echo "- OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}; $("$AXONN" --version | sed -n 's/^  //p' | tr '\n' ';')"
echo "- $ITERS iterations a run (first 2 untimed), $REPEAT runs a layout; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| layout | ms/step min | ms/step median | tokens/s (median) | model TFLOP/s (median) | GEMM ceiling GFLOP/s/rank (median run) | % of ceiling (median run) | runs (ms/step) |"
echo "|---|---|---|---|---|---|---|---|"
layout() {   # name ranks threads grid
  local name=$1 np=$2 nt=$3 grid=$4 files=()
  for r in $(seq "$REPEAT"); do
    local f=/tmp/llama_bench_${np}_$r.json
    OMP_NUM_THREADS=$nt OMP_WAIT_POLICY=passive "${MPI[@]}" -n "$np" "$AXONN" bench "${MODEL[@]}" --grid "$grid" \
        --threads "$nt" --iters "$ITERS" --json >"$f"
    files+=("$f")
  done
  "$PY" - "$name" "${files[@]}" <<'PY'
import json, sys
runs = sorted((json.load(open(f)) for f in sys.argv[2:]), key=lambda j: j["ms_per_iter"])
med = runs[len(runs) // 2]
print("| %s | %.0f | %.0f | %.0f | %.4f | %.1f | %.0f%% | %s |" % (sys.argv[1], runs[0]["ms_per_iter"], med["ms_per_iter"],
      med["tokens_per_s"], med["model_flops_per_s"] / 1e12, med["gemm_ceiling"]["flops_per_s_per_rank"] / 1e9,
      med["model_percent_of_gemm_ceiling"], ", ".join("%.0f" % j["ms_per_iter"] for j in runs)))
PY
}
layout "1 rank x 2 threads (1,1,1,1)" 1 2 1,1,1,1
layout "2 ranks x 1 thread, Y=2 (1,1,2,1)" 2 1 1,1,2,1
layout "2 ranks x 1 thread, D=2 (2,1,1,1)" 2 1 2,1,1,1
echo
echo "- load after: $(cut -d' ' -f1-3 /proc/loadavg)"
