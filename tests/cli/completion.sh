#!/bin/bash
# The bash completion (completions/buddyhint.bash) against this build: it offers the verbs,
# a verb's options, the strategies after --strategy and in a --strategies list, a strategy's
# option keys after --opt, and the values of enumerated options.
#
#   completion.sh BUDDYHINT SRCDIR
set -u
BH=$1
# shellcheck source=/dev/null
source "$2/completions/buddyhint.bash"
fails=0
# expect "WORDS..." "WANTED COMPLETIONS": the completion of the last word must be exactly them
expect() {
  local want=$2
  read -r -a COMP_WORDS <<<"$BH $1"
  [[ $1 == *' ' ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  _buddyhint
  local got
  got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
  if [ "$got" = "$want" ]; then
    echo "ok   buddyhint $1 -> $got"
  else
    echo "FAIL buddyhint $1 -> '$got', wanted '$want'"
    fails=$((fails + 1))
  fi
}
expect "re" "record replay"
expect "comp" "compare"
expect "compare --strat" "--strategies"
expect "replay --strat" "--strategy"
expect "replay --strategy b" "bitmap bubble"
expect "compare --strategies none,bu" "none,bubble"
expect "replay --opt bubble.ord" "bubble.order="
expect "replay --backing " "memfd mmap sim"
expect "replay --start-state c" "counts"
expect "replay --untraced-allocs " "ignore infer late lists"
expect "replay --pcp-decay " "tick vmstat"
expect "replay --pcp-refill " "alloc event"
expect "replay --pass-timer " "exact wheel"
expect "machine --sn" "--snapshot"
expect "li" "live"
expect "live --dur" "--duration"
expect "live --strategies none,bi" "none,bitmap"
[ $fails = 0 ] && echo "completion: all cases passed"
exit $((fails > 0))
