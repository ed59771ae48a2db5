#!/usr/bin/env bash
# cli_bench: `axonn bench` on 1 and 2 ranks (its --json complete and consistent),
# `axonn bench comm --out` on 2 ranks writing a machine description that
# `axonn plan` accepts, `axonn plan` (ranking, --json, rejected grids with
# reasons), `--grid auto` in train and bench, and bad input: one line, exit 2.
. "$(dirname "$0")/cli_lib.sh"
MODEL=(--n-layer 2 --n-head 4 --n-embd 32 --vocab-size 97 --block-size 16 --seq 16 --batch 4)
TINY=("${MODEL[@]}" --threads 1)

# every field present, positive where it must be, the split within the step,
# tokens/s = tokens per iteration / ms per iteration, MFU = model FLOP/s per
# rank over the peak given (--peak-tflops; none: null, the CPU has no datasheet row)
check_bench() {   # name file ranks [peak TFLOP/s]
  python3 - "$2" "$3" "${4:-0}" <<'PY'
import json, sys
b = json.load(open(sys.argv[1])); P = int(sys.argv[2]); peak = float(sys.argv[3]) * 1e12
need = ["ranks", "grid", "threads_per_rank", "model", "batch", "seq", "iters", "timed_iters", "ms_per_iter",
        "ms_median", "ms_min", "ms_max", "tokens_per_iter", "tokens_per_s", "model_flops_per_s", "model_flops_per_s_per_rank",
        "hardware_flops_per_s", "hardware_flops_per_s_per_rank", "gemm_ceiling", "model_percent_of_gemm_ceiling",
        "split_ms"]
miss = [k for k in need if k not in b]
assert not miss, "missing %s" % miss
s = b["split_ms"]
for k in ["compute", "gemm", "optimizer", "data", "comm_total", "comm"]: assert k in s, "split_ms." + k
for g in ["X", "Y", "Z", "data"]: assert g in s["comm"], "split_ms.comm." + g
assert b["ranks"] == P and b["iters"] == 10 and b["timed_iters"] == 8, "counts"
for k in ["ms_per_iter", "tokens_per_s", "model_flops_per_s", "hardware_flops_per_s", "model_percent_of_gemm_ceiling"]:
    assert b[k] > 0, k
assert b["gemm_ceiling"]["flops_per_s_per_rank"] > 0 and s["compute"] > 0 and s["optimizer"] > 0
assert all(v >= 0 for v in s["comm"].values()) and s["data"] >= 0
parts = s["compute"] + s["optimizer"] + s["data"] + sum(s["comm"].values())
assert parts <= b["ms_per_iter"] * 1.0001, "split %g > step %g" % (parts, b["ms_per_iter"])
assert abs(sum(s["comm"].values()) - s["comm_total"]) < 1e-3
assert b["tokens_per_iter"] == b["batch"] * b["seq"] == 64
assert abs(b["tokens_per_s"] - b["tokens_per_iter"] / (b["ms_per_iter"] / 1e3)) <= 1e-3 * b["tokens_per_s"]
assert abs(b["model_flops_per_s_per_rank"] * P - b["model_flops_per_s"]) <= 1e-5 * b["model_flops_per_s"]
assert b["ms_min"] <= b["ms_per_iter"] <= b["ms_max"] and b["ms_min"] <= b["ms_median"] <= b["ms_max"]
if P > 1: assert s["comm_total"] > 0, "no communication measured on %d ranks" % P
if peak: assert b["peak_flops_per_rank"] == peak and abs(b["mfu"] - b["model_flops_per_s_per_rank"] / peak) <= 1e-6 * b["mfu"]
else: assert b["peak_flops_per_rank"] is None and b["mfu"] is None, "MFU without a peak"
PY
}

