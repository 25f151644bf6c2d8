#!/usr/bin/env bash
# Determinism: the same trace, options and seed give the same JSON summary, byte for byte,
# apart from the wall-clock keys (wall_seconds, cpu_seconds, minflt, and strategy counters of
# time, whose names end in _ns, such as bubble's lock_ns).  Every strategy, sim and
# mmap backing, on a recorded and a synthetic trace.
#
# And the format does not matter: a trace converted to native text, compressed or not,
# replays to the same summary as its binary form (the text header aside, counted in
# skipped_lines).  The replay reads binary records in place, one by one, and text through
# the reader's general path, so this compares the two.
#
# usage: determinism.sh BUDDYHINT TRACES_DIR WORK_DIR
set -u
bh=$1 traces=$2 work=$3
mkdir -p "$work"
fail=0
strip() { grep -v -E '"(wall_seconds|cpu_seconds|minflt)":' "$1" | sed -E 's/"[a-z_]+_ns": [0-9]+/"_ns": -/g' |
  sed '/^  "provenance": {/,/^  }$/d'; } # provenance: how the run was made (its file names)
# The recorded trace replays in its machine's shape (a 24 GiB layout and its start state) in
# sim backing, and in the default layout in mmap backing, where every resident memory sample
# of the whole machine's arena would cost a mincore over 24 GiB.
#
# BH_DETERMINISM_QUICK=1 (the sanitizer builds, where a replay runs several times slower and the
# release build has already run all of it) keeps the synthetic trace, two strategies and the
# formats on the smaller recorded trace.
quick=${BH_DETERMINISM_QUICK:-0}
det_traces=("$traces/real-thp-256M.bht.zst" "$traces/gen-frag-stress-256M.bht.zst")
det_strategies="none bitmap bubble adaptive"
fmt_trace=real-python
if [ "$quick" = 1 ]; then
  det_traces=("$traces/gen-frag-stress-256M.bht.zst")
  det_strategies="none bubble"
  fmt_trace=real-thp-256M
fi
for trace in "${det_traces[@]}"; do
  for strategy in $det_strategies; do
    for backing in sim mmap; do
      layout=auto
      [ "$backing" = mmap ] && layout=default
      for run in 1 2; do
        if ! "$bh" replay "$trace" --strategy "$strategy" --backing "$backing" --quiet \
             --layout "$layout" --shuffle --seed 42 --json "$work/run$run.json" >/dev/null; then
          echo "FAIL: replay $trace $strategy $backing exited $?"
          fail=1
        fi
      done
      if ! diff <(strip "$work/run1.json") <(strip "$work/run2.json"); then
        echo "FAIL: $(basename "$trace") $strategy $backing: the two summaries differ"
        fail=1
      else
        echo "ok: $(basename "$trace") $strategy $backing: identical summaries"
      fi
    done
  done
done
strip_format() { strip "$1" | grep -v -E '"(trace|trace_format|skipped_lines)":'; }
"$bh" convert "$traces/$fmt_trace.bht.zst" "$work/fmt.txt" 2>/dev/null || fail=1
"$bh" convert "$traces/$fmt_trace.bht.zst" "$work/fmt.bht" 2>/dev/null || fail=1
gzip -c "$work/fmt.txt" >"$work/fmt.txt.gz"
for strategy in none bubble; do
  for t in fmt.bht fmt.txt fmt.txt.gz; do
    "$bh" replay "$work/$t" --strategy "$strategy" --backing sim --quiet \
      --json "$work/$t.json" >/dev/null || { echo "FAIL: replay $t $strategy exited $?"; fail=1; }
  done
  for t in fmt.txt fmt.txt.gz; do
    if ! diff <(strip_format "$work/fmt.bht.json") <(strip_format "$work/$t.json"); then
      echo "FAIL: $t $strategy: its summary differs from the binary trace's"
      fail=1
    else
      echo "ok: $t $strategy: the same summary as the binary trace"
    fi
  done
done
exit $fail
