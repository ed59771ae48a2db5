#!/usr/bin/env bash
# scripts/gpu_check.sh pack: on a machine with the CUDA toolkit, from a clean
# checkout, a Release build into build-gpu (nice'd, 2 jobs) and .gpu-pack/,
# which the GPU check carries to the GPU machine (at most 60 MiB):
#   bin/     axonn and the test programs the check runs, stripped
#   debs/    the runtime closure of libmpi, OpenBLAS (OpenMP build), jansson,
#            PCRE2 and xxHash beyond what any glibc system has, and Open MPI's
#            own components' needs (binaries.sh unpacks them)
#   commit   the commit built
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# shellcheck source=scripts/gpu_check/binaries.sh
. scripts/gpu_check/binaries.sh # PACK, CHECK_BINS
nice -n 5 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DAXONN_CUDA=ON -DAXONN_DNNL=OFF -DAXONN_NATIVE=OFF > /dev/null
# shellcheck disable=SC2086
nice -n 5 cmake --build build-gpu -j 2 --target axonn_cli $CHECK_BINS
rm -rf "$PACK"
mkdir -p "$PACK/bin" "$PACK/debs"
cp build-gpu/axonn "$PACK/bin/"
for f in $CHECK_BINS; do cp "build-gpu/tests/$f" "$PACK/bin/"; done
strip "$PACK"/bin/*
(cd "$PACK/debs" && apt-get download libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 \
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libgfortran5 libquadmath0 libjansson4 \
  libpcre2-8-0 libxxhash0 libopenblas0-openmp libltdl7 libnuma1 libmunge2 libfabric1 libucx0 \
  libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2 libpciaccess0 libudev1 2> /dev/null)
git rev-parse HEAD > "$PACK/commit"
du -sh "$PACK"/bin "$PACK"/debs
du -sh "$PACK"
mib=$(($(du -sb "$PACK" | cut -f1) / 1048576))
[ "$mib" -le 60 ] || { echo "gpu_check pack: .gpu-pack is $mib MiB, over the 60 MiB a GPU machine is carried" >&2; exit 1; }
