ax_test(ops_fd test_ops_fd 1)
ax_test(gemm test_gemm 1)
ax_test_threads(gemm_2threads test_gemm 1 2)
ax_test(gemm_tune test_gemm_tune 1)
ax_test_threads(gemm_tune_2threads test_gemm_tune 1 2)
# GPU tests: SKIP (exit 77) without the CUDA backend or a device
ax_test(backend_cmp test_backend_cmp 1)
set_tests_properties(backend_cmp PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
# not a test: GEMM throughput at given shapes, for scripts/gpu_check.sh
ax_test_exe(tool_gemm_rate)
