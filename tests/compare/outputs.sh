#!/usr/bin/env bash
# replay's and compare's machine-readable outputs: --json - is JSON alone on standard output
# (the table on standard error), a replay's JSON is one element of compare's "runs" with the
# same keys, every run records its provenance (version, git revision, options with the
# strategy's own, seed, arena, the trace's SHA-256 as sha256sum computes it), compare --csv
# has one row per run and --timeline one long CSV with a "run" column; two outputs on
# standard output are refused, and a failed run leaves a file already there as it was; replay
# takes compare's spellings of strategy options, and -j1 is -j 1.
#
# usage: outputs.sh BUDDYHINT TRACES_DIR WORK_DIR
set -u
bh=$1 traces=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail=0
t=$traces/gen-frag-stress-256M.bht.zst
bad() { echo "FAIL: $*"; fail=1; }
jqok() { jq -e "$@" >/dev/null 2>&1; }

"$bh" compare "$t" --backing sim --quiet --strategies none,bubble,bubble:order=3 \
  --opt bubble.delay=1s --seed 7 --json - >"$work/c.json" 2>"$work/c.err" ||
  bad "compare --json - failed: $(cat "$work/c.err")"
jq . "$work/c.json" >/dev/null || bad "compare --json -: standard output is not JSON alone"
grep -q '^strategy ' "$work/c.err" || bad "compare --json -: the table is not on standard error"
jqok '.runs | length == 3' "$work/c.json" || bad "compare: not 3 runs"
sum=$(sha256sum "$t" | cut -d' ' -f1)
jqok --arg s "$sum" 'all(.runs[]; .provenance.trace.sha256 == $s)' "$work/c.json" ||
  bad "compare: the trace's SHA-256 is not sha256sum's $sum"
jqok --argjson n "$(stat -c %s "$t")" 'all(.runs[]; .provenance.trace.bytes == $n)' \
  "$work/c.json" || bad "compare: the trace's size is wrong"
jqok 'all(.runs[]; .provenance.seed == 7 and .provenance.options.seed == 7)' "$work/c.json" ||
  bad "compare: the seed is not recorded"
jqok '.runs[0].provenance.options.strategy_options == {}' "$work/c.json" ||
  bad "compare: none has strategy options"
jqok '.runs[1].provenance.options.strategy_options == {"delay": "1s"}' "$work/c.json" ||
  bad "compare: bubble's --opt bubble.delay=1s is not recorded"
jqok '.runs[2].provenance.options.strategy_options == {"delay": "1s", "order": "3"}' \
  "$work/c.json" || bad "compare: bubble:order=3's options are not recorded"
jqok '.runs[2].provenance.label == "bubble:order=3" and .runs[2].strategy == "bubble:order=3"' \
  "$work/c.json" || bad "compare: the run's label"
jqok 'all(.runs[]; (.provenance.version | length > 0) and (.provenance.git_revision | length > 0)
      and .provenance.tool == "buddyhint" and (.provenance.command_line | test("--seed 7"))
      and .provenance.arena.memory_bytes == .memory_bytes and .provenance.arena.backing == "sim")' \
  "$work/c.json" || bad "compare: tool, version, revision, command line or arena missing"
jqok 'all(.runs[]; .provenance.options.memory_bytes == 0)' "$work/c.json" ||
  bad "compare: the options record a size that was not given"
# the default: late, or lists where the recording says it has no bulk probes (the run's
# untraced_lists says which it was)
jqok 'all(.runs[]; .provenance.options.untraced_allocs == "auto" and .untraced_lists == 0)' \
  "$work/c.json" || bad "compare: the default --untraced-allocs is not recorded"

# a replay's JSON: the keys of one element of compare's runs, the same figures
"$bh" replay "$t" --backing sim --quiet --strategy bubble --opt delay=1s --seed 7 --json - \
  >"$work/r.json" 2>"$work/r.err" || bad "replay --json - failed: $(cat "$work/r.err")"
jq . "$work/r.json" >/dev/null || bad "replay --json -: standard output is not JSON alone"
[ "$(jq -c 'keys' "$work/r.json")" = "$(jq -c '.runs[1] | keys' "$work/c.json")" ] ||
  bad "replay's JSON and compare's runs have different keys"
[ "$(jq -c '.provenance | keys' "$work/r.json")" = \
  "$(jq -c '.runs[1].provenance | keys' "$work/c.json")" ] ||
  bad "replay's and compare's provenance have different keys"
for k in rss_final_bytes reported_bytes refaults; do
  [ "$(jq ".$k" "$work/r.json")" = "$(jq ".runs[1].$k" "$work/c.json")" ] ||
    bad "replay and compare's bubble differ in $k"
done
jqok '.provenance.options.strategy_options == {"delay": "1s"}' "$work/r.json" ||
  bad "replay: --opt delay=1s is not recorded"

# --csv: a header and one row per run; --timeline: the run column
"$bh" compare "$t" --backing sim --quiet --strategies none,bubble --csv "$work/c.csv" \
  --timeline "$work/tl.csv" >/dev/null 2>&1 || bad "compare --csv --timeline failed"
