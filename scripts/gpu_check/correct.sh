# shellcheck shell=bash
# The GPU check's correctness steps (plan.sh runs them): every CUDA op against
# the CPU backend under each attention path, the tiny model's loss curves on
# the GPU against the CPU, the sanitizers on the attention kernels, grids of
# ranks sharing the GPU, checkpoints, NCCL and ring attention's transfers.
# Each writes its log on stdout; models and data go to WORK (/tmp), longer
# outputs to LOGS.
#
# The flash verdict in summary.md (the evidence to make flash the default):
# every bf16 flash and auto row of the op table within its tolerance, the
# flash loss curve within 1% of the CPU's at step 200, the sanitizers clean.

# every op against the CPU backend; a failure is run again under compute-sanitizer
ops_cmp() {
  "$BIN/test_backend_cmp" && return 0
  local rc=$?
  [ "$rc" = 77 ] && return 77
  command -v compute-sanitizer >/dev/null &&
    timeout 20 compute-sanitizer --tool memcheck --print-limit 20 "$BIN/test_backend_cmp" attention 2>&1 | tail -40
  return $rc
}

# the tiny model 200 steps (AX_TRAIN_STEPS) on the CPU in fp32 and on the GPU in
# fp32, and in bf16 under mm and flash: each final loss within 1% of the CPU's
train_cmp() {
  local args=(train --synthetic --steps "${AX_TRAIN_STEPS:-200}" --val-every 0 --save-every 0 --log-every 10 --seed 1337)
  local rc=0 run r
  "$BIN/axonn" "${args[@]}" --backend cpu --out "$WORK/train_cpu" > "$LOGS/train_cpu.out" 2>&1 ||
    { echo "cpu run failed"; tail -5 "$LOGS/train_cpu.out"; return 1; }
  for run in fp32:default bf16:mm bf16:flash; do
    local dt=${run%%:*} at=${run#*:} tag=train_gpu_${run/:/_}
    AXONN_CUDA_ATTN=$([ "$at" = default ] || echo "$at") "$BIN/axonn" "${args[@]}" --backend cuda --dtype "$dt" \
      --out "$WORK/$tag" > "$LOGS/$tag.out" 2>&1
    r=$?
    echo "gpu $dt ($at attention): exit $r"
    tail -3 "$LOGS/$tag.out"
    grep -q "no usable CUDA device" "$LOGS/$tag.out" && return 77 # the CPU half ran; with a GPU a failure
    if [ "$r" -ne 0 ]; then # kernels run queued: a fault surfaces late; drained after each entry it names its kernel
      AXONN_CUDA_SYNC=1 "$BIN/axonn" train --synthetic --steps 3 --val-every 0 --save-every 0 --backend cuda \
        --dtype "$dt" --out "$WORK/${tag}_sync" > "$LOGS/${tag}_sync.out" 2>&1
      echo "again with AXONN_CUDA_SYNC=1: exit $?"
      tail -3 "$LOGS/${tag}_sync.out"
      rc=1
      continue
    fi
    python3 - "$WORK/train_cpu/metrics.jsonl" "$WORK/$tag/metrics.jsonl" "$dt $at" << 'PY' || rc=1
import json, sys
def curve(p):
    try: return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r and "step" in r}
    except OSError: return {}
c, g = curve(sys.argv[1]), curve(sys.argv[2])
if not g: sys.exit("no GPU loss curve")
print("step  cpu_loss  gpu_loss  rel_diff")
for s in sorted(set(c) & set(g)): print(f"{s:4d}  {c[s]:.5f}  {g[s]:.5f}  {abs(g[s]-c[s])/abs(c[s]):.2e}")
last = max(set(c) & set(g)); d = abs(g[last] - c[last]) / abs(c[last])
print(f"train {sys.argv[3]}: final step {last}: GPU {g[last]:.5f} vs CPU fp32 {c[last]:.5f}, relative {d:.3e} (limit 1e-2): {'ok' if d <= 1e-2 else 'FAIL'}")
sys.exit(0 if d <= 1e-2 else 1)
PY
  done
  return $rc
}

# compute-sanitizer on the attention paths (small shapes): memcheck of every
# ask (out of bounds, misaligned), racecheck and synccheck of flash (shared
# memory races and barrier misuse, which the CPU emulation cannot see).
# Without a GPU, the test's own SKIP.
sanitize_attn() {
  set -o pipefail
  [ "$HAVE_GPU" = 1 ] || { "$BIN/test_backend_cmp" attention; return; }
  command -v compute-sanitizer >/dev/null || { echo "SKIP: no compute-sanitizer"; return 77; }
  local rc=0 t asks
  for t in $1; do
    echo "-- $t"
    asks=()
    [ "$t" = memcheck ] || asks=(flash)
    compute-sanitizer --tool "$t" --print-limit 20 --error-exitcode 3 \
      "$BIN/test_backend_cmp" attention "${asks[@]}" 2>&1 | tail -14 || rc=$?
  done
  return $rc
}

