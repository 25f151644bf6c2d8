#!/usr/bin/env bash
# compare -j N: the runs N at a time, each in a process of its own, give the same results as
# -j 1 (one after another) but for the wall-clock keys (wall_seconds, cpu_seconds, minflt,
# strategy counters of time ending in _ns) and the command line: the same JSON, timeline
# and table (without its wall_s and cpu_s columns), in the same row order.  jemalloc's own
# figures follow the real clock (decay, its background thread), so of its run only the place
# in the order is compared.  A bad -j is a usage error; a run that fails is reported with its
# name, the runs before it are printed, and no output file is written, whatever N.
#
# usage: jobs.sh BUDDYHINT TRACES_DIR WORK_DIR
set -u
bh=$1 traces=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# JSON without the keys that may differ between two runs of the same replay
strip_json() {
  jq -S 'walk(if type == "object" then with_entries(select(.key |
            test("^(wall_seconds|cpu_seconds|minflt|command_line)$|_ns$") | not)) else . end)
         | .runs |= map(if (.strategy | startswith("jemalloc")) then {strategy} else . end)' "$1"
}
# the table's rows without wall_s and cpu_s (columns 10 and 11), jemalloc's by name only
strip_table() {
  awk '/^jemalloc/ { print $1; next } NF >= 14 { $10 = ""; $11 = "" } { print }' "$1"
}

# with: the same results -j 1, -j 2 and -j 4 (more jobs than the CPUs of a small machine)
# compare_same NAME TRACE ARGS...: runs -j 1, 2, 4 and compares the outputs with -j 1's
compare_same() {
  local name=$1 trace=$2
  shift 2
  for j in 1 2 4; do
    "$bh" compare "$trace" -j "$j" --quiet "$@" --json "$work/$name-$j.json" \
      --timeline "$work/$name-$j.tl" >"$work/$name-$j.out" 2>"$work/$name-$j.err" ||
      bad "$name -j $j failed: $(cat "$work/$name-$j.err")"
    strip_json "$work/$name-$j.json" >"$work/$name-$j.sjson" 2>>"$work/$name-$j.err" ||
      bad "$name -j $j: the JSON does not parse"
    strip_table "$work/$name-$j.out" >"$work/$name-$j.table"
  done
  [ -s "$work/$name-1.tl" ] || bad "$name: no timeline"
  [ "$(jq '.runs | length' "$work/$name-1.json")" -ge 2 ] || bad "$name: fewer than 2 runs"
  for j in 2 4; do
    cmp -s "$work/$name-1.sjson" "$work/$name-$j.sjson" ||
      bad "$name: -j $j's JSON differs from -j 1's: $(diff "$work/$name-1.sjson" \
        "$work/$name-$j.sjson" | head -5)"
    cmp -s "$work/$name-1.tl" "$work/$name-$j.tl" ||
      bad "$name: -j $j's timeline differs from -j 1's"
    cmp -s "$work/$name-1.table" "$work/$name-$j.table" ||
      bad "$name: -j $j's table differs from -j 1's: $(diff "$work/$name-1.table" \
        "$work/$name-$j.table" | head -5)"
  done
}

list=none,bitmap,bubble,bubble:order=3
[ -x "$(dirname "$bh")/buddyhint-jemalloc" ] && list=none,jemalloc,bitmap,bubble,bubble:order=3
# a binary trace in the default layout, real memory (mmap backing, mincore per arena)
compare_same pyservice "$traces/real-pyservice.bht.zst" --strategies "$list" --idle 2s
order=$(jq -c '[.runs[].strategy]' "$work/pyservice-1.json")
case $list in
  *jemalloc*) want='["none","jemalloc:decay=1000","bitmap","bubble","bubble:order=3"]' ;;
  *) want='["none","bitmap","bubble","bubble:order=3"]' ;;
