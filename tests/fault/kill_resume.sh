#!/usr/bin/env bash
# Fault injection: kill one rank of a running job with SIGKILL, relaunch the
# same command (--resume auto) until the run completes, and compare the final
# weights bitwise with an uninterrupted run.
#
#   tests/fault/kill_resume.sh [TRIALS [SAVE_KILLS]]     (default 2 and 1)
#
# 8 ranks on grid D=1, X=2, Y=2, Z=2: the smallest grid with X, Y and Z all
# above 1 (4 ranks cannot have all three > 1). Tiny model, synthetic data,
# checkpoints every 5 of 60 steps, --keep 2. Each trial picks a random rank and
# a random moment within the run (RANDOM seeded by $SEED, default 1, so a
# failing trial can be replayed). SAVE_KILLS more trials kill a random rank
# (every rank writes its share of the files) the moment a checkpoint directory
# *.tmp appears: a kill during a checkpoint write, which with --async-save (the
# default) runs in the background while training goes on. Every launch is bounded by `timeout` (a hang fails the
# trial); a trial fails unless the final model.safetensors is byte-identical to
# the uninterrupted run's. Results: one line per trial, then a summary.
# Needs AXONN_BIN (and AXONN_MPIEXEC, as CTest sets them); runs by hand too
# (8 ranks: on a machine of fewer cores Open MPI wants --oversubscribe):
#   AXONN_BIN=build/axonn AXONN_MPIEXEC="mpiexec --oversubscribe --bind-to none" OMP_NUM_THREADS=1 \
#     bash tests/fault/kill_resume.sh 10 2
. "$(dirname "$0")/../cli_lib.sh"
TRIALS=${1:-2}; SAVE_KILLS=${2:-1}
RANDOM=${SEED:-1}
ARGS=(train --synthetic --n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16 --seq 16 --batch 8
      --threads 1 --quiet --lr 3e-3 --warmup 2 --grid 1,2,2,2 --steps 60 --save-every 5 --keep 2 --resume auto)
NP=8 TMO=120 MAX_LAUNCHES=6

launch() { timeout "$TMO" "${MPI[@]}" -np "$NP" "$BIN" "${ARGS[@]}" --out "$1" >>"$1.log" 2>&1; }

t0=$(date +%s.%N)
if ! launch "$W/ref"; then bad "uninterrupted run failed: $(tail -n 3 "$W/ref.log")"; finish kill_resume; fi
ref_s=$(python3 -c "import time; print(time.time() - $t0)")

# rank_of PID: the MPI rank of a process, from the launcher's environment variable
rank_of() { { tr '\0' '\n' <"/proc/$1/environ"; } 2>/dev/null | sed -n 's/^\(OMPI_COMM_WORLD_RANK\|PMI_RANK\)=//p' | head -n 1; }

# kill_one OUT MODE: starts the job in the background and kills one rank with SIGKILL:
# MODE random: a random rank at a random moment of training;
# MODE save: a random rank as soon as a checkpoint write (ckpt-*.tmp) is under way,
# past a random one of the first 8 saves.
# Prints what it did.
kill_one() {
  local out=$1 mode=$2 pid ranks victim what
  "${MPI[@]}" -np "$NP" "$BIN" "${ARGS[@]}" --out "$out" >>"$out.log" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + TMO))
  if [ "$mode" = random ]; then
    # a random step (rank 0 logs each to metrics.jsonl), then 0..30 ms more:
    # start-up is most of the wall time, so a random time would mostly miss the training
    # (not the last steps: under load the kill lands late and would miss the run)
    local at=$(( RANDOM % 54 + 1 )) us=$(( RANDOM % 30000 ))
    while [ "$SECONDS" -lt "$deadline" ]; do
      [ "$(cat "$out/metrics.jsonl" 2>/dev/null | wc -l)" -ge "$at" ] && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.001
    done
    sleep "$(printf '0.%06d' "$us")"
    ranks=($(pgrep -P "$pid" -x axonn))
    [ ${#ranks[@]} -gt 0 ] && victim=${ranks[$((RANDOM % ${#ranks[@]}))]}
    what="with $(cat "$out/metrics.jsonl" 2>/dev/null | wc -l) of 60 steps logged (aimed: step $at + $((us / 1000)) ms)"
  else
    local r seen want=$(( RANDOM % NP ))
    while [ -z "${victim:-}" ] && [ "$SECONDS" -lt "$deadline" ] && kill -0 "$pid" 2>/dev/null; do
      for r in $(pgrep -P "$pid" -x axonn); do [ "$(rank_of "$r")" = "$want" ] && victim=$r; done
    done
    local after=$(( RANDOM % 8 * 5 ))          # which save: past step 0, 5, ..., 35
    while [ "$(cat "$out/metrics.jsonl" 2>/dev/null | wc -l)" -lt "$after" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.001; done
    # busy, and nothing between seeing the directory and the kill: the window is milliseconds
    while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$pid" 2>/dev/null; do
      seen=$(compgen -G "$out/ckpt-*.tmp") && kill -KILL "$victim" 2>/dev/null && break
    done
    what="while ${seen##*/} was being written"
  fi
  local rank=${want:-0}
  [ "$mode" = random ] && [ -n "${victim:-}" ] && rank=$(rank_of "$victim")
  if [ "$mode" = save ] && [ -n "${seen:-}" ]; then
    what="SIGKILL to rank $rank $what"
  elif [ "$mode" = random ] && [ -n "${victim:-}" ] && kill -KILL "$victim" 2>/dev/null; then
    what="SIGKILL to rank ${rank:-?} $what"
  else what="no rank left to kill ($what): the run had ended"; fi
  timeout "$TMO" tail --pid="$pid" -f /dev/null; local rc=$?
  wait "$pid"; local jrc=$?
  [ "$rc" = 124 ] && what="$what; HUNG: the job did not end after the kill"
  echo "$what; job exit $jrc"
}

trial() {
  local name=$1 mode=$2 out="$W/$1" n=1 rc desc
  desc=$(kill_one "$out" "$mode")
  case "$desc" in *HUNG*) bad "$name: $desc"; return ;; esac
  local left; left=$(cd "$out" 2>/dev/null && ls -d ckpt-* 2>/dev/null | tr '\n' ' ')
  rc=${desc##*job exit }           # a killed job is relaunched even if its model was already written
  until [ "$rc" = 0 ] && [ -f "$out/model.safetensors" ]; do
    n=$((n + 1))
    if [ "$n" -gt "$MAX_LAUNCHES" ]; then bad "$name: $desc; not done after $MAX_LAUNCHES launches"; return; fi
    launch "$out"; rc=$?
    if [ "$rc" = 124 ]; then bad "$name: $desc; relaunch $n hung"; return; fi
    if [ "$rc" != 0 ]; then bad "$name: $desc; relaunch $n exited $rc: $(grep -m1 'axonn: error' "$out.log")"; return; fi
  done
  local from; from=$(grep -oE 'resumed from [^ ]+ at step [0-9]+|starting fresh' "$out.log" | tail -n 1)
  if cmp -s "$W/ref/model.safetensors" "$out/model.safetensors"; then
    ok "$name: $desc; left [${left}]; $n launches, last $from; final weights bitwise identical"
  else bad "$name: $desc; left [${left}]; $n launches, last $from; final weights DIFFER"; fi
}

for t in $(seq 1 "$TRIALS"); do trial "trial$t" random; done
for t in $(seq 1 "$SAVE_KILLS"); do trial "save_kill$t" save; done
echo "uninterrupted run: $(printf '%.1f' "$ref_s") s on $NP ranks (grid 1,2,2,2)"
finish kill_resume
