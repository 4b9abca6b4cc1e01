# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Draws a CSV written by fi_bench -c: latency (left) and bandwidth (right)
# against message size, one line per case, log scales, and under each the
# ratio of every case to the first (the baseline), on a log scale too.
#
#   gnuplot -e "csv='build/bench/node.csv'; png='build/bench/node.png'; name='same node'" tests/bench/plot.gp
#
# Columns: case,size_bytes,latency_us,bandwidth_mbs,latency_ratio,
# bandwidth_ratio,baseline,rounds; the rows of a case are consecutive.
if (!exists("csv")) { print "plot.gp: set csv='file.csv'"; exit status 1 }
if (!exists("png")) { png = csv[1:strlen(csv)-4] . ".png" }
if (!exists("name")) { name = csv }

# The cases in file order, the baseline and the round count.
cases = system("tail -n +2 '" . csv . "' | cut -d, -f1 | uniq | tr '\\n' ' '")
meta = system("sed -n 2p '" . csv . "' | cut -d, -f7,8 | tr , ' '")
if (words(cases) == 0) { print "plot.gp: " . csv . " has no rows"; exit status 1 }
base = word(meta, 1)
rounds = word(meta, 2)

set terminal pngcairo size 1200,760 font "DejaVu Sans,10" noenhanced
set output png
set datafile separator ","
set key top left Left reverse noenhanced opaque
set grid
set logscale x 2
set format x "%.0b%B"
set xtics 1, 8
stats csv skip 1 using 2 nooutput
set xrange [STATS_min / 1.5 : STATS_max * 1.5]

# Consecutive rows of a case: undefined elsewhere, so each line is one case.
pick(c, col) = strcol(1) eq c ? column(col) : NaN

set multiplot title sprintf("%s (medians of %s rounds; ratio to %s)", name, rounds, base)
L = 0.08; M = 0.58; W = 0.39   # left edges and width of the two columns
set lmargin at screen L; set rmargin at screen L + W

# Latency, and its ratio panel.
set tmargin at screen 0.91; set bmargin at screen 0.40
set logscale y 10
set ylabel "one-way latency (us)"
set format x ""; set xlabel ""
plot for [c in cases] csv skip 1 using 2:(pick(c, 3)) with linespoints pt 7 ps 0.6 title c
set tmargin at screen 0.36; set bmargin at screen 0.08
set logscale y 2   # 0.5x and 2x equally far from 1x
stats csv skip 1 using 5 nooutput
set yrange [(STATS_min < 1 ? STATS_min : 1) / 1.3 : (STATS_max > 1 ? STATS_max : 1) * 1.3]
set format y "%.3g"
set ylabel "latency / " . base
set format x "%.0b%B"; set xlabel "message size (bytes)"
set key off
plot for [c in cases] csv skip 1 using 2:(pick(c, 5)) with linespoints pt 7 ps 0.6 title c

# Bandwidth, and its ratio panel.
set lmargin at screen M; set rmargin at screen M + W
set tmargin at screen 0.91; set bmargin at screen 0.40
set logscale y 10
set autoscale y; set format y "%g"
set ylabel "streaming bandwidth (MB/s)"
set format x ""; set xlabel ""
set key top left
plot for [c in cases] csv skip 1 using 2:(pick(c, 4)) with linespoints pt 7 ps 0.6 title c
set tmargin at screen 0.36; set bmargin at screen 0.08
set logscale y 2
stats csv skip 1 using 6 nooutput
set yrange [(STATS_min < 1 ? STATS_min : 1) / 1.3 : (STATS_max > 1 ? STATS_max : 1) * 1.3]
set ylabel "bandwidth / " . base
set format x "%.0b%B"; set xlabel "message size (bytes)"
set key off
plot for [c in cases] csv skip 1 using 2:(pick(c, 6)) with linespoints pt 7 ps 0.6 title c
unset multiplot
