#!/usr/bin/env bash
# The strategy comparison stage of `make test`: every sample trace is replayed under every
# strategy, in sim and in mmap backing, with the invariant checker on, and the tables go to
# the log.  It fails when a replay crashes or reports a check violation, or when a hinting
# strategy does not give back memory that `none` keeps: on every trace its final resident
# memory must not exceed none's, and on the memhog samples (the synthetic one, a guest that
# allocates, touches and frees everything, then idles; the recorded run with bubble reporting
# from order 3, or with proactive compaction) it must give back at least half of what none
# keeps resident beyond the memory still live at the end (nothing on the synthetic sample:
# half of none's; the recording's other processes hold about 1 GiB live at its end).
#
# These comparisons replay in the default layout (--layout default), from an empty arena, as
# they were made.  The recorded traces hold up to a million events and a GiB of live memory,
# whose page faults dominate a real-memory replay: in mmap backing they run none and
# bubble:order=3 (the pair the memhog check compares), in sim backing every strategy.  The recorded traces also carry their machine's description: a last pass
# replays each of them in the machine's shape (a 24 GiB layout from the start snapshot) and
# requires no unknown free beyond the events the recording lost, the fidelity figures, and a
# clean checker.
#
# The recorded memhog run is held to the half only by the strategies that report below the
# pageblock order (bubble:order=3, adaptive): the machine's other allocations stayed live in it
# and leave the free memory only in blocks below the pageblock order.
#
# usage: compare_stage.sh BUDDYHINT TRACES_DIR WORK_DIR [PART]
#
# PART is one of five pieces, which ctest runs as five tests side by side: gen (the generated
# traces, every strategy, sim and mmap), memhog (the recorded memhog run in the default layout,
# the largest), real (the other recorded traces in the default layout), compaction, shape (the
# machine's shape); without it, all five.
set -u
bh=$1 traces=$2 work=$3 part=${4:-all}
case $part in
  all | gen | memhog | real | compaction | shape) ;;
  *) echo "compare_stage.sh: unknown part '$part' (all, gen, memhog, real, compaction, shape)" >&2; exit 2 ;;
esac
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
# The invariant checker runs every CHECK_EVERY events (and at the end).  The sanitizer builds
# set BH_COMPARE_CHECK_EVERY=50000: there the checker takes half of this stage's time, the
# release build has run it every 5000 events, and what the sanitizers look for is found
# however often it runs.
check_every=${BH_COMPARE_CHECK_EVERY:-5000}
mkdir -p "$work"
fail=0
strategies=none,bitmap,bubble,bubble:order=3,adaptive

# value KEY JSON STRATEGY: the number after "KEY": in STRATEGY's run of a compare JSON file
value() {
  awk -v key="\"$1\":" -v strat="\"$3\"" '
    $1 == "\"strategy\":" { cur = $2; sub(/,$/, "", cur) }
    $1 == key && cur == strat { v = $2; sub(/,$/, "", v); print v; exit }' "$2"
}

