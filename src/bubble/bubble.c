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
#include "buddy/internal.h"
#include "hinting/hint.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BUB_IDLE, BUB_REQUESTED, BUB_ACTIVE };

#define BUB_DEFAULT_DELAY_NS (2 * BH_NS_PER_SEC) /* PAGE_REPORTING_DELAY = 2 * HZ */

typedef _Atomic uint64_t bub_counter_t;

/* Per zone: reported free blocks per order (hwm only), under the zone lock. */
struct bub_zone {
  uint64_t reported[BH_ORDER_LIMIT + 1];
};

/* The scatterlist: entries [offset, capacity) are isolated blocks waiting to be reported. */
struct bub_batch {
  bh_report_range_t r[BH_REPORT_CAPACITY];
  unsigned offset;
};

struct bubble {
  bh_hint_t *h;
  bh_arena_t *a;
  unsigned order, max_order, capacity;
  uint64_t delay_ns, hwm;
  bool budget, rotate;
  int nzones;
  struct bub_zone *zones; /* hwm > 0 only */
  /* read by every notification: kept off the lines the worker's counters dirty */
  _Alignas(64) atomic_int state;
  /* counters: the worker's (one writer) and the hooks' (any thread) */
  _Alignas(64) bub_counter_t passes, cycles, blocks_reported, pages_reported, report_calls,
      report_errors;
  bub_counter_t skipped_reported, zone_skipped_wmark, isolate_fail, budget_exhausted, requeues;
  bub_counter_t putback_merged, lock_ns;
  bub_counter_t requests, hwm_deferred;
};

/* ---- small helpers ---- */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * BH_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* A counter with one writer (the worker): no read-modify-write needed. */
static inline void bump(bub_counter_t *c, uint64_t n) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

static inline uint64_t get(bub_counter_t *c) {
  return atomic_load_explicit(c, memory_order_relaxed);
}

/* Zone lock taken by the worker, with the time held added to lock_ns. */
static uint64_t wlock(bh_zone_t *z) {
  bh_zone_lock(z);
  return mono_ns();
}

static void wunlock(struct bubble *b, bh_zone_t *z, uint64_t t0) {
  bump(&b->lock_ns, mono_ns() - t0);
  bh_zone_unlock(z);
}

/* ---- the state machine ---- */

/* __page_reporting_request */
static void bub_request(struct bubble *b) {
  if (atomic_load_explicit(&b->state, memory_order_relaxed) == BUB_REQUESTED)
    return;
  if (atomic_exchange(&b->state, BUB_REQUESTED) != BUB_IDLE)
    return; /* ACTIVE: the worker will see REQUESTED when its pass ends */
  atomic_fetch_add_explicit(&b->requests, 1, memory_order_relaxed);
  bh_hint_request(b->h, b->delay_ns);
}

/* page_reporting_notify_free: runs under the zone lock for final orders >= b->order. */
static void bub_notify(void *state, bh_zone_t *z, uint64_t pfn, unsigned order) {
  struct bubble *b = state;
  if (b->hwm) {
    uint64_t nr = bh_zone_nr_free(z, order), rep = b->zones[bh_zone_index(z)].reported[order];
    if (nr < rep + b->hwm) { /* fewer than hwm unreported blocks of this order */
      atomic_fetch_add_explicit(&b->hwm_deferred, 1, memory_order_relaxed);
      return;
    }
  }
  bub_request(b);
}

/* hwm only: a reported block leaves a free list (its flag is still visible here).  A block
 * may carry the flag without having been counted: a replay starts the blocks its machine had
 * reported already with it (the count then runs low, and requests come early, not never). */
static void bub_del(void *state, bh_zone_t *z, uint64_t pfn, unsigned order, int reason) {
  struct bubble *b = state;
  uint64_t *rep = &b->zones[bh_zone_index(z)].reported[order];
  if (bh_block_reported(z, pfn) && *rep)
    (*rep)--;
}

/* ---- one pass ---- */

/*
 * page_reporting_drain: puts n isolated blocks back at the tail of their lists and marks the
 * ones that did not merge, if the report succeeded.  Zone lock held.
 */
static void bub_drain(struct bubble *b, bh_zone_t *z, const bh_report_range_t *r, unsigned n,
                      bool reported) {
  for (unsigned i = 0; i < n; i++) {
    bool still_head = false;
    bh_zone_putback(z, r[i].pfn, r[i].order, &still_head);
    if (!reported)
      continue;
    if (!still_head) {
      bump(&b->putback_merged, 1);
      continue;
    }
    bh_block_set_reported(z, r[i].pfn);
    if (b->hwm)
      b->zones[bh_zone_index(z)].reported[r[i].order]++;
  }
}

