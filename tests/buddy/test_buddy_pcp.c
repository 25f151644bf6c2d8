/*
 * Per-CPU page lists (kernel.md 1.7, 6.12): refills of nr_pcp_alloc() blocks taken under one
 * zone lock and appended in address order, allocation from the list head (LIFO with frees,
 * which go to the head), drains of nr_pcp_free() pages from the list tails when count reaches
 * high, drain_all_pages.  Sizes for the default 1 GiB arena's Normal zone (2 CPU slots):
 * batch = 31, high_min = low 643 / 2 = 321, high_max = 131072 / 8 / 2 = 8192.
 */
#include "buddy_test.h"

#include <buddyhint/strategy.h>

#include <stdlib.h>

#define NORMAL_START 131072 /* DMA 4096 + DMA32 126976 pages */

static bh_arena_t *default_sim(void) {
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  return bt_create(&c);
}

/*
 * nr_pcp_alloc on an empty list: high = clamp(high, 321, 8192) = 321; batch = 31 <<
 * alloc_factor; high grows by batch (zone not below high); max_nr = high - count - batch;
 * alloc_factor++ while batch <= max_nr.  First refill: batch 31 (high 352, max_nr 321,
 * factor 1); the 32nd allocation refills 62 (high 414, max_nr 383, factor 2).  __rmqueue
 * splits the first Normal top block page by page, so the lists hold NORMAL_START + 0.. in
 * order and the allocations return consecutive pfns.
 */
static void test_pcp_refill_sizes_and_order(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  for (uint64_t i = 0; i < 32; i++)
    EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), NORMAL_START + i);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_alloc), 32);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_refill), 2);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_refill_pages), 31 + 62);
  bh_zone_info_t zi = bt_zone(a, 2);
  EXPECT_U64(zi.pcp_pages, 93 - 32);
  EXPECT_U64(zi.free_pages, 131072 - 93);
  /* another CPU slot has its own list: it refills 31 from the buddy, starting at +93 */
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 1), NORMAL_START + 93);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_refill_pages), 93 + 31);
  EXPECT_U64(bt_zone(a, 2).pcp_pages, 61 + 30);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), NORMAL_START + 32);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* Frees go to the head of the list and allocation takes the head: LIFO per CPU slot. */
static void test_pcp_lifo(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  uint64_t p[4];
  for (int i = 0; i < 4; i++)
    p[i] = bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  bt_free(a, p[2], 0, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), p[2]);
  bt_free(a, p[0], 0, 0);
  bt_free(a, p[3], 0, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), p[3]);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), p[0]);
  /* a page freed on slot 1 is not seen by slot 0 */
  bt_free(a, p[1], 0, 1);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), NORMAL_START + 4);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 1), p[1]);
  /* order 2 uses its own list, refilled with max(31 >> 2, 2) = 7 blocks */
  uint64_t q = bt_alloc(a, BH_GFP_MOVABLE, 2, 0);
  EXPECT_U64(q % 4, 0);
  bt_free(a, q, 2, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 2, 0), q);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_free), 5);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * Freeing everything then draining: every refilled page comes back; the zone is whole again.
 * Slot 0 refilled 31 + 62, slot 1 31, both stay below high while freeing (no drains), so
 * drain_all_pages drains two lists and 124 pages.
 */
static void test_pcp_drain_returns_everything(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  uint64_t p[40];
  for (int i = 0; i < 32; i++)
    p[i] = bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  for (int i = 32; i < 40; i++)
    p[i] = bt_alloc(a, BH_GFP_MOVABLE, 0, 1);
  for (int i = 0; i < 40; i++)
    bt_free(a, p[i], 0, i & 1);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain), 0);
  bh_zone_info_t zi = bt_zone(a, 2);
  EXPECT_U64(zi.pcp_pages, 124);
  EXPECT_U64(zi.free_pages + zi.pcp_pages, zi.managed_pages);
  bh_drain_pcp(a);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain), 2);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain_pages), 124);
  EXPECT_U64(bt_stat(a, BH_STAT_pgfree), 40);
  EXPECT_U64(bt_stat(a, BH_STAT_free_calls), 40);
  bt_expect_all_free(a);
  bt_expect_clean(a);
  bh_drain_pcp(a); /* nothing left: no drain counted */
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain), 2);
  bh_arena_destroy(a);
}

