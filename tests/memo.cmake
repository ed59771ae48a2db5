ax_test(memo_audit test_memo_audit 1)
ax_test(memo_audit_y2 test_memo_audit 2 --grid 1,1,2,1)
