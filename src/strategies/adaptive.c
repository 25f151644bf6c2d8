/*
 * Adaptive hinting: free page reporting at the pageblock order as Linux does it, then at lower
 * orders for memory that has stayed free.
 *
 * Free page reporting (mm/page_reporting.c, the `bubble` strategy) reports free blocks of at
 * least page_reporting_order, the pageblock order by default.  Memory that is free only in
 * smaller blocks -- between pages that stay allocated -- is never returned, and lowering the
 * order returns it at the price of many more, smaller reports, among them blocks that are
 * about to be allocated again.  This strategy keeps the first part and adds the second with a
 * filter: a block below the reporting order is reported only once it has stayed free for an
 * idle age that grows as its order shrinks, and at a bounded rate.
 *
 * Part one, at `order` (pageblock order) and above, is page_reporting's cycle unchanged: a
 * notification after the final merge of a freed block of that order requests a pass `delay`
 * (2 s) later (IDLE -> REQUESTED -> ACTIVE); a pass skips a zone below the low watermark +
 * capacity << order, walks each free list head to tail, isolates unreported blocks into a
 * batch of `capacity` (32), rotates the list to the next unreported block, reports the batch
 * without the zone lock, puts the blocks back at the list tail and marks PageReported on the
 * ones that did not merge; a per-list budget of DIV_ROUND_UP(nr_free, capacity * 16) report
 * calls per pass, and a pass again one delay later while blocks keep coming.
 *
 * Part two, orders `low` .. order-1 ("aging orders"), runs every `interval` (2 s) while
 * hinting is attached: an idle block raises no event, so only a clock can tell that it has
 * stayed free.  Each scan walks the aging orders' free lists of every zone under the zone
 * lock.  A block it has not seen before gets the strategy mark (bh_block_set_mark) with the
 * scan's time as its value.  The allocator drops that mark whenever the block leaves its free
 * list (allocation, merge, split, isolation, compaction), at no cost to it, so a block that
 * still carries a mark has been free, as this block, at least since the time the mark holds
 * (its age is known to within one interval).  A block of order k is due once it reaches
 *
 *     age(k) = age * growth^(order - 1 - k)       (defaults: age 32 s, growth 1.1:
 *                                                  32 s at order 8 ... 51.5 s at order 3)
 *
 * one `age` for the largest aging order and `growth` times longer for each order below.  With
 * `runs` (the default) k is not the block's own order but the size class of the run of
 * unreported free blocks it lies in, floor(log2(pages)): neighbours that one madvise call
 * returns together are aged, and reported, together, and the run's youngest block holds the
 * others back.  Measured on the recorded traces (docs/ADAPTIVE.md): the age has to outlast
 * the time over which a workload reuses its free memory, or the strategy reports memory that
 * is about to refault (from 28 s on no trace refaulted more than with bubble), and the age of
 * the lowest order has to fit in the idle time over which memory is meant to come back (under
 * a minute here), which bounds the growth; runs halve to third the madvise calls for the same
 * memory.
 *
 * Due blocks are reported largest first: when a scan finds more than the rate cap lets it
 * report (`rate` host calls -- madvise ranges after merging neighbours -- per second, at most
 * rate * interval at once; 0 is no cap), the larger ones go, the rest wait for the next scan.
 * The blocks a scan reports are sorted by address before they are cut into batches, so that
 * neighbours go to the host as one range.  A batch is isolated (with the min watermark
 * check), reported without the lock, put back at the list tail and marked reported, as part
 * one does: reported small blocks are reused last, and their flag stays until the block
 * leaves its list.
 *
 * With low = order the aging part is off and the strategy reports exactly what bubble does.
 */
#include "strategies/page_reporting.h"
#include "strategies/strategies.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AD_DEFAULT_INTERVAL_NS (2 * BH_NS_PER_SEC) /* aging scan period */
#define AD_DEFAULT_AGE_NS (32 * BH_NS_PER_SEC)     /* age of the largest aging order */
#define AD_DEFAULT_GROWTH 1.1
#define AD_DEFAULT_LOW 3     /* PAGE_ALLOC_COSTLY_ORDER, as bubble:order=3 */
#define AD_DEFAULT_RATE 16.0 /* host calls per second for the aging orders */
#define AD_MAX_AGE_NS (24ull * 3600 * BH_NS_PER_SEC)
#define AD_NS_PER_MS 1000000ull

typedef bh__pr_counter_t ad_counter_t;

