#!/usr/bin/env bash
# ZeRO-1 (--zero 1: AdamW's state sharded over the data group, docs/design.md)
# beside --zero 0 on 4 ranks x 1 thread: `axonn bench` on D=4 (4,1,1,1) and
# D=2 x Z=2 (2,1,1,2), the two settings alternated round by round (and their
# order swapped every other round), so that a burst of other work on a shared
# machine falls on both alike. Prints a markdown report: per grid and
# setting, the median over rounds of each run's median step, the spread
# (min-max of those medians), the ratio to --zero 0, the AdamW bytes per rank
# and the exposed communication of the data groups.
#
#   bash bench/zero.sh [--config mini|tiny|small|ckpt] [--iters N] [--rounds R] [--grids "4,1,1,1 2,1,1,2"]
#
# mini (the default): GPT-2's vocabulary and small's T = 256, B = 4 with half
# its layers and width (L=6, H=6, C=384; 30M parameters), since a step of
# small on 4 ranks of a 2-core machine takes near 30 s.
#
# Target (issue: ZeRO-1): the step within 5% of --zero 0's on the CPU, the
# communication volume being the same (reduce-scatter + all-gather = all-reduce).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=$ROOT/build/axonn PY=/usr/bin/python3 CONFIG=mini ITERS=5 ROUNDS=3 GRIDS="4,1,1,1 2,1,1,2"
while [ $# -gt 0 ]; do
  case $1 in
    --config) CONFIG=$2; shift ;; --iters) ITERS=$2; shift ;; --rounds) ROUNDS=$2; shift ;;
    --grids) GRIDS=$2; shift ;; --axonn) AXONN=$2; shift ;;
    *) echo "zero.sh: unknown option $1 (expected --config, --iters, --rounds, --grids, --axonn)" >&2; exit 2 ;;
  esac
  shift
done
. "$ROOT/bench/lib.sh"
if [ "$CONFIG" = mini ]; then
  V=50257 T=256 L=6 H=6 C=384 B=4
  MODEL=(--vocab-size "$V" --block-size "$T" --n-layer "$L" --n-head "$H" --n-embd "$C" --batch "$B" --seq "$T")
else bench_config "$CONFIG"; fi
MODEL+=(--iters "$ITERS" --json)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive OMP_NUM_THREADS=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "# axonn.c: ZeRO-1 beside --zero 0, 4 ranks x 1 thread ($CONFIG)"
echo
bench_provenance
echo "- $(mpirun --version | head -1); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<unset>}; $("$AXONN" --version | sed -n 's/^  //p' | tr '\n' ';')"
echo "- config $CONFIG: V=$V T=$T L=$L H=$H C=$C B=$B; $ROUNDS rounds, each run $ITERS iterations (its median of the last $((ITERS - 2))); load at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo

for g in $GRIDS; do
  for r in $(seq 1 "$ROUNDS"); do
    order="0 1"
    [ $((r % 2)) = 0 ] && order="1 0"
    for z in $order; do
      mpirun --oversubscribe --bind-to none -np 4 "$AXONN" bench "${MODEL[@]}" --grid "$g" --threads 1 --zero "$z" \
        >"$TMP/$g-z$z-r$r.json"
    done
    echo "- grid $g round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  done
done

"$PY" - "$TMP" $GRIDS <<'EOF'
import glob, json, statistics, sys
tmp, grids = sys.argv[1], sys.argv[2:]
print("| grid D,X,Y,Z | zero | step ms, median of rounds | spread (min-max) | vs --zero 0 | rounds' medians | AdamW MiB/rank | data + data x Z comm ms | optimizer ms |")
print("|---|---|---|---|---|---|---|---|---|")
for g in grids:
    base = None
    for z in (0, 1):
        runs = [json.load(open(p)) for p in sorted(glob.glob(f"{tmp}/{g}-z{z}-r*.json"))]
        med = [j["ms_median"] for j in runs]
        m = statistics.median(med)
        base = base or m
        comm = statistics.median(j["split_ms"]["comm"]["data"] + j["split_ms"]["comm"]["data_z"] for j in runs)
        opt = statistics.median(j["split_ms"]["optimizer"] for j in runs)
        print("| %s | %d | %.0f | %.0f-%.0f (%.1f%%) | %.3f | %s | %.1f | %.0f | %.0f |" % (
            g, z, m, min(med), max(med), 100 * (max(med) - min(med)) / m, m / base,
            ", ".join("%.0f" % x for x in med), runs[0]["optimizer_bytes_per_rank"] / 2**20, comm, opt))
EOF
echo
echo "- load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
