# page_fault1-shaped throughput against threads, median with p10..p90 error bars, one line per
# strategy; one panel per variant (order-0 pages, order-9 THP blocks).
# Input: results/pagefault1.csv from bench/exp_pagefault1.
load scripts."/common.gp"
strats = distinct(input, 4)
variants = distinct(input, 1)
nv = words(variants)
stats input using 3 nooutput
maxt = STATS_max
n = words(strats)
off(i) = (i - (n + 1) / 2.0) * 0.05
set multiplot layout 1, nv title sprintf("page\\_fault1 shape: throughput against threads (median, p10..p90)\n{/*0.8 %s; load %s}", meta(input, "date"), meta(input, "loadavg")) enhanced
set xlabel "threads"
set ylabel "throughput (million 4 KiB pages/s)"
set xrange [0.5:maxt + 0.5]
set xtics 1
set yrange [0:*]
set key bottom left box opaque font ",9" samplen 2
vtitle(v) = v eq "order0" ? "order-0 blocks (4 KiB pages)" : v eq "order9-thp" ? "order-9 blocks (2 MiB, THP)" : v
stitle(s) = s eq "none2" ? "none2 (A/A control)" : s
# the rows of one variant and strategy, so that a line joins its points across threads
rows(v, s) = sprintf("< grep -v '^#' '%s' | awk -F, '$1 == \"%s\" && $4 == \"%s\"'", input, v, s)
do for [v=1:nv] {
  set title vtitle(word(variants, v)) noenhanced
  plot for [i=1:n] rows(word(variants, v), word(strats, i)) using ($3 + off(i)):($7/1e6):($8/1e6):($9/1e6) \
       with yerrorlines lw 2 pt 7 ps 0.8 lc rgb kcol(word(strats, i)) title stitle(word(strats, i))
}
unset multiplot
