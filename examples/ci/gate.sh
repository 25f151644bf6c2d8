#!/bin/sh
# The regression gate of a CI job: the held traces replayed under the strategies you care
# about, compared with a committed baseline.  Both CI examples beside this file run it, and so
# does the project's own test suite (tests/compare/ci_example.sh).
#
#   gate.sh baseline         replay and write the baseline ($BH_BASELINE); commit that file
#   gate.sh check            replay and gate against it: exit 0 every gate holds, 1 a
#                            regression (a line each on standard error), 2 bad usage or a
#                            baseline that does not match the traces and strategies
#   gate.sh sweep-baseline   the baseline from a sweep instead ($BH_SWEEP: a sweep spec), for
#                            many traces on many cores (or a cluster: sweep --engine slurm)
#   gate.sh sweep-check      the same sweep again, its merged runs gated against the baseline
#                            (compare --runs): the exit statuses and reports of check
#
# Settings, from the environment:
#   BUDDYHINT      the command (default: buddyhint on PATH)
#   BH_TRACES      the traces, separated by blanks (default traces/real-pyservice.bht.zst)
#   BH_STRATEGIES  compare's --strategies (default none,bitmap,bubble,bubble:order=3)
#   BH_OPTIONS     more compare options, e.g. "--opt bubble.delay=2s --idle 10"
#   BH_TOLERANCES  gates, separated by blanks, e.g. "refaults=+10% rss_final_bytes=+2%"
#                  (default: compare's own set)
#   BH_BASELINE    the baseline file (default ci/buddyhint-baseline.json)
#   BH_REPORTS     where check writes junit.xml and summary.md (default buddyhint-reports)
#   BH_SWEEP       the sweep spec of sweep-baseline (default examples/ci/sweep.yaml)
#
# The replays run in sim backing on the virtual clock: every figure gated by default is then
# the same from run to run and machine to machine, so a gate fails on a change, not on noise.
set -eu
: "${BUDDYHINT:=buddyhint}"
: "${BH_TRACES:=traces/real-pyservice.bht.zst}"
: "${BH_STRATEGIES:=none,bitmap,bubble,bubble:order=3}"
: "${BH_OPTIONS:=}"
: "${BH_TOLERANCES:=}"
: "${BH_BASELINE:=ci/buddyhint-baseline.json}"
: "${BH_REPORTS:=buddyhint-reports}"
: "${BH_SWEEP:=examples/ci/sweep.yaml}"

tolerances=
for t in $BH_TOLERANCES; do
  tolerances="$tolerances --tolerance $t"
done

# BH_TRACES, BH_OPTIONS and the tolerances are split at blanks on purpose
case "${1:-}" in
baseline)
  mkdir -p "$(dirname "$BH_BASELINE")"
  # shellcheck disable=SC2086
  exec "$BUDDYHINT" compare $BH_TRACES --backing sim --strategies "$BH_STRATEGIES" \
    $BH_OPTIONS --quiet --json "$BH_BASELINE"
  ;;
check)
  mkdir -p "$BH_REPORTS"
  # shellcheck disable=SC2086
  exec "$BUDDYHINT" compare $BH_TRACES --backing sim --strategies "$BH_STRATEGIES" \
    $BH_OPTIONS --quiet --baseline "$BH_BASELINE" $tolerances \
    --junit "$BH_REPORTS/junit.xml" --markdown "$BH_REPORTS/summary.md"
  ;;
sweep-baseline)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/buddyhint-sweep.XXXXXX")
  trap 'rm -rf "$dir"' EXIT
  "$BUDDYHINT" sweep "$BH_SWEEP" -o "$dir/study"
  "$BUDDYHINT" merge "$dir/study" -o "$dir/runs.json"
  mkdir -p "$(dirname "$BH_BASELINE")"
  mv "$dir/runs.json" "$BH_BASELINE" # replaced only once the sweep and the merge succeeded
  ;;
sweep-check)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/buddyhint-sweep.XXXXXX")
  trap 'rm -rf "$dir"' EXIT
  "$BUDDYHINT" sweep "$BH_SWEEP" -o "$dir/study"
  "$BUDDYHINT" merge "$dir/study" -o "$dir/runs.json"
  mkdir -p "$BH_REPORTS"
  # shellcheck disable=SC2086
  "$BUDDYHINT" compare --runs "$dir/runs.json" --baseline "$BH_BASELINE" $tolerances \
    --junit "$BH_REPORTS/junit.xml" --markdown "$BH_REPORTS/summary.md"
  ;;
*)
  echo "usage: $0 baseline | check | sweep-baseline | sweep-check (settings: top of $0)" >&2
  exit 2
  ;;
esac
