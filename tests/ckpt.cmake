# CRC-32C and CRC-64 check values, and the algebra that assembles a CRC-64 from pieces of many ranks
ax_test(crc test_crc 1)
# An async checkpoint saves the state of its step though the next update
# comes at once (the optimizer's fence; tests/test_ckpt_fence.c).
ax_test(ckpt_fence test_ckpt_fence 1)
ax_test(ckpt_fence_x2y2 test_ckpt_fence 4 --grid 1,2,2,1)
# Each rank verifies and reads only its part of a checkpoint; a flipped bit
# only one rank reads still stops every rank (tests/test_ckpt_read.c).
ax_test(ckpt_read_x2y2 test_ckpt_read 4 --grid 1,2,2,1)
ax_test(ckpt_read_d2z2 test_ckpt_read 4 --grid 2,1,1,2)
# The writer's partition is checked exactly before anything is written: forged
# overlaps and gaps are refused on every rank (tests/test_ckpt_share.c).
ax_test(ckpt_share_1 test_ckpt_share 1)
ax_test(ckpt_share_x2y2 test_ckpt_share 4 --grid 1,2,2,1)
ax_test(ckpt_share_d2z2 test_ckpt_share 4 --grid 2,1,1,2)
