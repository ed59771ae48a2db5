ax_test(plan_model test_plan 1)
