#!/usr/bin/env bash
# Fuzzes every parser for a fixed number of executions each:
#   bash fuzz/run.sh [RUNS [TARGET...]]   (default 1000000, all targets; RUNS=1000 as a smoke test)
# Builds the libFuzzer targets with clang into ${BUILD:-build-fuzz} (the whole
# library instrumented with ASan + UBSan), starts each from fuzz/corpus/<name>
# (new inputs go to a scratch corpus, the committed one is not changed), and
# prints the executions and the outcome. A crash leaves its input in
# fuzz/crashes/<name>/: fix the bug, then move the input to
# fuzz/regressions/<name>/ where CTest (fuzz_replay_<name>) replays it in every
# ordinary build. Exit status: 0 when no target crashed.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000000}; shift || true
TARGETS=("$@"); [ ${#TARGETS[@]} -gt 0 ] || TARGETS=(safetensors config tokenizer shards args)
B=${BUILD:-build-fuzz}
CC=clang cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAXONN_FUZZ=ON -DAXONN_NATIVE=OFF >/dev/null || exit 1
cmake --build "$B" -j "$(nproc)" --target fuzz_safetensors fuzz_config fuzz_tokenizer fuzz_shards fuzz_args >/dev/null || exit 1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitize/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
failed=0
for t in "${TARGETS[@]}"; do
  mkdir -p "$scratch/$t" "fuzz/crashes/$t"
  start=$(date +%s)
  "$B/fuzz/fuzz_$t" -runs="$RUNS" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="fuzz/crashes/$t/" "$scratch/$t" "fuzz/corpus/$t" >"$scratch/$t.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$t.log")
  if [ "$rc" = 0 ]; then
    echo "fuzz $t: ${execs:-?} executions in $(( $(date +%s) - start )) s, no crash"
  else
    failed=1
    echo "fuzz $t: FAILED (exit $rc) after ${execs:-?} executions; input in fuzz/crashes/$t/"
    grep -E 'ERROR|SUMMARY|runtime error' "$scratch/$t.log" | head -n 5 | sed 's/^/    /'
  fi
done
exit $failed