if "$BIN" bench "${TINY[@]}" --backend cpu --json >b1.json 2>b1.err && check_bench 1 b1.json 1; then ok "bench 1 rank: --json fields"
else bad "bench 1 rank"; head -5 b1.err; fi
if "$BIN" bench "${TINY[@]}" >b1.txt 2>&1 && grep -q "ms/iteration" b1.txt && grep -q "GEMM ceiling" b1.txt \
   && grep -q "model FLOP/s" b1.txt; then ok "bench 1 rank: text"; else bad "bench text"; cat b1.txt; fi
if "${MPI[@]}" -np 2 "$BIN" bench "${TINY[@]}" --grid 1,1,2,1 --peak-tflops 0.05 --json >b2.json 2>b2.err &&
  check_bench 2 b2.json 2 0.05
then ok "bench 2 ranks (1,1,2,1): --json fields, MFU over --peak-tflops"; else bad "bench 2 ranks"; head -5 b2.err b2.json; fi
# train's log: MFU in each step line, the summary and metrics.jsonl, over the ranks' peak; none without one
if "${MPI[@]}" -np 2 "$BIN" train --synthetic "${TINY[@]}" --grid 2,1,1,1 --steps 3 --peak-tflops 0.05 --out mfu >mfu.out 2>&1 &&
  "$BIN" train --synthetic "${TINY[@]}" --steps 1 --out nomfu >nomfu.out 2>&1 &&
  grep -q '^MFU: model FLOP/s per rank over 0.05 TFLOP/s (--peak-tflops)$' mfu.out &&
  [ "$(grep -c '^step .* TFLOP/s | MFU [0-9.]*%$' mfu.out)" = 2 ] && grep -q '^summary: .*per rank), MFU [0-9.]*%, ' mfu.out &&
  grep -q '^MFU: not reported (no datasheet figure for the cpu backend: pass --peak-tflops)$' nomfu.out &&
  ! grep -q 'MFU [0-9]' nomfu.out && ! grep -q '"mfu"' nomfu/metrics.jsonl &&
  python3 -c "
import json
for r in map(json.loads, open('mfu/metrics.jsonl')):
    assert abs(r['mfu'] - r['model_tflops'] / 2 / 0.05) <= 1e-3 * r['mfu'] + 1e-4, r"
then ok "train: MFU over --peak-tflops on 2 ranks (log, summary, metrics); none without a peak"
else bad "train MFU"; grep -E 'MFU|^step|summary' mfu.out nomfu.out | head; fi

# bench comm on 2 ranks -> a machine description the planner reads
if "${MPI[@]}" -np 2 "$BIN" bench comm --backend cpu --out m.json --max-kib 64 --gemm-max 256 --min-time 0.005 >c.out 2>c.err \
   && python3 -c "
import json; m = json.load(open('m.json'))
assert m['ranks_per_node'] == 2 and m['gemm']['flops'] > 0 and m['memory_per_rank_bytes'] > 0
ops = {(c['op'], c['group']) for c in m['collectives']}
assert ops == {('allreduce', 2), ('allgather', 2), ('reduce_scatter', 2)}, ops
# the fit may be flat (beta 0) when other jobs share the cores (ctest -j2 in CI): times only, never
# negative, and a larger message is never charged less than a smaller one
assert all(c['alpha_s'] >= 0 and c['beta_s_per_byte'] >= 0 for c in m['collectives'])
# the measured points beside each fit: 4, 16 and 64 KiB, bytes with the ring factor (1 at 2 ranks: 2(p-1)/p, (p-1)/p = 1/2)
for c in m['collectives']:
    f = 1.0 if c['op'] == 'allreduce' else 0.5
    t = [p[1] for p in c['points']]
    assert [p[0] for p in c['points']] == [f * 4096 * 4**i for i in range(3)] and t[0] > 0, c
    assert all(a <= b for a, b in zip(t, t[1:])), c"
