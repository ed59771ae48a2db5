#!/usr/bin/env bash
# cli_instruct: fine-tuning on instruction data (JSON Lines) with a Llama model.
#  - a new Llama model (GQA, untied) is written, then fine-tuned from its
#    directory (--init DIR) on tests/fixtures/instruct/sft.jsonl with the
#    Llama-3-style tokenizer; every step's supervised-token count equals the
#    sum of the weights tokenizers' Python reference gives (ref.json: loss on
#    completions and assistant replies only), on 1 rank and on 2 ranks (the
#    losses equal to 1e-5);
#  - with the goldfish loss (k = 2, h = 3) on top, the count equals a
#    stdlib-Python count of the reference weights times the goldfish mask of
#    each example's own tokens (tests/ref/goldfish_hash.py);
#  - the fine-tuned directory is a model `axonn sample` and `axonn eval` take;
#  - bad input: no tokenizer, a malformed line: one line, exit 2.
. "$(dirname "$0")/cli_lib.sh"
REF=$(cd "$(dirname "$0")" && pwd)/ref
SFT=$FIX/instruct/sft.jsonl TOK=$FIX/llama3/tokenizer.json


# expected supervised tokens per step: every example once per step (batch 11, no shuffle)
expect=$(python3 - "$FIX/instruct/ref.json" "$REF" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from goldfish_hash import mask_of
r = json.load(open(sys.argv[1]))
ex = [s for s in r["sets"] if s["tokenizer"].startswith("llama3")][0]["examples"]
plain = sum(sum(e["weights"]) for e in ex)
gold = sum(sum(w * m for w, m in zip(e["weights"], mask_of(e["tokens"], 2, 3))) for e in ex)
print(int(plain), int(gold))
PY
)
read -r want want_gf <<<"$expect"

FT=(--tokenizer "$TOK" --data "$SFT" --seq 64 --batch 11 --steps 2 --shuffle=false --threads 1 --quiet --lr 1e-3)
steps_of() { python3 -c 'import json,sys; print(" ".join(str(int(json.loads(l)["supervised_tokens"])) for l in open(sys.argv[1]) if "supervised_tokens" in l))' "$1"; }

if run new 1 train --arch llama --n-layer 2 --n-head 4 --n-kv-head 2 --n-embd 32 --n-inner 48 --untied \
       --vocab-size 2059 --block-size 64 --synthetic --steps 1 --quiet --out "$W/m0"; then
  if run ft1 1 train --init "$W/m0" "${FT[@]}" --out "$W/ft1"; then
    got=$(steps_of "$W/ft1/metrics.jsonl")
    [ "$got" = "$want $want" ] && ok "1 rank: supervised tokens per step $got (Python reference: $want)" \
      || bad "1 rank: supervised tokens per step '$got', expected $want $want"
  fi
  if run ft2 2 train --init "$W/m0" "${FT[@]}" --grid 1,1,2,1 --out "$W/ft2"; then
    got=$(steps_of "$W/ft2/metrics.jsonl")
    [ "$got" = "$want $want" ] && ok "grid 1,1,2,1: supervised tokens $got" || bad "grid 1,1,2,1: supervised tokens '$got'"
    if python3 - "$W/ft1/metrics.jsonl" "$W/ft2/metrics.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p) if "supervised_tokens" in l] for p in sys.argv[1:])
sys.exit(0 if len(a) == len(b) == 2 and all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)) else 1)
PY
    then ok "grid 1,1,2,1: losses equal the 1-rank run's to 1e-5"; else bad "grid 1,1,2,1: losses differ from 1 rank"; fi
  fi
  if run gf 1 train --init "$W/m0" "${FT[@]}" --goldfish-k 2 --goldfish-h 3 --out "$W/gf"; then
    got=$(steps_of "$W/gf/metrics.jsonl")
    [ "$got" = "$want_gf $want_gf" ] && ok "goldfish k=2 on instruction weights: supervised $got (Python: $want_gf of $want)" \
      || bad "goldfish on instruction weights: supervised '$got', expected $want_gf $want_gf"
  fi
  if [ -f "$W/ft1/model.safetensors" ] && run sample 1 sample --model "$W/ft1" --prompt-tokens 1,2,3 --max-new 4 --temperature 0 &&
     grep -qE '^1,2,3(,[0-9]+){4}$' "$W/sample.log"; then ok "the fine-tuned directory samples: $(tail -n 1 "$W/sample.log")"
  else bad "sample of the fine-tuned directory"; fi
  # bad input
  "$BIN" train --init "$W/m0" --data "$SFT" --seq 64 --batch 11 --steps 1 --quiet --out "$W/bad1" >"$W/bad1.log" 2>&1; rc=$?
  if [ $rc = 2 ] && [ "$(wc -l <"$W/bad1.log")" = 1 ] && grep -q "needs a tokenizer" "$W/bad1.log"; then ok "no tokenizer: $(cat "$W/bad1.log")"
  else bad "no tokenizer: exit $rc: $(head -n 3 "$W/bad1.log")"; fi
  { head -n 2 "$SFT"; echo '{"prompt": "x", "completion": '; } >"$W/broken.jsonl"
  "$BIN" train --init "$W/m0" --tokenizer "$TOK" --data "$W/broken.jsonl" --seq 64 --batch 2 --steps 1 --quiet --out "$W/bad2" >"$W/bad2.log" 2>&1; rc=$?
  if [ $rc = 2 ] && [ "$(wc -l <"$W/bad2.log")" = 1 ] && grep -q "broken.jsonl.*3" "$W/bad2.log" && [ ! -e "$W/bad2/model.safetensors" ]; then
    ok "malformed line 3: $(cat "$W/bad2.log")"
  else bad "malformed line: exit $rc: $(head -n 3 "$W/bad2.log")"; fi
fi
finish cli_instruct
