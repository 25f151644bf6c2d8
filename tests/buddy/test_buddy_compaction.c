/*
 * Compaction (kernel.md 4): movable blocks move from the low end of a zone to free pages
 * isolated at its high end, through the owner's callback; the data moves with them (mmap
 * backing); unmovable blocks and blocks the owner pins stay; the fragmentation score
 * (extfrag_for_order at the pageblock order) drops; proactive compaction starts only above
 * its high mark.  The arena is one 32 MiB Normal zone (16 pageblocks of 512 pages) without
 * watermarks or pcp lists, so every page is accounted for exactly.
 */
#include "buddy_test.h"

#include <stdlib.h>
#include <string.h>

#define NPAGES 8192u /* 32 MiB */
#define PB 512u

/* The owner of every allocated block: ids by pfn, as a replay's map would keep them. */
struct owner {
  bh_arena_t *a;
  uint32_t id[NPAGES]; /* 0 = not ours */
  uint64_t calls, pinned_calls;
  uint32_t pin_id; /* the callback refuses to move this id (0: none) */
  unsigned orders_seen;
  uint64_t log_old[64], log_new[64]; /* the first callbacks, in order */
  unsigned nlog;
};

static int migrate_cb(void *ctx, uint64_t old_pfn, uint64_t new_pfn, unsigned order) {
  struct owner *o = ctx;
  o->orders_seen |= 1u << order;
  if (o->nlog < 64) {
    o->log_old[o->nlog] = old_pfn;
    o->log_new[o->nlog++] = new_pfn;
  }
  if (o->pin_id && o->id[old_pfn] == o->pin_id) {
    o->pinned_calls++;
    return 1;
  }
  o->calls++;
  o->id[new_pfn] = o->id[old_pfn];
  o->id[old_pfn] = 0;
  return 0;
}

static bh_arena_t *small_arena(void) {
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, (uint64_t)NPAGES * 4096);
  bt_cfg_no_wmarks(&c);
  return bt_create(&c);
}

static void stamp(struct owner *o, uint64_t pfn, uint32_t id) {
  o->id[pfn] = id;
  memcpy(bh_pfn_to_addr(o->a, pfn), &id, sizeof(id));
}

static uint32_t data_id(struct owner *o, uint64_t pfn) {
  uint32_t v;
  memcpy(&v, bh_pfn_to_addr(o->a, pfn), sizeof(v));
  return v;
}

/* Every free page allocated as movable blocks of 2^order pages, then all freed but the blocks
 * starting below `keep` in each pageblock; kept blocks get their head's pfn + 1 as id. */
static void fragment(struct owner *o, unsigned order, unsigned keep) {
  uint64_t *pfn = malloc(NPAGES * sizeof(*pfn));
  assert_non_null(pfn);
  unsigned n = 0;
  while (n < NPAGES && bh_alloc_pfn(o->a, BH_GFP_MOVABLE, order, -1, &pfn[n]) == 0)
    n++;
  for (unsigned i = 0; i < n; i++) {
    uint64_t p = pfn[i];
    if (p % PB < keep)
      stamp(o, p, (uint32_t)p + 1);
    else
      bt_free(o->a, p, order, -1);
  }
  free(pfn);
}

static void expect_data_follows_ids(struct owner *o) {
  unsigned live = 0;
  for (unsigned p = 0; p < NPAGES; p++)
    if (o->id[p]) {
      live++;
      EXPECT_U64(data_id(o, p), o->id[p]);
    }
  assert_true(live > 0);
}

/*
 * One page kept in each of the 16 pageblocks: no free pageblock, score 99.  The migrate
 * scanner isolates pageblock k's page (a batch of one) and compaction_alloc runs the free
 * scanner, which starts in the top pageblock and isolates only as much as the batch needs
 * (isolate_freepages_block stops once nr_freepages >= nr_migratepages, mm/compaction.c:
 * 669-672): 7681 first, then 7682 (order 1, its upper half kept for the next page), and so
 * on up the top pageblock, which it never leaves: the free scanner stays at pfn >= 7680
 * (it moves to the next pageblock only after scanning one to its end, mm/compaction.c:
 * 1794-1802), so the migrate scanner empties pageblocks 0..14 before the scanners meet
 * (mm/compaction.c:1454-1458, 2115): 15 pageblocks free, merged into seven order-10
 * blocks and pageblock 14.  The old free scanner took every free block of the top pageblock
 * at once and moved on to pageblock 14, so the scanners met one pageblock earlier.
 */
