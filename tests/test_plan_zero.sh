#!/usr/bin/env bash
# plan_zero: ZeRO-1 in `axonn plan` and `--grid auto` (docs/planner.md, "ZeRO-1 in the model").
# A model that X and Y cannot split (n_head 1, n_embd 35), its token table most of it, on a
# machine with just under the memory its smallest --zero 0 grid of 2 ranks needs: plan lists
# each grid under both settings with the setting in the JSON, only --zero 1 grids fit, --zero 0
# fits none; bench --grid auto takes the planner's first (D = 2, --zero 1) and says so; a
# --zero given pins it (train: 1, taken; bench: 0, nothing fits).
. "$(dirname "$0")/cli_lib.sh"
MODEL=(--n-layer 1 --n-head 1 --n-embd 35 --vocab-size 16384 --block-size 16 --seq 16 --batch 4 --cp 1)
machine() {   # file memory_per_rank_bytes
  printf '{"name": "tight", "source": "test", "ranks_per_node": 2, "memory_per_rank_bytes": %s,
  "gemm": {"flops": 1e10}, "attention_flops": 1e10, "memory_bandwidth": 1e10,
  "collectives": [{"op": "allreduce", "group": 0, "placement": "intra", "alpha_s": 1e-5, "beta_s_per_byte": 1e-9},
                  {"op": "allgather", "group": 0, "placement": "intra", "alpha_s": 1e-5, "beta_s_per_byte": 1e-9},
                  {"op": "reduce_scatter", "group": 0, "placement": "intra", "alpha_s": 1e-5, "beta_s_per_byte": 1e-9}]}\n' "$2" >"$1"
}
machine roomy.json 1e12
if "$BIN" plan --ranks 2 --machine roomy.json "${MODEL[@]}" --zero 0 --json >p0.json 2>p.err \
   && mem=$(python3 -c "
import json; p = json.load(open('p0.json'))
assert p['zero'] == 0 and all(g['zero'] == 0 for g in p['ranked']), p['zero']
print(0.99 * min(g['memory_bytes'] for g in p['ranked']) / 0.9)") && machine tight.json "$mem" \
   && "$BIN" plan --ranks 2 --machine tight.json "${MODEL[@]}" --json >p.json 2>>p.err && python3 -c "
import json; p = json.load(open('p.json')); r = p['ranked']
assert p['zero'] is None and r and all(g['zero'] == 1 for g in r), [(g['grid'], g['zero']) for g in r]
z0 = [g for g in json.load(open('p0.json'))['ranked'] if g['grid'] == [2, 1, 1, 1]][0]
assert r[0]['grid'] == [2, 1, 1, 1] and r[0]['optimizer_state_bytes'] * 2 == z0['optimizer_state_bytes'], r[0]
assert r[0]['comm_bytes'] == z0['comm_bytes'] and r[0]['param_bytes'] == z0['param_bytes'], (r[0], z0)
rej = [(tuple(g['grid']), g['zero']) for g in p['rejected']]
assert sorted(rej, key=str) == sorted([((2, 1, 1, 1), 0), ((1, 1, 1, 2), 0), ((1, 1, 1, 2), 1), ((1, 2, 1, 1), None), ((1, 1, 2, 1), None)], key=str), rej"
then ok "plan: both settings listed and ranked together, only --zero 1 fits the tight machine"
else bad "plan with both settings"; cat p.err; head -c 600 p.json; fi
if "$BIN" plan --ranks 2 --machine tight.json "${MODEL[@]}" --zero 0 >e.out 2>e.err; [ $? = 2 ] \
   && grep -q "no grid of 2 ranks runs this model on tight" e.err
then ok "plan --zero 0: nothing fits the tight machine"; else bad "plan --zero 0 on the tight machine"; cat e.err; fi
if "$BIN" plan --ranks 2 --machine tight.json "${MODEL[@]}" >p.txt 2>&1 && grep -q "zero 0 and 1" p.txt \
   && grep -qE "^   1 2,1,1,1 cp 1 +1 " p.txt && grep -q "^  2,1,1,1 cp 1 zero 0: needs" p.txt
then ok "plan text: the setting beside each grid"; else bad "plan text"; cat p.txt; fi
if run bench_auto 2 bench "${MODEL[@]}" --threads 1 --iters 3 --grid auto --machine tight.json \
   && grep -q "^grid auto: D=2 X=1 Y=1 Z=1 C=1, the planner's first of .* on tight, --zero 1 (chosen of 0 and 1)" \
        "$W/bench_auto.log"
then ok "bench --grid auto: D = 2 under --zero 1, chosen"; else bad "bench --grid auto"; cat "$W/bench_auto.log"; fi
if run train_auto 2 train --synthetic "${MODEL[@]}" --threads 1 --steps 1 --grid auto --machine tight.json --zero 1 \
       --quiet --out o && grep -q "^grid auto: D=2 X=1 Y=1 Z=1 C=1, .* --zero 1 (given)" "$W/train_auto.log"
then ok "train --grid auto --zero 1: the setting given"; else bad "train --grid auto --zero 1"; cat "$W/train_auto.log"; fi
if "$BIN" bench "${MODEL[@]}" --grid auto --machine tight.json --zero 0 >e.out 2>e.err; [ $? = 2 ] \
   && grep -q "^axonn: error: --grid auto: no grid of 1 ranks" e.err
then ok "bench --grid auto --zero 0: nothing fits"; else bad "bench --grid auto --zero 0"; cat e.err; fi
finish plan_zero
