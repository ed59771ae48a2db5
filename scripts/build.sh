#!/usr/bin/env bash
# Installs missing Debian packages and builds into ${BUILD:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B "${BUILD:-build}" -DCMAKE_BUILD_TYPE=Release ${CMAKE_FLAGS:-} > /dev/null
cmake --build "${BUILD:-build}" -j "$(nproc)"