then ok "bench comm: machine description"; else bad "bench comm"; cat c.err; head -20 c.out; fi
# with a model: its GEMMs on every grid of 2 ranks at their shapes and layouts, its attention at T 16, head 8;
# the plan charges them as measured (the fp32 fit alone gives other GEMM seconds); the overlap at its sizes:
# the MLP's first FC forward, medians over the grids 1,1,1,2 1,1,2,1 2,1,1,1 1,2,1,1 of rows 32 64 32 64,
# F/Y 128 64 128 128, C/X 32 32 32 16 (48 x 128 x 32), and the gather of its 128 x 32 weight block
if "${MPI[@]}" -np 2 "$BIN" bench comm --out mj.json --max-kib 64 --gemm-max 256 --min-time 0.005 "${MODEL[@]}" \
     >cj.out 2>cj.err && "$BIN" plan --ranks 2 --machine mj.json "${MODEL[@]}" --json >pj.json 2>>cj.err \
   && "$BIN" plan --ranks 2 --machine m.json "${MODEL[@]}" --json >pg.json 2>>cj.err && python3 -c "
import json; m = json.load(open('mj.json')); sh = m['gemm']['shapes']
job = [s for s in sh if not s['m'] == s['n'] == s['k']]
assert {(s['ta'], s['tb']) for s in job} == {(0, 1), (0, 0), (1, 0)}, job
assert all(s['flops'] > 0 for s in sh) and all(s['dtype'] == 'fp32' for s in job), sh
assert [(a['T'], a['hd']) for a in m['attention_shapes']] == [(16, 8)], m['attention_shapes']
j = {tuple(g['grid']): g['gemm_ms'] for g in json.load(open('pj.json'))['ranked']}
g = {tuple(g['grid']): g['gemm_ms'] for g in json.load(open('pg.json'))['ranked']}
assert j.keys() == g.keys() and all(j[k] != g[k] for k in j), (j, g)
assert -1 <= m['overlap_efficiency'] <= 1, m['overlap_efficiency']" \
   && grep -q "^overlap: gemm 48 x 128 x 32 .*all-gather of 16384 bytes" cj.out
then ok "bench comm with a model: its kernels at its shapes, charged by plan"; else bad "bench comm with a model"; cat cj.err; tail -3 cj.out; fi
if "$BIN" plan --ranks 4 --machine m.json "${MODEL[@]}" --zero 0 --json --top 20 >p.json 2>p.err && python3 -c "
import json; p = json.load(open('p.json'))
r = p['ranked']; t = [g['step_ms'] for g in r]
# every C with T 16 a multiple of 2C: the 10 grids of 4 ranks at C 1, 4 of 2 at C 2, 1 at C 4
assert p['ranks'] == 4 and p['grids'] == 15 and len(r) == p['runnable'] > 0 and t == sorted(t)
assert all(len(g['grid']) == 4 and g['grid'][0]*g['grid'][1]*g['grid'][2]*g['grid'][3]*g['cp'] == 4 for g in r)
assert all(g['memory_bytes'] > 0 and g['compute_ms'] > 0 for g in r) and p['min_ranks'] == 1
rej = {(*g['grid'], g['cp']): g['reason'] for g in p['rejected']}
assert 'micro-batch of 4 sequences does not divide over D*Z = 8' not in rej.values()
assert len(rej) + len(r) == 15 and sorted(g['cp'] for g in r + p['rejected']) == [1] * 10 + [2] * 4 + [4]"
then ok "plan --machine (bench comm's file) --json"; else bad "plan json"; cat p.err; head -c 600 p.json; fi
# ranks outnumbering the cores, bound round robin (Open MPI's --bind-to core): bench comm reads the bindings,
# records the core map and measures the strided groups of 2 (stride = the cores) as one core's; the plan
# then places a grid's Z group of stride 2 on one core and its Y group of stride 1 across both (2 cores)
NC=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc); MPIB=()   # nproc heeds OMP_NUM_THREADS
for a in "${MPI[@]}"; do [ "$a" = --bind-to ] || [ "$a" = none ] || MPIB+=("$a"); done
MPIB+=(--bind-to core:overload-allowed)
if [ "$NC" != 2 ] || ! "${MPI[0]}" --version 2>/dev/null | grep -qE "Open MPI|OpenRTE"; then
  ok "bench comm, 4 ranks bound to 2 cores: not run ($NC cores, or not Open MPI)"
