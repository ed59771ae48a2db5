# gnuplot -e "out='memorization.png'; dat='memorization.dat'" plot.gp
set terminal pngcairo size 900,520 font ",11"
set output out
set title "Verbatim memorization of 100 repeated canaries"
set xlabel "training step"
set ylabel "share of canaries / mean ROUGE-L"
set yrange [0:1.05]
set key left top
set grid
plot dat using 1:2 with linespoints lw 2 pt 7 title "standard: exact match", \
     dat using 1:3 with linespoints lw 2 pt 5 dt 2 title "standard: ROUGE-L", \
     dat using 1:4 with linespoints lw 2 pt 7 title "goldfish k=4: exact match", \
     dat using 1:5 with linespoints lw 2 pt 5 dt 2 title "goldfish k=4: ROUGE-L"
