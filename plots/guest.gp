# The real guest against the replay's prediction (bench/exp_guest): resident memory over time,
# and every reported block on a pfn x time plane, hits and misses marked.
#   gnuplot -e "dir='results/guest'; label='memhog-300-3-20'; out='results/plots'" plots/guest.gp
if (!exists("dir")) dir = 'results/guest'
if (!exists("label")) label = 'memhog-300-3-20'
if (!exists("out")) out = 'results/plots'
set datafile separator ','
set terminal pngcairo size 1100,500 noenhanced
set key outside right top

set output out.'/guest_'.label.'_rss.png'
set title 'Guest '.label.': host RSS of QEMU (measured) and the replay (predicted)'
set xlabel 'seconds since the trace started (guest clock)'
set ylabel 'MiB'
plot dir.'/'.label.'_rss.csv' using 1:2 with lines lw 2 title 'measured (QEMU VmRSS)', \
     '' using 1:3 with lines lw 2 dt 2 title 'predicted (replay, resident pages)'

set output out.'/guest_'.label.'_blocks.png'
set title 'Guest '.label.': reported blocks (pfn x time)'
set ylabel 'pfn'
kind(s, k) = (s eq k) ? 1 : 0
plot dir.'/'.label.'_blocks.csv' using 1:(kind(strcol(4), 'hit') ? $2 : 1/0) \
       with points pt 7 ps 0.5 title 'reported and predicted', \
     '' using 1:(kind(strcol(4), 'observed_only') ? $2 : 1/0) \
       with points pt 2 ps 0.8 title 'reported only (missed)', \
     '' using 1:(kind(strcol(4), 'predicted_only') ? $2 : 1/0) \
       with points pt 6 ps 0.8 title 'predicted only'
