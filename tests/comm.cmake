ax_test(comm_1 test_comm 1)
ax_test(comm_3 test_comm 3)
ax_test(comm_4 test_comm 4)
# NCCL on the grid's groups (label gpu): one rank per GPU; SKIP (77) without one
ax_test(nccl test_nccl 1)
set_tests_properties(nccl PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
