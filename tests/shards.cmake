ax_test(shards test_shards 1)