/* An unreported free block of an aging order, as a scan saw it. */
struct ad_blk {
  uint64_t pfn;
  uint32_t since; /* its mark: free since then (ms after epoch_ns) */
  uint8_t order;
  uint8_t cls;  /* the order whose age applies: its own, or its run's size class */
  uint8_t take; /* chosen under the rate cap */
};

/* Due blocks side by side, blk[first .. first + n): one range for the host. */
struct ad_piece {
  size_t first, n;
  uint8_t cls;
};

struct adaptive {
  bh__prdev_t pr; /* part one, page_reporting's cycle (src/strategies/page_reporting.c), and
                   * the settings both parts share: the arena, order, max_order, capacity */
  unsigned low;
  uint64_t interval_ns, age_ns;
  double growth, rate;
  uint64_t age_ms[BH_ORDER_LIMIT + 1]; /* the idle age of each aging order, in ms */
  /* the aging part (worker only) */
  uint64_t epoch_ns;  /* marks hold milliseconds since this time (attach) */
  uint64_t aging_due; /* next scan */
  double tokens;      /* host calls the rate cap allows now */
  uint64_t tokens_at; /* when tokens was last refilled */
  bool runs;          /* age by the run a block belongs to, not by the block alone */
  struct ad_blk *blk; /* one zone's scan */
  size_t nblk, blk_cap;
  struct ad_piece *piece; /* the due blocks as host calls */
  size_t piece_cap;
  /* part two's counters (part one's, and the totals, are pr's); the worker writes them */
  _Alignas(64) ad_counter_t scans, aged_report_calls, aged_host_calls, aged_blocks,
      aged_pages, marked, rate_deferred;
  ad_counter_t aged_by_order[BH_ORDER_LIMIT + 1];
};

/* ---- part one: page_reporting at the reporting order ---- */

/* page_reporting_notify_free: under the zone lock, for final orders >= the reporting order. */
static void ad_notify(void *state, bh_zone_t *z, uint64_t pfn, unsigned order) {
  struct adaptive *ad = state;
  bh__pr_request(&ad->pr);
}

static void bump(ad_counter_t *c, uint64_t n) { bh__pr_bump(c, n); }
static uint64_t get(ad_counter_t *c) { return bh__pr_get(c); }
static uint64_t wlock(bh_zone_t *z) { return bh__pr_lock(z); }
static void wunlock(struct adaptive *ad, bh_zone_t *z, uint64_t t0) {
  bh__pr_unlock(&ad->pr, z, t0);
}

/* Reports n aging-order ranges: counted in the totals, and as aged. */
static int ad_report_aged_batch(struct adaptive *ad, const bh_report_range_t *r, unsigned n) {
  bump(&ad->aged_report_calls, 1);
  int err = bh__pr_report(&ad->pr, r, n);
  if (err)
    return err;
  uint64_t pages = 0;
  for (unsigned i = 0; i < n; i++) {
    pages += 1ull << r[i].order;
    bump(&ad->aged_by_order[r[i].order], 1);
  }
  bump(&ad->aged_blocks, n);
  bump(&ad->aged_pages, pages);
  return BH_OK;
}

/* ---- part two: aging orders ---- */

static int blk_push(struct adaptive *ad, uint64_t pfn, unsigned order, uint32_t since) {
  if (ad->nblk == ad->blk_cap) {
    size_t cap = ad->blk_cap ? ad->blk_cap * 2 : 256;
    struct ad_blk *b = realloc(ad->blk, cap * sizeof(*b));
    if (!b)
      return BH_ENOMEM;
    ad->blk = b;
    ad->blk_cap = cap;
  }
  ad->blk[ad->nblk++] = (struct ad_blk){.pfn = pfn, .since = since, .order = (uint8_t)order};
  return BH_OK;
}

/*
 * One zone's aging orders, under the lock: every unreported free block, with the time since
 * which it has been free (its mark; a block seen for the first time is marked now).
 */
static void ad_scan_zone(struct adaptive *ad, bh_zone_t *z, uint32_t now_ms) {
  ad->nblk = 0;
  uint64_t t0 = wlock(z);
  for (unsigned k = ad->low; k < ad->pr.order; k++) {
    for (int mt = 0; mt < BH_MT_TYPES; mt++) {
      if (mt == BH_MT_ISOLATE)
        continue;
      for (uint64_t pfn = bh_free_list_first(z, k, mt); pfn != BH_PFN_NONE;
           pfn = bh_free_list_next(z, k, mt, pfn)) {
        uint32_t since;
        if (bh_block_reported(z, pfn))
          continue;
        if (!bh_block_marked(z, pfn, &since)) {
          bh_block_set_mark(z, pfn, now_ms);
          bump(&ad->marked, 1);
          since = now_ms;
        }
        if (blk_push(ad, pfn, k, since) != BH_OK)
          goto out; /* out of memory: age what we have */
      }
    }
  }
out:
  wunlock(ad, z, t0);
}