/*
 * Fixed pcp sizes (pcp_batch 4, pcp_high 16 = high_min = high_max), one CPU slot, Normal
 * 16 MiB, watermarks 0.  16 allocations refill 4, 8 (factor 1 -> 2), then min(16, max_nr
 * 16 - 0 - 4 = 12) = 12: 24 pages, 8 left.  Then 16 frees: count reaches 16 at the 8th free
 * with free_count 8 -> drain clamp(8, batch 4, high - batch 12) = 8 pages (count 8); at the
 * 16th free count is 16 again, free_count 16 -> drain 12 (count 4).
 */
/* fixed_pcp_arena with its CPU's cache share (cpu_data_slice_bytes) and free_high rule. */
static bh_arena_t *fixed_pcp_arena_with(uint64_t slice_bytes, bool free_high_raised) {
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 16 * MiB);
  c.backing = BH_BACKING_SIM;
  c.pcp = true;
  c.nr_cpus = 1;
  c.pcp_batch = 4;
  c.pcp_high = 16;
  c.cpu_data_slice_bytes = slice_bytes;
  c.pcp_free_high_raised = free_high_raised;
  bt_cfg_no_wmarks(&c);
  bh_arena_t *a = bt_create(&c);
  bh_zone_info_t zi = bt_zone(a, 0);
  EXPECT_U64(zi.pcp_batch, 4);
  EXPECT_U64(zi.pcp_high, 16);
  return a;
}

static bh_arena_t *fixed_pcp_arena(void) {
  bh_config_t d;
  bh_config_init(&d);
  return fixed_pcp_arena_with(d.cpu_data_slice_bytes, d.pcp_free_high_raised);
}

/* n order-1 blocks allocated into p, then the pcp lists drained: the start of a burst of frees. */
static void order1_blocks(bh_arena_t *a, uint64_t *p, int n) {
  for (int i = 0; i < n; i++)
    p[i] = bt_alloc(a, BH_GFP_MOVABLE, 1, 0);
  bh_drain_pcp(a);
}

static void test_pcp_drain_at_high(void **state) {
  (void)state;
  bh_arena_t *a = fixed_pcp_arena();
  uint64_t p[16];
  for (int i = 0; i < 16; i++)
    p[i] = bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_refill), 3);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_refill_pages), 24);
  EXPECT_U64(bt_zone(a, 0).pcp_pages, 8);
  for (int i = 0; i < 8; i++)
    bt_free(a, p[i], 0, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain), 1);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain_pages), 8);
  for (int i = 8; i < 16; i++)
    bt_free(a, p[i], 0, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain), 2);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain_pages), 20);
  EXPECT_U64(bt_zone(a, 0).pcp_pages, 4);
  bh_drain_pcp(a);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain_pages), 24);
  bt_expect_all_free(a);
  bh_arena_destroy(a);
}

/*
 * rmqueue_pcplist() in 6.12 halves pcp->free_count on every allocation ("On allocation,
 * reduce the number of pages that are batch freed"); without it free_count only grows and
 * drains get larger than the kernel's after mixed traffic.
 * With fixed_pcp_arena: 16 allocations (8 left on the list), then 10 rounds of free + alloc
 * (kernel: free_count 1 after the free, 0 after the alloc), then 8 frees: count reaches 16
 * with free_count 8 -> the kernel drains clamp(8, 4, 12) = 8 pages (without the halving:
 * free_count 18, 12 pages).
 */
