/*
 * Free page reporting's cycle, shared by bubble and adaptive: see page_reporting.h, and
 * src/strategies/bubble.c for the whole description of what a pass does and why.
 */
#include "strategies/page_reporting.h"

#include <string.h>
#include <time.h>

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * BH_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

void bh__pr_init(bh__prdev_t *pr, bh_hint_t *h) {
  bh_arena_t *a = bh_hint_arena(h);
  memset(pr, 0, sizeof(*pr));
  pr->h = h;
  pr->a = a;
  pr->max_order = bh_arena_max_order(a);
  pr->order = bh_arena_pageblock_order(a);
  pr->capacity = BH_REPORT_CAPACITY;
  pr->delay_ns = BH__PR_DEFAULT_DELAY_NS;
  pr->budget = true;
  pr->rotate = true;
  pr->nzones = bh_zone_count(a);
  atomic_init(&pr->state, BH__PR_IDLE);
  atomic_init(&pr->pass_due, UINT64_MAX);
}

bool bh__pr_request(bh__prdev_t *pr) {
  if (atomic_load_explicit(&pr->state, memory_order_relaxed) == BH__PR_REQUESTED)
    return false;
  if (atomic_exchange(&pr->state, BH__PR_REQUESTED) != BH__PR_IDLE)
    return false; /* ACTIVE: the worker sees REQUESTED when its pass ends and requeues */
  atomic_fetch_add_explicit(&pr->requests, 1, memory_order_relaxed);
  atomic_store(&pr->pass_due, bh_hint_delay_due(pr->h, pr->delay_ns));
  bh_hint_request(pr->h, pr->delay_ns);
  return true;
}

uint64_t bh__pr_lock(bh_zone_t *z) {
  bh_zone_lock(z);
  return mono_ns();
}

void bh__pr_unlock(bh__prdev_t *pr, bh_zone_t *z, uint64_t t0) {
  bh__pr_bump(&pr->lock_ns, mono_ns() - t0);
  bh_zone_unlock(z);
}

int bh__pr_report(bh__prdev_t *pr, const bh_report_range_t *r, unsigned n) {
  int err = bh_hint_report(pr->h, r, n);
  bh__pr_bump(&pr->report_calls, 1);
  if (err) {
    bh__pr_bump(&pr->report_errors, 1);
    return err;
  }
  uint64_t pages = 0;
  for (unsigned i = 0; i < n; i++)
    pages += 1ull << r[i].order;
  bh__pr_bump(&pr->blocks_reported, n);
  bh__pr_bump(&pr->pages_reported, pages);
  return BH_OK;
}

void bh__pr_drain(bh__prdev_t *pr, bh_zone_t *z, const bh_report_range_t *r, unsigned n,
                  bool reported) {
  for (unsigned i = 0; i < n; i++) {
    bool still_head = false;
    bh_zone_putback(z, r[i].pfn, r[i].order, &still_head);
    if (!reported)
      continue;
    if (!still_head) { /* it merged: reported later, at the higher order */
      bh__pr_bump(&pr->putback_merged, 1);
      continue;
    }
    bh_block_set_reported(z, r[i].pfn);
    if (pr->zones)
      pr->zones[bh_zone_index(z)].reported[r[i].order]++;
  }
}

/* The scatterlist: entries [offset, capacity) are isolated blocks waiting to be reported. */
struct pr_batch {
  bh_report_range_t r[BH_REPORT_CAPACITY];
  unsigned offset;
};

/*
 * page_reporting_cycle: fill, report, drain over one free list until the budget is spent,
 * an isolation fails, a report fails, or the list holds no unmarked block.
 */
static int pr_cycle(bh__prdev_t *pr, bh_zone_t *z, unsigned order, int mt, struct pr_batch *bt) {
  uint64_t t0 = bh__pr_lock(z);
  uint64_t pfn = bh_free_list_first(z, order, mt);
  if (pfn == BH_PFN_NONE) {
    bh__pr_unlock(pr, z, t0);
    return BH_OK;
  }
  bh__pr_bump(&pr->cycles, 1);
  /* report calls for this list in this pass: a sixteenth of the order's blocks, rounded up */
  uint64_t per_call = (uint64_t)pr->capacity * 16;
  int64_t budget =
      pr->budget ? (int64_t)((bh_zone_nr_free(z, order) + per_call - 1) / per_call) : INT64_MAX;
  uint64_t stop = BH_PFN_NONE; /* first block left unprocessed, to resume from next pass */
  int err = BH_OK;
  while (pfn != BH_PFN_NONE) {
    /* read the link first: isolating pfn takes it off the list */
    uint64_t next = bh_free_list_next(z, order, mt, pfn);
    if (bh_block_reported(z, pfn)) {
      bh__pr_bump(&pr->skipped_reported, 1);
      pfn = next;
      continue;
    }
    if (budget < 0) {
      atomic_store(&pr->state, BH__PR_REQUESTED);
      bh__pr_bump(&pr->budget_exhausted, 1);
      stop = pfn;
      break;
    }
    if (bt->offset) {
      if (bh_zone_isolate(z, pfn, order) != BH_OK) {
        bh__pr_bump(&pr->isolate_fail, 1);
        stop = pfn;
        break;
      }
      bt->r[--bt->offset] = (bh_report_range_t){.pfn = pfn, .order = order};
      pfn = next;
      continue;
    }
    /* the batch is full: pfn, the first unprocessed block, becomes the head */
    if (pr->rotate)
      bh_free_list_rotate(z, order, mt, pfn);
    bh__pr_unlock(pr, z, t0);
    err = bh__pr_report(pr, bt->r, pr->capacity);
    bt->offset = pr->capacity;
    budget--;
    t0 = bh__pr_lock(z);
    bh__pr_drain(pr, z, bt->r, pr->capacity, err == BH_OK);
    /* the lock was dropped: start again from the head */
    pfn = bh_free_list_first(z, order, mt);
    if (err) {
      stop = pfn;
      break;
    }
  }
  /* resume from the block we stopped at next time */
  if (pr->rotate && stop != BH_PFN_NONE)
    bh_free_list_rotate(z, order, mt, stop);
  bh__pr_unlock(pr, z, t0);
  return err;
}

