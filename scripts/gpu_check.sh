#!/usr/bin/env bash
# The GPU check: one command on one GPU machine, at most 540 s, planned for
# one H100 or H200 with 16 cores and no network (docs/gpu.md, "The GPU check").
#
#   scripts/gpu_check.sh pack    # where the CUDA toolkit is: a Release build into
#                                # build-gpu and .gpu-pack/ (the binaries and the
#                                # runtime libraries the GPU machine lacks)
#   scripts/gpu_check.sh [DIR]   # on the GPU machine, .gpu-pack carried: every step
#                                # in order of value under its own limit
#                                # (scripts/gpu_check/plan.sh); the results in DIR,
#                                # else $OUT, else ./gpu-check
#
#   AX_REHEARSE=1     without a GPU, run the GPU steps too: their SKIP paths, and
#                     the CPU halves (grids and checkpoints on the CPU backend)
#   AX_BIN=DIR        the binaries in DIR (axonn and the test programs) instead of
#                     the pack's
#   AX_LIMIT_SCALE=N  every limit and the budget times N (a rehearsal on a slow CPU)
#   AX_BUDGET=S       the budget in seconds instead of the plan's (scaled) sum
#   AX_TRAIN_STEPS, AX_GRID_STEPS   shorter loss curves (rehearsals)
#
# The results folder gets three files and no folder (scripts/gpu_check/report.sh):
# summary.md (printed at the end too), speed.md and logs.tar.gz. Models,
# checkpoints and scratch go to a folder in /tmp, removed at the end.
set -uo pipefail
case "${1:-}" in
pack) exec bash "$(dirname "$0")/gpu_check/pack.sh" ;;
-*)
  echo "usage: scripts/gpu_check.sh pack | [DIR] (the header says more)" >&2
  exit 2
  ;;
esac
RESULTS=${1:-${OUT:-}}
[ -n "$RESULTS" ] && RESULTS=$(realpath -m "$RESULTS")
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
RESULTS=${RESULTS:-$ROOT/gpu-check}
for f in plan lib binaries correct speed report; do
  # shellcheck source=/dev/null
  . "$ROOT/scripts/gpu_check/$f.sh"
done
run_plan
finish
