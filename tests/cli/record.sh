#!/bin/bash
# Records a short workload on this machine with `buddyhint record` and checks that the trace
# replays in the machine's shape: its zones, a start state from the snapshot (so that no free
# is unknown, unless the recording lost events), the fidelity figures in the summary, the
# JSON and the compare table.
#
#   record.sh BUDDYHINT WORKLOAD WORKDIR
#
# WORKLOAD is a program that allocates, touches and frees N MiB (traces/workloads/memhog.c).
# Recording needs root and tracefs; where tracefs truly cannot be had (not root, or no
# tracefs in the kernel or the container) the test is skipped (exit 77) with the reason.
set -u
BH=$1 WL=$2 WORK=$3
mkdir -p "$WORK"
cd "$WORK" || exit 1
rm -f rec.bht.zst rec.json compare.out machine.out

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: recording needs root (the kernel's tracepoints are only reachable through tracefs)"
  exit 77
fi
if ! grep -qw tracefs /proc/filesystems; then
  echo "SKIP: this kernel has no tracefs"
  exit 77
fi

fails=0
fail() {
  echo "FAIL $*"
  fails=$((fails + 1))
}

if ! "$BH" record -o rec.bht.zst -- "$WL" 32 >record.out 2>record.err; then
  if grep -q "cannot mount tracefs" record.err; then
    echo "SKIP: tracefs cannot be mounted here:"
    cat record.err
    exit 77
  fi
  echo "FAIL: record exited with an error:"
  cat record.err
  exit 1
fi
cat record.err

# the machine description: this machine's populated zones, with both snapshots
"$BH" machine rec.bht.zst >machine.out || fail "machine: exit $?"
cat machine.out
zones=$(awk '{print $4}' /proc/buddyinfo | tr '\n' ' ')
got=$(awk '$1 == "zone" {print $4}' machine.out | tr '\n' ' ')
[ "$zones" = "$got" ] || fail "zones: /proc/buddyinfo has '$zones', the description '$got'"
while read -r _ node _ zone rest; do
  start=$(awk -v z="$zone" '$1 == "Node" && $4 == z {f = 1} f && $1 == "start_pfn:" {print $2; exit}' \
    /proc/zoneinfo)
  want=$(printf '%#x' "$start")
  grep -q "zone  *node $node $zone  *start_pfn $want " machine.out ||
    fail "zone $zone: start_pfn $want (from /proc/zoneinfo) not in the description"
done < <(awk '$1 == "Node" {print}' /proc/buddyinfo | tr -d ',')
grep -q "^start  .*freemap" machine.out || echo "note: no free map (kpageflags unreadable)"
grep -q "^end " machine.out || fail "no end snapshot"

# the replay: machine layout, a start state, no unknown frees beyond lost events, fidelity
"$BH" replay rec.bht.zst --backing sim --quiet --check-every 1000000 --json rec.json \
  >replay.out || fail "replay: exit $?"
cat replay.out
num() { awk -v k="\"$1\":" '$1 == k {v = $2; sub(/,$/, "", v); print v; exit}' rec.json; }
str() { num "$1" | tr -d '"'; }
[ "$(str layout)" = machine ] || fail "layout '$(str layout)', not machine"
case $(str start_state) in
  kpageflags | counts) ;;
  *) fail "start_state '$(str start_state)'" ;;
esac
unknown=$(num unknown_frees) lost=$(num lost_events)
[ -n "$unknown" ] && [ "$unknown" -le "${lost:-0}" ] ||
  fail "unknown_frees $unknown with $lost lost events"
[ "$(num pretrace_frees)" -gt 0 ] || fail "no frees of memory allocated before the trace"
grep -q '"fidelity": {"free_order_error": ' rec.json || fail "no fidelity object in the JSON"
grep -q '"placement_agreement": {"overall": ' rec.json || fail "no placement_agreement"
[ "$(num check_violations)" = 0 ] || fail "check violations"
grep -q '^fidelity  ' replay.out || fail "no fidelity line in the summary"

# compare: the fidelity columns
"$BH" compare rec.bht.zst --strategies none,bubble --backing sim --quiet >compare.out ||
  fail "compare: exit $?"
cat compare.out
grep -q 'fidelity' compare.out || fail "compare: no fidelity column"
[ "$(grep -c -E '^(none|bubble) .*[0-9.]+% +[-+][0-9.]+%$' compare.out)" = 2 ] ||
  fail "compare: no fidelity figures in the rows"

# placement trace: the recorded blocks themselves
"$BH" replay rec.bht.zst --backing sim --quiet --placement trace --json trace.json \
  >/dev/null || fail "replay --placement trace: exit $?"
grep -q '"placement": "trace"' trace.json || fail "placement trace not in the JSON"

if [ $fails -ne 0 ]; then
  echo "$fails failures"
  exit 1
fi
echo "ok: recorded and replayed in the machine's shape"
