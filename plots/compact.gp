# >0 order folio compaction (Zi Yan, Linux 6.9): per folio mix, three bars for no compaction,
# compaction of order-0 pages only (before 6.9) and compaction that moves larger blocks whole
# (6.9+), median over the seeds with p10..p90 error bars.  Left: order-9 blocks obtainable
# after compaction, % of the free memory; middle: the workload's throughput after compaction
# (2 MiB steps, an order-9 block or 512 order-0 pages, a byte written per page), labelled with
# the paired change against order-0-only compaction; right: the compaction's wall time,
# labelled with the MiB/s it moved.  "large" in a tic label: the share of the movable pages
# in folios above order 0.  Input: results/compact.csv from bench/exp_compact.
if (!exists("width")) width = 1400
if (!exists("height")) height = 560
load scripts."/common.gp"
set datafile columnheaders # the header line is not a row: $0 counts the data rows from 0
stats input using 4 nooutput
arena = STATS_max
stats input using 3 nooutput
reps = STATS_max
stats input using 0 nooutput
ngroups = int(STATS_records / 3)
# rows come as none, order0, large for each mix
mx(row) = int(row / 3) + (int(row) % 3 - 1) * 0.27
mcol(m) = m eq "none" ? 0x9a9a9a : m eq "order0" ? 0x1f77b4 : 0x2ca02c
bw = 0.25
set style fill solid 0.85 border rgb "#404040"
set xrange [-0.6:ngroups - 0.4]
set xtics scale 0 font ",10"
set bmargin 4
set grid noxtics
set key top left horizontal maxrows 1 box opaque font ",9" samplen 1.5 width -1
set multiplot layout 1, 3 title sprintf("Compaction with large blocks moved whole (Linux 6.9+) vs order-0 pages only\n{/*0.8 %.0f MiB mmap arenas, %d seeds per bar: median, p10..p90; %s; %s}", arena, reps, meta(input, "date"), meta(input, "cpu")) enhanced
xt(mix, share) = sprintf("%s\n(%.0f %% large)", mix, share)

set title "order-9 blocks obtainable after compaction (label: count)"
set ylabel "% of the free memory"
set yrange [0:135]
set ytics 0, 20, 100
plot input using (mx($0)):9:(bw):(mcol(strcol(2))) with boxes lc rgb variable notitle, \
     '' using (mx($0)):(1/0):(bw) with boxes lc rgb "#9a9a9a" title "no compaction", \
     '' using (mx($0)):(1/0):(bw) with boxes lc rgb "#1f77b4" title "order 0 only (< 6.9)", \
     '' using (mx($0)):(1/0):(bw) with boxes lc rgb "#2ca02c" title "large blocks whole (6.9+)", \
     '' using (mx($0)):10:(0):($11 - $10) with vectors heads size 0.05,90 lc rgb "#303030" lw 1.2 notitle, \
     '' using (mx($0)):($11 + 4):(sprintf("%.0f", $6)) with labels font ",8" tc rgb "#202020" notitle, \
     '' every 3 using (int($0)):(1/0):xtic(xt(strcol(1), $5)) notitle

set title "workload after compaction (2 MiB steps: THP, else 512 pages)"
set ylabel "million 4 KiB pages/s"
set yrange [0:*]
set ytics autofreq
set key off
set label 1 "published (vm-scalability, 6.9 vs before):\nmostly unchanged, some +16 % to +78 %" at graph 0.02, graph 0.97 left font ",8" tc rgb "#505050" front
set autoscale y # stats honours the current yrange
stats input using ($14 / 1e6) nooutput
ymax = STATS_max * 1.3
set yrange [0:ymax]
plot input using (mx($0)):($12 / 1e6):(bw):(mcol(strcol(2))) with boxes lc rgb variable notitle, \
     '' using (mx($0)):($13 / 1e6):(0):(($14 - $13) / 1e6) with vectors heads size 0.05,90 lc rgb "#303030" lw 1.2 notitle, \
     '' using (mx($0)):($14 / 1e6 + ymax * 0.035):(strcol(2) eq "order0" ? "" : sprintf("%+.0f%%", $16)) with labels font ",8" tc rgb "#202020" notitle, \
     '' every 3 using (int($0)):(1/0):xtic(xt(strcol(1), $5)) notitle

unset label 1
set title "compaction time (label: migrated MiB/s)"
set ylabel "ms (wall)"
set autoscale y
stats input using 21 nooutput
ymax = STATS_max * 1.18
set yrange [0:ymax]
plot input using (mx($0)):(strcol(2) eq "none" ? 1/0 : $19):(bw):(mcol(strcol(2))) with boxes lc rgb variable notitle, \
     '' using (mx($0)):(strcol(2) eq "none" ? 1/0 : $20):(0):($21 - $20) with vectors heads size 0.05,90 lc rgb "#303030" lw 1.2 notitle, \
     '' using (mx($0)):($21 + ymax * 0.035):(strcol(2) eq "none" ? "" : sprintf("%.0f", $26)) with labels font ",8" tc rgb "#202020" notitle, \
     '' every 3 using (int($0)):(1/0):xtic(xt(strcol(1), $5)) notitle
unset multiplot
