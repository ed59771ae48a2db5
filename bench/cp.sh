#!/usr/bin/env bash
# bench/cp.sh: context parallelism on a long sequence. A small Llama-architecture
# model (L=2, C=256, 4 heads of 64, 2 key/value heads, V=512) trains on one
# sequence of T = 32,768 tokens a step with C = 1 (one rank), C = 2 and C = 4
# (--cp C on C ranks), each with `axonn bench` (3 iterations, the last timed),
# and reports per run: ms/iteration, tokens/s, the C group's blocked time and
# its share of the step, the activation bytes per rank the model reports, and
# the peak RSS of every rank (/usr/bin/time).
#
#   bash bench/cp.sh [--axonn build/axonn] [--seq 32768] [--cps "1 2 4"] [--out DIR]
#
# Writes DIR/points.tsv (one line per run) and the README table to stdout.
set -u
AXONN=build/axonn SEQ=32768 CPS="1 2 4" OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --axonn) AXONN=$2; shift 2 ;;
    --seq) SEQ=$2; shift 2 ;;
    --cps) CPS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "bench/cp.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
AXONN=$(realpath "$AXONN")
OUT=${OUT:-bench/results/$(date +%F)-cp}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
MODEL=(--arch llama --n-layer 2 --n-head 4 --n-kv-head 2 --n-embd 256 --vocab-size 512
       --block-size "$SEQ" --seq "$SEQ" --batch 1)
MPI=(mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1)

: >"$OUT/points.tsv"
echo "| C | ranks | ms/iteration | tokens/s | C group blocked ms (share) | activations MiB/rank | peak RSS MiB/rank (max) | load |"
echo "|---|---|---|---|---|---|---|---|"
for c in $CPS; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  rm -f "$W"/rss.* "$W/out.json"
  "${MPI[@]}" -np "$c" sh -c '/usr/bin/time -f %M -o "$0/rss.$OMPI_COMM_WORLD_RANK" "$@"' "$W" \
    "$AXONN" bench "${MODEL[@]}" --cp "$c" --threads 1 --iters 3 --json >"$W/out.json" 2>"$W/err" ||
    { echo "bench/cp.sh: C = $c failed:" >&2; tail -5 "$W/err" >&2; continue; }
  rss=$(cat "$W"/rss.* | sort -n | tail -1)
  python3 - "$W/out.json" "$c" "$rss" "$load" "$OUT/points.tsv" <<'EOF'
import json, sys
path, c, rss, load, tsv = sys.argv[1:]
j = json.loads(open(path).read().strip().splitlines()[-1])
ms = j["ms_per_iter"]
cms = j["split_ms"]["comm"].get("C", 0.0)
act = j["activation_bytes_per_rank"] / 2**20
print(f"| {c} | {j['ranks']} | {ms:.0f} | {j['tokens_per_s']:.0f} | {cms:.1f} ({100 * cms / ms:.1f}%) | {act:.0f} | {int(rss) / 1024:.0f} | {load} |")
open(tsv, "a").write(f"{c}\t{j['ranks']}\t{ms:.1f}\t{j['tokens_per_s']:.1f}\t{cms:.2f}\t{act:.1f}\t{int(rss) / 1024:.1f}\t{load}\n")
EOF
done
