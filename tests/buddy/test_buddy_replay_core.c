/*
 * What the replay asks of the core (buddy/replay_core.h), through that header and the public
 * API only, as the replay does: whether a block is free (on the buddy or pcp lists, not
 * allocated nor isolated), memory allocated before the trace, the heads of blocks on pcp
 * lists, the zone of a pfn, a zone's reporting order, the free counts summed over the zones,
 * the notify a reporting machine has pending at its start, and the written-page model.
 */
#include "buddy_test.h"

#include "buddy/replay_core.h"

#include <buddyhint/strategy.h>

#include <stdlib.h>
#include <string.h>

#define NORMAL_START 131072 /* DMA 4096 + DMA32 126976 pages */
#define TOP 10              /* MAX_PAGE_ORDER */

static bh_arena_t *default_sim(void) {
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  return bt_create(&c);
}

/* Free, allocated, on a pcp list, isolated, past the end, and across top blocks. */
static void test_block_free(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  uint64_t n = bh_arena_pages(a);
  EXPECT_U64(bh__block_free(a, NORMAL_START + 5, 0), 1);   /* inside a free top block */
  EXPECT_U64(bh__block_free(a, NORMAL_START, TOP + 1), 1); /* two free top blocks */
  EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, 0, 0, NORMAL_START + 1024 + 7), BH_OK);
  EXPECT_U64(bh__block_free(a, NORMAL_START + 1024 + 7, 0), 0);
  EXPECT_U64(bh__block_free(a, NORMAL_START + 1024 + 6, 0), 1); /* its buddy, split off */
  EXPECT_U64(bh__block_free(a, NORMAL_START + 1024 + 6, 1), 0); /* holds it */
  EXPECT_U64(bh__block_free(a, NORMAL_START + 1024, TOP), 0);
  EXPECT_U64(bh__block_free(a, NORMAL_START, TOP + 1), 0); /* the second top block holds it */
  EXPECT_U64(bh__block_free(a, NORMAL_START, TOP), 1);
  /* a freed block on a pcp list is free */
  bt_free(a, NORMAL_START + 1024 + 7, 0, 0);
  EXPECT_U64(bt_zone(a, 2).pcp_pages, 1);
  EXPECT_U64(bh__block_free(a, NORMAL_START + 1024 + 7, 0), 1);
  EXPECT_U64(bh__block_free(a, NORMAL_START + 1024, TOP), 1);
  /* a block isolated by hinting is not, until it is put back */
  bh_zone_t *z = bh_arena_zone(a, 2);
  uint64_t top = NORMAL_START + 4 * 1024;
  bh_zone_lock(z);
  EXPECT_U64(bh_zone_isolate(z, top, TOP), BH_OK);
  bh_zone_unlock(z);
  EXPECT_U64(bh__block_free(a, top + 3, 0), 0);
  EXPECT_U64(bh__block_free(a, top, TOP), 0);
  bool head;
  bh_zone_lock(z);
  EXPECT_U64(bh_zone_putback(z, top, TOP, &head), BH_OK);
  bh_zone_unlock(z);
  EXPECT_U64(bh__block_free(a, top + 3, 0), 1);
  /* past the end */
  EXPECT_U64(bh__block_free(a, n, 0), 0);
  EXPECT_U64(bh__block_free(a, n - 1, 1), 0);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* The heads of the blocks on pcp lists, and nothing else; bits already set are kept. */
static void test_pcp_heads(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  uint64_t n = bh_arena_pages(a), words = (n + 63) / 64;
  uint64_t *map = calloc(words, sizeof(*map));
  assert_non_null(map);
  map[0] = 1; /* pfn 0: kept */
  uint64_t p1 = NORMAL_START + 70, p2 = NORMAL_START + 2048 + 8;
  EXPECT_U64(bh__pcp_refill_at(a, p1, 0, BH_MT_MOVABLE, 1), BH_OK);
  EXPECT_U64(bh__pcp_refill_at(a, p2, 3, BH_MT_MOVABLE, 0), BH_OK);
  bh__pcp_heads(a, map);
  uint64_t set = 0;
  for (uint64_t w = 0; w < words; w++)
    set += (uint64_t)__builtin_popcountll(map[w]);
  EXPECT_U64(set, 3);
  EXPECT_U64(map[0] & 1, 1);
  EXPECT_U64((map[p1 / 64] >> (p1 % 64)) & 1, 1);
  EXPECT_U64((map[p2 / 64] >> (p2 % 64)) & 1, 1);
  free(map);
  bh_arena_destroy(a);
}

