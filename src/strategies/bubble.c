/*
 * Bubble hinting: free page reporting as Linux 5.7+ does it (mm/page_reporting.c, Alexander
 * Duyck's series, merged as v17 and refined since), on the allocator's own free lists.
 *
 * The allocator notifies us after the final merge of every freed block of the reporting order
 * (pageblock order by default) or above.  A notification moves a three-state machine
 * IDLE -> REQUESTED and, coming from IDLE, schedules the worker `delay` (2 s) later, so that a
 * sizable amount of free memory builds up and the worker runs at most once per delay.  The
 * worker sets ACTIVE and makes one pass over every zone; at the end it swaps ACTIVE -> IDLE.
 * If it finds REQUESTED instead (blocks were freed during the pass, or a list ran out of
 * budget) it runs again one delay later.
 *
 * A pass skips a zone whose free memory is below the low watermark + capacity << order (there
 * must be room to hold a full batch off the lists).  Otherwise, for each order from the
 * reporting order up to max order and each migratetype but Isolate, in the kernel's order, it
 * runs a cycle over that free list, head to tail: blocks marked reported are skipped; unmarked
 * ones are isolated (taken off the list under the min-watermark check) into a batch of
 * `capacity` (32) entries, filled from the end.  When the batch is full and another unmarked
 * block is found, the list is rotated so that this block becomes the head, the zone lock is
 * dropped, the batch is reported to the host (madvise), and under the lock again every block
 * goes back to the TAIL of its list (without a new notification; it may merge).  A block that
 * came back as the same free block is marked reported; one that merged stays unmarked and is
 * reported later at the higher order.  The walk then restarts from the list head.  The batch
 * carries over from list to list within a zone; what is left in it at the end of the zone is
 * reported then.
 *
 * Where reported blocks end up: at the tail of their list, with unreported and newly freed
 * blocks before them (frees go to the head).  Allocation takes blocks from the head, so
 * reported memory -- memory the host has discarded, which costs a refault to use again -- is
 * reused last, and a walk meets the work it has to do first.
 *
 * The budget bounds the time spent on one list in one pass: DIV_ROUND_UP(nr_free(order),
 * capacity * 16) report calls, about one sixteenth of the blocks of that order, plus one more
 * call because a report is only made when a further unmarked block is met (the extra call
 * also flushes blocks carried over from the previous list).  A cycle whose budget is spent
 * sets REQUESTED and stops at the next unmarked block, which it rotates to the front of the
 * list: the next pass, a delay later, resumes there.  An idle machine is thus fully reported
 * in about 16 passes, ~30 s.
 *
 * PageReported is kept by the allocator core: cleared whenever a block leaves a free list
 * (allocation, merge as a buddy, isolation), kept when the block only changes migratetype
 * list, never set on the halves of a split.
 *
 * Options modelling the earlier versions of the series (defaults are the merged behaviour):
 *   budget=0  no per-pass budget: a cycle runs to the end of its list (the first merged
 *             version, v17, had neither the budget nor the rotation: budget=0 rotate=0);
 *   rotate=0  no list rotation: neither before a report nor at the stop point, so every
 *             restart walks again over the reported blocks at the head of the list, and a
 *             list stopped by the budget keeps its skipped (reported) blocks in front;
 *   hwm=N     request a pass only when the unreported blocks of the freed block's order in
 *             its zone (nr_free minus reported) reach N, as Duyck's v1 "aeration" and v2
 *             "hinted pages" did with N = 32 (0 = off: every qualifying free requests).
 *             The reported counts are kept through the del hook, which sees the block's
 *             PageReported before the core clears it.
 * capacity=N (a power of two up to 32) changes the batch size, and with it the watermark
 * margin and the budget divisor, as PAGE_REPORTING_CAPACITY does.
 *
 * As in the kernel's page_reporting_register(), attaching requests an initial pass (one delay
 * after attaching) that reports whatever is already free.
 */
#include "strategies/page_reporting.h"
#include "strategies/strategies.h"

#include <stdlib.h>
#include <string.h>

struct bubble {
  bh__prdev_t pr; /* the cycle, its state and its counters (src/strategies/page_reporting.c) */
  uint64_t hwm;
  _Atomic uint64_t hwm_deferred; /* notifications that did not request (hwm only) */
};

/* page_reporting_notify_free: runs under the zone lock for final orders >= the reporting
 * order. */
static void bub_notify(void *state, bh_zone_t *z, uint64_t pfn, unsigned order) {
  struct bubble *b = state;
  if (b->hwm) {
    uint64_t nr = bh_zone_nr_free(z, order), rep = b->pr.zones[bh_zone_index(z)].reported[order];
    if (nr < rep + b->hwm) { /* fewer than hwm unreported blocks of this order */
      atomic_fetch_add_explicit(&b->hwm_deferred, 1, memory_order_relaxed);
      return;
    }
  }
  bh__pr_request(&b->pr);
}

/* hwm only: a reported block leaves a free list (its flag is still visible here).  A block
 * may carry the flag without having been counted: a replay starts the blocks its machine had
 * reported already with it (the count then runs low, and requests come early, not never). */
