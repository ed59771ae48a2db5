# shellcheck shell=bash
# The GPU check's steps in order of value, each with its limit in seconds.
# The limits add up to the budget, BUDGET_S: one command of at most 10
# minutes on a machine lent for 15, 2-3 of them its start-up. A step runs
# only if the budget left holds its whole limit; else it is "not run",
# counted apart from failures (lib.sh). What each step checks: correct.sh
# and speed.sh. Expected times: the H200 run of 2026-12-04
# (bench/results/2026-12-04-h200.md) where the step existed then.
BUDGET_S=540

run_plan() {
  # the machine, the binaries, their libraries                     expected
  step env 10 0 env_info                                           #  6-7 s
  step build 10 0 unpack                                           #  1 (the pack unpacked)
  setup_paths
  step version 5 0 versions                                        #  1
  # every CUDA op against the CPU, and the flash verdict's evidence
  step ops 40 1 ops_cmp                                            #  4 (47 rows then, more now)
  step train 40 1 train_cmp                                        # 17 for 2 of its 4 runs
  step sanitize 25 1 sanitize_attn memcheck                        #  2 (failed early then)
  step racecheck 25 1 sanitize_attn "racecheck synccheck"          #  never run
  # GPT-2 small: the GEMM peak, axonn under each attention path, PyTorch
  step gemm 15 1 gemm_peak                                         # 10-11
  step gpt2_mm 20 1 bench_gpt2 mm                                  # 12-16
  step gpt2_flash 20 1 bench_gpt2 flash                            #  never run
  step gpt2_tiled 20 1 bench_gpt2 tiled                            # 13 (181 ms a step)
  step gpt2_graph 20 1 bench_gpt2 default --cuda-graph             #  never run
  step torch 75 1 torch_small                                      # 58 (17 eager, 41 compiled)
  # several ranks on the one GPU, then checkpoints
  step grids 75 1 grids_cmp                                        #  never run: 10 launches
  step ckpt 20 1 ckpt_cmp                                          #  never run: 5 launches
  # the larger models
  step gpt_1p3b 50 1 bench_1p3b                                    # over 60 then (one-core init, since threaded)
  step llama_1b 40 1 bench_llama                                   #  never run
  # NCCL on one rank, two ranks sharing the GPU (staged), ring attention's transfers
  step nccl 5 1 nccl_one                                           #  2
  step nccl_shared 15 1 nccl_shared                                #  never run
  step ring 10 1 ring_cmp                                          #  never run
}
