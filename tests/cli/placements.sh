#!/bin/bash
# `buddyhint replay --placements FILE`: one row per allocation the arena placed, which adds up
# to the summary's placement_agreement (rows = allocs, "same" rows = same_pfn, the other rows
# by where = misses_by_where), pfns in hex with --hex; a header only where agreement is not
# counted (--placement trace); the same file for --reports and --placements is a usage error.
#
#   placements.sh BUDDYHINT SRCDIR          (ctest: cli_placements)
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 BUDDYHINT SRCDIR" >&2
  exit 2
fi
BH=$1
TRACE=$2/traces/real-gcc.bht.zst
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bh-placements-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fails=0
check() { # check NAME STATUS
  if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}

"$BH" replay "$TRACE" --backing sim --strategy none --quiet --json "$WORK/s.json" \
  --placements "$WORK/p.csv" >/dev/null 2>"$WORK/err"
check "replay --placements: exit 0" $?
[ "$(head -n 1 "$WORK/p.csv")" = "trace_time_s,cpu,order,migratetype,kernel_pfn,pfn,where" ]
check "header" $?
python3 - "$WORK/s.json" "$WORK/p.csv" <<'PY'
import collections, csv, json, sys
s = json.load(open(sys.argv[1]))["placement_agreement"]
rows = list(csv.DictReader(open(sys.argv[2])))
where = collections.Counter(r["where"] for r in rows)
same = where.pop("same", 0)
bad = [r for r in rows if (r["where"] == "same") != (r["kernel_pfn"] == r["pfn"])]
ok = (len(rows) == s["allocs"] and same == s["same_pfn"] and dict(where) == s["misses_by_where"]
      and not bad and len(rows) > 1000 and 0 < same < len(rows))
print(f"     {len(rows)} rows, {same} same; summary {s['allocs']} allocs, {s['same_pfn']} same")
sys.exit(0 if ok else 1)
PY
check "rows add up to placement_agreement (allocs, same_pfn, misses_by_where)" $?

"$BH" replay "$TRACE" --backing sim --strategy none --quiet --hex --placements "$WORK/h.csv" \
  >/dev/null 2>&1
check "--hex: exit 0" $?
awk -F, 'NR > 1 && ($5 !~ /^0x/ || $6 !~ /^0x/) { bad = 1 } END { exit bad || NR < 2 }' "$WORK/h.csv"
check "--hex: pfns in hex" $?

"$BH" replay "$TRACE" --backing sim --strategy none --quiet --placement trace \
  --placements "$WORK/t.csv" >/dev/null 2>&1
check "--placement trace: exit 0" $?
[ "$(wc -l <"$WORK/t.csv")" -eq 1 ]
check "--placement trace: the header only (no agreement is counted)" $?

echo precious >"$WORK/same.csv"
"$BH" replay "$TRACE" --backing sim --quiet --reports "$WORK/same.csv" \
  --placements "$WORK/same.csv" >/dev/null 2>"$WORK/err"
rc=$?
[ $rc -eq 2 ] && grep -q "same file" "$WORK/err" && [ "$(cat "$WORK/same.csv")" = precious ]
check "--reports and --placements on one file: exit 2, a message, the file untouched" $?

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
