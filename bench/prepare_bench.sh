#!/usr/bin/env bash
# Throughput of `axonn prepare` (MB of text per second, one core) with two
# tokenizers: GPT-2's (50,257 ids; tests/fixtures/tokenizer/gpt2.tiktoken,
# fetched by scripts/fetch_gpt2_vocab.sh, skipped when that fails) and a
# 2048-id BPE trained here on the fortunes corpus. The input is ~20 MB: the
# fortune files of /usr/share/games/fortunes (not *.dat, not the *.u8 links)
# concatenated several times into one fortune file ('%' between files); one
# copy alone is also measured (the encoder's word cache helps the repeats).
#
#   bash bench/prepare_bench.sh [--axonn PATH] [--mb 20] [--reps 3] [--out FILE | --no-write]
#
# Each tokenizer runs --reps times (OMP_NUM_THREADS=1); the report gives the
# median of prepare's own figure (document bytes / time from the first
# document to the last shard, the tokenizer already loaded) and of the wall
# clock (input file bytes / whole command, start-up and tokenizer load
# included). MB = 10^6 bytes. Target: >= 5 MB/s with GPT-2.
# Prints the report and writes it to bench/results/DATE-cpu-prepare.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AXONN=$ROOT/build/axonn
MB=20
REPS=3
OUT=$ROOT/bench/results/$(date +%F)-cpu-prepare.md
FORTUNES=/usr/share/games/fortunes

while [ $# -gt 0 ]; do
    case $1 in
        --axonn) AXONN=$2; shift 2 ;;
        --mb) MB=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --no-write) OUT=; shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "prepare_bench: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -x "$AXONN" ] || { echo "prepare_bench: $AXONN not found (build first, or --axonn PATH)" >&2; exit 2; }
NCPU=$(getconf _NPROCESSORS_ONLN)    # before OMP_NUM_THREADS=1, which nproc obeys
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
log() { echo "prepare_bench: $*" >&2; }

