ax_test(plan_model test_plan 1)
ax_test(plan_model_2 test_plan 2)   # the calibration timer across ranks
ax_script_test(plan_zero test_plan_zero.sh)   # ZeRO-1 in plan and --grid auto (2 ranks)