static void test_pcp_free_count_halved_on_alloc(void **state) {
  (void)state;
  bh_arena_t *a = fixed_pcp_arena();
  uint64_t p[16];
  for (int i = 0; i < 16; i++)
    p[i] = bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  for (int r = 0; r < 10; r++) {
    bt_free(a, p[0], 0, 0);
    EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), p[0]);
  }
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain), 0);
  for (int i = 0; i < 8; i++)
    bt_free(a, p[i], 0, 0);
  uint64_t drains = bt_stat(a, BH_STAT_pcp_drain), drained = bt_stat(a, BH_STAT_pcp_drain_pages);
  bh_arena_destroy(a); /* before failing, so that sanitizers report no leak */
  EXPECT_U64(drains, 1);
  EXPECT_U64(drained, 8);
}

/*
 * PCPF_FREE_HIGH_BATCH: a pcp whose CPU's share of the last-level cache exceeds 3 * batch
 * pages (zone_pcp_update_cacheinfo, mm/page_alloc.c:5870-5873) keeps batch pages through a
 * burst of order 1..3 frees: free_high needs count >= batch too (mm/page_alloc.c:2699-2703),
 * and free_high drains min(count, batch << 5) (2608-2609).  fixed_pcp_arena (batch 4, high
 * 16): four order-1 blocks allocated, the lists drained, then the four freed one by one.
 * Free 1: no high-order free before it; free 2: free_count 2 < 4; free 3: free_count 4,
 * count 6 >= 4, free_high either way: 6 pages drained.  Free 4: free_count 6, count 2: with
 * the flag 2 < 4 keeps them; without it (cpu_data_slice_bytes 0, or exactly 3 * batch pages)
 * they are drained too.
 */
static uint64_t high_order_burst(uint64_t slice_bytes, uint64_t *drained) {
  bh_arena_t *a = fixed_pcp_arena_with(slice_bytes, false);
  uint64_t p[4];
  order1_blocks(a, p, 4);
  uint64_t d0 = bt_stat(a, BH_STAT_pcp_drain), dp0 = bt_stat(a, BH_STAT_pcp_drain_pages);
  for (int i = 0; i < 3; i++)
    bt_free(a, p[i], 1, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain) - d0, 1);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain_pages) - dp0, 6);
  bt_free(a, p[3], 1, 0);
  uint64_t left = bt_zone(a, 0).pcp_pages;
  *drained = bt_stat(a, BH_STAT_pcp_drain_pages) - dp0;
  bt_expect_clean(a);
  bh_arena_destroy(a);
  return left;
}

static void test_pcp_free_high_batch(void **state) {
  (void)state;
  uint64_t drained;
  EXPECT_U64(high_order_burst(2ull << 20, &drained), 2); /* the default: 512 pages > 12 */
  EXPECT_U64(drained, 6);
  EXPECT_U64(high_order_burst(0, &drained), 0);
  EXPECT_U64(drained, 8);
  EXPECT_U64(high_order_burst(12 * 4096, &drained), 0); /* 12 pages: not above 3 * 4 */
  EXPECT_U64(drained, 8);
  EXPECT_U64(high_order_burst(13 * 4096, &drained), 2);
}

/*
 * When free_high starts, by the recorded kernel.  One CPU, batch 4, high 16 (so high_min 16),
 * no PCPF_FREE_HIGH_BATCH; eight order-1 blocks allocated, the lists drained, then the eight
 * freed one by one.  Each free checks free_count before adding its own pages, and free_high
 * needs the free before it to be of order 1-3 too.  6.12 (free_count >= batch,
 * mm/page_alloc.c:2703 in 6.12.117): free 3 sees free_count 4, drains all 6 pages
 * (min(count, batch << 5), :2608-2609), and every free after drains its own 2: the first
 * drain at free 3, six drains.  6.16+ (free_count >= batch + high_min / 2 = 12, "mm: pcp:
 * increase pcp->free_count threshold to trigger free_high"): nothing until free 7 sees
 * free_count 12 with 14 pages listed (high 16 not reached), which it drains; free 8 drains
 * its 2: two drains.  16 pages either way.
 */
