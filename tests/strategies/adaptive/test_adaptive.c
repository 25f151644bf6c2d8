/*
 * Adaptive hinting on crafted arenas with the virtual clock: its options, the strategy mark it
 * builds on (bh_block_set_mark), the age rule (a block below the pageblock order is reported
 * once it has stayed free for the age of its order, not before), where reported small blocks
 * go and when they lose the flag, runs of neighbours reported as one range, the rate cap,
 * that with low = order it reports exactly what bubble does, and a seeded random property
 * test with the invariant checker after every worker step.
 *
 * The crafted arenas (adaptive_test_util.h) hold lone free blocks: a block whose neighbours
 * on both sides are allocated, so that its run is the block itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "strategies/adaptive/adaptive_test_util.h"

#include <buddyhint/replay.h>

static void check_arena(bh_arena_t *a) { assert_int_equal(bh_arena_check(a, stderr, 10), 0); }

static bh_hint_t *attach(bh_arena_t *a, const char *opts) {
  bh_hint_t *h = at_attach(a, "adaptive", BH_CLOCK_VIRTUAL, opts);
  assert_non_null(h);
  return h;
}

static double stat(bh_hint_t *h, const char *name) {
  double v = bt_stat(h, name);
  if (v < 0)
    fail_msg("adaptive does not emit '%s'", name);
  return v;
}

static bool marked(bh_arena_t *a, uint64_t pfn, uint32_t *value) {
  bh_zone_t *z = bh__pfn_zone(a, pfn);
  bh_zone_lock(z);
  bool m = bh_block_marked(z, pfn, value);
  bh_zone_unlock(z);
  return m;
}

static uint64_t host_calls(bh_hint_t *h) {
  bh_hint_stats_t s;
  bh_hint_stats(h, &s);
  return s.report.calls;
}

/* ---- options, registration, info ---- */

