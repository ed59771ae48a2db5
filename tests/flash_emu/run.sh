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
# the launches and dynamic shared memory rewritten for the emulation (attention.cu: the tiled path)
sh "$here/../cuda_emu/convert.sh" "$src/backend/cuda/attention_flash.cu" "$tmp/flash.cc"
sh "$here/../cuda_emu/convert.sh" "$src/backend/cuda/attention.cu" "$tmp/tiled.cc"
g++ -O2 -std=c++17 -Wall -Wno-unknown-pragmas -I"$tmp" -I"$here/include" -I"$here/../cuda_emu/include" -I"$src" "$here/emu.cc" "$here/tiled_emu.cc" "$here/../cuda_emu/sched.cc" -o "$tmp/emu"
"$tmp/emu" "$@"
