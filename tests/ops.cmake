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
# the CUDA attention selection (src/backend/cuda/attn_plan.h): plain C
ax_test(attn_plan test_attn_plan 1)
# the flash-attention kernels (src/backend/cuda/attention_flash.cu) compiled
# for the CPU against a mock of WMMA whose fragments hold whole tiles, each
# CUDA thread a fiber, and compared with an fp64 attention (tests/flash_emu):
# their indexing, masking, barriers and shared-memory layout, checked without
# a GPU. Shapes B,T,Hl,KVl,hd: emu.cc's default set (partial tiles, hd 16 to
# 128, 16 tiles, 3:1 groups, T = 1) and grouped queries 4:1 and 8:1 at hd 128
# off the diagonal; flash_emu_t2048: 32 tiles of T = 2048 at hd 128, 8:1 and 4:1
add_test(NAME flash_emu COMMAND sh ${CMAKE_SOURCE_DIR}/tests/flash_emu/run.sh
  2,100,4,2,64 1,64,2,2,128 2,33,4,4,16 1,130,6,2,32 1,1,2,1,48 1,1024,2,2,64 1,320,8,2,128 2,200,8,1,128)
# ring attention's blocks (backend.h: ax_attn_block) on the tiled (attention.cu,
# warp shuffles emulated) and flash kernels, 3 chunks of Tc rows merged by
# log-sum-exp, forward and backward, against the fp64 unsplit attention:
# partial tiles (one and several a chunk), chunks of 64 and 128 at hd 64 and
# 128, groups 2:1, 3:1, 4:1, Tc = 1, hd 8 (tiled only); and the tiled whole
# attention of the same rows
add_test(NAME flash_emu_ring COMMAND sh ${CMAKE_SOURCE_DIR}/tests/flash_emu/run.sh --ring
  2,33,4,2,64 1,64,4,2,64 1,128,8,2,128 2,64,2,2,128 2,80,2,1,32 1,40,6,2,32 1,1,2,1,16 2,17,4,4,8)
set_tests_properties(flash_emu_ring PROPERTIES TIMEOUT 600)
# the ring's blocks with q|k|v and the packed chunks stored in bf16 (as the
# ring sends them under --dtype bf16), bit for bit those stored in fp32
add_test(NAME flash_emu_ring_stored COMMAND sh ${CMAKE_SOURCE_DIR}/tests/flash_emu/run.sh --ring --stored
  2,33,4,2,64 1,1,2,1,16 2,17,4,4,8)
# q|k|v and out stored in bf16 (the whole attention under --dtype bf16) against
# fp32 copies of the same values on the tiled and flash kernels: the same bits
add_test(NAME flash_emu_stored COMMAND sh ${CMAKE_SOURCE_DIR}/tests/flash_emu/run.sh --stored
  2,33,4,4,16 2,100,4,2,64 1,130,6,2,32 1,64,8,2,128)
add_test(NAME flash_emu_t2048 COMMAND sh ${CMAKE_SOURCE_DIR}/tests/flash_emu/run.sh 1,2048,8,1,128 1,2048,4,1,128)
set_tests_properties(flash_emu_t2048 PROPERTIES TIMEOUT 1800)
