/*
 * Mobility grouping: the fallback table, claiming a whole pageblock (order >= pageblock
 * order, or the half-pageblock rule below it), stealing without claiming, the watermark
 * boost of a fragmenting fallback, and page_group_by_mobility_disabled.  Rules from
 * kernel.md 1.5 (the 6.15 "claim, then steal" __rmqueue that 6.12.y carries):
 *   __rmqueue: own type (__rmqueue_smallest), else __rmqueue_claim (top-down over orders, the
 *   first non-empty fallback list in table order, stop at the first order not worth
 *   claiming), else __rmqueue_steal (smallest fallback block, remainder stays on its type).
 * Arenas: one node, one Normal zone of 8 MiB = pageblocks P0 (0), P1 (512), P2 (1024),
 * P3 (1536), top blocks 0 and 1024; pcp off.
 */
#include "buddy_test.h"

#include <string.h>

static bh_arena_t *arena_8mib(bool wmarks, bool grouping) {
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 8 * MiB);
  c.backing = BH_BACKING_SIM;
  c.mobility_grouping = grouping;
  if (!wmarks)
    bt_cfg_no_wmarks(&c);
  return bt_create(&c);
}

static const unsigned gfp_of[BH_MT_PCPTYPES] = {
    [BH_MT_UNMOVABLE] = BH_GFP_KERNEL,
    [BH_MT_MOVABLE] = BH_GFP_MOVABLE,
    [BH_MT_RECLAIMABLE] = BH_GFP_RECLAIMABLE,
};

struct extfrag {
  uint64_t fallback, fragmenting, claim;
};

static struct extfrag extfrag_now(bh_arena_t *a) {
  uint64_t v[BH_NR_STATS];
  bh_stats_read(a, v);
  return (struct extfrag){v[BH_STAT_extfrag_fallback], v[BH_STAT_extfrag_fragmenting],
                          v[BH_STAT_extfrag_claim]};
}

static void expect_extfrag_delta(bh_arena_t *a, struct extfrag before, uint64_t fallback,
                                 uint64_t fragmenting, uint64_t claim) {
  struct extfrag now = extfrag_now(a);
  EXPECT_U64(now.fallback - before.fallback, fallback);
  EXPECT_U64(now.fragmenting - before.fragmenting, fragmenting);
  EXPECT_U64(now.claim - before.claim, claim);
}

/* Pageblock counts per type (Unmovable, Movable, Reclaimable) of zone 0. */
static void expect_pageblocks(bh_arena_t *a, uint64_t unmovable, uint64_t movable,
                              uint64_t reclaimable) {
  bh_zone_info_t zi = bt_zone(a, 0);
  EXPECT_U64(zi.pageblocks[BH_MT_UNMOVABLE], unmovable);
  EXPECT_U64(zi.pageblocks[BH_MT_MOVABLE], movable);
  EXPECT_U64(zi.pageblocks[BH_MT_RECLAIMABLE], reclaimable);
  EXPECT_U64(zi.pageblocks[BH_MT_HIGHATOMIC] + zi.pageblocks[BH_MT_ISOLATE], 0);
}

/* ---- the fallback table ---- */

/*
 * For a request of type R with fallbacks {F1, F2}: top block 0 is made an F2 block and top
 * block 1024 an F1 block (allocate F2 then F1 at order 10, each claiming a Movable top block
 * unless it is Movable itself, then free both).  No R memory is free, so an order-0 R request
 * claims from the first fallback in table order, F1, although F2 has the lower address:
 * pfn 1024, whose two pageblocks become R.
 */
static const struct {
  int request, f1, f2;
} fallback_rows[] = {
    {BH_MT_UNMOVABLE, BH_MT_RECLAIMABLE, BH_MT_MOVABLE},
    {BH_MT_MOVABLE, BH_MT_RECLAIMABLE, BH_MT_UNMOVABLE},
    {BH_MT_RECLAIMABLE, BH_MT_UNMOVABLE, BH_MT_MOVABLE},
};

