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
# the flash-attention kernels (src/backend/cuda/attention_flash.cu) compiled
# for the CPU against a mock of WMMA whose fragments hold whole tiles, each
# CUDA thread a fiber, and compared with an fp64 attention (tests/flash_emu):
# their indexing, masking and barriers, checked without a GPU
add_test(NAME flash_emu COMMAND sh ${CMAKE_SOURCE_DIR}/tests/flash_emu/run.sh 3)
