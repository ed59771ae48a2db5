ax_test(ops_fd test_ops_fd 1)
ax_test(gemm test_gemm 1)
ax_test_threads(gemm_2threads test_gemm 1 2)
ax_test(gemm_tune test_gemm_tune 1)
