/*
 * One reading of a trace for several replays of it (buddyhint compare): the first pass runs
 * once, keeps the decoded events (whatever the format, up to keep_max_bytes) and what it found
 * (span, CPUs, peak live memory, each page's first event for a recorded machine's start
 * state, the --by origins), and every replay given the result plays the kept events instead
 * of reading the trace again.  The replays only read the result: compare runs them one after
 * another, or side by side in processes forked after it was made (whether the rest of a replay
 * may run in several threads at once is not checked here).
 */
#ifndef BH_TRACE_REPLAY_SHARED_H
#define BH_TRACE_REPLAY_SHARED_H

#include <buddyhint/replay.h>

typedef struct bh__replay_shared bh__replay_shared_t;

/*
 * The first pass of cfg->trace with cfg's settings (all but the strategy's, which the pass does
 * not use).  Returns 0 with *out set, or a bh_replay_run error with err filled.  Events that do
 * not fit in cfg->keep_max_bytes are not kept: the replays then read the trace themselves.
 */
int bh__replay_share(const bh_replay_config_t *cfg, bh__replay_shared_t **out, char *err,
                     size_t errlen);

/*
 * bh_replay_run on the events of sh, which bh__replay_share made from the same trace and
 * settings (only the strategy and its options may differ).  The summary is the one
 * bh_replay_run gives, the wall-clock figures aside (the first pass is not in them).
 */
int bh__replay_run_shared(const bh_replay_config_t *cfg, const bh__replay_shared_t *sh,
                          bh_replay_summary_t *out, char *err, size_t errlen);

void bh__replay_shared_free(bh__replay_shared_t *sh);

#endif
