#!/usr/bin/env bash
# bench/ckpt.sh: what a checkpoint costs. For 1, 2, 4 and 8 ranks, a GPT-2-shaped
# model of ~1 GB of state (fp32 parameters + AdamW m and v: 81M parameters,
# 0.97 GB in model.safetensors + optim.safetensors; 128 tokens a step) trains
# 5 steps with a checkpoint every 2 (saves at steps 2, 4 and the end), with
#   root   --ckpt-writer root          rank 0 gathers every tensor and writes alone
#   sync   --async-save=false          every rank writes its slices (pwrite), training waits
#   async  --async-save                every rank writes its slices in a background thread
# and reports per run: the save time (begin to commit), the time training was
# blocked, and the step-time cost of a save: blocked time plus the extra time
# of the steps that ran while the save was in flight (against the median step
# of the same run without one), in ms and in steps.
#
#   bash bench/ckpt.sh [--axonn build/axonn] [--reps 2] [--ranks "1 2 4 8"] [--threads T] [--out DIR] [--keep]
#                      [--scratch DIR]
#
# The checkpoints go to a fresh directory under --scratch (default /var/tmp, on
# the disk); /dev/shm takes the disk out, leaving what the writers themselves
# cost (gathers, copies, checksums) and how they share the cores.
# Threads per rank: 2 for 1 rank, else 1 (every core busy), or T: --ranks 1
# --threads 1 leaves a core to the writer, as a GPU node's idle host cores do.
#
# Writes the disk's floor (dd) to DIR/disk.txt, DIR/README.md's table to stdout and DIR/points.tsv (one line per run:
# ranks, grid, mode, rep, save_ms, blocked_ms, cost_ms, step_ms, write_ms,
# checksum_ms, load average at its start). Medians of the saves at steps 2 and 4.
set -u
AXONN=build/axonn REPS=2 RANKS="1 2 4 8" THREADS="" OUT="" KEEP=0 SCRATCH=/var/tmp
while [ $# -gt 0 ]; do
  case $1 in
    --axonn) AXONN=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --scratch) SCRATCH=$2; shift 2 ;;
    *) echo "bench/ckpt.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
AXONN=$(realpath "$AXONN")
OUT=${OUT:-bench/results/$(date +%F)-ckpt}
mkdir -p "$OUT"
SCR=$(mktemp -d "$SCRATCH/axonn-ckpt.XXXXXX")
[ "$KEEP" = 1 ] || trap 'rm -rf "$SCR"' EXIT
STEPS=5 EVERY=2   # the saves at steps EVERY and 2*EVERY are measured (the last one ends the run)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_config ckpt
MODEL=(--synthetic "${MODEL[@]}")
RUN=(train "${MODEL[@]}" --steps "$STEPS" --save-every "$EVERY" --keep 1 --log-every 1 --lr 1e-4 --warmup 2)
MPI=(mpirun --allow-run-as-root --oversubscribe)
grid_of() { case $1 in 1) echo 1,1,1,1 ;; 2) echo 1,1,1,2 ;; 4) echo 1,2,1,2 ;; 8) echo 1,2,2,2 ;; *) echo "?" ;; esac; }

# The log interleaves the "saved" line after the step it was committed at:
# the steps overlapped are those logged between a save's begin and its line.
mark_pending() {
  awk -v e="$EVERY" -v n="$STEPS" '/step +[0-9]+\// { match($0, /step +[0-9]+/); s = substr($0, RSTART + 5) + 0; print; if (s % e == 0 && s < n) print "BEGIN " s; next } { print }' "$1"
}

# The disk's floor for any writer: the checkpoint's bytes (0.97 GB) written
# and fsync'd by dd, by 1 writer and by 4 writers into quarters of one file
# (what the parallel writer does), twice each; a writer cannot beat it.
disk_floor() {
  local f="$SCR/dd" n=232 k t0 t1 r one=() four=()   # 232 blocks of 4 MiB = 0.97 GB
  for r in 1 2; do
    t0=$(date +%s%N); dd if=/dev/zero of="$f" bs=4M count=$n conv=fdatasync status=none; t1=$(date +%s%N)
    one+=($(( (t1 - t0) / 1000000 ))); rm -f "$f"; sync
    t0=$(date +%s%N)
    for k in 0 1 2 3; do
      dd if=/dev/zero of="$f" bs=4M count=$((n / 4)) seek=$((k * n / 4)) conv=notrunc,fdatasync status=none &
    done; wait; t1=$(date +%s%N)
    four+=($(( (t1 - t0) / 1000000 ))); rm -f "$f"; sync
  done
  echo "disk floor (dd, 0.97 GB + fdatasync, twice): 1 writer ${one[*]} ms, 4 writers into one file ${four[*]} ms" | tee "$OUT/disk.txt"
}
disk_floor
: >"$OUT/points.tsv"
declare -A base_of
echo "| ranks | grid | mode | save ms | write / checksums ms (slowest rank) | training blocked ms | step-time cost ms | cost in steps | step ms | load |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for rep in $(seq 1 "$REPS"); do
  for P in $RANKS; do
    G=$(grid_of "$P"); T=${THREADS:-$([ "$P" = 1 ] && echo 2 || echo 1)}
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
      if [ $rc != 0 ]; then echo "| $P | $G | $mode | failed (exit $rc) | | | | | | $load |"; tail -n 3 "$d.log" >&2; continue; fi
      mark_pending "$d.log" | EVERY=$EVERY BASE=${base_of[$P]:-0} python3 -c '
import os, re, statistics, sys
E = int(os.environ["EVERY"])
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
    m = re.search(r"saved \S*ckpt-0*(\d+) in (\d+) ms(?:, training blocked (\d+) ms \(slowest rank: write (\d+) ms, checksums (\d+) ms)?", line)
    if m:
        s = int(m.group(1)); over = begun.get(s) or []
        if s in begun: begun[s] = None
        saves.append((s, float(m.group(2)), float(m.group(3) or m.group(2)), over, float(m.group(4) or 0), float(m.group(5) or 0)))
mid = [x for x in saves if x[0] in (E, 2 * E)]
busy = {s for x in mid for s in x[3]}
# the step without a save in flight: the steps of this run after the first (page faults) that overlap
# none, else (every one overlapped) the sync run of this rank count and repetition
free = [v for k, v in steps.items() if k >= 2 and k not in busy]
base = statistics.median(free) if free else float(os.environ["BASE"])
cost = [x[2] + sum(steps[s] - base for s in x[3]) for x in mid]
med = lambda i: statistics.median([x[i] for x in mid])
print("%.0f %.0f %.0f %.1f %d %.0f %.0f" % (med(1), med(2), statistics.median(cost), base, max(len(x[3]) for x in mid),
                                          med(4), med(5)))
' >"$d.res" || { echo "| $P | $G | $mode | unparsed | | | | | | $load |"; continue; }
      read -r save blocked cost step nover wr ck <"$d.res"
      [ "$mode" = sync ] && base_of[$P]=$step
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$P" "$G" "$mode" "$rep" "$save" "$blocked" "$cost" "$step" "$wr" "$ck" "$load" >>"$OUT/points.tsv"
      echo "| $P | $G | $mode | $save | $wr / $ck | $blocked | $cost | $(python3 -c "print('%.2f' % ($cost / $step))") ($nover overlapped) | $step | $load |"
    done
  done
done
