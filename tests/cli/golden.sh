#!/bin/bash
# Golden tests of the buddyhint command: stdout, stderr and exit status of each case are
# compared with tests/cli/golden/NAME.{out,err,rc}; a few properties (determinism, format
# round trips) are checked directly.
#
#   golden.sh BUDDYHINT SRCDIR            run (ctest: cli_golden)
#   golden.sh BUDDYHINT SRCDIR --update   rewrite the golden files from this binary; review
#                                         the diff before committing it
#
# Commands run in a scratch directory holding copies of tests/cli/data, with relative paths,
# so that messages do not depend on where the tree is.
set -u

if [ $# -lt 2 ]; then
  echo "usage: $0 BUDDYHINT SRCDIR [--update]" >&2
  exit 2
fi
BH=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
UPDATE=${3:-}
GOLD=$SRC/golden
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bh-cli-golden-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
cp "$SRC"/data/* .
mkdir -p cases

fails=0
count=0

fail() {
  echo "FAIL $1"
  fails=$((fails + 1))
}

# golden NAME CMD...: runs CMD; its stdout, stderr and exit status must equal the golden files.
golden() {
  local name=$1
  shift
  count=$((count + 1))
  "$@" >"cases/$name.out" 2>"cases/$name.err"
  echo $? >"cases/$name.rc"
  if [ "$UPDATE" = --update ]; then
    cp "cases/$name.out" "cases/$name.err" "cases/$name.rc" "$GOLD/"
    echo "updated $name"
    return
  fi
  local k
  for k in rc out err; do
    if [ ! -f "$GOLD/$name.$k" ]; then
      fail "$name: no golden file $name.$k (run with --update)"
      return
    fi
    if ! diff -u "$GOLD/$name.$k" "cases/$name.$k" >cases/diff; then
      fail "$name: $k differs from golden/$name.$k:"
      sed 's/^/    /' cases/diff
      return
    fi
  done
  echo "ok   $name"
}

# check NAME CMD...: CMD must succeed.
check() {
  local name=$1
  shift
  count=$((count + 1))
  if "$@"; then
    echo "ok   $name"
  else
    fail "$name"
  fi
}

differ() { ! cmp -s "$1" "$2"; }
is_binary() { [ "$(head -c 8 "$1")" = BHTRACE1 ]; }
magic() { [ "$(od -An -tx1 -N4 "$1" | tr -d ' ')" = "$2" ]; }
has_line() { grep -q -- "$2" "$1"; }
rc_is() {
  local want=$1
  shift
  "$@" >/dev/null 2>&1
  [ $? -eq "$want" ]
}

# ---- the command and its help ----
golden help "$BH" --help
golden no-args "$BH"
golden unknown-verb "$BH" frobnicate
"$BH" --version >version.out 2>&1
check "--version prints the version" has_line version.out "^buddyhint [0-9][0-9.]*$"
golden gen-help "$BH" gen --help
golden gen-memhog-help "$BH" gen memhog --help
golden convert-help "$BH" convert --help
golden record-help "$BH" record --help
golden info-help "$BH" info --help

# ---- gen: usage errors ----
golden gen-unknown-workload "$BH" gen nosuch -o x.txt
golden gen-unknown-param "$BH" gen memhog --param sise=1G -o x.txt
golden gen-bad-value "$BH" gen guests -p fraction=1.5 -o x.txt
golden gen-bad-param-syntax "$BH" gen memhog -p size -o x.txt
golden gen-no-output "$BH" gen memhog
golden gen-bad-format "$BH" gen memhog -o x.txt --format xml
check "gen usage errors create no file" test ! -e x.txt

# ---- gen: each workload, fixed seed: exact counts, byte-identical reruns ----
gen_case() { # NAME WORKLOAD PARAMS...
  local name=$1 wl=$2
  shift 2
  local p=() kv
  for kv in "$@"; do p+=(-p "$kv"); done
  golden "gen-$name" "$BH" gen "$wl" "${p[@]}" -o "$name.bht"
  "$BH" gen "$wl" "${p[@]}" -o "$name.again.bht" 2>/dev/null
  check "gen $name: binary by suffix" is_binary "$name.bht"
  check "gen $name: same bytes on a second run" cmp -s "$name.bht" "$name.again.bht"
  "$BH" gen "$wl" "${p[@]}" -p seed=12345 -o "$name.seed.bht" 2>/dev/null
  check "gen $name: another seed, another trace" differ "$name.bht" "$name.seed.bht"
  # the reader counts the same events as the generator said it wrote
  golden "gen-$name-readback" "$BH" convert "$name.bht" "$name.txt"
}
gen_case memhog memhog size=8M seed=7
gen_case memhog-thp memhog size=64M thp=1 repeat=2 seed=7
gen_case page-fault1 page-fault1 tasks=2 iterations=3 size=4M seed=7
gen_case guests guests guest_size=16M seed=7
gen_case frag-stress frag-stress size=16M seed=7
gen_case frag-stress-single frag-stress size=8M frees=single seed=7

# the whole of a tiny trace, as text: the event model at a glance
# (40 pages: the frees show a folio batch of 31, then one of 9)
golden gen-memhog-tiny-text "$BH" gen memhog -p size=160K -p duration=1ms -p hold=1ms -o -

# the bytes of every trace above: a change of the generators or of the native format shows
# here (if intended, --update and say so in the commit)
golden gen-checksums sha256sum memhog.bht memhog-thp.bht page-fault1.bht guests.bht \
  frag-stress.bht frag-stress-single.bht

# text and binary hold the same events; compression by suffix
"$BH" gen page-fault1 -p iterations=2 -p size=1M -o pf.txt 2>/dev/null
"$BH" gen page-fault1 -p iterations=2 -p size=1M -o pf.bht.zst 2>/dev/null
"$BH" gen page-fault1 -p iterations=2 -p size=1M -o pf.txt.gz 2>/dev/null
"$BH" gen page-fault1 -p iterations=2 -p size=1M -o pf.out --format binary --compress gzip 2>/dev/null
check "gen .zst is zstd" magic pf.bht.zst 28b52ffd
check "gen .gz is gzip" magic pf.txt.gz 1f8b0800
check "gen --format/--compress override the name" magic pf.out 1f8b0800
"$BH" convert pf.bht.zst pf.from-zst.txt 2>/dev/null
"$BH" convert pf.txt.gz pf.from-gz.txt 2>/dev/null
"$BH" convert pf.out pf.from-out.txt 2>/dev/null
check "binary+zstd converts back to the same text" cmp -s pf.txt pf.from-zst.txt
check "text+gzip converts back to the same text" cmp -s pf.txt pf.from-gz.txt
check "binary+gzip converts back to the same text" cmp -s pf.txt pf.from-out.txt

# ---- convert ----
golden convert-ftrace "$BH" convert ftrace.txt -
golden convert-malformed "$BH" convert malformed.txt out.bht
check "convert: no output left after a failure" test ! -e out.bht
golden convert-malformed-lenient "$BH" convert malformed.txt - --lenient
golden convert-ftrace-malformed "$BH" convert ftrace_malformed.txt out.txt
golden convert-ftrace-malformed-lenient "$BH" convert ftrace_malformed.txt out.txt --lenient
check "convert --lenient writes the good events" has_line out.txt "^746233863000 A 0x1283f4 0"
golden convert-missing-input "$BH" convert nosuch.txt out.txt
golden convert-same-file "$BH" convert ftrace.txt ftrace.txt
golden convert-no-args "$BH" convert
golden convert-bad-compress "$BH" convert ftrace.txt out.txt --compress lz4
# bpftrace's "Lost N events" among native text: a version 2 trace keeps them as markers, a
# version 1 trace cannot, and convert refuses rather than drop them (OUT is not written)
golden convert-lost-v2 "$BH" convert lost_v2.txt -
golden convert-lost-v1 "$BH" convert lost_v1.txt lost-v1-out.bht
count=$((count + 1))
if [ -e lost-v1-out.bht ]; then fail "convert-lost-v1 wrote its output"; else echo "ok   convert-lost-v1 leaves no output"; fi

# ---- machine: a snapshot from files of a Debian 6.1 guest, and a trace without one ----
golden machine-help "$BH" machine --help
golden machine-guest61 "$BH" machine --snapshot "$SRC/../trace/data/machine/guest61"
# the same files kept as users keep them: .txt, gzip, and a file that is not read (a warning)
mkdir kept empty
cp "$SRC/../trace/data/machine/guest61/zoneinfo" kept/zoneinfo.txt
gzip -c "$SRC/../trace/data/machine/guest61/buddyinfo" >kept/buddyinfo.gz
gzip -c "$SRC/../trace/data/machine/guest61/pagetypeinfo" >kept/pagetypeinfo.txt.gz
echo "MemTotal: 1025456 kB" >kept/meminfo
golden machine-kept "$BH" machine --snapshot kept
golden machine-no-zoneinfo "$BH" machine --snapshot empty
golden machine-no-description "$BH" machine ftrace.txt
golden machine-no-args "$BH" machine

# ---- record (no recording here: that needs root and tracefs) ----
golden record-no-command "$BH" record -o rec.txt
golden record-no-output "$BH" record -- true
golden record-bad-buffer "$BH" record --buffer-kb 0 -o rec.txt -- true

# ---- info (its text depends on the build: checked loosely) ----
count=$((count + 1))
if "$BH" info >info.out 2>info.err; then
  if has_line info.out "^buddyhint " && has_line info.out "^  bubble " &&
    has_line info.out "pageblock_order  *9" && has_line info.out "^  frag-stress " &&
    [ ! -s info.err ]; then
    echo "ok   info"
  else
    fail "info: unexpected output"
    sed 's/^/    /' info.out info.err
  fi
else
  fail "info: exit status $?"
fi
check "info --json exits 0" rc_is 0 "$BH" info --json
"$BH" info --json >info.json 2>/dev/null
check "info --json is one object" has_line info.json '^  "compressions": \["none", "gzip", "zstd"\]$'
golden info-bad-arg "$BH" info --yaml

# ---- replay: a gap of centuries between two events is cut to 600 s (no endless ticking) ----
timeout 60 "$BH" replay gap.txt --backing sim --idle 1 --json gap.json --quiet >/dev/null 2>&1
check "replay: a huge gap finishes, exit 0" [ $? -eq 0 ]
check "replay: the gap is counted" has_line gap.json '"gaps_shortened": 1,'
check "replay: virtual time is 600 s of gap + 1 s idle" has_line gap.json '"virtual_seconds": 601.000000,'
golden replay-idle-too-long "$BH" replay gap.txt --idle 100000 --quiet

# ---- compare: every entry of --strategies is checked before the first replay ----
golden compare-unknown-strategy "$BH" compare ftrace.txt --strategies none,bogus --quiet
golden compare-bad-variant "$BH" compare ftrace.txt --strategies none,bubble:order --quiet
golden compare-empty-name "$BH" compare ftrace.txt --strategies none,:order=3 --quiet

echo "$count cases, $fails failed"
[ "$UPDATE" = --update ] || [ "$fails" -eq 0 ]
