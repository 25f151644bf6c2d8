/*
 * Bubble hinting (free page reporting) against the rules of mm/page_reporting.c, on small
 * arenas with the virtual clock: the 2 s delay and the state machine, where reported blocks
 * end up, when PageReported is cleared and kept, the per-pass budget and the rotation that
 * resumes a pass, the watermark gate, the v1/v2 high-water mark, the idle target, and a
 * seeded random property test that checks the arena after every worker step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "bubble_test_util.h"

#include <sys/mman.h>

#define ORDER 9 /* pageblock order: the default reporting order */

static uint64_t *fill9(bh_arena_t *a, size_t *n) { return bt_fill(a, ORDER, n); }

/* Frees the order-9 blocks of p[] whose buddy (pfn ^ 512) is one of the kept odd blocks, so
 * that none merges; the first `keep` of them are not freed but returned in kept[]. */
static size_t free_even(bh_arena_t *a, const uint64_t *p, size_t n, size_t keep, uint64_t *kept) {
  size_t freed = 0, k = 0;
  for (size_t i = 0; i < n; i++) {
    if ((p[i] >> ORDER) & 1)
      continue;
    if (k < keep) {
      kept[k++] = p[i];
      continue;
    }
    assert_int_equal(bh_free_pfn(a, p[i], ORDER, 0), 0);
    freed++;
  }
  assert_int_equal(k, keep);
  return freed;
}

/* The blocks of one free list, head to tail, with their flags. */
static size_t list_blocks(bh_arena_t *a, unsigned order, int mt, uint64_t *pfn, bool *rep,
                          size_t max) {
  bh_zone_t *z = bh_arena_zone(a, 0);
  size_t n = 0;
  bh_zone_lock(z);
  for (uint64_t p = bh_free_list_first(z, order, mt); p != BH_PFN_NONE;
       p = bh_free_list_next(z, order, mt, p)) {
    assert_true(n < max);
    pfn[n] = p;
    rep[n] = bh_block_reported(z, p);
    n++;
  }
  bh_zone_unlock(z);
  return n;
}

static uint64_t zone_nr_free(bh_arena_t *a, unsigned order) {
  bh_zone_t *z = bh_arena_zone(a, 0);
  bh_zone_lock(z);
  uint64_t n = bh_zone_nr_free(z, order);
  bh_zone_unlock(z);
  return n;
}

static void check_arena(bh_arena_t *a) { assert_int_equal(bh_arena_check(a, stderr, 10), 0); }

/* ---- options and stats ---- */