/* prdev->report: zone lock not held. */
static int bub_report(struct bubble *b, const bh_report_range_t *r, unsigned n) {
  int err = bh_hint_report(b->h, r, n);
  bump(&b->report_calls, 1);
  if (err) {
    bump(&b->report_errors, 1);
    return err;
  }
  uint64_t pages = 0;
  for (unsigned i = 0; i < n; i++)
    pages += 1ull << r[i].order;
  bump(&b->blocks_reported, n);
  bump(&b->pages_reported, pages);
  return BH_OK;
}

/*
 * page_reporting_cycle: fill, report, drain over one free list until the budget is spent,
 * an isolation fails, a report fails, or the list holds no unmarked block.
 */
static int bub_cycle(struct bubble *b, bh_zone_t *z, unsigned order, int mt, struct bub_batch *bt) {
  uint64_t t0 = wlock(z);
  uint64_t pfn = bh_free_list_first(z, order, mt);
  if (pfn == BH_PFN_NONE) {
    wunlock(b, z, t0);
    return BH_OK;
  }
  bump(&b->cycles, 1);
  /* report calls for this list in this pass: a sixteenth of the order's blocks, rounded up */
  uint64_t per_call = (uint64_t)b->capacity * 16;
  int64_t budget =
      b->budget ? (int64_t)((bh_zone_nr_free(z, order) + per_call - 1) / per_call) : INT64_MAX;
  uint64_t stop = BH_PFN_NONE; /* first block left unprocessed, to resume from next pass */
  int err = BH_OK;
  while (pfn != BH_PFN_NONE) {
    /* read the link first: isolating pfn takes it off the list */
    uint64_t next = bh_free_list_next(z, order, mt, pfn);
    if (bh_block_reported(z, pfn)) {
      bump(&b->skipped_reported, 1);
      pfn = next;
      continue;
    }
    if (budget < 0) {
      atomic_store(&b->state, BUB_REQUESTED);
      bump(&b->budget_exhausted, 1);
      stop = pfn;
      break;
    }
    if (bt->offset) {
      if (bh_zone_isolate(z, pfn, order) != BH_OK) {
        bump(&b->isolate_fail, 1);
        stop = pfn;
        break;
      }
      bt->r[--bt->offset] = (bh_report_range_t){.pfn = pfn, .order = order};
      pfn = next;
      continue;
    }
    /* the batch is full: pfn, the first unprocessed block, becomes the head */
    if (b->rotate)
      bh_free_list_rotate(z, order, mt, pfn);
    wunlock(b, z, t0);
    err = bub_report(b, bt->r, b->capacity);
    bt->offset = b->capacity;
    budget--;
    t0 = wlock(z);
    bub_drain(b, z, bt->r, b->capacity, err == BH_OK);
    /* the lock was dropped: start again from the head */
    pfn = bh_free_list_first(z, order, mt);
    if (err) {
      stop = pfn;
      break;
    }
  }
  /* resume from the block we stopped at next time */
  if (b->rotate && stop != BH_PFN_NONE)
    bh_free_list_rotate(z, order, mt, stop);
  wunlock(b, z, t0);
  return err;
}

/* page_reporting_process_zone */
static int bub_process_zone(struct bubble *b, bh_zone_t *z) {
  uint64_t t0 = wlock(z);
  bool room = bh_zone_low_wmark_ok(z, (uint64_t)b->capacity << b->order);
  wunlock(b, z, t0);
  if (!room) {
    bump(&b->zone_skipped_wmark, 1);
    return BH_OK;
  }
  struct bub_batch bt;
  bt.offset = b->capacity;
  for (unsigned order = b->order; order <= b->max_order; order++) {
    for (int mt = 0; mt < BH_MT_TYPES; mt++) {
      if (mt == BH_MT_ISOLATE)
        continue;
      int err = bub_cycle(b, z, order, mt, &bt);
      if (err)
        return err; /* a failed report was drained: the batch is empty */
    }
  }
  /* report what is left in the batch before going idle */
  unsigned leftover = b->capacity - bt.offset;
  if (!leftover)
    return BH_OK;
  int err = bub_report(b, &bt.r[bt.offset], leftover);
  t0 = wlock(z);
  bub_drain(b, z, &bt.r[bt.offset], leftover, err == BH_OK);
  wunlock(b, z, t0);
  return err;
}

/* page_reporting_process */
static uint64_t bub_step(void *state, uint64_t now) {
  struct bubble *b = state;
  atomic_store(&b->state, BUB_ACTIVE);
  bump(&b->passes, 1);
  for (int i = 0; i < b->nzones; i++)
    if (bub_process_zone(b, bh_arena_zone(b->a, i)))
      break;
  int expected = BUB_ACTIVE;
  if (atomic_compare_exchange_strong(&b->state, &expected, BUB_IDLE))
    return BH_HINT_IDLE;
  /* REQUESTED: more frees meanwhile, or a list out of budget */
  bump(&b->requeues, 1);
  uint64_t t = bh_hint_now(b->h);
  return t < now ? now + b->delay_ns : t + b->delay_ns;
}

