#!/usr/bin/env bash
# cuda_emu_train EMU_AXONN NCCL_EMU [zero]: the training paths of the CUDA backend,
# run on the host emulation of the device (tests/cuda_emu; EMU_AXONN is axonn
# linked against it), against the CPU backend ($AXONN_BIN). Groups of ranks
# sharing the device go through MPI on host buffers (--device-comm mpi);
# ranks with a device each (EMU_GPUS=2) use NCCL, the library NCCL_EMU
# (NCCL's entries done by MPI).
#  - 4 steps of a tiny GPT-2 (T=32): the losses equal the CPU's to relative
#    1e-5 in fp32 (the kernels sum in another order) and 2e-3 in bf16 (a bf16
#    output may round one step, 2^-8, apart where the fp32 sums differ); and
#    in fp32 the Llama kind with 2 micro-batches, goldfish weights and whole
#    layers recomputed;
#  - the same on grids of 2 ranks, fp32, against the device's 1-rank run to
#    relative 1e-5: with a device each, every group on NCCL (D, X, Y and Z
#    splits, and context parallelism --cp 2: all-reduces, gathers,
#    reduce-scatters, the ring's sends), the start-up line saying so; sharing
#    the device (--share-gpu, host-staged, --cp 2); and 4 ranks on 2 devices,
#    grid 2,1,1,2: Z on NCCL, the data groups staged;
#  - --cuda-graph (steps 2.. captured once and replayed, the emulation's
#    graphs run what the capture recorded): the same bits as the uncaptured
#    run, final model byte for byte, in bf16 and with the Llama kind (its
#    goldfish weights give each step another loss scale; a checkpoint saved
#    after every step, which must not make the step capture again); on each
#    NCCL grid of 2 ranks above, and on 4 ranks (grid 1,2,1,2) with the
#    Llama kind: the uncaptured run's bits there (the collectives replayed
#    with the step); on 2 ranks staged through the host (--device-comm
#    mpi, which a graph cannot hold), one line and exit 2;
#  - a run stopped after step 2 and resumed (--resume auto) ends with the
#    uninterrupted run's model, byte for byte; a CPU checkpoint resumed on 2
#    ranks of the device gives its losses to 1e-5;
#  - greedy sampling of the Llama fixture, on 1 and 2 ranks: the CPU's tokens;
#  - eval --json prints one JSON object on stdout, its loss the CPU's to 1e-5,
#    on 1 rank and on 2 ranks sharing the device.
# With `zero` (the test cuda_emu_zero) it runs only ZeRO-1's cases instead
# (zero_cases, below).
. "$(dirname "$0")/cli_lib.sh"
EMU=${1:?usage: test_cuda_emu_train.sh EMU_AXONN NCCL_EMU [zero]}
NCCL_EMU=${2:?usage: test_cuda_emu_train.sh EMU_AXONN NCCL_EMU [zero]}
MODEL=(--n-layer 2 --n-head 4 --n-embd 64 --vocab-size 97 --block-size 32 --seq 32 --batch 4)
TRAIN=(train --synthetic "${MODEL[@]}" --quiet --lr 3e-3 --warmup 2 --steps 4 --val-every 0 --seed 5)
DEV=(--backend cuda --device-comm mpi)

# run_emu NAME NP ARGS...: the emulated binary's run
run_emu() { local b=$BIN; BIN=$EMU; run "$@"; local rc=$?; BIN=$b; return $rc; }
# same_losses A B TOL WHAT: the losses of two runs' metrics.jsonl, step by step
same_losses() {
  python3 - "$W/$1/metrics.jsonl" "$W/$2/metrics.jsonl" "$3" <<'PY' && ok "$4" || bad "$4"
import json, sys
a, b = ({r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r} for p in sys.argv[1:3])
worst = max(abs(b[s] - a[s]) / abs(a[s]) for s in a) if a and set(a) == set(b) else float("inf")
print(f"  {len(a)} steps, worst relative loss difference {worst:.2e} (limit {sys.argv[3]})")
sys.exit(worst > float(sys.argv[3]))
PY
}
# same_bits A B WHAT: the same losses and norms, and the same final model, byte for byte
same_bits() {
  cmp -s "$W/$1/model.safetensors" "$W/$2/model.safetensors" &&
    diff <(grep -o '"loss": [^,]*, "lr": [^,]*, "grad_norm": [^,]*' "$W/$1/metrics.jsonl") \
      <(grep -o '"loss": [^,]*, "lr": [^,]*, "grad_norm": [^,]*' "$W/$2/metrics.jsonl") >/dev/null &&
    ok "$3" || bad "$3: the runs differ"
}