static void test_fallback_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof fallback_rows / sizeof fallback_rows[0]; i++) {
    int r = fallback_rows[i].request, f1 = fallback_rows[i].f1, f2 = fallback_rows[i].f2;
    bh_arena_t *a = arena_8mib(false, true);
    EXPECT_U64(bt_alloc(a, gfp_of[f2], 10, 0), 0);
    EXPECT_U64(bt_alloc(a, gfp_of[f1], 10, 0), 1024);
    bt_free(a, 0, 10, 0);
    bt_free(a, 1024, 10, 0);
    bh_zone_info_t zi = bt_zone(a, 0);
    EXPECT_U64(zi.nr_free_mt[10][f1], 1);
    EXPECT_U64(zi.nr_free_mt[10][f2], 1);
    EXPECT_U64(zi.pageblocks[f1], 2);
    EXPECT_U64(zi.pageblocks[f2], 2);
    struct extfrag before = extfrag_now(a);
    uint64_t pfn = bt_alloc(a, gfp_of[r], 0, 0);
    if (pfn != 1024) {
      print_error("%s request fell back to pfn %llu, expected 1024 (the %s block)\n",
                  bh_migratetype_name(r), (unsigned long long)pfn, bh_migratetype_name(f1));
      fail();
    }
    zi = bt_zone(a, 0);
    EXPECT_U64(zi.pageblocks[r], 2);
    EXPECT_U64(zi.pageblocks[f2], 2);
    EXPECT_U64(zi.pageblocks[f1], 0);
    for (unsigned o = 0; o < 10; o++)
      EXPECT_U64(zi.nr_free_mt[o][r], 1); /* 1025, 1026, ..., 1536 */
    expect_extfrag_delta(a, before, 1, 0, 1);
    bt_expect_clean(a);
    bh_arena_destroy(a);
  }
}

/* ---- claiming ---- */

/*
 * A fresh arena is all Movable: an Unmovable order-0 request falls back to the free top block
 * 0 (order 10 >= pageblock order: take ownership of both pageblocks, change_pageblock_range)
 * and gets pfn 0; the halves 1..512 land on the Unmovable lists.  Not fragmenting (fallback
 * order >= pageblock order), ownership changed.
 */
static void test_claim_free_top_block(void **state) {
  (void)state;
  bh_arena_t *a = arena_8mib(true, true);
  expect_pageblocks(a, 0, 4, 0);
  struct extfrag before = extfrag_now(a);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 0);
  expect_pageblocks(a, 2, 2, 0);
  expect_extfrag_delta(a, before, 1, 0, 1);
  bh_zone_info_t zi = bt_zone(a, 0);
  for (unsigned o = 0; o < 10; o++) {
    EXPECT_U64(zi.nr_free_mt[o][BH_MT_UNMOVABLE], 1);
    EXPECT_U64(zi.nr_free_mt[o][BH_MT_MOVABLE], 0);
  }
  EXPECT_U64(zi.nr_free_mt[10][BH_MT_MOVABLE], 1);
  EXPECT_U64(zi.wmark_boost, 0); /* no boost for a fallback at or above pageblock order */
  /* the next Unmovable requests are served from their own lists */
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1);
  EXPECT_U64(bt_alloc(a, BH_GFP_RECLAIMABLE, 9, 0), 1024);
  expect_extfrag_delta(a, before, 2, 0, 2);
  expect_pageblocks(a, 2, 0, 2);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * Half-pageblock rule, claim: default watermarks (8 MiB: min 90, low 112, high 134).
 * Movable: 0 (order 0), 512 (order 9), 1024 (order 10) allocated, so the only free memory
 * is P0's 511 pages in blocks of orders 0..8, all Movable.  An Unmovable order-0 request
 * (one that does not wake kswapd, so that the boost stays) finds the order-8 block 256 first
 * (top-down), below pageblock order: boost the watermark (zone of 4 pageblocks is not < 4;
 * max_boost = max(512, 134 * 15000 / 10000 = 201) -> boost 512), then count P0: free 511,
 * movable in use 1, alike for Unmovable from a Movable block = 512 - 511 - 1 = 0; 511 >= 256
 * -> claim P0, move its free blocks to Unmovable, allocate the head of order 0: pfn 1.
 * Fragmenting (order 8 < 9), ownership changed.
 */
