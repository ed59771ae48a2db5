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
# The emulator is built once (tests/flash_emu/run.sh builds and runs it by
# hand): the two attention sources rewritten by convert.sh (flash.cc, tiled.cc,
# which emu.cc and tiled_emu.cc include), compiled by g++. Not in a sanitizer
# build: it is test machinery, built apart from the library it would check.
if(NOT AXONN_SANITIZE)
enable_language(CXX)
set(flash_emu_dir ${CMAKE_CURRENT_BINARY_DIR}/flash_emu)
foreach(pair attention_flash:flash attention:tiled)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 from)
  list(GET pair 1 to)
  add_custom_command(OUTPUT ${flash_emu_dir}/${to}.cc
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu/convert.sh ${CMAKE_SOURCE_DIR}/src/backend/cuda/${from}.cu
            ${flash_emu_dir}/${to}.cc
    DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/cuda/${from}.cu ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu/convert.sh VERBATIM)
endforeach()
add_executable(flash_emu flash_emu/emu.cc flash_emu/tiled_emu.cc cuda_emu/sched.cc ${flash_emu_dir}/flash.cc
               ${flash_emu_dir}/tiled.cc)
set_source_files_properties(${flash_emu_dir}/flash.cc ${flash_emu_dir}/tiled.cc PROPERTIES HEADER_FILE_ONLY ON)
target_include_directories(flash_emu PRIVATE ${flash_emu_dir} ${CMAKE_CURRENT_SOURCE_DIR}/flash_emu/include
                           ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu/include ${CMAKE_SOURCE_DIR}/src)
target_compile_options(flash_emu PRIVATE -O2 -std=c++17 -Wall -Wno-unknown-pragmas)
set_target_properties(flash_emu PROPERTIES OUTPUT_NAME emu RUNTIME_OUTPUT_DIRECTORY ${flash_emu_dir})
# the flash-attention kernels (src/backend/cuda/attention_flash.cu) compiled
# for the CPU against a mock of WMMA whose fragments hold whole tiles, each
# CUDA thread a fiber, and compared with an fp64 attention (tests/flash_emu):
# their indexing, masking, barriers and shared-memory layout, checked without
# a GPU. Shapes B,T,Hl,KVl,hd: emu.cc's default set (partial tiles, hd 16 to
# 128, 16 tiles, 3:1 groups, T = 1) and grouped queries 4:1 and 8:1 at hd 128
# off the diagonal; flash_emu_t2048: 32 tiles of T = 2048 at hd 128, 8:1 and 4:1
add_test(NAME flash_emu COMMAND flash_emu
  2,100,4,2,64 1,64,2,2,128 2,33,4,4,16 1,130,6,2,32 1,1,2,1,48 1,1024,2,2,64 1,320,8,2,128 2,200,8,1,128)
# ring attention's blocks (backend.h: ax_attn_block) on the tiled (attention.cu,
# warp shuffles emulated) and flash kernels, 3 chunks of Tc rows merged by
# log-sum-exp, forward and backward, against the fp64 unsplit attention:
# partial tiles (one and several a chunk), chunks of 64 and 128 at hd 64 and
# 128, groups 2:1, 3:1, 4:1, Tc = 1, hd 8 (tiled only); and the tiled whole
# attention of the same rows
add_test(NAME flash_emu_ring COMMAND flash_emu --ring
  2,33,4,2,64 1,64,4,2,64 1,128,8,2,128 2,64,2,2,128 2,80,2,1,32 1,40,6,2,32 1,1,2,1,16 2,17,4,4,8)
set_tests_properties(flash_emu_ring PROPERTIES TIMEOUT 600)
# the ring's blocks with q|k|v and the packed chunks stored in bf16 (as the
# ring sends them under --dtype bf16), bit for bit those stored in fp32
add_test(NAME flash_emu_ring_stored COMMAND flash_emu --ring --stored
  2,33,4,2,64 1,1,2,1,16 2,17,4,4,8)
# q|k|v and out stored in bf16 (the whole attention under --dtype bf16) against
# fp32 copies of the same values on the tiled and flash kernels: the same bits
add_test(NAME flash_emu_stored COMMAND flash_emu --stored
  2,33,4,4,16 2,100,4,2,64 1,130,6,2,32 1,64,8,2,128)
add_test(NAME flash_emu_t2048 COMMAND flash_emu 1,2048,8,1,128 1,2048,4,1,128)
set_tests_properties(flash_emu_t2048 PROPERTIES TIMEOUT 1800)
endif()
