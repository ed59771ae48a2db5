# TensorBoard event files without the tensorboard package: CRC-32C check
# values, a record's bytes, trimming at a step (tests/test_tfevents.c)
ax_test(tfevents test_tfevents 1)
# train --tensorboard read back by the tensorboard package against metrics.jsonl:
# 1 rank, a resume from a checkpoint older than the last logged step, 2 ranks
# (SKIP, 77, without the package)
ax_script_test(cli_tensorboard test_cli_tensorboard.sh)
set_tests_properties(cli_tensorboard PROPERTIES SKIP_RETURN_CODE 77)