static void test_claim_half_pageblock(void **state) {
  (void)state;
  bh_arena_t *a = arena_8mib(true, true);
  bh_zone_info_t zi = bt_zone(a, 0);
  EXPECT_U64(zi.wmark_min, 90);
  EXPECT_U64(zi.wmark_low, 112);
  EXPECT_U64(zi.wmark_high, 134);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), 512);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 1024);
  struct extfrag before = extfrag_now(a);
  uint64_t boosts = bt_stat(a, BH_STAT_watermark_boost);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL | BH_GFP_NO_KSWAPD, 0, 0), 1);
  expect_extfrag_delta(a, before, 1, 1, 1);
  expect_pageblocks(a, 1, 3, 0);
  zi = bt_zone(a, 0);
  EXPECT_U64(zi.wmark_boost, 512);
  EXPECT_U64(bt_stat(a, BH_STAT_watermark_boost) - boosts, 1);
  EXPECT_U64(zi.free_pages, 510);
  EXPECT_U64(zi.nr_free_mt[0][BH_MT_UNMOVABLE], 0);
  for (unsigned o = 1; o <= 8; o++) {
    EXPECT_U64(zi.nr_free_mt[o][BH_MT_UNMOVABLE], 1);
    EXPECT_U64(zi.nr_free_mt[o][BH_MT_MOVABLE], 0);
  }
  /*
   * The boost is added to every watermark: 510 free pages fail GFP_KERNEL at low + boost =
   * 624 and at min + boost = 602 when kswapd is not woken (ENOSPC).  __GFP_HIGH may use half
   * of the min mark: 602 - 301 = 301 < 510, so it succeeds (order-1 block 2 split, pfn 2).
   */
  uint64_t pfn;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_KERNEL | BH_GFP_NO_KSWAPD, 0, 0, &pfn), BH_ENOSPC);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_fail), 1);
  EXPECT_U64(bt_stat(a, BH_STAT_pageoutrun), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_HIGH | BH_GFP_NO_KSWAPD, 0, 0), 2);
  /*
   * A request that may wake kswapd: the fast path fails at low + boost, the slow path wakes
   * kswapd (mm/page_alloc.c:4362-4363); its pass reclaims nothing but subtracts the boost it
   * sampled (mm/vmscan.c:7051-7062), the zone is then balanced (509 > high 134) and kswapd
   * sleeps, and the retry at min 90 takes pfn 3, the other half of block 2.
   */
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 3);
  EXPECT_U64(bt_zone(a, 0).wmark_boost, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pageoutrun), 1);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * Half-pageblock rule, no claim: P0 is Unmovable (claimed by an Unmovable order-0 request
 * on the fresh arena) with 0, 1 (order 0) and 256 (order 8) in use by Unmovable requests;
 * P1 (order 9) and the top block 1024 (Movable, order 10) are allocated.  P0's free pages:
 * 2, 4, .., 128 (orders 1..7) = 254, none of its used pages movable.  A Movable order-0
 * request: __rmqueue_claim tries orders 7..4 (>= pageblock_order / 2): 254 + 0 < 256, no
 * claim; order 3 is not worth claiming for Movable -> stop.  __rmqueue_steal takes the
 * smallest Unmovable block, order 1 at 2, keeps 2 and leaves 3 on the Unmovable order-0 list.
 * Pageblock types unchanged; fragmenting, no ownership change.
 */
static void test_steal_without_claim(void **state) {
  (void)state;
  bh_arena_t *a = arena_8mib(false, true);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 8, 0), 256);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 9, 0), 512);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 1024);
  expect_pageblocks(a, 2, 2, 0);
  EXPECT_U64(bt_zone(a, 0).free_pages, 254);
  struct extfrag before = extfrag_now(a);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 2);
  expect_extfrag_delta(a, before, 1, 1, 0);
  expect_pageblocks(a, 2, 2, 0);
  bh_zone_info_t zi = bt_zone(a, 0);
  EXPECT_U64(zi.nr_free_mt[0][BH_MT_UNMOVABLE], 1); /* pfn 3 */
  EXPECT_U64(zi.nr_free_mt[1][BH_MT_UNMOVABLE], 0);
  EXPECT_U64(zi.nr_free_mt[0][BH_MT_MOVABLE], 0);
  EXPECT_U64(zi.wmark_boost, 0); /* watermarks are 0 here: max_boost 0, no boost */
  /* again: 253 free + 1 movable in use = 254 < 256; steal 3 */
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 3);
  expect_extfrag_delta(a, before, 2, 2, 0);
  expect_pageblocks(a, 2, 2, 0);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * Exactly half free claims: P0 Unmovable with only 256 (order 8) in use: pfns 0..255 are one
 * free order-8 block.  A Movable order-0 request: order 8, 256 + 0 >= 256 -> claim P0 for
 * Movable and split the order-8 block: pfn 0.
 */
static void test_claim_exactly_half(void **state) {
  (void)state;
  bh_arena_t *a = arena_8mib(false, true);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 8, 0), 256);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 9, 0), 512);
  bt_free(a, 0, 0, 0); /* merges with 1, 2, .., 128 into the order-8 block 0 */
  EXPECT_U64(bt_zone(a, 0).nr_free_mt[8][BH_MT_UNMOVABLE], 1);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 1024);
  struct extfrag before = extfrag_now(a);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 0);
  expect_extfrag_delta(a, before, 1, 1, 1);
  expect_pageblocks(a, 1, 3, 0);
  bh_zone_info_t zi = bt_zone(a, 0);
  for (unsigned o = 0; o < 8; o++)
    EXPECT_U64(zi.nr_free_mt[o][BH_MT_MOVABLE], 1);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * Movable pages in use count as "alike" for a Movable request: P0 Unmovable with 0 (order 0,
 * Unmovable) and 256 (order 8, Unmovable) in use: 255 free -> a Movable order-0 request does
 * not claim (255 < 256) and steals pfn 1.  After freeing 0: 255 free + 1 movable (pfn 1) =
 * 256 -> the next Movable request claims P0 and gets pfn 0 from its own list.
 */
