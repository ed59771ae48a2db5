"""Predicted (axonn plan) against measured (axonn bench) step times of every
grid in a plan_accuracy.sh result directory: per-grid table, step-time MAPE,
Spearman rank correlation, and the measured gap of the planner's first choice
to the measured best. A directory of rounds (DIR/round1, round2, ...: each its
own calibration, plans and benches) is scored per round (prediction and
measurement of the same round) and on the per-grid medians over rounds, with
the measurements' round-to-round spread: the MAPE that even a predictor of
the median step would score against one round (the noise floor). A bench's
step is its median over the timed iterations (its mean where the bench
predates the median: results before 2026-12-06's third session). Writes
DIR/points.tsv (model, grid, predicted and measured ms; medians over rounds)
for bench/plan_accuracy_plot.sh unless --no-points. --variant V scores the
plans plan_K_V.json instead of plan_K.json (plan_accuracy.sh writes "generic":
the machine file without the model's own kernel shapes). Standard library only.
  python3 bench/plan_accuracy.py DIR [--variant V] [--no-points]"""
import glob, json, os, statistics, sys

def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):          # average ranks for ties
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]: j += 1
        for k in range(i, j + 1): r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r

def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a); ma = sum(ra) / n; mb = sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5; vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else float('nan')

def mape(pred, meas): return 100 * sum(abs(p - t) / t for p, t in zip(pred, meas)) / len(pred)

def scores(grids, pred, meas):
    """MAPE, Spearman, the first choice (least predicted), its measured gap to the measured best"""
    first = min(range(len(grids)), key=lambda i: pred[i])
    best = min(range(len(grids)), key=lambda i: meas[i])
    return mape(pred, meas), spearman(pred, meas), grids[first], grids[best], 100 * (meas[first] - meas[best]) / meas[best]

def load_round(d, key):
    """{grid: (plan row, bench json)} of one round's directory"""
    plan = json.load(open(os.path.join(d, 'plan_%s%s.json' % (key, suffix))))
    rows = {}
    for g in plan['ranked']:
        f = os.path.join(d, 'bench_%s_%s.json' % (key, '_'.join(map(str, g['grid']))))
        if os.path.exists(f): rows[','.join(map(str, g['grid']))] = (g, json.load(open(f)))
    return plan, rows

def step(b): return b.get('ms_median', b['ms_per_iter'])
def rng(vs): return '%.2f-%.2f' % (min(vs), max(vs)) if len(vs) > 1 else ''

args = sys.argv[1:]
d = args[0]
suffix = '_' + args[args.index('--variant') + 1] if '--variant' in args else ''
rounds = sorted(glob.glob(os.path.join(d, 'round*')), key=lambda p: int(p.rsplit('round', 1)[1])) or [d]
points = open(os.devnull if '--no-points' in args else os.path.join(d, 'points.tsv'), 'w')
keys = sorted(os.path.basename(f)[5:-5] for f in glob.glob(os.path.join(rounds[0], 'plan_*.json'))
              if '_' not in os.path.basename(f)[5:-5])
for key in keys:
    data = [load_round(r, key) for r in rounds]
    plan = data[0][0]
    grids = [g for g in data[0][1] if all(g in rows for _, rows in data)]   # measured in every round
    if not grids: continue
    m = plan['model']
    print('## model %s: L=%d H=%d C=%d V=%d T=%d, batch %d, %d ranks, %d round%s\n' % (
        key, m['n_layer'], m['n_head'], m['n_embd'], m['vocab_size'], plan['seq'], plan['batch'], plan['ranks'],
        len(rounds), 's' if len(rounds) > 1 else ''))
    pr = {g: [rows[g][0]['step_ms'] for _, rows in data] for g in grids}
    ms = {g: [step(rows[g][1]) for _, rows in data] for g in grids}
    med = lambda xs: statistics.median(xs)
    pred = [med(pr[g]) for g in grids]; meas = [med(ms[g]) for g in grids]
    part = lambda g, f: med([f(rows[g]) for _, rows in data])
    print('| grid D,X,Y,Z | predicted ms%s | measured ms%s | error | pred. compute / comm / optim | meas. compute / comm / optim |' % (
        ' (median, range)' if len(rounds) > 1 else '', ' (median, range)' if len(rounds) > 1 else ' (min-max)'))
    print('|---|---|---|---|---|---|')
    for i, g in sorted(enumerate(grids), key=lambda t: pred[t[0]]):
        b = data[0][1][g][1]
        mr = rng(ms[g]) if len(rounds) > 1 else '%.2f-%.2f' % (b['ms_min'], b['ms_max'])
        print('| %s | %.2f %s | %.2f (%s) | %+.0f%% | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f |' % (
            g, pred[i], ('(%s)' % rng(pr[g])) if len(rounds) > 1 else '', meas[i], mr, 100 * (pred[i] - meas[i]) / meas[i],
            part(g, lambda r: r[0]['compute_ms']), part(g, lambda r: r[0]['comm_exposed_ms']),
            part(g, lambda r: r[0]['optimizer_ms']), part(g, lambda r: r[1]['split_ms']['compute']),
            part(g, lambda r: r[1]['split_ms']['comm_total']), part(g, lambda r: r[1]['split_ms']['optimizer'])))
        points.write('%s\t%s\t%.4f\t%.4f\n' % (key, g, pred[i], meas[i]))
    e, s, first, best, gap = scores(grids, pred, meas)
    print('\n%sMAPE %.1f%%, Spearman %.3f over %d grids; first choice %s measured %.2f ms, best %s %.2f ms (%.1f%% slower)' % (
        'medians over rounds: ' if len(rounds) > 1 else '', e, s, len(grids), first, meas[grids.index(first)], best,
        meas[grids.index(best)], gap))
    if len(rounds) > 1:
        print('\n| round | MAPE | Spearman | first choice | measured best | gap |\n|---|---|---|---|---|---|')
        for k, (r, (_, rows)) in enumerate(zip(rounds, data)):
            e, s, first, best, gap = scores(grids, [rows[g][0]['step_ms'] for g in grids], [step(rows[g][1]) for g in grids])
            print('| %s | %.1f%% | %.3f | %s | %s | %.1f%% |' % (os.path.basename(r), e, s, first, best, gap))
        noise = mape([med(ms[g]) for g in grids for _ in rounds], [t for g in grids for t in ms[g]])
        spread = med([(max(ms[g]) - min(ms[g])) / med(ms[g]) for g in grids])
        print('\nnoise floor: one round\'s measurement against the grid\'s median over rounds, MAPE %.1f%%; '
              'median spread (max-min)/median of a grid %.1f%%' % (noise, 100 * spread))
    print()
def calibration(path):
    m = json.load(open(path))
    a = ', '.join('%.1f at T %d, head %d' % (x['flops'] / 1e9, x['T'], x['hd']) for x in m.get('attention_shapes', []))
    return 'GEMM fit %.1f GFLOP/s, attention %.1f GFLOP/s%s, elementwise %.1f GB/s' % (
        m['gemm']['flops'] / 1e9, m['attention_flops'] / 1e9, ' (%s)' % a if a else '', m['memory_bandwidth'] / 1e9)
if len(rounds) > 1 and not suffix:
    print('calibration (bench comm):\n')
    for r in rounds:
        for f in sorted(glob.glob(os.path.join(r, 'machine*.json'))):
            if 'generic' not in f: print('- %s %s: %s' % (os.path.basename(r), os.path.basename(f), calibration(f)))
