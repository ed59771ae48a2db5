# A device backend's memory rules kept without a device: the CPU kernels
# behind a guard that faults on host access (tests/test_devmem.c), bitwise
# equal to the plain CPU run on every grid.
ax_test(devmem_1 test_devmem 1)
ax_test(devmem_4 test_devmem 4)
ax_test(devmem_4_llama_bf16 test_devmem 4 --llama --bf16)
ax_test_threads(devmem_2_t2 test_devmem 2 2)
foreach(t devmem_1 devmem_4 devmem_4_llama_bf16 devmem_2_t2)
  get_test_property(${t} ENVIRONMENT env)
  # single-copy transfers read a peer's pages from the peer's MPI calls, past its guard
  set_tests_properties(${t} PROPERTIES ENVIRONMENT "${env};OMPI_MCA_btl_vader_single_copy_mechanism=none")
endforeach()
