#!/usr/bin/env bash
# cli_memorize_ft: the memorization audit on a fine-tuning run (README's
# fine-tuning example, small).
#  - a tiny Llama in Hugging Face form (GQA, untied; tokenizer.json beside it)
#    is fine-tuned from its directory (--init) on the instruction examples of
#    tests/fixtures/instruct/sft.jsonl for 150 steps, once plainly and once
#    with the goldfish loss (k = 2, h = 3), each exported as shards
#    (--max-shard-size 20KB: model.safetensors.index.json) with the
#    tokenizer.json of --init, which memorize finds in the directory;
#  - `axonn memorize --instruct` audits what training supervised: per example
#    the prompt is everything before its last supervised run (the completion,
#    or the final assistant reply) and the reference that run with its end
#    token (at most --suffix 50); prompt and reference lengths equal those
#    computed in Python from the weights of tokenizers' reference (ref.json),
#    and the example without a supervised token is skipped;
#  - the plain run reproduces most completions exactly (measured 9 of 10),
#    the goldfish run fewer (measured 0) and with a lower token match: the
#    goldfish effect on completions. Deterministic (seeded, one thread); the
#    margins are wide, the check is only "fewer";
#  - the audit on grid 1,1,4,1 (4 query / 2 key-value heads: each key/value
#    head replicated on two Y shards) gives the 1-rank per-example results;
#  - --instruct with --prefix: one line, exit 2.
. "$(dirname "$0")/cli_lib.sh"
SFT=$FIX/instruct/sft.jsonl TOK=$FIX/llama3/tokenizer.json

# the JSON object of a memorize --json log (its last line)
field() { tail -n 1 "$1" | python3 -c "import json,sys; j=json.load(sys.stdin); print($2)"; }

if run new 1 train --arch llama --n-layer 2 --n-head 4 --n-kv-head 2 --n-embd 32 --n-inner 48 --untied \
       --vocab-size 2059 --block-size 64 --synthetic --steps 1 --quiet --out "$W/m0"; then
  cp "$TOK" "$W/m0/tokenizer.json"
  FT=(--init "$W/m0" --data "$SFT" --seq 64 --batch 11 --steps 150 --shuffle=false --threads 1 --quiet --lr 3e-3
      --warmup 5 --max-shard-size 20KB)
  run plain 1 train "${FT[@]}" --out "$W/plain" && run gold 1 train "${FT[@]}" --goldfish-k 2 --goldfish-h 3 --out "$W/gold"
  [ -f "$W/gold/model.safetensors.index.json" ] && [ ! -e "$W/gold/model.safetensors" ] \
    && ok "fine-tuned models exported as $(ls "$W/gold" | grep -c 'model-.*-of-') shards and an index" \
    || bad "no sharded export in $W/gold"
  M=(memorize --docs "$SFT" --instruct --json)
  if run mem_plain 1 "${M[@]}" --model "$W/plain" && run mem_gold 1 "${M[@]}" --model "$W/gold"; then
    # prompt and reference of each example from the Python reference's weights
    if python3 - "$FIX/instruct/ref.json" "$W/mem_plain.log" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
T = r["T"]
ex = [s for s in r["sets"] if s["tokenizer"].startswith("llama3")][0]["examples"]
got = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])["per_doc"]
want = []
for e in ex:
    sup = [0] + [int(w) for w in e["weights"]]     # sup[k]: token k is a supervised target
    k = [i for i, s in enumerate(sup) if s]
    if not k:
        want.append((True, 0, 0)); continue
    end = k[-1] + 1; b = end - 1
    while b > 1 and sup[b - 1]: b -= 1
    ref = min(end - b, 50)
    want.append((False, min(b, T - ref), ref))
have = [(d["skipped"], d["prompt_tokens"], d["ref_tokens"]) for d in got]
print("want", want); print("have", have)
sys.exit(0 if want == have else 1)
PY
    then ok "prompts and references are the examples' prompts and last completions ($(field "$W/mem_plain.log" 'j["evaluated"]') of $(field "$W/mem_plain.log" 'j["docs"]') evaluated)"
    else bad "prompt/reference lengths differ from the Python reference"; fi
    pe=$(field "$W/mem_plain.log" 'j["exact"]') ge=$(field "$W/mem_gold.log" 'j["exact"]')
    pm=$(field "$W/mem_plain.log" 'j["match"]') gm=$(field "$W/mem_gold.log" 'j["match"]')
    if [ "$ge" -lt "$pe" ] && python3 -c "import sys; sys.exit(0 if $gm < $pm else 1)"; then
      ok "goldfish k=2 memorizes fewer completions: exact $ge vs $pe, token match $gm vs $pm"
    else bad "goldfish does not memorize fewer: exact $ge vs $pe, match $gm vs $pm"; fi
    if run mem_y4 4 "${M[@]}" --model "$W/plain" --grid 1,1,4,1; then
      a=$(field "$W/mem_plain.log" 'j["per_doc"]') b=$(field "$W/mem_y4.log" 'j["per_doc"]')
      [ "$a" = "$b" ] && ok "grid 1,1,4,1 (key/value heads replicated): the 1-rank audit" || bad "grid 1,1,4,1 audit differs: $b"
    fi
  fi
  "$BIN" memorize --model "$W/plain" --docs "$SFT" --instruct --prefix 3 >"$W/bad.log" 2>&1; rc=$?
  if [ $rc = 2 ] && [ "$(wc -l <"$W/bad.log")" = 1 ] && grep -q "prefix" "$W/bad.log"; then ok "--instruct --prefix: $(cat "$W/bad.log")"
  else bad "--instruct --prefix: exit $rc: $(head -n 3 "$W/bad.log")"; fi
fi
finish cli_memorize_ft