static void test_options(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 64 * MiB, false, 0);
  assert_non_null(a);
  static const char *bad[] = {"capacity=3", "capacity=64", "capacity=0",   "order=11",
                              "delay=-1",   "delay=2min",  "budget=maybe", "rotate=2",
                              "hwm=-1",     "frobnicate=1"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    bh_opt_t o = {bad[i], strchr(bad[i], '=') + 1};
    char key[32];
    snprintf(key, sizeof key, "%.*s", (int)(strchr(bad[i], '=') - bad[i]), bad[i]);
    o.key = key;
    bh_hint_config_t hc;
    bh_hint_config_init(&hc);
    hc.strategy = "bubble";
    hc.opts = &o;
    hc.nopts = 1;
    bh_hint_t *h = NULL;
    assert_int_equal(bh_hint_attach(a, &hc, &h), BH_EINVAL);
    assert_null(h);
    assert_non_null(strstr(bh_hint_last_error(), key));
  }
  bh_hint_t *h =
      bt_attach(a, BH_CLOCK_VIRTUAL, "order=10 delay=250ms capacity=16 budget=0 rotate=0 hwm=32");
  assert_non_null(h);
  assert_string_equal(bh_hint_strategy(h)->name, "bubble");
  assert_int_equal(bh_hint_next_due(h), 250 * MSEC);
  static const char *names[] = {"passes",         "cycles",           "blocks_reported",
                                "bytes_reported", "skipped_reported", "zone_skipped_wmark",
                                "isolate_fail",   "budget_exhausted", "requeues",
                                "lock_ns",        "reported_alloc",   "reported_merge"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    assert_true(bt_stat(h, names[i]) == 0);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- 1. nothing happens before the delay ---- */

static void test_delay(void **state) {
  (void)state;
  /* 256 MiB: a 64 MiB zone never passes the low watermark + 32 << 9 pages check */
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 256 * MiB, false, 0);
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  assert_non_null(h);
  uint64_t total, rep;

  /* attaching requests the initial flush, one delay later (page_reporting_register) */
  assert_int_equal(bh_hint_next_due(h), 2 * SEC);
  assert_int_equal(bh_hint_advance(h, 1900 * MSEC), 0);
  bt_free_hi(a, ORDER, &total, &rep);
  assert_true(total > 0);
  assert_int_equal(rep, 0);
  assert_true(bt_stat(h, "blocks_reported") == 0);
  assert_int_equal(bh_hint_advance(h, 2 * SEC), 1);
  bt_free_hi(a, ORDER, &total, &rep);
  assert_int_equal(rep, total);
  assert_true(bt_stat(h, "bytes_reported") == (double)total * BH_PAGE_SIZE);
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE); /* ACTIVE -> IDLE */

  /* a free at 3 s: the pass comes at 5 s, not before */
  uint64_t x, y;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, ORDER, 0, &x), 0);
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, ORDER, 0, &y), 0);
  assert_int_equal(y, x ^ (1u << ORDER)); /* the two halves of one order-10 block */
  assert_int_equal(bh_hint_advance(h, 3 * SEC), 0);
  assert_int_equal(bh_free_pfn(a, x, ORDER, 0), 0);
  assert_int_equal(bh_hint_next_due(h), 5 * SEC);
  /* another free while REQUESTED does not move the pass */
  assert_int_equal(bh_hint_advance(h, 4 * SEC), 0);
  assert_int_equal(bh_free_pfn(a, y, ORDER, 0), 0);
  assert_int_equal(bh_hint_next_due(h), 5 * SEC);
  assert_true(bt_stat(h, "requests") == 2);
  uint64_t merged = x & ~((1ull << (ORDER + 1)) - 1);
  assert_int_equal(bt_free_order(a, merged), ORDER + 1);
  assert_int_equal(bh_hint_advance(h, 4900 * MSEC), 0);
  assert_false(bt_reported(a, merged));
  assert_int_equal(bh_hint_advance(h, 5 * SEC), 1);
  assert_true(bt_reported(a, merged));
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  check_arena(a);
  bh_hint_detach(h);

  /* delay= is honoured */
  h = bt_attach(a, BH_CLOCK_VIRTUAL, "delay=500ms");
  assert_non_null(h);
  assert_int_equal(bh_hint_next_due(h), bh_hint_now(h) + 500 * MSEC);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/*
 * Attached to a machine that has been running (registered_at_boot, as a replay from a recorded
 * start state): page_reporting_register's initial flush (mm/page_reporting.c:385-386) was done
 * when that machine booted, so no pass is due until a free ends at the reporting order or
 * above (page_reporting_notify_free, mm/page_reporting.h:40-44); its pass comes one delay
 * later (PAGE_REPORTING_DELAY, mm/page_reporting.c:50, 84).
 */
static void test_registered_at_boot(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 256 * MiB, false, 0);
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = "bubble";
  hc.registered_at_boot = true;
  bh_hint_t *h = NULL;
  assert_int_equal(bh_hint_attach(a, &hc, &h), 0);
  assert_true(bh_hint_registered_at_boot(h));
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  assert_int_equal(bh_hint_advance(h, 10 * SEC), 0);
  assert_true(bt_stat(h, "requests") == 0);
  uint64_t x, total, rep;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, ORDER - 1, 0, &x), 0);
  assert_int_equal(bh_free_pfn(a, x, ORDER - 1, 0), 0); /* merges up: notify at order >= 9 */
  assert_int_equal(bh_hint_next_due(h), 12 * SEC);
  assert_int_equal(bh_hint_advance(h, 12 * SEC), 1);
  bt_free_hi(a, ORDER, &total, &rep);
  assert_true(total > 0);
  assert_int_equal(rep, total);
  assert_true(bt_stat(h, "passes") == 1);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- 2. reported blocks end up at the tail; a new free goes to the head ---- */

static void assert_unreported_first(const bool *rep, size_t n, size_t want_reported) {
  size_t nrep = 0;
  for (size_t i = 0; i < n; i++) {
    if (i && rep[i - 1])
      assert_true(rep[i]); /* no unreported block after a reported one */
    nrep += rep[i];
  }
  assert_int_equal(nrep, want_reported);
}

