#!/usr/bin/env bash
# examples/ci end to end, as a CI job runs it: examples/ci/gate.sh saves a baseline, a rerun
# of the same replays passes (exit 0), a strategy option changed for the worse fails (exit 1)
# with a line naming the gate, a JUnit failure in that strategy's test case (the XML must be
# well-formed) and a Markdown summary; a baseline of another trace, a gate on a noisy figure
# and a bad tolerance are usage errors (exit 2) that leave the reports as they were; the
# sweep-based baseline (gate.sh sweep-baseline over examples/ci/sweep.yaml) gates the same, and
# so does the sweep run again and gated without replaying (gate.sh sweep-check, compare --runs).
#
# usage: ci_example.sh BUDDYHINT SOURCE_DIR WORK_DIR
set -u
bh=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cd "$src" || exit 1 # the example runs from the project's top folder

export BUDDYHINT=$bh
export BH_TRACES=traces/real-pyservice.bht.zst
export BH_STRATEGIES=none,bitmap,bubble,bubble:order=3
export BH_BASELINE=$work/ci/buddyhint-baseline.json
export BH_REPORTS=$work/reports
gate=examples/ci/gate.sh

# junit.py FILE TESTS FAILURES [CASE_WITH_FAILURE METRIC]: the report is well-formed JUnit XML
# with so many test cases and failing cases, the failure (if any) in that case on that metric
junit_ok() {
  python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
path, tests, failures = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
root = ET.parse(path).getroot()
assert root.tag == "testsuites", root.tag
cases = list(root.iter("testcase"))
assert len(cases) == tests, "%d test cases, not %d" % (len(cases), tests)
failing = [c for c in cases if c.find("failure") is not None]
assert len(failing) == failures, "%d failing cases, not %d" % (len(failing), failures)
assert int(root.get("failures")) == failures, root.get("failures")
if len(sys.argv) > 4:
    name, metric = sys.argv[4], sys.argv[5]
    assert failing[0].get("name") == name, failing[0].get("name")
    msg = failing[0].find("failure").get("message")
    assert msg.startswith(metric + " "), msg
PY
}

"$gate" baseline >"$work/base.out" 2>&1 || bad "gate.sh baseline failed: $(cat "$work/base.out")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['runs']) == 4" \
  "$BH_BASELINE" || bad "the baseline is not compare's JSON of 4 runs"

# unchanged: every gate holds
"$gate" check >"$work/same.out" 2>"$work/same.err"
rc=$?
[ $rc -eq 0 ] || bad "unchanged rerun: exit $rc, not 0: $(cat "$work/same.err")"
grep -q "0 of [1-9][0-9]* gates failed" "$work/same.err" || bad "unchanged rerun: no count of gates"
grep -q "^against .*buddyhint-baseline.json" "$work/same.out" ||
  bad "unchanged rerun: no table of changes"
junit_ok "$BH_REPORTS/junit.xml" 4 0 || bad "unchanged rerun: the JUnit report is wrong"
grep -q "no regression" "$BH_REPORTS/summary.md" || bad "unchanged rerun: no Markdown summary"

# bubble's delay beyond the idle time: it reports nothing, and keeps its memory resident
BH_OPTIONS="--opt bubble.delay=100s" "$gate" check >"$work/worse.out" 2>"$work/worse.err"
rc=$?
[ $rc -eq 1 ] || bad "bubble.delay=100s: exit $rc, not 1: $(cat "$work/worse.err")"
grep -q "regression: traces/real-pyservice.bht.zst, bubble: rss_final_bytes .* -> .*, allowed +2%" \
  "$work/worse.err" || bad "bubble.delay=100s: no line naming the failed gate: $(cat "$work/worse.err")"
grep -q "regression: .*, bubble:order=3: rss_final_bytes" "$work/worse.err" ||
  bad "bubble.delay=100s: bubble:order=3 (which --opt bubble.* reaches too) did not fail"