[ "$(wc -l <"$work/c.csv")" = 3 ] || bad "compare --csv: not a header and 2 rows"
head -1 "$work/c.csv" | grep -q 'provenance.trace.sha256' || bad "compare --csv: no provenance"
cut -d, -f3 "$work/c.csv" | tr '\n' ' ' | grep -q '^strategy none bubble $' ||
  bad "compare --csv: the strategy column is not none, bubble"
head -1 "$work/tl.csv" | grep -q '^run,time_s,' || bad "compare --timeline: no run column"
[ "$(cut -d, -f1 "$work/tl.csv" | sort -u | tr '\n' ' ')" = "bubble none run " ] ||
  bad "compare --timeline: the runs are not none and bubble"
[ "$(grep -c '^none,' "$work/tl.csv")" = "$(grep -c '^bubble,' "$work/tl.csv")" ] ||
  bad "compare --timeline: the runs have different numbers of samples"

# two outputs on standard output; a failed compare keeps the files that were there
"$bh" compare "$t" --backing sim --json - --csv - >/dev/null 2>&1
[ $? = 2 ] || bad "compare --json - --csv -: not a usage error"
echo keep >"$work/keep.csv"
"$bh" compare "$t" --backing sim --quiet --strategies none,nosuch --csv "$work/keep.csv" \
  >/dev/null 2>&1 && bad "compare with an unknown strategy succeeded"
[ "$(cat "$work/keep.csv")" = keep ] || bad "a failed compare changed the --csv file"

# replay --json hashes the trace as it reads it (or, where its first reading does not pass
# every byte, a trace.dat or perf.data, from the file): sha256sum's hash either way, and none
# for standard input.  Plain text of many of the reader's reads (a 14 MB conversion of $t),
# zstd ($t), gzip, and the foreign binary formats.
data=$(cd "$(dirname "$0")/../trace/data" && pwd)
"$bh" convert "$t" "$work/plain.txt" --format text >/dev/null 2>&1 || bad "convert to text failed"
for f in "$t" "$work/plain.txt" "$data/ftrace_real_6.18.txt" "$data/perf_kmem.script.gz" \
  "$data/tracedat_kmem.dat" "$data/perf_kmem.data"; do
  if ! "$bh" replay "$f" --backing sim --quiet --json "$work/h.json" >/dev/null 2>&1; then
    bad "replay $(basename "$f") --json failed"
    continue
  fi
  s=$(sha256sum "$f" | cut -d' ' -f1)
  jqok --arg s "$s" --argjson n "$(stat -c %s "$f")" \
    '.provenance.trace.sha256 == $s and .provenance.trace.bytes == $n' "$work/h.json" ||
    bad "replay $(basename "$f"): the trace's SHA-256 or size is not sha256sum's"
done
"$bh" replay - --backing sim --quiet --json "$work/h.json" <"$data/ftrace_real_6.18.txt" \
  >/dev/null 2>&1 || bad "replay - failed"
jqok '.provenance.trace.sha256 == null' "$work/h.json" || bad "replay -: a SHA-256 of stdin"

# replay takes compare's spellings of a strategy's options: NAME:KEY=VALUE and --opt
# NAME.KEY=VALUE give the same run as --opt KEY=VALUE; another strategy's --opt is refused;
# -j1 is -j 1
for s in "--strategy bubble:order=3" "--strategy bubble --opt bubble.order=3" \
  "--strategy bubble --opt order=3"; do
  # shellcheck disable=SC2086
  "$bh" replay "$t" --backing sim --quiet $s --json - >"$work/sp.json" 2>/dev/null ||
    bad "replay $s: refused"
  jq -c '[.strategy, .reported_bytes, .returned_bytes, .provenance.options.strategy_options]' \
    "$work/sp.json" >>"$work/spellings"
done
[ "$(sort -u "$work/spellings" | wc -l)" = 1 ] && grep -q '"order":"3"' "$work/spellings" ||
  bad "replay: the three spellings of bubble's order 3 differ: $(cat "$work/spellings")"
"$bh" replay "$t" --backing sim --quiet --strategy bubble --opt bitmap.order=3 >/dev/null 2>&1
[ $? = 2 ] || bad "replay --strategy bubble --opt bitmap.order=3: not a usage error"
"$bh" replay "$t" --backing sim --quiet --strategy bubble:order >/dev/null 2>&1
[ $? = 2 ] || bad "replay --strategy bubble:order: not a usage error"
"$bh" compare "$t" --backing sim --quiet --strategies none,bubble -j1 >/dev/null 2>&1 ||
  bad "compare -j1: refused"
"$bh" compare "$t" --backing sim --quiet --strategies none,bubble -j0 >/dev/null 2>&1
[ $? = 2 ] || bad "compare -j0: not a usage error"

[ $fail = 0 ] && echo "outputs: all checks passed"
exit $fail
