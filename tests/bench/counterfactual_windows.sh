#!/usr/bin/env bash
# exp_counterfactual's window sums on a made-up run folder: QEMU's discards (host clock, the
# console's markers) and a replay's reports (trace clock, the trace's markers) must land in
# the windows boot, before, round 1, alloc 2, round 2 and after; a round's time to its first
# report and to 90 % of its memory, and the host's RSS drop per round, must be the ones the
# made-up samples give; both after windows end as long after the end marker as the host saw
# the guest.  A file with a bad number must be refused with its name and line.
#
#   counterfactual_windows.sh PYTHON SCRIPT
set -euo pipefail
PY=$1
CF=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

R=$TMP/run
mkdir -p "$R/guest"
# host clock = trace clock + 900
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
  printf '%s @@bh: %s %s\n' "$(awk -v t="$t" 'BEGIN { printf "%.6f", t + 900 }')" "$n" "$r" >&3
done <<<"$marks" >"$R/guest/markers.txt" 3>"$R/console.log"
# discards (bytes): boot flush 8 MiB at 990; before 2 MiB; round 1 4 MiB at +2.0 s and
# 2 MiB at +2.8 s; alloc 2 nothing; round 2 2 MiB at +2.5 s; after 4 MiB
cat >"$R/discards.csv" <<'CSV'
time_s,gpa,bytes,pfn,order
990.0,0,8388608,0,11
1001.5,0,2097152,0,9
1004.0,0,4194304,0,10
1004.8,0,2097152,0,9
1008.5,0,2097152,0,9
1010.0,0,4194304,0,10
CSV
# RSS: 500 MiB at "free 1" (within 0.5 s), 300 MiB before "alloc 2"; 400 -> 350 in round 2
cat >"$R/rss.csv" <<'CSV'
time_s,rss_kib
1001.9,409600
1002.2,512000
1004.9,307200
1006.1,409600
1008.9,358400
CSV
# the replay's reports (trace clock, order): round 1 gets order 9 + order 5 (2.125 MiB),
# round 2 gets order 10 (4 MiB), after gets order 9
cat >"$TMP/reports.csv" <<'CSV'
time_s,pfn,order
104.0,512,9
104.5,32,5
108.0,1024,10
111.0,2048,9
CSV

out=$("$PY" "$CF" --windows "$R")
echo "$out"
want="boot 0 8.000 first=- t90=- drop=-
before 0 2.000 first=- t90=- drop=-
round 1 6.000 first=2.000 t90=2.800 drop=200.000
alloc 2 0.000 first=- t90=- drop=-
round 2 2.000 first=2.500 t90=2.500 drop=50.000
after 0 4.000 first=- t90=- drop=-"
[ "$out" = "$want" ] || fail "host window sums differ from: $want"

out=$("$PY" "$CF" --windows "$R" --reports "$TMP/reports.csv")
echo "$out"
want="boot 0 0.000 first=- t90=- drop=-
before 0 0.000 first=- t90=- drop=-
round 1 2.125 first=2.000 t90=2.000 drop=-
alloc 2 0.000 first=- t90=- drop=-
round 2 4.000 first=2.000 t90=2.000 drop=-
after 0 2.000 first=- t90=- drop=-"
[ "$out" = "$want" ] || fail "replay window sums differ from: $want"

# QEMU ended 1.5 s after the end marker (meta.txt "end", host clock): the host saw that much of
# the after window, and the replay's after window is cut to as long (its report at +2.0 s is
# one the host could not have seen)
printf 'end 1010.5\n' >"$R/meta.txt"
out=$("$PY" "$CF" --windows "$R" | tail -n 1)
[ "$out" = "after 0 4.000 first=- t90=- drop=-" ] || fail "host after window with an end: $out"
out=$("$PY" "$CF" --windows "$R" --reports "$TMP/reports.csv" | tail -n 1)
[ "$out" = "after 0 0.000 first=- t90=- drop=-" ] || fail "replay after window with an end: $out"
rm "$R/meta.txt"

# a bad number: exit 2, the file and line named
printf '1003.0,0,abc,0,9\n' >>"$R/discards.csv"
set +e
err=$("$PY" "$CF" --windows "$R" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc = 2 ] || fail "a bad discards.csv exited $rc, not 2"
grep -q 'discards.csv:8:' <<<"$err" || fail "the error does not name discards.csv line 8: $err"
echo "PASS"
