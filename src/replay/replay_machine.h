/*
 * The replay in a recorded machine's shape (replay_machine.c): which description, layout,
 * start state and placement a replay uses, the arena's start state, and at the end of the
 * trace the prediction error against the end snapshot and the kernel-format dumps.
 * replay.c calls these at a few points and keeps its event loop to itself.
 */
#ifndef BH_TRACE_REPLAY_MACHINE_H
#define BH_TRACE_REPLAY_MACHINE_H

#include "replay/start_state.h"

#include <buddyhint/replay.h>

typedef struct bh__rmachine {
  bh_machine_t *m; /* the description in use, or NULL */
  bool shape;      /* the arena is laid out as the machine */
  int start;       /* enum bh__start_kind */
  bh__first_events_t fe;
  /* per page of the machine, as the kernel saw it: free (start state, then the trace's own
   * frees and allocations); tells a free of free memory from an unexplained one */
  uint64_t *kfree;
  uint64_t nr_pages;
  /* free blocks of the start that its map held allocated (bh__start_t.taken) */
  bh_block_run_t *unseen;
  size_t nr_unseen;
} bh__rmachine_t;

/* Marks the n pages from pfn, all inside rm->kfree, free or allocated: the words a range
 * covers whole with one store each, the partial words at its ends with a mask. */
static inline void bh__rm_kfree_set(bh__rmachine_t *rm, uint64_t pfn, uint64_t n, bool free) {
  if (!n)
    return;
  uint64_t *w = rm->kfree + (pfn >> 6), *last = rm->kfree + ((pfn + n - 1) >> 6);
  uint64_t head = ~0ull << (pfn & 63), tail = ~0ull >> (63 - ((pfn + n - 1) & 63));
  if (w == last)
    head &= tail;
  if (free) {
    *w |= head;
    if (w != last) {
      for (w++; w < last; w++)
        *w = ~0ull;
      *last |= tail;
    }
  } else {
    *w &= ~head;
    if (w != last) {
      for (w++; w < last; w++)
        *w = 0;
      *last &= ~tail;
    }
  }
}

/* Marks [pfn, pfn + 2^order) free or allocated in rm->kfree (nothing if it is not all inside
 * the machine). */
static inline void bh__rm_kfree_mark(bh__rmachine_t *rm, uint64_t pfn, unsigned order, bool free) {
  uint64_t n = 1ull << order;
  if (order > 20 || pfn >= rm->nr_pages || n > rm->nr_pages - pfn)
    return;
  bh__rm_kfree_set(rm, pfn, n, free);
}

/* Whether every page of [pfn, pfn + 2^order) is free in rm->kfree. */
static inline bool bh__rm_kfree_all(const bh__rmachine_t *rm, uint64_t pfn, unsigned order) {
  uint64_t n = 1ull << order;
  if (!rm->kfree || order > 20 || pfn >= rm->nr_pages || n > rm->nr_pages - pfn)
    return false;
  for (uint64_t p = pfn; p < pfn + n; p++)
    if (!(rm->kfree[p >> 6] & (1ull << (p & 63))))
      return false;
  return true;
}

/* Whether the trace can be read a second time: a regular file (not "-", a FIFO, a device). */
bool bh__rm_rereadable(const char *path);

/* Reads the trace's description and the --start/--end directories, and decides layout,
 * start state and placement (into the summary's strings).  Returns 0 or an error (err). */
