# The CUDA backend's own kernel sources run on the host (tests/cuda_emu/README.md):
# each .cu rewritten by convert.sh and compiled with g++ against the emulated
# runtime, cuBLASLt and device language; backend_cmp_emu is backend_cmp on it.
# Needs a CUDA build (backend.c lists the cuda backend only there), not a GPU.
if(AX_CUDA)
  enable_language(CXX)
  set(emu_dir ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu)
  set(emu_convert ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu/convert.sh)
  file(GLOB emu_cu CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/cuda/*.cu ${CMAKE_SOURCE_DIR}/src/backend/cuda/*.cuh)
  set(emu_srcs "")
  set(emu_headers "")
  foreach(f ${emu_cu})
    get_filename_component(n ${f} NAME)
    if(n MATCHES "\\.cu$")
      string(REGEX REPLACE "\\.cu$" ".cc" out ${emu_dir}/${n})
      list(APPEND emu_srcs ${out})
    else() # a header of kernels: the rewritten copy is found before the original
      set(out ${emu_dir}/backend/cuda/${n})
      list(APPEND emu_headers ${out})
    endif()
    add_custom_command(OUTPUT ${out} COMMAND sh ${emu_convert} ${f} ${out} DEPENDS ${f} ${emu_convert} VERBATIM)
  endforeach()
  add_custom_target(cuda_emu_headers DEPENDS ${emu_headers})
  add_library(axonn_cuda_emu OBJECT ${emu_srcs} ${CMAKE_SOURCE_DIR}/src/backend/cuda/table.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu/sched.cc ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu/runtime.cc)
  add_dependencies(axonn_cuda_emu cuda_emu_headers)
  target_include_directories(axonn_cuda_emu BEFORE PRIVATE ${emu_dir} ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu/include
                             ${CMAKE_SOURCE_DIR}/src)
  target_compile_definitions(axonn_cuda_emu PRIVATE $<$<COMPILE_LANGUAGE:CXX>:__CUDACC__>)
  # -Wno-sign-compare: the kernels compare the unsigned threadIdx with int counts,
  # device code that no host compiler reads in the real build
  target_compile_options(axonn_cuda_emu PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-std=c++17 -Wall -Wno-unknown-pragmas -Wno-sign-compare>)
  # programs on the emulated device, under their own names in cuda_emu/bin (the
  # GPU check's BIN): the emulated objects come first, so that no CUDA object
  # of libaxonn.a is linked
  set(emu_bin ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu/bin)
  function(ax_emu_exe target name)
    add_executable(${target} ${ARGN} $<TARGET_OBJECTS:axonn_cuda_emu>)
    target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(${target} PRIVATE axonn stdc++)
    # ENABLE_EXPORTS: the emulated runtime's emu_host_work, which nccl_emu.c finds by name
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX OUTPUT_NAME ${name} RUNTIME_OUTPUT_DIRECTORY ${emu_bin}
                          ENABLE_EXPORTS ON)
  endfunction()
  ax_emu_exe(test_backend_cmp_emu test_backend_cmp test_backend_cmp.c)
  ax_emu_exe(test_ring_emu test_ring test_ring.c)
  ax_emu_exe(test_nccl_emu test_nccl test_nccl.c)
  ax_emu_exe(axonn_emu axonn ${AX_CLI_SOURCES})
  # NCCL over MPI (cuda_emu/nccl_emu.c), opened by src/comm/nccl.c through
  # AXONN_NCCL_LIB; with EMU_GPUS=N the ranks of a node drive N emulated GPUs,
  # so that their groups take NCCL rather than host staging
  add_library(nccl_emu SHARED cuda_emu/nccl_emu.c)
  target_include_directories(nccl_emu PRIVATE ${AX_NCCL_INCLUDE})
  target_link_libraries(nccl_emu PRIVATE MPI::MPI_C)
  set_target_properties(nccl_emu PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${emu_bin})
  set(emu_nccl_env "EMU_GPUS=2;AXONN_NCCL_LIB=$<TARGET_FILE:nccl_emu>")
  # every op against the CPU backend, the attention paths on small shapes; the
  # warps of a block in a random order at each barrier (sched.cc), which finds
  # a missing barrier the fixed order can hide
  add_test(NAME backend_cmp_emu COMMAND ${MPIEXEC_EXECUTABLE} ${AX_MPI_FLAGS} ${MPIEXEC_NUMPROC_FLAG} 1
           $<TARGET_FILE:test_backend_cmp_emu> small)
  set_tests_properties(backend_cmp_emu PROPERTIES ENVIRONMENT "${AX_TEST_ENV};EMU_SHUFFLE=1" TIMEOUT 600)
  # training, grids of ranks sharing the device or on NCCL, resume and eval on it, against the CPU
  ax_script_test(cuda_emu_train test_cuda_emu_train.sh $<TARGET_FILE:axonn_emu> $<TARGET_FILE:nccl_emu>)
  # ZeRO-1 (--zero 1) on 2 and 4 ranks, staged and on NCCL, against the CPU's and --zero 0
  ax_script_test(cuda_emu_zero test_cuda_emu_train.sh $<TARGET_FILE:axonn_emu> $<TARGET_FILE:nccl_emu> zero)
  # ring attention's transfers staged through the host, its blocks the CUDA kernels
  ax_test(ring_2_emu test_ring_emu 2 --backend cuda)
  # the device work of one bf16 GPT-2 step, counted by kind, a + b*L within
  # the limits at L = 12 under mm and flash (docs/gpu.md, "Launches per step")
  ax_script_test(cuda_emu_launches test_cuda_emu_launches.sh $<TARGET_FILE:axonn_emu> 519 387)
  # the NCCL layer (src/comm/nccl.c) on 2 ranks with a device each, and on 1
  # rank (no group of the grid has a communicator; one made for the check)
  ax_test(nccl_2_emu test_nccl_emu 2)
  ax_test(nccl_1_emu test_nccl_emu 1)
  get_test_property(nccl_2_emu ENVIRONMENT env)
  set_tests_properties(nccl_2_emu nccl_1_emu PROPERTIES ENVIRONMENT "${env};${emu_nccl_env}")
endif()
