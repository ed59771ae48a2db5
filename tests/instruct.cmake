ax_test(instruct test_instruct 1)
ax_script_test(cli_memorize_ft test_cli_memorize_ft.sh)