static void test_tail(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 1 * GiB, false, 128);
  size_t n;
  uint64_t *p = fill9(a, &n), kept = UINT64_MAX;
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  size_t freed = free_even(a, p, n, 1, &kept);
  assert_int_equal(zone_nr_free(a, ORDER), freed);
  assert_int_equal(zone_nr_free(a, ORDER + 1), 0);
  assert_true(freed > 200 && freed <= 512);

  size_t max = freed + 8;
  uint64_t *pfn = malloc(max * sizeof(*pfn));
  bool *rep = malloc(max * sizeof(*rep));
  assert_int_equal(bh_hint_advance(h, 2 * SEC), 1);
  /* budget ceil(freed/512) = 1 report call, plus one: 64 blocks */
  size_t m = list_blocks(a, ORDER, BH_MT_MOVABLE, pfn, rep, max);
  assert_int_equal(m, freed);
  assert_unreported_first(rep, m, 64);

  /* a block freed now goes to the head, unreported */
  assert_int_equal(bh_free_pfn(a, kept, ORDER, 0), 0);
  m = list_blocks(a, ORDER, BH_MT_MOVABLE, pfn, rep, max);
  assert_int_equal(m, freed + 1);
  assert_int_equal(pfn[0], kept);
  assert_false(rep[0]);
  for (size_t i = 1; i < m; i++)
    assert_true(pfn[i] != kept);
  assert_unreported_first(rep, m, 64);

  /* the next pass takes it first, and the order still holds */
  assert_int_equal(bh_hint_advance(h, 4 * SEC), 1);
  m = list_blocks(a, ORDER, BH_MT_MOVABLE, pfn, rep, max);
  assert_unreported_first(rep, m, 128);
  assert_true(bt_reported(a, kept));
  check_arena(a);
  free(pfn);
  free(rep);
  free(p);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- 3. PageReported cleared on allocation and merge, kept on a type move ---- */

static void test_flag_rules(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 256 * MiB, false, 0);
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  bh_zone_t *z = bh_arena_zone(a, 0);
  assert_int_equal(bh_hint_advance(h, 2 * SEC), 1); /* initial flush: all reported */
  uint64_t total, rep;
  bt_free_hi(a, ORDER, &total, &rep);
  assert_int_equal(rep, total);

  /* allocation: the head of the order-10 list is reported; taking it clears the flag */
  bh_zone_lock(z);
  uint64_t head10 = bh_free_list_first(z, ORDER + 1, BH_MT_MOVABLE);
  assert_true(head10 != BH_PFN_NONE && bh_block_reported(z, head10));
  bh_zone_unlock(z);
  uint64_t alloc0 = bt_arena_stat(a, BH_STAT_reported_alloc);
  uint64_t x, y;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, ORDER, 0, &x), 0);
  assert_int_equal(x, head10);
  assert_int_equal(bt_arena_stat(a, BH_STAT_reported_alloc), alloc0 + 1);
  assert_true(bt_stat(h, "reported_alloc") == (double)(alloc0 + 1));
  /* the split half put back by expand is never marked */
  y = x ^ (1u << ORDER);
  assert_int_equal(bt_free_order(a, y), ORDER);
  assert_false(bt_reported(a, y));
  /* an unreported block allocated does not count */
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, ORDER, 0, &y), 0);
  assert_int_equal(y, x ^ (1u << ORDER));
  assert_int_equal(bt_arena_stat(a, BH_STAT_reported_alloc), alloc0 + 1);

  /* merge: y is freed alone and reported at order 9 ... */
  assert_int_equal(bh_hint_advance(h, 3 * SEC), 0);
  assert_int_equal(bh_free_pfn(a, y, ORDER, 0), 0);
  assert_int_equal(bh_hint_advance(h, 5 * SEC), 1);
  assert_int_equal(bt_free_order(a, y), ORDER);
  assert_true(bt_reported(a, y));
  /* ... then its buddy x is freed: they merge into an unreported order-10 block */
  uint64_t merge0 = bt_arena_stat(a, BH_STAT_reported_merge);
  assert_int_equal(bh_free_pfn(a, x, ORDER, 0), 0);
  uint64_t xy = x & y;
  assert_int_equal(bt_free_order(a, xy), ORDER + 1);
  assert_false(bt_reported(a, xy));
  assert_int_equal(bt_arena_stat(a, BH_STAT_reported_merge), merge0 + 1);
  assert_true(bt_stat(h, "reported_merge") == (double)(merge0 + 1));
  /* and it is reported later, at order 10 */
  double blocks = bt_stat(h, "blocks_reported");
  assert_int_equal(bh_hint_advance(h, 7 * SEC), 1);
  assert_true(bt_reported(a, xy));
  assert_true(bt_stat(h, "blocks_reported") == blocks + 1);

  /* a migratetype move keeps the flag: move the reported order-10 block xy to Unmovable */
  bh_zone_lock(z);
  for (uint64_t pb = xy; pb < xy + (1u << (ORDER + 1)); pb += 1u << ORDER)
    bh__move_freepages_block(z, pb, BH_MT_MOVABLE, BH_MT_UNMOVABLE);
  assert_int_equal(bh_free_list_first(z, ORDER + 1, BH_MT_UNMOVABLE), xy);
  assert_true(bh_block_reported(z, xy));
  bh_zone_unlock(z);
  check_arena(a);
  /* the next pass skips it instead of reporting it again */
  blocks = bt_stat(h, "blocks_reported");
  double skipped = bt_stat(h, "skipped_reported");
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, ORDER, 0, &x), 0);
  assert_int_equal(bh_free_pfn(a, x, ORDER, 0), 0); /* merges back: order 10, unreported */
  assert_int_equal(bh_hint_advance(h, 9 * SEC), 1);
  assert_true(bt_reported(a, xy));
  assert_true(bt_stat(h, "blocks_reported") == blocks + 1);
  assert_true(bt_stat(h, "skipped_reported") > skipped);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- 5. the budget bounds a pass; rotation resumes it ---- */