/* page_reporting_process_zone */
static int pr_process_zone(bh__prdev_t *pr, bh_zone_t *z) {
  uint64_t t0 = bh__pr_lock(z);
  bool room = bh_zone_low_wmark_ok(z, (uint64_t)pr->capacity << pr->order);
  bh__pr_unlock(pr, z, t0);
  if (!room) {
    bh__pr_bump(&pr->zone_skipped_wmark, 1);
    return BH_OK;
  }
  struct pr_batch bt;
  bt.offset = pr->capacity;
  for (unsigned order = pr->order; order <= pr->max_order; order++)
    for (int mt = 0; mt < BH_MT_TYPES; mt++) {
      if (mt == BH_MT_ISOLATE)
        continue;
      int err = pr_cycle(pr, z, order, mt, &bt);
      if (err)
        return err; /* a failed report was drained: the batch is empty */
    }
  /* report what is left in the batch before going idle */
  unsigned leftover = pr->capacity - bt.offset;
  if (!leftover)
    return BH_OK;
  int err = bh__pr_report(pr, &bt.r[bt.offset], leftover);
  t0 = bh__pr_lock(z);
  bh__pr_drain(pr, z, &bt.r[bt.offset], leftover, err == BH_OK);
  bh__pr_unlock(pr, z, t0);
  return err;
}

bool bh__pr_pass(bh__prdev_t *pr) {
  atomic_store(&pr->pass_due, UINT64_MAX);
  atomic_store(&pr->state, BH__PR_ACTIVE);
  bh__pr_bump(&pr->passes, 1);
  for (int i = 0; i < pr->nzones; i++)
    if (pr_process_zone(pr, bh_arena_zone(pr->a, i)))
      break;
  int expected = BH__PR_ACTIVE;
  if (atomic_compare_exchange_strong(&pr->state, &expected, BH__PR_IDLE))
    return false;
  /* REQUESTED: more frees meanwhile, or a list out of budget */
  bh__pr_bump(&pr->requeues, 1);
  return true;
}

void bh__pr_stats_reports(bh__prdev_t *pr, bh_stat_emit_fn emit, void *ctx) {
  emit(ctx, "requests", (double)bh__pr_get(&pr->requests));
  emit(ctx, "requeues", (double)bh__pr_get(&pr->requeues));
  emit(ctx, "report_calls", (double)bh__pr_get(&pr->report_calls));
  emit(ctx, "report_errors", (double)bh__pr_get(&pr->report_errors));
  emit(ctx, "blocks_reported", (double)bh__pr_get(&pr->blocks_reported));
  emit(ctx, "bytes_reported", (double)bh__pr_get(&pr->pages_reported) * (double)BH_PAGE_SIZE);
}

void bh__pr_stats_cycles(bh__prdev_t *pr, bh_stat_emit_fn emit, void *ctx) {
  uint64_t ev[BH_NR_STATS];
  bh_stats_read(pr->a, ev);
  emit(ctx, "skipped_reported", (double)bh__pr_get(&pr->skipped_reported));
  emit(ctx, "putback_merged", (double)bh__pr_get(&pr->putback_merged));
  emit(ctx, "zone_skipped_wmark", (double)bh__pr_get(&pr->zone_skipped_wmark));
  emit(ctx, "isolate_fail", (double)bh__pr_get(&pr->isolate_fail));
  emit(ctx, "budget_exhausted", (double)bh__pr_get(&pr->budget_exhausted));
  emit(ctx, "lock_ns", (double)bh__pr_get(&pr->lock_ns));
  emit(ctx, "reported_alloc", (double)ev[BH_STAT_reported_alloc]);
  emit(ctx, "reported_merge", (double)ev[BH_STAT_reported_merge]);
}
