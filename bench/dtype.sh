#!/usr/bin/env bash
# fp32 against bf16 mixed precision on one config: `axonn bench` (--dtype fp32
# and bf16, with the same-run GEMM ceiling of each) and bench/torch_gpt.py
# (fp32, and bf16 under torch.autocast), all with the same threads, in one
# run, as a markdown report on stdout.
#
#   bash bench/dtype.sh [--config tiny|small] [--iters N] [--torch-bf16-steps N]
#
# Method: axonn bench's mean of the last N-2 iterations; torch_gpt.py's mean
# of its timed steps. PyTorch's bf16 steps can be very slow on CPUs without
# bf16 instructions, so their count is set apart (default 3, 1 timed).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=$ROOT/build/axonn PY=/usr/bin/python3 CONFIG=small ITERS=6 TB=3 THREADS=2
while [ $# -gt 0 ]; do
  case $1 in
    --config) CONFIG=$2; shift ;; --iters) ITERS=$2; shift ;; --torch-bf16-steps) TB=$2; shift ;;
    --axonn) AXONN=$2; shift ;; --python) PY=$2; shift ;;
    *) echo "dtype.sh: unknown option $1 (expected --config, --iters, --torch-bf16-steps, --axonn, --python)" >&2; exit 2 ;;
  esac; shift
done
. "$ROOT/bench/lib.sh"
bench_config "$CONFIG"
echo "# fp32 vs bf16: $CONFIG (V=$V T=$T L=$L H=$H C=$C B=$B), $THREADS threads"
echo
bench_provenance
echo "- OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}; $("$AXONN" --version | sed -n 's/^  //p' | tr '\n' ';')"
echo "- load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| run | ms/step | tokens/s | model TFLOP/s | GEMM ceiling GFLOP/s (same run) | % of ceiling | last loss |"
echo "|---|---|---|---|---|---|---|"
for d in fp32 bf16; do
  OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive "$AXONN" bench "${MODEL[@]}" --threads "$THREADS" --dtype "$d" --iters "$ITERS" --json >"/tmp/dtype_$d.json"
  "$PY" - "/tmp/dtype_$d.json" "$d" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("| axonn %s | %.1f | %.0f | %.4f | %.1f | %.0f%% | |" % (j["dtype"], j["ms_per_iter"], j["tokens_per_s"],
      j["model_flops_per_s"] / 1e12, j["gemm_ceiling"]["flops_per_s_per_rank"] / 1e9,
      j["model_percent_of_gemm_ceiling"]))
PY
done
for d in fp32 bf16; do
  steps=10 timed=8; [ "$d" = bf16 ] && { steps=$TB; timed=$((TB > 2 ? TB - 2 : 1)); }
  "$PY" "$ROOT/bench/torch_gpt.py" --vocab "$V" --seq "$T" --layers "$L" --heads "$H" --embd "$C" --batch "$B" \
      --steps "$steps" --timed "$timed" --threads "$THREADS" --dtype "$d" | tail -n 1 | "$PY" -c '
import json, sys
j = json.loads(sys.stdin.read())
print("| PyTorch %s %s (%d timed) | %.1f | %.0f | %.4f | | | %.4f |" % (j["torch"], j["dtype"], j["timed_steps"],
      j["ms_per_step"], j["tokens_per_s"], j["model_gflops"] / 1e3, j["loss_last"]))'
done
echo
echo "- load after: $(cut -d' ' -f1-3 /proc/loadavg)"