static uint64_t free_high_burst(bool raised, int *first_drain) {
  bh_arena_t *a = fixed_pcp_arena_with(0, raised);
  uint64_t p[8];
  order1_blocks(a, p, 8);
  uint64_t d0 = bt_stat(a, BH_STAT_pcp_drain), dp0 = bt_stat(a, BH_STAT_pcp_drain_pages);
  *first_drain = 0;
  for (int i = 0; i < 8; i++) {
    bt_free(a, p[i], 1, 0);
    if (!*first_drain && bt_stat(a, BH_STAT_pcp_drain) > d0)
      *first_drain = i + 1;
  }
  uint64_t drains = bt_stat(a, BH_STAT_pcp_drain) - d0;
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain_pages) - dp0, 16);
  bt_expect_all_free(a);
  bh_arena_destroy(a);
  return drains;
}

static void test_pcp_free_high_raised(void **state) {
  (void)state;
  int first;
  EXPECT_U64(free_high_burst(false, &first), 6);
  assert_int_equal(first, 3);
  EXPECT_U64(free_high_burst(true, &first), 2);
  assert_int_equal(first, 7);
  bh_config_t c;
  bh_config_init(&c);
  assert_false(c.pcp_free_high_raised); /* the model follows 6.12 */
}

/* pcp_thp: pageblock-order (9) blocks use the THP list; order 4 never uses a pcp list. */
static void test_pcp_orders(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  uint64_t big = bt_alloc(a, BH_GFP_MOVABLE, 9, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_alloc), 1);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_refill_pages), 2 * 512); /* max(31 >> 9, 2) blocks */
  uint64_t mid = bt_alloc(a, BH_GFP_MOVABLE, 4, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_alloc), 1);
  bt_free(a, mid, 4, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_free), 0);
  bt_free(a, big, 9, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_free), 1);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), big);
  bt_free(a, big, 9, 0);
  bh_drain_pcp(a);
  bt_expect_all_free(a);
  bh_arena_destroy(a);
}

/*
 * A failed allocation does not drain the pcp lists, whether it may block or not: Linux drains
 * them (drain_all_pages) only in __alloc_pages_direct_reclaim after a reclaim that made
 * progress (mm/page_alloc.c:4032-4047), and nothing is reclaimable here.  Another CPU's pcp
 * pages stay where they are, and an order-9 request that needs them fails.
 */
static void test_pcp_no_drain_without_reclaim(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 64 * MiB);
  c.backing = BH_BACKING_SIM;
  c.pcp = true;
  bh_arena_t *a = bt_create(&c);
  uint64_t pfn, n = 0;
  uint64_t *held = malloc(sizeof(*held) * 16384);
  while (n < 16384 && bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &held[n]) == 0)
    n++;
  for (uint64_t i = 0; i < n; i += 2) /* every other page: no order-9 block can form */
    bt_free(a, held[i], 0, 0);
  uint64_t before = bt_zone(a, 0).pcp_pages, drains = bt_stat(a, BH_STAT_pcp_drain);
  assert_true(before > 0);
  EXPECT_U64(bh_alloc_pfn(a, BH_GFP_ATOMIC | BH_GFP_MOVABLE, 9, 0, &pfn), BH_ENOSPC);
  EXPECT_U64(bt_zone(a, 0).pcp_pages, before);
  EXPECT_U64(bh_alloc_pfn(a, BH_GFP_MOVABLE, 9, 0, &pfn), BH_ENOSPC);
  EXPECT_U64(bt_zone(a, 0).pcp_pages, before);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain), drains);
  for (uint64_t i = 1; i < n; i += 2)
    bt_free(a, held[i], 0, 0);
  free(held);
  bh_drain_pcp(a);
  bt_expect_all_free(a);
  bh_arena_destroy(a);
}

/*
 * cfg.reclaim_progress: direct reclaim counts as having made progress, so a request that may
 * block drains every pcp list before its retry (mm/page_alloc.c:4043-4047); GFP_ATOMIC never
 * gets there.
 */
