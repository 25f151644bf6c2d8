# The counterfactual (bench/exp_counterfactual): memory returned to the host since the
# "free 1" marker, measured in the reporting-on runs against the prediction from the
# reporting-off recording, one panel per workload (works: those of the run, blank-separated).
#   gnuplot -e "dir='results/counterfactual'" plots/counterfactual.gp
if (!exists("dir")) dir = 'results/counterfactual'
if (!exists("works")) works = "memhog fork malloc tmpfs"
n = words(works)
set datafile separator ','
set terminal pngcairo size 1200,800 noenhanced
set output dir.'/counterfactual.png'
set multiplot layout (n + 1) / 2, (n > 1 ? 2 : 1) title 'Reporting off predicts reporting on: MiB returned since the first free marker'
set key left top font ",9"
set xlabel 'seconds since the "free 1" marker'
set ylabel 'MiB'
f = dir.'/cumulative.csv'
sel(w, c, s) = (strcol(1) eq w && strcol(2) eq c && strcol(3) eq s) ? $5 : 1/0
do for [w in works] {
  set title w
  plot f using 4:(sel(w, 'off->on9', 'host')) with lines lw 2 lc rgb '#1f77b4' title 'host, on at order 9', \
       f using 4:(sel(w, 'off->on9', 'predicted')) with lines lw 2 dt 2 lc rgb '#1f77b4' title 'predicted from off, order 9', \
       f using 4:(sel(w, 'off->on5', 'host')) with lines lw 2 lc rgb '#d62728' title 'host, on at order 5', \
       f using 4:(sel(w, 'off->on5', 'predicted')) with lines lw 2 dt 2 lc rgb '#d62728' title 'predicted from off, order 5'
}
unset multiplot