static int cmp_blk_pfn(const void *x, const void *y) {
  const struct ad_blk *a = x, *b = y;
  return a->pfn < b->pfn ? -1 : a->pfn > b->pfn;
}

static unsigned ilog2_u64(uint64_t v) { return 63u - (unsigned)__builtin_clzll(v); }

/*
 * Which of the scanned blocks are due (blk[] sorted by address): with `runs`, a block belongs
 * to the run of unreported free blocks it touches on either side, and its age is measured
 * against the age of the run's size class, floor(log2(pages)) capped at order - 1 -- memory
 * that one report range would return; without, against the age of its own order.  Keeps the
 * due blocks in blk[] (with their class) and returns how many.
 */
static size_t ad_due(struct adaptive *ad, uint32_t now_ms) {
  size_t n = 0;
  for (size_t i = 0; i < ad->nblk;) {
    size_t j = i + 1;
    uint64_t pages = 1ull << ad->blk[i].order;
    if (ad->runs)
      for (; j < ad->nblk && ad->blk[j - 1].pfn + (1ull << ad->blk[j - 1].order) == ad->blk[j].pfn;
           j++)
        pages += 1ull << ad->blk[j].order;
    unsigned run_cls = ilog2_u64(pages);
    if (run_cls > ad->pr.order - 1)
      run_cls = ad->pr.order - 1;
    for (; i < j; i++) {
      struct ad_blk b = ad->blk[i];
      b.cls = (uint8_t)(ad->runs ? run_cls : b.order);
      b.take = 0;
      if ((uint32_t)(now_ms - b.since) >= ad->age_ms[b.cls])
        ad->blk[n++] = b;
    }
  }
  return n;
}

/* Host calls (madvise ranges) a batch sorted by address takes: one per run of neighbours. */
static long host_calls(const bh_report_range_t *r, unsigned m) {
  long calls = m ? 1 : 0;
  for (unsigned i = 1; i < m; i++)
    calls += r[i - 1].pfn + (1ull << r[i - 1].order) != r[i].pfn;
  return calls;
}

/*
 * Reports the due blocks c[0..n) of zone z, sorted by address, in batches of `capacity`.  A
 * block is taken only if it is still the unreported free block that carried our mark when the
 * scan saw it (a block that left its list lost the mark).  Returns the host calls the reports
 * took (ranges after merging neighbours, what the rate cap counts), or a negative error if a
 * report failed.
 */
static long ad_report_aged(struct adaptive *ad, bh_zone_t *z, const struct ad_blk *c, size_t n) {
  long calls = 0;
  size_t i = 0;
  while (i < n) {
    bh_report_range_t r[BH_REPORT_CAPACITY];
    unsigned m = 0;
    bool stop = false;
    uint64_t t0 = wlock(z);
    for (; i < n && m < ad->pr.capacity; i++) {
      unsigned order;
      if (!bh_zone_free_block(z, c[i].pfn, &order, NULL) || order != c[i].order ||
          !bh_block_marked(z, c[i].pfn, NULL) || bh_block_reported(z, c[i].pfn))
        continue;
      if (bh_zone_isolate(z, c[i].pfn, order) != BH_OK) {
        bump(&ad->pr.isolate_fail, 1);
        stop = true;
        break;
      }
      r[m++] = (bh_report_range_t){.pfn = c[i].pfn, .order = order};
    }
    wunlock(ad, z, t0);
    if (!m)
      break;
    int err = ad_report_aged_batch(ad, r, m);
    calls += host_calls(r, m);
    t0 = wlock(z);
    bh__pr_drain(&ad->pr, z, r, m, err == BH_OK);
    wunlock(ad, z, t0);
    if (err)
      return err;
    if (stop)
      break;
  }
  return calls;
}