/*
 * Deriving the bound from page_reporting_cycle: budget = DIV_ROUND_UP(nr_free(order),
 * 32 * 16) is checked (budget < 0 -> stop) when an unreported block is met, and decremented
 * after each report call.  A report is made only when the batch is full AND a further
 * unreported block is met.  So calls are made with budget = B, B-1, ..., 0: B + 1 full calls
 * of 32 blocks, after which the next unreported block stops the cycle.  With an empty batch
 * on entry, one list gives at most (B + 1) * 32 blocks per pass; if it holds no more than
 * that, all of it (the last partial or full batch goes out as the zone's leftover).
 * Here: 1024 free order-9 blocks on one list, B = 2, 96 blocks per pass, 11 passes.
 */
static void test_budget(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 4 * GiB, false, 128);
  size_t n;
  uint64_t *p = fill9(a, &n);
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  size_t freed = free_even(a, p, n, 0, NULL);
  assert_int_equal(freed, 1024);
  assert_int_equal(zone_nr_free(a, ORDER), 1024);
  for (unsigned o = ORDER + 1; o <= bh_arena_max_order(a); o++)
    assert_int_equal(zone_nr_free(a, o), 0);

  uint64_t *order0 = malloc(freed * sizeof(*order0)), *pfn = malloc(freed * sizeof(*pfn));
  bool *rep = malloc(freed * sizeof(*rep));
  assert_int_equal(list_blocks(a, ORDER, BH_MT_MOVABLE, order0, rep, freed), freed);

  const uint64_t B = (1024 + 511) / 512, per_pass = (B + 1) * 32;
  assert_int_equal(per_pass, 96);
  const unsigned passes = (unsigned)((freed + per_pass - 1) / per_pass);
  assert_int_equal(passes, 11);
  for (unsigned k = 1; k <= passes; k++) {
    assert_int_equal(bh_hint_advance(h, 2 * SEC * k - 1), 0);
    assert_int_equal(bh_hint_advance(h, 2 * SEC * k), 1);
    size_t want = per_pass * k < freed ? per_pass * k : freed;
    assert_true(bt_stat(h, "blocks_reported") == (double)want);
    /* exactly the first `want` blocks of the original list order: each pass resumed */
    for (size_t i = 0; i < freed; i++)
      assert_int_equal(bt_reported(a, order0[i]), i < want);
    if (k < passes) {
      /* out of budget: REQUESTED again, the next pass one delay later, resuming at the
       * first unprocessed block, now the head */
      assert_int_equal(bh_hint_next_due(h), 2 * SEC * (k + 1));
      assert_true(bt_stat(h, "budget_exhausted") == k);
      assert_true(bt_stat(h, "requeues") == k);
      size_t m = list_blocks(a, ORDER, BH_MT_MOVABLE, pfn, rep, freed);
      assert_int_equal(m, freed);
      assert_int_equal(pfn[0], order0[want]);
      assert_unreported_first(rep, m, want);
    } else {
      assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
    }
    check_arena(a);
  }
  assert_true(bt_stat(h, "report_calls") == 1024 / 32);
  assert_true(bt_stat(h, "passes") == passes);
  bh_hint_detach(h);

  /* budget=0 (v17): the same list is done in one pass */
  bh_arena_destroy(a);
  a = bt_arena(BH_BACKING_SIM, 4 * GiB, false, 128);
  free(p);
  p = fill9(a, &n);
  h = bt_attach(a, BH_CLOCK_VIRTUAL, "budget=0");
  assert_int_equal(free_even(a, p, n, 0, NULL), 1024);
  assert_int_equal(bh_hint_advance(h, 2 * SEC), 1);
  assert_true(bt_stat(h, "blocks_reported") == 1024);
  assert_true(bt_stat(h, "budget_exhausted") == 0);
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  free(p);
  free(order0);
  free(pfn);
  free(rep);
}

/*
 * Rotation with reported blocks in front of unreported ones (a list [R x 155, U x 100] plus a
 * fresh block E at the head): with rotation the walk meets the reported blocks once, and when
 * the budget stops it, the first unprocessed block becomes the head, so the next allocation
 * gets unreported memory.  Without rotation (rotate=0) every restart walks the reported run
 * again and the reported blocks stay at the head, where allocation takes them.
 */
