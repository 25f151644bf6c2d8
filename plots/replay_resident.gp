# Resident memory over time from several replay timelines (one per strategy, e.g.
# `buddyhint compare` / `replay --timeline`), with the trace's live memory from the first.
# Variables: n_inputs, input1..inputN, label1..labelN (labels default to the file names).
load scripts."/common.gp"
if (!exists("n_inputs")) n_inputs = 1
if (!exists("input1")) input1 = input
inp(i) = value(sprintf("input%d", i))
lab(i) = exists(sprintf("label%d", i)) ? value(sprintf("label%d", i)) : inp(i)
# colour by a strategy name inside the label when there is one
others = "#ff7f0e #17becf #8c564b #e377c2 #bcbd22 #7f7f7f"
lcol(s, i) = strstrt(s, "bubble") ? kcol("bubble") : strstrt(s, "bitmap") ? kcol("bitmap") : \
          strstrt(s, "jemalloc") ? kcol("jemalloc") : strstrt(s, "none") ? kcol("none") : \
          word(others, (i - 1) % 6 + 1)
set title "Resident memory over time, per strategy (replay timelines)"
set xlabel "time (s, the replay's virtual clock)"
set ylabel "memory (MiB)"
set yrange [0:*]
set key center right box opaque
set autoscale xfix
plot inp(1) using 1:($2/1048576.0) with lines dt 2 lw 2 lc rgb "#555555" title "live (allocated by the trace)", \
     for [i=1:n_inputs] inp(i) using 1:($3/1048576.0) with lines lw 2.5 lc rgb lcol(lab(i), i) title "resident: ".lab(i)
