# shellcheck shell=bash
# Shared by the two parts of the GPU check (scripts/gpu_check.sh correct |
# speed): where results go, the step runner with its time budget, and the
# binaries (a build where the libraries are, else the pack). Sourced, with
# ROOT (the repository) and PART (correct or speed) set.
#
# Results: $OUT (the device tool's folder) or ./gpu-check, under
# bench/results/<date>-<device>/<part>/: one log per step and summary.md; the
# speed part adds README.md, the figures. With $OUT set the folder comes back
# in the repository's layout, ready to commit.

PACK=$ROOT/.gpu-pack
HAVE_GPU=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then HAVE_GPU=1; fi
# the device's short name: "NVIDIA H100 80GB HBM3" -> h100; no GPU -> rehearsal
if [ "$HAVE_GPU" = 1 ]; then
  GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  DEV=$(echo "$GPU_NAME" | sed -E 's/^NVIDIA //; s/ .*//' | tr 'A-Z' 'a-z' | tr -c 'a-z0-9-\n' '-')
else
  GPU_NAME=none; DEV=rehearsal
fi
RUN_DIR=${OUT:-$ROOT/gpu-check}/bench/results/$(date -u +%F)-$DEV
OUTD=$RUN_DIR/$PART
mkdir -p "$OUTD"
SUM=$OUTD/summary.md
T0=$(date +%s)
# the part's own limit: the sum of its steps' limits is at most this; a step
# that would start after it is not run (and counts as not passed).
# AX_LIMIT_SCALE=N multiplies every step's limit (rehearsals on a slow CPU).
BUDGET=${AX_PART_BUDGET:-330}
FAILS=0
{
  echo "# GPU check, $PART part, $(date -u '+%Y-%m-%d %H:%M UTC'), tree $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), pack $(cut -c 1-7 "$PACK/commit" 2>/dev/null || echo none)"
  echo ""
  echo "Device: $GPU_NAME$([ -n "${AX_REHEARSE:-}" ] && echo ' (AX_REHEARSE=1: GPU steps run without a GPU)')"
  echo ""
  echo "| step | result | seconds | limit | log |"
  echo "| --- | --- | --- | --- | --- |"
} > "$SUM"

# step NAME LIMIT_S needs_gpu(0|1) CMD...: runs CMD with its output in NAME.log.
# A GPU step that exits 77 (SKIP) where a GPU is present is a failure.
step() {
  local name=$1 limit=$2 gpu=$3; shift 3
  local t rc res left
  t=$(date +%s)
  limit=$(( limit * ${AX_LIMIT_SCALE:-1} ))   # a rehearsal on a slow CPU: every limit times this
  left=$(( T0 + BUDGET - t ))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$gpu" = 1 ] && [ "$HAVE_GPU" = 0 ] && [ -z "${AX_REHEARSE:-}" ]; then
    echo "SKIP: no GPU on this machine (nvidia-smi -L)" > "$OUTD/$name.log"
    res=SKIP
  elif [ "$limit" -lt 5 ]; then
    echo "not run: the part's ${BUDGET} s were spent" > "$OUTD/$name.log"
    res="NOT RUN (time)"; FAILS=$((FAILS + 1))
  else
    timeout "$limit" bash -c '"$@"' step "$@" > "$OUTD/$name.log" 2>&1; rc=$?
    if [ "$rc" = 0 ]; then res=ok
    elif [ "$rc" = 77 ] && [ "$gpu" = 1 ] && [ "$HAVE_GPU" = 1 ]; then res="FAIL (skipped with a GPU present)"
    elif [ "$rc" = 77 ]; then res=SKIP
    elif [ "$rc" = 124 ]; then res="FAIL (over ${limit} s)"
    else res="FAIL (exit $rc)"; fi
    case $res in FAIL*) FAILS=$((FAILS + 1)) ;; esac
  fi
  echo "| $name | $res | $(( $(date +%s) - t )) | $limit | $name.log |" >> "$SUM"
  echo "gpu_check $PART: $name: $res"
}

finish() {
  {
    echo ""
    echo "total $(( $(date +%s) - T0 )) s of a ${BUDGET} s budget; $FAILS step(s) failed or not run; GPU: $([ $HAVE_GPU = 1 ] && nvidia-smi -L | head -1 || echo none)"
    if [ "$HAVE_GPU" = 0 ]; then echo "verdict: REHEARSAL (no GPU: not evidence of anything on a GPU)"
    else echo "verdict: $([ $FAILS = 0 ] && echo PASS || echo FAIL)"; fi
  } >> "$SUM"
  cat "$SUM"
  echo "results: $RUN_DIR"
}

env_info() {
  uname -a; nvidia-smi || true; nvcc --version || true; cmake --version | head -1 || true
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' || true
  nproc; free -g || true
}

# the binaries: a build here when the libraries are there, else the pack
build() {
  if [ -z "${AX_USE_PACK:-}" ] && command -v mpicc >/dev/null && pkg-config --exists jansson libpcre2-8 libxxhash 2>/dev/null && command -v nvcc >/dev/null; then
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DAXONN_CUDA=ON || return 1
    local t="test_backend_cmp test_nccl tool_gemm_rate"   # the test binaries: gpu_check.sh pack lists the same
    if [ -f tests/test_ring.c ]; then t="$t test_ring"; fi  # ring attention, where this tree has it
    # shellcheck disable=SC2086
    cmake --build build-gpu -j "$(nproc)" --target axonn_cli $t || return 1
    mkdir -p "$OUTD/bin"; cp build-gpu/axonn "$OUTD/bin/"
    for f in $t; do cp "build-gpu/tests/$f" "$OUTD/bin/"; done
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
  if [ -d "$P/usr/lib/x86_64-linux-gnu" ] && [ ! -x "$OUTD/bin/axonn" ]; then
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

# the first three steps of either part: what the machine is, the binaries, their libraries
prologue() {
  export -f env_info build versions
  export ROOT PACK OUTD
  step env 15 0 env_info
  step build 15 0 build
  setup_paths
  step version 5 0 versions
}
