ax_test(safetensors test_safetensors 1)
# Sharded Hugging Face checkpoints (model.safetensors.index.json): each rank
# reads only its byte ranges; f32/bf16/f16 shards; broken indexes (one rank).
ax_test(safetensors_shards test_st_shards 1)
ax_test(safetensors_shards_x2y2 test_st_shards 4 --grid 1,2,2,1)
ax_test(safetensors_shards_d2z2 test_st_shards 4 --grid 2,1,1,2)
