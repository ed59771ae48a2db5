# The GPU check rehearsed without a GPU (scripts/gpu_check.sh, AX_REHEARSE=1):
# its results folder keeps a GPU machine's rules, its steps' limits add up to
# the budget, its CPU halves pass. In the main pass (label gpu_check, not
# quick); SKIP (77) in a build without the cuda backend.
ax_script_test(gpu_check_rehearsal test_gpu_check.sh $<TARGET_FILE_DIR:test_backend_cmp>)
set_tests_properties(gpu_check_rehearsal PROPERTIES LABELS gpu_check SKIP_RETURN_CODE 77)
