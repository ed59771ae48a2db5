ax_test(ops_fd test_ops_fd 1)
