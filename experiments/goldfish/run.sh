#!/usr/bin/env bash
# The goldfish-loss experiment (docs/algorithm.md §7), one command per corpus:
#   bash experiments/goldfish/run.sh                    # canary fortunes, about 25 minutes on 2 cores
#   CORPUS=invented bash experiments/goldfish/run.sh    # invented-word passages pasted at random offsets
# 100 canaries are repeated REPEATS times in a training stream made of a share
# BASE of the other fortunes (make_corpus.py says how each corpus is built). The
# same model is trained from the same seed once per mode of MODES: "standard"
# (plain loss) and "goldfish" (k = 4, h = 13); the memorization audit runs on the
# canaries at every checkpoint and the validation loss on held-out fortunes.
# AX=path/to/axonn with LABEL=-name runs another build (e.g. an older commit) as
# mode "goldfish-name" beside the others. Results: OUT/results.md,
# OUT/memorization.png and OUT/leak.json, copied to experiments/goldfish/results/CORPUS/.
set -euo pipefail
cd "$(dirname "$0")/../.."
CORPUS=${CORPUS:-fortunes}
OUT=${OUT:-experiments/goldfish/out/$CORPUS}
case "$CORPUS" in
  fortunes) REPEATS=${REPEATS:-50} ;;
  invented) REPEATS=${REPEATS:-80} ;;
  *) echo "run.sh: CORPUS=$CORPUS: expected fortunes or invented" >&2; exit 2 ;;
esac
BASE=${BASE:-0.25}
STEPS=${STEPS:-1500}
EVERY=${EVERY:-250}
MODES=${MODES:-standard goldfish}
LABEL=${LABEL:-}
MODEL=(--n-layer 4 --n-head 4 --n-embd 256 --block-size 128 --vocab-size 2048)
TRAIN=(--steps "$STEPS" --batch 16 --lr 2e-3 --warmup 50 --seed 7 --save-every "$EVERY" --val-every "$EVERY" --log-every 100 --quiet)

if [ -z "${AX:-}" ]; then bash scripts/build.sh; AX=build/axonn; fi
if ! command -v gnuplot >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -qq gnuplot-nox >/dev/null
fi
mkdir -p "$OUT"
if [ ! -f "$OUT/train/.done" ]; then     # the corpus is built once per OUT and shared by every mode
  rm -rf "$OUT/data" "$OUT/train" "$OUT/val"
  python3 experiments/goldfish/make_corpus.py "$OUT/data" --kind "$CORPUS" --repeats "$REPEATS" --base-frac "$BASE"
  "$AX" tokenizer train --vocab-size 2048 --out "$OUT/tokenizer.json" "$OUT/data/train.jsonl"
  "$AX" prepare --quiet --tokenizer "$OUT/tokenizer.json" --val-frac 0 --out "$OUT/val" "$OUT/data/heldout.jsonl"
  "$AX" prepare --quiet --tokenizer "$OUT/tokenizer.json" --val-frac 0 --out "$OUT/train" "$OUT/data/train.jsonl"
  touch "$OUT/train/.done"
fi

for mode in $MODES; do
  extra=(); [ "$mode" = goldfish ] && extra=(--goldfish-k 4 --goldfish-h 13)
  run="$mode"; [ "$mode" = goldfish ] && run="goldfish$LABEL"
  echo "== $CORPUS: $run"
  rm -rf "${OUT:?}/$run"
  "$AX" train --data "$OUT/train/train_*.bin" --val-data "$OUT/val/train_*.bin" "${MODEL[@]}" "${TRAIN[@]}" \
      "${extra[@]}" --out "$OUT/$run" | grep -E "summary|val loss" || true
  for ck in "$OUT/$run"/ckpt-*; do
    "$AX" memorize --model "$ck/model.safetensors" --tokenizer "$OUT/tokenizer.json" \
        --docs "$OUT/data/canaries.jsonl" --suffix 50 --json > "$ck/memorize.json"
  done
  "$AX" eval --model "$OUT/$run/model.safetensors" --data "$OUT/val/train_*.bin" --seq 128 --json > "$OUT/$run/val.json"
done

python3 experiments/goldfish/report.py "$OUT" "$CORPUS" "$REPEATS" "$BASE"
# how often the former window rule would have supervised canary tokens the hash drops
python3 experiments/goldfish/leak.py "$AX" "$OUT" > "$OUT/leak.json"
gnuplot -e "out='$OUT/memorization.png'; dat='$OUT/memorization.dat'; ncol=$(($(head -1 "$OUT/memorization.dat" | wc -w) - 2))" \
    experiments/goldfish/plot.gp
mkdir -p "experiments/goldfish/results/$CORPUS"
cp "$OUT/results.md" "$OUT/memorization.png" "$OUT/leak.json" "experiments/goldfish/results/$CORPUS/"
cat "$OUT/results.md"