static void test_options(void **state) {
  (void)state;
  const bh_strategy_ops_t *ops = bh_strategy_find("adaptive");
  assert_non_null(ops);
  assert_ptr_equal(bh_strategy_at(3), ops); /* built in, after none, bitmap and bubble */
  static const char *keys[] = {
      "order=", "low=", "age=", "growth=", "rate=", "interval=", "runs=", "delay=", "capacity="};
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
    assert_non_null(strstr(ops->options, keys[i])); /* what `buddyhint info` lists */

  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 64 * MiB, false, 0);
  assert_non_null(a);
  static const char *bad[] = {"low=11",      "order=0",      "order=11",    "low=10",
                              "age=-1",      "age=2days",    "age=100000",  "growth=0.5",
                              "growth=17",   "growth=x",     "rate=-1",     "rate=1e9",
                              "interval=0",  "interval=1us", "runs=maybe",  "capacity=3",
                              "capacity=64", "delay=soon",   "frobnicate=1"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char key[32];
    snprintf(key, sizeof key, "%.*s", (int)(strchr(bad[i], '=') - bad[i]), bad[i]);
    bh_opt_t o = {key, strchr(bad[i], '=') + 1};
    bh_hint_config_t hc;
    bh_hint_config_init(&hc);
    hc.strategy = "adaptive";
    hc.opts = &o;
    hc.nopts = 1;
    bh_hint_t *h = NULL;
    assert_int_equal(bh_hint_attach(a, &hc, &h), BH_EINVAL);
    assert_null(h);
    assert_non_null(strstr(bh_hint_last_error(), key));
  }
  /* low above an explicit order is refused; a small order alone pulls the default low down */
  bh_opt_t two[2] = {{"order", "5"}, {"low", "6"}};
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = "adaptive";
  hc.opts = two;
  hc.nopts = 2;
  bh_hint_t *h = NULL;
  assert_int_equal(bh_hint_attach(a, &hc, &h), BH_EINVAL);
  h = attach(a, "order=2");
  bh_hint_detach(h);

  h = attach(a, "order=8 low=2 age=250ms growth=1.5 rate=0.5 interval=100ms runs=0 delay=1s "
                "capacity=8");
  assert_string_equal(bh_hint_strategy(h)->name, "adaptive");
  /* the pass at the reporting order is requested one delay after attaching, as bubble's;
   * the first aging scan comes one interval after attaching */
  assert_int_equal(bh_hint_next_due(h), 100 * MSEC);
  static const char *names[] = {"passes",
                                "scans",
                                "report_calls",
                                "blocks_reported",
                                "bytes_reported",
                                "aged_report_calls",
                                "aged_blocks_reported",
                                "aged_bytes_reported",
                                "aged_order_2",
                                "aged_order_7",
                                "marked",
                                "rate_deferred",
                                "isolate_fail",
                                "budget_exhausted"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    assert_true(stat(h, names[i]) == 0);
  assert_true(bt_stat(h, "aged_order_8") == -1); /* orders at and above `order` are not aged */
  assert_true(bt_stat(h, "aged_order_1") == -1);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- the mark the strategy builds on ---- */

static void test_mark(void **state) {
  (void)state;
  bh_arena_t *a = bt_arena(BH_BACKING_SIM, 64 * MiB, false, 0);
  bh_zone_t *z = bh_arena_zone(a, 0);
  uint64_t x, y;
  /* two buddies of order 3, then x freed alone: a free order-3 block */
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 3, 0, &x), 0);
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 3, 0, &y), 0);
  assert_int_equal(y, x ^ 8);
  bh_zone_lock(z);
  assert_int_equal(bh_block_set_mark(z, x, 1), BH_EINVAL); /* allocated */
  assert_false(bh_block_marked(z, x, NULL));
  bh_zone_unlock(z);
  assert_int_equal(bh_free_pfn(a, x, 3, 0), 0);
  uint32_t v = 0;
  bh_zone_lock(z);
  assert_false(bh_block_marked(z, x, &v)); /* a freed block starts unmarked */
  assert_int_equal(bh_block_set_mark(z, x, 0xdeadbeef), 0);
  assert_true(bh_block_marked(z, x, &v));
  assert_int_equal(v, 0xdeadbeef);
  assert_int_equal(bh_block_set_mark(z, x, 7), 0); /* replaces */
  assert_true(bh_block_marked(z, x, &v));
  assert_int_equal(v, 7);
  assert_false(bh_block_reported(z, x)); /* a mark is not PageReported */
  bh_block_clear_mark(z, x);
  assert_false(bh_block_marked(z, x, NULL));
  assert_int_equal(bh_block_set_mark(z, x, 9), 0);
  /* a type move keeps it (move_freepages_block), as it keeps PageReported */
  uint64_t pb = x & ~511ull;
  bh__move_freepages_block(z, pb, BH_MT_MOVABLE, BH_MT_RECLAIMABLE);
  assert_true(bh_block_marked(z, x, &v));
  assert_int_equal(v, 9);
  bh__move_freepages_block(z, pb, BH_MT_RECLAIMABLE, BH_MT_MOVABLE);
  bh_zone_unlock(z);
  check_arena(a);

  /* allocation drops it: x comes back unmarked */
  uint64_t again;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 3, 0, &again), 0);
  assert_int_equal(again, x);
  assert_int_equal(bh_free_pfn(a, x, 3, 0), 0);
  assert_false(marked(a, x, NULL));

  /* merging drops it: mark x, free its buddy y; the order-4 block is unmarked */
  bh_zone_lock(z);
  assert_int_equal(bh_block_set_mark(z, x, 1), 0);
  bh_zone_unlock(z);
  assert_int_equal(bh_free_pfn(a, y, 3, 0), 0);
  uint64_t xy = x & y;
  assert_true(bt_free_order(a, xy) > 3);
  assert_false(marked(a, xy, NULL));
  assert_false(marked(a, x == xy ? y : x, NULL));
  check_arena(a);

  /* splitting drops it: mark the order-10 head, allocate order 0 from it */
  bh_zone_lock(z);
  uint64_t big = bh_free_list_first(z, 10, BH_MT_MOVABLE);
  assert_true(big != BH_PFN_NONE);
  assert_int_equal(bh_block_set_mark(z, big, 5), 0);
  bh_zone_unlock(z);
  uint64_t small;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 0, 0, &small), 0);
  if (small == big) {
    for (unsigned k = 0; k < 10; k++) /* the halves expand() put back start unmarked */
      assert_false(marked(a, big + (1ull << k), NULL));
  } else {
    assert_true(marked(a, big, NULL)); /* taken elsewhere: still whole, still marked */
  }
  assert_int_equal(bh_free_pfn(a, small, 0, 0), 0);

  /* isolation drops it, and a putback starts unmarked */
  bh_zone_lock(z);
  big = bh_free_list_first(z, 10, BH_MT_MOVABLE);
  assert_int_equal(bh_block_set_mark(z, big, 5), 0);
  assert_int_equal(bh_zone_isolate(z, big, 10), 0);
  assert_false(bh_block_marked(z, big, NULL));
  bool still;
  assert_int_equal(bh_zone_putback(z, big, 10, &still), 0);
  assert_false(bh_block_marked(z, big, NULL));
  bh_zone_unlock(z);
  check_arena(a);

  /* the invariant checker catches a mark left on a block that is not free */
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 3, 0, &x), 0);
  bh__page_t *p = &a->pages[x];
  bh__pg_set_flags(p, bh__pg_flags(p) | BH__PG_MARKED);
  assert_true(bh_arena_check(a, NULL, 0) >= 1);
  bh__pg_set_flags(p, bh__pg_flags(p) & (uint8_t)~BH__PG_MARKED);
  check_arena(a);
  bh_arena_destroy(a);
}

