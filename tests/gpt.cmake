ax_test(gpt_ref test_gpt_ref 1)
# Llama (grouped-query attention, SwiGLU, rotary with Llama-3 scaling, RMSNorm,
# untied head) against transformers, serial and on grids of every kind.
ax_test(llama_ref test_llama_ref 1)
ax_test(llama_ref_x2y2 test_llama_ref 4 --grid 1,2,2,1)
ax_test(llama_ref_d2z2 test_llama_ref 4 --grid 2,1,1,2)
ax_test(llama_ref_x3y2z2 test_llama_ref 12 --grid 1,3,2,2)
ax_test_threads(llama_ref_y2_t2 test_llama_ref 2 2 --grid 1,1,2,1)
# One key/value head for 4 query heads (tests/ref/llama_ref.py --mqa): replicated
# on the Y shards of Y = 2 and 4, with X and Z splits too.
ax_test(llama_ref_mqa test_llama_ref 1 --grid 1,1,1,1 --fixture llama_mqa)
ax_test(llama_ref_mqa_y4 test_llama_ref 4 --grid 1,1,4,1 --fixture llama_mqa)
ax_test(llama_ref_mqa_x2y2 test_llama_ref 4 --grid 1,2,2,1 --fixture llama_mqa)
ax_test(llama_ref_mqa_y2z2 test_llama_ref 4 --grid 1,1,2,2 --fixture llama_mqa)