/* The rate cap: host calls allowed now (a token bucket of rate * interval calls). */
static long ad_tokens(struct adaptive *ad, uint64_t now) {
  if (ad->rate <= 0)
    return LONG_MAX;
  double burst = ad->rate * (double)ad->interval_ns / 1e9;
  if (burst < 1)
    burst = 1;
  if (now > ad->tokens_at)
    ad->tokens += (double)(now - ad->tokens_at) * ad->rate / 1e9;
  ad->tokens_at = now;
  if (ad->tokens > burst)
    ad->tokens = burst;
  return ad->tokens < 0 ? 0 : (long)ad->tokens;
}

static int cmp_piece(const void *x, const void *y) {
  const struct ad_piece *a = x, *b = y;
  if (a->cls != b->cls)
    return a->cls > b->cls ? -1 : 1;
  return a->first < b->first ? -1 : a->first > b->first;
}

/*
 * The cap: the due blocks blk[0..n) (by address) make pieces of neighbours, one host call each
 * (and one more per `capacity` blocks); the largest class goes first, and pieces are taken
 * while `allowed` calls last.  Keeps the blocks taken at the front of blk[], by address, and
 * returns how many; the rest wait for a later scan.
 */
static size_t ad_cap(struct adaptive *ad, size_t n, long allowed) {
  size_t np = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && ad->blk[j - 1].pfn + (1ull << ad->blk[j - 1].order) == ad->blk[j].pfn)
      j++;
    if (np == ad->piece_cap) {
      size_t cap = ad->piece_cap ? ad->piece_cap * 2 : 64;
      struct ad_piece *p = realloc(ad->piece, cap * sizeof(*p));
      if (!p)
        break; /* out of memory: the pieces so far */
      ad->piece = p;
      ad->piece_cap = cap;
    }
    ad->piece[np++] = (struct ad_piece){.first = i, .n = j - i, .cls = ad->blk[i].cls};
    i = j;
  }
  if (np) /* qsort wants an array, even for none */
    qsort(ad->piece, np, sizeof(*ad->piece), cmp_piece);
  size_t taken = 0, k = 0;
  for (; k < np && allowed > 0; k++) {
    allowed -= 1 + (long)((ad->piece[k].n - 1) / ad->pr.capacity);
    for (size_t i = 0; i < ad->piece[k].n; i++)
      ad->blk[ad->piece[k].first + i].take = 1;
    taken += ad->piece[k].n;
  }
  bump(&ad->rate_deferred, n - taken);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (ad->blk[i].take)
      ad->blk[m++] = ad->blk[i];
  return m;
}

/* One zone's aging orders: scan, pick the due blocks the cap allows, report them. */
static long ad_age_zone(struct adaptive *ad, bh_zone_t *z, uint32_t now_ms, long allowed) {
  uint64_t t0 = wlock(z);
  /* room to hold a full batch of the largest aging order off the lists */
  bool room = bh_zone_low_wmark_ok(z, (uint64_t)ad->pr.capacity << (ad->pr.order - 1));
  wunlock(ad, z, t0);
  ad_scan_zone(ad, z, now_ms);
  if (!room) {
    bump(&ad->pr.zone_skipped_wmark, 1);
    return 0;
  }
  if (!ad->nblk) /* nothing unreported in the aging orders (and maybe no array yet) */
    return 0;
  qsort(ad->blk, ad->nblk, sizeof(*ad->blk), cmp_blk_pfn);
  size_t n = ad_due(ad, now_ms);
  if (n && allowed != LONG_MAX)
    n = ad_cap(ad, n, allowed);
  return n ? ad_report_aged(ad, z, ad->blk, n) : 0;
}

static void ad_age(struct adaptive *ad, uint64_t now) {
  bump(&ad->scans, 1);
  uint32_t now_ms = (uint32_t)((now - ad->epoch_ns) / AD_NS_PER_MS);
  long allowed = ad_tokens(ad, now);
  for (int i = 0; i < ad->pr.nzones; i++) {
    long calls = ad_age_zone(ad, bh_arena_zone(ad->pr.a, i), now_ms, allowed);
    if (calls < 0)
      break;
    bump(&ad->aged_host_calls, (uint64_t)calls);
    if (allowed != LONG_MAX) {
      allowed -= calls;
      ad->tokens -= (double)calls;
    }
  }
  ad->aging_due = now + ad->interval_ns;
}

/* ---- the worker ---- */

