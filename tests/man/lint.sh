#!/usr/bin/env bash
# Every page of DIR renders without a warning, through groff with all warnings on and through
# man -l as a reader would see it; and each names every verb of `buddyhint --help` it should.
# With VERSION, every page's title line names that version (the build's, version.h's).
# usage: lint.sh MAN_DIR [VERSION]
set -u
dir=$1
version=${2:-}
fail=0
command -v groff >/dev/null || { echo "FAIL: groff is not installed (groff-base)"; exit 1; }
command -v man >/dev/null || { echo "FAIL: man is not installed (man-db)"; exit 1; }
pages=("$dir"/*.[1-8])
[ ${#pages[@]} -ge 2 ] || { echo "FAIL: no pages in $dir"; exit 1; }
for p in "${pages[@]}"; do
  out=$(groff -man -ww -z "$p" 2>&1)
  [ -z "$out" ] || { echo "FAIL: groff warns on $p:"; echo "$out"; fail=1; }
  out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null)
  [ -z "$out" ] || { echo "FAIL: man warns on $p:"; echo "$out"; fail=1; }
  [ "$(LC_ALL=C.UTF-8 MANWIDTH=80 man -E UTF-8 -l "$p" 2>/dev/null | wc -l)" -gt 40 ] ||
    { echo "FAIL: $p renders to almost nothing"; fail=1; }
done
if [ -n "$version" ]; then
  for p in "${pages[@]}"; do
    grep -q "^\.TH [A-Z]* [0-9] \"[0-9-]*\" \"[a-z]* $version\"" "$p" ||
      { echo "FAIL: $p does not name version $version: $(grep '^\.TH' "$p")"; fail=1; }
  done
fi
# buddyhint(1) has a section per verb
for v in replay compare check gen convert record live machine info plot sweep merge; do
  grep -q "^\.SS $v\b" "$dir/buddyhint.1" || { echo "FAIL: buddyhint.1 has no section for $v"; fail=1; }
done
[ $fail = 0 ] && echo "man: ${#pages[@]} pages render without warnings"
exit $fail
