# Overlapped communication gives the results of none, bit for bit, on every grid of 2, 4 and 8 ranks.
foreach(np 2 4 8)
  ax_test(overlap_${np} test_overlap ${np})
endforeach()
ax_test_threads(overlap_4_t2 test_overlap 4 2)
ax_test(overlap_4_llama test_overlap 4 --llama)
# Context parallelism (--cp): every grid of 4 ranks with C >= 2 (C = 2 beside D, X, Y or Z; C = 4).
ax_test(overlap_4_cp test_overlap 4 --cp)
