# Resident memory over time from several replay timelines (one per strategy, e.g.
# `replay --timeline`), or from one `compare --timeline` file (its first column names the run),
# with the trace's live memory from the first.
# Variables: n_inputs, input1..inputN, label1..labelN (labels default to the file names);
# or long=1 and input: the runs of a compare timeline, in the order of the file.
# The samples are drawn as steps: each value holds until the next sample, as measured, where
# straight lines between samples would draw ramps and peaks that were never sampled (the
# steps are drawn as lines through stepped(), so that dash patterns stay visible).
load scripts."/common.gp"
if (!exists("long")) long = 0
if (!exists("n_inputs")) n_inputs = 1
if (!exists("input1")) input1 = input
if (long) { runs = distinct(input, 1); n_inputs = words(runs) }
raw(i) = long ? input : value(sprintf("input%d", i))
inp(i) = stepped(raw(i), long)
lab(i) = long ? word(runs, i) : exists(sprintf("label%d", i)) ? value(sprintf("label%d", i)) : raw(i)
# the columns of time, live and resident memory (a compare timeline has "run" first)
ct = long + 1
cl = long + 2
cr = long + 3
pick(i, c) = long ? (strcol(1) eq word(runs, i) ? column(c) / 1048576.0 : NaN) : column(c) / 1048576.0
set title "Resident memory over time, per strategy (replay timelines, sampled)" noenhanced
set xlabel "time (s, the replay's virtual clock)"
set ylabel "memory (MiB)"
set yrange [0:*]
# the key sits in head room above the highest sample, where no line runs
set key top right box opaque noenhanced
set offsets 0, 0, graph 0.45, 0
set autoscale xfix
plot inp(1) using ct:(pick(1, cl)) with lines dt (4, 3) lw 1.8 lc rgb "#777777" title "live (allocated by the trace)", \
     for [i=1:n_inputs] inp(i) using ct:(pick(i, cr)) with lines lw 2.5 dt sdt(i) lc rgb scol(i) title "resident: ".lab(i)