static void bub_del(void *state, bh_zone_t *z, uint64_t pfn, unsigned order, int reason) {
  struct bubble *b = state;
  uint64_t *rep = &b->pr.zones[bh_zone_index(z)].reported[order];
  if (bh_block_reported(z, pfn) && *rep)
    (*rep)--;
}

/* page_reporting_process, and a requeued pass one delay later */
static uint64_t bub_step(void *state, uint64_t now) {
  struct bubble *b = state;
  if (!bh__pr_pass(&b->pr))
    return BH_HINT_IDLE;
  uint64_t t = bh_hint_now(b->pr.h);
  return t < now ? now + b->pr.delay_ns : bh_hint_delay_due(b->pr.h, b->pr.delay_ns);
}

/* ---- create / destroy / stats ---- */

static int bub_options(struct bubble *b, const bh_opt_t *opts, size_t nopts) {
  for (size_t i = 0; i < nopts; i++) {
    const bh_opt_t *o = &opts[i];
    uint64_t v = 0;
    int err = BH_OK;
    if (!o->key) {
      bh_hint_set_error(b->pr.h, "bubble: option without a name");
      return BH_EINVAL;
    } else if (!strcmp(o->key, "order")) {
      err = bh_opt_u64(o, 0, b->pr.max_order, &v);
      b->pr.order = (unsigned)v;
    } else if (!strcmp(o->key, "delay")) {
      err = bh_opt_duration(o, &b->pr.delay_ns);
    } else if (!strcmp(o->key, "capacity")) {
      err = bh_opt_u64(o, 1, BH_REPORT_CAPACITY, &v);
      if (!err && (v & (v - 1)))
        err = BH_EINVAL;
      b->pr.capacity = (unsigned)v;
    } else if (!strcmp(o->key, "budget")) {
      err = bh_opt_bool(o, &b->pr.budget);
    } else if (!strcmp(o->key, "rotate")) {
      err = bh_opt_bool(o, &b->pr.rotate);
    } else if (!strcmp(o->key, "hwm")) {
      err = bh_opt_u64(o, 0, UINT32_MAX, &b->hwm);
    } else {
      bh_hint_set_error(b->pr.h, "bubble: unknown option '%s'", o->key);
      return BH_EINVAL;
    }
    if (err) {
      bh_hint_set_error(b->pr.h, "bubble: bad value '%s' for %s", o->value ? o->value : "", o->key);
      return BH_EINVAL;
    }
  }
  return BH_OK;
}

static void bub_destroy(void *state) {
  struct bubble *b = state;
  free(b->pr.zones);
  free(b);
}

static int bub_create(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state) {
  struct bubble *b = aligned_alloc(64, (sizeof(*b) + 63) & ~(size_t)63);
  if (!b)
    return BH_ENOMEM;
  memset(b, 0, sizeof(*b));
  bh__pr_init(&b->pr, h);
  int err = bub_options(b, opts, nopts);
  if (!err && b->hwm) {
    b->pr.zones = calloc((size_t)b->pr.nzones, sizeof(*b->pr.zones));
    if (!b->pr.zones)
      err = BH_ENOMEM;
  }
  if (err) {
    bub_destroy(b);
    return err;
  }
  *state = b;
  bh_hint_set_orders(h, b->pr.order, b->hwm ? b->pr.order : UINT8_MAX);
  /* page_reporting_register: begin the initial flush of the zones (mm/page_reporting.c:
   * 385-386); a machine that has been running did it at boot, and its first pass since comes
   * from a free that reaches the reporting order (page_reporting_notify_free) */
  if (!bh_hint_registered_at_boot(h))
    bh__pr_request(&b->pr);
  return BH_OK;
}

static void bub_stats(void *state, bh_stat_emit_fn emit, void *ctx) {
  struct bubble *b = state;
  emit(ctx, "passes", (double)bh__pr_get(&b->pr.passes));
  emit(ctx, "cycles", (double)bh__pr_get(&b->pr.cycles));
  bh__pr_stats_reports(&b->pr, emit, ctx);
  bh__pr_stats_cycles(&b->pr, emit, ctx);
  emit(ctx, "hwm_deferred", (double)atomic_load_explicit(&b->hwm_deferred, memory_order_relaxed));
}

const bh_strategy_ops_t bh__strategy_bubble = {
    .name = "bubble",
    .summary = "page-flag free page reporting (Linux 5.7+ page_reporting)",
    .options =
        "order=pageblock_order  reporting order: notify on, and report, blocks of this order "
        "and above\n"
        "delay=2s               wait from the first request to a pass, and between "
        "requeued passes\n"
        "capacity=32            blocks per report call (power of two <= 32)\n"
        "budget=1               per-list budget of ceil(nr_free/(capacity*16)) report "
        "calls per pass (0: v17, none)\n"
        "rotate=1               rotate lists so a pass resumes where it stopped (0: v17, "
        "none)\n"
        "hwm=0                  request only when a zone's unreported blocks of the "
        "freed order reach N (v1/v2: 32)\n",
    .create = bub_create,
    .destroy = bub_destroy,
    .notify = bub_notify,
    .del = bub_del,
    .step = bub_step,
    .stats = bub_stats,
    .flags = BH_STRATEGY_PAGE_REPORTED,
};
