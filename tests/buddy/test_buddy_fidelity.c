/*
 * Differential tests against Linux 6.12.117: small crafted arenas, a sequence of calls, and the
 * pfn, counter or list state the kernel's code gives for the same sequence, derived by hand
 * from the source cited beside each expected value (mm/FILE.c:LINE in linux-source-6.12).
 * Where the model reads its own state (flags, pcp fields) it includes the internal header, as
 * the kernel-side value is a field of struct zone or struct per_cpu_pages.
 */
#include "buddy_test.h"

#include "buddy/internal.h"

#include <buddyhint/strategy.h>

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* ZONE_BELOW_HIGH is cleared against high_wmark_pages(), which includes the boost          */
/* ---------------------------------------------------------------------------------------- */

/*
 * One Normal zone, one pcp with batch 3 and high 12.  With a boost larger than the free
 * memory, a pcp drain must leave ZONE_BELOW_HIGH set: free_unref_page_commit clears it only if
 * zone_watermark_ok(zone, 0, high_wmark_pages(zone), ...) (mm/page_alloc.c:2714-2717), and
 * high_wmark_pages() is _watermark[WMARK_HIGH] + watermark_boost (include/linux/mmzone.h:1016,
 * 1032).  Without the boost the next drain clears it.
 */
static void test_below_high_clear_includes_boost(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 64 * MiB);
  c.pcp = true;
  c.nr_cpus = 1;
  c.pcp_batch = 3;
  c.pcp_high = 12;
  bh_arena_t *a = bt_create(&c);
  bh__zone_t *z = &a->zones[0];
  uint64_t pfn[40];
  for (int i = 0; i < 40; i++)
    pfn[i] = bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  atomic_store(&z->watermark_boost, 100000); /* above the zone's 16384 pages */
  atomic_fetch_or(&z->flags, BH__ZONE_BELOW_HIGH);
  uint64_t drains = bt_stat(a, BH_STAT_pcp_drain);
  int i = 0;
  while (bt_stat(a, BH_STAT_pcp_drain) == drains)
    bt_free(a, pfn[i++], 0, 0);
  assert_true(atomic_load(&z->flags) & BH__ZONE_BELOW_HIGH); /* mm/page_alloc.c:2715 */
  atomic_store(&z->watermark_boost, 0);
  drains = bt_stat(a, BH_STAT_pcp_drain);
  while (bt_stat(a, BH_STAT_pcp_drain) == drains)
    bt_free(a, pfn[i++], 0, 0);
  assert_false(atomic_load(&z->flags) & BH__ZONE_BELOW_HIGH); /* mm/page_alloc.c:2717 */
  while (i < 40)
    bt_free(a, pfn[i++], 0, 0);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* ALLOC_NOFRAGMENT on one node without DMA32                                               */
/* ---------------------------------------------------------------------------------------- */

/*
 * One node with DMA (16 MiB, pfns 0..4095) and Normal (16 MiB, 4096..8191), no DMA32, no
 * watermarks, no pcp.  Normal is filled with movable pages and every odd pfn freed: 2048 lone
 * free pages, no free pageblock.  An unmovable order-0 request prefers Normal, and
 * alloc_flags_nofragment() sets ALLOC_NOFRAGMENT on one node whether DMA32 is populated or not
 * (the DMA32 test is only made when nr_online_nodes > 1, mm/page_alloc.c:3393-3396).  So
 * __rmqueue_claim looks at orders >= pageblock_order only (mm/page_alloc.c:2229-2230), finds
 * none in Normal, __rmqueue_steal is not tried (mm/page_alloc.c:2356), and the zonelist walk
 * goes on to DMA, whose first order-10 Movable block (pfn 0, freed to the tail at boot in pfn
 * order) is claimed whole (mm/page_alloc.c:1970-1977).  Without the flag Normal would claim a
 * half-free pageblock and return pfn 7681.
 */
static void test_nofragment_single_node(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_blank();
  c.zone_bytes[BH_ZONE_DMA] = 16 * MiB;
  c.zone_bytes[BH_ZONE_NORMAL] = 16 * MiB;
  bt_cfg_no_wmarks(&c);
  bh_arena_t *a = bt_create(&c);
  for (int i = 0; i < 4096; i++)
    EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0) >> 12, 1); /* all from Normal */
  for (uint64_t p = 4097; p < 8192; p += 2)
    bt_free(a, p, 0, 0);
  uint64_t fallback0 = bt_stat(a, BH_STAT_alloc_zone_fallback);
  uint64_t pfn = bt_alloc(a, BH_GFP_KERNEL, 0, 0);
  EXPECT_U64(pfn, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_zone_fallback) - fallback0, 1);
  EXPECT_U64(bt_zone(a, 0).pageblocks[BH_MT_UNMOVABLE], 2); /* change_pageblock_range */
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* pcp: free_count halves on every rmqueue_pcplist call; decay_pcp_high drains in batches   */
/* ---------------------------------------------------------------------------------------- */