/* ---- 1. a block below the pageblock order is reported once it is old enough ---- */

/*
 * age=1s growth=2: age(8) 1 s, age(6) 4 s, age(3) 32 s.  A lone order-6 block and a lone
 * order-3 block are free from the start; the first scan (1 s, one interval after attaching)
 * marks them; each is reported by the first scan at which it has carried its mark for its
 * age, and not by the scan before.
 */
static void test_age(void **state) {
  (void)state;
  struct at_craft c;
  assert_true(at_craft_init(&c, BH_BACKING_SIM, 512 * MiB, 100, 2));
  bh_arena_t *a = c.a;
  uint64_t b3 = c.region[0] + 8, b6 = c.region[1] + 64;
  at_free_pieces(&c, 0, 1, 1);
  at_free_pieces(&c, 1, 8, 8);
  assert_int_equal(bt_free_order(a, b3), 3);
  assert_int_equal(bt_free_order(a, b6), 6);
  bh_hint_t *h = attach(a, "age=1s growth=2 interval=1s");

  assert_int_equal(bh_hint_advance(h, 999 * MSEC), 0);
  assert_int_equal(bh_hint_advance(h, 1 * SEC), 1);
  assert_true(stat(h, "scans") == 1);
  assert_true(stat(h, "marked") == 2); /* nothing else is free between orders 3 and 8 */
  uint32_t since;
  assert_true(marked(a, b3, &since));
  assert_int_equal(since, 1000); /* ms after attaching */
  assert_true(marked(a, b6, &since));

  bh_hint_advance(h, 4 * SEC); /* age 3 s < 4 s */
  assert_false(bt_reported(a, b6));
  assert_true(stat(h, "aged_blocks_reported") == 0);
  bh_hint_advance(h, 5 * SEC); /* 4 s */
  assert_true(bt_reported(a, b6));
  assert_false(bt_reported(a, b3));
  assert_true(stat(h, "aged_order_6") == 1);
  bh_hint_advance(h, 32 * SEC); /* age 31 s < 32 s */
  assert_false(bt_reported(a, b3));
  bh_hint_advance(h, 33 * SEC);
  assert_true(bt_reported(a, b3));
  assert_true(stat(h, "aged_order_3") == 1);
  assert_true(stat(h, "aged_blocks_reported") == 2);
  assert_true(stat(h, "aged_bytes_reported") == (8.0 + 64.0) * BH_PAGE_SIZE);
  assert_true(stat(h, "scans") == 33);
  /* a scan every interval, while attached */
  assert_int_equal(bh_hint_next_due(h), 34 * SEC);
  bh_hint_stats_t hs;
  bh_hint_stats(h, &hs);
  assert_int_equal(hs.refault_pages, 0);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/*
 * The defaults: age 32 s at order 8, growth 1.1, a scan every 2 s.  A lone order-8 block
 * marked at the first scan (2 s) is due at 34 s; a lone order-3 block at 2 + 32 * 1.1^5 =
 * 53.5 s, so at the scan of 54 s.
 */
static void test_age_defaults(void **state) {
  (void)state;
  struct at_craft c;
  assert_true(at_craft_init(&c, BH_BACKING_SIM, 512 * MiB, 100, 2));
  bh_arena_t *a = c.a;
  uint64_t b3 = c.region[0] + 8, b8 = c.region[1] + 256;
  at_free_pieces(&c, 0, 1, 1);
  at_free_pieces(&c, 1, 32, 32);
  assert_int_equal(bt_free_order(a, b8), 8);
  bh_hint_t *h = attach(a, NULL);
  assert_int_equal(bh_hint_next_due(h), 2 * SEC);
  bh_hint_advance(h, 2 * SEC);
  assert_true(marked(a, b3, NULL) && marked(a, b8, NULL));
  bh_hint_advance(h, 32 * SEC);
  assert_false(bt_reported(a, b8));
  bh_hint_advance(h, 34 * SEC);
  assert_true(bt_reported(a, b8));
  bh_hint_advance(h, 52 * SEC);
  assert_false(bt_reported(a, b3));
  bh_hint_advance(h, 54 * SEC);
  assert_true(bt_reported(a, b3));
  assert_true(stat(h, "aged_order_8") == 1 && stat(h, "aged_order_3") == 1);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- 2. reported small blocks go to the tail; allocation takes the flag (and mark) away ---- */

static size_t list3(bh_arena_t *a, uint64_t *pfn, bool *rep, size_t max) {
  bh_zone_t *z = bh_arena_zone(a, 0);
  size_t n = 0;
  bh_zone_lock(z);
  for (uint64_t p = bh_free_list_first(z, 3, BH_MT_MOVABLE); p != BH_PFN_NONE;
       p = bh_free_list_next(z, 3, BH_MT_MOVABLE, p)) {
    assert_true(n < max);
    pfn[n] = p;
    rep[n++] = bh_block_reported(z, p);
  }
  bh_zone_unlock(z);
  return n;
}

static void test_tail_and_flag(void **state) {
  (void)state;
  struct at_craft c;
  assert_true(at_craft_init(&c, BH_BACKING_SIM, 512 * MiB, 100, 1));
  bh_arena_t *a = c.a;
  const uint64_t R = c.region[0], A = R + 8, B = R + 40, C = R + 72;
  bh_hint_t *h = attach(a, "age=1s growth=1 interval=1s"); /* every aging order: 1 s */
  at_free_pieces(&c, 0, 1, 1);                             /* A */
  bh_hint_advance(h, 1 * SEC);                             /* A marked at 1 s */
  bh_hint_advance(h, 1500 * MSEC);
  at_free_pieces(&c, 0, 5, 1); /* B, at the head */
  uint64_t pfn[8];
  bool rep[8];
  assert_int_equal(list3(a, pfn, rep, 8), 2);
  assert_int_equal(pfn[0], B);
  /* put A, the block about to be reported, at the head */
  bh_zone_t *z = bh_arena_zone(a, 0);
  bh_zone_lock(z);
  bh_free_list_rotate(z, 3, BH_MT_MOVABLE, A);
  bh_zone_unlock(z);
  assert_int_equal(list3(a, pfn, rep, 8), 2);
  assert_int_equal(pfn[0], A);

  bh_hint_advance(h, 2 * SEC); /* A due (1 s old), B marked now */
  assert_true(bt_reported(a, A));
  assert_false(bt_reported(a, B));
  assert_int_equal(list3(a, pfn, rep, 8), 2);
  assert_int_equal(pfn[0], B); /* A went to the tail */
  assert_int_equal(pfn[1], A);
  assert_true(rep[1]);

  bh_hint_advance(h, 2500 * MSEC);
  at_free_pieces(&c, 0, 9, 1); /* C: a new free goes to the head, before the reported A */
  assert_int_equal(list3(a, pfn, rep, 8), 3);
  assert_int_equal(pfn[0], C);
  assert_int_equal(pfn[2], A);
  bh_hint_advance(h, 3 * SEC); /* B due: to the tail too; C marked */
  assert_int_equal(list3(a, pfn, rep, 8), 3);
  assert_int_equal(pfn[0], C);
  assert_false(rep[0]);
  assert_true(rep[1] && rep[2]);
  assert_int_equal(pfn[2], B);

  /* allocation takes the unreported head first, then the reported A: the flag goes, the
   * allocation counts as reported_alloc, and its 8 pages refault */
  bh_hint_advance(h, 3500 * MSEC);
  uint64_t x, alloc0 = bt_arena_stat(a, BH_STAT_reported_alloc);
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 3, 0, &x), 0);
  assert_int_equal(x, C);
  assert_int_equal(bt_arena_stat(a, BH_STAT_reported_alloc), alloc0);
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 3, 0, &x), 0);
  assert_int_equal(x, A);
  assert_int_equal(bt_arena_stat(a, BH_STAT_reported_alloc), alloc0 + 1);
  assert_true(stat(h, "reported_alloc") == (double)(alloc0 + 1));
  bh_hint_stats_t hs;
  bh_hint_stats(h, &hs);
  assert_int_equal(hs.refault_pages, 8);
  /* freed again it is a new block: unreported, unmarked, and aged from scratch */
  assert_int_equal(bh_free_pfn(a, A, 3, 0), 0);
  assert_false(bt_reported(a, A));
  assert_false(marked(a, A, NULL));
  bh_hint_advance(h, 4 * SEC); /* marked */
  assert_false(bt_reported(a, A));
  assert_true(marked(a, A, NULL));
  bh_hint_advance(h, 5 * SEC);
  assert_true(bt_reported(a, A));
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- 3. a run of neighbours is one range, aged by its size ---- */

