#!/usr/bin/env bash
# buddyhint plot on a replay timeline: draws a PNG, an SVG and a PDF that are what they claim
# to be, draws a compare timeline with a line of its own colour and dash per run, and refuses
# an input it has no script for (exit 2).
#
# usage: plot_smoke.sh BUDDYHINT TRACES_DIR WORK_DIR
set -u
bh=$1 traces=$2 work=$3
mkdir -p "$work"
fail=0
"$bh" replay "$traces/gen-memhog-256M.bht.zst" --strategy bubble --backing sim --quiet \
  --timeline "$work/timeline.csv" >/dev/null || { echo "FAIL: replay"; exit 1; }
for fmt in png svg pdf; do
  rm -f "$work/heat.$fmt"
  if ! "$bh" plot "$work/timeline.csv" -o "$work/heat.$fmt"; then
    echo "FAIL: plot to $fmt exited $?"
    fail=1
    continue
  fi
  case $fmt in
    png) head -c 8 "$work/heat.png" | od -An -tx1 | grep -q "89 50 4e 47" ||
           { echo "FAIL: heat.png is not a PNG"; fail=1; } ;;
    svg) grep -q "<svg" "$work/heat.svg" || { echo "FAIL: heat.svg is not an SVG"; fail=1; } ;;
    pdf) head -c 5 "$work/heat.pdf" | grep -q "%PDF-" || { echo "FAIL: heat.pdf is not a PDF"; fail=1; } ;;
  esac
done
# a compare timeline: one series per run, each with a colour and a dash pattern of its own
"$bh" compare "$traces/gen-memhog-256M.bht.zst" --strategies none,bubble,bubble:order=3 \
  --backing sim --quiet --timeline "$work/compare.csv" >/dev/null 2>&1 ||
  { echo "FAIL: compare --timeline"; fail=1; }
rm -f "$work/compare.svg"
if "$bh" plot "$work/compare.csv" -o "$work/compare.svg" >/dev/null; then
  # gnuplot's SVG: one <g> per series with its title, then its path's stroke and dash array
  styles=$(awk '/<title>resident: /{ t = 1; next }
      t && /<path stroke=/ { match($0, /stroke=.rgb\([0-9, ]+\)./); c = substr($0, RSTART, RLENGTH)
        d = match($0, /stroke-dasharray=.[0-9.,]+./) ? substr($0, RSTART, RLENGTH) : "solid"
        print c, d; t = 0 }' "$work/compare.svg" | sort -u | wc -l)
  [ "$styles" -ge 3 ] || { echo "FAIL: compare.svg: $styles distinct series styles, not 3"; fail=1; }
  [ "$(grep -o "<title>resident: [^<]*" "$work/compare.svg" | sort -u | wc -l)" = 3 ] ||
    { echo "FAIL: compare.svg has not 3 resident series"; fail=1; }
else
  echo "FAIL: plot of a compare timeline"; fail=1
fi
echo "not,a,known,result" > "$work/unknown.csv"
# a compare result (compare --json): bars per strategy of resident, reported and returned
# memory, and madvise calls; no temporary file is left behind
"$bh" compare "$traces/gen-memhog-256M.bht.zst" --strategies none,bubble,bubble:order=3 \
  --backing sim --quiet --json "$work/compare.json" >/dev/null 2>&1 ||
  { echo "FAIL: compare --json"; fail=1; }
rm -f "$work/bars.svg"
before=$(ls -d /tmp/buddyhint-plot-* 2>/dev/null | wc -l)
if "$bh" plot "$work/compare.json" -o "$work/bars.svg" >/dev/null 2>&1; then
  for t in "resident at the end" reported "returned (resident, taken back)"; do
    grep -q "<title>$t</title>" "$work/bars.svg" || { echo "FAIL: bars.svg has no '$t' series"; fail=1; }
  done
  for s in none bubble "bubble:order=3"; do
    grep -q ">$s<" "$work/bars.svg" || { echo "FAIL: bars.svg does not name $s"; fail=1; }
  done
else
  echo "FAIL: plot of a compare result"; fail=1
fi
# a strategy name in a compare result that would end the script's quoting: refused (exit 2),
# nothing run, no picture
python3 - "$work/compare.json" "$work/hostile.json" "$work/PWNED" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["runs"][1]["strategy"] = "bubble\n!touch " + sys.argv[3] + "\n"
json.dump(d, open(sys.argv[2], "w"))
PY
"$bh" plot "$work/hostile.json" -o "$work/hostile.svg" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || { echo "FAIL: a hostile strategy name in a compare result: exit $rc, not 2"; fail=1; }
[ ! -e "$work/PWNED" ] && [ ! -e "$work/hostile.svg" ] ||
  { echo "FAIL: a hostile strategy name in a compare result ran or drew something"; fail=1; }
[ "$(ls -d /tmp/buddyhint-plot-* 2>/dev/null | wc -l)" = "$before" ] ||
  { echo "FAIL: plot left its temporary CSV"; fail=1; }

"$bh" plot "$work/unknown.csv" -o "$work/x.png" 2>/dev/null
rc=$?
[ $rc -eq 2 ] || { echo "FAIL: an unknown input gave exit $rc, not 2"; fail=1; }
[ $fail -eq 0 ] && echo "plot: png, svg and pdf drawn, a compare timeline drawn, unknown input refused"
exit $fail
