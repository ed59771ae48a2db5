#!/usr/bin/env bash
# cli_zero: ZeRO-1 (--zero 1) through the command line, its memory and its
# checkpoints, which hold whole logical tensors whatever the setting.
#  (a) memory: on D = 4 the start-up line's AdamW bytes are at most 0.3x
#      those of --zero 0 (a quarter, plus nothing: the share is exact).
#  (b) same grid, same setting: a run stopped with --exit-after and resumed
#      is byte-identical to the run never stopped, with the parallel writer,
#      with the root writer, and in bf16.
#  (c) across settings and grids: a --zero 1 checkpoint resumed with
#      --zero 0, on D = 2 x Z = 2, and on 1 rank; a --zero 0 checkpoint
#      resumed with --zero 1 on D = 2 x Z = 2: the later losses follow the
#      run never stopped to relative 1e-5 and the final parameters to 1e-4
#      absolute (other grids and settings sum in another order: the
#      tolerance of tests/test_cli_resume.sh (b)).
#  (d) --grid auto: the setting the planner chose is the one the run uses.
# The model's sizes (hidden 45, 5 heads) leave bucket ranges of lengths 4
# and 2 do not divide, so the shares' tails are saved and read too.
. "$(dirname "$0")/cli_lib.sh"

SIZE=(--n-layer 2 --n-head 5 --n-embd 45 --vocab-size 97 --block-size 16)
RUN=(--seq 16 --batch 8 --threads 1 --lr 3e-3 --warmup 2 --steps 10 --synthetic --log-every 1)

train() { # train NAME NP ARGS...
  local name=$1 np=$2; shift 2
  run "$name" "$np" train "$@"
}

cat >"$W/cmp.py" <<'EOF'
# cmp.py A.jsonl B.jsonl FIRST LAST RELTOL: the losses of steps FIRST..LAST
import json, sys
def read(p):
    return {j['step']: j['loss'] for j in map(json.loads, filter(str.strip, open(p))) if 'loss' in j}
A, B = read(sys.argv[1]), read(sys.argv[2])
lo, hi, tol = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
w = max(abs(A[s] - B[s]) / abs(A[s]) for s in range(lo, hi + 1))
print('losses of steps %d..%d: worst relative difference %.3g' % (lo, hi, w))
sys.exit(0 if w <= tol else 1)
EOF
cat >"$W/params.py" <<'EOF'
# params.py A.safetensors B.safetensors ABSTOL
import array, json, struct, sys
def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n]); d = b[8 + n:]
    return {k: array.array('f', d[v['data_offsets'][0]:v['data_offsets'][1]]) for k, v in h.items() if k != '__metadata__'}
A, B = load(sys.argv[1]), load(sys.argv[2])
w = max(max(abs(x - y) for x, y in zip(A[k], B[k])) for k in A) if sorted(A) == sorted(B) else float('inf')
print('final parameters: worst absolute difference %.3g' % w)
sys.exit(0 if w <= float(sys.argv[3]) else 1)
EOF
close_to() { # close_to LABEL A_DIR B_DIR FIRST
  local out
  if out=$(python3 "$W/cmp.py" "$2/metrics.jsonl" "$3/metrics.jsonl" "$4" 10 1e-5) &&
     out="$out; $(python3 "$W/params.py" "$2/model.safetensors" "$3/model.safetensors" 1e-4)"; then ok "$1: $out"
  else bad "$1: $out"; fi
}
same_model() {
  if cmp -s "$2/model.safetensors" "$3/model.safetensors"; then ok "$1: final model byte-identical"
  else bad "$1: final models differ"; fi
}

