#!/usr/bin/env bash
# Formats every C, CUDA and test source with the repository's .clang-format
# (Debian's clang-format, installed if missing).
#   bash scripts/format.sh           rewrite the files in place
#   bash scripts/format.sh --check   change nothing; name each file that differs, exit 1 if any (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "format: installing clang-format" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-format >/dev/null
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = --check ]; then
  bad=0
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" 2>/dev/null || { echo "format: $f differs from .clang-format (bash scripts/format.sh)"; bad=1; }
  done
  [ $bad = 0 ] && echo "format: ${#files[@]} files as .clang-format says ($(clang-format --version | grep -o 'version [0-9.]*'))"
  exit $bad
fi
clang-format -i "${files[@]}"
