#!/bin/bash
# The summary's JSON Schema (schema/summary.schema.json) against what this build writes: a
# replay in a recorded machine's shape with --by (fidelity, agreement and attribution present),
# one in the default layout (those null), and a compare; and the checker can fail: a key the
# schema does not know, a missing key and a wrong type are each refused.
#
#   schema.sh BUDDYHINT SRCDIR WORKDIR
set -u
BH=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
schema=$SRC/schema/summary.schema.json
check() { python3 "$SRC/tests/schema/validate.py" "$schema" "$@"; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$BH" replay "$SRC/traces/real-pyservice.bht.zst" --backing sim --strategy bubble --by pid \
  --quiet --json shape.json >/dev/null || bad "replay in the machine's shape failed"
"$BH" replay "$SRC/traces/gen-memhog-256M.bht.zst" --backing sim --quiet --json plain.json \
  >/dev/null || bad "replay failed"
"$BH" compare "$SRC/traces/real-pyservice.bht.zst" --backing sim --strategies none,bubble:order=3 \
  -j 1 --quiet --json compare.json >/dev/null || bad "compare failed"
check shape.json plain.json compare.json || bad "the outputs do not match the schema"
jq '.extra_key = 1' plain.json >extra.json
jq 'del(.returned_bytes)' plain.json >missing.json
jq '.reported_bytes = "many"' plain.json >type.json
for f in extra missing type; do
  check $f.json >/dev/null && bad "the checker accepted $f.json"
done
[ $fail = 0 ] && echo "schema: the outputs match summary.schema.json"
exit $fail