/*
 * The same Normal-only zone, with pcp lists, fragmented so that a refill under
 * ALLOC_NOFRAGMENT fails: the first rmqueue_pcplist call halves free_count before the refill
 * fails (mm/page_alloc.c:3123), get_page_from_freelist retries without the flag
 * (mm/page_alloc.c:3580-3584) and the second call halves it again before succeeding.
 */
static void test_pcp_free_count_halves_per_call(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 16 * MiB);
  bt_cfg_no_wmarks(&c);
  c.pcp = true;
  c.nr_cpus = 1;
  bh_arena_t *a = bt_create(&c);
  uint64_t n = 0, *pfn = malloc(4096 * sizeof(*pfn));
  while (n < 4096 && bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &pfn[n]) == BH_OK)
    n++;
  EXPECT_U64(n, 4096);
  for (uint64_t i = 0; i < n; i++)
    if (pfn[i] & 1)
      bt_free(a, pfn[i], 0, 0);
  bh_drain_pcp(a);
  EXPECT_U64(bt_zone(a, 0).nr_free[0], 2048); /* lone pages only */
  bh__pcp_t *pcp = &a->zones[0].pcp[0];
  int fc = pcp->free_count;
  assert_true(fc >= 4);
  bt_alloc(a, BH_GFP_KERNEL, 0, 0);
  EXPECT_U64(pcp->free_count, (uint64_t)(fc >> 1 >> 1));
  free(pfn);
  bh_arena_destroy(a);
}

/*
 * decay_pcp_high drains in calls of at most pcp->batch pages, each starting again from list 0
 * (mm/page_alloc.c:2429-2437).  A pcp holding five order-0 Movable pages (list 1) and five
 * order-1 Movable blocks (list 4), count 15, batch 3, high_min 4 and high 6: the high mark
 * stays max3(15 - (3 << 5), 6 - 6/8, 4) = 6 (mm/page_alloc.c:2422-2426), so to_drain = 9.
 * free_pcppages_bulk stops only when its count is <= 0 (mm/page_alloc.c:1250-1265).  Call 1
 * (3) takes three order-0 pages; call 2 (3) the last two and one order-1 block; call 3 (3)
 * two order-1 blocks: 9 pages go and 4 stay (one call of 9 would leave 6).  The frees
 * alternate orders so that none is a free_high drain (PCPF_PREV_FREE_HIGH_ORDER,
 * mm/page_alloc.c:2699-2707).
 */
static void test_pcp_decay_drains_in_batches(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 64 * MiB);
  c.pcp = true;
  c.nr_cpus = 1;
  c.pcp_batch = 3;
  c.pcp_high = 64;
  bh_arena_t *a = bt_create(&c);
  uint64_t p0[5], p1[5];
  for (int i = 0; i < 5; i++) {
    p0[i] = bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
    p1[i] = bt_alloc(a, BH_GFP_MOVABLE, 1, 0);
  }
  bh_drain_pcp(a);
  for (int i = 0; i < 5; i++) {
    bt_free(a, p1[i], 1, 0);
    bt_free(a, p0[i], 0, 0);
  }
  bh__pcp_t *pcp = &a->zones[0].pcp[0];
  EXPECT_U64(pcp->count, 15);
  pcp->high_min = 4;
  pcp->high = 6;
  bh_vmstat_tick(a);
  EXPECT_U64(pcp->high, 6);
  EXPECT_U64(pcp->count, 4);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* Boot-time shuffle (__shuffle_zone)                                                       */
/* ---------------------------------------------------------------------------------------- */

/* The top-order Movable free list of zone 0, head to tail. */
static int top_list(bh_arena_t *a, uint64_t *out, int max) {
  bh__zone_t *z = &a->zones[0];
  uint32_t head = bh__free_list(z, a->max_order, BH_MT_MOVABLE);
  int n = 0;
  for (uint32_t p = a->pages[head].next; p != head && n < max; p = a->pages[p].next)
    out[n++] = p;
  return n;
}

