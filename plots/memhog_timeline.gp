# Host resident memory over time while three guests run memhog one after another
# (results/memhog_timeline.csv from bench/exp_memhog), one line per strategy.
#   gnuplot -e "input='results/memhog_timeline.csv'; output='x.png'; fmt='png'; scripts='plots'" \
#           plots/memhog_timeline.gp
# Optional: rep=N (which repetition to draw, default 1).
load scripts."/common.gp"
if (!exists("rep")) rep = 1
kinds = distinct(input, 2)
stats input using 9 nooutput
budget = STATS_max
set title sprintf("Host resident memory (sum of the guests' Rss) while three guests run memhog one after another\nrepetition %d; %s; load %s", rep, meta(input, "date"), meta(input, "loadavg")) noenhanced
set xlabel "time since the guests started (s)"
set ylabel "host resident memory (MiB)"
set key center left box opaque
set yrange [0:*]
set autoscale xfix
set arrow 1 from graph 0, first budget to graph 1, first budget nohead dt 2 lw 1.5 lc rgb "#555555"
set label 1 sprintf("host budget %.0f MiB", budget) at graph 0.99, first budget offset 0,0.7 right tc rgb "#555555"
# where each memhog starts (the first sample of its phase, for the first strategy)
starts = system(sprintf("grep -v '^#' '%s' | awk -F, 'NR > 1 && $1 == %d && $2 == \"%s\" && $8 != p { p = $8; if ($8 >= 1 && $8 <= 3) printf \"%%s \", $3 }'", input, rep, word(kinds, 1)))
do for [g=1:words(starts)] {
  x = real(word(starts, g))
  set arrow 10 + g from first x, graph 0 to first x, graph 1 nohead dt 3 lc rgb "#888888"
  set label 10 + g sprintf("memhog in guest %d", g) at first x, graph 0.97 offset 0.5,0 left tc rgb "#555555" font ",9"
}
# one strategy's samples of the repetition, whatever the order of the rows, each but the
# first preceded by the previous sample's values at its time: drawn "with lines", they are
# steps (each sample holds until the next) whose dash pattern stays visible (see stepped())
sel(k) = sprintf("< grep -v '^#' '%s' | tail -n +2 | awk -F, -v OFS=, '$1 == %d && $2 == \"%s\" \
  { if (p != \"\") { n = split(p, a, \",\"); a[3] = $3; l = a[1]; for (j = 2; j <= n; j++) l = l \",\" a[j]; \
    print l } print; p = $0 }'", input, rep, k)
plot for [i=1:words(kinds)] sel(word(kinds, i)) using 3:4 \
     with lines lw 2.5 dt sdt(i) lc rgb kcol(word(kinds, i)) title word(kinds, i)