/* PG_PRETRACE: every page of a zone a populate leaves allocated, until it is adopted. */
static void test_page_pretrace(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  uint64_t pbs = bh_arena_pages(a) >> bh_arena_pageblock_order(a);
  uint8_t *pb = malloc(pbs);
  assert_non_null(pb);
  memset(pb, BH_MT_MOVABLE, pbs);
  bh_block_run_t free_run = {NORMAL_START, 4, TOP};
  bh_populate_t pop = {.pageblock_mt = pb, .nr_pageblocks = pbs, .free = &free_run, .nr_free = 1};
  const char *why = NULL;
  if (bh_arena_populate(a, &pop, &why))
    fail_msg("populate: %s", why);
  uint64_t past = NORMAL_START + 4 * 1024;
  EXPECT_U64(bh__page_pretrace(a, NORMAL_START + 1), 0); /* free */
  EXPECT_U64(bh__page_pretrace(a, past), 1);
  EXPECT_U64(bh__page_pretrace(a, past + 9), 1);
  EXPECT_U64(bh__block_free(a, past, 0), 0);
  EXPECT_U64(bh_arena_adopt(a, past + 8, 3), BH_OK);
  EXPECT_U64(bh__page_pretrace(a, past + 8), 0); /* an allocated block of the trace now */
  EXPECT_U64(bh__page_pretrace(a, past), 1);
  bt_free(a, past + 8, 3, 0);
  EXPECT_U64(bh__block_free(a, past + 8, 3), 1);
  bt_expect_clean(a);
  free(pb);
  bh_arena_destroy(a);
}

/* A pfn's zone, the free counts summed over the zones, and the pcp orders. */
static void test_zone_queries(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  EXPECT_U64(bh__pfn_zone_id(a, 4096 + 5), 1);
  EXPECT_U64(bh__pfn_zone_id(a, NORMAL_START), 2);
  EXPECT_U64(bh__pfn_zone_id(a, bh_arena_pages(a) - 1), bh_zone_count(a) - 1);
  bt_alloc(a, BH_GFP_MOVABLE, 2, 0);
  bt_alloc(a, BH_GFP_KERNEL, 5, 1);
  uint64_t nr_free[BH_ORDER_LIMIT + 1], free_pages = 0, want[BH_ORDER_LIMIT + 1] = {0}, pages = 0;
  bh__free_counts(a, nr_free, &free_pages);
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_info_t zi = bt_zone(a, i);
    for (unsigned o = 0; o <= TOP; o++)
      want[o] += zi.nr_free[o];
    pages += zi.free_pages;
  }
  for (unsigned o = 0; o <= BH_ORDER_LIMIT; o++)
    EXPECT_U64(nr_free[o], want[o]);
  EXPECT_U64(free_pages, pages);
  EXPECT_U64(bh__pcp_orders(a) & 1, 1); /* order 0 has pcp lists */
  EXPECT_U64(bh__pcp_order(a, 0), 1);
  EXPECT_U64((bh__pcp_orders(a) >> TOP) & 1, 0);
  bh_arena_destroy(a);
}

/* The zones bh__notify_unreported notifies (BH_STAT_hint_notify's growth). */
static uint64_t notified(bh_arena_t *a, const bh_block_run_t *unseen, size_t n,
                         const bh_block_run_t *freed, size_t nfreed) {
  uint64_t before = bt_stat(a, BH_STAT_hint_notify);
  bh__notify_unreported(a, unseen, n, freed, nfreed);
  return bt_stat(a, BH_STAT_hint_notify) - before;
}

