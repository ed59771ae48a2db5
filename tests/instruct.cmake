ax_test(instruct test_instruct 1)
