ax_test(tokenizer test_tokenizer 1)
ax_test(tokenizer_hf test_tokenizer_hf 1)
