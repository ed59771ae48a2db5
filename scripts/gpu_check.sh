#!/usr/bin/env bash
# The GPU check, one command on a GPU machine (issue 10), under 8 minutes on
# one H200. Every step runs under its own time limit and the script goes on
# after a failure; everything lands in $OUT (or ./gpu-check/): one log per
# step and summary.md, the table of what passed, failed or was skipped.
#
#   scripts/gpu_check.sh pack    # here, with the CUDA toolkit: builds Release
#                                # into build-gpu and fills .gpu-pack/ (binaries
#                                # and the Debian runtime libraries as .debs)
#   scripts/gpu_check.sh         # there: the check (carry .gpu-pack)
#   AX_USE_PACK=1 scripts/gpu_check.sh   # the pack's binaries even where a build is possible
#   scripts/gpu_check.sh digest [DIR]   # the lines that matter of a finished check
#   AX_REHEARSE=1 ...            # run the GPU steps without a GPU too: their own
#                                # SKIP and error paths, and the CPU halves
#
# The GPU machine has nvcc, CMake and PyTorch but not the Debian libraries the
# build uses (MPI, OpenBLAS, jansson, PCRE2, xxHash), and no network. So the
# check builds there only where those are found; otherwise it runs the Release
# binaries built here, with the .debs unpacked into a private prefix (never
# into /), and the machine's own cuBLASLt and NCCL (toolkit or PyTorch's pip
# packages; the CUDA runtime is linked in statically).
#
# Steps: env, build, ops (every kernel fwd/bwd against the CPU backend,
# tests/test_backend_cmp.c), nccl, train (tiny model, 200 steps, GPU and CPU
# loss curves), grids (4 ranks on the one GPU, every 4D grid kind, loss curves
# and eval against 1 rank), gemm (cuBLASLt bf16 peak at the models' shapes), bench (GPT-2
# small T=1024 and a 1.3B GPT T=2048), torch (the same GPT-2 small step in
# PyTorch, eager and compiled). Without a GPU every GPU step says SKIP.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PACK=$ROOT/.gpu-pack

