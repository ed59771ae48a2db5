#!/usr/bin/env bash
# cli_gemm_tune: `axonn bench gemm` on a tiny model prints the table (every
# GEMM of a step, each layout's time, the chosen one) and its --json;
# `--gemm-tune on` in bench and train writes the cache file and a second run
# times nothing new; a truncated cache gives one warning line and is rewritten;
# a bad --gemm-tune value is one line, exit 2.
. "$(dirname "$0")/cli_lib.sh"
TINY=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16 --seq 16 --batch 4 --threads 1)

if "$BIN" bench gemm "${TINY[@]}" >g.txt 2>g.err && grep -q "chosen" g.txt \
   && [ "$(grep -cE '^  (qkv|proj|fc|fcproj|lmhead) +(forward|dX|dW) ' g.txt)" = 15 ] \
   && grep -qE "^  lmhead +dW +128 x 32 x 64 +TN\+C" g.txt && grep -q "per step (calls x time, summed)" g.txt
then ok "bench gemm: table"; else bad "bench gemm table"; cat g.txt g.err; fi
if "$BIN" bench gemm "${TINY[@]}" --json >g.json 2>g.err && python3 - g.json <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
names = ["stored", "tA", "tB", "tAB", "swap"]
rows = g["gemms"]
assert len(rows) == 15 and g["threads_per_rank"] == 1 and g["dtype"] == "fp32", g
passes = {(r["layer"], r["pass"]): r for r in rows}
assert passes[("qkv", "forward")]["trans"] == "NT" and passes[("fc", "dX")]["trans"] == "NN"
assert passes[("fcproj", "dW")]["trans"] == "TN" and passes[("fcproj", "dW")]["beta"] == 1
assert (passes[("fc", "forward")]["m"], passes[("fc", "forward")]["n"], passes[("fc", "forward")]["k"]) == (64, 128, 32)
for r in rows:
    assert sorted(r["ms"]) == sorted(names) and all(v > 0 for v in r["ms"].values()), r
    assert r["chosen"] in names and r["ms"][r["chosen"]] <= r["ms"]["stored"], r
    assert r["per_step"] == (2 if r["layer"] != "lmhead" else 1)
s = g["step_ms"]
assert 0 < s["chosen"] <= s["stored"] and s["gain_percent"] >= 0
PY
then ok "bench gemm: --json"; else bad "bench gemm --json"; cat g.json g.err; fi

# tuning on: the cache is written; a second run finds every problem in it
if "$BIN" bench "${TINY[@]}" --iters 3 --gemm-tune on --gemm-tune-cache c/tune.json >t1.txt 2>t1.err \
   && grep -q "gemm-tune on" t1.txt && python3 -c "
import json; e = json.load(open('c/tune.json'))['entries']
have = {(x['m'], x['n'], x['k'], x['trans']) for x in e}
need = {(r['m'], r['n'], r['k'], r['trans']) for r in json.load(open('g.json'))['gemms']}
assert need <= have, need - have
assert all(x['threads'] == 1 and x['layout'] in ('stored', 'tA', 'tB', 'tAB', 'swap') for x in e), e"
then ok "bench --gemm-tune on: cache written"; else bad "bench --gemm-tune on"; cat t1.txt t1.err; fi
cp c/tune.json before.json
if AXONN_GEMM_TUNE_CACHE=c/tune.json "$BIN" train --synthetic "${TINY[@]}" --steps 2 --out o --gemm-tune on >t2.txt 2>t2.err \
   && cmp -s before.json c/tune.json && [ ! -s t2.err ]
then ok "train --gemm-tune on: every problem from the cache (\$AXONN_GEMM_TUNE_CACHE), file unchanged"
else bad "train from the cache"; cat t2.err; diff before.json c/tune.json | head; fi

# a truncated cache: one warning line, the run goes on, the file is rewritten whole
head -c 300 before.json >c/tune.json
if "$BIN" bench "${TINY[@]}" --iters 3 --gemm-tune on --gemm-tune-cache c/tune.json >t3.txt 2>t3.err \
   && [ "$(wc -l <t3.err)" = 1 ] && grep -q "warning: gemm-tune cache c/tune.json: line .*; ignored, tuning again" t3.err \
   && python3 -c "import json; assert len(json.load(open('c/tune.json'))['entries']) == len(json.load(open('before.json'))['entries'])"
then ok "truncated cache: one warning, retuned, rewritten"; else bad "truncated cache"; cat t3.err; fi

"$BIN" bench "${TINY[@]}" --gemm-tune maybe >e.out 2>e.err; rc=$?
if [ "$rc" = 2 ] && [ "$(wc -l <e.err)" = 1 ] && grep -q -- "--gemm-tune maybe: expected off or on" e.err
then ok "bad --gemm-tune: one line, exit 2"; else bad "bad --gemm-tune: exit $rc"; cat e.err; fi
finish cli_gemm_tune
