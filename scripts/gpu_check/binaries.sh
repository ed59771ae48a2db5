# shellcheck shell=bash
# The machine and the binaries the GPU check runs: what the machine is, the
# pack unpacked (or AX_BIN's binaries), the library paths, the versions. The
# GPU machine has nvcc and PyTorch but not the Debian libraries the build
# uses (MPI, OpenBLAS, jansson, PCRE2, xxHash), so the pack (pack.sh) brings
# them as .debs, unpacked into a private prefix (never into /); cuBLASLt and
# NCCL are the machine's own (the toolkit's or PyTorch's pip packages), the
# CUDA runtime is linked in statically.

PACK=$ROOT/.gpu-pack
PREFIX=/tmp/axonn-prefix # kept between runs on one machine: unpacked once per pack
# the test programs the check runs beside axonn (pack.sh builds and packs them)
CHECK_BINS="test_backend_cmp test_nccl test_ring tool_gemm_rate"
export PACK PREFIX

# the machine, into the log; its main facts into SCRATCH/machine.md for the summary
env_info() {
  uname -a
  nvidia-smi || true
  nvcc --version || true
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' || true
  nproc
  free -g || true
  {
    if [ "$HAVE_GPU" = 1 ]; then
      # "NVIDIA H200, 143771 MiB, driver 580.159.04, CUDA 13.0"
      echo "- device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1 |
        sed -E 's/, ([^,]*)$/, driver \1/'), $(nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | sed 's/Version: //')"
    else
      echo "- device: none (nvidia-smi -L finds no GPU)"
    fi
    echo "- host: $(getconf _NPROCESSORS_ONLN) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, Linux $(uname -r)"
    echo "- nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*, V[0-9.]*' || echo none);" \
      "PyTorch: $(python3 -c 'import torch; print(torch.__version__, "(CUDA", torch.version.cuda, end=")")' 2>/dev/null || echo none)"
  } > "$SCRATCH/machine.md"
}

# AX_BIN's binaries as they are, or the pack's, with its libraries unpacked in PREFIX
unpack() {
  if [ -n "${AX_BIN:-}" ]; then
    echo "the binaries of AX_BIN=$AX_BIN"
    return 0
  fi
  [ -x "$PACK/bin/axonn" ] || {
    echo "no .gpu-pack/bin: run 'scripts/gpu_check.sh pack' where the CUDA toolkit is, and carry .gpu-pack"
    return 1
  }
  echo "the binaries of .gpu-pack, built from commit $(cat "$PACK/commit")"
  if ! cmp -s "$PACK/commit" "$PREFIX/.pack-commit"; then
    rm -rf "$PREFIX"
    mkdir -p "$PREFIX"
    for f in "$PACK"/debs/*.deb; do dpkg -x "$f" "$PREFIX" || return 1; done
    cp "$PACK/commit" "$PREFIX/.pack-commit"
  fi
  echo "$(ls "$PACK"/debs | wc -l) packages unpacked in $PREFIX"
  # PMIx finds its components and help files only at its built-in path (no
  # relocation variable worked): a link there, made only where nothing is
  local px=/usr/lib/x86_64-linux-gnu/pmix2
  if [ ! -e "$px" ]; then ln -s "$PREFIX$px" "$px" && echo "linked $px -> $PREFIX$px"; fi
}

# BIN, and the library paths: the prefix's, then the toolkit's and PyTorch's
# cuBLASLt and NCCL (run in the check's own shell, after unpack)
setup_paths() {
  local lp="" py d
  if [ -n "${AX_BIN:-}" ]; then
    BIN=$AX_BIN
  else
    BIN=$PACK/bin
    local l=$PREFIX/usr/lib/x86_64-linux-gnu
    lp="$l:$l/openblas-openmp:$l/openmpi/lib:$PREFIX/lib/x86_64-linux-gnu"
    export OPAL_PREFIX=$PREFIX/usr PATH=$PREFIX/usr/bin:$PATH
  fi
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && lp="$lp:$d"
  done
  py=$(python3 -c 'import os, importlib
for m in ("nvidia.cublas", "nvidia.nccl", "nvidia.cu13"):
    try: print(os.path.join(list(importlib.import_module(m).__path__)[0], "lib"))
    except Exception: pass' 2>/dev/null | tr '\n' ':')
  export BIN LD_LIBRARY_PATH="${lp#:}:${py}${LD_LIBRARY_PATH:-}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated \
    OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} \
    PMIX_MCA_pcompress_base_silence_warning=1
}

# the binaries' backends and libraries, into the log and SCRATCH/machine.md
versions() {
  "$BIN/axonn" --version || return 1
  ldd "$BIN/axonn" | grep -E "cublas|mpi|openblas|not found"
  mpirun --version | head -1
  local lt
  lt=$(ldd "$BIN/axonn" | awk '/libcublasLt/ {print $3}')
  {
    echo "- $("$BIN/axonn" --version | sed 's/^ *//' | paste -sd ';' | sed 's/;/; /g')"
    echo "- cuBLASLt: $([ -n "$lt" ] && readlink -f "$lt" || echo 'not linked'); MPI: $(mpirun --version | head -1)"
  } >> "$SCRATCH/machine.md"
}
export -f env_info unpack versions
