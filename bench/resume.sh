#!/usr/bin/env bash
# bench/resume.sh: what resuming from a checkpoint costs. The bench model of
# bench/ckpt.sh (81M parameters, 0.97 GB of model.safetensors +
# optim.safetensors) is saved once on the grid given, then resumed on it REPS
# times from a fresh copy with the page cache dropped (a cold read, as after
# a node failure), each binary given in turn within a repetition, so that two
# builds compare side by side on the same disk minutes apart.
#
#   bash bench/resume.sh [--axonn build/axonn]... [--reps 3] [--grid 1,2,2,1] [--out DIR]
#
# Per run: the wall time of the whole resumed run (MPI start-up, model,
# verification, reads, one training step) and, where the binary logs it, the
# time the checkpoint's verification and reads took ("verified and read in").
# Writes DIR/points.tsv (binary, rep, wall_s, load_s) and the table to stdout.
# Needs root (drop_caches).
set -u
BINS=() REPS=3 GRID=1,2,2,1 OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --axonn) BINS+=("$(realpath "$2")"); shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --grid) GRID=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "bench/resume.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#BINS[@]} -gt 0 ] || BINS=("$(realpath build/axonn)")
OUT=${OUT:-bench/results/$(date +%F)-resume}
mkdir -p "$OUT"
P=$(echo "$GRID" | tr ',' '\n' | awk '{ p *= $1 } BEGIN { p = 1 } END { print p }')
SCR=$(mktemp -d /var/tmp/axonn-resume.XXXXXX) # on the disk, not tmpfs
trap 'rm -rf "$SCR"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_config ckpt
MODEL=(--synthetic "${MODEL[@]}")
RUN=(train "${MODEL[@]}" --keep 1 --log-every 1 --lr 1e-4 --warmup 2 --grid "$GRID" --threads 1)
MPI=(mpirun --allow-run-as-root --oversubscribe -np "$P")

"${MPI[@]}" "${BINS[0]}" "${RUN[@]}" --steps 2 --save-every 2 --out "$SCR/src" >"$SCR/src.log" 2>&1 \
  || { tail -n 3 "$SCR/src.log" >&2; exit 1; }
: >"$OUT/points.tsv"
echo "| build | rep | resume run, s | verified and read, s |"
echo "|---|---|---|---|"
for rep in $(seq 1 "$REPS"); do
  for b in "${BINS[@]}"; do
    d="$SCR/run"; rm -rf "$d"; mkdir -p "$d"
    cp -r "$SCR/src/ckpt-000002" "$d/"
    sync; echo 3 >/proc/sys/vm/drop_caches
    t0=$(date +%s%N)
    "${MPI[@]}" "$b" "${RUN[@]}" --steps 3 --save-every 0 --resume auto --out "$d" >"$d.log" 2>&1 \
      || { echo "| $b | $rep | failed | |"; tail -n 3 "$d.log" >&2; continue; }
    t1=$(date +%s%N)
    wall=$(python3 -c "print('%.1f' % (($t1 - $t0) / 1e9))")
    load=$(sed -n 's/.*verified and read in \([0-9.]*\) s.*/\1/p' "$d.log")
    printf '%s\t%s\t%s\t%s\n' "$b" "$rep" "$wall" "${load:--}" >>"$OUT/points.tsv"
    echo "| $b | $rep | $wall | ${load:--} |"
  done
done
