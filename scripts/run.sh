#!/usr/bin/env bash
# The main job: build, then train the default model (extra arguments go to `axonn train`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec "${BUILD:-build}/axonn" train "$@"
