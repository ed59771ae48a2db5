#!/usr/bin/env bash
# GEMM layout tuning on one config, as a markdown report on stdout:
# `axonn bench gemm` (every layout of each GEMM of a step, the chosen one and
# its gain), the first-use cost of tuning (a 3-iteration bench with an empty
# cache against one with tuning off), then the step time with --gemm-tune off
# and on (the cache filled), interleaved in alternating order, --reps times.
#
#   bash bench/gemm_tune.sh [--config tiny|small] [--iters N] [--reps R] [--dtype fp32|bf16]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=$ROOT/build/axonn CONFIG=tiny ITERS=10 REPS=3 DTYPE=fp32 THREADS=2
while [ $# -gt 0 ]; do
  case $1 in
    --config) CONFIG=$2; shift ;; --iters) ITERS=$2; shift ;; --reps) REPS=$2; shift ;;
    --dtype) DTYPE=$2; shift ;; --axonn) AXONN=$2; shift ;;
    *) echo "gemm_tune.sh: unknown option $1 (expected --config, --iters, --reps, --dtype, --axonn)" >&2; exit 2 ;;
  esac; shift
done
. "$ROOT/bench/lib.sh"
bench_config "$CONFIG"
export OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive
OPTS=("${MODEL[@]}" --threads "$THREADS" --dtype "$DTYPE")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CACHE=$TMP/gemm-tune.json
ms() { python3 -c 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["ms_per_iter"])' "$1"; }
wall() { local t0; t0=$(date +%s.%N); "$@" >/dev/null; echo "$(date +%s.%N) - $t0" | bc; }

echo "# GEMM layout tuning: $CONFIG (V=$V T=$T L=$L H=$H C=$C B=$B), $DTYPE, 1 rank x $THREADS threads"
echo
bench_provenance
echo "- OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}; $("$AXONN" --version | sed -n 's/^  //p' | tr '\n' ';')"
echo "- load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '```'
"$AXONN" bench gemm "${OPTS[@]}" 2>/dev/null | sed -n '/^bench gemm/,$p'
echo '```'
echo
off3=$(wall "$AXONN" bench "${OPTS[@]}" --iters 3 --gemm-tune off)
on3=$(wall "$AXONN" bench "${OPTS[@]}" --iters 3 --gemm-tune on --gemm-tune-cache "$CACHE")
printf -- '- first use: a 3-iteration bench takes %.1f s with tuning off, %.1f s with tuning on and an empty cache (%d problems timed)\n' \
  "$off3" "$on3" "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["entries"]))' "$CACHE")"
echo "- chosen layouts in the cache: $(python3 -c 'import json,sys,collections; print(dict(collections.Counter(e["layout"] for e in json.load(open(sys.argv[1]))["entries"])))' "$CACHE")"
echo
echo "| rep | ms/iter off | ms/iter on (cached) | gain |"
echo "|---|---|---|---|"
for r in $(seq "$REPS"); do   # the order alternates, so a load that rises or falls favours neither
  for t in $([ $((r % 2)) = 1 ] && echo off on || echo on off); do
    "$AXONN" bench "${OPTS[@]}" --iters "$ITERS" --gemm-tune "$t" --gemm-tune-cache "$CACHE" --json >"$TMP/$t.json" 2>/dev/null
  done
  a=$(ms "$TMP/off.json") b=$(ms "$TMP/on.json")
  echo "| $r | $a | $b | $(python3 -c "print('%+.1f%%' % (100 * ($a / $b - 1)))") |"
  echo "$a $b" >>"$TMP/steps"
done
python3 - "$TMP/steps" <<'PY'
import statistics as st, sys
off, on = zip(*(map(float, l.split()) for l in open(sys.argv[1])))
for name, f in (("best", min), ("median", st.median)):
    print("| %s | %.1f | %.1f | %+.1f%% |" % (name, f(off), f(on), 100 * (f(off) / f(on) - 1)))
PY
echo
echo "- load after: $(cut -d' ' -f1-3 /proc/loadavg)"