/* Without hinting no zone notifies; with bubble each zone's reporting order is its
 * pageblock order, and the start's pending notify comes once per zone with an unreported
 * free block at or above it, but for a zone too small for a pass to visit (free pages below
 * its low watermark and a batch of PAGE_REPORTING_CAPACITY blocks, mm/page_reporting.c:
 * 268-277 in 6.12): DMA's 16 MiB, which has such blocks and no pass ever reports.  A block
 * a split can leave (an upper half below the top order) shows no pending pass, nor one the
 * start map did not show free. */
static void test_notify_unreported(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  for (int i = 0; i < bh_zone_count(a); i++)
    EXPECT_U64(bh__zone_notify_order(bh_arena_zone(a, i)) > bh_arena_max_order(a), 1);
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = "bubble";
  hc.registered_at_boot = true;
  bh_hint_t *h = NULL;
  EXPECT_U64(bh_hint_attach(a, &hc, &h), BH_OK);
  uint64_t want = 0;
  bool dma_has = false;
  for (int i = 0; i < bh_zone_count(a); i++) {
    unsigned from = bh__zone_notify_order(bh_arena_zone(a, i));
    EXPECT_U64(from, bh_arena_pageblock_order(a));
    bh_zone_info_t zi = bt_zone(a, i);
    bool any = false;
    for (unsigned o = from; o <= bh_arena_max_order(a); o++)
      any |= zi.nr_free[o] > 0;
    bool visited = bh_zone_low_wmark_ok(bh_arena_zone(a, i), (uint64_t)BH_REPORT_CAPACITY << from);
    if (i == 0) {
      dma_has = any;
      EXPECT_U64(visited, 0);
    }
    want += any && visited;
  }
  assert_true(want > 0);
  assert_true(dma_has);
  EXPECT_U64(notified(a, NULL, 0, NULL, 0), want);
  /* with every eligible block of Normal reported, Normal has nothing pending */
  bh_zone_t *z = bh_arena_zone(a, 2);
  bh_zone_lock(z);
  for (unsigned o = bh__zone_notify_order(z); o <= bh_arena_max_order(a); o++)
    for (int mt = 0; mt < BH_MT_TYPES; mt++)
      for (uint64_t p = bh_free_list_first(z, o, mt); p != BH_PFN_NONE;
           p = bh_free_list_next(z, o, mt, p))
        bh_block_set_reported(z, p);
  bh_zone_unlock(z);
  EXPECT_U64(notified(a, NULL, 0, NULL, 0), want - 1);
  /* A split notifies nothing: taking the lower order-9 half of a reported top block leaves
   * its upper half free and unreported (expand, mm/page_alloc.c:1441-1467), with no pass
   * requested (only __free_one_page notifies, :896-897), so Normal still has none pending */
  EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, TOP - 1, 0, NORMAL_START), BH_OK);
  EXPECT_U64(bh__block_free(a, NORMAL_START + (1u << (TOP - 1)), TOP - 1), 1);
  EXPECT_U64(notified(a, NULL, 0, NULL, 0), want - 1);
  /* unless a free of the 2 s before the map was read (start/window_frees) made it: then its
   * pass is pending; a free elsewhere says nothing of it */
  const bh_block_run_t in_half = {.pfn = NORMAL_START + (1u << (TOP - 1)) + 4,
                                  .count = 1,
                                  .order = 2},
                       in_taken = {.pfn = NORMAL_START + 4, .count = 1, .order = 2};
  EXPECT_U64(notified(a, NULL, 0, &in_half, 1), want);
  EXPECT_U64(notified(a, NULL, 0, &in_taken, 1), want - 1);
  /* a window free of the reporting order or above notified by itself (__free_one_page's
   * page_reporting_notify_free, mm/page_alloc.c:896-897), even where the map holds its block
   * allocated again (the recorder's read buffers): pending; one inside a free block the map
   * holds reported has had its pass */
  const bh_block_run_t again = {.pfn = NORMAL_START, .count = 1, .order = TOP - 1},
                       had_pass = {
                           .pfn = NORMAL_START + (1u << TOP) + 512, .count = 1, .order = TOP - 1};
  EXPECT_U64(bh__block_free(a, NORMAL_START, TOP - 1), 0);
  EXPECT_U64(notified(a, NULL, 0, &again, 1), want);
  EXPECT_U64(notified(a, NULL, 0, &had_pass, 1), want - 1);
  /* a lower half free on its own was freed (a split never leaves one): its free notified */
  EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, TOP - 1, 0, NORMAL_START + (1u << (TOP - 1))),
             BH_OK);
  EXPECT_U64(bh_free_pfn(a, NORMAL_START, TOP - 1, -1), BH_OK);
  EXPECT_U64(notified(a, NULL, 0, NULL, 0), want);
  /* and so does a top block, even an upper half (no split leaves a top block) */
  EXPECT_U64(bh_free_pfn(a, NORMAL_START + (1u << (TOP - 1)), TOP - 1, -1), BH_OK);
  EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, TOP, 0, NORMAL_START + (1u << TOP)), BH_OK);
  EXPECT_U64(bh_free_pfn(a, NORMAL_START + (1u << TOP), TOP, -1), BH_OK);
  bh_zone_lock(z);
  for (unsigned o = bh__zone_notify_order(z); o <= bh_arena_max_order(a); o++)
    for (int mt = 0; mt < BH_MT_TYPES; mt++)
      for (uint64_t p = bh_free_list_first(z, o, mt); p != BH_PFN_NONE;
           p = bh_free_list_next(z, o, mt, p))
        if (p != NORMAL_START + (1u << TOP))
          bh_block_set_reported(z, p);
  bh_zone_unlock(z);
  EXPECT_U64(notified(a, NULL, 0, NULL, 0), want);
  /* but not a block the start map held allocated (placed free because the trace takes it
   * from the buddy lists first): whatever freed it is not recorded, nor whether it notified.
   * An unseen run that only overlaps it counts as one that covers it; one that ends where it
   * starts, as none */
  const bh_block_run_t whole = {.pfn = NORMAL_START + (1u << TOP), .count = 1, .order = TOP},
                       part = {.pfn = NORMAL_START + (1u << TOP) + 8, .count = 1, .order = 3},
                       beside = {.pfn = NORMAL_START, .count = 1, .order = TOP};
  EXPECT_U64(notified(a, &whole, 1, NULL, 0), want - 1);
  EXPECT_U64(notified(a, &part, 1, NULL, 0), want - 1);
  EXPECT_U64(notified(a, &beside, 1, NULL, 0), want);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* The written-page model: the bitmap's address before and after it exists, pages written
 * while discarded, and the refaults of allocating discarded pages. */
