#!/usr/bin/env bash
# The GPU check (issues 10, 29), in two parts that each fit one call of a GPU
# machine (at most 330 s each, planned for one H100 or H200; the machine's
# start-up counts against the same device time):
#
#   scripts/gpu_check.sh pack      # here, with the CUDA toolkit: builds Release
#                                  # into build-gpu and fills .gpu-pack/ (binaries
#                                  # and the Debian runtime libraries as .debs)
#   scripts/gpu_check.sh correct   # there (carry .gpu-pack): every CUDA op against
#                                  # the CPU under each attention path, NCCL, loss
#                                  # curves GPU vs CPU, grids sharing the GPU, the
#                                  # sanitizers on the attention kernels, and the
#                                  # flash verdict (scripts/gpu_check/correct.sh)
#   scripts/gpu_check.sh speed     # there: GEMM peak, GPT-2 small under each
#                                  # attention path, PyTorch eager and compiled,
#                                  # 1.3B GPT and Llama-3.2-1B, README.md of the
#                                  # figures (scripts/gpu_check/speed.sh)
#   scripts/gpu_check.sh digest [DIR]   # the lines that matter of a finished part
#   AX_USE_PACK=1 ...              # the pack's binaries even where a build is possible
#   AX_REHEARSE=1 ...              # run the GPU steps without a GPU too: their own
#                                  # SKIP and error paths, and the CPU halves
#   AX_PART_BUDGET=S               # the part's seconds (330)
#   AX_LIMIT_SCALE=N               # every step's limit times N (rehearsals on a slow CPU)
#
# Each step runs under its own time limit and the part goes on after a
# failure; a GPU step that says SKIP where a GPU is present is a failure.
# Results: $OUT (or ./gpu-check) /bench/results/<date>-<device>/<part>/, one log
# per step and summary.md (scripts/gpu_check/lib.sh).
#
# The GPU machine has nvcc, CMake and PyTorch but not the Debian libraries the
# build uses (MPI, OpenBLAS, jansson, PCRE2, xxHash), and no network. So the
# check builds there only where those are found; otherwise it runs the Release
# binaries built here, with the .debs unpacked into a private prefix (never
# into /), and the machine's own cuBLASLt and NCCL (toolkit or PyTorch's pip
# packages; the CUDA runtime is linked in statically).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PACK=$ROOT/.gpu-pack

case "${1:-}" in
pack)
  set -e
  nice -n 5 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DAXONN_CUDA=ON -DAXONN_DNNL=OFF -DAXONN_NATIVE=OFF >/dev/null
  t="test_backend_cmp test_nccl tool_gemm_rate"   # the test binaries: lib.sh's build() lists the same
  [ -f tests/test_ring.c ] && t="$t test_ring"
  # shellcheck disable=SC2086
  nice -n 5 cmake --build build-gpu -j 2 --target axonn_cli $t
  rm -rf "$PACK"; mkdir -p "$PACK/bin" "$PACK/debs"
  cp build-gpu/axonn "$PACK/bin/"
  for f in $t; do cp "build-gpu/tests/$f" "$PACK/bin/"; done
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
  ;;
digest)   # the lines that matter of a finished part (a reply's tail is short)
  d=${2:-}
  [ -n "$d" ] || d=$(ls -d "${OUT:-$ROOT/gpu-check}"/bench/results/*/* 2>/dev/null | tail -1)
  cd "$d" || exit 1
  [ -e ops.log ] && { echo "== ops"; grep -E "FAIL|passed|device|flash" ops.log | cut -c 1-110 | head -30; }
  [ -e train.log ] && { echo "== train"; grep -E "^train|exit" train.log; }
  [ -e grids.log ] && { echo "== grids"; grep -E "grid|eval|processes|failed" grids.log; }
  for f in sanitize.log racecheck.log; do [ -e "$f" ] && { echo "== $f"; grep -E "^--|ERROR SUMMARY|RACE|passed|error" "$f" | head -12; }; done
  [ -e gemm.log ] && { echo "== gemm"; head -3 gemm.log; }
  for f in bench_*.log; do
    [ -e "$f" ] || continue
    echo "== $f"; grep -E "ms/iteration|model FLOP|GEMM ceiling|^axonn: attention" "$f"
    grep -A 8 "^CUDA profile" "$f" | tail -n +3 | cut -c 1-100
  done
  [ -e torch.log ] && { echo "== torch"; grep -E "ms_per_step|compile" torch.log | cut -c 1-160; }
  [ -e README.md ] && cat README.md
  cat summary.md
  exit 0
  ;;
correct | speed)
  PART=$1
  # shellcheck source=scripts/gpu_check/lib.sh
  . "$ROOT/scripts/gpu_check/lib.sh"
  # shellcheck source=/dev/null
  . "$ROOT/scripts/gpu_check/$PART.sh"
  "run_$PART"
  [ "$FAILS" = 0 ]
  ;;
*)
  echo "usage: scripts/gpu_check.sh pack | correct | speed | digest [DIR] (the header says more)" >&2
  exit 2
  ;;
esac
