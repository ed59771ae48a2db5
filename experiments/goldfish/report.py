#!/usr/bin/env python3
"""Tables and plot data of the goldfish experiment (stdlib only).

    report.py OUT REPEATS BASE   -> OUT/results.md, OUT/memorization.dat
"""
import glob
import json
import os
import subprocess
import sys


def series(out, mode):
    rows = []
    for ck in sorted(glob.glob(os.path.join(out, mode, "ckpt-*"))):
        m = json.load(open(os.path.join(ck, "memorize.json")))
        rows.append((int(ck.rsplit("-", 1)[1]), m))
    return rows


def val_curve(out, mode):
    v = {}
    for line in open(os.path.join(out, mode, "metrics.jsonl")):
        j = json.loads(line)
        if "val_loss" in j:
            v[j["step"]] = j["val_loss"]
    return v


def main():
    out, repeats, base = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    modes = ["standard", "goldfish"]
    data = {m: series(out, m) for m in modes}
    vals = {m: json.load(open(os.path.join(out, m, "val.json"))) for m in modes}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpu = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    lines = ["# Goldfish loss vs standard loss: verbatim memorization of repeated canaries", "",
             "Machine: %s, %d cores; commit %s." % (cpu, os.cpu_count(), commit), "",
             "100 canary fortunes (350-700 characters) repeated %d times in a stream with %.0f%% of the other "
             "fortunes; GPT-2 L=4, H=4, C=256, T=128, V=2048 (BPE trained on the stream); same seed, data order "
             "and steps. Audit: prompt with all but the last 50 tokens (the last 78 at most), greedy-decode 50. "
             "Validation: 400 held-out fortunes." % (repeats, 100 * base), "",
             "| run | exact match (all 50 tokens) | mean token match | mean ROUGE-L | validation loss (held-out fortunes) |",
             "| --- | --- | --- | --- | --- |"]
    for m in modes:
        step, last = data[m][-1]
        lines.append("| %s (step %d) | %d / %d (%.0f%%) | %.3f | %.3f | %.4f |" % (
            m if m == "standard" else "goldfish k=4, h=13", step, last["exact"], last["evaluated"],
            100.0 * last["exact_rate"], last["match"], last["rouge_l"], vals[m]["loss"]))
    lines += ["", "Memorization over training (exact-match rate, mean ROUGE-L; validation loss on the first 8,192 held-out tokens, the table above uses all of them):", "",
              "| step | standard exact | standard ROUGE-L | standard val | goldfish exact | goldfish ROUGE-L | goldfish val |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    vc = {m: val_curve(out, m) for m in modes}
    with open(os.path.join(out, "memorization.dat"), "w") as f:
        f.write("# step std_exact std_rouge gf_exact gf_rouge\n")
        for (s, a), (_, b) in zip(data["standard"], data["goldfish"]):
            lines.append("| %d | %.2f | %.3f | %.4f | %.2f | %.3f | %.4f |" % (
                s, a["exact_rate"], a["rouge_l"], vc["standard"].get(s, float("nan")),
                b["exact_rate"], b["rouge_l"], vc["goldfish"].get(s, float("nan"))))
            f.write("%d %.4f %.4f %.4f %.4f\n" % (s, a["exact_rate"], a["rouge_l"], b["exact_rate"], b["rouge_l"]))
    lines += ["", "![memorization](memorization.png)", ""]
    open(os.path.join(out, "results.md"), "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