/*
 * With shuffling, page_alloc_init_late() runs __shuffle_zone once the boot-time frees are done
 * (mm/mm_init.c:2333-2334): for every free top-order block in pfn order, list_swap() with a
 * random other free top-order block of the zone (mm/shuffle.c:79-139).  With two blocks A < B
 * the first step swaps A and B and the second swaps them back, so the list ends as it began,
 * A then B, unless ten random picks in a row hit the block itself (probability 2^-10 per
 * step).  With eight blocks the list ends in another order for some seeds.  Without the
 * shuffle the boot-time frees leave every list in pfn order (FPI_TO_TAIL).
 */
static void test_shuffle_at_boot(void **state) {
  (void)state;
  int two_same = 0, eight_moved = 0;
  for (uint64_t seed = 1; seed <= 40; seed++) {
    bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 8 * MiB);
    c.shuffle = true;
    c.seed = seed;
    bh_arena_t *a = bt_create(&c);
    uint64_t l[8];
    EXPECT_U64(top_list(a, l, 8), 2);
    two_same += l[0] == 0 && l[1] == 1024;
    bh_arena_destroy(a);

    c = bt_cfg_one_zone(BH_ZONE_NORMAL, 32 * MiB);
    c.shuffle = true;
    c.seed = seed;
    a = bt_create(&c);
    EXPECT_U64(top_list(a, l, 8), 8);
    uint64_t seen = 0;
    bool in_order = true;
    for (int i = 0; i < 8; i++) {
      seen |= 1ull << (l[i] >> 10);
      in_order &= l[i] == (uint64_t)i << 10;
    }
    EXPECT_U64(seen, 0xff); /* a permutation */
    eight_moved += !in_order;
    bt_expect_clean(a);
    bh_arena_destroy(a);
  }
  EXPECT_U64(two_same, 40);
  assert_true(eight_moved > 30);
  /* shuffling off: pfn order */
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 32 * MiB);
  bh_arena_t *a = bt_create(&c);
  uint64_t l[8];
  EXPECT_U64(top_list(a, l, 8), 8);
  for (int i = 0; i < 8; i++)
    EXPECT_U64(l[i], (uint64_t)i << 10);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* __isolate_free_page moves the pageblock's other free blocks, also when it is Movable     */
/* ---------------------------------------------------------------------------------------- */

/*
 * A 16 MiB Normal zone, all allocated as order-0 movable pages, then in pageblock 1 the pages
 * 520..527 freed (an order-3 block at 520), in pageblock 0 the pages 8..15 (order 3 at 8) and
 * 256..511 (order 8 at 256).  Each merged block goes to its list head (buddy_merge_likely
 * finds no free buddy one order up), so the order-3 Movable list is 8, 520.  Isolating the
 * order-8 block (page reporting order 8, or compaction's free scanner) calls
 * move_freepages_block(zone, page, MOVABLE, MOVABLE) on pageblock 0 although it is Movable
 * already (mm/page_alloc.c:2913-2924), which list_move_tail()s its other free blocks
 * (mm/page_alloc.c:703-716, 1695-1712): the list becomes 520, 8 and the next order-3
 * movable allocation gets 520.
 */
static void test_isolate_moves_movable_pageblock(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 16 * MiB);
  bt_cfg_no_wmarks(&c);
  bh_arena_t *a = bt_create(&c);
  for (int i = 0; i < 4096; i++)
    bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  for (uint64_t p = 520; p < 528; p++)
    bt_free(a, p, 0, 0);
  for (uint64_t p = 8; p < 16; p++)
    bt_free(a, p, 0, 0);
  for (uint64_t p = 256; p < 512; p++)
    bt_free(a, p, 0, 0);
  bh_zone_t *z = bh_arena_zone(a, 0);
  bh_zone_lock(z);
  EXPECT_U64(bh_free_list_first(z, 3, BH_MT_MOVABLE), 8);
  assert_int_equal(bh_zone_isolate(z, 256, 8), BH_OK);
  EXPECT_U64(bh_free_list_first(z, 3, BH_MT_MOVABLE), 520);
  bh_zone_unlock(z);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 3, 0), 520);
  bh_zone_lock(z);
  assert_int_equal(bh_zone_putback(z, 256, 8, NULL), BH_OK);
  bh_zone_unlock(z);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_below_high_clear_includes_boost),
      cmocka_unit_test(test_nofragment_single_node),
      cmocka_unit_test(test_pcp_free_count_halves_per_call),
      cmocka_unit_test(test_pcp_decay_drains_in_batches),
      cmocka_unit_test(test_shuffle_at_boot),
      cmocka_unit_test(test_isolate_moves_movable_pageblock),
  };
  return cmocka_run_group_tests_name("buddy_fidelity", tests, NULL, NULL);
}
