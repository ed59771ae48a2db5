"""Predicted (axonn plan) against measured (axonn bench) step times of every
grid in a plan_accuracy.sh result directory: per-grid table, step-time MAPE,
Spearman rank correlation, and the measured gap of the planner's first choice
to the measured best; also writes DIR/points.tsv (model, grid, predicted and
measured ms) for bench/plan_accuracy_plot.sh. Standard library only."""
import glob, json, os, sys

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

d = sys.argv[1]
points = open(os.path.join(d, 'points.tsv'), 'w')
for plan_file in sorted(glob.glob(os.path.join(d, 'plan_*.json'))):
    key = os.path.basename(plan_file)[5:-5]
    plan = json.load(open(plan_file))
    rows = []
    for g in plan['ranked']:
        f = os.path.join(d, 'bench_%s_%s.json' % (key, '_'.join(map(str, g['grid']))))
        if not os.path.exists(f): continue
        b = json.load(open(f))
        s = b['split_ms']
        rows.append((g, b, s))
    if not rows: continue
    m = plan['model']
    print('## model %s: L=%d H=%d C=%d V=%d T=%d, batch %d, %d ranks\n' % (key, m['n_layer'], m['n_head'], m['n_embd'],
          m['vocab_size'], plan['seq'], plan['batch'], plan['ranks']))
    print('| grid D,X,Y,Z | predicted ms | measured ms (min-max) | error | pred. compute / comm / optim | meas. compute / comm / optim |')
    print('|---|---|---|---|---|---|')
    pred, meas = [], []
    for g, b, s in rows:
        p, t = g['step_ms'], b['ms_per_iter']
        pred.append(p); meas.append(t)
        points.write('%s\t%s\t%.4f\t%.4f\n' % (key, ','.join(map(str, g['grid'])), p, t))
        print('| %s | %.2f | %.2f (%.2f-%.2f) | %+.0f%% | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f |' % (
            ','.join(map(str, g['grid'])), p, t, b['ms_min'], b['ms_max'], 100 * (p - t) / t,
            g['compute_ms'], g['comm_exposed_ms'], g['optimizer_ms'], s['compute'], s['comm_total'], s['optimizer']))
    mape = 100 * sum(abs(p - t) / t for p, t in zip(pred, meas)) / len(pred)
    best = min(meas)
    first = meas[0]          # plan['ranked'] is sorted: the first row is the planner's choice
    print('\nMAPE %.1f%%, Spearman %.3f over %d grids; first choice %s measured %.2f ms, best %s %.2f ms (%.1f%% slower)\n' % (
        mape, spearman(pred, meas), len(pred), ','.join(map(str, rows[0][0]['grid'])), first,
        ','.join(map(str, rows[meas.index(best)][0]['grid'])), best, 100 * (first - best) / best))
