/*
 * A replay fed its events as they happen (buddyhint live), instead of reading them from a
 * trace: the arena is laid out as a machine description that holds a start snapshot with a
 * free map, its start state is that snapshot's, and the events follow in time order from the
 * caller.  There is no first pass, so the start state cannot use the trace's first events (the
 * order of the start pcp lists, the pages the trace frees first): it is the free map alone,
 * as `replay --start-order pfn` of a recorded trace would have it, and the pages the kernel
 * held on its pcp lists are allocated memory of the start state, freed when their drain frees
 * them (pretrace_frees).  Otherwise every event is played exactly as bh_replay_run plays it:
 * the same clock (from the events' timestamps), the same allocation, free and hinting.
 *
 * One fed replay belongs to one thread at a time; separate ones share nothing.
 */
#ifndef BH_REPLAY_REPLAY_FEED_H
#define BH_REPLAY_REPLAY_FEED_H

#include <buddyhint/machine.h>
#include <buddyhint/replay.h>

typedef struct bh__replay_feed bh__replay_feed_t;

/*
 * A replay under cfg (its strategy, arena and hinting settings; cfg->trace, the layout and
 * the start are not read: the layout is m's, the start its free map) of a machine described
 * by m (owned from now on, freed by close or on failure), whose virtual time 0 is the trace
 * clock's t0_ns (the events' timestamps are on that clock).  Returns 0 with *out set, or a
 * bh_replay_run error with err filled (BH_EINVAL if m has no layout or free map).
 */
int bh__replay_feed_open(const bh_replay_config_t *cfg, bh_machine_t *m, uint64_t t0_ns,
                         bh__replay_feed_t **out, char *err, size_t errlen);

/* Plays n events, in time order.  Returns 0, or BH_ENOMEM (the replay cannot go on). */
int bh__replay_feed_events(bh__replay_feed_t *f, const bh_event_t *evs, size_t n);

/* Moves virtual time to the trace clock's now_ns if it is later: the hinting worker, the
 * vmstat tick and kcompactd run what was due before it, as between two events. */
void bh__replay_feed_advance(bh__replay_feed_t *f, uint64_t now_ns);

/*
 * The figures so far, as a summary at this point would have them (events, allocations,
 * resident, live, reported, returned, madvise calls, refaults, the strategy's statistics).
 * With now (a machine of the same layout whose BH_SNAP_END snapshot holds counts read at the
 * point the events were played to), also the fidelity against it; else s->fidelity is cleared.
 */
void bh__replay_feed_figures(bh__replay_feed_t *f, const bh_machine_t *now, bh_replay_summary_t *s);

/*
 * Ends the replay: the summary as bh_replay_run gives one at the end of a trace, without the
 * idle time after it (the machine is still running), with the fidelity against now as in
 * bh__replay_feed_figures.  Frees f (NULL is accepted: returns 0).  Returns 0, or an error
 * (err) of the end's checks.
 */
int bh__replay_feed_close(bh__replay_feed_t *f, const bh_machine_t *now, bh_replay_summary_t *out,
                          char *err, size_t errlen);

#endif
