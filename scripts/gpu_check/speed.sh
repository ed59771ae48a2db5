# shellcheck shell=bash
# The speed part of the GPU check (scripts/gpu_check.sh speed): the cuBLASLt
# bf16 peak, axonn's GPT-2 small step under each attention path, PyTorch
# eager and torch.compile of the same step, the 1.3B GPT and Llama-3.2-1B,
# all on the same GPU in the same run, and README.md: the figures. Sourced by
# gpu_check.sh after lib.sh. Planned for one H100/H200 (limits, seconds; the
# steps run in this order and those the 330 s budget cannot hold are not run;
# expected times from the H200 run of 2026-12-04):
#
#   env 15, build 15 (the pack unpacked), version 5      ~ 10 expected
#   gemm 20: bf16 at 8192^3 and the models' shapes       ~ 10 (10 s in 2026-12)
#   GPT-2 small T=1024 B=8 bf16: mm 25, flash 25,        ~ 15 each (12-13 s)
#     auto 20, tiled 20
#   torch 80: PyTorch eager, then torch.compile          ~ 60 (58 s)
#   1.3B GPT (L 24, C 2048, 16 heads, T 2048, B 4): auto 55  ~ 40 (never run)
#   Llama-3.2-1B (T 2048, B 4): auto 35                  ~ 30 (never run)
#   GPT-2 small, mm, --cuda-graph 20                     ~ 15, if time is left (never run)
#   1.3B GPT under mm 45                                 ~ 40, if time is left

# cuBLASLt bf16 at the layers' shapes (rows B*T = 8192), and a square reference
gemm_peak() {
  "$BIN/tool_gemm_rate" cuda bf16 8192,8192,8192 \
    8192,2304,768 8192,768,768 8192,3072,768 8192,768,3072 8192,50304,768 \
    8192,6144,2048 8192,2048,2048 8192,8192,2048 8192,2048,8192 8192,50304,2048 2>&1 | tee "$OUTD/gemm.out"
  local rc=${PIPESTATUS[0]}
  grep -q "no usable CUDA device" "$OUTD/gemm.out" && return 77
  return "$rc"
}

# axonn bench under AXONN_CUDA_ATTN=$1 (default: unset); AXONN_CUDA_PROFILE=1
# prints each backend entry's device time at exit
bench_run() {
  local attn=$1 out rc; shift
  if [ "$attn" = default ]; then unset AXONN_CUDA_ATTN; else export AXONN_CUDA_ATTN=$attn; fi
  out=$(mktemp)
  AXONN_CUDA_PROFILE=1 "$BIN/axonn" bench --backend cuda --dtype bf16 "$@" 2>&1 | tee "$out"; rc=${PIPESTATUS[0]}
  grep -q "no usable CUDA device" "$out" && rc=77   # arguments parsed, no device: SKIP (a failure where a GPU is)
  rm -f "$out"
  return "$rc"
}
bench_gpt2() {
  local attn=$1; shift
  bench_run "$attn" --preset gpt2 --seq 1024 --batch 8 --iters 10 "$@"
}
bench_1p3b() {
  bench_run "$1" --n-layer 24 --n-embd 2048 --n-head 16 --block-size 2048 --vocab-size 50257 --seq 2048 --batch 4 --iters 6
}
bench_llama() { bench_run "$1" --preset llama-3.2-1b --seq 2048 --batch 4 --iters 6; }

torch_small() {
  python3 -c 'import torch; assert torch.cuda.is_available()' || { echo "SKIP: no PyTorch with CUDA"; return 77; }
  local a=(--device cuda --dtype bf16 --vocab 50257 --seq 1024 --layers 12 --heads 12 --embd 768 --batch 8 --steps 10 --timed 8 --threads 1)
  python3 bench/torch_gpt.py "${a[@]}" || return 1
  [ "${AX_TORCH_COMPILE:-1}" = 0 ] && return 0
  python3 bench/torch_gpt.py "${a[@]}" --compile || { echo "torch.compile: failed (eager figure above stands)"; return 1; }
}

# README.md: the device, the table of figures from the logs, the targets of issue 29
write_readme() {
  python3 - "$OUTD" "$GPU_NAME" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)" \
    "$(cut -c 1-7 "$PACK/commit" 2>/dev/null || echo none)" > "$OUTD/README.md" <<'PY'
import json, os, re, sys
d, gpu, when, tree, pack = sys.argv[1:6]
def read(name):
    try: return open(os.path.join(d, name)).read()
    except OSError: return ""
