/*
 * The jemalloc baseline of `buddyhint compare`: the strategy names "jemalloc" and
 * "jemalloc:KEY=VALUE[:KEY=VALUE]..." are replayed by the separate program buddyhint-jemalloc
 * (src/baseline/), which links jemalloc; this side starts it and reads its summary.
 */
#ifndef BH_CLI_BASELINE_H
#define BH_CLI_BASELINE_H

#include <buddyhint/replay.h>

#include <stdbool.h>
#include <stddef.h>

/* True for "jemalloc" and names starting with "jemalloc:". */
bool bh_cli_is_baseline(const char *name);

/* Checks a baseline name's settings: 0, or BH_EINVAL with the reason in err. */
int bh_cli_baseline_check(const char *name, char *err, size_t errlen);

/*
 * Replays cfg->trace through jemalloc as strategy name:
 *   jemalloc               dirty_decay_ms 1000, muzzy_decay_ms 0, background thread
 *   jemalloc:decay=MS      another dirty_decay_ms (0 purges at once, -1 never)
 *   jemalloc:muzzy=MS      another muzzy_decay_ms
 *   jemalloc:bg=0          no background thread
 * (keys may be combined: jemalloc:decay=0:bg=0).  cfg gives the trace, --idle (virtual
 * seconds; the real idle time is min(idle, 12 s)), --touch, --lenient and --max-order; the
 * arena and strategy settings do not apply.  The program is buddyhint-jemalloc in the
 * directory of the running executable.
 *
 * Returns 0 with *out filled, like bh_replay_run; BH_EINVAL for a bad name (err says why),
 * BH_ESYS if the program is missing or failed (exit 1, a signal), BH_EFORMAT if it rejected
 * the trace or its arguments (exit 2; its message is on stderr already).
 */
int bh_cli_baseline_run(const bh_replay_config_t *cfg, const char *name, bh_replay_summary_t *out,
                        char *err, size_t errlen);

#endif
