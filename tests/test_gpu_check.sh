#!/usr/bin/env bash
# gpu_check_rehearsal TESTS_DIR: scripts/gpu_check.sh run without a GPU
# (AX_REHEARSE=1: the GPU steps' SKIP paths, the CPU halves), on this build's
# binaries (axonn, and TESTS_DIR's test programs), the GPU hidden even where
# there is one. Its results folder must keep a GPU machine's rules:
#  - at most 8 files, no folder more than 2 below it, each file at most 16 MiB,
#    names of letters, digits, ".", "_", "-", nothing but files and folders;
#    exactly summary.md, speed.md and logs.tar.gz (a log per step in it);
#  - summary.md is the last thing printed;
#  - models, checkpoints and data in the scratch folder under /tmp that the
#    summary names (the checkpoint step's log shows its saves there), none in
#    the results or the logs, and the scratch removed at the end;
#  - the steps' limits add up to the budget, every step of plan.sh has a row;
#  - nothing fails (the CPU halves pass), verdict REHEARSAL;
#  - with a budget that holds no step (AX_BUDGET=4) every step is "not run",
#    counted apart from failures ("0 failed; N not run"), and the command
#    exits 0, with the same layout.
# SKIP (77) where axonn was built without the cuda backend.
REPO=$(cd "$(dirname "$0")/.." && pwd)
TESTS=${1:?usage: test_gpu_check.sh TESTS_DIR}
. "$(dirname "$0")/cli_lib.sh"
"$BIN" --version | grep -q "backends:.*cuda" || { echo "SKIP gpu_check_rehearsal: axonn has no cuda backend"; exit 77; }

mkdir -p bin hide
ln -s "$BIN" bin/axonn
for b in test_backend_cmp test_nccl test_ring tool_gemm_rate; do ln -s "$TESTS/$b" bin/$b; done
printf '#!/bin/sh\nexit 1\n' > hide/nvidia-smi # no GPU, whatever the machine has
chmod +x hide/nvidia-smi
export PATH=$W/hide:$PATH CUDA_VISIBLE_DEVICES="" AX_REHEARSE=1 AX_BIN=$W/bin AX_TRAIN_STEPS=10 AX_GRID_STEPS=4
steps=$(grep -cE '^ +step ' "$REPO/scripts/gpu_check/plan.sh")

# the rules of a GPU machine's results folder, on DIR
layout() {
  local d=$1 what=$2
  [ "$(find "$d" -type f | wc -l)" -le 8 ] && [ -z "$(find "$d" -mindepth 3 -type d)" ] &&
    [ -z "$(find "$d" -type f -size +16M)" ] && [ -z "$(find "$d" ! -type f ! -type d)" ] &&
    [ -z "$(find "$d" -mindepth 1 -printf '%f\n' | grep -vE '^[A-Za-z0-9._-]+$')" ] &&
    ok "$what: at most 8 plain files, 2 folders deep, 16 MiB each, plain names" || bad "$what: $(find "$d" -ls)"
  [ "$(cd "$d" && echo *)" = "logs.tar.gz speed.md summary.md" ] && ok "$what: summary.md, speed.md, logs.tar.gz" ||
    bad "$what: holds $(cd "$d" && echo *)"
  [ "$(tar -tzf "$d/logs.tar.gz" | grep -cE '^logs/[a-z0-9_]+\.log$')" = "$steps" ] &&
    ! tar -tzf "$d/logs.tar.gz" | grep -E 'safetensors|ckpt-|metrics|\.bin$' && ok "$what: a log per step, no model" ||
    bad "$what: logs.tar.gz holds $(tar -tzf "$d/logs.tar.gz" | tr '\n' ' ')"
  [ "$(tail -n "$(wc -l < "$d/summary.md")" "$W/$what.out")" = "$(cat "$d/summary.md")" ] &&
    ok "$what: summary.md printed last" || bad "$what: the output does not end with summary.md"
}

OUT=$W/not-here AX_LIMIT_SCALE=3 bash "$REPO/scripts/gpu_check.sh" "$W/r1" > "$W/r1.out" 2>&1
rc=$?
[ "$rc" = 0 ] && ok "rehearsal: exit 0" || { bad "rehearsal: exit $rc"; tail -40 "$W/r1.out"; }
layout "$W/r1" r1
S=$W/r1/summary.md
[ ! -e "$W/not-here" ] && ok "the first argument, not \$OUT, names the results" || bad "\$OUT was written"
scratch=$(sed -nE 's/^- budget .*; scratch ([^,]+), removed.*/\1/p' "$S")
case $scratch in /tmp/?*) [ ! -e "$scratch" ] && ok "scratch $scratch, in /tmp, removed" || bad "scratch $scratch left" ;;
*) bad "scratch '$scratch' not in /tmp" ;; esac
tar -xzOf "$W/r1/logs.tar.gz" logs/ckpt.log | grep -q "^saved $scratch/work/" && ok "checkpoints saved in the scratch" ||
  bad "no checkpoint saved in the scratch"
table=$(grep -E '^\| [a-z0-9_]+ \| [^|]+ \| [0-9]+ \| [0-9]+ \|$' "$S") # step, result, seconds, limit
lim=$(echo "$table" | awk -F'|' '{s += $5} END {print s}')
budget=$(sed -nE 's/^- budget ([0-9]+) s.*/\1/p' "$S")
[ "$(echo "$table" | wc -l)" = "$steps" ] && [ -n "$budget" ] && [ "$lim" = "$budget" ] &&
  ok "$steps steps, limits adding up to the budget ($budget s)" || bad "limits $lim s, budget '$budget' s, rows: $table"
echo "$table" | grep -q FAIL && bad "a step failed: $(echo "$table" | grep FAIL)" || ok "no step failed"
grep -q "^verdict: REHEARSAL" "$S" && ok "verdict REHEARSAL" || bad "verdict: $(grep verdict "$S")"

AX_BUDGET=4 bash "$REPO/scripts/gpu_check.sh" "$W/r2" > "$W/r2.out" 2>&1
rc=$?
layout "$W/r2" r2
S=$W/r2/summary.md
[ "$rc" = 0 ] && [ "$(grep -cE '^\| [a-z0-9_]+ \| not run \(' "$S")" = "$steps" ] &&
  grep -q "; 0 failed; $steps not run (the budget left could not hold them)" "$S" &&
  ok "AX_BUDGET=4: every step not run, none failed, exit 0" || bad "AX_BUDGET=4: exit $rc; $(grep -E '^\| |failed;' "$S")"
finish gpu_check_rehearsal
