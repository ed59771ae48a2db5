#!/usr/bin/env bash
# Predicted against measured step time of plan_accuracy.sh result directories:
# one point per grid, one series per directory and model, log axes, the line
# measured = predicted (gnuplot PNG).
#   bash bench/plan_accuracy_plot.sh OUT.png DIR [DIR ...]
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OUT.png DIR [DIR ...]" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plan_accuracy_plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
out=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
plots=""; i=0
for d in "$@"; do
  if [ -n "$(ls "$d"/plan_*.json "$d"/round*/plan_*.json 2>/dev/null)" ]; then   # raw data here: rescore
    python3 "$(dirname "$0")/plan_accuracy.py" "$d" >/dev/null    # (re)writes $d/points.tsv
  fi                                                              # else the committed points.tsv
  for k in $(cut -f1 "$d/points.tsv" | sort -u); do
    i=$((i + 1)); awk -F'\t' -v k="$k" '$1 == k' "$d/points.tsv" >"$tmp/$i.tsv"
    plots="$plots${plots:+, }'$tmp/$i.tsv' using 3:4 with points pt 7 ps 1.2 title '$(basename "$d") model $k'"
  done
done
gnuplot <<GP
set terminal pngcairo size 820,720 noenhanced
set output "$out"
set title "axonn plan: predicted vs measured step time, every grid"
set xlabel "predicted ms"; set ylabel "measured ms (axonn bench)"
set logscale xy; set grid; set key top left; set size square
plot x with lines lc rgb "gray" title "measured = predicted", $plots
GP
echo "wrote $out"
