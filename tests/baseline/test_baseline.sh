#!/bin/bash
# The jemalloc baseline (src/baseline): buddyhint-jemalloc on its own and through compare.
#
#   test_baseline.sh BUDDYHINT_JEMALLOC BUDDYHINT SRCDIR      (ctest: baseline_jemalloc)
#
# - decay 0: after 2 s of idle, jemalloc's resident memory is far below its peak;
#   decay 10000: after 1 s it is still high
# - the counts (events, allocs, frees, ...) equal those of `buddyhint replay --backing sim`
#   on the sample traces, and the expected ones on a trace of every pfn map case
# - exit codes and messages: bad usage, a malformed trace, --lenient
# - compare runs it for "jemalloc..." strategies, rejects bad names, and says so clearly when
#   the program is missing
set -u

if [ $# -ne 3 ]; then
  echo "usage: $0 BUDDYHINT_JEMALLOC BUDDYHINT SRCDIR" >&2
  exit 2
fi
JE=$1
BH=$2
SRC=$3
DATA=$SRC/tests/baseline/data
MEMHOG=$SRC/traces/gen-memhog-256M.bht.zst
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bh-baseline-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fails=0
count=0
ok() {
  count=$((count + 1))
  echo "ok   $1"
}
fail() {
  count=$((count + 1))
  fails=$((fails + 1))
  echo "FAIL $1"
}
check() { # check NAME CONDITION-STATUS
  if [ "$2" -eq 0 ]; then ok "$1"; else fail "$1"; fi
}

# val FILE KEY: the value of KEY in a "key value" summary
val() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }
# jval FILE KEY: the value of "KEY": N in indented JSON (one key per line)
jval() { sed -n "s/^ *\"$2\": \\([0-9.]*\\),\\{0,1\\}\$/\\1/p" "$1" | head -1; }

COUNTS="events allocs frees alloc_failures unknown_frees skipped_lines malformed_lines
        trace_failed_allocs split_frees orders_too_large lost_frees batched_dups
        live_peak_bytes live_final_bytes"

# ---- decay 0: purged at once ----
"$JE" "$MEMHOG" --decay 0 --idle-wall 2 --summary "$WORK/d0" 2>"$WORK/d0.err"
check "decay 0: exit 0" $?
peak=$(val "$WORK/d0" rss_peak_bytes)
final=$(val "$WORK/d0" rss_final_bytes)
echo "     decay 0: resident peak ${peak:-?} B, final ${final:-?} B"
[ -n "$peak" ] && [ -n "$final" ] && [ "$peak" -ge $((256 << 20)) ] && [ "$final" -lt $((peak / 10)) ]
check "decay 0: final resident far below the peak (under a tenth)" $?
[ "$(val "$WORK/d0" strategy)" = "jemalloc:decay=0" ] && [ "$(val "$WORK/d0" backing)" = jemalloc ]
check "decay 0: strategy and backing names" $?
[ "$(val "$WORK/d0" madvise_calls)" -gt 0 ] && [ "$(val "$WORK/d0" reported_bytes)" -ge $((250 << 20)) ]
check "decay 0: madvise calls and purged bytes counted" $?
[ "$(val "$WORK/d0" stat.data_resident_final_bytes)" -lt $((1 << 20)) ]
check "decay 0: under 1 MiB of data pages left (active + dirty)" $?

# ---- decay 10000: still there after 1 s ----
"$JE" "$MEMHOG" --decay 10000 --idle-wall 1 --summary "$WORK/d10k" 2>"$WORK/d10k.err"
check "decay 10000: exit 0" $?
peak=$(val "$WORK/d10k" rss_peak_bytes)
final=$(val "$WORK/d10k" rss_final_bytes)
echo "     decay 10000: resident peak ${peak:-?} B, final ${final:-?} B"
[ -n "$peak" ] && [ -n "$final" ] && [ "$final" -gt $((peak / 2)) ]
check "decay 10000: final resident still above half the peak after 1 s" $?

