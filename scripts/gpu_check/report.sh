# shellcheck shell=bash
# The GPU check's results (scripts/gpu_check.sh), rewritten after each step so
# that a command stopped early leaves what it had. RESULTS gets these three
# files and nothing else: a results folder of a GPU machine keeps at most 8
# files, 2 folders deep, 16 MiB each, named by letters, digits, ".", "_", "-".
#   summary.md    the versions, every step's result, the figures, the flash
#                 verdict, each log's lines that matter, the verdict
#   speed.md      the speed table (speed.sh)
#   logs.tar.gz   every step's log and output, each cut to its last LOG_CAP bytes
LOG_CAP=$((1024 * 1024))

report() {
  write_speed > "$RESULTS/speed.md"
  write_summary "${1:-}" > "$RESULTS/summary.md"
  pack_logs
}

# the end: the results, then the summary printed last (the figures survive a
# results folder that does not come back); fails where a step failed
finish() {
  report final
  echo "results: $RESULTS"
  cat "$RESULTS/summary.md"
  [ "$FAILS" = 0 ]
}

pack_logs() {
  local cut=$SCRATCH/cut f
  rm -rf "$cut"
  mkdir -p "$cut/logs"
  for f in "$LOGS"/*; do [ -f "$f" ] && tail -c "$LOG_CAP" "$f" > "$cut/logs/${f##*/}"; done
  tar -czf "$RESULTS/logs.tar.gz.part" -C "$cut" logs && mv "$RESULTS/logs.tar.gz.part" "$RESULTS/logs.tar.gz"
}

write_summary() {
  local final=$1
  echo "# GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo ""
  echo "- tree $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo '?'), binaries $(
    [ -n "${AX_BIN:-}" ] && echo "of AX_BIN" || echo "of the pack, commit $(cut -c 1-7 "$PACK/commit" 2> /dev/null || echo none)")"
  cat "$SCRATCH/machine.md" 2> /dev/null
  echo "- budget $BUDGET s$([ "$SCALE" = 1 ] || echo " (limits times AX_LIMIT_SCALE=$SCALE)"); scratch $SCRATCH, removed at the end"
  echo ""
  echo "| step | result | seconds | limit |"
  echo "| --- | --- | --- | --- |"
  cat "$ROWS"
  echo ""
  echo "total $(($(date +%s) - T0)) s of the $BUDGET s budget; $FAILS failed; $NOT_RUN not run (the budget left could not hold them)"
  echo ""
  sed '1s/^# /## /' "$RESULTS/speed.md"
  echo ""
  flash_verdict
  echo ""
  echo "## The lines that matter of each log (all of them: logs.tar.gz)"
  details
  echo ""
  if [ "$final" != final ]; then echo "verdict: UNFINISHED (the check stopped after step $(tail -1 "$ROWS" | cut -d'|' -f2))"
  elif [ "$HAVE_GPU" = 0 ]; then echo "verdict: REHEARSAL (no GPU: not evidence of anything on a GPU)"
  elif [ "$FAILS" != 0 ]; then echo "verdict: FAIL"
  elif [ "$NOT_RUN" != 0 ]; then echo "verdict: INCOMPLETE (nothing failed; $NOT_RUN step(s) not run)"
  else echo "verdict: PASS"; fi
}

# per step, the lines of its log that carry a figure or a verdict (the
# machine's steps: the lines above); a SKIP, its reason; a step that did not
# pass, its last lines too
details() {
  local name res f lines
  while IFS='|' read -r _ name res _; do
    name=${name// /} res=${res# } res=${res% }
    f=$LOGS/$name.log
    case $res in
    SKIP) lines=$(grep -m 1 -E "SKIP|no usable" "$f") ;;
    *) lines=$(figures "$name" "$f") ;;
    esac
    [ "$res" = ok ] || [ "$res" = SKIP ] || lines=$(printf '%s\n%s' "$lines" "$(tail -5 "$f")")
    lines=$(echo "$lines" | sed '/^$/d' | cut -c 1-200)
    [ -n "$lines" ] && printf '\n%s:\n```\n%s\n```\n' "$name" "$lines"
  done < "$ROWS"
  return 0
}

# figures NAME LOG: the lines that matter of step NAME's log
figures() {
  case $1 in
  ops) grep -E "FAIL|passed|device|opt-in" "$2" | head -20 ;;
  train) grep -E "^train|exit" "$2" ;;
  grids) grep -E "^grid |^eval |processes|failed|rehearsed" "$2" ;;
  ckpt) grep -E ": ok|FAIL|failed|differ" "$2" ;;
  nccl*) grep -E "passed|FAIL|blocked over" "$2" ;;
  sanitize | racecheck) grep -E "^--|ERROR SUMMARY|RACE|passed|error" "$2" | head -12 ;;
  gemm) grep -E "TFLOP/s" "$2" | head -12 ;;
  gpt* | llama*)
    grep -E "ms/iteration|model FLOP|^axonn: attention|^memory" "$2"
    grep -A 7 "^entry" "$2" | cut -c 1-100
    ;;
  torch) grep -E "ms_per_step|compile" "$2" | cut -c 1-160 ;;
  esac
}