elif "${MPIB[@]}" -np 4 "$BIN" bench comm --out mc.json --max-kib 16 --gemm-max 128 \
       --min-time 0.005 >cc.out 2>cc.err \
   && "$BIN" plan --ranks 4 --machine mc.json "${MODEL[@]}" --cp 1 --zero 0 --json --top 10 >pc.json 2>>cc.err && python3 -c "
import json; m = json.load(open('mc.json'))
assert m['cores_per_node'] == 2 and m['core_map'] == 'round_robin', (m.get('cores_per_node'), m.get('core_map'))
pl = {(c['group'], c['placement']) for c in m['collectives']}
assert {(2, 'core'), (2, 'intra'), (4, 'intra')} == pl, pl
g = {tuple(r['grid']): r['placement'] for r in json.load(open('pc.json'))['ranked']}
assert g[(1, 1, 2, 2)]['Z'] == 'core' and g[(1, 1, 2, 2)]['Y'] == 'intra' and g[(1, 1, 1, 4)]['Z'] == 'intra', g" \
   && grep -q "allreduce .*group   2 core" cc.out
then ok "bench comm, 4 ranks bound to 2 cores: groups on one core measured and placed"
else bad "bench comm, ranks bound to cores"; cat cc.err; grep -E "core|intra" cc.out | head -5; fi
if "$BIN" plan --ranks 8 --machine perlmutter "${MODEL[@]}" >p.txt 2>&1 && grep -q "^   1 " p.txt \
   && grep -q "n_head 4 is not divisible by G_y = 8" p.txt && grep -q "smallest rank count" p.txt
then ok "plan text: ranking and reasons"; else bad "plan text"; cat p.txt; fi

# the context split C (docs/planner.md): a Llama-3.1-8B shape at T = 131,072 on 64 H100s picks C > 1,
# named beside the grid in text and JSON; pinned to C = 1 its first choice is slower
L8=(--ranks 64 --machine h100x8 --preset llama-3.1-8b --block-size 131072 --seq 131072 --batch 8 --recompute block
    --dtype bf16)
if "$BIN" plan "${L8[@]}" --json >pc8.json 2>pc8.err && "$BIN" plan "${L8[@]}" --cp 1 --json >pc1.json 2>>pc8.err \
   && "$BIN" plan "${L8[@]}" --top 1 >pc8.txt 2>>pc8.err && python3 -c "
import json; p = json.load(open('pc8.json')); q = json.load(open('pc1.json')); b = p['ranked'][0]
assert p['cp'] is None and q['cp'] == 1 and b['cp'] > 1 and 'C' in b['comm_ms'], (p['cp'], b['cp'])
assert all(g['cp'] == 1 for g in q['ranked'] + q['rejected']) and q['ranked'][0]['step_ms'] > b['step_ms']
assert {g['cp'] for g in p['ranked'] + p['rejected']} == {1, 2, 4, 8, 16, 32, 64}
open('best.txt', 'w').write('%d,%d,%d,%d cp %d' % (*b['grid'], b['cp']))" && grep -q "^   1 $(cat best.txt) " pc8.txt
then ok "plan: context split C enumerated, named in text and JSON"; else bad "plan with C"; cat pc8.err; head -5 pc8.txt; fi