static void test_written_pages(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  _Atomic uint64_t *const *map = bh__discard_map(a);
  assert_non_null(map);
  assert_null(*map);
  uint64_t words = (bh_arena_pages(a) + 63) / 64;
  _Atomic uint64_t *touched = calloc(words, sizeof(*touched));
  assert_non_null(touched);
  bh__discard_set_touched(a, touched);
  bh__discard_on_touch(a, map, 0, 1); /* no bitmap: nothing */
  EXPECT_U64(bh__discard_enable(a), 1);
  EXPECT_U64(bh__discard_enable(a), 0);
  assert_ptr_equal(map, bh__discard_map(a));
  assert_non_null(*map);
  uint64_t pfn = NORMAL_START + 64;           /* word 2049's first page */
  EXPECT_U64(bh__discard_mark(a, pfn, 8), 0); /* none written yet */
  EXPECT_U64(bh__discarded_pages(a), 8);
  EXPECT_U64(bh__discard_touched_pages(a), 0);
  /* the owner writes pages 0..3 and 60..63 of that word: four of them were discarded */
  uint64_t fresh = 0xfull | 0xfull << 60;
  atomic_store(&touched[pfn / 64], fresh);
  bh__discard_on_touch(a, map, pfn / 64, fresh);
  EXPECT_U64(bh__discard_touched_pages(a), 4);
  uint64_t d, t, both;
  bh__discard_recount(a, &d, &t, &both);
  EXPECT_U64(d, 8);
  EXPECT_U64(t, 8);
  EXPECT_U64(both, 4);
  /* allocating the discarded block takes its pages back: refaults */
  EXPECT_U64(bh__refault_pages(a), 0);
  EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, 3, 0, pfn), BH_OK);
  EXPECT_U64(bh__refault_pages(a), 8);
  EXPECT_U64(bh__discarded_pages(a), 0);
  EXPECT_U64(bh__discard_touched_pages(a), 0);
  bh_arena_destroy(a);
  free(touched);
}

