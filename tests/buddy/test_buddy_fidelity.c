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
  bh_zone_t *z = &a->zones[0];
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
 * (mm/page_alloc.c:3582-3585) and the second call halves it again before succeeding.
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
  bh_zone_t *z = &a->zones[0];
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

/* ---------------------------------------------------------------------------------------- */
/* Watermark boost lifetime: kswapd clears it after each boosted pass, until it fails       */
/* ---------------------------------------------------------------------------------------- */

/* Allocates movable order-0 pages until the zone has `left` free pages. */
static void fill_to(bh_arena_t *a, uint64_t left) {
  while (bt_zone(a, 0).free_pages > left)
    bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
}

/*
 * An 8 MiB Normal zone with Linux's watermarks (min 90, low 112, high 134), filled by
 * movable order-0 allocations in ascending pfn order until 130 pages are free: 1918 (order 1)
 * and 1920 (order 7), in Movable pageblock 3 with 382 movable pages in use.
 *
 * An Unmovable order-0 request first fails under ALLOC_NOFRAGMENT and retries without it
 * (mm/page_alloc.c:3582-3585).  __rmqueue_claim tries the order-7 and the order-1 block:
 * each try_to_claim_block boosts the watermark, to max(512, 134 * 1.5) = 512
 * (mm/page_alloc.c:1900-1942), and sets ZONE_BOOSTED_WATERMARK (mm/page_alloc.c:1985-1986),
 * but 130 free + 0 alike < 256 claims nothing; __rmqueue_steal takes the order-1 block and
 * returns 1918.  rmqueue then wakes kswapd (mm/page_alloc.c:3166-3170).  Its first
 * balance_pgdat pass reclaims nothing (kswapd_failures 1, mm/vmscan.c:7044-7045) and takes
 * the 512 it sampled off the boost (mm/vmscan.c:7051-7062); the zone stays below its high
 * mark, so kswapd does not sleep (prepare_kswapd_sleep, mm/vmscan.c:6764-6770) and runs 15
 * more fruitless passes: 16 in all, after which wakeup_kswapd returns at once
 * (mm/vmscan.c:7308-7321).  The next such request boosts again and the boost stays; with
 * low + 512 and min + 512 out of reach for 128 free pages, the one after fails.
 */
static void test_boost_cleared_by_kswapd_until_it_fails(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 8 * MiB);
  c.backing = BH_BACKING_SIM;
  bh_arena_t *a = bt_create(&c);
  EXPECT_U64(bt_zone(a, 0).wmark_high, 134);
  fill_to(a, 130);
  EXPECT_U64(bt_zone(a, 0).nr_free[7], 1);
  EXPECT_U64(bt_zone(a, 0).nr_free[1], 1);
  EXPECT_U64(bt_stat(a, BH_STAT_pageoutrun), 0);

  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1918);
  EXPECT_U64(bt_stat(a, BH_STAT_watermark_boost), 2);
  EXPECT_U64(bt_zone(a, 0).wmark_boost, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pageoutrun), 16);

  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1919);
  EXPECT_U64(bt_stat(a, BH_STAT_watermark_boost), 4);
  EXPECT_U64(bt_zone(a, 0).wmark_boost, 512);
  EXPECT_U64(bt_stat(a, BH_STAT_pageoutrun), 16);

  uint64_t pfn;
  EXPECT_U64(bh_alloc_pfn(a, BH_GFP_KERNEL, 0, 0, &pfn), BH_ENOSPC);
  EXPECT_U64(bt_zone(a, 0).free_pages, 128);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * kswapd recovers: in Linux any reclaim progress resets kswapd_failures (shrink_node,
 * mm/vmscan.c:6077 in 6.12).  Without reclaim, the stand-in is a free to the buddy lists that
 * leaves the node balanced again.  The zone above, hopeless after 16 fruitless passes: frees
 * that leave it below high + boost (134 + 512) change nothing; once drained to the buddy lists
 * with 700 pages free it is balanced and kswapd_failures is 0, so the next wakeup runs kswapd
 * again (mm/vmscan.c:7308-7321) instead of returning at once.
 */
static void test_kswapd_recovers_when_balanced(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 8 * MiB);
  c.backing = BH_BACKING_SIM;
  bh_arena_t *a = bt_create(&c);
  uint64_t *used = calloc(2048, sizeof(*used)), n = 0;
  while (bt_zone(a, 0).free_pages > 130)
    used[n++] = bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1918);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1919);
  EXPECT_U64(bt_stat(a, BH_STAT_pageoutrun), 16);
  EXPECT_U64(bt_zone(a, 0).wmark_boost, 512);
  EXPECT_U64(atomic_load(&a->kswapd_failures[0]), 16);
  for (uint64_t i = 0; i < 100; i++) /* 228 free: below high + boost */
    bt_free(a, used[--n], 0, 0);
  bh_drain_pcp(a);
  EXPECT_U64(atomic_load(&a->kswapd_failures[0]), 16);
  for (uint64_t i = 0; i < 472; i++) /* 700 free: above 646 */
    bt_free(a, used[--n], 0, 0);
  bh_drain_pcp(a);
  EXPECT_U64(bt_zone(a, 0).free_pages, 700);
  EXPECT_U64(atomic_load(&a->kswapd_failures[0]), 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pageoutrun), 16);
  free(used);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* unreserve_highatomic_pageblock before failing                                            */
/* ---------------------------------------------------------------------------------------- */

