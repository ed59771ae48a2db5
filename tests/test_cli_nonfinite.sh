#!/usr/bin/env bash
# cli_nonfinite: a step whose loss or gradient norm is not finite is skipped on
# every rank (no update, no checkpoint), logged with its step number, and after
# --max-skips consecutive skips the run stops with exit status 3 and one line
# naming the last good checkpoint.
# The trigger is real, not a hook: --lr 10 --weight-decay 10 (both accepted)
# multiplies every matrix by 1 - lr*wd = -99 per step, so the parameters
# overflow float32 after a few steps and the gradient norm becomes NaN.
. "$(dirname "$0")/cli_lib.sh"

SIZE=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16 --seq 16 --batch 8 --threads 1 --log-every 1)
BAD=(--synthetic --steps 30 --lr 10 --weight-decay 10 --warmup 0 --save-every 4 --max-skips 3)

# check NAME NRANKS GRID: run, then the checks on its output
check() {
  local name=$1 np=$2 grid=$3 rc out="$W/$1"
  if [ "$np" = 1 ]; then timeout 120 "$BIN" train "${SIZE[@]}" "${BAD[@]}" --out "$out" >"$W/$name.log" 2>"$W/$name.err"; rc=$?
  else timeout 120 "${MPI[@]}" -np "$np" "$BIN" train "${SIZE[@]}" "${BAD[@]}" --grid "$grid" --out "$out" >"$W/$name.log" 2>"$W/$name.err"; rc=$?; fi
  if [ "$rc" = 3 ]; then ok "$name: exit status 3"; else bad "$name: exit status $rc, expected 3"; sed 's/^/       | /' "$W/$name.err" | tail -n 5; return; fi
  local skipped first last err
  skipped=$(grep -oE '^step [0-9]+: loss .*not finite, update skipped \(([0-9]+) in a row' "$W/$name.log" | grep -oE '^step [0-9]+' | cut -d' ' -f2 | tr '\n' ' ')
  first=$(echo "$skipped" | cut -d' ' -f1); last=$(echo "$skipped" | cut -d' ' -f3)
  if [ -n "$first" ] && [ "$skipped" = "$first $((first + 1)) $((first + 2)) " ]; then ok "$name: steps $skipped logged as skipped"
  else bad "$name: skipped steps '$skipped', expected 3 consecutive"; return; fi
  err=$(grep -c '^axonn: error:' "$W/$name.err")
  # the last checkpoint is the newest save before the first skipped step
  local good=$(( (first - 1) / 4 * 4 ))
  local want; want=$(printf '%s/ckpt-%06d' "$out" "$good")
  if [ "$err" = 1 ] && grep -qE "^axonn: error: step $last: 3 consecutive steps with a non-finite .*last good checkpoint: $want\$" "$W/$name.err"; then
    ok "$name: one error line naming step $last and $(basename "$want")"
  else bad "$name: $err error lines: $(grep '^axonn: error:' "$W/$name.err" | head -n 2)"; fi
  local got; got=$(cd "$out" && ls -d ckpt-* 2>/dev/null | tail -n 1)
  if [ "$got" = "$(basename "$want")" ] && [ ! -e "$out/model.safetensors" ]; then ok "$name: newest checkpoint $got, no final model"
  else bad "$name: newest checkpoint '$got' (expected $(basename "$want")), final model $( [ -e "$out/model.safetensors" ] && echo written || echo absent)"; fi
  if python3 - "$out/metrics.jsonl" "$skipped" <<'EOF'; then ok "$name: metrics.jsonl marks the skipped steps"; else bad "$name: metrics.jsonl does not mark steps $skipped"; fi
import json, sys
want = [int(s) for s in sys.argv[2].split()]
got = [j['step'] for j in map(json.loads, open(sys.argv[1])) if j.get('skipped')]
sys.exit(0 if got == want else 1)
EOF
}

check one_rank 1 1,1,1,1
check four_ranks_xy 4 1,2,2,1
check four_ranks_dz 4 2,1,1,2

finish cli_nonfinite
