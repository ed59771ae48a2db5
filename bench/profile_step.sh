#!/usr/bin/env bash
# Where a training step's CPU time goes, kernel by kernel, beside what axonn
# plan charges for it. For each grid: `perf record -a` over `axonn bench` of
# --iters steps and again over 3 (the start-up, taken away), samples sorted
# into GEMM (OpenBLAS, oneDNN and the attention's own GEMMs), attention,
# LayerNorm, activation, other elementwise (the backend's pointwise kernels,
# memset, memcpy), loss, optimizer (AdamW, the norm), other (MPI, the kernel:
# copies, task switches) and idle, as CPU ms a step per core (the ranks of a
# core added: where ranks outnumber cores the core's busy time is the step).
# The prediction comes from `axonn bench comm` with the model's options, run
# first on the same ranks; its "elementwise" holds LayerNorm, the activation,
# the loss and the other elementwise work.
#   bash bench/profile_step.sh --ranks 4 [--iters 400] [--out DIR] [--axonn build/axonn] MODEL OPTIONS -- GRID...
set -eu
P=4; ITERS=400; AX=build/axonn; OUT=/tmp/axonn-profile; MODEL=()
while [ $# -gt 0 ]; do case $1 in
  --ranks) P=$2; shift 2;; --iters) ITERS=$2; shift 2;; --axonn) AX=$2; shift 2;; --out) OUT=$2; shift 2;;
  --) shift; break;; *) MODEL+=("$1"); shift;; esac; done
[ $# -gt 0 ] || { echo "usage: $0 --ranks P [--iters N] [--out DIR] [--axonn BIN] MODEL OPTIONS -- GRID..." >&2; exit 2; }
command -v perf >/dev/null || { echo "profile_step.sh: perf not found (apt-get install linux-perf)" >&2; exit 2; }
mkdir -p "$OUT"
NC=$(env -u OMP_NUM_THREADS nproc); BIND=none     # bound as bench/plan_accuracy.sh binds
if [ "$P" -le "$NC" ]; then BIND=core; elif [ $((P % NC)) = 0 ]; then BIND=core:overload-allowed; fi
MPI=(mpirun --allow-run-as-root --oversubscribe --bind-to "$BIND" -np "$P")
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
"${MPI[@]}" "$AX" bench comm --out "$OUT/machine.json" --max-kib 16384 "${MODEL[@]}" > "$OUT/bench_comm.txt" < /dev/null
"$AX" plan --ranks "$P" --machine "$OUT/machine.json" "${MODEL[@]}" --json --top 1000 > "$OUT/plan.json"
for g in "$@"; do
  for n in "$ITERS" 3; do
    perf record -q -a -F 1999 -o "$OUT/$g.$n.data" -- "${MPI[@]}" "$AX" bench "${MODEL[@]}" --grid "$g" --iters "$n" \
      --json > "$OUT/$g.$n.json" < /dev/null 2> "$OUT/$g.$n.perf.txt"
    perf report -i "$OUT/$g.$n.data" --sort sym --stdio -F sample,sym > "$OUT/$g.$n.report.txt" 2> /dev/null
  done
done
python3 - "$OUT" "$ITERS" "$NC" "$@" <<'PY'
import json, re, sys
out, iters, cores, grids = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
KINDS = ['gemm', 'attention', 'layernorm', 'activation', 'elementwise', 'loss', 'optimizer', 'other', 'idle']
def kind(sym):
    s = sym.lower()
    if 'gemm' in s or 'dnnl' in s: return 'gemm'
    for k, keys in [('attention', ['attention']), ('layernorm', ['layernorm', 'rmsnorm']), ('activation', ['gelu', 'swiglu']),
                    ('optimizer', ['adamw', 'sumsq']), ('loss', ['xent'])]:
        if any(x in s for x in keys): return k
    if s.startswith('ax_cpu') or any(x in s for x in ['memset', 'memcpy', 'memmove']): return 'elementwise'
    return 'idle' if 'halt' in s or 'idle' in s else 'other'
def samples(g, n):
    c = dict.fromkeys(KINDS, 0)
    for line in open('%s/%s.%d.report.txt' % (out, g, n)):
        m = re.match(r'\s*(\d+)\s+\[.\]\s+(\S+)', line)
        if m: c[kind(m.group(2))] += int(m.group(1))
    return c
plan = {','.join(map(str, c['grid'])): c for c in json.load(open(out + '/plan.json'))['ranked']}
print('CPU ms a step per core (both ranks of a core added), perf at 1999 Hz, %d steps less 3; predicted by axonn plan\n' % iters)
print('| grid | step ms | ' + ' | '.join(KINDS) + ' |\n|---|---|' + '---|' * len(KINDS))
for g in grids:
    a, s = samples(g, iters), samples(g, 3)
    ms = {k: (a[k] - s[k]) / 1999.0 * 1e3 / (iters - 3) / cores for k in KINDS}
    b = json.load(open('%s/%s.%d.json' % (out, g, iters)))
    print('| %s measured | %.2f | %s |' % (g, b['ms_median'], ' | '.join('%.2f' % ms[k] for k in KINDS)))
    if g in plan:
        p = plan[g]
        print('| %s predicted | %.2f | %.2f | %.2f | (in elementwise) | | %.2f | | %.2f | %.2f exposed communication | |' % (
            g, p['step_ms'], p['gemm_ms'], p['attention_ms'], p['elementwise_ms'], p['optimizer_ms'], p['comm_exposed_ms']))
PY