static void test_pcp_drain_with_reclaim_progress(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 64 * MiB);
  c.backing = BH_BACKING_SIM;
  c.pcp = true;
  c.reclaim_progress = true;
  bh_arena_t *a = bt_create(&c);
  uint64_t pfn, n = 0;
  uint64_t *held = malloc(sizeof(*held) * 16384);
  while (n < 16384 && bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &held[n]) == 0)
    n++;
  for (uint64_t i = 0; i < n; i += 2)
    bt_free(a, held[i], 0, 0);
  uint64_t before = bt_zone(a, 0).pcp_pages;
  assert_true(before > 0);
  EXPECT_U64(bh_alloc_pfn(a, BH_GFP_ATOMIC | BH_GFP_MOVABLE, 9, 0, &pfn), BH_ENOSPC);
  EXPECT_U64(bt_zone(a, 0).pcp_pages, before);
  EXPECT_U64(bh_alloc_pfn(a, BH_GFP_MOVABLE, 9, 0, &pfn), BH_ENOSPC);
  EXPECT_U64(bt_zone(a, 0).pcp_pages, 0);
  for (uint64_t i = 1; i < n; i += 2)
    bt_free(a, held[i], 0, 0);
  free(held);
  bh_drain_pcp(a);
  bt_expect_all_free(a);
  bh_arena_destroy(a);
}

/*
 * A CONFIG_SMP=n arena (cfg.smp false) takes no locks but behaves the same: the same seeded
 * sequence of allocations and frees gives the same pfns as on an SMP arena.  A worker thread
 * is refused, since nothing would keep it off the lists.
 */
static void test_up_arena_same_behaviour(void **state) {
  (void)state;
  bh_arena_t *a[2];
  for (int i = 0; i < 2; i++) {
    bh_config_t c;
    bh_config_init(&c);
    c.backing = BH_BACKING_SIM;
    c.smp = i == 0;
    a[i] = bt_create(&c);
  }
  uint64_t held[2][512] = {{0}}, x = 12345;
  for (int step = 0; step < 20000; step++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    unsigned slot = (unsigned)(x % 512), order = (unsigned)(x >> 20) % 4,
             cpu = (unsigned)(x >> 30) % 2;
    for (int i = 0; i < 2; i++) {
      if (held[i][slot]) {
        bt_free(a[i], (held[i][slot] & ((1ull << 48) - 1)) - 1, (unsigned)(held[i][slot] >> 48),
                (int)cpu);
        held[i][slot] = 0;
      } else {
        uint64_t pfn = bt_alloc(a[i], BH_GFP_MOVABLE, order, (int)cpu);
        held[i][slot] = (pfn + 1) | (uint64_t)order << 48;
      }
    }
    assert_true(held[0][slot] == held[1][slot]);
  }
  bt_expect_clean(a[0]);
  bt_expect_clean(a[1]);
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.clock = BH_CLOCK_THREAD;
  bh_hint_t *h = NULL;
  EXPECT_U64(bh_hint_attach(a[1], &hc, &h), BH_EINVAL);
  hc.clock = BH_CLOCK_VIRTUAL;
  EXPECT_U64(bh_hint_attach(a[1], &hc, &h), BH_OK);
  bh_hint_detach(h);
  for (int i = 0; i < 2; i++)
    bh_arena_destroy(a[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pcp_refill_sizes_and_order),
      cmocka_unit_test(test_pcp_lifo),
      cmocka_unit_test(test_pcp_drain_returns_everything),
      cmocka_unit_test(test_pcp_drain_at_high),
      cmocka_unit_test(test_pcp_free_count_halved_on_alloc),
      cmocka_unit_test(test_pcp_free_high_batch),
      cmocka_unit_test(test_pcp_free_high_raised),
      cmocka_unit_test(test_pcp_orders),
      cmocka_unit_test(test_pcp_no_drain_without_reclaim),
      cmocka_unit_test(test_pcp_drain_with_reclaim_progress),
      cmocka_unit_test(test_up_arena_same_behaviour),
  };
  return cmocka_run_group_tests_name("buddy_pcp", tests, NULL, NULL);
}