# --top K --run: the top grids timed in the same job, measured beside predicted
if "${MPI[@]}" -np 2 "$BIN" plan --ranks 2 "${TINY[@]}" --top 2 --run --iters 3 --json >pr.json 2>pr.err && python3 -c "
import json; p = json.load(open('pr.json')); r = p['ranked']
assert len(r) == 2 and all(g['measured_step_ms'] > 0 and g['step_ms'] > 0 for g in r), r"
then ok "plan --top 2 --run: measured beside predicted"; else bad "plan --run"; cat pr.err; head -c 600 pr.json; fi
# --run times a grid at its context split (C = 2 here), as planned
if "${MPI[@]}" -np 2 "$BIN" plan --ranks 2 "${TINY[@]}" --cp 2 --top 1 --run --iters 3 --json >pr2.json 2>pr2.err && python3 -c "
import json; r = json.load(open('pr2.json'))['ranked']
assert len(r) == 1 and r[0]['cp'] == 2 and r[0]['measured_step_ms'] > 0, r"
then ok "plan --cp 2 --run: the grid timed at C = 2"; else bad "plan --cp 2 --run"; cat pr2.err; head -c 600 pr2.json; fi

# --grid auto: the planner's choice, said in one line
if "${MPI[@]}" -np 2 "$BIN" train --synthetic "${TINY[@]}" --steps 2 --grid auto --machine m.json --quiet --out o >t.out 2>&1 \
   && grep -q "^grid auto: D=. X=. Y=. Z=. C=., the planner's first" t.out && grep -q "model written" t.out
then ok "train --grid auto"; else bad "train --grid auto"; cat t.out; fi
if "${MPI[@]}" -np 2 "$BIN" bench "${TINY[@]}" --iters 3 --grid auto >ba.out 2>&1 && grep -q "^grid auto:" ba.out \
   && grep -q "ms/iteration" ba.out; then ok "bench --grid auto (built-in estimate)"; else bad "bench --grid auto"; cat ba.out; fi

# bad input: one line on stderr, exit 2
printf '{"ranks_per_node": 2, "memory_per_rank_bytes": 1e9, "gemm": {"flops": 1e9}, "attention_flops": 1e9, "collectives": []}\n' >missing.json
expect2() {   # name pattern args...
  local name=$1 pat=$2; shift 2
  "$BIN" "$@" >e.out 2>e.err; local rc=$?
  if [ "$rc" = 2 ] && [ "$(wc -l <e.err)" = 1 ] && grep -qE -- "$pat" e.err; then ok "$name"
  else bad "$name: exit $rc"; cat e.err; fi
}
expect2 bench_unknown_flag "unknown option '--bogus'" bench --bogus
expect2 bench_bad_iters "--iters 2: expected an integer in \[3" bench --iters 2
expect2 bench_iters_text "--iters 'ten': expected an integer" bench --iters ten
expect2 bench_comm_flag "unknown option '--iters'" bench comm --iters 3
expect2 bench_comm_model "--seq 99: expected 1..16" bench comm --out x.json "${MODEL[@]}" --seq 99
expect2 plan_no_ranks "--ranks: required" plan "${MODEL[@]}"
expect2 plan_bad_preset "--machine 'atlantis': no such file, and not a preset" plan --ranks 4 --machine atlantis
expect2 plan_missing_field "missing.json: missing field \"memory_bandwidth\"" plan --ranks 4 --machine missing.json
expect2 plan_fits_nothing "--ranks 2: no grid of 2 ranks runs this model.*needs .* GiB per rank" \
  plan --ranks 2 --machine cpu --preset axonn-640b
expect2 plan_model_preset "--preset 'gpt9'" plan --ranks 2 --preset gpt9
expect2 plan_cp_seq "^axonn: error: --cp 3: the sequence length 16 must be a multiple of 2C = 6" \
  plan --ranks 6 "${MODEL[@]}" --cp 3
expect2 plan_cp_ranks "--cp 4: expected a divisor of --ranks 6" plan --ranks 6 "${MODEL[@]}" --cp 4
expect2 plan_run_ranks "--run: 1 ranks, expected --ranks 4 \(run under mpirun -np 4\)" plan --ranks 4 "${MODEL[@]}" --run
expect2 grid_auto_none "--grid auto: no grid of 1 ranks" bench --preset axonn-80b --grid auto --machine cpu
finish cli_bench
