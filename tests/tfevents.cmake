# TensorBoard event files without the tensorboard package: CRC-32C check
# values, a record's bytes, trimming at a step (tests/test_tfevents.c)
ax_test(tfevents test_tfevents 1)
