#!/usr/bin/env bash
# cli_resume: a run stopped with --exit-after and continued with --resume is
# the run that was never stopped.
#  (a) same grid: final model.safetensors byte-identical and the losses of the
#      resumed steps identical; synthetic data, then shards (2-file glob,
#      --val-data/--val-every, --grad-accum 2); also resuming from an explicit
#      older checkpoint directory, also into the same --out (metrics of the
#      steps after it replaced, not repeated).
#  (b) across grids: 1-rank 10 steps vs 2 ranks (1,1,2,1) --exit-after 5 resumed
#      on 4 ranks (2,2,1,1), and 4 ranks (1,2,1,2) resumed on 1 rank: steps
#      6..10 match to relative 1e-5, final parameters to 1e-4 absolute; and with
#      shards, validation and --grad-accum 2: 2 ranks (2,1,1,1) -> 4 (1,2,1,2);
#      context parallelism: saved with --cp 2 resumed on 1 rank and back, and
#      shards + validation on D=2 C=2 against the 1-rank run.
#  (c) checkpoints are whole: --save-every 3 --steps 7 leaves ckpt-000003,
#      ckpt-000006, ckpt-000007, each complete, and no *.tmp* anywhere.
#  (e) mixed precision: a bf16 run stopped and resumed (--dtype bf16) on the
#      same grid is byte-identical to the one never stopped; saved on 1,1,2,1
#      and resumed on 1 rank its losses follow the 1-rank bf16 run within 1e-3
#      (bf16 rounding amplifies reassociation: tests/test_grid_equiv.c).
#  (f) a signal: SIGTERM (1 rank) or SIGUSR1 through mpirun (2 ranks) stops the
#      run at a step boundary with a committed checkpoint, exit 128 + signal;
#      the checkpoint equals --exit-after's at the same step, byte for byte.
#  (d) --resume auto: with no checkpoint it starts fresh (saying so) and is the
#      uninterrupted run; it skips partial checkpoints (no manifest.json, a
#      *.tmp whose state names another step) and takes the newest complete
#      one; the .tmp is removed (an interrupted write), the directory without
#      a manifest is left as it is (no save of this program leaves one: it is
#      not the trainer's to delete); --keep 2 keeps the two newest complete
#      checkpoints. (tests/test_cli_ckpt_dirs.sh: the rest of what --out holds.)
. "$(dirname "$0")/cli_lib.sh"


# Model-size flags are given to fresh runs only: with --resume the size comes
# from the checkpoint's config.json and axonn rejects the size flags.
SIZE=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16)
RUN=(--seq 16 --batch 8 --threads 1 --quiet --lr 3e-3 --warmup 2)

# run NAME NRANKS ARGS...: axonn train; output in $W/NAME.log; 0 on success
run() {
  local name=$1 np=$2 rc; shift 2
  # without --data, train would build the default corpus: use the synthetic stream
  printf '%s\n' "$@" | grep -qx -- '--data' || set -- "$@" --synthetic
  if [ "$np" = 1 ]; then "$BIN" train "$@" >"$W/$name.log" 2>&1; rc=$?
  else timeout 300 "${MPI[@]}" -np "$np" "$BIN" train "$@" >"$W/$name.log" 2>&1; rc=$?; fi
  if [ "$rc" != 0 ]; then
    bad "$name: axonn train exited $rc"; sed 's/^/       | /' "$W/$name.log" | tail -n 8
    return 1
  fi
  return 0
}

cat >"$W/cmp.py" <<'EOF'
# cmp.py A.jsonl B.jsonl KEY FIRST LAST RELTOL: compare KEY of steps FIRST..LAST
import json, sys
a, b, key, lo, hi, tol = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
def read(p):
    d = {}
    for line in open(p):
        line = line.strip()
        if not line: continue
        j = json.loads(line)
        if key in j: d.setdefault(j['step'], []).append(j[key])
    return d
