#!/usr/bin/env bash
# Benchmarks `axonn train` against a PyTorch implementation of the same GPT-2
# (bench/torch_gpt.py) at the same thread count, or (--grids) compares the
# 2-rank 4D grids with 1 rank. Prints a markdown report on stdout.
#
#   bash bench/run.sh                     # tiny + small: axonn vs PyTorch, 2 threads
#   bash bench/run.sh --grids             # small: 1 rank x 2 threads vs every 2-rank grid
#   bash bench/run.sh --coretype-compare  # also rerun small axonn with OPENBLAS_CORETYPE unset
#
# Method: 10 optimizer steps per run; ms/step is the mean of the last 8 (the
# first 2 are warm-up). Model FLOPs per step = 72 B s l h^2 (1 + s/(6h) + V/(12 h l)).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=$ROOT/build/axonn
PY=/usr/bin/python3
MODE=pytorch
CORETYPE_COMPARE=0
STEPS=10
THREADS=2
KEEP=
ONLY=

usage() {
    cat <<EOF
usage: bash bench/run.sh [--grids] [--coretype-compare] [--axonn PATH] [--python PATH] [--steps N] [--only NAME] [--keep DIR]

  (default)           tiny and small configs: axonn vs PyTorch, both with $THREADS threads
  --grids             small config: 1 rank x 2 threads vs each 2-rank grid (1 thread per rank)
  --coretype-compare  also rerun the small config of axonn (1 rank, 2 threads) with
                      OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (default mode: PyTorch too)
  --axonn PATH        the axonn binary (default build/axonn)
  --python PATH       python with torch for bench/torch_gpt.py (default /usr/bin/python3)
  --steps N           steps per run (default 10; the mean excludes the first 2)
  --only NAME         run only config NAME (tiny or small; --grids: the config to use, default small)
  --keep DIR          keep every run's log and metrics under DIR
EOF
}

