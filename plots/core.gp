# bench_core's micro table as bars: ns per alloc+free pair for every timing case (median,
# p10..p90), buddy and jemalloc side by side.  Input: results/core.csv from bench/bench_core.
# The description column holds quoted commas, which gnuplot does not parse: quoted fields are
# dropped through sed before reading.
load scripts."/common.gp"
src = sprintf("< sed -E 's/\"[^\"]*\"/-/g' '%s' | grep -v '^#' | awk -F, 'NR > 1 && $5 == \"ns/pair\"'", input)
set title sprintf("Allocator core against jemalloc (bench\\_core)\n{/*0.8 median ns per alloc+free pair, p10..p90; %s}", meta(input, "date")) enhanced
set ylabel "time per alloc+free pair (ns, log scale)"
set logscale y
set style fill solid 0.8 border rgb "#404040"
set boxwidth 0.7
set xtics rotate by 35 right noenhanced font ",9"
set bmargin 9
set key top left box opaque
plot src using 0:(strcol(3) eq "buddy" ? $9 : NaN):xtic(2) with boxes lc rgb "#2ca02c" title "libbuddyhint", \
     src using 0:(strcol(3) ne "buddy" ? $9 : NaN) with boxes lc rgb "#9467bd" title "jemalloc", \
     src using 0:9:10:11 with yerrorbars lc rgb "#202020" pt 7 ps 0.3 title "p10..p90"