static uint64_t ad_step(void *state, uint64_t now) {
  struct adaptive *ad = state;
  if (atomic_load(&ad->pr.state) == BH__PR_REQUESTED && now >= atomic_load(&ad->pr.pass_due) &&
      bh__pr_pass(&ad->pr))
    atomic_store(&ad->pr.pass_due, bh_hint_delay_due(ad->pr.h, ad->pr.delay_ns)); /* requeued */
  if (ad->low < ad->pr.order && now >= ad->aging_due)
    ad_age(ad, now);
  uint64_t next = ad->low < ad->pr.order ? ad->aging_due : BH_HINT_IDLE;
  if (atomic_load(&ad->pr.state) == BH__PR_REQUESTED) {
    uint64_t due = atomic_load(&ad->pr.pass_due);
    if (due < next)
      next = due;
  }
  return next;
}

/* ---- create / destroy / stats ---- */

/* A decimal number in [min, max] ("2", "1.5"). */
static int opt_double(const bh_opt_t *o, double min, double max, double *out) {
  if (!o->value || !o->value[0] || ((o->value[0] < '0' || o->value[0] > '9') && o->value[0] != '.'))
    return BH_EINVAL;
  char *end;
  errno = 0;
  double v = strtod(o->value, &end);
  if (errno || *end || v != v || v < min || v > max)
    return BH_EINVAL;
  *out = v;
  return BH_OK;
}

static int ad_options(struct adaptive *ad, const bh_opt_t *opts, size_t nopts) {
  bool low_given = false;
  for (size_t i = 0; i < nopts; i++) {
    const bh_opt_t *o = &opts[i];
    uint64_t v = 0;
    int err = BH_OK;
    if (!o->key) {
      bh_hint_set_error(ad->pr.h, "adaptive: option without a name");
      return BH_EINVAL;
    } else if (!strcmp(o->key, "order")) {
      err = bh_opt_u64(o, 1, ad->pr.max_order, &v);
      ad->pr.order = (unsigned)v;
    } else if (!strcmp(o->key, "low")) {
      err = bh_opt_u64(o, 0, ad->pr.max_order, &v);
      ad->low = (unsigned)v;
      low_given = true;
    } else if (!strcmp(o->key, "delay")) {
      err = bh_opt_duration(o, &ad->pr.delay_ns);
    } else if (!strcmp(o->key, "interval")) {
      err = bh_opt_duration(o, &ad->interval_ns);
      if (!err && (ad->interval_ns < AD_NS_PER_MS || ad->interval_ns > AD_MAX_AGE_NS))
        err = BH_EINVAL;
    } else if (!strcmp(o->key, "age")) {
      err = bh_opt_duration(o, &ad->age_ns);
      if (!err && ad->age_ns > AD_MAX_AGE_NS)
        err = BH_EINVAL;
    } else if (!strcmp(o->key, "growth")) {
      err = opt_double(o, 1, 16, &ad->growth);
    } else if (!strcmp(o->key, "rate")) {
      err = opt_double(o, 0, 1e6, &ad->rate);
    } else if (!strcmp(o->key, "runs")) {
      err = bh_opt_bool(o, &ad->runs);
    } else if (!strcmp(o->key, "capacity")) {
      err = bh_opt_u64(o, 1, BH_REPORT_CAPACITY, &v);
      if (!err && (v & (v - 1)))
        err = BH_EINVAL;
      ad->pr.capacity = (unsigned)v;
    } else {
      bh_hint_set_error(ad->pr.h, "adaptive: unknown option '%s'", o->key);
      return BH_EINVAL;
    }
    if (err) {
      bh_hint_set_error(ad->pr.h, "adaptive: bad value '%s' for %s", o->value ? o->value : "",
                        o->key);
      return BH_EINVAL;
    }
  }
  if (!low_given && ad->low > ad->pr.order)
    ad->low = ad->pr.order;
  if (ad->low > ad->pr.order) {
    bh_hint_set_error(ad->pr.h, "adaptive: low=%u is above order=%u", ad->low, ad->pr.order);
    return BH_EINVAL;
  }
  return BH_OK;
}

/* age(k) = age * growth^(order - 1 - k), in ms, capped at a day (the marks count ms in 32
 * bits, which wrap after 49 days). */
static void ad_ages(struct adaptive *ad) {
  double ns = (double)ad->age_ns;
  for (unsigned k = ad->pr.order; k-- > 0;) {
    double capped = ns < (double)AD_MAX_AGE_NS ? ns : (double)AD_MAX_AGE_NS;
    ad->age_ms[k] = (uint64_t)(capped / AD_NS_PER_MS + 0.5);
    ns *= ad->growth;
  }
}