# ZeRO-1 (--zero 1, model/gpt_zero.c), the part cuda_emu_zero runs. C=45, 5
# heads and buckets of 0.05 MiB (a layer each at Z=1) leave bucket ranges
# that 2 and 4 do not divide (a layer's 13 C = 585 biases and norm weights):
# their tails are all-reduced and copied into the share behind the
# collective. --zero 1 on the device against the CPU's --zero 1 on the same
# grid (1e-5 fp32, 2e-3 bf16: the kernels' sums, as above) and against the
# device's --zero 0:
#  - D=2, fp32 and bf16, sharing the device (staged) and a device each (NCCL):
#    the --zero 0 run's bits (final model byte for byte, losses and norms as
#    printed): a sum of 2 ranks is the same in the all-reduce and the
#    reduce-scatter (a + b = b + a), the update is elementwise, and the norm's
#    squares added share by share move only digits below those printed and
#    below the float the clip scale rounds to;
#  - D=2 x Z=2 (4 ranks), staged in fp32, on NCCL in bf16: 1e-5 and 2e-3 (the
#    replicated region's reduce-scatter over 4 ranks may associate the sums
#    otherwise than the all-reduce: Open MPI 4.1 does, by one ulp of a bias at
#    step 2; the log says whether the final models were the same bits);
#  - each NCCL case again with --cuda-graph (the reduce-scatters and the
#    tails' copies captured, the all-gathers after the replay): the
#    uncaptured run's bits.
ZT=(train --synthetic --n-layer 2 --n-head 5 --n-embd 45 --vocab-size 97 --block-size 32 --seq 32 --batch 4 --quiet
  --lr 3e-3 --warmup 2 --steps 4 --val-every 0 --seed 5 --bucket-mb 0.05)
