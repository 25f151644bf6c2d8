# A compare result (`buddyhint compare --json FILE`) as bars per strategy: resident memory at
# the end, memory reported and the part of it returned (resident memory the reports took
# back), in MiB; and the madvise calls each strategy made, on a scale of its own below.
# Variables: input, a CSV `buddyhint plot` writes from the JSON:
#   strategy,rss_final_mib,reported_mib,returned_mib,madvise_calls
load scripts."/common.gp"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#404040"
set boxwidth 0.9
set xtics nomirror rotate by -20 noenhanced
set yrange [0:*]
set multiplot layout 2,1 title "Per strategy (compare)" noenhanced
set title "Memory (MiB): reported counts memory never written; returned is what was resident" noenhanced
set ylabel "MiB"
set key outside right top box opaque noenhanced
plot input using 2:xtic(1) title "resident at the end" lc rgb "#7f7f7f", \
     '' using 3 title "reported" lc rgb "#56B4E9", \
     '' using 4 title "returned (resident, taken back)" lc rgb "#009E73"
set title "madvise calls (0 in sim backing)" noenhanced
set ylabel "calls"
unset key
plot input using 5:xtic(1) lc rgb "#E69F00"
unset multiplot