/* Adds a warning to summary s (bh_replay_summary_t.warnings); a repeated one is not added. */
void bh__replay_warn(bh_replay_summary_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

int bh__rm_load(bh__rmachine_t *rm, const bh_replay_config_t *cfg, bh_replay_summary_t *s,
                char *err, size_t errlen);
/* bh__rm_load with the description m (owned by rm from now on, even on failure) instead of
 * the trace's and cfg's folders: a replay fed events as they happen (replay_feed.h). */
int bh__rm_load_machine(bh__rmachine_t *rm, bh_machine_t *m, const bh_replay_config_t *cfg,
                        bh_replay_summary_t *s, char *err, size_t errlen);
/* The number of pages the arena of the machine's layout has (0 without the shape). */
uint64_t bh__rm_pages(const bh__rmachine_t *rm);
/* Makes room for the first events of every page (start states that use them). */
int bh__rm_want_first_events(bh__rmachine_t *rm);
/* Whether the machine's kernel tunes its pcp high marks (6.7+) or keeps them fixed (6.1). */
bool bh__rm_kernel_tunes_pcp_high(const bh_machine_info_t *in);
/* Whether the recording says it was made without record's alloc_pages_bulk probes (its
 * "record" section: bulk_probes 0), so that the allocations they show are not in it. */
bool bh__rm_bulk_unprobed(const bh__rmachine_t *rm);
/* The record section's boot_freed_kb (record: the KiB the kernel's log freed after mem_init),
 * or -1. */
long long bh__rm_boot_freed_kb(const bh__rmachine_t *rm);
/* Whether the recording's zoneinfo prints the pagesets' high_max (6.12's does not,
 * mm/vmstat.c:1795-1805; 6.18's does). */
bool bh__rm_high_max_printed(const bh__rmachine_t *rm);
/* Whether the machine's kernel waits for free_count to reach batch + high_min / 2 before a
 * free_high drain (6.16+); false where its release is not known (the 6.12 rule). */
bool bh__rm_kernel_raises_free_high(const bh_machine_info_t *in);
/* The arena's layout and CPUs from the machine, and the rules of its kernel that differ
 * between the kernels users record (pcp_high_tuning, pcp_free_high_raised). */
int bh__rm_configure(const bh__rmachine_t *rm, bh_config_t *ac, char *err, size_t errlen);
/* Gives the new arena its start state (before hinting is attached). */
int bh__rm_populate(bh__rmachine_t *rm, bh_arena_t *a, unsigned pcp_orders, uint64_t seed,
                    bh_replay_summary_t *s, char *err, size_t errlen);
/*
 * After free page reporting (bubble) is attached: the start state's free blocks that the free
 * map records as reported get PageReported, as page_reporting_drain left them, and their pages
 * count as discarded by the host, so the strategy does not report them again and their reuse
 * is a refault.  The host's state is the same whatever the strategy: under one without
 * PageReported (page_reported false: none, bitmap) the blocks are discarded and at the tail of
 * their lists alike, only not marked, so that strategy may report them again.  Counts into
 * s->start_reported_blocks / _missed.
 */
void bh__rm_start_reported(const bh__rmachine_t *rm, bh_arena_t *a, bool page_reported,
                           bh_replay_summary_t *s);
/* The same for every free block at or above each zone's reporting order (notify order) that
 * is not reported yet (bh_replay_config_t.start_reported_all).  0 or BH_ENOMEM. */
int bh__rm_start_reported_all(bh_arena_t *a, bool page_reported, bh_replay_summary_t *s);
/* At the end of the trace: the fidelity against the end snapshot. */
void bh__rm_fidelity(const bh__rmachine_t *rm, bh_arena_t *a, bh_replay_summary_t *s);
/* Refuses a --dump directory whose files exist already (nothing is ever overwritten). */
int bh__rm_dump_check(const char *dir, char *err, size_t errlen);
/* At the end of the trace: the dumps in dir. */
int bh__rm_dump(const bh__rmachine_t *rm, bh_arena_t *a, const char *dir, char *err, size_t errlen);
/* The recording's frees of the 2 s before its start map was read (the description's
 * start/window_frees, "PFN ORDER" lines with the pfn in hex), malloc'd, *n of them; NULL if
 * none, or out of memory (a pass that should be pending is then not). */
bh_block_run_t *bh__rm_window_frees(const bh__rmachine_t *rm, size_t *n);
/* The trace clock's time of the earliest window free (start/window_frees lines with a TIME)
 * at or above its zone's notify order in a: the free that requested the pass pending at the
 * start, in the 2 s before it (page reporting's delay).  false if none carries a time. */
bool bh__rm_window_request(const bh__rmachine_t *rm, bh_arena_t *a, uint64_t *t_ns);
void bh__rm_free(bh__rmachine_t *rm);

/* The names of BH_WHERE_* as the summary's misses_by_where and --placements write them. */
extern const char *const bh__where_names[BH_WHERE_NR];

/* The fidelity and agreement as JSON members (after a comma, in the summary object). */
void bh__rm_json(FILE *f, const bh_replay_summary_t *s, const char *nl, int indent);

#endif
