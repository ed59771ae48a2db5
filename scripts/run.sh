#!/usr/bin/env bash
# The main job: build, train the default model (extra arguments go to `axonn train`),
# then draw its loss curves into <out>/loss.svg (out/ unless --out says otherwise), the
# training loss as the mean of the last 10 steps.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bin="${BUILD:-build}/axonn"
"$bin" train "$@"
out=out metrics=
for ((i = 1; i <= $#; i++)); do
  j=$((i + 1))
  case "${!i}" in
    --help | -h) exit 0 ;;
    --out) out="${!j}" ;;
    --out=*) out="${!i#--out=}" ;;
    --metrics) metrics="${!j}" ;;
    --metrics=*) metrics="${!i#--metrics=}" ;;
  esac
done
"$bin" plot "${metrics:-$out/metrics.jsonl}" --smooth 10 --out "$out/loss.svg"
