#!/bin/bash
# Checks that every file of src/, bench/ and examples/ includes only the headers its module
# may use (cmake/layers.txt; docs/ARCHITECTURE.md explains the table):
#
#   - a quoted include names its module's folder ("replay/pfnmap.h"), except a header written
#     at build time (a `generated` line) and, outside src/, a file beside the includer;
#   - the folder is the includer's own module or one its `module` line names;
#   - a private header (internal.h, *_internal.h) is read by its own module and the friends
#     of its `private` line only.
#
# A violation listed on an `allow` line is accepted; any other fails the check, and so does an
# `allow` line that matches no violation any more (the exception is gone: delete the line).
# Tests are not checked: they are white-box tests of the module they mirror.
#
#   tests/layers/check-layers.sh [ROOT]      (ROOT: the source tree, default: this one's)
#
# Exit status: 0 when the tree keeps to the table, 1 on a violation, 2 on a bad table.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
table=$root/cmake/layers.txt
[ -r "$table" ] || { echo "check-layers: cannot read $table" >&2; exit 2; }

declare -A uses=() friends=() generated=() allow=() allow_line=()
lineno=0
while read -r kw a b rest; do
  lineno=$((lineno + 1))
  case "$kw" in
  '' | '#'*) ;;
  module) uses[$a]=" $b $rest " ;;
  private) friends[$a]=" $b $rest " ;;
  generated) generated[$a]=1 ;;
  allow)
    [ -n "$b" ] && [ -n "$rest" ] || {
      echo "$table:$lineno: allow FILE HEADER ITEM: three fields needed" >&2
      exit 2
    }
    allow["$a $b"]=0
    allow_line["$a $b"]=$lineno
    ;;
  *)
    echo "$table:$lineno: unknown keyword '$kw'" >&2
    exit 2
    ;;
  esac
done <"$table"

is_private() {
  local base=${1##*/}
  [ "$base" = internal.h ] || [[ "$base" == *_internal.h ]]
}

fail=0
report() { # FILE LINE MESSAGE
  echo "$1:$2: $3" >&2
  fail=1
}

cd "$root" || exit 2
for d in src/*/; do
  d=${d#src/} d=${d%/}
  [ -n "$(find "src/$d" -type f -name '*.[ch]' -print -quit)" ] || continue # left empty
  [ -n "${uses[$d]+x}" ] || report "src/$d" 0 "a folder of src/ without a 'module' line in cmake/layers.txt"
done
# Every file's quoted includes in one pass: FILE:LINE:HEADER.
while IFS=: read -r file n h; do
  # The module a file belongs to: src/cli/sweep/x.c is in cli, src/replay/x.c in replay.
  case "$file" in
  src/*) m=${file#src/} m=${m%%/*} ;;
  *) m=${file%%/*} ;;
  esac
  if [ -z "${uses[$m]+x}" ]; then
    report "$file" "$n" "module '$m' has no 'module' line in cmake/layers.txt"
    continue
  fi
  if [[ "$h" != */* ]]; then
    [ -n "${generated[$h]+x}" ] && continue
    [ "${file%%/*}" != src ] && [ -e "${file%/*}/$h" ] && continue
    report "$file" "$n" "\"$h\": name the module's folder (\"MODULE/$h\")"
    continue
  fi
  hm=${h%%/*}
  if [ ! -d "src/$hm" ] || [ -z "${uses[$hm]+x}" ]; then
    report "$file" "$n" "\"$h\": '$hm' is not a module of src/ in cmake/layers.txt"
    continue
  fi
  [ "$hm" = "$m" ] && continue
  why=""
  if is_private "$h"; then
    [[ "${friends[$h]-}" == *" $m "* ]] || why="$h is private to $hm"
  elif [[ "${uses[$m]}" != *" $hm "* ]]; then
    why="$m may not use $hm"
  fi
  [ -z "$why" ] && continue
  if [ -n "${allow["$file $h"]+x}" ]; then
    allow["$file $h"]=1
    continue
  fi
  report "$file" "$n" "includes \"$h\": $why (cmake/layers.txt)"
done < <(find src bench examples -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z |
           xargs -0 grep -H -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' |
           sed 's/^\([^:]*\):\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2:\3/')

for k in "${!allow[@]}"; do
  if [ "${allow[$k]}" = 0 ]; then
    report cmake/layers.txt "${allow_line[$k]}" "allow $k: no such violation any more; delete the line"
  fi
done
if [ "$fail" = 0 ]; then
  echo "check-layers: every include keeps to cmake/layers.txt (${#allow[@]} allowed exceptions)"
fi
exit "$fail"
