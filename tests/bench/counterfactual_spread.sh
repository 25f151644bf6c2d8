#!/usr/bin/env bash
# exp_counterfactual_spread on two made-up campaigns: the host's spread of a round between
# them, and the medians of the counterfactual's and the references' errors, must be the ones
# the made-up figures give; a window only one campaign has is left out; a file that is not
# JSON is refused with its reason, and one campaign alone is a usage error.
#
#   counterfactual_spread.sh PYTHON SCRIPT
set -euo pipefail
PY=$1
SP=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# campaign A: the on9 run's round 1 gave 100 MiB to the host; B: 140 (spread 40 of a mean of
# 120: 33.3 %).  The counterfactual predicted 110 and 126 (errors 10 % and 10 %), the own
# trace 100 and 140 (0 %), and A has a round 2 that B has not.
cat >"$TMP/a.json" <<'J'
{"cases": [
 {"workload": "w", "case": "off->on9", "rows": [
   {"window": "round", "round": 1, "predicted_mib": 110, "host_mib": 100},
   {"window": "round", "round": 2, "predicted_mib": 50, "host_mib": 10},
   {"window": "after", "round": 0, "predicted_mib": 5, "host_mib": 5}]},
 {"workload": "w", "case": "on9 trace", "rows": [
   {"window": "round", "round": 1, "predicted_mib": 100, "host_mib": 100}]}]}
J
cat >"$TMP/b.json" <<'J'
{"cases": [
 {"workload": "w", "case": "off->on9", "rows": [
   {"window": "round", "round": 1, "predicted_mib": 126, "host_mib": 140}]},
 {"workload": "w", "case": "on9 trace", "rows": [
   {"window": "round", "round": 1, "predicted_mib": 140, "host_mib": 140}]}]}
J
out=$("$PY" "$SP" "$TMP/a.json" "$TMP/b.json" --csv "$TMP/s.csv")
echo "$out"
grep -q "^2 campaigns, 2 round windows in all of them" <<<"$out" || fail "window count"
grep -Eq "^w +33\.3 % \(1\) +10\.0 % \(2\) +0\.0 % \(2\)" <<<"$out" || fail "medians"
[ "$(grep -c '' "$TMP/s.csv")" = 5 ] || fail "csv rows: $(cat "$TMP/s.csv")"
grep -q "^w,off->on9,1,2,126.0,140.0,-10.0,40.0,33.3$" "$TMP/s.csv" || fail "csv row"
echo '{"cases": [' >"$TMP/bad.json"
if err=$("$PY" "$SP" "$TMP/a.json" "$TMP/bad.json" 2>&1); then fail "a broken file accepted"; fi
grep -q "exp_counterfactual_spread:" <<<"$err" || fail "no reason for the broken file: $err"
if "$PY" "$SP" "$TMP/a.json" >/dev/null 2>&1; then fail "one campaign accepted"; fi
echo "ok: spread and medians as made up"
