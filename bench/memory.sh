#!/usr/bin/env bash
# Attention and activation memory: step time and peak RSS of `axonn train`.
#
#   bash bench/memory.sh [--base PATH] [--axonn PATH] [--reps N] > bench/results/DATE-cpu-memory.md
#
# Part 1 (--base given): the same configs with a baseline binary (e.g. one built
# from a commit before the tiled attention) and the current one, runs
# interleaved A, B, A, B ... (--reps of each, default 2); the table gives each
# binary's best ms/step and its peak RSS, so a load that comes and goes on the
# machine hurts both alike.
# Part 2: the current binary with --recompute none, attn and block: activation
# memory the start-up line reports, peak RSS, ms/step, and whether the final
# weights are byte-identical to the none run.
# Every run: synthetic tokens, fp32, 1 rank, 2 threads, 6 steps (ms/step is the
# mean of the last 4, as `axonn train` reports it).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=$ROOT/build/axonn; BASE=""; REPS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --axonn) AXONN=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    *) echo "memory.sh: unknown option $1 (expected --axonn, --base, --reps)" >&2; exit 2 ;;
  esac
done
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
# name L H C V T B
CONFIGS=("T=1024 4 4 256 2048 1024 4" "T=4096 2 2 64 256 4096 1" "small-T256 12 12 768 50257 256 4")

# run BIN NAME L H C V T B EXTRA...: prints "ms_per_step peak_rss_MiB activations_MiB"
run() {
  local bin=$1 name=$2 L=$3 H=$4 C=$5 V=$6 T=$7 B=$8; shift 8
  local out="$WORK/out"; rm -rf "$out"
  /usr/bin/time -f "%M" -o "$WORK/rss" "$bin" train --synthetic --n-layer "$L" --n-head "$H" --n-embd "$C" \
      --vocab-size "$V" --block-size "$T" --seq "$T" --batch "$B" --steps 6 --threads 2 --quiet --out "$out" "$@" \
      >"$WORK/log" 2>&1 || { echo "failed: $(tail -1 "$WORK/log")"; return 1; }
  local ms act
  ms=$(sed -n 's/.*: \([0-9.]*\) ms\/step.*/\1/p' "$WORK/log")
  act=$(sed -n 's/.*activations \([0-9.]*\).*/\1/p' "$WORK/log")
  echo "$ms $(( $(cat "$WORK/rss") / 1024 )) ${act:-?}"
}

echo "# Attention and activation memory (CPU)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; flags: $(grep -o -wE 'avx2|avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "- OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>}; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- 1 rank, 2 threads, fp32, synthetic tokens, 6 steps (mean of the last 4)"
echo
if [ -n "$BASE" ]; then
  echo "## Baseline ($BASE) against current ($AXONN), interleaved, best of $REPS"
  echo
  echo "| config | baseline ms/step | current ms/step | speed-up | baseline peak RSS MiB | current peak RSS MiB |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for c in "${CONFIGS[@]}"; do
    read -r name L H C V T B <<<"$c"
    ba=999999; bb=999999; ra=0; rb=0
    for _ in $(seq "$REPS"); do
      read -r ms rss _ <<<"$(run "$BASE" $c)"; ba=$(awk -v a="$ba" -v b="$ms" 'BEGIN{print (b<a)?b:a}'); ra=$rss
      read -r ms rss _ <<<"$(run "$AXONN" $c)"; bb=$(awk -v a="$bb" -v b="$ms" 'BEGIN{print (b<a)?b:a}'); rb=$rss
    done
    echo "| $name (L=$L H=$H C=$C V=$V B=$B) | $ba | $bb | $(awk -v a="$ba" -v b="$bb" 'BEGIN{printf "%.2fx", a/b}') | $ra | $rb |"
  done
  echo
fi
echo "## Activation recomputation (current binary)"
echo
echo "| config | --recompute | activations MiB (start-up line) | peak RSS MiB | ms/step | weights vs none |"
echo "| --- | --- | --- | --- | --- | --- |"
for c in "${CONFIGS[@]}"; do
  read -r name L H C V T B <<<"$c"
  for mode in none attn block; do
    read -r ms rss act <<<"$(run "$AXONN" $c --recompute "$mode")"
    cp "$WORK/out/model.safetensors" "$WORK/$mode.safetensors" 2>/dev/null
    same=$(cmp -s "$WORK/none.safetensors" "$WORK/$mode.safetensors" && echo identical || echo DIFFERENT)
    echo "| $name | $mode | $act | $rss | $ms | $same |"
  done
done
