#!/usr/bin/env bash
# The goldfish-loss experiment (SPEC §7), one command:
#   bash experiments/goldfish/run.sh            # about 25 minutes on 2 cores
# 100 canary fortunes are repeated REPEATS times in a training stream made of a
# share BASE of the other fortunes. The same model is trained twice from the same seed, with the
# standard loss and with the goldfish loss (k = 4, h = 13); the memorization
# audit runs on the canaries at every checkpoint and the validation loss on
# held-out fortunes. Results: OUT/results.md and OUT/memorization.png, copied to
# experiments/goldfish/results/.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-experiments/goldfish/out}
REPEATS=${REPEATS:-50}
BASE=${BASE:-0.25}
STEPS=${STEPS:-1500}
EVERY=${EVERY:-250}
MODEL=(--n-layer 4 --n-head 4 --n-embd 256 --block-size 128 --vocab-size 2048)
TRAIN=(--steps "$STEPS" --batch 16 --lr 2e-3 --warmup 50 --seed 7 --save-every "$EVERY" --val-every "$EVERY" --log-every 100 --quiet)

bash scripts/build.sh
AX=build/axonn
if ! command -v gnuplot >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -qq gnuplot-nox >/dev/null
fi
rm -rf "$OUT"; mkdir -p "$OUT"
python3 experiments/goldfish/make_corpus.py "$OUT/data" --repeats "$REPEATS" --base-frac "$BASE"
"$AX" tokenizer train --vocab-size 2048 --out "$OUT/tokenizer.json" "$OUT/data/train.jsonl"
"$AX" prepare --quiet --tokenizer "$OUT/tokenizer.json" --val-frac 0 --out "$OUT/train" "$OUT/data/train.jsonl"
"$AX" prepare --quiet --tokenizer "$OUT/tokenizer.json" --val-frac 0 --out "$OUT/val" "$OUT/data/heldout.jsonl"

for mode in standard goldfish; do
  extra=(); [ "$mode" = goldfish ] && extra=(--goldfish-k 4 --goldfish-h 13)
  echo "== $mode"
  "$AX" train --data "$OUT/train/train_*.bin" --val-data "$OUT/val/train_*.bin" "${MODEL[@]}" "${TRAIN[@]}" \
      "${extra[@]}" --out "$OUT/$mode" | grep -E "summary|val loss" || true
  for ck in "$OUT/$mode"/ckpt-*; do
    "$AX" memorize --model "$ck/model.safetensors" --tokenizer "$OUT/tokenizer.json" \
        --docs "$OUT/data/canaries.jsonl" --suffix 50 --json > "$ck/memorize.json"
  done
  "$AX" eval --model "$OUT/$mode/model.safetensors" --data "$OUT/val/train_*.bin" --seq 128 --json > "$OUT/$mode/val.json"
done

python3 experiments/goldfish/report.py "$OUT" "$REPEATS" "$BASE"
gnuplot -e "out='$OUT/memorization.png'; dat='$OUT/memorization.dat'" experiments/goldfish/plot.gp
mkdir -p experiments/goldfish/results
cp "$OUT/results.md" "$OUT/memorization.png" experiments/goldfish/results/
cat "$OUT/results.md"