static void test_claim_counts_movable_pages(void **state) {
  (void)state;
  bh_arena_t *a = arena_8mib(false, true);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 8, 0), 256);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 9, 0), 512);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 1024);
  struct extfrag before = extfrag_now(a);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 1);
  expect_extfrag_delta(a, before, 1, 1, 0);
  expect_pageblocks(a, 2, 2, 0);
  bt_free(a, 0, 0, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 0);
  expect_extfrag_delta(a, before, 2, 2, 1);
  expect_pageblocks(a, 1, 3, 0);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * page_group_by_mobility_disabled: gfp_migratetype() returns Unmovable for every request, a
 * fallback is always worth claiming, and the claim happens regardless of the half rule.  A
 * Movable, a Reclaimable and an Unmovable order-0 request on a fresh (all-Movable) arena:
 * the first claims top block 0 for Unmovable (pageblocks P0, P1), the next two come from
 * its Unmovable lists: pfns 0, 1, 2.  One fallback in all.
 * With grouping on, the same three requests give 0 (Movable, own list), 1024 (Reclaimable
 * claims top block 1024) and 1536 (Unmovable prefers Reclaimable: the order-9 block 1536
 * left by that split, claimed for Unmovable).
 */
static void test_mobility_grouping_off(void **state) {
  (void)state;
  static const unsigned gfps[3] = {BH_GFP_MOVABLE, BH_GFP_RECLAIMABLE, BH_GFP_KERNEL};
  static const uint64_t want_off[3] = {0, 1, 2}, want_on[3] = {0, 1024, 1536};
  for (int on = 0; on < 2; on++) {
    bh_arena_t *a = arena_8mib(true, on);
    struct extfrag before = extfrag_now(a);
    for (int i = 0; i < 3; i++)
      EXPECT_U64(bt_alloc(a, gfps[i], 0, 0), on ? want_on[i] : want_off[i]);
    if (on) {
      expect_extfrag_delta(a, before, 2, 0, 2);
      expect_pageblocks(a, 1, 2, 1);
    } else {
      expect_extfrag_delta(a, before, 1, 0, 1);
      expect_pageblocks(a, 2, 2, 0);
    }
    bt_expect_clean(a);
    bh_arena_destroy(a);
  }
}

/*
 * A pageblock the zone does not span whole is never claimed: prep_move_freepages_block fails
 * when the zone does not hold the pageblock's first or last pfn (mm/page_alloc.c:1736-1739),
 * and try_to_steal_block then gives up after the boost ("moving whole block can fail due to
 * zone boundary conditions", mm/page_alloc.c:1988-1991).  An x86 DMA zone starts at pfn 1:
 * its pageblock 0 holds free blocks of orders 0..8 at 1, 2, 4, .., 256 once the order-10 and
 * order-9 blocks above are allocated.  An unmovable page finds no unmovable block; the claim
 * loop tries order 8 (256) down to order 0 (1), each in pageblock 0, and claims nothing; the
 * steal then takes the smallest Movable block, pfn 1, and pageblock 0 stays Movable.  Were the
 * boundary not checked, the order-8 block would claim pageblock 0 (511 free pages >= 256).
 */
static void test_no_claim_across_zone_start(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_blank();
  c.backing = BH_BACKING_SIM;
  c.pcp = false;
  c.nr_layout_zones = 1;
  c.layout_zones[0] = (bh_zone_layout_t){.node = 0,
                                         .type = BH_ZONE_DMA,
                                         .start_pfn = 1,
                                         .spanned_pages = 4095,
                                         .present_pages = 4095,
                                         .managed_pages = 4095,
                                         .wmark_min = 1,
                                         .wmark_low = 1,
                                         .wmark_high = 1};
  bh_arena_t *a = bt_create(&c);
  for (uint64_t pfn = 1024; pfn < 4096; pfn += 1024)
    EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), pfn);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), 512);
  EXPECT_U64(bt_zone(a, 0).free_pages, 511);
  struct extfrag before = extfrag_now(a);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1);
  expect_extfrag_delta(a, before, 1, 1, 0);
  expect_pageblocks(a, 0, 8, 0);
  EXPECT_U64(bt_zone(a, 0).nr_free_mt[8][BH_MT_MOVABLE], 1);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fallback_table),
      cmocka_unit_test(test_claim_free_top_block),
      cmocka_unit_test(test_claim_half_pageblock),
      cmocka_unit_test(test_steal_without_claim),
      cmocka_unit_test(test_claim_exactly_half),
      cmocka_unit_test(test_claim_counts_movable_pages),
      cmocka_unit_test(test_mobility_grouping_off),
      cmocka_unit_test(test_no_claim_across_zone_start),
  };
  return cmocka_run_group_tests_name("buddy_fallback", tests, NULL, NULL);
}