# zero_grid GRID NP staged|nccl DT: --zero 1 on the device against the CPU's
# and the device's --zero 0 (same_bits, or same_losses to TOL where TOL is given)
zero_grid() {
  local g=$1 np=$2 c=$3 dt=$4 tol=${5:-} dev=(--backend cuda) t=${1//,/}_$3_$4
  if [ "$c" = nccl ]; then
    local EMU_GPUS=$np AXONN_NCCL_LIB=$NCCL_EMU
    export EMU_GPUS AXONN_NCCL_LIB
  else dev=("${DEV[@]}" --share-gpu); fi
  local Z=("${ZT[@]}" --dtype "$dt" --grid "$g")
  [ -s "$W/zcpu_${g//,/}_$dt/model.safetensors" ] || run "zcpu_${g//,/}_$dt" "$np" "${Z[@]}" --zero 1 \
    --out "$W/zcpu_${g//,/}_$dt" || return 1
  run_emu "z0_$t" "$np" "${Z[@]}" "${dev[@]}" --out "$W/z0_$t" &&
    run_emu "z1_$t" "$np" "${Z[@]}" "${dev[@]}" --zero 1 --out "$W/z1_$t" || return 1
  if [ "$c" = nccl ] && ! grep -qE '^collectives: NCCL for [^;]*$' "$W/z1_$t.log"; then
    bad "z1_$t: no 'collectives: NCCL for' line"
    return 1
  fi
  local what="device --zero 1 $dt, grid $g $c"
  same_losses "zcpu_${g//,/}_$dt" "z1_$t" "$([ "$dt" = fp32 ] && echo 1e-5 || echo 2e-3)" "$what, against the CPU's"
  if [ -z "$tol" ]; then same_bits "z0_$t" "z1_$t" "$what: the --zero 0 run's bits"
  else
    same_losses "z0_$t" "z1_$t" "$tol" "$what, against --zero 0"
    cmp -s "$W/z0_$t/model.safetensors" "$W/z1_$t/model.safetensors" && echo "  final model: the same bits" ||
      echo "  final model: not the same bits"
  fi
  [ "$c" = nccl ] || return 0
  run_emu "zg_$t" "$np" "${Z[@]}" "${dev[@]}" --zero 1 --cuda-graph --out "$W/zg_$t" &&
    same_bits "z1_$t" "zg_$t" "$what, --cuda-graph: the uncaptured run's bits"
}
zero_cases() {
  local dt
  for dt in fp32 bf16; do
    zero_grid 2,1,1,1 2 staged $dt
    zero_grid 2,1,1,1 2 nccl $dt
  done
  zero_grid 2,1,1,2 4 staged fp32 1e-5
  zero_grid 2,1,1,2 4 nccl bf16 2e-3
}
[ "${3:-}" = zero ] && { zero_cases; finish cuda_emu_zero; }

for dt in fp32 bf16; do
  tol=$([ $dt = fp32 ] && echo 1e-5 || echo 2e-3)
  run cpu_$dt 1 "${TRAIN[@]}" --dtype $dt --out "$W/cpu_$dt" &&
    run_emu dev_$dt 1 "${TRAIN[@]}" "${DEV[@]}" --dtype $dt --out "$W/dev_$dt" &&
    same_losses cpu_$dt dev_$dt $tol "device $dt against the CPU"
done
# the Llama kind (RMSNorm, SwiGLU, rotary positions, grouped key/value heads),
# 2 micro-batches with goldfish weights, whole layers recomputed
LL=(--arch llama --n-kv-head 2 --grad-accum 2 --goldfish-k 3 --recompute block)
run cpu_llama 1 "${TRAIN[@]}" "${LL[@]}" --out "$W/cpu_llama" &&
  run_emu dev_llama 1 "${TRAIN[@]}" "${LL[@]}" "${DEV[@]}" --out "$W/dev_llama" &&
  same_losses cpu_llama dev_llama 1e-5 "device ${LL[*]} against the CPU"
# --profile: no timing event recorded inside the capture (one cannot be read after it)
run_emu graph_bf16 1 "${TRAIN[@]}" "${DEV[@]}" --dtype bf16 --cuda-graph --profile --out "$W/graph_bf16" &&
  same_bits dev_bf16 graph_bf16 "device bf16 --cuda-graph --profile: the uncaptured run's bits"
run_emu graph_llama 1 "${TRAIN[@]}" "${LL[@]}" "${DEV[@]}" --cuda-graph --save-every 1 --out "$W/graph_llama" &&
  same_bits dev_llama graph_llama "device ${LL[*]} --cuda-graph --save-every 1: the uncaptured run's bits" &&
  { grep -q "captured again" "$W/graph_llama.log" && bad "graph_llama: a save between steps made the step capture again" ||
    ok "graph_llama: checkpoints saved between replays leave the graph standing"; }
timeout 120 "${MPI[@]}" -np 2 "$EMU" "${TRAIN[@]}" "${DEV[@]}" --share-gpu --cuda-graph --out "$W/graph2" \
  >/dev/null 2>"$W/graph2.err"
rc=$?
[ $rc = 2 ] && [ "$(grep -c '^axonn: error: --cuda-graph: the collectives of data, .* (--device-comm mpi) go through the host' \
  "$W/graph2.err")" = 1 ] && ok "--cuda-graph on 2 ranks, staged (--device-comm mpi): one line, exit 2" ||
  bad "--cuda-graph, staged: exit $rc, $(head -c 300 "$W/graph2.err")"

for g in 2,1,1,1 1,2,1,1 1,1,2,1 1,1,1,2 cp; do
  grid=(--grid $g); [ $g = cp ] && grid=(--cp 2)
  EMU_GPUS=2 AXONN_NCCL_LIB=$NCCL_EMU run_emu "nccl_${g//,/}" 2 "${TRAIN[@]}" --backend cuda "${grid[@]}" \
    --out "$W/nccl_${g//,/}" &&
    if grep -qE '^collectives: NCCL for [^;]*$' "$W/nccl_${g//,/}.log"; then
      same_losses dev_fp32 "nccl_${g//,/}" 1e-5 "device ${grid[*]} on NCCL (2 ranks, a device each) against 1 rank"
    else bad "nccl_${g//,/}: no 'collectives: NCCL for' line"; fi
  EMU_GPUS=2 AXONN_NCCL_LIB=$NCCL_EMU run_emu "ngraph_${g//,/}" 2 "${TRAIN[@]}" --backend cuda "${grid[@]}" \
    --cuda-graph --out "$W/ngraph_${g//,/}" &&
    same_bits "nccl_${g//,/}" "ngraph_${g//,/}" "device ${grid[*]} on NCCL, --cuda-graph: the uncaptured run's bits"
done
N4=("${TRAIN[@]}" "${LL[@]}" --backend cuda --grid 1,2,1,2)
EMU_GPUS=4 AXONN_NCCL_LIB=$NCCL_EMU run_emu nccl4 4 "${N4[@]}" --out "$W/nccl4" &&
  EMU_GPUS=4 AXONN_NCCL_LIB=$NCCL_EMU run_emu ngraph4 4 "${N4[@]}" --cuda-graph --out "$W/ngraph4" &&
  same_bits nccl4 ngraph4 "device ${LL[*]} --grid 1,2,1,2 on NCCL (4 devices), --cuda-graph: the uncaptured run's bits"
run_emu dev_cp 2 "${TRAIN[@]}" "${DEV[@]}" --share-gpu --cp 2 --out "$W/dev_cp" &&
  same_losses dev_fp32 dev_cp 1e-5 "device --cp 2 (2 ranks sharing it, staged) against 1 rank"
# 4 ranks on 2 devices: the Z groups' ranks on distinct ones (NCCL), the data groups' on one (staged)
EMU_GPUS=2 AXONN_NCCL_LIB=$NCCL_EMU run_emu mixed 4 "${TRAIN[@]}" --backend cuda --share-gpu --grid 2,1,1,2 \
  --out "$W/mixed" &&
  if grep -qE '^collectives: NCCL for Z, .*; host-staged MPI for data, .*\(their ranks share a GPU\)$' "$W/mixed.log"; then
    same_losses dev_fp32 mixed 1e-5 "device --grid 2,1,1,2 on 2 devices (Z on NCCL, data staged) against 1 rank"
  else bad "mixed: $(grep '^collectives' "$W/mixed.log")"; fi

CK=("${TRAIN[@]}" "${DEV[@]}" --steps 4 --save-every 2)
run_emu ck_full 1 "${CK[@]}" --out "$W/ck_full" &&
  run_emu ck_part 1 "${CK[@]}" --exit-after 2 --out "$W/ck_part" &&
  run_emu ck_resume 1 "${CK[@]}" --resume auto --out "$W/ck_part" &&
  { cmp "$W/ck_full/model.safetensors" "$W/ck_part/model.safetensors" && ok "device: resumed after step 2, final model bitwise equal" ||
    bad "device: resumed model differs"; }

# a CPU checkpoint of step 2 resumed on the device, 2 ranks on another grid
run ck_cpu 1 "${CK[@]:0:${#TRAIN[@]}}" --steps 4 --save-every 2 --exit-after 2 --out "$W/ck_cross" &&
  run_emu ck_cross 2 "${CK[@]}" --share-gpu --grid 1,1,2,1 --resume auto --out "$W/ck_cross" &&
  same_losses ck_full ck_cross 1e-5 "a CPU checkpoint resumed on the device, grid 1,1,2,1"

# greedy decoding through the KV cache (the Llama fixture): the CPU's tokens
if [ -n "$FIX" ] && [ -d "$FIX/llama_tiny" ]; then
  S=(sample --model "$FIX/llama_tiny" --prompt-tokens 5,60,22,41 --max-new 16 --temperature 0)
  "$BIN" "${S[@]}" > "$W/s_cpu.txt" 2>/dev/null
  "$EMU" "${S[@]}" "${DEV[@]}" > "$W/s_dev.txt" 2>/dev/null
  timeout 300 "${MPI[@]}" -np 2 "$EMU" "${S[@]}" "${DEV[@]}" --share-gpu --grid 1,1,1,2 > "$W/s_dev2.txt" 2>/dev/null
  for f in s_dev s_dev2; do
    [ -s "$W/s_cpu.txt" ] && cmp -s "$W/s_cpu.txt" "$W/$f.txt" && ok "$f: greedy tokens equal the CPU's" ||
      bad "$f: $(tail -c 200 "$W/$f.txt") against $(tail -c 200 "$W/s_cpu.txt")"
  done
fi

python3 - "$W/val.bin" <<'PY'
import random, struct, sys
random.seed(5); toks = [random.randrange(97) for _ in range(4 * 33 * 2)]
hdr = [20240520, 1, len(toks)] + [0] * 253
open(sys.argv[1], "wb").write(struct.pack("<256i", *hdr) + struct.pack("<%dH" % len(toks), *toks))
PY
EVAL=(eval --model "$W/cpu_fp32" --data "$W/val.bin" --batch 4 --seq 32 --json)
"$BIN" "${EVAL[@]}" > "$W/eval_cpu.json" 2>"$W/eval_cpu.err" || bad "eval on the CPU: exit $?"
"$EMU" "${EVAL[@]}" "${DEV[@]}" > "$W/eval_dev.json" 2>"$W/eval_dev.err" || bad "eval on the device: exit $?"
timeout 300 "${MPI[@]}" -np 2 "$EMU" "${EVAL[@]}" "${DEV[@]}" --share-gpu --grid 1,2,1,1 > "$W/eval_dev2.json" \
  2>"$W/eval_dev2.err" || bad "eval on 2 ranks sharing the device: exit $?"
for f in eval_dev eval_dev2; do
  python3 -c 'import json,sys; a,b=(json.load(open(p))["loss"] for p in sys.argv[1:3]); d=abs(a-b)/a; print(f"  {b:.6f} vs the CPU {a:.6f} ({d:.1e})"); sys.exit(d > 1e-5)' \
    "$W/eval_cpu.json" "$W/$f.json" && ok "$f: one JSON object on stdout, the CPU's loss" || bad "$f: $(head -c 200 "$W/$f.json")"
done
finish cuda_emu_train