static void ad_destroy(void *state) {
  struct adaptive *ad = state;
  free(ad->blk);
  free(ad->piece);
  free(ad);
}

static int ad_create(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state) {
  struct adaptive *ad = aligned_alloc(64, (sizeof(*ad) + 63) & ~(size_t)63);
  if (!ad)
    return BH_ENOMEM;
  memset(ad, 0, sizeof(*ad));
  bh__pr_init(&ad->pr, h);
  ad->low = AD_DEFAULT_LOW;
  ad->interval_ns = AD_DEFAULT_INTERVAL_NS;
  ad->age_ns = AD_DEFAULT_AGE_NS;
  ad->growth = AD_DEFAULT_GROWTH;
  ad->rate = AD_DEFAULT_RATE;
  ad->runs = true;
  int err = ad_options(ad, opts, nopts);
  if (err) {
    ad_destroy(ad);
    return err;
  }
  ad_ages(ad);
  uint64_t now = bh_hint_now(h);
  ad->epoch_ns = now;
  ad->aging_due = now + ad->interval_ns;
  ad->tokens_at = now;
  ad->tokens = ad->rate * (double)ad->interval_ns / 1e9;
  *state = ad;
  bh_hint_set_orders(h, ad->pr.order, UINT8_MAX);
  if (!bh_hint_registered_at_boot(h)) /* page_reporting_register: the initial flush */
    bh__pr_request(&ad->pr);
  if (ad->low < ad->pr.order)
    bh_hint_request(h, ad->interval_ns); /* the first aging scan */
  return BH_OK;
}

static const char *const order_names[] = {
    "aged_order_0",  "aged_order_1",  "aged_order_2",  "aged_order_3",  "aged_order_4",
    "aged_order_5",  "aged_order_6",  "aged_order_7",  "aged_order_8",  "aged_order_9",
    "aged_order_10", "aged_order_11", "aged_order_12", "aged_order_13", "aged_order_14",
    "aged_order_15", "aged_order_16", "aged_order_17", "aged_order_18"};
_Static_assert(sizeof(order_names) / sizeof(order_names[0]) == BH_ORDER_LIMIT + 1,
               "one name per order");

static void ad_stats(void *state, bh_stat_emit_fn emit, void *ctx) {
  struct adaptive *ad = state;
  emit(ctx, "passes", (double)bh__pr_get(&ad->pr.passes));
  emit(ctx, "scans", (double)get(&ad->scans));
  bh__pr_stats_reports(&ad->pr, emit, ctx);
  emit(ctx, "aged_report_calls", (double)get(&ad->aged_report_calls));
  emit(ctx, "aged_host_calls", (double)get(&ad->aged_host_calls));
  emit(ctx, "aged_blocks_reported", (double)get(&ad->aged_blocks));
  emit(ctx, "aged_bytes_reported", (double)get(&ad->aged_pages) * (double)BH_PAGE_SIZE);
  for (unsigned k = ad->low; k < ad->pr.order; k++)
    emit(ctx, order_names[k], (double)get(&ad->aged_by_order[k]));
  emit(ctx, "marked", (double)get(&ad->marked));
  emit(ctx, "rate_deferred", (double)get(&ad->rate_deferred));
  bh__pr_stats_cycles(&ad->pr, emit, ctx);
}

const bh_strategy_ops_t bh__strategy_adaptive = {
    .name = "adaptive",
    .summary = "free page reporting at pageblock order, then smaller blocks as they stay free",
    .options = "order=pageblock_order  reporting order, as bubble's (delay, budget, tail, flag)\n"
               "low=3                  lowest order reported once it has stayed free "
               "(low=order: bubble)\n"
               "age=32s                idle age of a block of order-1 ...\n"
               "growth=1.1             ... times growth for each order below: "
               "age(k) = age * growth^(order-1-k)\n"
               "rate=16                host calls (madvise ranges) per second for blocks "
               "below order (0: no cap)\n"
               "runs=1                 age a block by the size of the free run it is in "
               "(0: by its own order)\n"
               "interval=2s            how often the worker looks at the orders below order\n"
               "delay=2s               wait from the first request to a pass at order and "
               "above\n"
               "capacity=32            blocks per report call (power of two <= 32)\n",
    .create = ad_create,
    .destroy = ad_destroy,
    .notify = ad_notify,
    .step = ad_step,
    .stats = ad_stats,
    .flags = BH_STRATEGY_PAGE_REPORTED,
};
