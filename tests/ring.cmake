# Ring attention (context parallelism) against the unsplit attention: the
# block kernels on one rank, the ring on C = 1 .. 4 ranks, 1 and 2 threads per rank.
foreach(np 1 2 3 4)
  ax_test(ring_${np} test_ring ${np})
endforeach()
foreach(np 2 3)
  ax_test_threads(ring_${np}_t2 test_ring ${np} 2)
endforeach()
ax_test_threads(ring_1_t2 test_ring 1 2)