junit_ok "$BH_REPORTS/junit.xml" 4 2 bubble rss_final_bytes ||
  bad "bubble.delay=100s: the JUnit report has not the failure"
grep -q "FAIL" "$BH_REPORTS/summary.md" || bad "bubble.delay=100s: the Markdown has no FAIL"
grep -q "options differ from the baseline run: strategy_options.delay" "$work/worse.out" ||
  bad "bubble.delay=100s: the changed option is not shown"
cp "$BH_REPORTS/junit.xml" "$work/junit.kept"

# usage errors: exit 2, before any replay, the reports left as they were
BH_TRACES=traces/real-gcc.bht.zst "$gate" check >/dev/null 2>"$work/other.err"
rc=$?
[ $rc -eq 2 ] || bad "another trace: exit $rc, not 2"
grep -q "no run of traces/real-gcc.bht.zst" "$work/other.err" ||
  bad "another trace: the message does not say so: $(cat "$work/other.err")"
BH_STRATEGIES=none,adaptive "$gate" check >/dev/null 2>"$work/strat.err"
rc=$?
[ $rc -eq 2 ] || bad "a strategy the baseline has not: exit $rc, not 2"
BH_OPTIONS="--backing mmap" "$gate" check >/dev/null 2>"$work/mmap.err"
rc=$?
[ $rc -eq 2 ] || bad "mmap against a sim baseline: exit $rc, not 2"
grep -q "in sim backing, this one in mmap" "$work/mmap.err" ||
  bad "mmap against a sim baseline: the message does not say so: $(cat "$work/mmap.err")"
BH_TOLERANCES="wall_seconds=+5%" "$gate" check >/dev/null 2>"$work/noisy.err"
rc=$?
[ $rc -eq 2 ] || bad "a gate on wall_seconds: exit $rc, not 2"
grep -q "not deterministic" "$work/noisy.err" || bad "a gate on wall_seconds: no reason given"
BH_TOLERANCES="refaults=10%" "$gate" check >/dev/null 2>"$work/sign.err"
rc=$?
[ $rc -eq 2 ] || bad "a gate without its sign: exit $rc, not 2"
cmp -s "$BH_REPORTS/junit.xml" "$work/junit.kept" || bad "a usage error changed the JUnit report"
cp "$BH_BASELINE" "$work/baseline.kept"
"$bh" compare traces/real-pyservice.bht.zst --backing sim --strategies none --quiet \
  --baseline "$BH_BASELINE" --json "$BH_BASELINE" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || bad "--json over the --baseline file: exit $rc, not 2"
cmp -s "$BH_BASELINE" "$work/baseline.kept" || bad "--json replaced the baseline it gates against"

# explicit gates replace the defaults; bubble:order=3 keeps its own order (an entry's options
# win over --opt), bubble at order 10 reports nothing (and so refaults less: a gain)
BH_TOLERANCES="refaults=+0% reported_bytes=-1%" BH_OPTIONS="--opt bubble.order=10" "$gate" check \
  >"$work/tol.out" 2>"$work/tol.err"
rc=$?
[ $rc -eq 1 ] || bad "bubble.order=10 under reported_bytes=-1%: exit $rc, not 1"
grep -q "regression: .*, bubble: reported_bytes .* -> 0.0 MiB (-100.0%), allowed -1%" \
  "$work/tol.err" || bad "bubble.order=10: reported_bytes did not fail: $(cat "$work/tol.err")"
[ "$(grep -c "regression:" "$work/tol.err")" -eq 1 ] ||
  bad "bubble.order=10: other gates than bubble's reported_bytes failed: $(cat "$work/tol.err")"
grep -q "rss_final_bytes" "$work/tol.err" && bad "--tolerance did not replace the default gates"

# the sweep-based variant: a merged sweep as the baseline of the same check
BH_BASELINE=$work/ci/sweep-baseline.json BH_SWEEP=examples/ci/sweep.yaml "$gate" sweep-baseline \
  >"$work/sweep.out" 2>&1 || bad "gate.sh sweep-baseline failed: $(tail -3 "$work/sweep.out")"
