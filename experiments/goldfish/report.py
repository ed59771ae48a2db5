#!/usr/bin/env python3
"""Tables and plot data of the goldfish experiment (stdlib only).

    report.py OUT CORPUS REPEATS BASE   -> OUT/results.md, OUT/memorization.dat

Every run directory of OUT ("standard", "goldfish", "goldfish-<label>" from an
other build) is reported: the final audit and validation loss, and the audit
at every checkpoint.
"""
import glob
import json
import os
import subprocess
import sys

CORPORA = {
    "fortunes": "100 canary fortunes (350-700 characters), each copy a document of its own",
    "invented": "100 passages of 60-90 invented words, each copy pasted at a random word boundary inside "
                "another fortune (so it starts anywhere in the token stream, never at a document start)",
}


def series(out, run):
    rows = []
    for ck in sorted(glob.glob(os.path.join(out, run, "ckpt-*"))):
        m = json.load(open(os.path.join(ck, "memorize.json")))
        rows.append((int(ck.rsplit("-", 1)[1]), m))
    return rows


def val_curve(out, run):
    v = {}
    for line in open(os.path.join(out, run, "metrics.jsonl")):
        j = json.loads(line)
        if "val_loss" in j:
            v[j["step"]] = j["val_loss"]
    return v


def title(run):
    if run == "standard":
        return "standard"
    return "goldfish k=4, h=13" + (" (%s)" % run.split("-", 1)[1] if "-" in run else "")


def main():
    out, corpus, repeats, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    runs = sorted((os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(out, "*", "val.json"))),
                  key=lambda r: (r != "standard", r == "goldfish", r))
    data = {r: series(out, r) for r in runs}
    vals = {r: json.load(open(os.path.join(out, r, "val.json"))) for r in runs}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpu = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    lines = ["# Goldfish loss vs standard loss: verbatim memorization of repeated canaries (%s)" % corpus, "",
             "Machine: %s, %d cores; report written at commit %s." % (cpu, os.cpu_count(), commit), "",
             "%s, repeated %d times in a stream with %.0f%% of the other fortunes; GPT-2 L=4, H=4, C=256, "
             "T=128, V=2048 (BPE trained on the stream); same seed, data order and steps. Audit: prompt with all "
             "but the last 50 tokens (the last 78 at most), greedy-decode 50. Validation: 400 held-out fortunes."
             % (CORPORA[corpus], repeats, 100 * base), "",
             "| run | exact match (all 50 tokens) | mean token match | mean ROUGE-L | validation loss (held-out fortunes) |",
             "| --- | --- | --- | --- | --- |"]
    for r in runs:
        step, last = data[r][-1]
        lines.append("| %s (step %d) | %d / %d (%.0f%%) | %.3f | %.3f | %.4f |" % (
            title(r), step, last["exact"], last["evaluated"], 100.0 * last["exact_rate"], last["match"],
            last["rouge_l"], vals[r]["loss"]))
    head = "| step |" + "".join(" %s exact | %s ROUGE-L | %s val |" % ((title(r),) * 3) for r in runs)
    lines += ["", "Memorization over training (exact-match rate, mean ROUGE-L; validation loss on the first 8,192 "
              "held-out tokens, the table above uses all of them):", "", head,
              "|" + " --- |" * (1 + 3 * len(runs))]
    vc = {r: val_curve(out, r) for r in runs}
    with open(os.path.join(out, "memorization.dat"), "w") as f:
        f.write("step " + " ".join('"%s: exact match" "%s: ROUGE-L"' % (title(r), title(r)) for r in runs) + "\n")
        for i, (s, _) in enumerate(data[runs[0]]):
            row = [data[r][i][1] for r in runs]
            lines.append("| %d |" % s + "".join(" %.2f | %.3f | %.4f |" % (m["exact_rate"], m["rouge_l"],
                                                                          vc[r].get(s, float("nan")))
                                               for r, m in zip(runs, row)))
            f.write("%d " % s + " ".join("%.4f %.4f" % (m["exact_rate"], m["rouge_l"]) for m in row) + "\n")
    lines += ["", "![memorization](memorization.png)", ""]
    open(os.path.join(out, "results.md"), "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