static void rotate_case(bool rotate) {
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 1 * GiB, false, 128);
  size_t n;
  uint64_t *p = fill9(a, &n), kept = UINT64_MAX;
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, rotate ? NULL : "rotate=0");
  size_t freed = free_even(a, p, n, 1, &kept);
  assert_int_equal(freed, 255);
  for (unsigned k = 1; k <= 4; k++)
    assert_int_equal(bh_hint_advance(h, 2 * SEC * k), 1);
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  assert_true(bt_stat(h, "blocks_reported") == 255);

  /* unmark 100 blocks by isolating them and putting them back: they go to the tail */
  const size_t nu = 100, nr = freed - nu;
  bh_zone_t *z = bh_arena_zone(a, 0);
  bh_zone_lock(z);
  for (size_t i = 0; i < nu; i++) {
    uint64_t b = bh_free_list_first(z, ORDER, BH_MT_MOVABLE);
    assert_true(bh_block_reported(z, b));
    assert_int_equal(bh_zone_isolate(z, b, ORDER), 0);
    bool still;
    assert_int_equal(bh_zone_putback(z, b, ORDER, &still), 0);
    assert_true(still);
    assert_false(bh_block_reported(z, b));
  }
  bh_zone_unlock(z);
  assert_int_equal(bh_free_pfn(a, kept, ORDER, 0), 0); /* E at the head; requests a pass */
  assert_int_equal(zone_nr_free(a, ORDER), freed + 1);

  double skipped0 = bt_stat(h, "skipped_reported");
  double exhausted0 = bt_stat(h, "budget_exhausted");
  assert_int_equal(bh_hint_advance(h, 10 * SEC), 1);
  /* B = ceil(256/512) = 1: 2 calls, E and 63 of the 100 */
  assert_true(bt_stat(h, "blocks_reported") == 255 + 64);
  assert_true(bt_stat(h, "budget_exhausted") == exhausted0 + 1);
  assert_true(bt_reported(a, kept));
  double skipped = bt_stat(h, "skipped_reported") - skipped0;
  bh_zone_lock(z);
  uint64_t head = bh_free_list_first(z, ORDER, BH_MT_MOVABLE);
  bool head_reported = bh_block_reported(z, head);
  bh_zone_unlock(z);
  uint64_t alloc0 = bt_arena_stat(a, BH_STAT_reported_alloc), x;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, ORDER, 0, &x), 0);
  assert_int_equal(x, head);
  if (rotate) {
    /* the walk met the 155 reported blocks once; the stop point is the head */
    assert_true(skipped == (double)nr);
    assert_false(head_reported);
    assert_int_equal(bt_arena_stat(a, BH_STAT_reported_alloc), alloc0);
  } else {
    /* three walks from the head (two restarts after reports), each over the 155 */
    assert_true(skipped == 3.0 * (double)nr);
    assert_true(head_reported);
    assert_int_equal(bt_arena_stat(a, BH_STAT_reported_alloc), alloc0 + 1);
  }
  assert_int_equal(bh_free_pfn(a, x, ORDER, 0), 0);
  /* either way the rest is reported by the next passes */
  assert_int_equal(bh_hint_advance(h, 40 * SEC) > 0, 1);
  uint64_t total, rep;
  bt_free_hi(a, ORDER, &total, &rep);
  assert_int_equal(rep, total);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  free(p);
}

static void test_rotation(void **state) {
  (void)state;
  rotate_case(true);
  rotate_case(false);
}

/* ---- 6. no report below low watermark + 32 << order ---- */

static void test_watermark(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 256 * MiB, false, 0);
  size_t n;
  uint64_t *p = fill9(a, &n);
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  assert_int_equal(bh_hint_advance(h, 2 * SEC), 1);   /* initial flush: nothing free */
  assert_true(bt_stat(h, "zone_skipped_wmark") == 1); /* (and the zone is below the mark) */
  bh_zone_info_t zi;
  assert_int_equal(bh_zone_info(a, 0, &zi), 0);
  const uint64_t mark = zi.wmark_low + (32u << ORDER);
  /* free non-buddy order-9 blocks while the zone stays at or below the mark */
  size_t i = 0, freed = 0;
  for (;; i++) {
    assert_true(i < n);
    if ((p[i] >> ORDER) & 1)
      continue;
    assert_int_equal(bh_zone_info(a, 0, &zi), 0);
    if (zi.free_pages + (1u << ORDER) > mark)
      break;
    assert_int_equal(bh_free_pfn(a, p[i], ORDER, 0), 0);
    freed++;
  }
  assert_true(freed >= 16);
  assert_int_equal(bh_hint_next_due(h), 4 * SEC);
  assert_int_equal(bh_hint_advance(h, 4 * SEC), 1);
  assert_true(bt_stat(h, "zone_skipped_wmark") == 2);
  assert_true(bt_stat(h, "blocks_reported") == 0);
  assert_true(bt_stat(h, "cycles") == 0);
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE); /* the kernel gives up until a free */
  /* one more block: above the mark now, and the next pass reports */
  assert_int_equal(bh_free_pfn(a, p[i], ORDER, 0), 0);
  freed++;
  assert_int_equal(bh_zone_info(a, 0, &zi), 0);
  assert_true(zi.free_pages > mark);
  assert_int_equal(bh_hint_advance(h, 6 * SEC), 1);
  assert_true(bt_stat(h, "zone_skipped_wmark") == 2);
  /* everything free at order >= 9: our blocks, and any the fill could not take */
  assert_true(bt_stat(h, "blocks_reported") ==
              (double)(zone_nr_free(a, ORDER) + zone_nr_free(a, ORDER + 1)));
  assert_true(bt_stat(h, "blocks_reported") >= (double)freed);
  uint64_t total, rep;
  bt_free_hi(a, ORDER, &total, &rep);
  assert_int_equal(rep, total);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  free(p);
}

