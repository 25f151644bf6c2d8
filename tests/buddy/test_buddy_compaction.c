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
};

static int migrate_cb(void *ctx, uint64_t old_pfn, uint64_t new_pfn, unsigned order) {
  struct owner *o = ctx;
  o->orders_seen |= 1u << order;
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

/* One page kept in each of the 16 pageblocks: no free pageblock, score 99.  The free scanner
 * isolates the top pageblock's free pages; the migrate scanner empties pageblocks 0..13 into
 * them and stops where the free scanner would scan next (the scanners meet at pageblock 14),
 * so 14 pageblocks end up free. */
static void test_compact_memory_gathers_movable_pages(void **state) {
  (void)state;
  struct owner *o = calloc(1, sizeof(*o));
  o->a = small_arena();
  fragment(o, 0, 1);
  EXPECT_U64(bh_fragmentation_score(o->a, 0), 99); /* (8176 - 0) * 100 / 8176, weighted */
  bh_compact_result_t r;
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.zones, 1);
  EXPECT_U64(r.migrated, 14);
  EXPECT_U64(o->calls, 14);
  EXPECT_U64(r.migrate_failed, 0);
  EXPECT_U64(bt_stat(o->a, BH_STAT_pgmigrate_success), 14);
  EXPECT_U64(r.score_before, 99);
  /* free below order 9: 511 pages in pageblock 14, 511 - 14 in 15: 1008 * 100 / 8176 = 12
   * for the zone, 12 * 8192 / (8192 + 1) = 11 for the node */
  EXPECT_U64(r.score_after, 11);
  for (unsigned p = 0; p < 14 * PB; p++)
    EXPECT_U64(o->id[p], 0);
  expect_data_follows_ids(o);
  bh_zone_info_t zi = bt_zone(o->a, 0);
  EXPECT_U64(zi.free_pages, NPAGES - 16);
  bt_expect_clean(o->a);
  /* a second run moves pageblock 14's page up too; a third finds nothing to move */
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.migrated, 1);
  EXPECT_U64(r.score_after, 5); /* 497 * 100 / 8176 = 6 for the zone */
  assert_int_equal(bh_compact_memory(o->a, migrate_cb, o, &r), 0);
  EXPECT_U64(r.migrated, 0);
  for (unsigned p = 0; p < NPAGES - PB; p++)
    EXPECT_U64(o->id[p], 0);
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
  EXPECT_U64(r.migrated, 13);
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
      cmocka_unit_test(test_bad_args),
  };
  return cmocka_run_group_tests_name("buddy_compaction", tests, NULL, NULL);
}