# ---------------------------------------------------------------- (a) memory
# a model of 5 MiB of AdamW state per rank, so that the line's 0.1 MiB steps are fine enough
adamw() { sed -n 's/.*AdamW \([0-9.]*\).*/\1/p' "$W/$1.log" | head -n 1; }
MEM=(--n-layer 4 --n-head 5 --n-embd 100 --vocab-size 97 --block-size 16 --seq 16 --batch 8 --steps 1 --synthetic)
if train mem0 4 "${MEM[@]}" --grid 4,1,1,1 --out "$W/mem0" && train mem1 4 "${MEM[@]}" --grid 4,1,1,1 --zero 1 --out "$W/mem1"; then
  a0=$(adamw mem0) a1=$(adamw mem1)
  if python3 -c "import sys; sys.exit(0 if 0 < $a1 <= 0.3 * $a0 else 1)"; then ok "a: AdamW $a1 MiB per rank, --zero 0: $a0"
  else bad "a: AdamW $a1 MiB per rank with --zero 1 on D = 4, $a0 without"; fi
fi
train z0 4 "${SIZE[@]}" "${RUN[@]}" --grid 4,1,1,1 --out "$W/z0"
train z1 4 "${SIZE[@]}" "${RUN[@]}" --grid 4,1,1,1 --zero 1 --out "$W/z1"

# ---------------------------------------------------------------- (b) same grid and setting: the same bytes
stop_resume() { # stop_resume NAME NP GRID ARGS...: stopped after 4, resumed to 10 in $W/NAME
  local name=$1 np=$2 grid=$3; shift 3
  train "$name" "$np" "${SIZE[@]}" "${RUN[@]}" --grid "$grid" --exit-after 4 --out "$W/$name" "$@" &&
    train "${name}_r" "$np" "${SIZE[@]}" "${RUN[@]}" --grid "$grid" --resume auto --out "$W/$name" "$@"
}
stop_resume b_parallel 4 4,1,1,1 --zero 1 && same_model "b parallel writer" "$W/z1" "$W/b_parallel"
stop_resume b_root 4 4,1,1,1 --zero 1 --ckpt-writer root && same_model "b root writer" "$W/z1" "$W/b_root"
if train b_bf16 4 "${SIZE[@]}" "${RUN[@]}" --grid 2,1,1,2 --zero 1 --dtype bf16 --out "$W/b_bf16"; then
  stop_resume b_bf16s 4 2,1,1,2 --zero 1 --dtype bf16 && same_model "b bf16 on 2,1,1,2" "$W/b_bf16" "$W/b_bf16s"
fi

# ---------------------------------------------------------------- (c) other settings and grids
from_ckpt() { # from_ckpt NAME NP GRID CKPT ARGS...
  local name=$1 np=$2 grid=$3 ck=$4; shift 4
  train "$name" "$np" "${RUN[@]}" --grid "$grid" --resume "$ck" --out "$W/$name" "$@"
}
CK1=$W/b_parallel/ckpt-000004
from_ckpt c_to0 4 4,1,1,1 "$CK1" --zero 0 && close_to "c --zero 1 checkpoint resumed with --zero 0" "$W/z1" "$W/c_to0" 5
from_ckpt c_d2z2 4 2,1,1,2 "$CK1" --zero 1 && close_to "c --zero 1 checkpoint resumed on 2,1,1,2" "$W/z1" "$W/c_d2z2" 5
from_ckpt c_one 1 1,1,1,1 "$CK1" && close_to "c --zero 1 checkpoint resumed on 1 rank" "$W/z1" "$W/c_one" 5
if stop_resume c_z0 4 4,1,1,1 --zero 0; then
  from_ckpt c_to1 4 2,1,1,2 "$W/c_z0/ckpt-000004" --zero 1 &&
    close_to "c --zero 0 checkpoint resumed with --zero 1 on 2,1,1,2" "$W/z0" "$W/c_to1" 5
fi
# ---------------------------------------------------------------- (d) --grid auto's choice is the run's
if train d_auto 2 "${SIZE[@]}" "${RUN[@]}" --steps 1 --grid auto --out "$W/d_auto"; then
  chose=$(sed -n 's/^grid auto:.* --zero \([01]\) (chosen.*/\1/p' "$W/d_auto.log")
  if grep -q "ZeRO-1" "$W/d_auto.log"; then ran=1; else ran=0; fi
  if [ -n "$chose" ] && [ "$chose" = "$ran" ]; then ok "d: --grid auto chose --zero $chose and the run used it"
  else bad "d: --grid auto chose '--zero $chose', the run's memory line says $ran"; fi
fi
finish cli_zero
