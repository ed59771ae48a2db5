ax_test(plan_model test_plan 1)
ax_test(plan_model_2 test_plan 2)   # the calibration timer across ranks
