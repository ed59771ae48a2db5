ax_script_test(cli_resume test_cli_resume.sh)
ax_script_test(cli_errors test_cli_errors.sh)
ax_script_test(cli_eval test_cli_eval.sh)
ax_script_test(cli_goldfish test_cli_goldfish.sh)
ax_script_test(cli_nonfinite test_cli_nonfinite.sh)
ax_script_test(fault_kill_resume fault/kill_resume.sh 2 1)   # 2 random kills + 1 during a checkpoint write
ax_script_test(cli_bench test_cli_bench.sh)
ax_script_test(cli_instruct test_cli_instruct.sh)
ax_script_test(cli_gemm_tune test_cli_gemm_tune.sh)
