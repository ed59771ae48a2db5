ax_test(tokenizer test_tokenizer 1)
