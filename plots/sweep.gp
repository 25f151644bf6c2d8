# A sweep (buddyhint plot DIR --x AXIS --y METRIC): a metric against one axis of the grid, one
# line per series with bars from the minimum to the maximum over the runs of each point (the
# seeds).  `buddyhint plot` computes the numbers and sets, before this script:
#   input        a tab-separated file, one block per series (blocks apart by two blank lines):
#                x position, x label, median, min, max, runs
#   n_series, title1..titleN, xlab, ylab, ttl, categorical (1: x labels are names, not numbers),
#   nonneg (1: no value is below 0, so the y axis starts at 0)
load scripts."/common.gp"
set datafile separator "\t"
set title ttl noenhanced
set xlabel xlab noenhanced
set ylabel ylab noenhanced
# the legend under the plot, in as many columns as fit: the plot keeps the width
set key outside bottom center horizontal box opaque noenhanced
set bmargin (exists("n_series") ? 4 + (n_series + 1) / 2 : 4)
if (exists("nonneg") && nonneg) {
  set offsets graph 0.04, graph 0.04, graph 0.06, 0
  set yrange [0:*]
} else {
  set offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06
}
tt(i) = value(sprintf("title%d", i))
# every series its own colour and dash pattern (common.gp)
if (categorical) {
  plot for [i=1:n_series] input index (i-1) using 1:3:4:5:xticlabels(2) with yerrorlines \
       lw 2 dt sdt(i) pt 7 ps 0.8 lc rgb scol(i) title tt(i)
} else {
  plot for [i=1:n_series] input index (i-1) using 1:3:4:5 with yerrorlines \
       lw 2 dt sdt(i) pt 7 ps 0.8 lc rgb scol(i) title tt(i)
}
