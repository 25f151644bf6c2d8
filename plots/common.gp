# common.gp: terminal, data format and colours shared by every plot script here.
#
# The caller (plots/run-all, `buddyhint plot`) sets, with gnuplot -e:
#   output  the file to write
#   fmt     "png" (pngcairo if this gnuplot has it, else the libgd png terminal), "svg" or
#           "pdf" (pdfcairo: vector, 7 x 4.2 in, the width of a two-column paper's figure*)
#   scripts the folder of these scripts (to load this file)
# and the script's own inputs (input, or n_inputs/input1../label1..).
if (!exists("fmt")) fmt = "png"
if (!exists("width")) width = 1000
if (!exists("height")) height = 600
if (fmt eq "svg") {
  set terminal svg size width,height dynamic enhanced font "Sans,12" background rgb "white"
} else { if (fmt eq "pdf") {
  set terminal pdfcairo size 7in,(7.0 * height / width)in enhanced font "Sans,8" background rgb "white"
} else {
  if (strstrt(GPVAL_TERMINALS, " pngcairo ") > 0) {
    set terminal pngcairo size width,height enhanced font "Sans,11" background rgb "white"
  } else {
    set terminal png size width,height enhanced font "Sans,11" background rgb "white"
  }
} }
set output output

# bench/ CSV files: '#' lines describe the machine, then a header line, then rows.
set datafile separator comma
set datafile commentschars "#"
set key noenhanced
set grid xtics ytics lc rgb "#e0e0e0" lw 1
set border 3 lc rgb "#404040"
set tics nomirror

# One colour per strategy, the same in every plot.
kcol(k) = k eq "none" ? "#d62728" : k eq "bitmap" ? "#1f77b4" : k eq "bubble" ? "#2ca02c" : \
          k eq "jemalloc" ? "#9467bd" : k eq "none2" ? "#ff9896" : "#7f7f7f"

# The same as integers, for "lc rgb variable".
kcoli(k) = k eq "none" ? 0xd62728 : k eq "bitmap" ? 0x1f77b4 : k eq "bubble" ? 0x2ca02c : \
           k eq "jemalloc" ? 0x9467bd : k eq "none2" ? 0xff9896 : 0x7f7f7f

# Series i of a plot with several: a colour and a dash pattern of its own (12 colours, then
# they repeat with other dashes: the pattern changes with every round of the colours), so
# that two runs of one strategy (bubble and bubble:order=3) stay apart, in print and in black
# and white too.  The first eight are the Okabe-Ito palette, which readers with the common
# colour vision deficiencies tell apart; four of Paul Tol's muted palette follow.
scols = "#000000 #E69F00 #56B4E9 #009E73 #D55E00 #0072B2 #CC79A7 #999999 #882255 #44AA99 #117733 #AA4499"
scol(i) = word(scols, (i - 1) % 12 + 1)
sdt(i) = ((i - 1) + (i - 1) / 12) % 5 + 1

# A pipe that reads CSV f with every sample but the first of its series preceded by the
# previous sample's values at the new sample's time, so that "with lines" draws the steps.
# "with steps" would draw the same shape, but the cairo terminals start the dash pattern
# afresh on every step, which turns long dash patterns solid on densely sampled series.
# keycol: the column naming the series in a long-format file (0 for one series); the time is
# the column after it.
stepped(f, keycol) = sprintf("< awk -F, -v OFS=, -v k=%d '/^#/ { next } !h { h = 1; print; next } \
  { key = k ? $k : \"\"; if (key in prev) { n = split(prev[key], a, \",\"); a[k + 1] = $(k + 1); \
    l = a[1]; for (j = 2; j <= n; j++) l = l \",\" a[j]; print l } print; prev[key] = $0 }' '%s'", keycol, f)

# The distinct values of CSV column `col` of file f, in order of appearance, space separated.
distinct(f, col) = system(sprintf("grep -v '^#' '%s' | tail -n +2 | cut -d, -f%d | awk '!s[$0]++' | tr '\\n' ' '", f, col))
# The first line of f that is not a comment, split by the caller with words() after subst.
ncols(f) = int(system(sprintf("grep -v '^#' '%s' | head -n 1 | awk -F, '{print NF}'", f)))
# A '# key: value' comment of f (the machine description bench_util writes), or "".
meta(f, key) = system(sprintf("sed -n 's/^# %s: //p' '%s' | head -n 1", key, f))
