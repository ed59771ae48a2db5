#!/usr/bin/env bash
# Overlapped communication (docs/algorithm.md §4) on 2 ranks x 1 thread against 1 rank x 2
# threads: `axonn bench` of every 2-rank grid with --overlap none and all,
# and each overlap alone on the grids where it applies. Prints a markdown
# report: ms/iteration, tokens/s, exposed (blocked) communication per group.
#
#   bash bench/overlap.sh [--config tiny|small] [--iters N] [--grids "1,1,1,2 2,1,1,1"]
#
# Method: axonn bench's mean of the last N-2 iterations (default N 6); the
# exposed communication is the time ranks spend blocked in collectives
# (starting them, waiting for them), the mean over ranks.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=$ROOT/build/axonn PY=/usr/bin/python3 CONFIG=small ITERS=6 GRIDS="2,1,1,1 1,2,1,1 1,1,2,1 1,1,1,2"
while [ $# -gt 0 ]; do
  case $1 in
    --config) CONFIG=$2; shift ;; --iters) ITERS=$2; shift ;; --grids) GRIDS=$2; shift ;; --axonn) AXONN=$2; shift ;;
    *) echo "overlap.sh: unknown option $1 (expected --config, --iters, --grids, --axonn)" >&2; exit 2 ;;
  esac
  shift
done
. "$ROOT/bench/lib.sh"
bench_config "$CONFIG"
MODEL+=(--iters "$ITERS" --json)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "# axonn.c: overlapped communication, 2 ranks x 1 thread vs 1 rank x 2 threads ($CONFIG)"
echo
bench_provenance
echo "- OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}; $("$AXONN" --version | sed -n 's/^  //p' | tr '\n' ';')"
echo "- config $CONFIG: V=$V T=$T L=$L H=$H C=$C B=$B; $ITERS iterations, mean of the last $((ITERS - 2)); load at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| grid D,X,Y,Z | ranks x threads | overlap | ms/iter | tokens/s | vs 1 x 2 | exposed comm ms (share of step) | by group (ms) |"
echo "|---|---|---|---|---|---|---|---|"

row() {   # json file, label
  "$PY" - "$1" "$BASE" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1])); base = float(sys.argv[2]) if sys.argv[2] else 0
s = j["split_ms"] if "split_ms" in j else j["split"]
comm = s["comm_total"]; ms = j["ms_per_iter"]
groups = ", ".join("%s %.0f" % (k, v) for k, v in s["comm"].items() if v >= 0.5)
g = ",".join(str(x) for x in j["grid"])
print("| %s | %d x %d | %s | %.1f | %.0f | %s | %.0f (%.1f%%) | %s |" % (g, j["ranks"], j["threads_per_rank"], j["overlap"], ms,
      j["tokens_per_s"], "%.2f" % (j["tokens_per_s"] / base) if base else "1.00", comm, 100 * comm / ms, groups or "-"))
EOF
}

BASE=
OMP_NUM_THREADS=2 "$AXONN" bench "${MODEL[@]}" --threads 2 --overlap none >"$TMP/base.json"
row "$TMP/base.json"
BASE=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens_per_s"])' "$TMP/base.json")
for g in $GRIDS; do
  IFS=, read -r d x y z <<<"$g"
  sets="none all"
  [ "$y" -gt 1 ] || [ "$x" -gt 1 ] && sets="$sets oar"
  [ "$z" -gt 1 ] && sets="$sets ors oag"
  [ "$d" -gt 1 ] || [ "$z" -gt 1 ] && sets="$sets dp"
  for ov in $sets; do
    OMP_NUM_THREADS=1 mpirun --oversubscribe --bind-to none -np 2 "$AXONN" bench "${MODEL[@]}" --grid "$g" --threads 1 \
      --overlap "$ov" >"$TMP/$g-$ov.json"
    row "$TMP/$g-$ov.json"
  done
done
echo
echo "- load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
