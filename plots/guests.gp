# Guests that fit under the host budget per strategy (bars: median over repetitions, error
# bars: min..max).  Input: results/guests.csv from bench/exp_guests.
load scripts."/common.gp"
stats input using 6 nooutput
cap = STATS_max
stats input using 4 nooutput
budget = STATS_max
stats input using 3 nooutput
gsize = STATS_max
set title sprintf("Guests launched without swap: how many fit in a %.0f MiB host\n{/*0.8 guests of %.0f MiB each writing 80 %% and freeing it; launch cap %d; %s}", budget, gsize, cap, meta(input, "date")) enhanced
set ylabel "guests that fit (count)"
set xlabel "strategy in the guests"
set yrange [0:cap + 3]
set ytics 1
set style fill solid 0.75 border rgb "#404040"
set boxwidth 0.6
set key top right box opaque
set arrow 1 from graph 0, first cap to graph 1, first cap nohead dt 2 lc rgb "#555555"
set label 1 "launch cap" at graph 0.99, first cap offset 0,0.6 right tc rgb "#555555"
set label 2 "published: unmodified 2-3 guests, hinting 5-6" at graph 0.01, graph 0.97 left tc rgb "#555555" noenhanced
# newer guests.csv: column 22 estimates the count without the cap, where it was reached
has_est = ncols(input) >= 22
est(i) = has_est && column(13) > 0 ? sprintf("cap reached; about\n%.0f would fit", column(22)) : ""
plot input using 0:8:(kcoli(strcol(1))):xtic(1) with boxes lc rgb variable notitle, \
     '' using 0:($8 + 0.45):(est(0)) with labels font ",9" offset 0,1 tc rgb "#404040" notitle, \
     '' using 0:8:11:12 with yerrorbars lc rgb "#303030" pt 7 ps 0.4 lw 1.5 title "min..max over repetitions", \
     '' using 0:8:(sprintf("%.0f", $8)) with labels offset 0,-1 font ",13" tc rgb "white" notitle
