#!/bin/bash
# Refuses bad usage; runs `buddyhint live` for 3 seconds beside a workload of allocation bursts and checks its JSON
# lines with jq: their number (one per interval, at most 3 here, and the last at the end), the
# keys of every line, events played, the fidelity a number with the free pages per order of the
# machine and of the model, one run per strategy; then that the trace -o wrote replays.
#
#   live.sh BUDDYHINT WORKLOAD WORKDIR
#
# WORKLOAD is a program that allocates, touches and frees N MiB (traces/workloads/memhog.c).
# live needs root and tracefs; where tracefs truly cannot be had (not root, or no tracefs in
# the kernel or the container) the test is skipped (exit 77) with the reason, as record.sh is.
set -u
BH=$1 WL=$2 WORK=$3
mkdir -p "$WORK"
cd "$WORK" || exit 1
rm -f live.jsonl live.err live.out live.bht replay.json replay.err keep.jsonl usage.out usage.err

fails=0
fail() {
  echo "FAIL $*"
  fails=$((fails + 1))
}

# bad usage: exit status 2 with the reason, before anything is traced, and an existing output
# file left as it was
echo keep >keep.jsonl
usage() { # usage WANTED-MESSAGE ARGS...
  local want=$1 rc
  shift
  timeout 30 "$BH" live "$@" >usage.out 2>usage.err
  rc=$?
  [ $rc -eq 2 ] && grep -q -- "$want" usage.err || fail "live $*: exit $rc, $(cat usage.err)"
}
usage "--interval wants 0.01 to 86400 seconds" --interval 0 --json keep.jsonl
usage "unknown strategy 'nosuch'" --strategies none,nosuch --json keep.jsonl
usage "'x' in 'bubble:x' is not KEY=VALUE" --strategies bubble:x
usage "--duration wants a number of seconds above 0" --duration -1
[ "$(cat keep.jsonl)" = keep ] || fail "a refused run changed keep.jsonl"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: live needs root (the kernel's tracepoints are only reachable through tracefs)"
  exit 77
fi
if ! grep -qw tracefs /proc/filesystems; then
  echo "SKIP: this kernel has no tracefs"
  exit 77
fi
command -v jq >/dev/null || { echo "FAIL: jq is not installed (it reads live's JSON lines)"; exit 1; }

# Every step runs with a bound (timeout), so that a step that does not end fails by its name.
bounded() {
  local secs=$1 what=$2 rc
  shift 2
  timeout -k 5 "$secs" "$@"
  rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    fail "$what: did not end within $secs s (killed)"
    return 124
  fi
  return $rc
}

# bursts of 32 MiB, then a long sleep that --duration cuts short (live ends the command)
workload="for i in 1 2 3 4 5 6; do '$WL' 32 || exit 1; sleep 0.2; done; exec sleep 60"
if ! bounded 240 "live --duration 3" "$BH" live --strategies none,bubble --duration 3 \
  --interval 1 --json live.jsonl -o live.bht -- sh -c "$workload" >live.out 2>live.err; then
  if grep -q "built without libtracefs" live.err; then
    echo "SKIP: this buddyhint was built without libtracefs (libtracefs-dev):"
    cat live.err
    exit 77
  fi
  if grep -q "cannot mount tracefs" live.err; then
    echo "SKIP: tracefs cannot be mounted here:"
    cat live.err
    exit 77
  fi
  echo "FAIL: live exited with an error:"
  cat live.err
  exit 1
fi
cat live.err live.out

lines=$(wc -l <live.jsonl)
# one line per interval that passed, and one at the end: 3 s at 1 s intervals make 1 to 3
# (fewer when the machine is too busy for live to look at the clock every second)
[ "$lines" -ge 1 ] && [ "$lines" -le 3 ] || fail "$lines JSON lines, wanted 1 to 3"
jq -e . live.jsonl >/dev/null || fail "live.jsonl is not JSON lines"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  jq -e 'has("t_s") and has("events") and has("events_per_s") and has("dropped") and
         has("exact") and has("runs") and has("fidelity")' <<<"$line" >/dev/null ||
    fail "line $n lacks a key: $line"
  jq -e '(.runs | length) == 2 and ([.runs[].strategy] == ["none", "bubble"]) and
         all(.runs[]; has("returned_bytes") and has("reported_bytes") and
             has("resident_bytes") and has("madvise_calls") and has("refaults"))' \
    <<<"$line" >/dev/null || fail "line $n: runs are not none and bubble with their figures"
  jq -e '(.fidelity.free_order_error | type) == "number" and
         .fidelity.free_order_error >= 0 and .fidelity.free_order_error <= 1 and
         (.fidelity.machine_free_pages | length) > 0 and
         (.fidelity.machine_free_pages | length) == (.fidelity.model_free_pages | length)' \
    <<<"$line" >/dev/null || fail "line $n: no fidelity against /proc/buddyinfo: $line"
  jq -e '.exact == (.dropped == 0)' <<<"$line" >/dev/null ||
    fail "line $n: exact does not follow dropped"
done <live.jsonl
# the last line is the end, after the 3 s (the command was still sleeping): events were played
jq -se 'last | .events > 0 and .t_s >= 3' live.jsonl >/dev/null ||
  fail "the last line is not at the end of 3 s with events: $(tail -n 1 live.jsonl)"
jq -se '[.[].t_s] == ([.[].t_s] | sort) and [.[].events] == ([.[].events] | sort)' \
  live.jsonl >/dev/null || fail "t_s and events do not grow from line to line"
grep -q "^buddyhint live (final)" live.out || fail "no final table on standard output"

# the trace -o wrote: the machine's description and the events, which replay reads
if bounded 240 "replay of live's trace" "$BH" replay live.bht --backing sim --json replay.json \
  >/dev/null 2>replay.err; then
  jq -e '.layout == "machine" and .start_state == "kpageflags" and .events > 0' replay.json \
    >/dev/null || fail "the replay of live.bht: $(jq -c '{layout, start_state, events}' replay.json)"
else
  fail "replay of live.bht: $(cat replay.err)"
fi

[ $fails = 0 ] && echo "live: all checks passed"
exit $((fails > 0))
