# shellcheck shell=bash
# The GPU check's speed steps (plan.sh runs them): the cuBLASLt bf16 peak,
# axonn's GPT-2 small step under each attention path, PyTorch eager and
# torch.compile of the same step, the 1.3B GPT and Llama-3.2-1B, on the same
# GPU in the same run; and speed.md, the table of their figures.

# cuBLASLt bf16 at the layers' shapes (rows B*T = 8192), and a square reference
gemm_peak() {
  "$BIN/tool_gemm_rate" cuda bf16 8192,8192,8192 \
    8192,2304,768 8192,768,768 8192,3072,768 8192,768,3072 8192,50304,768 \
    8192,6144,2048 8192,2048,2048 8192,8192,2048 8192,2048,8192 8192,50304,2048 2>&1 | tee "$WORK/gemm.out"
  local rc=${PIPESTATUS[0]}
  grep -q "no usable CUDA device" "$WORK/gemm.out" && return 77
  return "$rc"
}

# axonn bench under AXONN_CUDA_ATTN=$1 (default: unset); AXONN_CUDA_PROFILE=1
# prints each backend entry's device time at exit
bench_run() {
  local attn=$1 out=$WORK/bench.out rc
  shift
  if [ "$attn" = default ]; then unset AXONN_CUDA_ATTN; else export AXONN_CUDA_ATTN=$attn; fi
  AXONN_CUDA_PROFILE=1 "$BIN/axonn" bench --backend cuda --dtype bf16 "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  grep -q "no usable CUDA device" "$out" && rc=77 # arguments parsed, no device: SKIP (a failure where a GPU is)
  return "$rc"
}
bench_gpt2() {
  local attn=$1
  shift
  bench_run "$attn" --preset gpt2 --seq 1024 --batch 8 --iters 10 "$@"
}
bench_1p3b() {
  bench_run auto --n-layer 24 --n-embd 2048 --n-head 16 --block-size 2048 --vocab-size 50257 --seq 2048 --batch 4 --iters 6
}
bench_llama() { bench_run auto --preset llama-3.2-1b --seq 2048 --batch 4 --iters 6; }

torch_small() {
  python3 -c 'import torch; assert torch.cuda.is_available()' || { echo "SKIP: no PyTorch with CUDA"; return 77; }
  local a=(--device cuda --dtype bf16 --vocab 50257 --seq 1024 --layers 12 --heads 12 --embd 768 --batch 8 --steps 10 --timed 8 --threads 1)
  python3 bench/torch_gpt.py "${a[@]}" || return 1
  python3 bench/torch_gpt.py "${a[@]}" --compile || { echo "torch.compile: failed (eager figure above stands)"; return 1; }
}
export -f gemm_peak bench_run bench_gpt2 bench_1p3b bench_llama torch_small

# speed.md from the logs so far: the GEMM peak, a table of ms/step, tokens/s,
# model TFLOP/s, share of the measured peak and MFU (over the datasheet peak
# axonn bench names) for each run, and the targets of issue 29 as measured
write_speed() {
  python3 - "$LOGS" "$GPU_NAME" << 'PY'
import json, os, re, sys
d, gpu = sys.argv[1:3]
def read(name):
    try: return open(os.path.join(d, name + ".log")).read()
    except OSError: return ""
peak = re.search(r"M=8192 N=8192 K=8192: ([\d.]+) TFLOP/s", read("gemm"))
peak = float(peak.group(1)) if peak else None
benches = ("gpt2_mm", "gpt2_flash", "gpt2_tiled", "gpt2_graph", "gpt_1p3b", "llama_1b")
# the device's datasheet peak, as axonn bench names it (src/measure/peak.c): MFU's denominator
sheet = next((float(m.group(1)) for n in benches
              for m in [re.search(r"MFU [\d.]+% \(model FLOP/s per rank over ([\d.]+) TFLOP/s", read(n))] if m), None)
def cols(r):  # ms, tokens/s, model TFLOP/s; then the shares of the measured GEMM peak and of the datasheet
    return f"| {r[0]:.2f} | {r[1]:,.0f} | {r[2]:.1f} | " + (f"{100 * r[2] / peak:.1f}%" if peak else "") + " | " + \
           (f"{100 * r[2] / sheet:.1f}%" if sheet else "") + " |"
def bench(name):
    t = read(name)
    ms = re.search(r"([\d.]+) ms/iteration", t); tok = re.search(r"([\d.]+) tokens/s", t)
    fl = re.search(r"model FLOP/s ([\d.e+]+) total", t)
    return (float(ms.group(1)), float(tok.group(1)), float(fl.group(1)) / 1e12) if ms and tok and fl else None
torch = {}
for line in read("torch").splitlines():
    try: r = json.loads(line)
    except ValueError: continue
    torch["torch.compile" if r.get("compiled") else "PyTorch eager"] = (r["ms_per_step"], r["tokens_per_s"], r["model_gflops"] / 1e3)
rows = [(f"axonn, attention {a}", bench("gpt2_" + a)) for a in ("mm", "flash", "tiled")]
rows += [("axonn, default attention, --cuda-graph", bench("gpt2_graph"))] + list(torch.items())
print(f"# Speed on {gpu}\n")
print(f"- cuBLASLt bf16 peak, 8192^3, this run: {f'{peak} TFLOP/s' if peak else 'not measured'}")
print(f"- datasheet dense bf16 peak (MFU): {f'{sheet} TFLOP/s' if sheet else 'not known for this device'}\n")
print("GPT-2 small, T = 1024, B = 8 (8192 tokens a step), bf16:\n")
print("| run | ms/step | tokens/s | model TFLOP/s | % of the GEMM peak | MFU |\n| --- | --- | --- | --- | --- | --- |")
for name, r in rows:
    print(f"| {name} " + cols(r) if r else f"| {name} | not measured | | | | |")
best = min((r for n, r in rows[:4] if r), default=None, key=lambda r: r[0])
eager, comp = torch.get("PyTorch eager"), torch.get("torch.compile")
print("\nTargets, axonn's fastest run against PyTorch in this run:")
print(f"- >= 1.3x PyTorch eager tokens/s: {f'{best[1] / eager[1]:.2f}x' if best and eager else 'not measured'}")
print(f"- >= 0.9x torch.compile: {f'{best[1] / comp[1]:.2f}x' if best and comp else 'not measured'}")
print("\nLarger models, bf16, T = 2048, B = 4, attention auto:\n")
print("| run | ms/step | tokens/s | model TFLOP/s | % of the GEMM peak (target >= 45% for the 1.3B) | MFU |\n| --- | --- | --- | --- | --- | --- |")
for name, log in (("1.3B GPT (L 24, C 2048, 16 heads)", "gpt_1p3b"), ("Llama-3.2-1B preset", "llama_1b")):
    r = bench(log)
    print(f"| {name} " + cols(r) if r else f"| {name} | not measured | | | | |")
PY
}