# ---- the same counts as the buddy replay ----
# (in the default layout: in the recorded machine's shape the buddy replay starts from the
# machine's state and plays frees of memory allocated before the trace, which jemalloc, with
# no such memory, cannot)
# The counts do not depend on touching the pages, so jemalloc's side runs with --touch none
# (a tenth of the time: with --decay 0 every touched page is purged and faulted in again).
# BH_BASELINE_QUICK=1 (the sanitizer builds, where a replay runs several times slower and the
# release build has already compared every trace) leaves out the four slowest to replay
# (real-memhog-300M, real-python, gen-guests-256M, gen-frag-stress-256M); the six others and
# the hand-made trace of every pfn map case still cover generated and recorded traces.
quick=${BH_BASELINE_QUICK:-0}
for t in "$SRC"/traces/*.bht.zst "$DATA/semantics-agree.txt"; do
  [ -f "$t" ] || continue
  case $quick:$(basename "$t") in 1:real-memhog-300M* | 1:real-python* | 1:gen-guests* | 1:gen-frag-stress*) continue ;; esac
  name=$(basename "$t")
  "$BH" replay "$t" --backing sim --idle 0 --quiet --layout default --json "$WORK/buddy.json" \
    >/dev/null 2>&1
  b=$?
  "$JE" "$t" --decay 0 --idle-wall 0 --touch none --summary "$WORK/je" 2>/dev/null
  j=$?
  if [ $b -ne 0 ] || [ $j -ne 0 ]; then
    fail "$name: replay exit $b, buddyhint-jemalloc exit $j"
    continue
  fi
  diffs=""
  for k in $COUNTS; do
    x=$(jval "$WORK/buddy.json" "$k")
    y=$(val "$WORK/je" "$k")
    [ "$x" = "$y" ] || diffs="$diffs $k=$x/$y"
  done
  [ -z "$diffs" ]
  check "$name: counts equal the buddy replay's${diffs:+ (buddy/jemalloc:$diffs)}" $?
done

# ---- every pfn map case, with the expected counts ----
"$JE" "$DATA/semantics.txt" --idle-wall 0 --summary "$WORK/sem" 2>"$WORK/sem.err"
check "semantics: exit 0" $?
got=""
for k in events allocs frees unknown_frees split_frees lost_frees batched_dups \
  trace_failed_allocs orders_too_large live_peak_bytes live_final_bytes skipped_lines; do
  got="$got $k=$(val "$WORK/sem" $k)"
done
want=" events=22 allocs=7 frees=11 unknown_frees=1 split_frees=3 lost_frees=1 batched_dups=1"
want="$want trace_failed_allocs=1 orders_too_large=1 live_peak_bytes=32768 live_final_bytes=0"
want="$want skipped_lines=9"
[ "$got" = "$want" ]
check "semantics: split, unknown, lost, batched, failed and too-large cases" $?
[ "$got" = "$want" ] || echo "     got: $got"$'\n'"     want:$want"
"$JE" "$DATA/semantics.txt" --idle-wall 0 --max-order 12 --summary "$WORK/sem12" 2>/dev/null
[ "$(val "$WORK/sem12" orders_too_large)" = 0 ] && [ "$(val "$WORK/sem12" allocs)" = 8 ]
check "semantics: --max-order 12 takes the order-12 block" $?

# ---- usage and trace errors ----
"$JE" >/dev/null 2>"$WORK/err"
[ $? -eq 2 ] && grep -q "no trace given" "$WORK/err"
check "no trace: exit 2 with a message" $?
"$JE" "$MEMHOG" --decay soon >/dev/null 2>"$WORK/err"
[ $? -eq 2 ] && grep -q -- "--decay" "$WORK/err"
check "bad --decay: exit 2" $?
"$JE" "$MEMHOG" --touch some >/dev/null 2>"$WORK/err"
[ $? -eq 2 ]
check "bad --touch: exit 2" $?
(cd "$DATA" && "$JE" malformed.txt --idle-wall 0 >/dev/null 2>"$WORK/err")
[ $? -eq 2 ] && grep -q "^malformed.txt:3: " "$WORK/err"
check "malformed trace: exit 2 with FILE:LINE" $?
"$JE" "$DATA/malformed.txt" --lenient --idle-wall 0 --summary "$WORK/len" 2>/dev/null
[ $? -eq 0 ] && [ "$(val "$WORK/len" malformed_lines)" = 1 ] && [ "$(val "$WORK/len" frees)" = 1 ]
check "--lenient: the line is skipped and counted" $?
"$JE" --help | grep -q "usage: buddyhint-jemalloc"
check "--help" $?
"$JE" "$DATA/semantics.txt" --decay 0 --no-background-thread --muzzy 100 --idle-wall 0 \
  --summary "$WORK/nobg" 2>/dev/null
[ "$(val "$WORK/nobg" strategy)" = "jemalloc:decay=0:muzzy=100:bg=0" ] &&
  [ "$(val "$WORK/nobg" report_mode)" = "free+dontneed" ]
check "--muzzy and --no-background-thread are taken (strategy name)" $?

# ---- through compare ----
"$BH" compare "$DATA/semantics.txt" --strategies none,jemalloc,jemalloc:decay=0 --idle 1 \
  --backing sim --quiet --json "$WORK/cmp.json" >"$WORK/cmp.out" 2>"$WORK/cmp.err"
rc=$?
[ $rc -eq 0 ] && grep -q "^jemalloc:decay=1000 " "$WORK/cmp.out" &&
  grep -q "^jemalloc:decay=0 " "$WORK/cmp.out" && grep -q '"backing": "jemalloc"' "$WORK/cmp.json" &&
  grep -q '"process_rss_final_bytes"' "$WORK/cmp.json"
check "compare: jemalloc rows in the table and the JSON" $?
[ $rc -eq 0 ] || sed 's/^/     /' "$WORK/cmp.err"
n=$(awk '/"backing":/ { je = /"jemalloc"/ } je && /"frees": 11,/ { n++ } END { print n + 0 }' \
  "$WORK/cmp.json")
[ "$n" -eq 2 ]
check "compare: the jemalloc rows' counts" $?

"$BH" compare "$DATA/semantics.txt" --strategies jemalloc:decay=fast --idle 0 --quiet \
  >/dev/null 2>"$WORK/err"
[ $? -eq 2 ] && grep -q "is not a number" "$WORK/err"
check "compare: a bad jemalloc setting is a usage error" $?
"$BH" compare "$DATA/semantics.txt" --strategies jemalloc:speed=1 --idle 0 --quiet \
  >/dev/null 2>"$WORK/err"
[ $? -eq 2 ] && grep -q "unknown setting" "$WORK/err"
check "compare: an unknown jemalloc setting is a usage error" $?
(cd "$DATA" && "$BH" compare malformed.txt --strategies jemalloc --idle 0 --quiet \
  >/dev/null 2>"$WORK/err")
[ $? -eq 2 ] && grep -q "^malformed.txt:3: " "$WORK/err"
check "compare: the baseline's trace message is passed through, exit 2" $?

mkdir "$WORK/bin" && cp "$BH" "$WORK/bin/buddyhint"
"$WORK/bin/buddyhint" compare "$DATA/semantics.txt" --strategies none,jemalloc --idle 0 \
  --quiet >/dev/null 2>"$WORK/err"
[ $? -eq 1 ] && grep -q "buddyhint-jemalloc, which is missing" "$WORK/err"
check "compare: a missing baseline program is a clear error, exit 1" $?

echo "$((count - fails))/$count passed"
[ $fails -eq 0 ]
