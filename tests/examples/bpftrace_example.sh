#!/usr/bin/env bash
# Runs examples/page-events.bt for real while a small workload runs, then requires that its
# output is a native text trace the reader takes without a malformed line, with allocations
# and frees in it, and that it replays.  Skipped (exit 77) where bpftrace is not installed or
# we are not root; a bpftrace that is there and fails is a failure.
#
#   bpftrace_example.sh BUDDYHINT SOURCE_DIR
set -euo pipefail
BH=$1
SRC=$2
if ! command -v bpftrace >/dev/null 2>&1; then
  echo "skipped: bpftrace is not installed (Debian: apt-get install bpftrace; make deps does)"
  exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: bpftrace needs root"
  exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf '#!/bin/sh\nhead -c 300000 /dev/urandom | gzip -1 >/dev/null\n' >"$TMP/work.sh"
rc=0
# a larger perf buffer than bpftrace's default 64 pages per CPU: fewer lost events when the
# machine is busy (they are counted all the same: "Lost N events" lines)
BPFTRACE_PERF_RB_PAGES=1024 timeout 120 bpftrace -q "$SRC/examples/page-events.bt" -c "/bin/sh $TMP/work.sh" \
  >"$TMP/pages.txt" 2>"$TMP/bpftrace.err" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: bpftrace exited with $rc:"
  cat "$TMP/bpftrace.err"
  exit 1
fi
head -n 1 "$TMP/pages.txt" | grep -qx '# buddyhint-trace 2' ||
  { echo "FAIL: the first line is not the native text header"; head -n 3 "$TMP/pages.txt"; exit 1; }
"$BH" convert "$TMP/pages.txt" "$TMP/pages.bht" 2>"$TMP/convert.err" ||
  { echo "FAIL: buddyhint convert:"; cat "$TMP/convert.err"; exit 1; }
cat "$TMP/convert.err"
counts=$(sed -n 's/.*: \([0-9]*\) events (\([0-9]*\) allocs, \([0-9]*\) frees), .*, \([0-9]*\) malformed$/\1 \2 \3 \4/p' \
         "$TMP/convert.err" | head -n 1)
read -r events allocs frees malformed <<<"$counts"
[ "${allocs:-0}" -gt 0 ] && [ "${frees:-0}" -gt 0 ] && [ "${malformed:-1}" -eq 0 ] ||
  { echo "FAIL: expected allocations, frees and no malformed line (got '$counts')"; exit 1; }
"$BH" replay "$TMP/pages.bht" --backing sim --quiet --idle 1 >"$TMP/replay.out" ||
  { echo "FAIL: the trace does not replay"; cat "$TMP/replay.out"; exit 1; }
grep '^events' "$TMP/replay.out"
echo "bpftrace example: $events events parsed and replayed;" \
  "$(grep -c '^Lost [0-9]* events$' "$TMP/pages.txt" || true) lost-events lines counted"
