# An async checkpoint saves the state of its step though the next update
# comes at once (the optimizer's fence; tests/test_ckpt_fence.c).
ax_test(ckpt_fence test_ckpt_fence 1)
ax_test(ckpt_fence_x2y2 test_ckpt_fence 4 --grid 1,2,2,1)