# "grid G DT: N steps, worst relative loss difference W (limit L): ok" of two metrics.jsonl
same_curve() {
  python3 - "$@" << 'PY'
import json, sys
a, b = ({r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r} for p in sys.argv[1:3])
worst = max(abs(b[s] - a[s]) / abs(a[s]) for s in a) if a and set(a) == set(b) else float("inf")
ok = worst <= float(sys.argv[4])
print(f"grid {sys.argv[3]}: {len(b)} steps, worst relative loss difference {worst:.2e} (limit {sys.argv[4]}): {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
}

# Several ranks on one GPU (--share-gpu: every group of more than one rank
# staged through host buffers), AX_GRID_STEPS (20) steps against 1 rank on
# the two grids that between them split every dimension: 1,2,2,1 (X and Y,
# the tensor-parallel layers' gathers and reductions) and 2,1,1,2 (data and
# Z: the gradients' all-reduce, the Z gathers of the weights), and 2,1,1,2
# with --zero 1 (ZeRO-1: the gradients reduce-scattered into each rank's
# share, its tails copied there, AdamW on the share, the parameters
# all-gathered in place), also against 2,1,1,2 without it; fp32 within 1e-5
# relative at every step, bf16 within 2e-2 (ZeRO-1 against --zero 0 as
# against 1 rank: its reduce-scatter over the 4 ranks of data x Z may
# associate the sums otherwise); eval on 1,2,2,1 equal to 1 rank's; the
# processes on the GPU while 1,2,2,1 trains (4 expected).
grids_cmp() {
  local be=$DEV_BACKEND rc=0 d g run tag pid tol zero
  local args=(train --synthetic --steps "${AX_GRID_STEPS:-20}" --val-every 0 --save-every 0 --log-every 1 --seed 7
    --n-layer 2 --n-head 12 --n-embd 192 --vocab-size 512 --block-size 64 --batch 12 --backend "$be" --share-gpu)
  local ev=(eval --backend "$be" --model "$WORK/grids_1_fp32" --data "$WORK/grids_val.bin" --batch 12 --seq 64 --json)
  python3 - "$WORK/grids_val.bin" << 'PY'
import random, struct, sys
random.seed(5); toks = [random.randrange(512) for _ in range(12 * 65 * 2)]
hdr = [20240520, 1, len(toks)] + [0] * 253
open(sys.argv[1], "wb").write(struct.pack("<256i", *hdr) + struct.pack("<%dH" % len(toks), *toks))
PY
  local dts="fp32 bf16"
  if [ "$be" = cpu ] && "$BIN/axonn" --version | grep -q "cpu bf16 GEMMs: unavailable"; then
    dts=fp32
    echo "bf16 not rehearsed: this build's CPU backend has no bf16 GEMMs (the pack builds without oneDNN)"
  fi
  for d in $dts; do
    "$BIN/axonn" "${args[@]}" --dtype "$d" --out "$WORK/grids_1_$d" > "$LOGS/grids_1_$d.out" 2>&1 ||
      { echo "1 rank $d: failed"; tail -3 "$LOGS/grids_1_$d.out"; rc=1; continue; }
    tol=$([ "$d" = fp32 ] && echo 1e-5 || echo 2e-2)
    for run in 1,2,2,1 2,1,1,2 2,1,1,2:zero; do
      g=${run%:zero} zero=0
      [ "$run" = "$g" ] || zero=1
      tag=${g//,/}$([ $zero = 1 ] && echo _zero)_$d
      mpirun -np 4 "$BIN/axonn" "${args[@]}" --dtype "$d" --grid "$g" --zero $zero --out "$WORK/grids_$tag" \
        > "$LOGS/grids_$tag.out" 2>&1 &
      pid=$!
      [ "$be" = cuda ] && [ "$tag" = 1221_fp32 ] && echo "grid $g $d: $(gpu_processes $pid) processes on the GPU at most (4 expected)"
      wait $pid || { echo "grid $g $d --zero $zero: failed"; tail -3 "$LOGS/grids_$tag.out"; rc=1; continue; }
      same_curve "$WORK/grids_1_$d/metrics.jsonl" "$WORK/grids_$tag/metrics.jsonl" "$g $d --zero $zero" "$tol" || rc=1
      [ $zero = 1 ] && { same_curve "$WORK/grids_${g//,/}_$d/metrics.jsonl" "$WORK/grids_$tag/metrics.jsonl" \
        "$g $d --zero 1 against --zero 0" "$tol" || rc=1; }
    done
  done
  local e1 eg
  e1=$("$BIN/axonn" "${ev[@]}") && eg=$(mpirun -np 4 "$BIN/axonn" "${ev[@]}" --share-gpu --grid 1,2,2,1) || return 1
  python3 -c 'import json,sys; a,b=(json.loads(x)["loss"] for x in sys.argv[1:3]); d=abs(a-b)/a
print(f"eval grid 1,2,2,1: {b:.6f} vs 1 rank {a:.6f} ({d:.1e}, limit 1e-5)"); sys.exit(d>1e-5)' "$e1" "$eg" || rc=1
  return $rc
}

# the most processes nvidia-smi lists on the GPU while process PID runs
gpu_processes() {
  local most=0 n
  while kill -0 "$1" 2> /dev/null; do
    n=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)
    [ "$n" -gt "$most" ] && most=$n
    sleep 0.5
  done
  echo "$most"
}

# Checkpoints on the GPU: a run of 8 steps saving every 2 against the same
# run stopped after step 4 and resumed (--resume auto): the final model
# bitwise equal; and the parallel background writer's files against the
# root-only writer's, byte for byte. The same run with --cuda-graph (steps
# 2.. replayed from one graph, saves in between; --profile, whose timing
# events must stay out of the capture): the same final model, byte for byte
# (the same kernels on the same data). Rehearsed on the CPU, without the graph.
ckpt_cmp() {
  local be=$DEV_BACKEND d=$WORK/ckpt rc=0 f
  local a=(train --backend "$be" --synthetic --n-layer 2 --n-head 4 --n-embd 64 --vocab-size 97 --block-size 32
    --seq 32 --batch 8 --quiet --steps 8 --save-every 2 --val-every 0)
  mkdir -p "$d"
  "$BIN/axonn" "${a[@]}" --out "$d/full" || return 1
  "$BIN/axonn" "${a[@]}" --exit-after 4 --out "$d/part" && "$BIN/axonn" "${a[@]}" --resume auto --out "$d/part" || return 1
  "$BIN/axonn" "${a[@]}" --ckpt-writer root --out "$d/root" || return 1
  cmp "$d/full/model.safetensors" "$d/part/model.safetensors" && echo "resume after step 4: final model bitwise equal: ok" || rc=1
  if [ "$be" = cuda ]; then
    "$BIN/axonn" "${a[@]}" --cuda-graph --profile --out "$d/graph" || return 1
    cmp "$d/full/model.safetensors" "$d/graph/model.safetensors" && echo "--cuda-graph: final model bitwise equal: ok" || rc=1
  fi
  for f in model.safetensors optim.safetensors; do
    cmp "$d/full/ckpt-000008/$f" "$d/root/ckpt-000008/$f" && echo "$f: parallel writer = root writer: ok" || rc=1
  done
  return $rc
}

# NCCL on one rank: the grid's groups (of one: no communicator) and the NCCL
# layer on a communicator of one made for the purpose (tests/test_nccl.c)
nccl_one() { "$BIN/test_nccl"; }
# two ranks on the one GPU: every group staged through the host (NCCL refuses them)
nccl_shared() { mpirun -np 2 "$BIN/test_nccl"; }
# ring attention on the GPU: tests/test_ring on 2 ranks of one C group sharing
# the GPU, its transfers staged through host buffers, its blocks the CUDA kernels
ring_cmp() { mpirun -np 2 "$BIN/test_ring" --backend cuda; }

# summary.md's flash section: the bf16 flash/auto rows of the op table, the
# flash loss curve's last line, the sanitizers' results (report.sh calls it)
flash_verdict() {
  local ops=$LOGS/ops.log tr=$LOGS/train.log n bad
  n=$(grep -cE "bf16 (flash|auto):flash" "$ops" 2> /dev/null)
  bad=$(grep -E "bf16 (flash|auto):flash" "$ops" 2> /dev/null | grep -vc " ok$")
  echo "## Flash attention against the CPU"
  echo ""
  echo "- op table: ${n:-0} bf16 rows on the flash path (flash: and auto: asks), ${bad:-0} out of tolerance"
  echo "- $(grep -E "^train bf16 flash" "$tr" 2> /dev/null || echo 'train bf16 flash: no result')"
  grep -hE "^axonn: attention:" "$LOGS"/*.log "$LOGS"/*.out 2> /dev/null | sort -u | head -5 | sed 's/^/- logged: /'
  if [ "${n:-0}" -gt 0 ] && [ "${bad:-1}" = 0 ] && grep -qE "^train bf16 flash.*: ok" "$tr" 2> /dev/null &&
    grep -qE "^\| sanitize \| ok" "$ROWS" && grep -qE "^\| racecheck \| ok" "$ROWS"; then
    echo "- flash: PASS on $GPU_NAME (the evidence for making it the default: docs/gpu.md)"
  else
    echo "- flash: not passed"
  fi
}
export -f ops_cmp train_cmp sanitize_attn same_curve grids_cmp gpu_processes ckpt_cmp nccl_one nccl_shared ring_cmp