/* ---- 7. hwm: no request until N unreported blocks of that order ---- */

/*
 * The memory is allocated in order-8 blocks; the upper halves of the odd order-9 regions are
 * freed as padding, so that the zone passes the watermark check without any free block of
 * order >= 9.  "Freeing region k" frees both halves of an even order-9 region: the second
 * free merges them into an order-9 block (its buddy region is half allocated) and notifies.
 */
struct regions {
  bh_arena_t *a;
  uint64_t *p8;
  size_t n, next;
};

static uint64_t free_next_region(struct regions *r) {
  for (; r->next < r->n; r->next++) {
    uint64_t lo = r->p8[r->next];
    if ((lo >> 8) & 3)
      continue; /* not the lower half of an even order-9 region */
    uint64_t hi = lo + 256;
    if (!bsearch(&hi, r->p8, r->n, sizeof(hi), bt_cmp_u64))
      continue;
    assert_int_equal(bh_free_pfn(r->a, lo, 8, 0), 0);
    assert_int_equal(bh_free_pfn(r->a, hi, 8, 0), 0);
    assert_int_equal(bt_free_order(r->a, lo), ORDER);
    r->next++;
    return lo;
  }
  fail_msg("out of regions");
  return 0;
}

static void test_hwm(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 512 * MiB, false, 128);
  struct regions r = {.a = a};
  r.p8 = bt_fill(a, 8, &r.n);
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, "hwm=32");
  assert_true(bt_pad8(a, r.p8, r.n) > (32u << ORDER) + 1024);
  assert_int_equal(bh_hint_advance(h, 2 * SEC), 1); /* initial flush: nothing to report */
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  uint64_t now = 2 * SEC;
  for (int i = 1; i < 32; i++) {
    free_next_region(&r);
    assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  }
  assert_true(bt_stat(h, "hwm_deferred") == 31);
  free_next_region(&r); /* the 32nd unreported block */
  assert_int_equal(bh_hint_next_due(h), now + 2 * SEC);
  now += 2 * SEC;
  assert_int_equal(bh_hint_advance(h, now), 1);
  assert_true(bt_stat(h, "blocks_reported") == 32);
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  /* reported blocks do not count towards the mark */
  uint64_t fresh = free_next_region(&r);
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  /* allocating reported blocks takes them out of the count: the head is the fresh block,
   * the next two are reported */
  uint64_t x[3];
  for (int i = 0; i < 3; i++)
    assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, ORDER, 0, &x[i]), 0);
  assert_int_equal(x[0], fresh);
  assert_int_equal(bt_arena_stat(a, BH_STAT_reported_alloc), 2);
  /* now 30 reported and 0 unreported: 31 frees stay below the mark, the 32nd requests */
  for (int i = 1; i < 32; i++) {
    free_next_region(&r);
    assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
  }
  free_next_region(&r);
  assert_int_equal(bh_hint_next_due(h), now + 2 * SEC);
  now += 2 * SEC;
  assert_int_equal(bh_hint_advance(h, now), 1);
  assert_true(bt_stat(h, "blocks_reported") == 64);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  free(r.p8);

  /* the merged behaviour (hwm=0): the first free requests */
  a = bt_arena(BH_BACKING_SIM, 512 * MiB, false, 128);
  r = (struct regions){.a = a};
  r.p8 = bt_fill(a, 8, &r.n);
  h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  bt_pad8(a, r.p8, r.n);
  assert_int_equal(bh_hint_advance(h, 2 * SEC), 1);
  free_next_region(&r);
  assert_int_equal(bh_hint_next_due(h), 4 * SEC);
  assert_int_equal(bh_hint_advance(h, 4 * SEC), 1);
  assert_true(bt_stat(h, "blocks_reported") == 1);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  free(r.p8);
}

/* ---- a failed report: nothing is marked, the pass stops, the blocks come back ---- */