/*
 * A 256 MiB Normal zone (65536 pages; min 512, low 640, high 768), filled in ascending order
 * until 640 pages are free: 64896 (order 7) and the whole pageblock 65024 (order 9).  A
 * GFP_ATOMIC order-1 request fails the fast path at the low mark; the slow path's flags carry
 * ALLOC_HIGHATOMIC (mm/page_alloc.c:4096-4106), the Unmovable request claims the order-9
 * pageblock whole and gets 65024, and reserve_highatomic_pageblock makes that pageblock
 * HighAtomic (1 % of 65536 = 655 >= 512: up to ALIGN(655, 512) = 1024 pages,
 * mm/page_alloc.c:2066-2104).  Its 510 free pages are now held back from ordinary requests
 * (__zone_watermark_unusable_free, mm/page_alloc.c:3184-3185): 638 - 510 = 128 usable, below
 * min.  A GFP_KERNEL request then fails get_page_from_freelist, direct reclaim frees nothing,
 * and should_reclaim_retry gives up after MAX_RECLAIM_RETRIES and, "before OOM", unreserves
 * the block with force (mm/page_alloc.c:4194-4195, 4245-4247): the first HighAtomic free
 * block, order 1 at 65026, its pageblock moved to Unmovable, nr_reserved_highatomic -= 512
 * (mm/page_alloc.c:2140-2196).  The retry splits 65026 and returns it; allocations succeed
 * while more than 512 pages are free: 126 of them, the 127th fails.
 */
static void test_unreserve_highatomic_before_failing(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 256 * MiB);
  c.backing = BH_BACKING_SIM;
  bh_arena_t *a = bt_create(&c);
  bh_zone_info_t zi = bt_zone(a, 0);
  EXPECT_U64(zi.wmark_min, 512);
  EXPECT_U64(zi.wmark_low, 640);
  fill_to(a, 640);
  EXPECT_U64(bt_alloc(a, BH_GFP_ATOMIC | BH_GFP_HIGH, 1, 0), 65024);
  zi = bt_zone(a, 0);
  EXPECT_U64(zi.nr_reserved_highatomic, 512);
  EXPECT_U64(zi.pageblocks[BH_MT_HIGHATOMIC], 1);
  EXPECT_U64(zi.free_pages, 638);

  uint64_t pfn, ok = 0;
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 65026);
  ok++;
  while (bh_alloc_pfn(a, BH_GFP_KERNEL, 0, 0, &pfn) == BH_OK)
    ok++;
  EXPECT_U64(ok, 126);
  zi = bt_zone(a, 0);
  EXPECT_U64(zi.free_pages, 512);
  EXPECT_U64(zi.nr_reserved_highatomic, 0);
  EXPECT_U64(zi.pageblocks[BH_MT_HIGHATOMIC], 0);
  EXPECT_U64(bt_stat(a, BH_STAT_highatomic_unreserve), 1);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* ---------------------------------------------------------------------------------------- */
/* GFP_TRANSHUGE(_LIGHT): no kswapd wake; no drain or retry without reclaim progress        */
/* ---------------------------------------------------------------------------------------- */

/*
 * GFP_TRANSHUGE_LIGHT has neither __GFP_DIRECT_RECLAIM nor __GFP_KSWAPD_RECLAIM and has
 * __GFP_NOMEMALLOC (include/linux/gfp_types.h:388-390): gfp_to_alloc_flags gives it neither
 * ALLOC_KSWAPD nor ALLOC_NON_BLOCK (mm/page_alloc.c:4093-4106), so a failing THP fault wakes
 * no kswapd, and, unable to block, stops after the slow path's two tries (mm/page_alloc.c:
 * 4477-4478).  With the fast path's two walks (with and without ALLOC_NOFRAGMENT,
 * mm/page_alloc.c:3582-3585) that is four zonelist walks, counted as four watermark failures
 * of the only zone.  GFP_TRANSHUGE may block but is costly (order 9 > 3): direct reclaim makes no
 * progress and it fails there too (mm/page_alloc.c:4504-4506), again without kswapd.  A
 * GFP_HIGHUSER_MOVABLE order-9 request wakes kswapd from the slow path.
 */
static void test_transhuge_does_not_wake_kswapd(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 8 * MiB);
  c.backing = BH_BACKING_SIM;
  bh_arena_t *a = bt_create(&c);
  fill_to(a, 130); /* no free order-9 block */
  uint64_t pfn, fails = bt_stat(a, BH_STAT_wmark_fail);
  EXPECT_U64(bh_alloc_pfn(a, BH_GFP_TRANSHUGE_LIGHT, 9, 0, &pfn), BH_ENOSPC);
  EXPECT_U64(bt_stat(a, BH_STAT_wmark_fail) - fails, 4);
  EXPECT_U64(bh_alloc_pfn(a, BH_GFP_TRANSHUGE, 9, 0, &pfn), BH_ENOSPC);
  EXPECT_U64(bt_stat(a, BH_STAT_pageoutrun), 0);
  EXPECT_U64(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 9, 0, &pfn), BH_ENOSPC);
  assert_true(bt_stat(a, BH_STAT_pageoutrun) > 0);
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
      cmocka_unit_test(test_boost_cleared_by_kswapd_until_it_fails),
      cmocka_unit_test(test_kswapd_recovers_when_balanced),
      cmocka_unit_test(test_unreserve_highatomic_before_failing),
      cmocka_unit_test(test_transhuge_does_not_wake_kswapd),
  };
  return cmocka_run_group_tests_name("buddy_fidelity", tests, NULL, NULL);
}
