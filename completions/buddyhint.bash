# bash completion for buddyhint: verbs, each verb's options, strategy names and their options,
# and the values of the enumerated options.  What it offers is read from the command itself
# (`buddyhint --help`, `buddyhint VERB --help`, `buddyhint info`), so it follows the build it
# completes for; the answers are kept for the shell session.
#
# Installed to share/bash-completion/completions/buddyhint; by hand: source this file.

_buddyhint_cache_verbs=
declare -A _buddyhint_cache_opts
_buddyhint_cache_strategies=
declare -A _buddyhint_cache_keys

# The verbs: the indented first words of `buddyhint --help`'s "verbs:" list.
_buddyhint_verbs() {
  [ -n "$_buddyhint_cache_verbs" ] ||
    _buddyhint_cache_verbs=$("$1" --help 2>/dev/null |
      awk '/^verbs:/ { f = 1; next } f && /^  [a-z]/ { print $1 } f && /^$/ { f = 0 }')
  echo "$_buddyhint_cache_verbs"
}

# A verb's options: every --long and -x option its --help names.
_buddyhint_opts() {
  local bh=$1 verb=$2
  [ -n "${_buddyhint_cache_opts[$verb]:-}" ] ||
    _buddyhint_cache_opts[$verb]=$("$bh" "$verb" --help 2>/dev/null |
      grep -oE '(^|[ ,[])--?[a-zA-Z][a-zA-Z0-9-]*' | tr -d ' ,[' | sort -u |
      { [ "$verb" = compare ] && grep -vx -- --strategy || cat; } | tr '\n' ' ')
  echo "${_buddyhint_cache_opts[$verb]}"
}

# The strategies: the names `buddyhint info` lists under "hinting strategies".
_buddyhint_strategies() {
  [ -n "$_buddyhint_cache_strategies" ] ||
    _buddyhint_cache_strategies=$("$1" info 2>/dev/null |
      awk '/^hinting strategies/ { f = 1; next } f && /^  [a-z]/ { print $1 } f && /^[^ ]/ { f = 0 }')
  echo "$_buddyhint_cache_strategies"
}

# A strategy's option keys (the KEY of KEY=VALUE under it in `buddyhint info`).
_buddyhint_keys() {
  local bh=$1 s=$2
  [ -n "${_buddyhint_cache_keys[$s]:-}" ] ||
    _buddyhint_cache_keys[$s]=$("$bh" info 2>/dev/null |
      awk -v s="$s" '/^  [a-z]/ { f = ($1 == s); next } /^[^ ]/ { f = 0 }
                     f && /^      [a-z_]+=/ { split($1, kv, "="); print kv[1] }' | tr '\n' ' ')
  echo "${_buddyhint_cache_keys[$s]}"
}

_buddyhint() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local bh=${COMP_WORDS[0]} verb=${COMP_WORDS[1]:-} words
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_buddyhint_verbs "$bh") --help --version" -- "$cur")
    return
  fi
  case $prev in
  --strategy)
    mapfile -t COMPREPLY < <(compgen -W "$(_buddyhint_strategies "$bh")" -- "$cur")
    return ;;
  --strategies)
    # the list so far, then a strategy name after the last comma
    local head=${cur%,*} last=${cur##*,}
    [ "$head" = "$cur" ] && head= || head=$head,
    words=$(_buddyhint_strategies "$bh")
    mapfile -t COMPREPLY < <(compgen -P "$head" -W "$words jemalloc" -- "$last")
    compopt -o nospace 2>/dev/null
    return ;;
  --opt)
    local s
    words=
    for s in $(_buddyhint_strategies "$bh"); do
      words+=" $(_buddyhint_keys "$bh" "$s" | sed "s/\([a-z_]*\)/$s.\1=/g")"
    done
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    compopt -o nospace 2>/dev/null
    return ;;
  --backing) words="mmap memfd sim" ;;
  --madvise) words="dontneed free punch none" ;;
  --touch) words="page none full" ;;
  --layout) words="auto trace default" ;;
  --start-state) words="auto kpageflags counts empty" ;;
  --placement) words="allocator trace" ;;
  --start-order) words="trace pfn" ;;
  --start-pcp) words="zoneinfo trace" ;;
  --start-reported) words="snapshot all" ;;
  --untraced-allocs) words="late ignore infer lists" ;;
  --pcp-high) words="auto tuned fixed" ;;
  --pcp-decay) words="vmstat tick" ;;
  --pcp-refill) words="event alloc" ;;
  --pass-timer) words="wheel exact" ;;
  --by) words="pid comm callsite" ;;
  --json | --csv | --timeline | --reports | --placements | -o | --start | --end | --dump | --snapshot)
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    compopt -o filenames 2>/dev/null
    return ;;
  esac
  if [ -n "${words:-}" ]; then
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    return
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_buddyhint_opts "$bh" "$verb")" -- "$cur")
    return
  fi
  mapfile -t COMPREPLY < <(compgen -f -- "$cur") # a trace, a spec, a result file
  compopt -o filenames 2>/dev/null
}

complete -F _buddyhint buddyhint
