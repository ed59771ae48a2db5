# The classifier over chunks of rows against one chunk, and the one-launch
# optimizer against the per-parameter calls (tests/test_head.c): serially, with
# the vocabulary split over Y and the head gradient's blocks over Z, 2 threads.
ax_test(head test_head 1)
ax_test(head_y2z2 test_head 4 --grid 1,1,2,2)
ax_test(head_d2y2 test_head 4 --grid 2,1,2,1)
ax_test_threads(head_x2_t2 test_head 2 2 --grid 1,2,1,1)
