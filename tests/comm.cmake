ax_test(comm_1 test_comm 1)
ax_test(comm_3 test_comm 3)
ax_test(comm_4 test_comm 4)
