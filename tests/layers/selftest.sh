#!/bin/bash
# The layer check fails where it should: on a copy of the tree it must pass as it is, and fail
# with the right message on each violation put into the copy (a strategy reading the core's
# internal.h, the replay reading it (it has buddy/replay_core.h), the trace formats including
# the replay, a header without its folder, a private header of another module, an allow line
# left behind).
#
#   tests/layers/selftest.sh CHECK ROOT WORKDIR
set -u
check=$1 root=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 2
fails=0

fresh() { # a copy of what the check reads
  rm -rf "$work/t" && mkdir -p "$work/t/cmake" &&
    cp -r "$root/src" "$root/bench" "$root/examples" "$work/t/" &&
    cp "$root/cmake/layers.txt" "$work/t/cmake/"
}

expect() { # NAME WANT(pass|fail) MESSAGE-PATTERN
  local out rc
  out=$("$check" "$work/t" 2>&1)
  rc=$?
  if [ "$2" = pass ] && [ $rc -ne 0 ]; then
    echo "FAIL $1: the check failed on a clean tree:"; echo "$out"; fails=$((fails + 1))
  elif [ "$2" = fail ] && [ $rc -ne 1 ]; then
    echo "FAIL $1: exit $rc, not 1"; echo "$out"; fails=$((fails + 1))
  elif [ "$2" = fail ] && ! grep -q -- "$3" <<<"$out"; then
    echo "FAIL $1: no message matching '$3':"; echo "$out"; fails=$((fails + 1))
  else
    echo "ok   $1"
  fi
}

inject() { # FILE LINE: put an include at the top of FILE
  sed -i "1i $2" "$work/t/$1"
}

fresh && expect "clean tree" pass ""
fresh && inject src/strategies/bubble.c '#include "buddy/internal.h"' &&
  expect "strategy reads internal.h" fail \
    'src/strategies/bubble.c:1: includes "buddy/internal.h": buddy/internal.h is private to buddy'
fresh && inject src/trace/gfp.c '#include "replay/pfnmap.h"' &&
  expect "formats include the replay" fail 'src/trace/gfp.c:1: .*trace may not use replay'
fresh && inject src/replay/replay.c '#include "buddy/internal.h"' &&
  expect "replay reads internal.h" fail \
    'src/replay/replay.c:1: includes "buddy/internal.h": buddy/internal.h is private to buddy'
fresh && inject src/cli/cmd_info.c '#include "buddy/internal.h"' &&
  expect "command reads internal.h" fail 'src/cli/cmd_info.c:1: .*private to buddy'
fresh && inject bench/bench_core.c '#include "hinting/hint.h"' &&
  expect "bench includes the framework" fail 'bench/bench_core.c:1: .*bench may not use hinting'
fresh && inject src/buddy/arena.c '#include "internal.h"' &&
  expect "header without its folder" fail 'src/buddy/arena.c:1: "internal.h": name the module'
fresh && inject src/gen/gen.c '#include "machine/machine_internal.h"' &&
  expect "another module's private header" fail 'machine_internal.h is private to machine'
fresh && echo 'allow src/gen/gen.c buddy/internal.h gone' >>"$work/t/cmake/layers.txt" &&
  expect "allow line left behind" fail 'allow src/gen/gen.c buddy/internal.h: no such'
fresh && mkdir "$work/t/src/newmod" && touch "$work/t/src/newmod/x.c" &&
  expect "module without a line" fail "src/newmod:0: a folder of src/ without"

rm -rf "$work"
[ $fails -eq 0 ] && echo "selftest: the layer check caught every injected violation"
exit $((fails > 0))