A, B = read(a), read(b)
worst, where, msg = 0.0, None, []
for s in range(lo, hi + 1):
    if s not in A or s not in B: msg.append('step %d missing %s' % (s, 'in A' if s not in A else 'in B')); continue
    if len(B[s]) != 1: msg.append('step %d logged %d times in B' % (s, len(B[s])))
    x, y = A[s][-1], B[s][-1]
    r = abs(x - y) / max(abs(x), 1e-30)
    if r > worst or where is None: worst, where = r, s
n = sum(1 for s in range(lo, hi + 1) if s in A and s in B)
print('%s steps %d..%d: %d compared, worst relative difference %.3g (step %s)%s'
      % (key, lo, hi, n, worst, where, ('; ' + '; '.join(msg)) if msg else ''))
sys.exit(0 if (not msg and n == hi - lo + 1 and worst <= tol) else 1)
EOF

cat >"$W/params.py" <<'EOF'
# params.py A.safetensors B.safetensors ABSTOL: same tensors, values within ABSTOL
import array, json, struct, sys
def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n]); d = b[8 + n:]; out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; a = array.array('f'); a.frombytes(d[s:e]); out[k] = (v['shape'], a)
    return out
A, B = load(sys.argv[1]), load(sys.argv[2]); tol = float(sys.argv[3])
if sorted(A) != sorted(B) or any(A[k][0] != B[k][0] for k in A):
    print('tensor names or shapes differ'); sys.exit(1)
worst, where = 0.0, None
for k in A:
    d = max(abs(x - y) for x, y in zip(A[k][1], B[k][1]))
    if where is None or d > worst: worst, where = d, k
print('final parameters: worst absolute difference %.3g (%s), %d tensors' % (worst, where, len(A)))
sys.exit(0 if worst <= tol else 1)
EOF

check_params() {
  local label=$1 out; shift
  if out=$(python3 "$W/params.py" "$@"); then ok "$label: $out"; else bad "$label: $out"; fi
}

# check_losses LABEL A B KEY FIRST LAST TOL
check_losses() {
  local label=$1 out; shift
  if out=$(python3 "$W/cmp.py" "$@"); then ok "$label: $out"; else bad "$label: $out"; fi
}
check_same_file() {
  if cmp -s "$2" "$3"; then ok "$1: $(basename "$2") byte-identical"; else bad "$1: $2 and $3 differ"; fi
}

