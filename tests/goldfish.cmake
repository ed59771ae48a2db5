ax_test(goldfish test_goldfish 1)