/* The last three blocks of zone z's order-TOP Movable list, in list order. */
static void list_tail3(bh_zone_t *z, uint64_t out[3]) {
  out[0] = out[1] = out[2] = BH_PFN_NONE;
  for (uint64_t p = bh_free_list_first(z, TOP, BH_MT_MOVABLE); p != BH_PFN_NONE;
       p = bh_free_list_next(z, TOP, BH_MT_MOVABLE, p)) {
    out[0] = out[1];
    out[1] = out[2];
    out[2] = p;
  }
}

/*
 * Page reporting puts a batch back on the lists' tails last isolated first
 * (page_reporting_drain, mm/page_reporting.c:106-135 in 6.12): three blocks isolated in
 * address order come back in the reverse one.  With take ranks (bh__take_rank_set: the order
 * the trace shows the kernel first taking the start's free blocks in), a ranked block goes
 * before the ranked blocks at the tail taken after it; an unranked one (touched) stays where
 * it was put and stops the walk.
 */
static void test_take_rank_putback(void **state) {
  (void)state;
  struct {
    uint32_t rank[3];
    int want[3]; /* the tail, as indices of the three blocks */
  } cases[] = {
      {{0, 0, 0}, {2, 1, 0}}, /* no ranks: last isolated first */
      {{1, 2, 3}, {0, 1, 2}}, /* taken in address order: so listed */
      {{1, 0, 3}, {2, 1, 0}}, /* the middle one touched: the walk stops at it */
      {{2, 3, 1}, {2, 0, 1}}, /* the third taken first: at the tail, third, first, second */
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    bh_arena_t *a = default_sim();
    bh_zone_t *z = bh_arena_zone(a, 2);
    uint64_t n = bh_arena_pages(a), t[3];
    uint32_t *rank = calloc(n, sizeof(*rank));
    assert_non_null(rank);
    for (int i = 0; i < 3; i++) {
      t[i] = NORMAL_START + (uint64_t)(4 + i) * 1024;
      rank[t[i]] = cases[k].rank[i];
    }
    bool any = cases[k].rank[0] || cases[k].rank[1] || cases[k].rank[2];
    bh__take_rank_set(a, any ? rank : NULL, n);
    bool head;
    bh_zone_lock(z);
    for (int i = 0; i < 3; i++)
      EXPECT_U64(bh_zone_isolate(z, t[i], TOP), BH_OK);
    for (int i = 2; i >= 0; i--)
      EXPECT_U64(bh_zone_putback(z, t[i], TOP, &head), BH_OK);
    bh_zone_unlock(z);
    uint64_t tail[3];
    list_tail3(z, tail);
    for (int i = 0; i < 3; i++)
      EXPECT_U64(tail[i], t[cases[k].want[i]]);
    bh__take_rank_set(a, NULL, 0);
    free(rank);
    bh_arena_destroy(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_free),        cmocka_unit_test(test_pcp_heads),
      cmocka_unit_test(test_page_pretrace),     cmocka_unit_test(test_zone_queries),
      cmocka_unit_test(test_notify_unreported), cmocka_unit_test(test_written_pages),
      cmocka_unit_test(test_take_rank_putback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
