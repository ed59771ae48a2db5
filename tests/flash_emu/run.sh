#!/bin/sh
# Emulate attention_flash.cu's kernels on the CPU (see emu.cc) and compare them
# with an fp64 attention: ./tests/flash_emu/run.sh [B,T,Hl,KVl,hd ...]
# (without shapes, emu.cc's default set); ./tests/flash_emu/run.sh --ring
# [--stored] B,Tc,Hl,KVl,hd ...: ring attention's blocks on the tiled and flash
# paths (--stored: also stored in bf16, against fp32);
# ./tests/flash_emu/run.sh --stored B,T,Hl,KVl,hd ...: q|k|v and out stored in
# bf16 against fp32 copies of the same values, bitwise, on both paths
set -e
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../src
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# kernel<<<grid, block, smem, stream>>>(args); -> emu_launch(grid, block, smem, stream, [=] { kernel(args); });
sed 's/^\([ ]*\)\([A-Za-z_0-9]*\)<<<\(.*\)>>>(\(.*\));/\1emu_launch(\3, [=] { \2(\4); });/' \
    "$src/backend/cuda/attention_flash.cu" | grep -v '#include "backend/cuda/cuda.h"' > "$tmp/flash.cc"
# attention.cu (the tiled path) the same way, its dynamic shared memory the emulation's
sed -e 's/^\([ ]*\)\([A-Za-z_0-9]*\)<<<\(.*\)>>>(\(.*\));/\1emu_launch(\3, [=] { \2(\4); });/' \
    -e 's/extern __shared__ float sm\[\];/float *sm = (float *)ax_fsm;/' \
    "$src/backend/cuda/attention.cu" | grep -v '#include "backend/cuda/cuda.h"' > "$tmp/tiled.cc"
g++ -O2 -std=c++17 -Wall -Wno-unknown-pragmas -I"$tmp" -I"$here/include" -I"$src" "$here/emu.cc" "$here/tiled_emu.cc" -o "$tmp/emu"
"$tmp/emu" "$@"