for trace in "$traces"/*.bht*; do
  name=$(basename "$trace")
  case $name in
    real-memhog*) want memhog || continue ;;
    real-*) want real || continue ;;
    *) want gen || continue ;;
  esac
  for backing in sim mmap; do
    json="$work/$name.$backing.json"
    run=$strategies
    case $name:$backing in real-*:mmap) run=none,bubble:order=3 ;; esac
    echo "== $name, $backing backing"
    if ! "$bh" compare "$trace" --strategies "$run" --backing "$backing" \
         --layout default --check-every "$check_every" --quiet --json "$json"; then
      echo "FAIL: compare exited $? on $name ($backing)"
      fail=1
      continue
    fi
    for s in ${run//,/ }; do
      v=$(value check_violations "$json" "$s")
      if [ "${v:-x}" != 0 ]; then
        echo "FAIL: $s on $name ($backing): check_violations=${v:-missing}"
        fail=1
      fi
    done
    none=$(value rss_final_bytes "$json" none)
    live=$(value live_final_bytes "$json" none)
    for s in bitmap bubble bubble:order=3 adaptive; do
      case ,$run, in *,$s,*) ;; *) continue ;; esac
      v=$(value rss_final_bytes "$json" "$s")
      limit=$none what="more than none"
      case $name:$s in
        gen-memhog*:* | real-memhog*:bubble:order=3 | real-memhog*:adaptive)
          limit=$((live + (none - live) / 2))
          what="not half of none's resident memory beyond the live $((live >> 20)) MiB given back" ;;
      esac
      if [ -z "$none" ] || [ -z "$v" ] || [ "$v" -gt "$limit" ]; then
        echo "FAIL: $s keeps ${v:-?} bytes resident on $name ($backing), $what (${none:-?})"
        fail=1
      else
        echo "ok: $s final resident $((v >> 20)) MiB, none $((none >> 20)) MiB"
      fi
    done
  done
done
# Proactive compaction (vm.compaction_proactiveness 100) on the recorded memhog trace: it moves
# the movable pages left scattered, bubble then reports the pageblocks they leave, and the
# checker finds nothing wrong after the moves.
for backing in sim mmap; do
  want compaction || break
  json="$work/compaction.$backing.json"
  trace="$traces/real-memhog-300M.bht.zst"
  [ -f "$trace" ] || break
  echo "== real-memhog-300M.bht.zst, $backing backing, compaction proactiveness 100"
  if ! "$bh" compare "$trace" --strategies none,bubble --backing "$backing" --layout default \
       --compaction-proactiveness 100 --check-every "$check_every" --quiet --json "$json"; then
    echo "FAIL: compare with compaction exited $? ($backing)"
    fail=1
    continue
  fi
  none=$(value rss_final_bytes "$json" none)
  live=$(value live_final_bytes "$json" none)
  v=$(value rss_final_bytes "$json" bubble)
  moved=$(grep -o '"pgmigrate_success": [0-9]*' "$json" | tail -1 | grep -o '[0-9]*$')
  for s in none bubble; do
    c=$(value check_violations "$json" "$s")
    [ "${c:-x}" = 0 ] || { echo "FAIL: $s with compaction: check_violations=${c:-missing}"; fail=1; }
  done
  if [ -z "$v" ] || [ -z "$none" ] || [ "$v" -gt $((live + (none - live) / 2)) ] ||
    [ "${moved:-0}" -eq 0 ]; then
    echo "FAIL: bubble with compaction keeps ${v:-?} bytes (none ${none:-?}), ${moved:-0} pages moved"
    fail=1
  else
    echo "ok: bubble with compaction final resident $((v >> 20)) MiB, none $((none >> 20)) MiB, $moved pages moved"
  fi
done
# The machine's shape: every recorded trace that carries a description.
for trace in "$traces"/real-*.bht*; do
  want shape || break
  name=$(basename "$trace")
  "$bh" machine "$trace" >/dev/null 2>&1 || continue
  json="$work/$name.shape.json"
  echo "== $name, the machine's shape"
  if ! "$bh" compare "$trace" --strategies none,bubble --backing sim --check-every 200000 \
       --quiet --json "$json"; then
    echo "FAIL: compare in the machine's shape exited $? on $name"
    fail=1
    continue
  fi
  for s in none bubble; do
    c=$(value check_violations "$json" "$s")
    u=$(value unknown_frees "$json" "$s")
    l=$(value lost_events "$json" "$s")
    if [ "${c:-x}" != 0 ] || [ -z "$u" ] || [ "$u" -gt "${l:-0}" ]; then
      echo "FAIL: $s on $name in the machine's shape: check_violations=${c:-?}, unknown_frees=${u:-?}, lost_events=${l:-?}"
      fail=1
    fi
  done
  if ! grep -q '"layout": "machine"' "$json" || ! grep -q '"fidelity": {' "$json"; then
    echo "FAIL: $name did not replay in the machine's shape with fidelity figures"
    fail=1
  else
    echo "ok: $name in the machine's shape: $(grep -o '"free_order_error": [0-9.]*' "$json" | head -1)"
  fi
done
if [ $fail -ne 0 ]; then
  echo "compare stage: FAILED"
  exit 1
fi
echo "compare stage ($part): every trace, strategy and backing replayed with 0 violations"
