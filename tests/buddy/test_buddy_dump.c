/*
 * The /proc dumps, byte for byte against golden files written by hand from mm/vmstat.c's
 * formats (kernel.md 1.11):
 *   buddyinfo:   "Node %d, zone %8s " then "%6lu " per order, "\n"
 *   pagetypeinfo per node: "Page block order: %d\n", "Pages per block:  %lu\n", "\n",
 *                "%-43s " header + "%6d " per order; rows "Node %4d, zone %8s, type %12s "
 *                + "%s%6lu " per order ('>' once the count reaches 100000);
 *                "\n%-23s" "Number of blocks type " + "%12s " per type; rows
 *                "Node %d, zone %8s " + "%12lu " per type.
 * Golden files: tests/buddy/golden/{fresh,sequence}_{buddyinfo,pagetypeinfo}.txt.
 */
#include "buddy_test.h"

#include <stdlib.h>
#include <string.h>

static void expect_golden(bh_arena_t *a, int (*dump)(bh_arena_t *, FILE *), const char *file) {
  char *got = bt_dump(a, dump);
  char *want = bt_read_golden(file);
  bt_expect_text(got, want, file);
  free(got);
  free(want);
}

/* The default 1 GiB arena as created: every zone in Movable top-order blocks. */
static void test_fresh_arena_dumps(void **state) {
  (void)state;
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  bh_arena_t *a = bt_create(&c);
  expect_golden(a, bh_dump_buddyinfo, "fresh_buddyinfo.txt");
  expect_golden(a, bh_dump_pagetypeinfo, "fresh_pagetypeinfo.txt");
  bh_arena_destroy(a);
}

/*
 * Two nodes of DMA32 4 MiB + Normal 8 MiB, pcp off, default watermarks (far away here).
 * pfns: node 0 DMA32 0..1023, Normal 1024..3071; node 1 DMA32 3072..4095, Normal 4096..6143.
 *  1. slot 0 Movable order 0   -> 1024 (top block 1024 split: 1025, 1026, .., 1536 free)
 *  2. slot 0 Movable order 0   -> 1025
 *  3. slot 0 GFP_KERNEL order 3 -> 2048: Unmovable claims top block 2048 (ALLOC_NOFRAGMENT:
 *     only blocks >= pageblock order may be claimed; this one is order 10); halves 2056..2560
 *  4. slot 1 Reclaimable order 2 -> 4096: claims node 1's top block 4096; halves 4100..4608
 *  5. slot 1 Movable order 9   -> 5120: top block 5120 split, 5632 free
 *  6. slot 0 GFP_DMA32 order 0 -> 0: Unmovable claims node 0's DMA32 block; halves 1..512
 *  7. free 1024 (order 0): buddy 1025 in use, no merge
 * Node 0 DMA32: Unmovable 1 each at orders 0..9; pageblocks 2 Unmovable.
 * Node 0 Normal: Movable 1024, 1026, 1028, .., 1536 (orders 0..9); Unmovable 2056 .. 2560
 *   (orders 3..9); pageblocks 1024, 1536 Movable, 2048, 2560 Unmovable.
 * Node 1 DMA32: one Movable order-10 block.  Node 1 Normal: Reclaimable 4100 .. 4608 (orders
 *   2..9), Movable 5632 (order 9); pageblocks 4096, 4608 Reclaimable, 5120, 5632 Movable.
 */
static bh_arena_t *sequence_arena(void) {
  bh_config_t c = bt_cfg_blank();
  c.backing = BH_BACKING_SIM;
  c.nr_nodes = 2;
  c.zone_bytes[BH_ZONE_DMA32] = 4 * MiB;
  c.zone_bytes[BH_ZONE_NORMAL] = 8 * MiB;
  bh_arena_t *a = bt_create(&c);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 1024);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 1025);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 3, 0), 2048);
  EXPECT_U64(bt_alloc(a, BH_GFP_RECLAIMABLE, 2, 1), 4096);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 1), 5120);
  EXPECT_U64(bt_alloc(a, BH_GFP_DMA32, 0, 0), 0);
  bt_free(a, 1024, 0, 0);
  return a;
}

