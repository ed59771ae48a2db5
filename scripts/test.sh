#!/usr/bin/env bash
# The whole test suite: build, then CTest (unit, PyTorch-fixture, grid-equivalence and CLI tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${BUILD:-build}"
ctest --output-on-failure "$@"
