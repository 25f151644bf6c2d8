# Free memory per order over time, as a heat map, from a replay timeline
# (`buddyhint replay TRACE --timeline FILE`: time_s,live_bytes,resident_bytes,
# discarded_bytes,free_pages,free_o0..free_oN, where free_oK counts free blocks of order K).
# Colour: MiB of free memory held in blocks of that order (log scale; white = none).
load scripts."/common.gp"
nc = ncols(input)
maxo = nc - 6
every_s = 1
if (1) { stats input every ::0::1 using 1 nooutput; if (STATS_records > 1) { every_s = STATS_max - STATS_min } }
stats input using 1 nooutput
dt = STATS_records > 1 ? (STATS_max - STATS_min) / (STATS_records - 1) : 1
if (!exists("label")) label = input
set title sprintf("Free memory per order over time\n%s", label) noenhanced
# one column per timeline sample: a workload shorter than that is one column; replay
# --sample S takes finer samples (the replay's idle time after the trace is sampled too)
set xlabel sprintf("time (s, the replay's virtual clock; one sample every %g s: replay --sample for finer)", every_s) noenhanced
set ylabel "order (block = 2^{order} pages of 4 KiB)"
set cblabel "free memory in blocks of this order (MiB, log scale; white: none)"
# Each cell overlaps its neighbours by about a pixel: cells that only touch show the background
# through the anti-aliased seam between them, as thin white lines.  The ranges hold the cells
# whole, as gnuplot leaves a cell that sticks out of them out of the colour scale.
ox = (STATS_max - STATS_min + dt) / width
oy = (maxo + 1.0) / height
set yrange [-0.5 - oy:maxo + 0.5 + oy]
set ytics 1
set xrange [STATS_min - dt/2 - ox:STATS_max + dt/2 + ox]
set logscale cb
set palette defined (0 "#fff7bc", 1 "#fec44f", 2 "#d95f0e", 3 "#993404", 4 "#3f007d")
set grid noxtics noytics
unset key
mib(k) = column(6 + k) * 2**k / 256.0
plot for [k=0:maxo] input using 1:(k):(dt/2 + ox):(0.5 + oy):(mib(k) > 0 ? mib(k) : NaN) \
     with boxxyerror fs solid 1.0 noborder lc palette