static void test_sequence_dumps(void **state) {
  (void)state;
  bh_arena_t *a = sequence_arena();
  expect_golden(a, bh_dump_buddyinfo, "sequence_buddyinfo.txt");
  expect_golden(a, bh_dump_pagetypeinfo, "sequence_pagetypeinfo.txt");
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * The watermark part of zoneinfo for the default DMA zone (values from test_buddy_config's
 * default row; promo = high + delta), in zoneinfo_show_print's layout.
 */
static void test_zoneinfo_watermarks(void **state) {
  (void)state;
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  bh_arena_t *a = bt_create(&c);
  char *got = bt_dump(a, bh_dump_zoneinfo);
  static const char *const want[] = {
      "Node 0, zone      DMA\n  pages free     4096\n        boost    0\n        min      16\n"
      "        low      20\n        high     24\n        promo    28\n        spanned  4096\n"
      "        present  4096\n        managed  4096\n        cma      0\n"
      "        protection: (0, 496, 1008, 1008)",
      "Node 0, zone    DMA32\n  pages free     126976\n        boost    0\n"
      "        min      496\n        low      622\n        high     748\n        promo    874\n",
      "Node 0, zone   Normal\n  pages free     131072\n        boost    0\n"
      "        min      512\n        low      643\n        high     774\n        promo    905\n",
      "        protection: (0, 0, 512, 512)",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(got, want[i])) {
      print_error("zoneinfo lacks:\n%s\n--- got:\n%s\n", want[i], got);
      fail();
    }
  free(got);
  bh_arena_destroy(a);
}

/* A stream that refuses writes: every dump reports BH_EIO. */
static void test_dump_write_error(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 4 * MiB);
  c.backing = BH_BACKING_SIM;
  bh_arena_t *a = bt_create(&c);
  FILE *ro = fopen("/dev/null", "r");
  assert_non_null(ro);
  assert_int_equal(bh_dump_buddyinfo(a, ro), BH_EIO);
  assert_int_equal(bh_dump_pagetypeinfo(a, ro), BH_EIO);
  assert_int_equal(bh_dump_zoneinfo(a, ro), BH_EIO);
  assert_int_equal(bh_dump_vmstat(a, ro), BH_EIO);
  assert_int_equal(bh_dump_stats_json(a, ro), BH_EIO);
  fclose(ro);
  bh_arena_destroy(a);
}

/*
 * A free list of exactly 99999 then 100000 order-0 blocks: Normal 1 GiB (sim, pcp off); the
 * first 200000 pages are allocated one by one (200000 is even: no order-0 block left over),
 * then every even pfn is freed (its odd buddy stays allocated).  Returns the arena with
 * 99999 even pages freed; the caller frees the last one.
 */
static bh_arena_t *long_list_arena(void) {
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 1 * GiB);
  c.backing = BH_BACKING_SIM;
  bh_arena_t *a = bt_create(&c);
  for (uint64_t p = 0; p < 200000; p++)
    if (bt_alloc(a, BH_GFP_MOVABLE, 0, 0) != p)
      fail_msg("allocation %llu out of order", (unsigned long long)p);
  for (uint64_t p = 0; p < 2 * 99999; p += 2)
    bt_free(a, p, 0, 0);
  EXPECT_U64(bt_zone(a, 0).nr_free[0], 99999);
  return a;
}

static char *movable_row(bh_arena_t *a) {
  char *text = bt_dump(a, bh_dump_pagetypeinfo);
  char *row = strstr(text, "type      Movable ");
  assert_non_null(row);
  size_t n = strcspn(row, "\n");
  char *copy = strndup(row, n);
  free(text);
  return copy;
}

static void test_pagetypeinfo_below_cap(void **state) {
  (void)state;
  bh_arena_t *a = long_list_arena();
  char *row = movable_row(a);
  assert_non_null(strstr(row, "type      Movable  99999      0 "));
  free(row);
  char *bi = bt_dump(a, bh_dump_buddyinfo);
  assert_non_null(strstr(bi, "Node 0, zone   Normal  99999      0 "));
  free(bi);
  bh_arena_destroy(a);
}

/*
 * pagetypeinfo_showfree_print stops counting at 100000 and prints the '>' as soon as the
 * count reaches 100000 ("if (++freecount >= 100000) { overflow = true; ..."), so a list of
 * exactly 100000 blocks prints ">100000".  (buddyinfo has no cap: "100000" there is right.)
 */
static void test_pagetypeinfo_cap_at_100000(void **state) {
  (void)state;
  bh_arena_t *a = long_list_arena();
  bt_free(a, 2 * 99999, 0, 0);
  EXPECT_U64(bt_zone(a, 0).nr_free[0], 100000);
  char *bi = bt_dump(a, bh_dump_buddyinfo);
  assert_non_null(strstr(bi, "Node 0, zone   Normal 100000      0 "));
  free(bi);
  char *row = movable_row(a);
  bh_arena_destroy(a);
  bool ok = strstr(row, "type      Movable >100000      0 ") != NULL;
  if (!ok)
    print_error("got row: \"%s\"\n", row);
  free(row); /* before failing, so that sanitizers report no leak */
  assert_true(ok);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fresh_arena_dumps),
      cmocka_unit_test(test_sequence_dumps),
      cmocka_unit_test(test_zoneinfo_watermarks),
      cmocka_unit_test(test_dump_write_error),
      cmocka_unit_test(test_pagetypeinfo_below_cap),
      cmocka_unit_test(test_pagetypeinfo_cap_at_100000),
  };
  return cmocka_run_group_tests_name("buddy_dump", tests, NULL, NULL);
}
