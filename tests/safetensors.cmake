ax_test(safetensors test_safetensors 1)
