#!/usr/bin/env bash
# The planner's paper-scale study: predicted weak scaling of the AxoNN GPT
# presets on the Perlmutter, Frontier and Alps presets (docs/planner.md),
# the model doubling with the rank count from 512 (5B) up to 8,192 (80B),
# and on to 32,768 GCDs (320B) on Frontier, the global batch growing with the
# ranks (2,048 sequences of 2,048 tokens at 512); Frontier again with the
# batch held at 2,048 (the preset's); on Alps also the 60B model from 1,024
# to 6,144 GPUs, batch growing (the published 76.5% point). Each point is
# `axonn plan`'s first choice (bf16, block recomputation, the published
# runs' settings; overlap all) at the fewest micro-batches (--grad-accum 1, 2,
# 4 ... 64) with which some grid fits in memory. Writes data.tsv, efficiency.tsv,
# weak_scaling.png (gnuplot) and report.md into the directory given.
#
#   bash bench/weak_scaling.sh [OUT_DIR]     (default bench/results/<date>-weak-scaling)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=${AXONN:-$ROOT/build/axonn} PY=${PY:-/usr/bin/python3}
OUT=${1:-$ROOT/bench/results/$(date -u +%F)-weak-scaling}
mkdir -p "$OUT"
command -v gnuplot >/dev/null || { echo "weak_scaling.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }

point() {   # machine ranks preset batch peak_flops series
  local ga json
  for ga in 1 2 4 8 16 32 64; do
    json=$("$AXONN" plan --ranks "$2" --machine "$1" --preset "$3" --batch "$4" --grad-accum "$ga" --dtype bf16 \
             --json --top 1 2>/dev/null) && break
  done
  [ -n "$json" ] || { echo "weak_scaling.sh: $3 on $2 ranks of $1: no grid fits at --grad-accum 64" >&2; return; }
  printf '%s' "$json" | "$PY" -c '
import json, sys
p = json.load(sys.stdin); r = p["ranked"][0]; P = int(sys.argv[1]); peak = float(sys.argv[2])
hw = p["hardware_flops_per_step"] / (r["step_ms"] / 1e3)
print("%s\t%d\t%s\t%d\t%s\t%s\t%.1f\t%.4g\t%.4f\t%.1f\t%.1f" % (sys.argv[3], P, sys.argv[4], p["batch"], sys.argv[5],
      ",".join(map(str, r["grid"])), r["step_ms"], hw, hw / P / peak, r["comm_exposed_ms"], r["memory_bytes"] / 2**30))' \
    "$2" "$5" "$6" "$3" "$ga"
}

{
  printf 'series\tranks\tmodel\tbatch\tgrad_accum\tgrid\tstep_ms\thw_flops\tshare_of_peak\texposed_ms\tgib_per_rank\n'
  sizes=(5b 10b 20b 40b 80b 160b 320b)
  for m in perlmutter:312e12:4:scaled frontier:191.5e12:6:scaled alps:989e12:4:scaled frontier:191.5e12:6:fixed; do
    IFS=: read -r name peak n batch <<<"$m"
    P=512
    for ((i = 0; i <= n; i++)); do
      b=$((4 * P)); [ "$batch" = fixed ] && b=2048
      point "$name" "$P" "axonn-${sizes[$i]}" "$b" "$peak" "$name-$batch-batch"
      P=$((P * 2))
    done
  done
  for P in 1024 2048 4096 6144; do point alps "$P" axonn-60b $((2 * P)) 989e12 alps-60b-scaled-batch; done
} >"$OUT/data.tsv"

"$PY" - "$OUT" <<'EOF'
import csv, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(out + "/data.tsv"), delimiter="\t"))
series = {}
for r in rows: series.setdefault(r["series"], []).append(r)
with open(out + "/efficiency.tsv", "w") as f:
    for name, rs in series.items():
        base = float(rs[0]["hw_flops"]) / int(rs[0]["ranks"])
        f.write("# %s\n" % name)
        for r in rs:
            f.write("%s\t%.4f\n" % (r["ranks"], float(r["hw_flops"]) / int(r["ranks"]) / base))
        f.write("\n\n")
with open(out + "/report.md", "w") as f:
    f.write("| series | ranks | model | batch | micro-batches | first choice D,X,Y,Z | step ms | hardware FLOP/s | share of peak | "
            "weak-scaling efficiency | exposed comm ms | GiB/rank |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for name, rs in series.items():
        base = float(rs[0]["hw_flops"]) / int(rs[0]["ranks"])
        for r in rs:
            eff = float(r["hw_flops"]) / int(r["ranks"]) / base
            f.write("| %s | %s | %s | %s | %s | %s | %s | %.3g | %.1f%% | %.1f%% | %s | %s |\n" % (name, r["ranks"], r["model"],
                    r["batch"], r["grad_accum"], r["grid"], r["step_ms"], float(r["hw_flops"]), 100 * float(r["share_of_peak"]), 100 * eff,
                    r["exposed_ms"], r["gib_per_rank"]))
EOF

gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output "$OUT/weak_scaling.png"
set title "axonn plan: predicted weak-scaling efficiency (hardware FLOP/s per rank vs the first point)"
set xlabel "GPUs / GCDs"; set ylabel "efficiency"
set logscale x 2; set yrange [0:1.1]; set grid; set key bottom left
names = "perlmutter frontier alps frontier,fixed-batch alps-60b"
plot for [i=0:4] "$OUT/efficiency.tsv" index i using 1:2 with linespoints title word(names, i + 1), \
     "-" using 1:2 with points pt 7 ps 1.5 title "published: Frontier 88.3% at 8,192 vs 512", \
     "-" using 1:2 with points pt 5 ps 1.5 title "published: Alps 76.5% at 6,144 vs 1,024 (60B)"
8192 0.883
e
6144 0.765
e
EOF
echo "weak_scaling.sh: $OUT/data.tsv, $OUT/report.md, $OUT/weak_scaling.png"