peak = re.search(r"M=8192 N=8192 K=8192: ([\d.]+) TFLOP/s", read("gemm.log"))
peak = float(peak.group(1)) if peak else None
# the device's datasheet peak, as axonn bench names it (src/measure/peak.c): MFU's denominator
sheet = next((float(m.group(1)) for n in sorted(os.listdir(d)) if n.startswith("bench_")
              for m in [re.search(r"MFU [\d.]+% \(model FLOP/s per rank over ([\d.]+) TFLOP/s", read(n))] if m), None)
def cols(r):  # ms, tokens/s, model TFLOP/s; then the shares of the measured GEMM peak and of the datasheet
    return f"| {r[0]:.2f} | {r[1]:,.0f} | {r[2]:.1f} | " + (f"{100 * r[2] / peak:.1f}%" if peak else "") + " | " + \
           (f"{100 * r[2] / sheet:.1f}%" if sheet else "") + " |"
def bench(name):
    t = read(name + ".log")
    ms = re.search(r"([\d.]+) ms/iteration", t); tok = re.search(r"([\d.]+) tokens/s", t)
    fl = re.search(r"model FLOP/s ([\d.e+]+) total", t)
    return (float(ms.group(1)), float(tok.group(1)), float(fl.group(1)) / 1e12) if ms and tok and fl else None
torch = {}
for line in read("torch.log").splitlines():
    try: r = json.loads(line)
    except ValueError: continue
    torch["torch.compile" if r.get("compiled") else "PyTorch eager"] = (r["ms_per_step"], r["tokens_per_s"], r["model_gflops"] / 1e3)
rows = [("axonn, attention " + a, bench("bench_gpt2_" + a)) for a in ("default", "flash", "auto", "tiled")]
rows += [("axonn, attention default, --cuda-graph", bench("bench_gpt2_graph"))] + list(torch.items())
print(f"# GPU check, speed: {gpu}\n\n- {when}; tree {tree}, binaries of {pack} (scripts/gpu_check.sh speed)")
print(f"- cuBLASLt bf16 peak, 8192^3, this run: {f'{peak} TFLOP/s' if peak else 'not measured'}")
print(f"- datasheet dense bf16 peak (MFU): {f'{sheet} TFLOP/s' if sheet else 'not known for this device'}\n")
print("## GPT-2 small, T = 1024, B = 8 (8192 tokens a step), bf16\n")
print("| run | ms/step | tokens/s | model TFLOP/s | % of the GEMM peak | MFU |\n| --- | --- | --- | --- | --- | --- |")
for name, r in rows:
    print(f"| {name} " + cols(r) if r else f"| {name} | not measured | | | | |")
best = min((r for n, r in rows[:5] if r), default=None, key=lambda r: r[0])
eager, comp = torch.get("PyTorch eager"), torch.get("torch.compile")
print("\nTargets (issue 29), axonn's fastest path against PyTorch in this run:")
print(f"- >= 1.3x PyTorch eager tokens/s: {f'{best[1] / eager[1]:.2f}x' if best and eager else 'not measured'}")
print(f"- >= 0.9x torch.compile: {f'{best[1] / comp[1]:.2f}x' if best and comp else 'not measured'}")
print("\n## Larger models, bf16, T = 2048, B = 4\n")
print("| run | ms/step | tokens/s | model TFLOP/s | % of the GEMM peak (target >= 45% for the 1.3B) | MFU |\n| --- | --- | --- | --- | --- | --- |")
for name, log in (("1.3B GPT (L 24, C 2048, 16 heads), auto", "bench_1p3b_auto"), ("Llama-3.2-1B preset, auto", "bench_llama_auto"),
                  ("1.3B GPT, mm", "bench_1p3b_default")):
    r = bench(log)
    print(f"| {name} " + cols(r) if r else f"| {name} | not measured | | | | |")
print("\nSteps, limits and logs: summary.md beside this file.")
PY
}

run_speed() {
  export -f gemm_peak bench_run bench_gpt2 bench_1p3b bench_llama torch_small
  prologue
  step gemm 20 1 gemm_peak
  step bench_gpt2_default 25 1 bench_gpt2 default
  step bench_gpt2_flash 25 1 bench_gpt2 flash
  step bench_gpt2_auto 20 1 bench_gpt2 auto
  step bench_gpt2_tiled 20 1 bench_gpt2 tiled
  step torch 80 1 torch_small
  step bench_1p3b_auto 55 1 bench_1p3b auto
  step bench_llama_auto 35 1 bench_llama auto
  step bench_gpt2_graph 20 1 bench_gpt2 default --cuda-graph
  step bench_1p3b_default 45 1 bench_1p3b default
  write_readme
  finish
}