/* ---- create / destroy / stats ---- */

static int bub_options(struct bubble *b, const bh_opt_t *opts, size_t nopts) {
  for (size_t i = 0; i < nopts; i++) {
    const bh_opt_t *o = &opts[i];
    uint64_t v = 0;
    int err = BH_OK;
    if (!o->key) {
      bh_hint_set_error(b->h, "bubble: option without a name");
      return BH_EINVAL;
    } else if (!strcmp(o->key, "order")) {
      err = bh_opt_u64(o, 0, b->max_order, &v);
      b->order = (unsigned)v;
    } else if (!strcmp(o->key, "delay")) {
      err = bh_opt_duration(o, &b->delay_ns);
    } else if (!strcmp(o->key, "capacity")) {
      err = bh_opt_u64(o, 1, BH_REPORT_CAPACITY, &v);
      if (!err && (v & (v - 1)))
        err = BH_EINVAL;
      b->capacity = (unsigned)v;
    } else if (!strcmp(o->key, "budget")) {
      err = bh_opt_bool(o, &b->budget);
    } else if (!strcmp(o->key, "rotate")) {
      err = bh_opt_bool(o, &b->rotate);
    } else if (!strcmp(o->key, "hwm")) {
      err = bh_opt_u64(o, 0, UINT32_MAX, &b->hwm);
    } else {
      bh_hint_set_error(b->h, "bubble: unknown option '%s'", o->key);
      return BH_EINVAL;
    }
    if (err) {
      bh_hint_set_error(b->h, "bubble: bad value '%s' for %s", o->value ? o->value : "", o->key);
      return BH_EINVAL;
    }
  }
  return BH_OK;
}

static void bub_destroy(void *state) {
  struct bubble *b = state;
  free(b->zones);
  free(b);
}

static int bub_create(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state) {
  bh_arena_t *a = bh_hint_arena(h);
  struct bubble *b = aligned_alloc(64, sizeof(*b)); /* sizeof is a multiple of 64 */
  if (!b)
    return BH_ENOMEM;
  memset(b, 0, sizeof(*b));
  b->h = h;
  b->a = a;
  b->max_order = bh_arena_max_order(a);
  b->order = bh_arena_pageblock_order(a);
  b->capacity = BH_REPORT_CAPACITY;
  b->delay_ns = BUB_DEFAULT_DELAY_NS;
  b->budget = true;
  b->rotate = true;
  b->nzones = bh_arena_zone_count(a);
  atomic_init(&b->state, BUB_IDLE);
  int err = bub_options(b, opts, nopts);
  if (!err && b->hwm) {
    b->zones = calloc((size_t)b->nzones, sizeof(*b->zones));
    if (!b->zones)
      err = BH_ENOMEM;
  }
  if (err) {
    bub_destroy(b);
    return err;
  }
  *state = b;
  bh_hint_set_orders(h, b->order, b->hwm ? b->order : UINT8_MAX);
  /* page_reporting_register: begin the initial flush of the zones */
  bub_request(b);
  return BH_OK;
}

static void bub_stats(void *state, bh_stat_emit_fn emit, void *ctx) {
  struct bubble *b = state;
  uint64_t ev[BH_NR_STATS];
  bh_stats_read(b->a, ev);
  emit(ctx, "passes", (double)get(&b->passes));
  emit(ctx, "cycles", (double)get(&b->cycles));
  emit(ctx, "requests", (double)get(&b->requests));
  emit(ctx, "requeues", (double)get(&b->requeues));
  emit(ctx, "report_calls", (double)get(&b->report_calls));
  emit(ctx, "report_errors", (double)get(&b->report_errors));
  emit(ctx, "blocks_reported", (double)get(&b->blocks_reported));
  emit(ctx, "bytes_reported", (double)get(&b->pages_reported) * (double)BH_PAGE_SIZE);
  emit(ctx, "skipped_reported", (double)get(&b->skipped_reported));
  emit(ctx, "putback_merged", (double)get(&b->putback_merged));
  emit(ctx, "zone_skipped_wmark", (double)get(&b->zone_skipped_wmark));
  emit(ctx, "isolate_fail", (double)get(&b->isolate_fail));
  emit(ctx, "budget_exhausted", (double)get(&b->budget_exhausted));
  emit(ctx, "hwm_deferred", (double)get(&b->hwm_deferred));
  emit(ctx, "lock_ns", (double)get(&b->lock_ns));
  emit(ctx, "reported_alloc", (double)ev[BH_STAT_reported_alloc]);
  emit(ctx, "reported_merge", (double)ev[BH_STAT_reported_merge]);
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
