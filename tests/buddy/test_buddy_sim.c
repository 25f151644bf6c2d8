/*
 * The sim backing at a size we could not map: 64 GiB (DMA 16 MiB, DMA32 496 MiB, Normal the
 * rest).  Only metadata exists: no base address, the pointer calls refuse, the pfn calls
 * work, and the checker walks all 16 Mi pages.
 */
#include "buddy_test.h"

#include <stdlib.h>

/*
 * Boot sizing at 64 GiB: lowmem 2^24 pages = 2^26 KiB, int_sqrt(2^30) = 32768 KiB,
 * pages_min 8192.  Normal managed 16646144: tmp 8192 * 16646144 / 2^24 = 8128, delta
 * max(2032, 16646) = 16646.  DMA: tmp 2, delta max(0, 4) = 4.  DMA32: tmp 62, delta
 * max(15, 126) = 126.  Reserves: DMA 126976/256 = 496, (126976 + 16646144)/256 = 65520;
 * DMA32 16646144/256 = 65024.
 */
static void test_sim_64gib(void **state) {
  (void)state;
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  c.zone_bytes[BH_ZONE_NORMAL] = 64 * GiB - c.zone_bytes[BH_ZONE_DMA] - c.zone_bytes[BH_ZONE_DMA32];
  bh_arena_t *a = bt_create(&c);
  EXPECT_U64(bh_arena_pages(a), 16777216);
  assert_null(bh_arena_base(a));
  assert_null(bh_pfn_to_addr(a, 0));
  assert_int_equal(bh_addr_to_pfn(a, &c), -1);
  int err = 0;
  assert_null(bh_alloc_pages(a, BH_GFP_KERNEL, 0, &err));
  assert_int_equal(err, BH_ENOTSUP);
  assert_int_equal(bh_free_pages(a, &c, 0), BH_EFAULT);

  EXPECT_U64(bh_arena_config(a)->min_free_kbytes, 32768);
  bh_zone_info_t dma = bt_zone(a, 0), dma32 = bt_zone(a, 1), normal = bt_zone(a, 2);
  EXPECT_U64(normal.managed_pages, 16646144);
  EXPECT_U64(normal.nr_free[10], 16256);
  EXPECT_U64(dma.wmark_min, 2);
  EXPECT_U64(dma.wmark_high, 10);
  EXPECT_U64(dma.lowmem_reserve[BH_ZONE_NORMAL], 65520);
  EXPECT_U64(dma32.wmark_min, 62);
  EXPECT_U64(dma32.wmark_high, 314);
  EXPECT_U64(dma32.lowmem_reserve[BH_ZONE_NORMAL], 65024);
  EXPECT_U64(normal.wmark_min, 8128);
  EXPECT_U64(normal.wmark_low, 24774);
  EXPECT_U64(normal.wmark_high, 41420);

  /* a few thousand blocks of every order, held, checked, freed */
  enum { N = 4000 };
  uint64_t *pfn = malloc(N * sizeof *pfn);
  unsigned *order = malloc(N * sizeof *order);
  assert_non_null(pfn);
  assert_non_null(order);
  static const unsigned gfps[] = {BH_GFP_KERNEL, BH_GFP_MOVABLE, BH_GFP_RECLAIMABLE,
                                  BH_GFP_USER_MOVABLE};
  uint64_t pages = 0;
  for (int i = 0; i < N; i++) {
    order[i] = (unsigned)(i * 7) % 11;
    unsigned gfp = gfps[i % 4];
    if (order[i] <= 2 && i % 3 == 0) /* a few small ones from the low zones */
      gfp = i % 2 ? BH_GFP_DMA : BH_GFP_DMA32;
    pfn[i] = bt_alloc(a, gfp, order[i], i % 2);
    pages += 1ull << order[i];
  }
  bt_expect_clean(a);
  uint64_t free_now = 0, pcp_now = 0;
  for (int z = 0; z < 3; z++) {
    bh_zone_info_t zi = bt_zone(a, z);
    free_now += zi.free_pages;
    pcp_now += zi.pcp_pages;
  }
  EXPECT_U64(free_now + pcp_now + pages, 16777216);
  for (int i = N - 1; i >= 0; i--)
    bt_free(a, pfn[i], order[i], i % 2);
  bh_drain_pcp(a);
  bt_expect_clean(a);
  bt_expect_all_free(a);
  free(pfn);
  free(order);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sim_64gib),
  };
  return cmocka_run_group_tests_name("buddy_sim", tests, NULL, NULL);
}
