# axonn plot: the SVG parsed as XML, one curve per run and one point per logged
# step on the axes' map, --x tokens, --log-x, --smooth (bad input: cli_errors)
ax_script_test(cli_plot test_cli_plot.sh)
