#!/usr/bin/env bash
# guest_compare scores the whole run: on a made-up run folder (markers on both clocks, QEMU's
# discards, the replay's reports and timeline) it must cut the windows before, round 1,
# alloc 2, round 2 and after, put each block in its window, and sum blocks and MiB over all of
# them.  Then guest_work's kinds and the example workloads must announce their phases in the
# protocol's order.
#
#   guest_compare_windows.sh GUEST_COMPARE GUEST_WORK [EXAMPLE...]
set -euo pipefail
CMP=$1
WORK=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

R=$TMP/run
mkdir -p "$R/guest/end" "$TMP/out"
echo "Node 0, zone DMA32
    count: 7" >"$R/guest/end/zoneinfo"
# trace clock t, host clock t + 900 (the console adds 10 ms to one marker)
marks="start 0 100.0
alloc 1 101.0
free 1 102.0
idle 1 102.1
alloc 2 105.0
free 2 106.0
idle 2 106.1
end 0 109.0"
while read -r n r t; do
  printf '  guest_work-171 [000] ..... %s: tracing_mark_write: bh: %s %s\n' "$t" "$n" "$r"
done <<<"$marks" >"$R/guest/markers.txt"
while read -r n r t; do
  h=$(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.6f", t + 900 + (n == "idle" ? 0.01 : 0) }')
  printf '%s @@bh: %s %s\n' "$h" "$n" "$r"
done <<<"$marks" >"$R/console.log"
# discards (host clock): before, round 1, alloc 2, round 2, after the end
{
  echo "time_s,gpa,bytes,pfn,order"
  echo "999.8,0,4194304,0,10"
  echo "1004.0,2097152,2097152,512,9"
  echo "1005.5,4194304,2097152,1024,9"
  echo "1008.0,8388608,2097152,2048,9"
  echo "1011.0,16777216,4194304,4096,10"
} >"$R/discards.csv"
{
  echo "time_s,rss_kib"
  for t in $(seq 999 0.5 1013); do echo "$t,$((400 * 1024))"; done
} >"$R/rss.csv"
# the replay's reports (trace clock): the same blocks a little later, and one more after the end
{
  echo "time_s,pfn,order"
  echo "99.9,0,10"
  echo "104.1,512,9"
  echo "105.6,1024,9"
  echo "108.2,2048,9"
  echo "111.1,4096,10"
  echo "111.2,8192,9"
} >"$TMP/reports.csv"
# the replay's timeline: virtual seconds from the trace's first event at 99.5, to 114 (--idle 5)
{
  echo "time_s,live_bytes,resident_bytes,discarded_bytes,free_pages"
  for t in $(seq 0 0.5 14.5); do echo "$t,0,$((100 << 20)),0,262144"; done
} >"$TMP/timeline.csv"

"$CMP" "$R" "$TMP/reports.csv" "$TMP/timeline.csv" "$TMP/out" --label t --trace-start 99.5 ||
  fail "guest_compare exited with $?"
J=$TMP/out/t.json
windows=$(grep -o '"window": "[a-z]*", "round": [0-9]*' "$J" | sed 's/"window": "\([a-z]*\)", "round": /\1 /' |
          tr '\n' ';')
[ "$windows" = "before 0;round 1;alloc 2;round 2;after 0;" ] ||
  fail "windows are '$windows', not before 0;round 1;alloc 2;round 2;after 0"
for w in 'before", "round": 0' 'round", "round": 1' 'alloc", "round": 2' 'round", "round": 2'; do
  grep -q "\"window\": \"$w, [^}]*\"observed_blocks\": 1, \"predicted_blocks\": 1, \"matched\": 1," "$J" ||
    fail "window $w does not hold its one observed and one predicted block, matched"
done
grep -q '"window": "after", "round": 0, [^}]*"observed_blocks": 1, "predicted_blocks": 2, "matched": 1, "observed_mib": 4.000, "predicted_mib": 6.000' "$J" ||
  fail "the window after the end does not hold 1 observed block of 4 MiB, 2 predicted of 6 MiB"
grep -q '"all": {"observed_blocks": 5, "predicted_blocks": 6, "matched": 5, "observed_mib": 14.000, "predicted_mib": 16.000, "t0_s": 99.500000, "t1_s": 114.000000' "$J" ||
  fail "the whole run is not 5 observed blocks (14 MiB), 6 predicted (16 MiB), 5 matched, 99.5..114 s: $(grep -o '"all": {[^}]*}' "$J")"
grep -q '"clock_offset_s": 900.000000' "$J" || fail "the clock offset is not the smallest difference"
grep -q '"pcp_pages_end": {"observed": 7,' "$J" || fail "the end snapshot's pcp count is not read"
echo "guest_compare: windows and totals as expected"

# guest_work: every kind writes start, then per round alloc, free, idle, then end
# (pagefault1 is left out: it idles 10 s)
for args in "memhog 2 2 0" "malloc 2 2 0" "fork 2 2 0 3" "thp 4 1 0" "threads 2 2 0" "tmpfs 1 1 0"; do
  case "$args" in tmpfs*) tmpd=/tmp/bh-files ;; *) tmpd= ;; esac
  [ -n "$tmpd" ] && [ -e "$tmpd" ] && { echo "skipping tmpfs: $tmpd exists"; continue; }
  # shellcheck disable=SC2086
  out=$(cd "$TMP" && "$WORK" $args 2>/dev/null) || fail "guest_work $args exited with $?"
  [ -n "$tmpd" ] && rmdir "$tmpd" 2>/dev/null
  got=$(grep -o '@@bh: [a-z]* [0-9]*' <<<"$out" | cut -d' ' -f2- | tr '\n' ';')
  rounds=$(cut -d' ' -f3 <<<"$args")
  want="start 0;"
  for r in $(seq 1 "$rounds"); do want+="alloc $r;free $r;idle $r;"; done
  want+="end 0;"
  [ "$got" = "$want" ] || fail "guest_work $args: markers '$got', not '$want'"
done
echo "guest_work: every kind follows the marker protocol"

# the examples of a user's own workload (bench/guest/examples): the same protocol
for prog in "${@:3}"; do
  out=$("$prog" 2 2 0 2>/dev/null) || fail "$prog exited with $?"
  got=$(grep -o '@@bh: [a-z]* [0-9]*' <<<"$out" | cut -d' ' -f2- | tr '\n' ';')
  want="start 0;alloc 1;free 1;idle 1;alloc 2;free 2;idle 2;end 0;"
  [ "$got" = "$want" ] || fail "$prog: markers '$got', not '$want'"
done
echo "the examples follow the marker protocol"
