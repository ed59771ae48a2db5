# gnuplot -e "out='memorization.png'; dat='memorization.dat'" plot.gp
# dat: a header of column titles, then step and (exact match, ROUGE-L) per run.
set terminal pngcairo size 900,520 font ",11"
set output out
stats dat skip 1 nooutput
runs = (STATS_columns - 1) / 2
set title "Verbatim memorization of 100 repeated canaries"
set xlabel "training step"
set ylabel "share of canaries / mean ROUGE-L"
set yrange [0:1.05]
set key right center
set grid
plot for [i=1:runs] dat using 1:(column(2*i)) with linespoints lw 2 pt 7 lc i title columnheader(2*i), \
     for [i=1:runs] dat using 1:(column(2*i+1)) with linespoints lw 2 pt 5 dt 2 lc i title columnheader(2*i+1)