# ---------------------------------------------------------------- (a) same grid, synthetic data
if run a_straight 1 "${SIZE[@]}" "${RUN[@]}" --steps 12 --out "$W/a1" &&
   run a_first 1 "${SIZE[@]}" "${RUN[@]}" --steps 12 --exit-after 6 --out "$W/a2"; then
  if [ -f "$W/a2/ckpt-000006/state.json" ] && [ ! -e "$W/a2/model.safetensors" ]; then
    ok "a: --exit-after 6 left ckpt-000006 and no final model"
  else bad "a: after --exit-after 6: $(cd "$W/a2" && ls | tr '\n' ' ')"; fi
  if run a_resumed 1 "${RUN[@]}" --steps 12 --resume "$W/a2" --out "$W/a2"; then
    check_same_file "a synthetic" "$W/a1/model.safetensors" "$W/a2/model.safetensors"
    check_losses "a synthetic" "$W/a1/metrics.jsonl" "$W/a2/metrics.jsonl" loss 7 12 0
    check_losses "a synthetic, steps before the stop" "$W/a1/metrics.jsonl" "$W/a2/metrics.jsonl" loss 1 6 0
  fi
  # an explicit (older) checkpoint directory, from a fresh --out
  if run a_explicit 1 "${SIZE[@]}" "${RUN[@]}" --steps 12 --save-every 4 --out "$W/a3" &&
     run a_from4 1 "${RUN[@]}" --steps 12 --resume "$W/a3/ckpt-000004" --out "$W/a4"; then
    check_same_file "a resume from ckpt-000004 into a new --out" "$W/a1/model.safetensors" "$W/a4/model.safetensors"
    check_losses "a resume from ckpt-000004" "$W/a1/metrics.jsonl" "$W/a4/metrics.jsonl" loss 5 12 0
  fi
  # back to ckpt-000004 inside the same --out (as after a crash past it): the
  # metrics of steps 5..12 are replaced, not repeated
  if run a_rollback 1 "${RUN[@]}" --steps 12 --resume "$W/a3/ckpt-000004" --out "$W/a3"; then
    steps=$(python3 -c 'import json, sys
print(" ".join(str(json.loads(l)["step"]) for l in open(sys.argv[1]) if "\"loss\"" in l))' "$W/a3/metrics.jsonl")
    if [ "$steps" = "$(seq -s ' ' 1 12)" ]; then ok "a rollback to ckpt-000004: each step logged once"
    else bad "a rollback to ckpt-000004: logged steps $steps"; fi
    check_losses "a rollback to ckpt-000004" "$W/a1/metrics.jsonl" "$W/a3/metrics.jsonl" loss 1 12 0
  fi
fi

# ---------------------------------------------------------------- (a) same grid, shards + validation + accumulation
python3 - "$W" <<'EOF'
import struct, sys
W = sys.argv[1]
def shard(path, toks):
    hdr = [0] * 256; hdr[0], hdr[1], hdr[2] = 20240520, 1, len(toks)
    open(path, 'wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % len(toks), *toks))
x = 12345
def tokens(n):
    global x
    out = []
    for _ in range(n):
        x = (1103515245 * x + 12345) % (1 << 31)
        out.append((x >> 8) % 97 if len(out) % 5 == 0 else (out[-1] * 3 + 1) % 97 if out else 0)
    return out
shard(W + '/train_000.bin', tokens(16 * 9 + 1))     # 9 sequences of T=16
shard(W + '/train_001.bin', tokens(16 * 7 + 1))     # 7 more: the run of 12 x 8 crosses several epochs
shard(W + '/val_000.bin', tokens(16 * 10 + 1))
EOF
DATA=(--data "$W/train_*.bin" --val-data "$W/val_000.bin" --val-every 4 --val-batches 2 --grad-accum 2)
if run s_straight 1 "${SIZE[@]}" "${RUN[@]}" "${DATA[@]}" --steps 12 --out "$W/s1" &&
   run s_first 1 "${SIZE[@]}" "${RUN[@]}" "${DATA[@]}" --steps 12 --exit-after 6 --out "$W/s2" &&
   run s_resumed 1 "${RUN[@]}" "${DATA[@]}" --steps 12 --resume "$W/s2" --out "$W/s2"; then
  check_same_file "a shards+val+accum" "$W/s1/model.safetensors" "$W/s2/model.safetensors"
  check_losses "a shards+val+accum" "$W/s1/metrics.jsonl" "$W/s2/metrics.jsonl" loss 7 12 0
  check_losses "a shards+val+accum" "$W/s1/metrics.jsonl" "$W/s2/metrics.jsonl" val_loss 8 8 0
  check_losses "a shards+val+accum" "$W/s1/metrics.jsonl" "$W/s2/metrics.jsonl" val_loss 12 12 0
fi

# ---------------------------------------------------------------- (b) across grids
if run b_ref 1 "${SIZE[@]}" "${RUN[@]}" --steps 10 --out "$W/b1"; then
  if run b_y2 2 "${SIZE[@]}" "${RUN[@]}" --grid 1,1,2,1 --steps 10 --exit-after 5 --out "$W/b2"; then
    check_losses "b 1 rank vs grid 1,1,2,1 (before the stop)" "$W/b1/metrics.jsonl" "$W/b2/metrics.jsonl" loss 1 5 1e-5
    if run b_y2_to_d2x2 4 "${RUN[@]}" --grid 2,2,1,1 --steps 10 --resume "$W/b2" --out "$W/b2"; then
      check_losses "b saved on 1,1,2,1, resumed on 2,2,1,1" "$W/b1/metrics.jsonl" "$W/b2/metrics.jsonl" loss 6 10 1e-5
      check_params "b saved on 1,1,2,1, resumed on 2,2,1,1" "$W/b1/model.safetensors" "$W/b2/model.safetensors" 1e-4
    fi
  fi
  if run b_x2z2 4 "${SIZE[@]}" "${RUN[@]}" --grid 1,2,1,2 --steps 10 --exit-after 5 --out "$W/b3"; then
    check_losses "b 1 rank vs grid 1,2,1,2 (before the stop)" "$W/b1/metrics.jsonl" "$W/b3/metrics.jsonl" loss 1 5 1e-5
    if run b_x2z2_to_1 1 "${RUN[@]}" --steps 10 --resume "$W/b3" --out "$W/b3"; then
      check_losses "b saved on 1,2,1,2, resumed on 1 rank" "$W/b1/metrics.jsonl" "$W/b3/metrics.jsonl" loss 6 10 1e-5
      check_params "b saved on 1,2,1,2, resumed on 1 rank" "$W/b1/model.safetensors" "$W/b3/model.safetensors" 1e-4
    fi
  fi
fi

# context parallelism: saved with C = 2 (--cp 2, 2 ranks) and resumed on 1 rank, and back;
# with shards, validation and accumulation: C = 2 next to data 2 (4 ranks), uninterrupted
if [ -f "$W/b1/metrics.jsonl" ]; then
  if run b_cp2 2 "${SIZE[@]}" "${RUN[@]}" --cp 2 --steps 10 --exit-after 5 --out "$W/b4"; then
    check_losses "b 1 rank vs --cp 2 (before the stop)" "$W/b1/metrics.jsonl" "$W/b4/metrics.jsonl" loss 1 5 1e-5
    if run b_cp2_to_1 1 "${RUN[@]}" --steps 10 --resume "$W/b4" --out "$W/b4"; then
      check_losses "b saved with --cp 2, resumed on 1 rank" "$W/b1/metrics.jsonl" "$W/b4/metrics.jsonl" loss 6 10 1e-5
      check_params "b saved with --cp 2, resumed on 1 rank" "$W/b1/model.safetensors" "$W/b4/model.safetensors" 1e-4
    fi
  fi
  if run b_1_stop 1 "${SIZE[@]}" "${RUN[@]}" --steps 10 --exit-after 5 --out "$W/b5" &&
     run b_1_to_cp2 2 "${RUN[@]}" --cp 2 --steps 10 --resume "$W/b5" --out "$W/b5"; then
    check_losses "b saved on 1 rank, resumed with --cp 2" "$W/b1/metrics.jsonl" "$W/b5/metrics.jsonl" loss 6 10 1e-5
    check_params "b saved on 1 rank, resumed with --cp 2" "$W/b1/model.safetensors" "$W/b5/model.safetensors" 1e-4
  fi
fi

# shards + validation + accumulation across grids: data 2 -> 4 ranks (x 2, z 2)
if run bs_ref 1 "${SIZE[@]}" "${RUN[@]}" "${DATA[@]}" --steps 10 --out "$W/bs1" &&
   run bs_d2 2 "${SIZE[@]}" "${RUN[@]}" "${DATA[@]}" --grid 2,1,1,1 --steps 10 --exit-after 5 --out "$W/bs2" &&
   run bs_d2_to_x2z2 4 "${RUN[@]}" "${DATA[@]}" --grid 1,2,1,2 --steps 10 --resume "$W/bs2" --out "$W/bs2"; then
  check_losses "b shards+val+accum saved on 2,1,1,1, resumed on 1,2,1,2" "$W/bs1/metrics.jsonl" "$W/bs2/metrics.jsonl" loss 1 10 1e-5
  check_losses "b shards+val+accum saved on 2,1,1,1, resumed on 1,2,1,2" "$W/bs1/metrics.jsonl" "$W/bs2/metrics.jsonl" val_loss 8 8 1e-5
  check_losses "b shards+val+accum saved on 2,1,1,1, resumed on 1,2,1,2" "$W/bs1/metrics.jsonl" "$W/bs2/metrics.jsonl" val_loss 10 10 1e-5
fi
if [ -f "$W/bs1/metrics.jsonl" ] && run bs_cp2 4 "${SIZE[@]}" "${RUN[@]}" "${DATA[@]}" --cp 2 --steps 10 --out "$W/bs3"; then
  check_losses "b shards+val+accum on D=2 C=2" "$W/bs1/metrics.jsonl" "$W/bs3/metrics.jsonl" loss 1 10 1e-5
  check_losses "b shards+val+accum on D=2 C=2" "$W/bs1/metrics.jsonl" "$W/bs3/metrics.jsonl" val_loss 8 8 1e-5
fi

# ---------------------------------------------------------------- (f) a signal stops the run
# SIGTERM to a lone rank, and SIGUSR1 to mpirun (which forwards it to every rank): the run
# stops at the next step boundary, commits a checkpoint of the steps done and exits 128 +
# the signal; that checkpoint is byte for byte the one --exit-after leaves at the same step.
LONG=(--steps 100000 --save-every 100000)
signal_stop() { # NAME NP SIGNAL SIGNUM
  local name=$1 np=$2 sig=$3 num=$4 pid rc ck i
  local args=(train --synthetic "${SIZE[@]}" "${RUN[@]}" "${LONG[@]}" --grid 1,1,"$np",1 --out "$W/$name")
  if [ "$np" = 1 ]; then "$BIN" "${args[@]}" >"$W/$name.log" 2>&1 &
  else "${MPI[@]}" -np "$np" "$BIN" "${args[@]}" >"$W/$name.log" 2>&1 & fi
  pid=$!
  for i in $(seq 300); do [ "$(grep -c '"step"' "$W/$name/metrics.jsonl" 2>/dev/null)" -ge 5 ] && break; sleep 0.1; done
  kill -"$sig" "$pid"
  wait "$pid"; rc=$?
  ck=$(ls -d "$W/$name"/ckpt-* 2>/dev/null | tail -n 1)
  if [ "$rc" != $((128 + num)) ] || [ -z "$ck" ] || [ ! -f "$ck/manifest.json" ] || ls "$W/$name" | grep -q tmp; then
    bad "f $name: SIG$sig: exit $rc (expected $((128 + num))), checkpoint '${ck##*/}', $(ls "$W/$name" | tr '\n' ' ')"
    tail -n 3 "$W/$name.log" | sed 's/^/       | /'
    return
  fi
  local n=$((10#${ck##*ckpt-}))
  if run "${name}_ref" "$np" "${SIZE[@]}" "${RUN[@]}" "${LONG[@]}" --grid 1,1,"$np",1 --exit-after "$n" --out "$W/${name}_ref"; then
    check_same_file "f SIG$sig on $np rank(s), stopped after step $n" "$W/${name}_ref/ckpt-$(printf %06d "$n")/model.safetensors" "$ck/model.safetensors"
    check_same_file "f SIG$sig on $np rank(s), stopped after step $n" "$W/${name}_ref/ckpt-$(printf %06d "$n")/optim.safetensors" "$ck/optim.safetensors"
  fi
}
signal_stop f_term 1 TERM 15
signal_stop f_usr1 2 USR1 10

# ---------------------------------------------------------------- (e) bf16
BF=(--dtype bf16)
if run e_straight 1 "${SIZE[@]}" "${RUN[@]}" "${BF[@]}" --steps 10 --out "$W/e1" &&
   run e_first 1 "${SIZE[@]}" "${RUN[@]}" "${BF[@]}" --steps 10 --exit-after 5 --out "$W/e2" &&
   run e_resumed 1 "${RUN[@]}" "${BF[@]}" --steps 10 --resume "$W/e2" --out "$W/e2"; then
  check_same_file "e bf16" "$W/e1/model.safetensors" "$W/e2/model.safetensors"
  check_losses "e bf16" "$W/e1/metrics.jsonl" "$W/e2/metrics.jsonl" loss 6 10 0
  if run e_y2 2 "${SIZE[@]}" "${RUN[@]}" "${BF[@]}" --grid 1,1,2,1 --steps 10 --exit-after 5 --out "$W/e3" &&
     run e_y2_to_1 1 "${RUN[@]}" "${BF[@]}" --steps 10 --resume "$W/e3" --out "$W/e3"; then
    check_losses "e bf16 saved on 1,1,2,1, resumed on 1 rank" "$W/e1/metrics.jsonl" "$W/e3/metrics.jsonl" loss 1 10 1e-3
  fi
  if [ -f "$W/a1/metrics.jsonl" ]; then   # bf16 differs from fp32 (it is not fp32 under another name), a little
    if python3 "$W/cmp.py" "$W/a1/metrics.jsonl" "$W/e1/metrics.jsonl" loss 1 10 0 >/dev/null; then
      bad "e bf16: losses identical to the fp32 run"
    else check_losses "e bf16 against fp32" "$W/a1/metrics.jsonl" "$W/e1/metrics.jsonl" loss 1 10 2e-2; fi
  fi
fi

# ---------------------------------------------------------------- (c) whole checkpoints
if run c_save 1 "${SIZE[@]}" "${RUN[@]}" --steps 7 --save-every 3 --out "$W/c"; then
  got=$(cd "$W/c" && ls -d ckpt-* 2>/dev/null | tr '\n' ' ')
  if [ "$got" = "ckpt-000003 ckpt-000006 ckpt-000007 " ]; then ok "c: checkpoints $got"
  else bad "c: checkpoints '$got', expected ckpt-000003 ckpt-000006 ckpt-000007"; fi
  for s in 3 6 7; do
    d=$(printf '%s/c/ckpt-%06d' "$W" "$s"); missing=""
    for f in model.safetensors optim.safetensors config.json state.json manifest.json; do
      [ -s "$d/$f" ] || missing="$missing $f"
    done
    step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$d/state.json" 2>/dev/null)
    if [ -z "$missing" ] && [ "$step" = "$s" ]; then ok "c: $(basename "$d") whole (5 files, state.json step $step)"
    else bad "c: $(basename "$d") missing:${missing:- none}, state.json step '${step}'"; fi
  done
  tmps=$(find "$W" -name '*.tmp*')
  if [ -z "$tmps" ]; then ok "c: no *.tmp* files left"; else bad "c: left $tmps"; fi
fi

# ---------------------------------------------------------------- (d) --resume auto, --keep
if run d_fresh 1 "${SIZE[@]}" "${RUN[@]}" --steps 12 --save-every 2 --keep 2 --resume auto --out "$W/d"; then
  if grep -q "resume auto: no complete checkpoint in $W/d; starting fresh" "$W/d_fresh.log"; then ok "d: no checkpoint: starts fresh with a notice"
  else bad "d: no 'starting fresh' notice in the log"; fi
  check_same_file "d fresh --resume auto" "$W/a1/model.safetensors" "$W/d/model.safetensors"
  got=$(cd "$W/d" && ls -d ckpt-* 2>/dev/null | tr '\n' ' ')
  if [ "$got" = "ckpt-000010 ckpt-000012 " ]; then ok "d: --keep 2 left $got"
  else bad "d: --keep 2 left '$got', expected ckpt-000010 ckpt-000012"; fi
fi
# partial checkpoints beside complete ones: a later step without its manifest, a .tmp
if run d_six 1 "${SIZE[@]}" "${RUN[@]}" --steps 12 --exit-after 6 --save-every 3 --out "$W/e"; then
  cp -r "$W/e/ckpt-000006" "$W/e/ckpt-000009"; rm "$W/e/ckpt-000009/manifest.json"
  cp -r "$W/e/ckpt-000006" "$W/e/ckpt-000011.tmp"
  if run d_auto 1 "${SIZE[@]}" "${RUN[@]}" --steps 12 --resume auto --out "$W/e"; then
    if grep -q "resumed from $W/e/ckpt-000006 at step 6" "$W/d_auto.log"; then ok "d: --resume auto took ckpt-000006, skipping the partial ckpt-000009 and ckpt-000011.tmp"
    else bad "d: --resume auto: $(grep -m1 resumed "$W/d_auto.log")"; fi
    check_same_file "d --resume auto past partial checkpoints" "$W/a1/model.safetensors" "$W/e/model.safetensors"
    got=$(cd "$W/e" && ls -d ckpt-* 2>/dev/null | tr '\n' ' ')
    if [ "$got" = "ckpt-000003 ckpt-000006 ckpt-000009 ckpt-000012 " ]; then ok "d: after the next save, the .tmp removed, the rest kept: $got"
    else bad "d: after the next save: '$got', expected ckpt-000003 ckpt-000006 ckpt-000009 ckpt-000012"; fi
  fi
fi

finish cli_resume