while [ $# -gt 0 ]; do
    case $1 in
        --grids) MODE=grids ;;
        --coretype-compare) CORETYPE_COMPARE=1 ;;
        --axonn) AXONN=$2; shift ;;
        --axonn=*) AXONN=${1#*=} ;;
        --python) PY=$2; shift ;;
        --python=*) PY=${1#*=} ;;
        --steps) STEPS=$2; shift ;;
        --steps=*) STEPS=${1#*=} ;;
        --only) ONLY=$2; shift ;;
        --only=*) ONLY=${1#*=} ;;
        --keep) KEEP=$2; shift ;;
        --keep=*) KEEP=${1#*=} ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[ "$STEPS" -ge 3 ] || { echo "run.sh: --steps must be at least 3" >&2; exit 2; }
[ -x "$AXONN" ] || { echo "run.sh: no axonn binary at $AXONN (build it, or pass --axonn PATH)" >&2; exit 1; }
if [ "$MODE" = pytorch ]; then
    "$PY" -c 'import torch' 2>/dev/null || { echo "run.sh: $PY cannot import torch (pass --python PATH)" >&2; exit 1; }
fi

if [ -n "$KEEP" ]; then mkdir -p "$KEEP"; WORK=$(cd "$KEEP" && pwd); else WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT; fi
TIMED=$((STEPS - 2))

# name V T L H C B
CONFIGS=("tiny 256 128 4 4 128 8" "small 50257 256 12 12 768 4")

load() { uptime | sed 's/.*load average: */load /'; }

# Contention: CPU time used by other processes while a run was going, in cores
# (the machine's busy time from /proc/stat minus this script's children's).
HZ=$(getconf CLK_TCK)
busy_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
child_cpu() { # user + system seconds of waited-for children (must run in this shell, not a subshell)
    times >"$WORK/.times"
    awk 'END { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } print t }' "$WORK/.times"
}
snap_begin() { S_BUSY=$(busy_jiffies); S_T=$(date +%s.%N); child_cpu >"$WORK/.ch0"; }
snap_end() { # sets OTHER (cores used by others on average) and WALL
    local b t c0 c1
    b=$(busy_jiffies); t=$(date +%s.%N); child_cpu >"$WORK/.ch1"
    c0=$(cat "$WORK/.ch0"); c1=$(cat "$WORK/.ch1")
    WALL=$(awk -v a="$S_T" -v b="$t" 'BEGIN { printf "%.0f", b - a }')
    OTHER=$(awk -v b0="$S_BUSY" -v b1="$b" -v hz="$HZ" -v c0="$c0" -v c1="$c1" -v t0="$S_T" -v t1="$t" \
        'BEGIN { o = ((b1 - b0) / hz - (c1 - c0)) / (t1 - t0); if (o < 0) o = 0; printf "%.2f", o }')
}

model_flops() { # V T L H(unused) C B -> FLOPs per step
    awk -v V="$1" -v s="$2" -v l="$3" -v h="$5" -v B="$6" \
        'BEGIN { printf "%.6e", 72*B*s*l*h*h*(1 + s/(6*h) + V/(12*h*l)) }'
}

# Spread of the timed steps in DIR/metrics.jsonl: "min-max ms (spread%)",
# spread = (max - min) / mean. Sets SPREAD_PCT as an integer.
step_spread() {
    local out
    out=$("$PY" - "$1/metrics.jsonl" "$TIMED" <<'EOF'
import json, sys
ms = [json.loads(l)["ms"] for l in open(sys.argv[1]) if '"ms"' in l][-int(sys.argv[2]):]
m = sum(ms) / len(ms)
print("%.0f-%.0f ms (%.0f%%) %d" % (min(ms), max(ms), 100 * (max(ms) - min(ms)) / m, round(100 * (max(ms) - min(ms)) / m)))
EOF
)
    SPREAD=${out% *}
    SPREAD_PCT=${out##* }
}

NOISY=0
note_noise() { # noisy: timed steps spread by more than 20%, or other processes took over 0.25 cores
    [ "$SPREAD_PCT" -le 20 ] || NOISY=1
    awk -v o="${OTHER:-0}" 'BEGIN { exit !(o > 0.25) }' && NOISY=1 || true
}

# run_axonn TAG NRANKS GRID THREADS V T L H C B [env...]: sets A_MS A_TPS A_GFLOPS A_GEMM A_PROFILE A_MEM SPREAD
run_axonn() {
    local tag=$1 n=$2 grid=$3 thr=$4 V=$5 T=$6 L=$7 H=$8 C=$9 B=${10}
    shift 10
    local out=$WORK/$tag
    rm -rf "$out"; mkdir -p "$out"
    local cmd=("$AXONN" train --synthetic --vocab-size "$V" --block-size "$T" --seq "$T" --n-layer "$L" --n-head "$H"
               --n-embd "$C" --batch "$B" --steps "$STEPS" --threads "$thr" --profile --quiet
               --out "$out/run" --metrics "$out/metrics.jsonl" --log-every 1000 --grid "$grid")
    if [ "$n" -gt 1 ]; then
        cmd=(mpirun --allow-run-as-root --oversubscribe --bind-to none -n "$n" "${cmd[@]}")
    fi
    snap_begin
    if ! env "$@" "${cmd[@]}" >"$out/log.raw" 2>&1; then
        echo "run.sh: axonn run $tag failed; its output:" >&2; cat "$out/log.raw" >&2; exit 1
    fi
    snap_end
    # Under mpirun, rank 0's stdout is a pty, so axonn emits terminal escapes (\r, ESC[K).
    sed -e 's/\x1b\[K//g' -e 's/.*\r//' "$out/log.raw" >"$out/log"
    local sum prof
    sum=$(grep '^summary:' "$out/log" | tail -1)
    prof=$(grep '^profile:' "$out/log" | tail -1)
    A_MEM=$(grep '^memory per rank:' "$out/log" | head -1 | sed 's/^memory per rank: *//')
    A_MS=$(sed -E 's/.*: ([0-9.]+) ms\/step.*/\1/' <<<"$sum")
    A_TPS=$(sed -E 's/.* ([0-9.]+) tokens\/s.*/\1/' <<<"$sum")
    A_GFLOPS=$(awk -v f="$(model_flops "$V" "$T" "$L" "$H" "$C" "$B")" -v ms="$A_MS" 'BEGIN { printf "%.2f", f / (ms * 1e-3) / 1e9 }')
    A_GEMM=$(sed -E 's/^profile: GEMM ([0-9.]+%) of step time \(([0-9.]+) GFLOP\/s in GEMMs\).*/\1 (\2 GFLOP\/s)/' <<<"$prof")
    A_PROFILE=${prof#profile: }
    rm -rf "$out/run"  # checkpoint + model: large for the small config, not needed
    step_spread "$out"
    note_noise
    SPREAD="$SPREAD, others ${OTHER}"
    RAW+=("$tag (${WALL} s, other processes ${OTHER} cores, $(load)): ${sum#summary: }" "$tag: $prof")
}

# run_torch TAG V T L H C B: sets P_MS P_TPS P_GFLOPS SPREAD
run_torch() {
    local tag=$1 V=$2 T=$3 L=$4 H=$5 C=$6 B=$7
    shift 7
    local out=$WORK/$tag
    mkdir -p "$out"
    snap_begin
    if ! env "$@" "$PY" "$ROOT/bench/torch_gpt.py" --vocab "$V" --seq "$T" --layers "$L" --heads "$H" --embd "$C" \
            --batch "$B" --steps "$STEPS" --timed "$TIMED" --threads "$THREADS" >"$out/log" 2>&1; then
        echo "run.sh: PyTorch run $tag failed; its output:" >&2; cat "$out/log" >&2; exit 1
    fi
    snap_end
    local js
    js=$(grep '^{' "$out/log" | tail -1)
    read -r P_MS P_TPS P_GFLOPS P_MIN P_MAX <<<"$("$PY" -c '
import json, sys
d = json.loads(sys.argv[1])
print("%.1f" % d["ms_per_step"], "%.0f" % d["tokens_per_s"], "%.2f" % d["model_gflops"], d["ms_min"], d["ms_max"])' "$js")"
    SPREAD_PCT=$(awk -v a="$P_MIN" -v b="$P_MAX" -v m="$P_MS" 'BEGIN { printf "%d", 100 * (b - a) / m + 0.5 }')
    SPREAD=$(awk -v a="$P_MIN" -v b="$P_MAX" -v p="$SPREAD_PCT" 'BEGIN { printf "%.0f-%.0f ms (%d%%)", a, b, p }')
    note_noise
    SPREAD="$SPREAD, others ${OTHER}"
    RAW+=("$tag (${WALL} s, other processes ${OTHER} cores, $(load)): $js")
}

RAW=()
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | wc -l)
CPU=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
CORES=$(nproc)
TORCH=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo n/a)

echo "# axonn.c CPU benchmark: $([ "$MODE" = grids ] && echo "2-rank 4D grids vs 1 rank" || echo "axonn vs PyTorch")"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- commit: $COMMIT$([ "$DIRTY" -gt 0 ] && echo " (+ $DIRTY modified tracked files in the working tree)")"
echo "- machine: $CPU (family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')), $CORES cores ($(lscpu | sed -n 's/^Thread(s) per core: *//p') thread/core), $(free -g | awk '/^Mem:/ {print $2}') GiB RAM"
# The OpenBLAS kernel set the axonn binary gets, with the environment as is and with the core type unset.
BLASLIB=$(ldd "$AXONN" 2>/dev/null | awk '/libopenblas/ { print $3; exit }')
corename() {
    [ -n "$BLASLIB" ] || { echo "?"; return; }
    env "$@" "$PY" -c 'import ctypes, sys
l = ctypes.CDLL(sys.argv[1]); l.openblas_get_corename.restype = ctypes.c_char_p; l.openblas_get_config.restype = ctypes.c_char_p
print(l.openblas_get_corename().decode(), "|", " ".join(l.openblas_get_config().decode().split()[:2]))' "$BLASLIB" 2>/dev/null || echo "?"
}
CORE_ENV=$(corename); CORE_UNSET=$(corename -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
echo "- OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>}, OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-<unset>}: ${CORE_ENV%% |*} kernels of ${CORE_ENV##*| } ($BLASLIB; with both unset it picks ${CORE_UNSET%% |*})"
echo "- axonn: $AXONN; PyTorch: $TORCH ($PY; bench/torch_gpt.py sets OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} for it, OMP/OPENBLAS_NUM_THREADS=$THREADS)"
echo "- method: $STEPS steps per run, mean of the last $TIMED (first 2 are warm-up); model FLOPs/step = 72·B·s·l·h²·(1 + s/6h + V/12hl); synthetic/random tokens, fp32"
echo "- load at start: $(load)"
echo

if [ "$MODE" = pytorch ]; then
    echo "Configs (both implementations, $THREADS threads, 1 process):"
    echo
    echo "| config | V | T | L | H | C | B | tokens/step |"
    echo "|---|---|---|---|---|---|---|---|"
    for c in "${CONFIGS[@]}"; do
        read -r name V T L H C B <<<"$c"
        echo "| $name | $V | $T | $L | $H | $C | $B | $((B * T)) |"
    done
    echo
    ROWS=()
    for c in "${CONFIGS[@]}"; do
        read -r name V T L H C B <<<"$c"
        [ -z "$ONLY" ] || [ "$ONLY" = "$name" ] || continue
        run_axonn "axonn-$name" 1 1,1,1,1 "$THREADS" "$V" "$T" "$L" "$H" "$C" "$B"
        a_row=("$A_MS" "$A_TPS" "$A_GFLOPS" "$A_GEMM" "$SPREAD")
        if [ "$name" = small ]; then SMALL_MS=$A_MS SMALL_TPS=$A_TPS SMALL_GEMM=$A_GEMM SMALL_SPREAD=$SPREAD; fi
        run_torch "pytorch-$name" "$V" "$T" "$L" "$H" "$C" "$B"
        if [ "$name" = small ]; then SMALL_PMS=$P_MS SMALL_PTPS=$P_TPS SMALL_PSPREAD=$SPREAD; fi
        ratio=$(awk -v a="${a_row[1]}" -v p="$P_TPS" 'BEGIN { printf "%.2f", a / p }')
        ROWS+=("| $name | axonn | ${a_row[0]} | ${a_row[1]} | ${a_row[2]} | $ratio | ${a_row[3]} | ${a_row[4]} |")
        ROWS+=("| $name | pytorch | $P_MS | $P_TPS | $P_GFLOPS | | | $SPREAD |")
    done
    echo "| config | impl | ms/step | tokens/s | model GFLOP/s | ratio axonn/pytorch (tokens/s) | GEMM share (axonn) | timed steps min-max (spread), other processes' CPU (cores) |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
else
    read -r name V T L H C B <<<"${CONFIGS[1]}"
    [ "$ONLY" != tiny ] || read -r name V T L H C B <<<"${CONFIGS[0]}"
    echo "Config: $name (V=$V, T=$T, L=$L, H=$H, C=$C, B=$B global, $((B * T)) tokens/step). 1 rank runs $THREADS threads; 2-rank grids run 1 thread per rank (mpirun --bind-to none)."
    echo
    ROWS=()
    run_axonn "grid-1x2t" 1 1,1,1,1 "$THREADS" "$V" "$T" "$L" "$H" "$C" "$B"
    BASE_TPS=$A_TPS
    if [ "$name" = small ]; then SMALL_MS=$A_MS SMALL_TPS=$A_TPS SMALL_GEMM=$A_GEMM SMALL_SPREAD=$SPREAD; fi
    ROWS+=("| 1,1,1,1 | 1 x $THREADS | $A_MS | $A_TPS | 1.00 | $A_GFLOPS | $SPREAD | $A_MEM | $A_PROFILE |")
    for grid in 2,1,1,1 1,2,1,1 1,1,2,1 1,1,1,2; do
        run_axonn "grid-${grid//,/}" 2 "$grid" 1 "$V" "$T" "$L" "$H" "$C" "$B"
        ratio=$(awk -v a="$A_TPS" -v b="$BASE_TPS" 'BEGIN { printf "%.2f", a / b }')
        ROWS+=("| $grid | 2 x 1 | $A_MS | $A_TPS | $ratio | $A_GFLOPS | $SPREAD | $A_MEM | $A_PROFILE |")
    done
    echo "| grid D,X,Y,Z | ranks x threads | ms/step | tokens/s | vs 1 rank | model GFLOP/s | timed steps min-max (spread), other processes' CPU (cores) | memory per rank | profile (share of step time) |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
fi

if [ "$CORETYPE_COMPARE" = 1 ]; then
    read -r name V T L H C B <<<"${CONFIGS[1]}"
    if [ -z "${SMALL_MS-}" ]; then  # small was not part of this run: measure it with the environment as set
        run_axonn "small-coretype-env" 1 1,1,1,1 "$THREADS" "$V" "$T" "$L" "$H" "$C" "$B"
        SMALL_MS=$A_MS SMALL_TPS=$A_TPS SMALL_GEMM=$A_GEMM SMALL_SPREAD=$SPREAD
    fi
    run_axonn "small-coretype-unset" 1 1,1,1,1 "$THREADS" "$V" "$T" "$L" "$H" "$C" "$B" -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
    echo
    echo "OpenBLAS core type (small config, axonn, 1 rank x $THREADS threads):"
    echo
    echo "| OPENBLAS_CORETYPE | OPENBLAS_L2_SIZE | ms/step | tokens/s | GEMM share | timed steps min-max (spread), other processes' CPU (cores) |"
    echo "|---|---|---|---|---|---|"
    echo "| ${OPENBLAS_CORETYPE-<unset>} | ${OPENBLAS_L2_SIZE-<unset>} | $SMALL_MS | $SMALL_TPS | $SMALL_GEMM | $SMALL_SPREAD |"
    echo "| <unset> | <unset> | $A_MS | $A_TPS | $A_GEMM | $SPREAD |"
    if [ -n "${SMALL_PMS-}" ]; then
        # PyTorch (Debian's build) calls the system libblas, which is OpenBLAS too.
        U_MS=$A_MS U_TPS=$A_TPS
        run_torch "pytorch-small-coretype-unset" "$V" "$T" "$L" "$H" "$C" "$B" -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
        echo
        echo "Same, axonn vs PyTorch (Debian's torch links the system libblas, i.e. OpenBLAS, so the core type applies to both):"
        echo
        echo "| OPENBLAS_CORETYPE | axonn tokens/s | pytorch tokens/s | ratio axonn/pytorch | pytorch timed steps min-max (spread), others' CPU (cores) |"
        echo "|---|---|---|---|---|"
        echo "| ${OPENBLAS_CORETYPE-<unset>} | $SMALL_TPS | $SMALL_PTPS | $(awk -v a="$SMALL_TPS" -v p="$SMALL_PTPS" 'BEGIN { printf "%.2f", a / p }') | $SMALL_PSPREAD |"
        echo "| <unset> | $U_TPS | $P_TPS | $(awk -v a="$U_TPS" -v p="$P_TPS" 'BEGIN { printf "%.2f", a / p }') | $SPREAD |"
    fi
fi

echo
echo "- load at end: $(load)"
if [ "$NOISY" = 1 ]; then
    echo "- WARNING: noisy: in at least one run the timed steps vary by more than 20%, or other processes used over 0.25 cores (see the spread column); rerun when the machine is idle"
fi
echo
echo "Raw lines:"
echo
echo '```'
printf '%s\n' "${RAW[@]}"
echo '```'
