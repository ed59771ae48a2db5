ax_script_test(cli_text test_cli_text.sh)