static void test_report_error(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_MMAP, 256 * MiB, false, 128);
  size_t n;
  uint64_t *p = fill9(a, &n), kept = UINT64_MAX;
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  size_t freed = free_even(a, p, n, 1, &kept);
  assert_true(freed > 40);
  /* unmap the memory of the list head: the madvise of the first batch fails */
  bh_zone_t *z = bh_arena_zone(a, 0);
  bh_zone_lock(z);
  uint64_t head = bh_free_list_first(z, ORDER, BH_MT_MOVABLE);
  bh_zone_unlock(z);
  void *addr = bh_pfn_to_addr(a, head);
  const size_t len = BH_PAGE_SIZE << ORDER;
  assert_int_equal(munmap(addr, len), 0);
  assert_int_equal(bh_hint_advance(h, 2 * SEC), 1);
  assert_true(bt_stat(h, "report_calls") == 1); /* the pass stopped at the error */
  assert_true(bt_stat(h, "report_errors") == 1);
  assert_true(bt_stat(h, "blocks_reported") == 0);
  uint64_t total, rep;
  bt_free_hi(a, ORDER, &total, &rep);
  assert_int_equal(rep, 0);
  assert_int_equal(total, (uint64_t)freed << ORDER);   /* all back on the lists */
  assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE); /* ACTIVE -> IDLE: wait for a free */
  check_arena(a);
  /* map it again; the next free requests a pass, which reports everything */
  assert_true(mmap(addr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == addr);
  assert_int_equal(bh_free_pfn(a, kept, ORDER, 0), 0);
  assert_int_equal(bh_hint_advance(h, 4 * SEC), 1);
  assert_true(bt_stat(h, "report_errors") == 1);
  bt_free_hi(a, ORDER, &total, &rep);
  assert_int_equal(rep, total);
  assert_int_equal(total, (uint64_t)(freed + 1) << ORDER);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  free(p);
}

/* ---- 8. idle target: a freed 1 GiB arena is reported within 30 s ---- */

static void test_idle_target(void **state) {
  (void)state;
  bh_config_t cfg;
  bh_config_init(&cfg); /* 1 GiB mmap: DMA 16 MiB, DMA32 496 MiB, Normal 512 MiB */
  bh_arena_t *a = NULL;
  assert_int_equal(bh_arena_create(&cfg, &a), 0);
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  assert_non_null(h);
  const uint64_t want = bh_arena_pages(a) * 9 / 10;
  uint64_t *pages = malloc(want * sizeof(*pages));
  for (uint64_t i = 0; i < want; i++) {
    assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 0, -1, &pages[i]), 0);
    *(volatile uint64_t *)bh_pfn_to_addr(a, pages[i]) = pages[i] + 1;
  }
  uint64_t res = 0;
  assert_int_equal(bh_arena_resident(a, &res), 0);
  assert_true(res >= want * BH_PAGE_SIZE);
  for (uint64_t i = 0; i < want; i++)
    assert_int_equal(bh_free_pfn(a, pages[i], 0, -1), 0);
  bh_drain_pcp(a);
  free(pages);

  /* The DMA zone (16 MiB) is never reported: it is below its low watermark + 32 << 9 pages
   * however free it is.  So "done" is when the worker goes idle. */
  uint64_t t95 = 0, tidle = 0, total = 0, rep = 0;
  for (uint64_t t = 100 * MSEC; t <= 60 * SEC && !tidle; t += 100 * MSEC) {
    bh_hint_advance(h, t);
    bt_free_hi(a, ORDER, &total, &rep);
    if (!t95 && rep * 100 >= total * 95)
      t95 = t;
    if (bh_hint_next_due(h) == BH_HINT_IDLE)
      tidle = t;
  }
  printf("idle target (1 GiB mmap): 95%% of %.0f MiB in order>=9 blocks reported after %.1f s; "
         "idle after %.1f s with %.2f %% reported (%.0f passes, %.0f zone skips)\n",
         (double)total * BH_PAGE_SIZE / MiB, (double)t95 / SEC, (double)tidle / SEC,
         100.0 * (double)rep / (double)total, bt_stat(h, "passes"),
         bt_stat(h, "zone_skipped_wmark"));
  assert_true(t95 > 0 && t95 <= 30 * SEC);
  assert_true(tidle > 0);
  assert_true(bt_stat(h, "zone_skipped_wmark") > 0);
  bh_zone_info_t dma;
  assert_int_equal(bh_zone_info(a, 0, &dma), 0);
  assert_int_equal(dma.type, BH_ZONE_DMA);
  assert_true(total - rep <= dma.free_pages);
  assert_int_equal(bh_arena_resident(a, &res), 0);
  printf("resident after reporting: %.1f MiB of %.0f MiB (live 0)\n", (double)res / MiB,
         (double)bh_arena_pages(a) * BH_PAGE_SIZE / MiB);
  assert_true(res <= bh_arena_pages(a) * BH_PAGE_SIZE / 50);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- 10. random property test: the arena is consistent after every worker step ---- */