# --------------------------------------------------------------------- pack
if [ "${1:-}" = pack ]; then
  set -e
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DAXONN_CUDA=ON -DAXONN_DNNL=OFF -DAXONN_NATIVE=OFF >/dev/null
  cmake --build build-gpu -j 2 --target axonn_cli test_backend_cmp test_nccl tool_gemm_rate
  rm -rf "$PACK"; mkdir -p "$PACK/bin" "$PACK/debs"
  cp build-gpu/axonn build-gpu/tests/test_backend_cmp build-gpu/tests/test_nccl build-gpu/tests/tool_gemm_rate "$PACK/bin/"
  strip "$PACK"/bin/*
  # the runtime closure of libmpi, OpenBLAS (OpenMP build), jansson, PCRE2 and
  # xxHash beyond what any glibc system has, and Open MPI's own components' needs
  (cd "$PACK/debs" && apt-get download libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 \
     libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libgfortran5 libquadmath0 libjansson4 \
     libpcre2-8-0 libxxhash0 libopenblas0-openmp libltdl7 libnuma1 libmunge2 libfabric1 libucx0 \
     libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2 libpciaccess0 libudev1 2>/dev/null)
  git rev-parse HEAD > "$PACK/commit"
  du -sh "$PACK"/bin "$PACK"/debs; du -sh "$PACK"
  exit 0
fi

# ------------------------------------------------------------------- digest
# the lines that matter of a finished check's logs (a reply's tail is short)
if [ "${1:-}" = digest ]; then
  d=${2:-${OUT:-$ROOT/gpu-check}}
  cd "$d" || exit 1
  echo "== ops"; grep -E "FAIL|passed" ops.log
  echo "== train"; tail -n 4 train.log
  echo "== grids"; grep -E "grid|eval|processes|failed" grids.log
  echo "== gemm"; tail -n 12 gemm.log
  for f in ops_*.log; do [ -e "$f" ] && { echo "== $f"; grep -E "FAIL|passed|bf16" "$f"; }; done
  for f in bench_*.log; do
    echo "== $f"; grep -E "ms/iteration|model FLOP|hardware FLOP|GEMM ceiling|per iteration|memory per rank" "$f"
    grep -A 12 "^CUDA profile" "$f" | tail -n +3 | cut -c 1-100
  done
  echo "== torch"; grep -E "ms_per_step|compile" torch_gpt2_small.log | cut -c 1-200
  echo "== sanitize"; grep -E "^--|ERROR SUMMARY|passed" sanitize.log
  [ -e racecheck.log ] && { echo "== racecheck"; grep -E "^--|ERROR SUMMARY|RACE|passed|error" racecheck.log | head -20; }
  cat summary.md
  exit 0
fi

# -------------------------------------------------------------------- check
OUTD=${OUT:-$ROOT/gpu-check}
mkdir -p "$OUTD"
SUM=$OUTD/summary.md
T0=$(date +%s)
HAVE_GPU=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then HAVE_GPU=1; fi
echo "# GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), tree $(git rev-parse --short HEAD 2>/dev/null || echo '?'), pack $(cut -c 1-7 "$PACK/commit" 2>/dev/null || echo none)" > "$SUM"
echo "" >> "$SUM"
echo "| step | result | seconds | log |" >> "$SUM"
echo "| --- | --- | --- | --- |" >> "$SUM"

# step NAME LIMIT_S needs_gpu(0|1) CMD...: runs CMD with its output in NAME.log
step() {
  local name=$1 limit=$2 gpu=$3; shift 3
  local t=$(date +%s) rc res
  if [ "$gpu" = 1 ] && [ "$HAVE_GPU" = 0 ] && [ -z "${AX_REHEARSE:-}" ]; then
    echo "SKIP: no GPU on this machine (nvidia-smi -L)" > "$OUTD/$name.log"
    res=SKIP
  else
    timeout "$limit" bash -c '"$@"' step "$@" > "$OUTD/$name.log" 2>&1; rc=$?
    if [ "$rc" = 0 ]; then res=ok; elif [ "$rc" = 77 ]; then res=SKIP; elif [ "$rc" = 124 ]; then res="FAIL (over ${limit} s)"; else res="FAIL (exit $rc)"; fi
  fi
  echo "| $name | $res | $(( $(date +%s) - t )) | $name.log |" >> "$SUM"
  echo "gpu_check: $name: $res"
}

env_info() {
  uname -a; nvidia-smi || true; nvcc --version || true; cmake --version | head -1 || true
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' || true
  nproc; free -g || true
}

# the binaries: a build here when the libraries are there, else the pack
BIN=""
build() {
  if [ -z "${AX_USE_PACK:-}" ] && command -v mpicc >/dev/null && pkg-config --exists jansson libpcre2-8 libxxhash 2>/dev/null && command -v nvcc >/dev/null; then
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DAXONN_CUDA=ON || return 1
    cmake --build build-gpu -j "$(nproc)" --target axonn_cli test_backend_cmp test_nccl tool_gemm_rate || return 1
    mkdir -p "$OUTD/bin"; cp build-gpu/axonn build-gpu/tests/test_backend_cmp build-gpu/tests/test_nccl build-gpu/tests/tool_gemm_rate "$OUTD/bin/"
    echo "built here"; return 0
  fi
  echo "no MPI/jansson/PCRE2/xxHash development files here: the Release binaries of .gpu-pack (commit $(cat "$PACK/commit" 2>/dev/null))"
  [ -x "$PACK/bin/axonn" ] || { echo "no .gpu-pack/bin: run 'scripts/gpu_check.sh pack' where the toolkit is, and carry .gpu-pack"; return 1; }
  local P=/tmp/axonn-prefix
  if ! cmp -s "$PACK/commit" "$P/.pack-commit"; then      # once per pack
    rm -rf "$P"; mkdir -p "$P"
    for f in "$PACK"/debs/*.deb; do dpkg -x "$f" "$P" || return 1; done
    cp "$PACK/commit" "$P/.pack-commit"
  fi
  echo "$(ls "$PACK"/debs | wc -l) packages unpacked in $P"
  # PMIx finds its components and help files only at its built-in path (no
  # relocation variable worked): a link there, made only where nothing is
  local px=/usr/lib/x86_64-linux-gnu/pmix2
  if [ ! -e "$px" ]; then ln -s "$P$px" "$px" && echo "linked $px -> $P$px"; fi
}

# library paths: the prefix's, then the toolkit's and PyTorch's cuBLASLt and NCCL
setup_paths() {
  local P=/tmp/axonn-prefix lp=""
  if [ -d "$P/usr/lib/x86_64-linux-gnu" ]; then
    lp="$P/usr/lib/x86_64-linux-gnu:$P/usr/lib/x86_64-linux-gnu/openblas-openmp:$P/usr/lib/x86_64-linux-gnu/openmpi/lib:$P/lib/x86_64-linux-gnu"
    export OPAL_PREFIX=$P/usr PATH=$P/usr/bin:$PATH
    BIN=$PACK/bin
  else
    BIN=$OUTD/bin
  fi
  export BIN
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && lp="$lp:$d"
  done
  local py
  py=$(python3 -c 'import os, importlib
for m in ("nvidia.cublas", "nvidia.nccl", "nvidia.cu13"):
    try: print(os.path.join(list(importlib.import_module(m).__path__)[0], "lib"))
    except Exception: pass' 2>/dev/null | tr '\n' ':')
  export LD_LIBRARY_PATH="${lp#:}:${py}${LD_LIBRARY_PATH:-}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated \
         OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} \
         PMIX_MCA_pcompress_base_silence_warning=1
}

versions() { "$BIN/axonn" --version && ldd "$BIN/axonn" | grep -E "cublas|nccl|mpi|openblas|not found"; }

# every op against the CPU backend; a failure is run again under compute-sanitizer
ops_cmp() {
  "$BIN/test_backend_cmp" && return 0
  local rc=$?
  command -v compute-sanitizer >/dev/null && timeout 90 compute-sanitizer --tool memcheck --print-limit 20 "$BIN/test_backend_cmp" 2>&1 | tail -60
  return $rc
}

# tiny model, 200 steps (AX_TRAIN_STEPS), fp32 on both: final losses within 1%
train_cmp() {
  local args=(train --synthetic --steps "${AX_TRAIN_STEPS:-200}" --val-every 0 --save-every 0 --log-every 10 --seed 1337)
  "$BIN/axonn" "${args[@]}" --backend cuda --out "$OUTD/train_gpu" > "$OUTD/train_gpu.out" 2>&1; local rc=$?
  echo "gpu run: exit $rc"; tail -5 "$OUTD/train_gpu.out"
  if [ $rc -ne 0 ]; then   # kernels run queued: a fault surfaces late; drained after each entry it names its kernel
    AXONN_CUDA_SYNC=1 "$BIN/axonn" train --synthetic --steps 3 --val-every 0 --save-every 0 --backend cuda \
      --out "$OUTD/train_gpu_sync" > "$OUTD/train_gpu_sync.out" 2>&1
    echo "gpu run again with AXONN_CUDA_SYNC=1: exit $?"; tail -3 "$OUTD/train_gpu_sync.out"
  fi
  "$BIN/axonn" "${args[@]}" --backend cpu --out "$OUTD/train_cpu" > "$OUTD/train_cpu.out" 2>&1 || { echo "cpu run failed"; tail -5 "$OUTD/train_cpu.out"; return 1; }
  # bf16 on the GPU (matrix-unit attention) beside the CPU's fp32: reported, not judged
  "$BIN/axonn" "${args[@]}" --backend cuda --dtype bf16 --out "$OUTD/train_gpu_bf16" > "$OUTD/train_gpu_bf16.out" 2>&1
  echo "gpu bf16 run: exit $?"; tail -2 "$OUTD/train_gpu_bf16.out"
  python3 - "$OUTD/train_cpu/metrics.jsonl" "$OUTD/train_gpu_bf16/metrics.jsonl" <<'EOF'
import json, sys
c, g = ({r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r} for p in sys.argv[1:3])
last = max(set(c) & set(g))
print(f"bf16 GPU vs fp32 CPU at step {last}: {g[last]:.5f} vs {c[last]:.5f}, relative {abs(g[last]-c[last])/c[last]:.2e}")
EOF
  python3 - "$OUTD/train_cpu/metrics.jsonl" "$OUTD/train_gpu/metrics.jsonl" <<'EOF' || return 1
import json, sys
def curve(p):
    try: return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r and "step" in r}
    except OSError: return {}
c, g = curve(sys.argv[1]), curve(sys.argv[2])
print("step  cpu_loss  gpu_loss  rel_diff")
for s in sorted(set(c) & set(g)): print(f"{s:4d}  {c[s]:.5f}  {g[s]:.5f}  {abs(g[s]-c[s])/abs(c[s]):.2e}")
if not g: sys.exit("no GPU loss curve")
last = max(set(c) & set(g)); d = abs(g[last] - c[last]) / abs(c[last])
print(f"final step {last}: relative difference {d:.3e} (target <= 1e-2)")
sys.exit(0 if d <= 1e-2 else 1)
EOF
  return $rc
}

# Several ranks on one GPU (--share-gpu: every group's collectives through MPI
# on host buffers): 50 steps on each 4D grid of 4 ranks and on 1,1,3,1 against
# the 1-rank run, fp32 within 1e-5 relative at every step, bf16 within 2e-2;
# eval of the trained model on each grid equal to 1 rank's; while a 4-rank run
# trains, nvidia-smi must list 4 processes (no stray context of one rank on
# another's device). AX_GRID_BACKEND=cpu rehearses the same on the CPU.
grids_cmp() {
  local be=${AX_GRID_BACKEND:-cuda} rc=0 d
  local model=(--n-layer 2 --n-head 12 --n-embd 192 --vocab-size 512 --block-size 64 --batch 12)
  local args=(train --synthetic --steps "${AX_GRID_STEPS:-50}" --val-every 0 --save-every 0 --log-every 1 --seed 7
              "${model[@]}" --backend "$be" --share-gpu)
  python3 - "$OUTD/grids_val.bin" <<'EOF2'
import random, struct, sys
random.seed(5); toks = [random.randrange(512) for _ in range(12 * 65 * 2)]
hdr = [20240520, 1, len(toks)] + [0] * 253
open(sys.argv[1], "wb").write(struct.pack("<256i", *hdr) + struct.pack("<%dH" % len(toks), *toks))
EOF2
  for d in fp32 bf16; do
    "$BIN/axonn" "${args[@]}" --dtype "$d" --out "$OUTD/grids_1_$d" > "$OUTD/grids_1_$d.out" 2>&1 || { echo "1 rank $d: failed"; tail -3 "$OUTD/grids_1_$d.out"; rc=1; continue; }
    for g in 1,2,2,1 2,1,1,2 1,1,2,2 1,1,1,4 1,1,3,1; do
      local np=4 tag=${g//,/}_$d; [ "$g" = 1,1,3,1 ] && np=3
      mpirun -np $np "$BIN/axonn" "${args[@]}" --dtype "$d" --grid "$g" --out "$OUTD/grids_$tag" > "$OUTD/grids_$tag.out" 2>&1 &
      local pid=$!
      if [ "$be" = cuda ] && [ "$g" = 1,1,2,2 ]; then   # the processes on the GPU while the ranks train
        sleep 8; echo "grid $g $d: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l) processes on the GPU (expected $np)"
      fi
      wait $pid || { echo "grid $g $d: failed"; tail -3 "$OUTD/grids_$tag.out"; rc=1; continue; }
      python3 - "$OUTD/grids_1_$d/metrics.jsonl" "$OUTD/grids_$tag/metrics.jsonl" "$g $d" "$([ $d = fp32 ] && echo 1e-5 || echo 2e-2)" <<'EOF2' || rc=1
import json, sys
a, b = ({r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r} for p in sys.argv[1:3])
worst = max(abs(b[s] - a[s]) / abs(a[s]) for s in a)
ok = set(a) == set(b) and worst <= float(sys.argv[4])
print(f"grid {sys.argv[3]}: {len(b)} steps, worst relative loss difference {worst:.2e} (limit {sys.argv[4]}): {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
EOF2
      if [ "$d" = fp32 ]; then
        local e1 eg
        e1=$("$BIN/axonn" eval --backend "$be" --model "$OUTD/grids_1_$d" --data "$OUTD/grids_val.bin" --batch 12 --seq 64 --json)
        eg=$(mpirun -np $np "$BIN/axonn" eval --backend "$be" --share-gpu --grid "$g" --model "$OUTD/grids_1_$d" --data "$OUTD/grids_val.bin" --batch 12 --seq 64 --json)
        python3 -c 'import json,sys; a,b=(json.loads(x)["loss"] for x in sys.argv[1:3]); d=abs(a-b)/a; print(f"eval grid {sys.argv[3]}: {b:.6f} vs 1 rank {a:.6f} ({d:.1e})"); sys.exit(d>1e-5)' "$e1" "$eg" "$g" || rc=1
      fi
    done
  done
  return $rc
}

# cuBLASLt bf16 at the layers' shapes (rows B*T = 8192), and a square reference
gemm_peak() {
  "$BIN/tool_gemm_rate" cuda bf16 8192,8192,8192 \
    8192,2304,768 8192,768,768 8192,3072,768 8192,768,3072 8192,50304,768 \
    8192,6144,2048 8192,2048,2048 8192,8192,2048 8192,2048,8192 8192,50304,2048
}

# AXONN_CUDA_PROFILE=1: each backend entry's device time, printed at exit;
# the attention path as AXONN_CUDA_ATTN says (the default, or tiled / flash)
bench_small() {
  AXONN_CUDA_PROFILE=1 "$BIN/axonn" bench --backend cuda --dtype bf16 --preset gpt2 --seq 1024 --batch 8 --iters 10
}
bench_13b() {
  AXONN_CUDA_PROFILE=1 "$BIN/axonn" bench --backend cuda --dtype bf16 --n-layer 24 --n-embd 2048 --n-head 16 \
    --block-size 2048 --vocab-size 50257 --seq 2048 --batch 4 --iters 6
}

torch_small() {
  python3 -c 'import torch; assert torch.cuda.is_available()' || { echo "SKIP: no PyTorch with CUDA"; return 77; }
  local a=(--device cuda --dtype bf16 --vocab 50257 --seq 1024 --layers 12 --heads 12 --embd 768 --batch 8 --steps 10 --timed 8 --threads 1)
  python3 bench/torch_gpt.py "${a[@]}" || return 1
  [ "${AX_TORCH_COMPILE:-1}" = 0 ] && return 0
  python3 bench/torch_gpt.py "${a[@]}" --compile || echo "torch.compile: failed (eager figure above stands)"
}

# every op again under compute-sanitizer's memcheck: out-of-bounds and misaligned accesses
sanitize() {
  set -o pipefail
  command -v compute-sanitizer >/dev/null || { echo "SKIP: no compute-sanitizer"; return 77; }
  local rc=0 a
  for a in default ${AX_ATTN_ALSO:-}; do
    echo "-- attention: $a"
    AXONN_CUDA_ATTN=$a compute-sanitizer --tool memcheck --print-limit 20 --error-exitcode 3 "$BIN/test_backend_cmp" \
      2>&1 | tail -20 || rc=$?
  done
  return $rc
}

# shared-memory races and barrier misuse of the flash kernels (the CPU
# emulation cannot see a missing __syncwarp)
racecheck() {
  set -o pipefail
  command -v compute-sanitizer >/dev/null || { echo "SKIP: no compute-sanitizer"; return 77; }
  local rc=0 t
  for t in racecheck synccheck; do
    echo "-- $t, attention: flash"
    AXONN_CUDA_ATTN=flash compute-sanitizer --tool $t --print-limit 20 --error-exitcode 3 "$BIN/test_backend_cmp" \
      2>&1 | tail -12 || rc=$?
  done
  return $rc
}

export -f racecheck sanitize env_info build versions ops_cmp train_cmp grids_cmp gemm_peak bench_small bench_13b torch_small
export ROOT PACK OUTD
step env 20 0 env_info
step build 240 0 build
setup_paths
step version 30 0 versions
step ops 45 1 ops_cmp
step nccl 20 1 "${BIN}/test_nccl"
# two ranks on the one GPU: every group staged through the host (NCCL refuses them)
step nccl_shared 30 1 mpirun -np 2 "${BIN}/test_nccl"
step train 60 1 train_cmp
step grids 150 1 grids_cmp
step gemm 30 1 gemm_peak
step bench_gpt2_small 45 1 bench_small
step bench_gpt_1p3b 90 1 bench_13b
# AX_ATTN_ALSO="tiled flash": the other attention paths too (ops and benches)
for a in ${AX_ATTN_ALSO:-}; do
  export AXONN_CUDA_ATTN=$a
  step "ops_$a" 45 1 ops_cmp
  step "bench_gpt2_small_$a" 45 1 bench_small
  [ "$a" = tiled ] || step "bench_gpt_1p3b_$a" 90 1 bench_13b
  unset AXONN_CUDA_ATTN
done
step torch_gpt2_small 100 1 torch_small
step sanitize 90 1 sanitize
case " ${AX_ATTN_ALSO:-} " in *" flash "*) step racecheck 120 1 racecheck ;; esac
echo "" >> "$SUM"
echo "total $(( $(date +%s) - T0 )) s; GPU: $([ $HAVE_GPU = 1 ] && nvidia-smi -L | head -1 || echo none)" >> "$SUM"
cat "$SUM"
