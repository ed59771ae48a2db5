# shellcheck shell=bash
# The GPU check's step runner (scripts/gpu_check.sh): the device, the folders,
# each step under its limit within the budget. Sourced after plan.sh, with
# ROOT and RESULTS set.

HAVE_GPU=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then HAVE_GPU=1; fi
GPU_NAME=none
[ "$HAVE_GPU" = 1 ] && GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
# the backend of the steps that hold GPU runs against each other (grids,
# ckpt): a rehearsal without a GPU runs them on the CPU
DEV_BACKEND=cpu
[ "$HAVE_GPU" = 1 ] && DEV_BACKEND=cuda

# Scratch (models, checkpoints, data, the binaries' prefix list) in /tmp,
# never under RESULTS; step logs in LOGS until report.sh packs them
SCRATCH=$(mktemp -d /tmp/axonn-gpu-check.XXXXXX)
LOGS=$SCRATCH/logs WORK=$SCRATCH/work
mkdir -p "$LOGS" "$WORK" "$RESULTS"
trap 'rm -rf "$SCRATCH"' EXIT
export ROOT SCRATCH LOGS WORK HAVE_GPU DEV_BACKEND

SCALE=${AX_LIMIT_SCALE:-1}
BUDGET=${AX_BUDGET:-$((BUDGET_S * SCALE))}
T0=$(date +%s)
FAILS=0 NOT_RUN=0
ROWS=$SCRATCH/rows.md # the summary's table, a row a step
: > "$ROWS"

# step NAME LIMIT GPU CMD...: CMD with its output in LOGS/NAME.log, stopped
# after LIMIT seconds (times AX_LIMIT_SCALE). Not run where the budget left
# cannot hold LIMIT. A GPU step (GPU=1) is SKIP without a GPU unless
# AX_REHEARSE is set; where a GPU is, its SKIP (exit 77) is a failure.
step() {
  local name=$1 limit=$(($2 * SCALE)) gpu=$3 t left rc res
  shift 3
  t=$(date +%s)
  left=$((T0 + BUDGET - t))
  if [ "$limit" -gt "$left" ]; then
    res="not run ($left s of the budget left)"
    NOT_RUN=$((NOT_RUN + 1))
    echo "$res" > "$LOGS/$name.log"
  elif [ "$gpu" = 1 ] && [ "$HAVE_GPU" = 0 ] && [ -z "${AX_REHEARSE:-}" ]; then
    res=SKIP
    echo "SKIP: no GPU on this machine (nvidia-smi -L)" > "$LOGS/$name.log"
  else
    timeout -k 5 "$limit" bash -c '"$@"' "$name" "$@" > "$LOGS/$name.log" 2>&1
    rc=$?
    case $rc in
    0) res=ok ;;
    77) res=SKIP ;;
    124 | 137) res="FAIL (over $limit s)" ;;
    *) res="FAIL (exit $rc)" ;;
    esac
    [ "$res" = SKIP ] && [ "$gpu" = 1 ] && [ "$HAVE_GPU" = 1 ] && res="FAIL (skipped with a GPU present)"
    case $res in FAIL*) FAILS=$((FAILS + 1)) ;; esac
  fi
  echo "| $name | $res | $(($(date +%s) - t)) | $limit |" >> "$ROWS"
  echo "gpu_check: $name: $res"
  report # the results as they stand, should the command be stopped
}
