# Every ordered factorisation of P into (D, X, Y, Z) against the serial run.
foreach(np 1 2 4 8 6 12)
  ax_test(grid_equiv_${np} test_grid_equiv ${np})
endforeach()
# The same with 2 OpenMP/BLAS threads per rank (threaded kernels and GEMMs inside each rank).
foreach(np 2 4)
  ax_test_threads(grid_equiv_${np}_t2 test_grid_equiv ${np} 2)
endforeach()
# The PyTorch fixture on grids of every kind (the fixture's batch of 4 limits D*Z).
ax_test(gpt_ref_d2z2 test_gpt_ref 4 --grid 2,1,1,2)
ax_test(gpt_ref_x2y2 test_gpt_ref 4 --grid 1,2,2,1)
ax_test(gpt_ref_x3y4 test_gpt_ref 12 --grid 1,3,4,1)
ax_test_threads(gpt_ref_x2y2_t2 test_gpt_ref 4 2 --grid 1,2,2,1)
# Mixed precision (bf16 GEMM inputs) on every grid of 4 and 6 ranks, 1 and 2 threads.
ax_test(grid_equiv_4_bf16 test_grid_equiv 4 --dtype bf16)
ax_test(grid_equiv_6_bf16 test_grid_equiv 6 --dtype bf16)
ax_test_threads(grid_equiv_2_t2_bf16 test_grid_equiv 2 2 --dtype bf16)
# The Llama kind (tests/test_grid_equiv.c: --arch llama) on every grid of 4, 6 and 12 ranks, and in bf16.
ax_test(grid_equiv_4_llama test_grid_equiv 4 --arch llama)
ax_test(grid_equiv_6_llama test_grid_equiv 6 --arch llama)
ax_test(grid_equiv_12_llama test_grid_equiv 12 --arch llama)
ax_test_threads(grid_equiv_4_t2_llama test_grid_equiv 4 2 --arch llama)
ax_test(grid_equiv_4_llama_bf16 test_grid_equiv 4 --arch llama --dtype bf16)
# Two key/value heads for 24 query heads: replicated over Y on G_y = 4 and 8
# (and 6), split on G_y = 2.
ax_test(grid_equiv_4_llama_kv2 test_grid_equiv 4 --arch llama --kv 2)
ax_test(grid_equiv_8_llama_kv2 test_grid_equiv 8 --arch llama --kv 2)
ax_test(grid_equiv_6_llama_kv2 test_grid_equiv 6 --arch llama --kv 2)
# Context parallelism (tests/test_grid_equiv.c: --cp): every 5D grid with C >= 2 against the
# serial run. 2 and 4 ranks (C = 2, 4 beside every other split), 6 ranks with T = 12
# (C = 2, 3, 6), the Llama kind with two key/value heads on 8 ranks (C with Y > 1 and
# grouped-query heads, with Z > 1, with D > 1), GPT-2 and Llama in bf16, and 2 threads
# per rank (4 ranks, and 6 with the Llama kind).
ax_test(grid_equiv_2_cp test_grid_equiv 2 --cp)
ax_test(grid_equiv_4_cp test_grid_equiv 4 --cp)
ax_test(grid_equiv_6_cp test_grid_equiv 6 --cp --seq 12)
ax_test(grid_equiv_8_cp_llama_kv2 test_grid_equiv 8 --cp --arch llama --kv 2)
ax_test(grid_equiv_4_cp_bf16 test_grid_equiv 4 --cp --dtype bf16)
ax_test(grid_equiv_4_cp_llama_bf16 test_grid_equiv 4 --cp --arch llama --dtype bf16)
ax_test_threads(grid_equiv_4_cp_t2 test_grid_equiv 4 2 --cp)
ax_test_threads(grid_equiv_6_cp_t2_llama test_grid_equiv 6 2 --cp --seq 12 --arch llama)
# ZeRO-1 (tests/test_grid_equiv.c: --zero): every grid with D x C > 1 against the serial
# run and against the same grid without ZeRO-1, both recompute modes; GPT-2 and Llama,
# fp32 and bf16, with C, with 2 threads per rank. --embd 45 --heads 5: sizes that leave
# bucket ranges of a length P does not divide (the tails every rank updates).
foreach(np 2 4 8)
  ax_test(grid_equiv_${np}_zero test_grid_equiv ${np} --zero)
endforeach()
ax_test(grid_equiv_4_zero_tails test_grid_equiv 4 --zero --embd 45 --heads 5)
ax_test(grid_equiv_8_zero_tails test_grid_equiv 8 --zero --embd 45 --heads 5)
ax_test(grid_equiv_4_zero_bf16 test_grid_equiv 4 --zero --dtype bf16)
ax_test(grid_equiv_8_zero_llama_kv2 test_grid_equiv 8 --zero --arch llama --kv 2)
ax_test(grid_equiv_4_zero_cp test_grid_equiv 4 --zero --cp)
ax_test(grid_equiv_4_zero_cp_llama_bf16 test_grid_equiv 4 --zero --cp --arch llama --dtype bf16)
ax_test_threads(grid_equiv_4_t2_zero test_grid_equiv 4 2 --zero)