# ---- corpus
mapfile -t FILES < <(find "$FORTUNES" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | sort)
[ ${#FILES[@]} -gt 0 ] || { log "no fortune files in $FORTUNES (apt-get install fortunes)"; exit 2; }
for f in "${FILES[@]}"; do cat "$f"; printf '%%\n'; done >"$W/once"
once=$(stat -c %s "$W/once")
copies=$(( (MB * 1000000 + once - 1) / once ))
for ((i = 0; i < copies; i++)); do cat "$W/once"; done >"$W/corpus"
bytes=$(stat -c %s "$W/corpus")
log "corpus: ${#FILES[@]} fortune files, $once bytes, x$copies = $bytes bytes"

# ---- tokenizers
TOKS=(); NAMES=()
t0=$(date +%s.%N)
"$AXONN" tokenizer train --vocab-size 2048 --out "$W/fortunes2048.json" "${FILES[@]}" >"$W/train.log"
t1=$(date +%s.%N)
TRAIN_S=$(echo "$t1 - $t0" | bc -l)
log "$(cat "$W/train.log")"
GPT2=$ROOT/tests/fixtures/tokenizer/gpt2.tiktoken
if [ -f "$ROOT/scripts/fetch_gpt2_vocab.sh" ] && bash "$ROOT/scripts/fetch_gpt2_vocab.sh" "$GPT2" >"$W/fetch.log" 2>&1; then
    TOKS+=("$GPT2"); NAMES+=("GPT-2 (gpt2.tiktoken, 50,257 ids)")
else
    GPT2_SKIP="GPT-2 skipped: scripts/fetch_gpt2_vocab.sh $([ -f "$ROOT/scripts/fetch_gpt2_vocab.sh" ] && echo "failed: $(tail -n 1 "$W/fetch.log")" || echo "not present")"
    log "$GPT2_SKIP"
fi
TOKS+=("$W/fortunes2048.json"); NAMES+=("fortunes BPE (2,048 ids, trained here)")

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
ROWS=()
GPT2_MBS=
INPUTS=("$W/corpus" "$W/once")
INPUT_NAMES=("${copies} copies" "1 copy")
for k in "${!TOKS[@]}"; do
  tok=${TOKS[$k]}
  for j in "${!INPUTS[@]}"; do
    input=${INPUTS[$j]}
    ibytes=$(stat -c %s "$input")
    : >"$W/own"; : >"$W/wall"
    for ((r = 0; r < REPS; r++)); do
        rm -rf "$W/out"
        t0=$(date +%s.%N)
        "$AXONN" prepare --tokenizer "$tok" --out "$W/out" --quiet "$input" >"$W/prep.log"
        t1=$(date +%s.%N)
        line=$(cat "$W/prep.log")
        log "${NAMES[$k]}, ${INPUT_NAMES[$j]}: $line"
        # "... 21.0 MB of text in 1.2 s (17.5 MB/s)"
        echo "$line" | sed -E 's/.*\(([0-9.]+) MB\/s\).*/\1/' >>"$W/own"
        echo "$ibytes / 1000000 / ($t1 - $t0)" | bc -l >>"$W/wall"
        tokens=$(sed -E 's/.*train [0-9]+ docs, ([0-9]+) tokens.*val [0-9]+ docs, ([0-9]+) tokens.*/\1 + \2/' <<<"$line" | bc)
        docs=$(sed -E 's/.*train ([0-9]+) docs.*val ([0-9]+) docs.*/\1 + \2/' <<<"$line" | bc)
    done
    own=$(median <"$W/own"); wall=$(median <"$W/wall")
    own_all=$(paste -sd' ' "$W/own"); wall_all=$(xargs printf '%.1f ' <"$W/wall")
    bpt=$(echo "$ibytes / $tokens" | bc -l)
    [ "$tok" = "$GPT2" ] && [ "$j" = 0 ] && GPT2_MBS=$own
    ROWS+=("$(printf '| %s | %s | %.1f | %s | %s | %.2f | **%.1f** (%s) | %.1f (%s) |' "${NAMES[$k]}" "${INPUT_NAMES[$j]}" \
        "$(echo "$ibytes / 1000000" | bc -l)" "$docs" "$tokens" "$bpt" "$own" "$own_all" "$wall" "${wall_all% }")")
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

verdict="no GPT-2 figure"
if [ -n "$GPT2_MBS" ]; then
    if (( $(echo "$GPT2_MBS >= 5" | bc -l) )); then verdict="met: $GPT2_MBS MB/s >= 5 MB/s with GPT-2"
    else verdict="NOT met: $GPT2_MBS MB/s < 5 MB/s with GPT-2"; fi
fi

report() {
    cat <<EOF
# \`axonn prepare\` throughput, one core

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $NCPU cores; $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) memory
- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- src 2>/dev/null || echo " (with uncommitted changes in src/)")
- binary: \`${AXONN#"$ROOT"/}\`, OMP_NUM_THREADS=1
- load average (1, 5, 15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER$(awk -v l="${LOAD_BEFORE%% *}" -v n="$NCPU" 'BEGIN { if (l >= n / 2) printf " (busy: other jobs were running, so single runs vary; the medians are the figures to use)" }')
- input: the ${#FILES[@]} fortune files of $FORTUNES (not \`*.dat\`/\`*.u8\`), $once bytes, concatenated $copies times into one fortune file of $bytes bytes
- the 2,048-id tokenizer: \`axonn tokenizer train --vocab-size 2048\` on one copy of the files, $(printf '%.1f' "$TRAIN_S") s
${GPT2_SKIP:+- $GPT2_SKIP
}
Median of $REPS runs (each run's figure in parentheses). "prepare" is the
command's own figure: document bytes (separators excluded) over the time from
the first document to the last shard written, tokenizer loaded. "wall" is the
input file's bytes over the whole command (process and MPI start-up, tokenizer
load, writing the shards and tokenizer.json). The encoder caches the ids of
each word it has seen, so the repeated copies mostly hit the cache; the
single copy (everything new to the cache once) is the lower figure to expect
of real text of this kind.

| tokenizer | input | MB | docs | tokens | bytes/token | prepare MB/s | wall MB/s |
|---|---|---|---|---|---|---|---|
$(printf '%s\n' "${ROWS[@]}")

Target >= 5 MB/s with GPT-2: $verdict.

Reproduce: \`bash bench/prepare_bench.sh --axonn ${AXONN#"$ROOT"/} --mb $MB --reps $REPS\`
EOF
}

report >"$W/report"
cat "$W/report"
if [ -n "$OUT" ]; then
    mkdir -p "$(dirname "$OUT")"
    cp "$W/report" "$OUT"
    log "wrote $OUT"
fi