BH_TRACES="traces/real-pyservice.bht.zst traces/gen-memhog-256M.bht.zst" \
  BH_BASELINE=$work/ci/sweep-baseline.json "$gate" check >"$work/sw.out" 2>"$work/sw.err"
rc=$?
[ $rc -eq 0 ] || bad "check against the sweep's baseline: exit $rc, not 0: $(cat "$work/sw.err")"
junit_ok "$BH_REPORTS/junit.xml" 8 0 || bad "check against the sweep's baseline: JUnit wrong"
BH_TRACES="traces/real-pyservice.bht.zst traces/gen-memhog-256M.bht.zst" \
  BH_OPTIONS="--opt bubble.delay=100s" BH_BASELINE=$work/ci/sweep-baseline.json "$gate" check \
  >/dev/null 2>"$work/sw2.err"
rc=$?
[ $rc -eq 1 ] || bad "worse against the sweep's baseline: exit $rc, not 1"
[ "$(grep -c "regression: .*, bubble: " "$work/sw2.err")" -ge 2 ] ||
  bad "worse against the sweep's baseline: not a failure on each trace: $(cat "$work/sw2.err")"

# the sweep run again and gated without replaying (gate.sh sweep-check: compare --runs)
BH_BASELINE=$work/ci/sweep-baseline.json BH_SWEEP=examples/ci/sweep.yaml "$gate" sweep-check \
  >"$work/swc.out" 2>"$work/swc.err"
rc=$?
[ $rc -eq 0 ] || bad "sweep-check unchanged: exit $rc, not 0: $(tail -3 "$work/swc.err")"
junit_ok "$BH_REPORTS/junit.xml" 8 0 || bad "sweep-check unchanged: the JUnit report is wrong"
# one idle second after each trace: bubble's 2 s delay never ends, nothing is reported
sed 's/^  backing: sim$/  backing: sim\n  idle: 1/; s|\.\./\.\./traces|'"$src"'/traces|g' \
  examples/ci/sweep.yaml >"$work/sweep-short-idle.yaml"
grep -q "idle: 1" "$work/sweep-short-idle.yaml" || bad "the short-idle spec was not written"
BH_BASELINE=$work/ci/sweep-baseline.json BH_SWEEP=$work/sweep-short-idle.yaml "$gate" sweep-check \
  >"$work/swc2.out" 2>"$work/swc2.err"
rc=$?
[ $rc -eq 1 ] || bad "sweep-check with 1 s of idle: exit $rc, not 1: $(tail -3 "$work/swc2.err")"
grep -q "regression: .*gen-memhog-256M.bht.zst, bubble: rss_final_bytes" "$work/swc2.err" ||
  bad "sweep-check with 1 s of idle: no failed gate named: $(cat "$work/swc2.err")"
grep -q "options differ from the baseline run: idle_s 60.0 -> 1.0" "$work/swc2.out" ||
  bad "sweep-check with 1 s of idle: the changed option is not shown"
python3 -c "import xml.etree.ElementTree as E, sys; E.parse(sys.argv[1])" \
  "$BH_REPORTS/junit.xml" || bad "sweep-check with 1 s of idle: the JUnit report is not XML"
"$bh" compare --runs "$BH_BASELINE" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || bad "--runs without --baseline: exit $rc, not 2"
"$bh" compare --runs "$BH_BASELINE" --baseline "$BH_BASELINE" --backing sim >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || bad "--runs with a replay option: exit $rc, not 2"
"$bh" compare --runs "$BH_BASELINE" --baseline "$work/ci/sweep-baseline.json" >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] || bad "compare's runs against the sweep's baseline: exit $rc, not 0"

[ $fail -eq 0 ] && echo "ok: examples/ci gates a held trace: 0 unchanged, 1 worse, 2 mismatched"
exit $fail
