# Shared by the bench scripts (sourced): the named model configs, and the
# lines every record opens with.
#
# bench_provenance: the date, the commit (+dirty with uncommitted changes),
# and the CPU with the SIMD flags that decide its kernels, as markdown items.
bench_provenance() {
  echo "- date: $(date -u +%FT%TZ); commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+dirty')"
  echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p'); $(nproc --all) cores; flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -o -wE 'avx2|fma|f16c|avx512f|avx512_bf16|amx_bf16|amx_tile' | sort -u | tr '\n' ' ')"
}
#
# bench_config NAME: sets V T L H C B of config NAME (tiny, small, ckpt) and
# MODEL, the axonn model and batch flags for it; exits 2 naming the accepted
# ones. ckpt: the checkpoint benches' GPT-2 shape, 81M parameters (0.97 GB of
# checkpoint files), 128 tokens a step.
bench_config() {
  case $1 in
    tiny)  set -- 256 128 4 4 128 8 ;;
    small) set -- 50257 256 12 12 768 4 ;;
    ckpt)  set -- 50257 64 6 12 768 2 ;;
    *) echo "$(basename "$0"): --config $1: expected tiny, small or ckpt" >&2; exit 2 ;;
  esac
  V=$1 T=$2 L=$3 H=$4 C=$5 B=$6
  MODEL=(--vocab-size "$V" --block-size "$T" --n-layer "$L" --n-head "$H" --n-embd "$C" --batch "$B" --seq "$T")
}
