#!/usr/bin/env bash
# bench/ckpt.sh: what a checkpoint costs. For 1, 2, 4 and 8 ranks, a GPT-2-shaped
# model of ~1 GB of state (fp32 parameters + AdamW m and v: 81M parameters,
# 0.97 GB in model.safetensors + optim.safetensors) trains 16 steps with a
# checkpoint every 6 (saves at steps 6, 12 and the end), with
#   root   --ckpt-writer root          rank 0 gathers every tensor and writes alone
#   sync   --async-save=false          every rank writes its slices (pwrite), training waits
#   async  --async-save                every rank writes its slices in a background thread
# and reports per run: the save time (begin to commit), the time training was
# blocked, and the step-time cost of a save: blocked time plus the extra time
# of the steps that ran while the save was in flight (against the median step
# of the same run without one), in ms and in steps.
#
#   bash bench/ckpt.sh [--axonn build/axonn] [--reps 2] [--ranks "1 2 4 8"] [--out DIR] [--keep]
#
# Writes DIR/README.md's table to stdout and DIR/points.tsv (one line per run:
# ranks, grid, mode, rep, save_ms, blocked_ms, cost_ms, step_ms, load average).
set -u
AXONN=build/axonn REPS=2 RANKS="1 2 4 8" OUT="" KEEP=0
while [ $# -gt 0 ]; do
  case $1 in
    --axonn) AXONN=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "bench/ckpt.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
AXONN=$(realpath "$AXONN")
OUT=${OUT:-bench/results/$(date +%F)-ckpt}
mkdir -p "$OUT"
SCR=$(mktemp -d /var/tmp/axonn-ckpt.XXXXXX)   # on the disk, not tmpfs
[ "$KEEP" = 1 ] || trap 'rm -rf "$SCR"' EXIT
MODEL=(--synthetic --vocab-size 50257 --block-size 32 --seq 32 --n-layer 6 --n-head 12 --n-embd 768 --batch 2)
RUN=(train "${MODEL[@]}" --steps 16 --save-every 6 --keep 1 --log-every 1 --lr 1e-4 --warmup 2)
MPI=(mpirun --allow-run-as-root --oversubscribe)
grid_of() { case $1 in 1) echo 1,1,1,1 ;; 2) echo 1,1,1,2 ;; 4) echo 1,2,1,2 ;; 8) echo 1,2,2,2 ;; *) echo "?" ;; esac; }

# The log interleaves the "saved" line after the step it was committed at:
# the steps overlapped are those logged between a save's begin and its line.
mark_pending() {
  awk '/step +[0-9]+\// { match($0, /step +[0-9]+/); s = substr($0, RSTART + 5) + 0; print; if (s % 6 == 0 && s < 16) print "BEGIN " s; next } { print }' "$1"
}

: >"$OUT/points.tsv"
echo "| ranks | grid | mode | save ms | training blocked ms | step-time cost ms | cost in steps | step ms | load |"
echo "|---|---|---|---|---|---|---|---|---|"
for rep in $(seq 1 "$REPS"); do
  for P in $RANKS; do
    G=$(grid_of "$P"); T=$([ "$P" = 1 ] && echo 2 || echo 1)
    for mode in root sync async; do
      case $mode in
        root) extra=(--ckpt-writer root --async-save=false) ;;
        sync) extra=(--async-save=false) ;;
        async) extra=(--async-save) ;;
      esac
      d="$SCR/p$P-$mode-$rep"; rm -rf "$d"
      load=$(cut -d' ' -f1 /proc/loadavg)
      if [ "$P" = 1 ]; then "$AXONN" "${RUN[@]}" --threads "$T" --grid "$G" "${extra[@]}" --out "$d" >"$d.log" 2>&1
      else "${MPI[@]}" -np "$P" "$AXONN" "${RUN[@]}" --threads "$T" --grid "$G" "${extra[@]}" --out "$d" >"$d.log" 2>&1; fi
      rc=$?
      if [ $rc != 0 ]; then echo "| $P | $G | $mode | failed (exit $rc) | | | | | $load |"; tail -n 3 "$d.log" >&2; continue; fi
      mark_pending "$d.log" | python3 -c '
import re, statistics, sys
steps, begun, saves = {}, {}, []
for line in sys.stdin:
    m = re.search(r"^BEGIN (\d+)", line)
    if m: begun[int(m.group(1))] = []; continue
    m = re.search(r"step +(\d+)/\d+ \|.*\| +([\d.]+) ms \|", line)
    if m:
        s = int(m.group(1)); steps[s] = float(m.group(2))
        for b, over in begun.items():
            if over is not None and s > b: over.append(s)
        continue
    m = re.search(r"saved \S*ckpt-0*(\d+) in (\d+) ms(?:, training blocked (\d+) ms)?", line)
    if m:
        s = int(m.group(1)); over = begun.get(s) or []
        if s in begun: begun[s] = None
        saves.append((s, float(m.group(2)), float(m.group(3) or m.group(2)), over))
mid = [x for x in saves if x[0] in (6, 12)]
busy = {s for x in mid for s in x[3]}
base = statistics.median([v for k, v in steps.items() if k >= 3 and k not in busy])
cost = [x[2] + sum(steps[s] - base for s in x[3]) for x in mid]
print("%.0f %.0f %.0f %.1f %d" % (statistics.median([x[1] for x in mid]), statistics.median([x[2] for x in mid]),
                                  statistics.median(cost), base, max(len(x[3]) for x in mid)))
' >"$d.res" || { echo "| $P | $G | $mode | unparsed | | | | | $load |"; continue; }
      read -r save blocked cost step nover <"$d.res"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$P" "$G" "$mode" "$rep" "$save" "$blocked" "$cost" "$step" "$load" >>"$OUT/points.tsv"
      echo "| $P | $G | $mode | $save | $blocked | $cost | $(python3 -c "print('%.2f' % ($cost / $step))") ($nover overlapped) | $step | $load |"
    done
  done
done
