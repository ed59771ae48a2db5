ax_test(gpt_ref test_gpt_ref 1)
