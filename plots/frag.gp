# Huge pages (order 9) obtained after a fragmentation stress, grouping by mobility on and off,
# per kernel share of the stress (bars: median over the seeds, % of the arena; error bars:
# p10..p90; open circles: % of the memory the kernel blocks left unpinned), with Mel Gorman's
# published figures behind.  Input: results/frag.csv from bench/exp_frag.
load scripts."/common.gp"
set datafile columnheaders # the header line is not a row: $0 counts the data rows from 0
stats input using 4 nooutput
arena = STATS_max
stats input using 3 nooutput
reps = STATS_max
stats input using 0 nooutput
ngroups = int(STATS_records / 2)
set title sprintf("Huge pages after a fragmentation stress: grouping pages by mobility on and off\n{/*0.8 %.0f MiB sim arena, frag-stress traces, %d seeds per bar: median, p10..p90; %s}", arena, reps, meta(input, "date")) enhanced
set ylabel "memory allocatable as huge pages (% of the arena)"
set bmargin 5
set xlabel offset 0,-0.6 "kernel share of the stress's allocations (kernel memory still pinned when the script runs)"
set yrange [0:128]
set ytics 0, 10, 100
set xrange [-0.6:ngroups - 0.4]
set style fill solid 0.8 border rgb "#404040"
set key top left horizontal maxrows 3 box opaque font ",10" width -2
# grouping on left of each pair, off right (rows come in that order, one pair per kernel share)
gx(row, g) = int(row / 2) + (g eq "on" ? -0.2 : 0.2)
gcol(g) = g eq "on" ? 0x2ca02c : 0xd62728
# the published figures: ~80 % with grouping, 8-12 % for the standard allocator
set object 1 rect from graph 0, first 8 to graph 1, first 12 fc rgb "#f4d4d4" fs solid 1.0 noborder behind
set arrow 1 from graph 0, first 80 to graph 1, first 80 nohead dt 2 lw 1.5 lc rgb "#2ca02c" back
set xtics scale 0
plot input using (gx($0, strcol(2))):14:(0.38):(gcol(strcol(2))) with boxes lc rgb variable notitle, \
     '' using (gx($0, strcol(2))):(1/0):(0.38) with boxes lc rgb "#2ca02c" title "grouping on", \
     '' using (gx($0, strcol(2))):(1/0):(0.38) with boxes lc rgb "#d62728" title "grouping off", \
     '' using (gx($0, strcol(2))):14:15:16 with yerrorbars lc rgb "#303030" pt -1 lw 1.5 title "p10..p90 over seeds", \
     '' using (gx($0, strcol(2))):19 with points pt 6 ps 1.1 lc rgb "#303030" title "% of the memory not pinned by kernel blocks", \
     '' using (gx($0, strcol(2))):(($16 > $19 ? $16 : $19) + 3.5):(sprintf("%.1f", $14)) with labels font ",9" tc rgb "#202020" notitle, \
     NaN with lines dt 2 lw 1.5 lc rgb "#2ca02c" title "published with grouping: ~80 %", \
     NaN with boxes fc rgb "#f4d4d4" fs solid 1.0 noborder title "published, standard allocator: 8-12 %", \
     '' every 2 using ($0):(1/0):xtic(sprintf("%s\n(%.0f MiB pinned)", strcol(1), $7)) notitle
