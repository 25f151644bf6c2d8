#!/bin/bash
# What `make demo` shows: free page hinting returning memory, and why on a busy machine it
# returns almost none, each told in one sentence under its table with the figures just measured.
#
#   examples/demo.sh [BUILD_DIR [TRACE_DIR]]      (defaults: build, traces)
#
# Two recorded traces, each replayed in the recorded machine's shape (its zones and the free
# memory it had when recording started) in sim backing, so that the whole runs in well under a
# minute: real-thp-256M, a process that frees 256 MiB of transparent huge pages (the effect), and
# real-memhog-300M, a process that frees 300 MiB page by page among other processes' memory (the
# finding).  Needs jq.
set -euo pipefail

build=${1:-build}
traces=${2:-traces}
bh="$build/buddyhint"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# compare TRACE STRATEGIES JSON: the table on stdout, the runs in JSON.
compare() {
  echo "\$ $bh compare $1 --strategies $2 --backing sim"
  "$bh" compare "$1" --strategies "$2" --backing sim --json "$3" 2>"$tmp/err" || {
    cat "$tmp/err" >&2
    exit 1
  }
}

# mib JSON STRATEGY KEY: the run's KEY in MiB, one decimal.
mib() {
  jq -r --arg s "$2" --arg k "$3" \
    '.runs[] | select(.strategy == $s) | .[$k] / 1048576' "$1" | xargs printf '%.1f'
}

# say TEXT...: one paragraph, folded to the width of a terminal.
say() { echo "$*" | fold -s -w 96; }

thp="$traces/real-thp-256M.bht.zst"
compare "$thp" none,bitmap,bubble,bubble:order=3 "$tmp/thp.json"
echo
say "The effect: resident memory at the end falls from $(mib "$tmp/thp.json" none rss_final_bytes)" \
  "MiB without hinting to $(mib "$tmp/thp.json" bubble rss_final_bytes) MiB with bubble, which" \
  "returns $(mib "$tmp/thp.json" bubble returned_bytes) MiB, because the process frees its memory" \
  "as huge pages, whole pageblocks (order 9), the blocks that bitmap and bubble report."
echo

memhog="$traces/real-memhog-300M.bht.zst"
compare "$memhog" none,bubble,bubble:order=3,bubble:order=0 "$tmp/memhog.json"
m() { mib "$tmp/memhog.json" "$@"; }
freed=$(jq -r '.runs[] | select(.strategy == "none") |
               (.rss_final_bytes - .live_final_bytes) / 1048576' "$tmp/memhog.json" |
         xargs printf '%.1f')
echo
say "The finding: here bubble reports $(m bubble reported_bytes) MiB and returns" \
  "$(m bubble returned_bytes) MiB, because what it reports is free memory of the recorded machine" \
  "that the trace never wrote, while the $freed MiB that was written and freed (most of it" \
  "memhog's 300 MiB) went back page by page into holes of one to four pages between the" \
  "$(m none live_final_bytes) MiB other processes keep live, below the order-9 blocks reporting" \
  "looks at (reporting from order 3 returns $(m bubble:order=3 returned_bytes) MiB, from order 0" \
  "$(m bubble:order=0 returned_bytes) MiB)."
echo
say "returned = resident memory the reports took back; reported also counts memory never" \
  "written ('buddyhint compare --help' explains every column)."