static void test_compact_memory_gathers_movable_pages(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  o->a = small_arena();
  fragment(o, 0, 1);
  /* 8176 * 100 / 8176 = 100 for the zone, 100 * 8192 / (8192 + 1) rounded down for the node */
  EXPECT_U64(bh_fragmentation_score(o->a, 0), 99);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.zones, 1);
  EXPECT_U64(r.migrated, 15);
  EXPECT_U64(o->calls, 15);
  EXPECT_U64(r.migrate_failed, 0);
  EXPECT_U64(bt_stat(o->a, BH_STAT_pgmigrate_success), 15);
  EXPECT_U64(r.score_before, 99);
  /* free below order 9: 511 - 15 = 496 pages in pageblock 15: 496 * 100 / 8176 = 6 for the
   * zone, 6 * 8192 / (8192 + 1) = 5 for the node */
  EXPECT_U64(r.score_after, 5);
  for (unsigned p = 0; p < 15 * PB; p++)
    EXPECT_U64(o->id[p], 0);
  expect_data_follows_ids(o);
  bh_zone_info_t zi = bt_zone(o->a, 0);
  EXPECT_U64(zi.free_pages, NPAGES - 16);
  EXPECT_U64(zi.nr_free[10], 7);
  EXPECT_U64(zi.nr_free[9], 1);
  bt_expect_clean(o->a);
  /* a second run finds nothing to move */
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.migrated, 0);
  EXPECT_U64(r.score_after, 5);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/* Unmovable allocations never reach the callback and keep their pageblocks. */
