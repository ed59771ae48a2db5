ax_test(decode test_decode 1)
ax_test(decode_x2y2 test_decode 4 --grid 1,2,2,1)
ax_test(decode_z2y2 test_decode 4 --grid 1,1,2,2)