/*
 * Orders 3, 4 and 5 side by side (pages 8..63 of a region, 56 pages, between allocated
 * pages): with runs=1 all three are due at the age of class 5 (8 s with age=1s growth=2)
 * and go to the host as one madvise call; with runs=0 each waits for its own order's age.
 */
static void runs_case(bool runs) {
  struct at_craft c;
  assert_true(at_craft_init(&c, BH_BACKING_MMAP, 512 * MiB, 100, 1));
  bh_arena_t *a = c.a;
  const uint64_t R = c.region[0];
  at_free_pieces(&c, 0, 1, 7);
  assert_int_equal(bt_free_order(a, R + 8), 3);
  assert_int_equal(bt_free_order(a, R + 16), 4);
  assert_int_equal(bt_free_order(a, R + 32), 5);
  bh_hint_t *h = attach(a, runs ? "age=1s growth=2 interval=1s"
                                : "age=1s growth=2 interval=1s "
                                  "runs=0");
  bh_hint_advance(h, 8500 * MSEC); /* marked at 1 s; age 7 s at 8 s */
  assert_true(stat(h, "aged_blocks_reported") == 0);
  uint64_t calls = host_calls(h);
  bh_hint_advance(h, 9 * SEC);
  if (runs) {
    assert_true(bt_reported(a, R + 8) && bt_reported(a, R + 16) && bt_reported(a, R + 32));
    assert_true(stat(h, "aged_report_calls") == 1);
    assert_int_equal(host_calls(h), calls + 1); /* pages 8..63: one range */
  } else {
    assert_true(bt_reported(a, R + 32));
    assert_false(bt_reported(a, R + 16) || bt_reported(a, R + 8));
    bh_hint_advance(h, 16 * SEC);
    assert_false(bt_reported(a, R + 16));
    bh_hint_advance(h, 17 * SEC);
    assert_true(bt_reported(a, R + 16));
    assert_false(bt_reported(a, R + 8));
    bh_hint_advance(h, 33 * SEC);
    assert_true(bt_reported(a, R + 8));
    assert_true(stat(h, "aged_report_calls") == 3);
    assert_int_equal(host_calls(h), calls + 3);
  }
  /* the memory is gone from the host: mincore says so */
  uint64_t resident = 1;
  assert_int_equal(bh_arena_resident_range(a, R + 8, 56, &resident), 0);
  assert_int_equal(resident, 0);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

static void test_runs(void **state) {
  (void)state;
  runs_case(true);
  runs_case(false);
}

/* ---- 4. the rate cap: at most rate * interval host calls per scan, largest first ---- */

static void test_rate_cap(void **state) {
  (void)state;
  struct at_craft c;
  assert_true(at_craft_init(&c, BH_BACKING_SIM, 512 * MiB, 100, 6));
  bh_arena_t *a = c.a;
  for (int r = 0; r < 4; r++) /* 128 lone order-3 blocks: every odd piece */
    for (unsigned i = 1; i < 64; i += 2)
      at_free_pieces(&c, r, i, 1);
  at_free_pieces(&c, 4, 8, 8);  /* order 6 at +64 */
  at_free_pieces(&c, 4, 24, 8); /* order 6 at +192 */
  at_free_pieces(&c, 5, 4, 4);  /* order 5 at +32 */
  assert_int_equal(bt_free_order(a, c.region[4] + 64), 6);
  assert_int_equal(bt_free_order(a, c.region[4] + 192), 6);
  assert_int_equal(bt_free_order(a, c.region[5] + 32), 5);
  /* every aging order 1 s; four host calls per second, four blocks per report call: the
   * blocks are lone, so each is one host call, and each scan makes one report call */
  bh_hint_t *h = attach(a, "age=1s growth=1 interval=1s rate=4 capacity=4");
  bh_hint_advance(h, 2 * SEC);
  assert_true(stat(h, "aged_report_calls") == 1);
  assert_true(stat(h, "aged_host_calls") == 4);
  assert_true(stat(h, "aged_order_6") == 2); /* the largest went first */
  assert_true(stat(h, "aged_order_5") == 1);
  assert_true(stat(h, "aged_order_3") == 1);
  assert_true(bt_reported(a, c.region[0] + 8)); /* then the lowest address */
  assert_true(stat(h, "rate_deferred") == 127);
  for (unsigned t = 3; t <= 10; t++) {
    bh_hint_advance(h, t * SEC);
    assert_true(stat(h, "aged_report_calls") == t - 1);
    assert_true(stat(h, "aged_blocks_reported") == 4.0 * (t - 1));
  }
  bh_hint_advance(h, 33 * SEC); /* 131 blocks: 33 calls, the last at 34 s */
  assert_true(stat(h, "aged_report_calls") == 32);
  bh_hint_advance(h, 40 * SEC);
  assert_true(stat(h, "aged_report_calls") == 33);
  assert_true(stat(h, "aged_blocks_reported") == 131);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);

  /* rate=0: no cap, all at the first scan that finds them due */
  assert_true(at_craft_init(&c, BH_BACKING_SIM, 512 * MiB, 100, 4));
  a = c.a;
  for (int r = 0; r < 4; r++)
    for (unsigned i = 1; i < 64; i += 2)
      at_free_pieces(&c, r, i, 1);
  h = attach(a, "age=1s growth=1 interval=1s rate=0 capacity=4");
  bh_hint_advance(h, 2 * SEC);
  assert_true(stat(h, "aged_report_calls") == 32);
  assert_true(stat(h, "aged_blocks_reported") == 128);
  assert_true(stat(h, "rate_deferred") == 0);
  check_arena(a);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* ---- 5. with low = order, adaptive is bubble ---- */

/* The same seeded operations on two arenas, bubble on one and adaptive:low=9 on the other:
 * after every worker step both have the same reported blocks and counters. */
static void same_flags(bh_arena_t *x, bh_arena_t *y) {
  for (int i = 0; i < bh_arena_zone_count(x); i++) {
    bh_zone_t *zx = bh_arena_zone(x, i), *zy = bh_arena_zone(y, i);
    for (unsigned o = 0; o <= bh_arena_max_order(x); o++)
      for (int mt = 0; mt < BH_MT_TYPES; mt++) {
        uint64_t p = bh_free_list_first(zx, o, mt), q = bh_free_list_first(zy, o, mt);
        for (; p != BH_PFN_NONE && q != BH_PFN_NONE;
             p = bh_free_list_next(zx, o, mt, p), q = bh_free_list_next(zy, o, mt, q)) {
          assert_int_equal(p, q);
          assert_int_equal(bh_block_reported(zx, p), bh_block_reported(zy, q));
        }
        assert_true(p == BH_PFN_NONE && q == BH_PFN_NONE);
      }
  }
}

static void test_low_is_bubble(void **state) {
  (void)state;
  uint64_t seed = bt_seed(), rs = seed ? seed : 1;
  printf("seed %llu (BH_TEST_SEED=%llu to replay)\n", (unsigned long long)seed,
         (unsigned long long)seed);
  bh_arena_t *x = bt_arena(BH_BACKING_SIM, 256 * MiB, false, 0);
  bh_arena_t *y = bt_arena(BH_BACKING_SIM, 256 * MiB, false, 0);
  bh_hint_t *hb = at_attach(x, "bubble", BH_CLOCK_VIRTUAL, NULL);
  bh_hint_t *ha = attach(y, "low=9");
  enum { LIVE = 2048 };
  static struct {
    uint64_t pfn;
    unsigned order;
  } live[LIVE];
  size_t nlive = 0, steps = 0;
  uint64_t now = 0;
  for (int op = 0; op < 30000; op++) {
    uint64_t r = bt_rand(&rs);
    if (r % 100 < 50 && nlive < LIVE) {
      unsigned order = (unsigned)(bt_rand(&rs) % 11);
      if (order > 2 && bt_rand(&rs) % 4)
        order = (unsigned)(bt_rand(&rs) % 3);
      uint64_t p, q;
      int e1 = bh_alloc_pfn(x, BH_GFP_USER_MOVABLE, order, 0, &p);
      int e2 = bh_alloc_pfn(y, BH_GFP_USER_MOVABLE, order, 0, &q);
      assert_int_equal(e1, e2);
      if (!e1) {
        assert_int_equal(p, q);
        live[nlive].pfn = p;
        live[nlive++].order = order;
      }
    } else if (r % 100 < 95 && nlive) {
      size_t i = (size_t)(bt_rand(&rs) % nlive);
      assert_int_equal(bh_free_pfn(x, live[i].pfn, live[i].order, 0), 0);
      assert_int_equal(bh_free_pfn(y, live[i].pfn, live[i].order, 0), 0);
      live[i] = live[--nlive];
    } else {
      now += bt_rand(&rs) % (4 * SEC);
      long s1 = bh_hint_advance(hb, now), s2 = bh_hint_advance(ha, now);
      assert_int_equal(s1, s2);
      assert_int_equal(bh_hint_next_due(hb), bh_hint_next_due(ha));
      if (s1 > 0) {
        steps += (size_t)s1;
        same_flags(x, y);
        assert_true(bt_stat(hb, "blocks_reported") == stat(ha, "blocks_reported"));
        assert_true(bt_stat(hb, "report_calls") == stat(ha, "report_calls"));
        assert_true(bt_stat(hb, "budget_exhausted") == stat(ha, "budget_exhausted"));
      }
    }
  }
  printf("  %zu steps, %.0f blocks reported by each\n", steps, stat(ha, "blocks_reported"));
  assert_true(steps > 0);
  assert_true(stat(ha, "blocks_reported") > 0);
  assert_true(stat(ha, "scans") == 0);
  bh_hint_detach(hb);
  bh_hint_detach(ha);
  bh_arena_destroy(x);
  bh_arena_destroy(y);
}

/* The same on a recorded trace, through the replay: every figure the replay prints agrees. */
static void test_low_is_bubble_replay(void **state) {
  (void)state;
  bh_replay_summary_t s[2];
  static const char *names[2] = {"bubble", "adaptive"};
  bh_opt_t low = {"low", "9"};
  for (int i = 0; i < 2; i++) {
    bh_replay_config_t rc;
    bh_replay_config_init(&rc);
    rc.trace = BH_SOURCE_DIR "/traces/real-bursts.bht.zst";
    rc.arena.backing = BH_BACKING_SIM;
    rc.hint.strategy = names[i];
    rc.hint.opts = i ? &low : NULL;
    rc.hint.nopts = i ? 1 : 0;
    char err[256] = "";
    int rcode = bh_replay_run(&rc, &s[i], err, sizeof err);
    if (rcode)
      fail_msg("replay: %s", err);
  }
  printf("  bubble and adaptive:low=9: %llu bytes reported, %llu refaults, %llu resident\n",
         (unsigned long long)s[0].reported_bytes, (unsigned long long)s[0].refaults,
         (unsigned long long)s[0].rss_final_bytes);
  assert_true(s[0].reported_bytes > 0 && s[0].refaults > 0);
  assert_int_equal(s[0].reported_bytes, s[1].reported_bytes);
  assert_int_equal(s[0].refaults, s[1].refaults);
  assert_int_equal(s[0].rss_final_bytes, s[1].rss_final_bytes);
  assert_int_equal(s[0].rss_peak_bytes, s[1].rss_peak_bytes);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_mark),
      cmocka_unit_test(test_age),
      cmocka_unit_test(test_age_defaults),
      cmocka_unit_test(test_tail_and_flag),
      cmocka_unit_test(test_runs),
      cmocka_unit_test(test_rate_cap),
      cmocka_unit_test(test_low_is_bubble),
      cmocka_unit_test(test_low_is_bubble_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