static void test_property(void **state) {
  (void)state;
  uint64_t seed = bt_seed();
  printf("property test seed: %llu (BH_TEST_SEED=%llu to replay)\n", (unsigned long long)seed,
         (unsigned long long)seed);
  uint64_t rs = seed ? seed : 1;
  for (int round = 0; round < 4; round++) {
    bh_config_t cfg;
    bh_config_init(&cfg);
    cfg.backing = BH_BACKING_SIM;
    memset(cfg.zone_bytes, 0, sizeof(cfg.zone_bytes));
    cfg.zone_bytes[BH_ZONE_DMA32] = 64 * MiB;
    cfg.zone_bytes[BH_ZONE_NORMAL] = 128 * MiB;
    cfg.pcp = bt_rand(&rs) & 1;
    bh_arena_t *a = NULL;
    assert_int_equal(bh_arena_create(&cfg, &a), 0);
    static const char *optsets[] = {
        NULL,     "order=5 capacity=8",          "budget=0 rotate=0",
        "hwm=32", "rotate=0 capacity=4 order=7", "order=3 capacity=2 hwm=4"};
    const char *opts = optsets[bt_rand(&rs) % (sizeof(optsets) / sizeof(optsets[0]))];
    bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, opts);
    assert_non_null(h);
    printf("round %d: pcp=%d options '%s'\n", round, cfg.pcp, opts ? opts : "");
    enum { LIVE = 4096 };
    struct {
      uint64_t pfn;
      unsigned order;
    } live[LIVE];
    size_t nlive = 0, checks = 0;
    uint64_t now = 0;
    static const unsigned gfps[] = {BH_GFP_USER_MOVABLE, BH_GFP_KERNEL, BH_GFP_RECLAIMABLE,
                                    BH_GFP_DMA32 | BH_GFP_MOVABLE};
    for (int op = 0; op < 20000; op++) {
      uint64_t r = bt_rand(&rs);
      unsigned kind = r % 100;
      if (kind < 45 && nlive < LIVE) {
        unsigned order = (unsigned)(bt_rand(&rs) % 11);
        if (order > 3 && bt_rand(&rs) % 3)
          order = (unsigned)(bt_rand(&rs) % 4);
        uint64_t pfn;
        if (bh_alloc_pfn(a, gfps[bt_rand(&rs) % 4], order, (int)(bt_rand(&rs) % 2), &pfn) == 0) {
          live[nlive].pfn = pfn;
          live[nlive].order = order;
          nlive++;
        }
      } else if (kind < 90 && nlive) {
        size_t i = (size_t)(bt_rand(&rs) % nlive);
        assert_int_equal(bh_free_pfn(a, live[i].pfn, live[i].order, (int)(bt_rand(&rs) % 2)), 0);
        live[i] = live[--nlive];
      } else if (kind < 92) {
        bh_drain_pcp(a);
      } else {
        now += bt_rand(&rs) % (3 * SEC);
        long steps = bh_hint_advance(h, now);
        assert_true(steps >= 0);
        if (steps > 0) {
          checks++;
          long bad = bh_arena_check(a, stderr, 10);
          if (bad)
            fail_msg("seed %llu round %d op %d: %ld violations after a step",
                     (unsigned long long)seed, round, op, bad);
        }
      }
    }
    /* free everything and let the worker finish */
    while (nlive) {
      nlive--;
      assert_int_equal(bh_free_pfn(a, live[nlive].pfn, live[nlive].order, 0), 0);
    }
    bh_drain_pcp(a);
    for (int k = 0; k < 100 && bh_hint_next_due(h) != BH_HINT_IDLE; k++) {
      now += 2 * SEC;
      if (bh_hint_advance(h, now) > 0)
        assert_int_equal(bh_arena_check(a, stderr, 10), 0);
    }
    assert_int_equal(bh_hint_next_due(h), BH_HINT_IDLE);
    printf("  %zu checks after steps, %.0f passes, %.0f blocks reported\n", checks,
           bt_stat(h, "passes"), bt_stat(h, "blocks_reported"));
    assert_true(checks > 0);
    bh_hint_detach(h);
    bh_arena_destroy(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_delay),
      cmocka_unit_test(test_registered_at_boot),
      cmocka_unit_test(test_tail),
      cmocka_unit_test(test_flag_rules),
      cmocka_unit_test(test_budget),
      cmocka_unit_test(test_rotation),
      cmocka_unit_test(test_watermark),
      cmocka_unit_test(test_hwm),
      cmocka_unit_test(test_report_error),
      cmocka_unit_test(test_idle_target),
      cmocka_unit_test(test_property),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
