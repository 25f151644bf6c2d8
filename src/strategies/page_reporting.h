/*
 * Free page reporting's cycle (mm/page_reporting.c), shared by the strategies that report as
 * Linux does: bubble (the cycle alone, with the options that model the series' earlier
 * versions) and adaptive (the cycle at the reporting order, and its own aging part below).
 * One copy, so that what changes in one changes in both.
 *
 * The state machine: a request moves IDLE -> REQUESTED and, coming from IDLE, asks for a pass
 * `delay` later (__page_reporting_request); a pass sets ACTIVE, walks every zone
 * (page_reporting_process_zone, page_reporting_cycle, page_reporting_drain) and swaps
 * ACTIVE -> IDLE at its end, or, if it finds REQUESTED, says the caller must run another pass
 * (page_reporting_process).  When that pass runs is the caller's: the strategies schedule
 * their worker differently.
 *
 * Written on the public strategy API only (buddyhint/strategy.h), as any strategy would be.
 */
#ifndef BH_HINTING_PAGE_REPORTING_H
#define BH_HINTING_PAGE_REPORTING_H

#include <buddyhint.h>
#include <buddyhint/strategy.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define BH__INTERNAL __attribute__((visibility("hidden"))) /* as buddy/internal.h */

enum { BH__PR_IDLE, BH__PR_REQUESTED, BH__PR_ACTIVE };

#define BH__PR_DEFAULT_DELAY_NS (2 * BH_NS_PER_SEC) /* PAGE_REPORTING_DELAY = 2 * HZ */

typedef _Atomic uint64_t bh__pr_counter_t;

/* Per zone: reported free blocks per order (bubble's hwm only), under the zone lock. */
typedef struct bh__pr_zone {
  uint64_t reported[BH_ORDER_LIMIT + 1];
} bh__pr_zone_t;

typedef struct bh__prdev {
  bh_hint_t *h;
  bh_arena_t *a;
  unsigned order, max_order, capacity; /* page_reporting_order, PAGE_REPORTING_CAPACITY */
  uint64_t delay_ns;
  bool budget, rotate; /* the per-list budget and the list rotation (both on since 5.7) */
  int nzones;
  bh__pr_zone_t *zones; /* NULL, or the per-zone counts of reported blocks a drain keeps */
  /* read by every notification: kept off the lines the worker's counters dirty */
  _Alignas(64) atomic_int state;
  _Atomic uint64_t pass_due; /* when a requested pass is due (UINT64_MAX: none requested) */
  /* counters: the worker's (one writer) and `requests` (any thread) */
  _Alignas(64) bh__pr_counter_t passes, cycles, report_calls, report_errors, blocks_reported,
      pages_reported;
  bh__pr_counter_t skipped_reported, putback_merged, zone_skipped_wmark, isolate_fail,
      budget_exhausted, requeues, lock_ns, requests;
} bh__prdev_t;

/* A counter with one writer (the worker): no read-modify-write needed. */
static inline void bh__pr_bump(bh__pr_counter_t *c, uint64_t n) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}
static inline uint64_t bh__pr_get(bh__pr_counter_t *c) {
  return atomic_load_explicit(c, memory_order_relaxed);
}

/* The kernel's defaults for the arena behind h: pageblock order, 32 per call, 2 s, budget and
 * rotation on, IDLE. */
BH__INTERNAL void bh__pr_init(bh__prdev_t *pr, bh_hint_t *h);
/* __page_reporting_request: true if this call moved IDLE -> REQUESTED (a pass is then due
 * `delay` from now, and the worker has been asked for it). */
BH__INTERNAL bool bh__pr_request(bh__prdev_t *pr);
/* page_reporting_process: one pass over every zone.  True if blocks came meanwhile (or a list
 * ran out of budget) and another pass is wanted. */
BH__INTERNAL bool bh__pr_pass(bh__prdev_t *pr);

/* The zone lock taken by the worker, and released with the time it was held added to
 * lock_ns. */
BH__INTERNAL uint64_t bh__pr_lock(bh_zone_t *z);
BH__INTERNAL void bh__pr_unlock(bh__prdev_t *pr, bh_zone_t *z, uint64_t t0);
/* prdev->report, zone lock not held: reports n ranges and counts them. */
BH__INTERNAL int bh__pr_report(bh__prdev_t *pr, const bh_report_range_t *r, unsigned n);
/* page_reporting_drain, zone lock held: the n isolated blocks back at their list tails, the
 * ones that did not merge marked reported if the report went through. */
BH__INTERNAL void bh__pr_drain(bh__prdev_t *pr, bh_zone_t *z, const bh_report_range_t *r,
                               unsigned n, bool reported);

/* The counters every strategy built on this emits (bh_strategy_ops_t.stats), in two runs: the
 * requests and reports, then the cycles' outcomes, the worker's lock time and the arena's
 * allocations and merges of reported blocks. */
BH__INTERNAL void bh__pr_stats_reports(bh__prdev_t *pr, bh_stat_emit_fn emit, void *ctx);
BH__INTERNAL void bh__pr_stats_cycles(bh__prdev_t *pr, bh_stat_emit_fn emit, void *ctx);

#endif
