#!/bin/sh
# Emulate attention_flash.cu's kernels on the CPU (see emu.cc) and compare them
# with an fp64 attention: ./tests/flash_emu/run.sh [B,T,Hl,KVl,hd ...]
# (without shapes, emu.cc's default set); ./tests/flash_emu/run.sh --ring
# [--stored] B,Tc,Hl,KVl,hd ...: ring attention's blocks on the tiled and flash
# paths (--stored: also stored in bf16, against fp32);
# ./tests/flash_emu/run.sh --stored B,T,Hl,KVl,hd ...: q|k|v and out stored in
# bf16 against fp32 copies of the same values, bitwise, on both paths
set -e
# the build's emulator (tests/ops.cmake: target flash_emu), brought up to date first
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../../build}
cmake --build "$build" --target flash_emu > /dev/null
exec "$build/tests/flash_emu/emu" "$@"