esac
[ "$order" = "$want" ] || bad "pyservice: runs in the order $order, not $want"
# a recorded machine's shape: start state from the kpageflags snapshot (each page's first
# event, from the one first pass), fidelity, attribution by pid, the sim backing
compare_same thp "$traces/real-thp-256M.bht.zst" --strategies none,bubble --backing sim \
  --by pid --idle 1s
jq -e '.runs[0].fidelity != null and (.runs[0].by | length > 0)' "$work/thp-1.json" \
  >/dev/null 2>&1 || bad "thp: no fidelity or no attribution rows in the JSON"
# a text trace, whose kept events carry their origins (--by comm)
"$bh" convert "$traces/real-pyservice.bht.zst" "$work/py.txt" --format text 2>"$work/convert.err" ||
  bad "convert failed: $(cat "$work/convert.err")"
compare_same text "$work/py.txt" --strategies none,bubble --by comm --idle 1s

# bad -j values: a usage error that names -j, before anything is run or written
for v in 0 -1 abc 99999999999 4097 ""; do
  "$bh" compare "$traces/real-pyservice.bht.zst" -j "$v" --quiet --json "$work/bad.json" \
    >"$work/bad.out" 2>"$work/bad.err"
  rc=$?
  [ "$rc" = 2 ] || bad "-j '$v': exit status $rc, not 2"
  grep -q -- "-j: '$v' is not a number" "$work/bad.err" || bad "-j '$v': $(cat "$work/bad.err")"
  [ -e "$work/bad.json" ] && bad "-j '$v': wrote the JSON"
  [ -s "$work/bad.out" ] && bad "-j '$v': printed a table"
done
"$bh" compare "$traces/real-pyservice.bht.zst" -j >/dev/null 2>"$work/bad.err"
[ $? = 2 ] && grep -q -- "-j needs a value" "$work/bad.err" || bad "-j without a value"

# a run that fails (jemalloc without its program): named, the run before it printed, exit
# status 1, no JSON, whatever -j
mkdir -p "$work/alone" && cp "$bh" "$work/alone/buddyhint"
for j in 1 2 3; do
  echo old >"$work/kept.json"
  "$work/alone/buddyhint" compare "$traces/real-pyservice.bht.zst" -j "$j" --idle 1s --quiet \
    --strategies none,jemalloc,bubble --json "$work/kept.json" >"$work/f.out" 2>"$work/f.err"
  rc=$?
  [ "$rc" = 1 ] || bad "-j $j, a failed run: exit status $rc, not 1"
  grep -q "^buddyhint compare: jemalloc: strategy 'jemalloc' needs" "$work/f.err" ||
    bad "-j $j: the failed run is not named: $(cat "$work/f.err")"
  grep -q '^none ' "$work/f.out" || bad "-j $j: the run before the failed one is not printed"
  grep -q '^bubble ' "$work/f.out" && bad "-j $j: a run after the failed one is printed"
  [ "$(cat "$work/kept.json")" = old ] || bad "-j $j: the JSON already there was changed"
done

# a malformed trace: the one reading of it fails, before any buddy replay, whatever -j
{ head -20 "$work/py.txt"; echo "garbage line"; sed -n 21,40p "$work/py.txt"; } >"$work/bad.txt"
for j in 1 2; do
  "$bh" compare "$work/bad.txt" -j "$j" --quiet --strategies none,bubble --json "$work/b.json" \
    >"$work/b.out" 2>"$work/b.err"
  rc=$?
  [ "$rc" = 2 ] || bad "-j $j, a malformed trace: exit status $rc, not 2"
  grep -q "^buddyhint compare: .*bad.txt:21: " "$work/b.err" ||
    bad "-j $j, a malformed trace: $(cat "$work/b.err")"
  grep -q "none:" "$work/b.err" && bad "-j $j, a malformed trace: a run started"
  [ -e "$work/b.json" ] && bad "-j $j, a malformed trace: wrote the JSON"
done

[ $fail = 0 ] && echo "compare -j: ok"
exit $fail
