#!/usr/bin/env bash
# buddyhint plot on a replay timeline: draws a PNG and an SVG that are what they claim to be,
# and refuses an input it has no script for (exit 2).
#
# usage: plot_smoke.sh BUDDYHINT TRACES_DIR WORK_DIR
set -u
bh=$1 traces=$2 work=$3
mkdir -p "$work"
fail=0
"$bh" replay "$traces/gen-memhog-256M.bht.zst" --strategy bubble --backing sim --quiet \
  --timeline "$work/timeline.csv" >/dev/null || { echo "FAIL: replay"; exit 1; }
for fmt in png svg; do
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
  esac
done
echo "not,a,known,result" > "$work/unknown.csv"
"$bh" plot "$work/unknown.csv" -o "$work/x.png" 2>/dev/null
rc=$?
[ $rc -eq 2 ] || { echo "FAIL: an unknown input gave exit $rc, not 2"; fail=1; }
[ $fail -eq 0 ] && echo "plot: png and svg drawn, unknown input refused"
exit $fail
