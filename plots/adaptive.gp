# Adaptive hinting's trade-off, one panel per recorded trace: final resident memory against
# madvise calls (log scale), for adaptive over its age settings (one line per growth, points
# labelled (2, 8, 16, 32, 48) with the age of the largest aging order in seconds: growth 1.1, the default, and
# growth 2, an age inverse to the block's size), adaptive with its defaults,
# bubble at reporting orders 9, 6 and 3, bitmap, and jemalloc at decay 0, 1000 and 10000 ms.
# The dashed line is the memory the trace still holds at the end (no strategy can go below
# it).  Runs that made no madvise call are drawn at 0.5.  Input: results/adaptive.csv from
# bench/exp_adaptive.
if (!exists("width")) width = 1500
if (!exists("height")) height = 900
load scripts."/common.gp"
traces = distinct(input, 1)
n = words(traces)
cols = n < 3 ? n : 3
rows = int((n + cols - 1) / cols)
x(c) = c < 1 ? 0.5 : c
sel(t, cond) = sprintf("< grep -v '^#' '%s' | tail -n +2 | awk -F, 'function lab(a) { return a == 2 || a == 8 || a == 16 || a == 32 || a == 48 } $1 == \"%s\" && (%s)' | sort -t, -k11,11g", input, t, cond)
set logscale x
set xlabel "madvise calls (log scale; 0 calls drawn at 0.5)" font ",9"
set ylabel "final resident memory (MiB)" font ",9"
set yrange [0:*]
set tics font ",8"
# panels below a band for the title and the key, placed by hand so that one key can span
# the width of the figure (a panel's key is no wider than the panel)
top = 0.86
pw = 1.0 / cols
ph = top / rows
set multiplot title sprintf("Adaptive hinting: final resident memory against madvise calls per recorded trace (mmap backing, 60 s idle)\n{/*0.8 %s; %s}", meta(input, "date"), meta(input, "machine")) enhanced
set key off
do for [i = 1:n] {
  t = word(traces, i)
  set origin pw * ((i - 1) % cols), top - ph * (int((i - 1) / cols) + 1)
  set size pw, ph
  set title t font ",10" noenhanced
  stats sel(t, "1") using (x($11)) nooutput
  set xrange [0.3:STATS_max * 3]
  plot sel(t, "$3 == \"ref\" && $2 ~ /^bubble/") using (x($11)):7 with linespoints dt 2 pt 7 ps 1.1 lc rgb kcol("bubble") notitle, \
       sel(t, "$3 == \"ref\" && $2 ~ /^bubble/") using (x($11)):7:(strcol(2) eq "bubble" ? "9" : substr(strcol(2), 14, 14)) with labels offset char 0.9, char 0.6 font ",8" tc rgb kcol("bubble") notitle, \
       sel(t, "$2 == \"bitmap\"") using (x($11)):7 with points pt 5 ps 1.2 lc rgb kcol("bitmap") notitle, \
       sel(t, "$3 == \"jemalloc\"") using (x($11)):7 with linespoints dt 3 pt 9 ps 1.2 lc rgb kcol("jemalloc") notitle, \
       sel(t, "$3 == \"sweep\" && $5 == \"1.1\"") using (x($11)):7 with linespoints pt 6 ps 0.9 lw 1.5 lc rgb "#ff7f0e" notitle, \
       sel(t, "$3 == \"sweep\" && $5 == \"1.1\" && lab($4)") using (x($11)):7:4 with labels offset char -0.9, char -0.6 font ",7" tc rgb "#ff7f0e" notitle, \
       sel(t, "$3 == \"sweep\" && $5 == \"2\"") using (x($11)):7 with linespoints pt 4 ps 0.8 lw 1.5 lc rgb "#8c564b" notitle, \
       sel(t, "$3 == \"sweep\" && $5 == \"2\" && lab($4)") using (x($11)):7:4 with labels offset char 0.9, char 0.5 font ",7" tc rgb "#8c564b" notitle, \
       sel(t, "$2 == \"adaptive\"") using (x($11)):7 with points pt 3 ps 2.2 lw 2 lc rgb "#d62728" notitle, \
       sel(t, "$2 == \"none\"") using (0.3):9:(1e9):(0) with vectors nohead dt 2 lc rgb "#555555" notitle
}
# the key: an empty plot across the band under the title
set origin 0, top
set size 1, 0.995 - top - 0.045
unset title
unset border
unset tics
unset xlabel
unset ylabel
unset grid
unset logscale x
set xrange [0:1]
set yrange [0:1]
set key center center horizontal maxcols 4 font ",9" samplen 2.5 box opaque
plot NaN with linespoints dt 2 pt 7 lc rgb kcol("bubble") title "bubble at order 9, 6, 3", \
     NaN with points pt 5 ps 1.2 lc rgb kcol("bitmap") title "bitmap", \
     NaN with linespoints dt 3 pt 9 lc rgb kcol("jemalloc") title "jemalloc, decay 0 / 1000 / 10000 ms", \
     NaN with linespoints pt 6 lw 1.5 lc rgb "#ff7f0e" title "adaptive, growth 1.1 (default), labels: age (s)", \
     NaN with linespoints pt 4 lw 1.5 lc rgb "#8c564b" title "adaptive, growth 2 (age inverse to size)", \
     NaN with points pt 3 ps 2 lw 2 lc rgb "#d62728" title "adaptive (defaults: age 32 s, growth 1.1)", \
     NaN with lines dt 2 lc rgb "#555555" title "live at the end"
unset multiplot