static void test_unmovable_stays(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  o->a = small_arena();
  uint64_t k = bt_alloc(o->a, BH_GFP_KERNEL, 0, -1);
  fragment(o, 0, 1);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(o->id[k], 0); /* never handed to the callback */
  uint64_t live = 0;
  for (unsigned p = 0; p < NPAGES; p++)
    live += o->id[p] != 0;
  EXPECT_U64(live, 15); /* pfn 0, the first page of pageblock 0, is the unmovable one */
  EXPECT_U64(k, 0);
  EXPECT_U64(bt_zone(o->a, 0).free_pages, NPAGES - 16);
  assert_true(r.migrated > 0);
  expect_data_follows_ids(o);
  bt_free(o->a, k, 0, -1);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/* A block the owner pins stays in place; the target it was offered goes back. */
static void test_pinned_block_stays(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  o->a = small_arena();
  fragment(o, 0, 1);
  o->pin_id = 1; /* pfn 0 */
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(o->pinned_calls, 1);
  EXPECT_U64(r.migrate_failed, 1);
  EXPECT_U64(bt_stat(o->a, BH_STAT_pgmigrate_fail), 1);
  /* the refused target goes back to the head of its list (compaction_free,
   * mm/compaction.c:1891-1898) and takes pageblock 1's page: pageblocks 1..14 move */
  EXPECT_U64(r.migrated, 14);
  EXPECT_U64(o->id[0], 1);
  expect_data_follows_ids(o);
  EXPECT_U64(bt_zone(o->a, 0).free_pages, NPAGES - 16);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/* Higher-order blocks move whole and stay aligned; split blocks move page by page. */
static void test_orders(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  o->a = small_arena();
  fragment(o, 2, 4); /* one order-2 block at the start of every pageblock */
  assert_int_equal(bh_split_pages(o->a, PB, 2), 0); /* pageblock 1's block, page by page */
  for (unsigned i = 1; i < 4; i++)
    stamp(o, PB + i, PB + 1 + i);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(o->orders_seen, (1u << 0) | (1u << 2));
  EXPECT_U64(o->id[0], 0);
  EXPECT_U64(o->id[PB], 0);
  expect_data_follows_ids(o);
  for (uint64_t p = 0; p < NPAGES; p++)
    if (o->id[p] == 1)
      EXPECT_U64(p % 4, 0); /* still an aligned order-2 block */
  bt_expect_clean(o->a);
  /* the owner frees what moved at the orders it holds: pageblock 1's pages one by one */
  for (uint64_t p = 0; p < NPAGES; p++)
    if (o->id[p] > PB && o->id[p] <= PB + 4)
      bt_free(o->a, p, 0, -1);
    else if (o->id[p])
      bt_free(o->a, p, 2, -1);
  bt_expect_all_free(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/* Before 6.9 (compact_large_blocks off) only order-0 pages move: the order-2 blocks stay. */
static void test_order0_only(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, (uint64_t)NPAGES * 4096);
  bt_cfg_no_wmarks(&c);
  c.compact_large_blocks = false;
  o->a = bt_create(&c);
  fragment(o, 2, 4);
  assert_int_equal(bh_split_pages(o->a, PB, 2), 0);
  for (unsigned i = 1; i < 4; i++)
    stamp(o, PB + i, PB + 1 + i);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(o->orders_seen, 1u << 0);
  EXPECT_U64(r.migrated, 4); /* pageblock 1's four pages */
  EXPECT_U64(o->id[0], 1);   /* pageblock 0's order-2 block stayed */
  expect_data_follows_ids(o);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/*
 * With grouping off every pageblock is Unmovable (set_pageblock_migratetype) and so is every
 * request: there is no Movable pageblock for the free scanner to take targets from
 * (suitable_migration_target), and compaction moves nothing, as in Linux outside the
 * last-resort direct compaction that ignores block suitability.
 */
static void test_grouping_off(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, (uint64_t)NPAGES * 4096);
  bt_cfg_no_wmarks(&c);
  c.mobility_grouping = false;
  o->a = bt_create(&c);
  fragment(o, 0, 1);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.migrated, 0);
  EXPECT_U64(r.isolated, 0);
  assert_true(r.migrate_scanned > 0);
  expect_data_follows_ids(o);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/* Proactive compaction: nothing at proactiveness 0 or at or below the high mark; above it,
 * zones are compacted until their score is at most the low mark. */
static void test_proactive(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  o->a = small_arena();
  bh_compact_result_t r;
  assert_int_equal(bh_compact_proactive(o->a, 20, migrate_cb, o, &r), 0); /* all free: 0 */
  fragment(o, 0, 1);
  assert_int_equal(bh_compact_proactive(o->a, 0, migrate_cb, o, &r), 0);
  EXPECT_U64(r.migrated, 0);
  assert_int_equal(bh_compact_proactive(o->a, 200, migrate_cb, o, &r), BH_EINVAL);
  /* proactiveness 20: low 80, high 90; the score is 99 */
  assert_int_equal(bh_compact_proactive(o->a, 20, migrate_cb, o, &r), 1);
  assert_true(r.score_after <= 80);
  assert_true(r.migrated < 15); /* stopped before the scanners met */
  unsigned first = r.score_after;
  assert_int_equal(bh_compact_proactive(o->a, 20, migrate_cb, o, &r), 0); /* <= 90 now */
  EXPECT_U64(r.score_after, first);
  expect_data_follows_ids(o);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/* Every page of the zone allocated as movable order-0 pages, in ascending pfn order. */
static void fill_order0(bh_arena_t *a) {
  uint64_t pfn, n = 0;
  while (bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, -1, &pfn) == BH_OK)
    EXPECT_U64(pfn, n++);
  EXPECT_U64(n, NPAGES);
}

static void free_range(bh_arena_t *a, uint64_t from, uint64_t to) {
  for (uint64_t p = from; p < to; p++)
    bt_free(a, p, 0, -1);
}

/*
 * The free scanner isolates only what the batch needs, and compaction_alloc takes the first
 * entry of the smallest fitting list.  Pageblock 0 keeps page 0 (one page to move); the top
 * pageblock 15 has free pages at +8..+15 (an order-3 block) and +100 only.  For the batch of
 * one page, isolate_freepages_block scans 7680.. and stops after isolating the order-3 block
 * at 7688, since nr_migratepages (1) <= nr_freepages (8) (mm/compaction.c:667-672); +100 is
 * never isolated.  compaction_alloc takes the first entry of the smallest non-empty list of
 * order >= 0, the order-3 block, and splits it (mm/compaction.c:1847-1871): the first page
 * moves to 7688 = +8.
 */
static void test_first_target_is_first_isolated(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  o->a = small_arena();
  fill_order0(o->a);
  free_range(o->a, 1, PB);
  free_range(o->a, 15 * PB + 8, 15 * PB + 16);
  free_range(o->a, 15 * PB + 100, 15 * PB + 101);
  stamp(o, 0, 1);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  assert_true(o->nlog >= 1);
  EXPECT_U64(o->log_old[0], 0);
  EXPECT_U64(o->log_new[0], 15 * PB + 8);
  EXPECT_U64(o->id[15 * PB + 8], 1);
  expect_data_follows_ids(o);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/*
 * Migration goes in batches of COMPACT_CLUSTER_MAX (32) pages, each the list
 * isolate_migratepages_block builds with list_add, so the last page isolated moves first
 * (mm/compaction.c:1242-1259), and every target is taken before any page moves
 * (migrate_pages_batch).  Pageblock 0 holds 40 movable pages at 0..39: the first batch is
 * 0..31, moved as 31, 30, .. 0; the second 32..39, moved as 39 .. 32.  The targets come in
 * order from the order-6 block at 7744 that the free scanner isolated (the pages below it are
 * in use): 31 -> 7744, 0 -> 7775, 39 -> 7776.
 */
static void test_batches_of_32_last_isolated_first(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  o->a = small_arena();
  fill_order0(o->a);
  free_range(o->a, 40, PB);
  free_range(o->a, 15 * PB + 64, 16 * PB);
  for (uint64_t p = 0; p < 40; p++)
    stamp(o, p, (uint32_t)p + 1);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  assert_true(o->nlog >= 40);
  for (unsigned i = 0; i < 32; i++) {
    EXPECT_U64(o->log_old[i], 31 - i);
    EXPECT_U64(o->log_new[i], 15 * PB + 64 + i);
  }
  for (unsigned i = 32; i < 40; i++) {
    EXPECT_U64(o->log_old[i], 39 - (i - 32));
    EXPECT_U64(o->log_new[i], 15 * PB + 64 + i);
  }
  expect_data_follows_ids(o);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/*
 * An order-0 page without a target ends the run: migrate_pages returns -ENOMEM and, the
 * scanners not having met, compact_zone stops (COMPACT_CONTENDED, mm/compaction.c:2657-2660).
 * 32 MiB zone with min_free_kbytes 1024 (min 256); filled with __GFP_HIGH down to 200 free
 * pages, 7992..8191 in pageblock 15.  The first batch (pages 0..31 of pageblock 0, 32 pages
 * scanned) needs targets; the free scanner scans 7680..7991 (in use, 312 pages) and then fails
 * __isolate_free_page's watermark check at 7992 (200 <= 256 + 1), which ends the block
 * (mm/compaction.c:659-661) and the scan (isolation failed early, mm/compaction.c:1804-1810):
 * 313 pages scanned, nothing isolated.  The first page of the batch fails, the run ends.
 */
static void test_enomem_ends_run(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, (uint64_t)NPAGES * 4096);
  c.min_free_kbytes = 1024;
  c.watermark_scale_factor = 1;
  o->a = bt_create(&c);
  EXPECT_U64(bt_zone(o->a, 0).wmark_min, 256);
  uint64_t pfn, n = 0;
  while (bt_zone(o->a, 0).free_pages > 200) {
    assert_int_equal(bh_alloc_pfn(o->a, BH_GFP_MOVABLE | BH_GFP_HIGH, 0, -1, &pfn), BH_OK);
    EXPECT_U64(pfn, n++);
  }
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.migrated, 0);
  EXPECT_U64(r.migrate_failed, 1);
  EXPECT_U64(r.migrate_scanned, 32);
  EXPECT_U64(r.free_scanned, 313);
  EXPECT_U64(r.isolated, 0);
  EXPECT_U64(o->calls, 0);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/*
 * A block with no target is not moved into a free block found further down: compaction_alloc
 * runs the free scanner once (mm/compaction.c:1848-1855), and the free scanner stops once it
 * holds as many pages as the batch needs.  Pageblock 0 holds one movable order-3 block at 0;
 * pageblocks 1..14 are order-9 movable blocks (skip_isolation_on_order); pageblock 15 is in
 * use but for the lone pages 7681, 7683, .., 7695 and an order-3 block at 7800.  The free
 * scanner isolates the eight lone pages (16 pfns scanned) and stops: no list of order >= 3,
 * so no target.
 */
static struct owner *no_target_state(bool skip_unsplit) {
  struct owner *o = calloc(1, sizeof(*o));
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, (uint64_t)NPAGES * 4096);
  bt_cfg_no_wmarks(&c);
  c.compact_skip_unsplit = skip_unsplit;
  o->a = bt_create(&c);
  for (uint64_t b = 0; b < 16; b++)
    EXPECT_U64(bt_alloc(o->a, BH_GFP_MOVABLE, 9, -1), b * PB);
  bt_free(o->a, 15 * PB, 9, -1);
  for (uint64_t p = 15 * PB; p < 16 * PB; p++)
    EXPECT_U64(bt_alloc(o->a, BH_GFP_MOVABLE, 0, -1), p);
  bt_free(o->a, 0, 9, -1);
  EXPECT_U64(bt_alloc(o->a, BH_GFP_MOVABLE, 3, -1), 0);
  stamp(o, 0, 1);
  for (uint64_t p = 15 * PB + 1; p < 15 * PB + 16; p += 2)
    bt_free(o->a, p, 0, -1);
  free_range(o->a, 15 * PB + 120, 15 * PB + 128);
  return o;
}

/* The run over no_target_state(skip): what both rules share, and how far the migrate scanner
 * got (migrate_scanned pages). */
static void run_without_target(bool skip, uint64_t migrate_scanned) {
  struct owner *o = no_target_state(skip);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(o->calls, 0);
  EXPECT_U64(r.migrated, 0);
  EXPECT_U64(r.migrate_failed, 8);
  EXPECT_U64(r.isolated, 8);
  EXPECT_U64(r.free_scanned, 16);
  EXPECT_U64(r.migrate_scanned, migrate_scanned);
  EXPECT_U64(o->id[0], 1);
  EXPECT_U64(bt_zone(o->a, 0).nr_free_mt[3][BH_MT_MOVABLE], 2); /* 8 in pageblock 0, 7800 */
  expect_data_follows_ids(o);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/*
 * The block's owner does not let it split (no split callback), so the split fails:
 * migrate_pages_batch counts its 8 pages as failed and returns -ENOMEM (mm/migrate.c:
 * 1853-1861, 1943), and compact_zone ends the run as COMPACT_CONTENDED since the scanners have
 * not met (mm/compaction.c:2657-2659).  The migrate scanner has scanned pageblock 0 only (512
 * pages); the isolated lone pages go back (release_free_list).
 */
static void test_large_block_without_target_ends_run(void **state) {
  (void)state;
  run_without_target(false, PB);
}

/*
 * compact_skip_unsplit, the model's rule before it followed the kernel (not Linux's): the
 * block stays, 8 pages counted as failed, and the batch goes on; then the migrate scanner
 * passes pageblocks 0..14 (7680 pages scanned) and meets the free scanner.
 */
static void test_large_block_without_target_skipped(void **state) {
  (void)state;
  run_without_target(true, 15 * PB);
}

/* Agrees to every split; the owner then holds the pages one by one. */
static int split_cb(void *ctx, uint64_t pfn, unsigned order) {
  struct owner *o = ctx;
  for (uint64_t i = 1; i < (1ull << order); i++)
    o->id[pfn + i] = o->id[pfn] + (uint32_t)i * 1000;
  return 0;
}

/*
 * The same state, with an owner that lets compaction split its blocks: try_split_folio
 * queues the pages on split_folios (mm/migrate.c:1584-1587), the tail pages from the last
 * down (__split_huge_page, mm/huge_memory.c:3299-3300, list_add_tail in lru_add_page_tail,
 * 3137-3141), then the head, and migrate_pages moves them after the batch (mm/migrate.c:
 * 2094-2104), each to compaction_alloc's first order-0 entry: 7 -> 7681, 6 -> 7683, ..,
 * 1 -> 7693, and 0 -> 7695.  Pageblock 0 is then free.
 */
static void test_large_block_split(void **state) {
  (void)state;
  struct owner *o = no_target_state(false);
  assert_int_equal(bh_compact_set_split(o->a, split_cb), BH_OK);
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.split, 1);
  EXPECT_U64(r.migrated, 8);
  EXPECT_U64(r.migrate_failed, 0);
  EXPECT_U64(o->calls, 8);
  for (unsigned i = 0; i < 8; i++) {
    EXPECT_U64(o->log_old[i], 7 - i);
    EXPECT_U64(o->log_new[i], 15 * PB + 1 + 2 * i);
  }
  EXPECT_U64(o->orders_seen, 1u << 0);
  EXPECT_U64(bt_zone(o->a, 0).nr_free[9], 1);
  bt_expect_clean(o->a);
  /* the owner frees the moved pages one by one */
  for (unsigned i = 0; i < 8; i++)
    bt_free(o->a, o->log_new[i], 0, -1);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/*
 * Compaction frees pages the way any page is freed: free_unref_page, onto the pcp list for
 * the orders the pcp holds (migrated sources through folio_put, left-over targets through
 * release_free_list's __free_pages, mm/compaction.c:91-113), so they do not merge until the
 * pcp lists are drained; neither compact_memory nor proactive compaction drains them
 * (mm/compaction.c:2889-2940).  Pageblocks 1..14 are order-9 movable blocks (never
 * isolated), pageblock 0 holds page 0 only, pageblock 15 is in use but for an order-1 block
 * at 7688.  Page 0 moves to 7688; page 0 and the unused 7689 go to the pcp list: 2 pcp pages,
 * and pageblock 0 is not an order-9 free block until the pcp lists are drained.
 */
static void test_compaction_frees_through_pcp(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, (uint64_t)NPAGES * 4096);
  bt_cfg_no_wmarks(&c);
  c.pcp = true;
  c.nr_cpus = 1;
  o->a = bt_create(&c);
  for (uint64_t b = 0; b < 16; b++)
    EXPECT_U64(bt_alloc(o->a, BH_GFP_MOVABLE, 9, 0), b * PB);
  bt_free(o->a, 0, 9, 0);
  bh_drain_pcp(o->a);
  EXPECT_U64(bt_alloc(o->a, BH_GFP_MOVABLE, 0, 0), 0);
  assert_int_equal(bh_split_pages(o->a, 15 * PB, 9), BH_OK);
  bt_free(o->a, 15 * PB + 8, 0, 0);
  bt_free(o->a, 15 * PB + 9, 0, 0);
  bh_drain_pcp(o->a);
  stamp(o, 0, 1);
  bh_zone_info_t zi = bt_zone(o->a, 0);
  EXPECT_U64(zi.pcp_pages, 0);
  EXPECT_U64(zi.nr_free[1], 2); /* 2 in pageblock 0 and 7688 */
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.migrated, 1);
  EXPECT_U64(o->id[15 * PB + 8], 1);
  zi = bt_zone(o->a, 0);
  EXPECT_U64(zi.pcp_pages, 2);
  EXPECT_U64(zi.nr_free[9], 0);
  bt_expect_clean(o->a);
  bh_drain_pcp(o->a);
  EXPECT_U64(bt_zone(o->a, 0).nr_free[9], 1); /* pageblock 0, merged at last */
  expect_data_follows_ids(o);
  bt_expect_clean(o->a);
  bh_arena_destroy(o->a);
  free(o);
}

/* Refuses to move the first 8192 pfns (node 0 of a two-node arena), moves the rest. */
static int pin_node0_cb(void *ctx, uint64_t old_pfn, uint64_t new_pfn, unsigned order) {
  (void)ctx, (void)new_pfn, (void)order;
  return old_pfn < NPAGES ? 1 : 0;
}

/*
 * fragmentation_score_node rounds each zone's weighted score down before adding them
 * (fragmentation_score_zone_weighted, mm/compaction.c:2217-2245).  DMA32 and Normal of 32 MiB
 * each (8192 pages): DMA32 has an order-10 block and 490 lone pages free, zone score
 * 490 * 100 / 1514 = 32; Normal an order-10 block and 470 lone pages, 470 * 100 / 1494 = 31.
 * Weighted: 8192 * 32 / 16385 = 15 and 8192 * 31 / 16385 = 15, node score 30 (summed first it
 * would be 31).  At proactiveness 80 the high mark is min(max(100 - 80, 5) + 10, 100) = 30
 * (mm/compaction.c:2249-2260) and 30 is not above it: no compaction.
 */
static void test_score_rounded_per_zone(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_blank();
  c.backing = BH_BACKING_SIM;
  c.zone_bytes[BH_ZONE_DMA32] = 32 * MiB;
  c.zone_bytes[BH_ZONE_NORMAL] = 32 * MiB;
  bt_cfg_no_wmarks(&c);
  bh_arena_t *a = bt_create(&c);
  uint64_t pfn, n = 0;
  while (bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &pfn) == BH_OK)
    n++;
  /* the last 32 pages of DMA32 are its lowmem reserve against Normal requests (8192 / 256) */
  while (bh_alloc_pfn(a, BH_GFP_MOVABLE | BH_GFP_DMA32, 0, 0, &pfn) == BH_OK)
    n++;
  EXPECT_U64(n, 16384);
  for (uint64_t base = 0; base <= 8192; base += 8192) {
    for (uint64_t p = base + 1024; p < base + 2048; p++)
      bt_free(a, p, 0, 0);
    for (uint64_t k = 0; k < (base ? 470u : 490u); k++)
      bt_free(a, base + 4097 + 2 * k, 0, 0);
  }
  EXPECT_U64(bh_fragmentation_score(a, 0), 30);
  bh_compact_result_t r;
  EXPECT_U64(bh_compact_proactive(a, 80, pin_node0_cb, NULL, &r), 0);
  EXPECT_U64(r.migrated, 0);
  EXPECT_U64(bh_compact_proactive(a, 81, pin_node0_cb, NULL, &r), 1); /* high mark 29 */
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * The zones are weighted by their present pages, not their managed pages
 * (fragmentation_score_zone_weighted: zone->present_pages * score / (node_present_pages + 1),
 * mm/compaction.c:2221-2222).  A machine layout: DMA32 of 8192 pages all free in order-10
 * blocks (score 0), Normal of 8192 present pages of which only 1024 are managed, fragmented
 * to one page kept per pageblock (score 99).  Node score 8192 * 99 / 16385 = 49; weighted by
 * managed pages it would be 1024 * 99 / 9217 = 10.
 */
static void test_score_weighted_by_present_pages(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_blank();
  c.backing = BH_BACKING_SIM;
  c.pcp = false;
  c.nr_layout_zones = 2;
  c.layout_zones[0] = (bh_zone_layout_t){.node = 0,
                                         .type = BH_ZONE_DMA32,
                                         .start_pfn = 0,
                                         .spanned_pages = NPAGES,
                                         .present_pages = NPAGES,
                                         .managed_pages = NPAGES,
                                         .wmark_min = 1,
                                         .wmark_low = 1,
                                         .wmark_high = 1};
  c.layout_zones[1] = c.layout_zones[0];
  c.layout_zones[1].type = BH_ZONE_NORMAL;
  c.layout_zones[1].start_pfn = NPAGES;
  c.layout_zones[1].managed_pages = NPAGES / 8;
  bh_arena_t *a = bt_create(&c);
  uint64_t pfn, *held = malloc(NPAGES * sizeof(*held)), k = 0;
  assert_non_null(held);
  while (k < NPAGES && bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &pfn) == BH_OK && pfn >= NPAGES)
    held[k++] = pfn;
  assert_true(k >= NPAGES - 2); /* Normal, less its watermark */
  if (pfn < NPAGES)
    bt_free(a, pfn, 0, 0); /* the first page from DMA32 */
  for (uint64_t i = 0; i < k; i++)
    if (held[i] % PB)
      bt_free(a, held[i], 0, 0);
  free(held);
  EXPECT_U64(bt_zone(a, 1).nr_free[10], 0);
  EXPECT_U64(bh_fragmentation_score(a, 0), 49);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* One page kept in every pageblock of node n's zone (cpu n allocates on node n). */
static void fragment_node(bh_arena_t *a, int n) {
  uint64_t pfn, *held = malloc(NPAGES * sizeof(*held)), k = 0;
  while (k < NPAGES && bh_alloc_pfn(a, BH_GFP_MOVABLE | BH_GFP_THISNODE, 0, n, &pfn) == BH_OK)
    held[k++] = pfn;
  EXPECT_U64(k, NPAGES);
  for (uint64_t i = 0; i < k; i++)
    if (held[i] % PB)
      bt_free(a, held[i], 0, n);
  free(held);
}

/*
 * Each node's kcompactd keeps its own timer (kcompactd(), mm/compaction.c:3156-3220): 500 ms
 * (HPAGE_FRAG_CHECK_INTERVAL_MSEC), or 500 ms << COMPACT_MAX_DEFER_SHIFT = 32 s after a run
 * that did not lower its node's score.  Two nodes of one 32 MiB zone: node 0 fragmented with
 * pages its owner refuses to move, node 1 free.  At t0 node 0 runs, cannot lower its score and
 * waits until t0 + 32 s; node 1 has nothing to do and is due at t0 + 0.5 s, when, fragmented
 * in the meantime, it is compacted on its own timer while node 0 is left alone.
 */
static void test_kcompactd_timer_per_node(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, (uint64_t)NPAGES * 4096);
  c.backing = BH_BACKING_SIM;
  c.nr_nodes = 2;
  bt_cfg_no_wmarks(&c);
  bh_arena_t *a = bt_create(&c);
  fragment_node(a, 0);
  EXPECT_U64(bh_fragmentation_score(a, 0), 99);
  const uint64_t t0 = 1000, half = 500000000; /* 500 ms */
  bh_compact_result_t r;
  uint64_t next;
  EXPECT_U64(bh_kcompactd_run(a, 20, t0, pin_node0_cb, NULL, &r, &next), 1);
  EXPECT_U64(r.migrated, 0);
  EXPECT_U64(bh_fragmentation_score(a, 0), 99);
  EXPECT_U64(next, t0 + half);
  fragment_node(a, 1);
  EXPECT_U64(bh_kcompactd_run(a, 20, t0 + half, pin_node0_cb, NULL, &r, &next), 1);
  assert_true(r.migrated > 0);
  assert_true(bh_fragmentation_score(a, 1) <= 80);
  EXPECT_U64(r.migrate_failed, 0); /* node 0 was not looked at */
  EXPECT_U64(next, t0 + 2 * half);
  EXPECT_U64(bh_kcompactd_run(a, 20, t0 + 63 * half, pin_node0_cb, NULL, &r, &next), 0);
  EXPECT_U64(next, t0 + 64 * half);
  EXPECT_U64(bh_kcompactd_run(a, 20, t0 + 64 * half, pin_node0_cb, NULL, &r, &next), 1);
  assert_true(r.migrate_failed > 0); /* node 0 again */
  EXPECT_U64(bh_kcompactd_run(a, 0, t0, pin_node0_cb, NULL, &r, &next), 0);
  assert_true(next == UINT64_MAX);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

static void test_bad_args(void **state) {
  (void)state;
  bh_arena_t *a = small_arena();
  assert_int_equal(bh_compact_memory(NULL, migrate_cb, NULL, NULL), BH_EINVAL);
  assert_int_equal(bh_compact_memory(a, NULL, NULL, NULL), BH_EINVAL);
  assert_int_equal(bh_compact_proactive(a, 101, migrate_cb, NULL, NULL), BH_EINVAL);
  EXPECT_U64(bh_fragmentation_score(a, 5), 0);
  EXPECT_U64(bh_fragmentation_score(a, 0), 0);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compact_memory_gathers_movable_pages),
      cmocka_unit_test(test_unmovable_stays),
      cmocka_unit_test(test_pinned_block_stays),
      cmocka_unit_test(test_orders),
      cmocka_unit_test(test_order0_only),
      cmocka_unit_test(test_grouping_off),
      cmocka_unit_test(test_proactive),
      cmocka_unit_test(test_first_target_is_first_isolated),
      cmocka_unit_test(test_batches_of_32_last_isolated_first),
      cmocka_unit_test(test_enomem_ends_run),
      cmocka_unit_test(test_large_block_without_target_ends_run),
      cmocka_unit_test(test_large_block_without_target_skipped),
      cmocka_unit_test(test_large_block_split),
      cmocka_unit_test(test_compaction_frees_through_pcp),
      cmocka_unit_test(test_score_rounded_per_zone),
      cmocka_unit_test(test_score_weighted_by_present_pages),
      cmocka_unit_test(test_kcompactd_timer_per_node),
      cmocka_unit_test(test_bad_args),
  };
  return cmocka_run_group_tests_name("buddy_compaction", tests, NULL, NULL);
}
