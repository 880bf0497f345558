# bench/latency.gp — exec plugin latency (empirical CDF of every run) for
# kubehsm exec, the exec floor and gke-gcloud-auth-plugin's cached path.
# gnuplot -e "datafile='results/latency.dat'; outfile='latency.png'" latency.gp
set terminal pngcairo size 900,540 font ",10"
set output outfile
set title "exec credential plugin latency (all runs, interleaved rounds)"
set xlabel "latency per invocation (ms, log scale)"
set ylabel "fraction of runs ≤ x"
set logscale x
set grid
set key bottom right
set yrange [0:1]
plot datafile index 0 using 1:2 with steps lw 2 title "floor (one start + one write)", \
     datafile index 1 using 1:2 with steps lw 2 title "kubehsm exec", \
     datafile index 2 using 1:2 with steps lw 2 title "gke-gcloud-auth-plugin (cached)"
