/*
 * Buddy mechanics on crafted states: one node, one Normal zone, pcp off, so that every pfn
 * handed out can be predicted from the kernel's rules (kernel.md 1.4-1.6):
 *   - memblock_free_all frees the top-order blocks to the list tails, in address order;
 *   - __rmqueue_smallest takes the head of the lowest sufficient order; expand() puts each
 *     upper half at the head of its order's list and the caller keeps the lowest block;
 *   - __free_one_page merges while the buddy (pfn ^ 2^order) is free at the same order, and
 *     puts the result at the tail when buddy_merge_likely() (the order+1 block's buddy is free
 *     and order < MAX_PAGE_ORDER - 1), else at the head.
 * Most tests use watermarks of 0 (min_free_kbytes 1) so that the last block can be taken.
 */
#include "buddy_test.h"

#include <string.h>

/* One node, a single Normal zone of `mib` MiB (pfn 0 up), pcp off, watermarks 0. */
static bh_arena_t *normal_arena(unsigned mib, enum bh_backing backing) {
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, mib * MiB);
  c.backing = backing;
  bt_cfg_no_wmarks(&c);
  return bt_create(&c);
}

static void expect_buddyinfo(bh_arena_t *a, const uint64_t want[11]) {
  bh_zone_info_t zi = bt_zone(a, 0);
  for (unsigned o = 0; o <= 10; o++)
    if (zi.nr_free[o] != want[o]) {
      print_error("order %u: %llu free blocks, expected %llu\n", o,
                  (unsigned long long)zi.nr_free[o], (unsigned long long)want[o]);
      fail();
    }
}

/*
 * The first order-0 Movable allocation splits the first top block (pfn 0, at the head of the
 * order-10 list because blocks were freed to the tail in address order): pfn 0 is returned,
 * pfns 1, 2, 4 .. 512 are left as one free block of each order 0..9.  Further allocations
 * walk up the address space: 1 (head of order 0), 2 (order-1 block split, 3 put back), ...
 */
static void test_alloc_splits_lowest_first(void **state) {
  (void)state;
  bh_arena_t *a = normal_arena(8, BH_BACKING_SIM);
  uint64_t splits0 = bt_stat(a, BH_STAT_splits);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 0);
  static const uint64_t after_one[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  expect_buddyinfo(a, after_one);
  bh_zone_info_t zi = bt_zone(a, 0);
  EXPECT_U64(zi.free_pages, 2047);
  for (unsigned o = 0; o <= 10; o++)
    EXPECT_U64(zi.nr_free_mt[o][BH_MT_MOVABLE], 1);
  EXPECT_U64(bt_stat(a, BH_STAT_splits) - splits0, 10);
  for (uint64_t want = 1; want < 8; want++)
    EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), want);
  /* splits: 10 for pfn 0, then 1 (pfn 2), 2 (pfn 4), 1 (pfn 6) */
  EXPECT_U64(bt_stat(a, BH_STAT_splits) - splits0, 14);
  static const uint64_t after_eight[11] = {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  expect_buddyinfo(a, after_eight);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_normal), 8);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_calls), 8);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * Freeing pfns 0..7 in order merges everything back.  Merges: 1 (free 1), 2 (free 3: order 0
 * then order 1), 1 (free 5), 10 (free 7: order 0 up to 10) = 14, as many as the splits.
 * Tail placements (buddy_merge_likely): free 2 (order-1 block 0 is free), free 3 (result
 * order 2 at 0, block 8 of order 3 is free), free 5 (order 1 at 4, block 0 of order 2 free),
 * free 6 (block 4 of order 1 free) = 4; frees 0, 1, 4 and the final order-10 block go to the
 * head.
 */
static void test_free_merges_back(void **state) {
  (void)state;
  bh_arena_t *a = normal_arena(8, BH_BACKING_SIM);
  for (uint64_t p = 0; p < 8; p++)
    bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  uint64_t merges0 = bt_stat(a, BH_STAT_merges), tail0 = bt_stat(a, BH_STAT_to_tail);
  for (uint64_t p = 0; p < 8; p++)
    bt_free(a, p, 0, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_merges) - merges0, 14);
  EXPECT_U64(bt_stat(a, BH_STAT_to_tail) - tail0, 4);
  EXPECT_U64(bt_stat(a, BH_STAT_pgfree), 8);
  EXPECT_U64(bt_stat(a, BH_STAT_free_calls), 8);
  bt_expect_all_free(a);
  bt_expect_clean(a);
  /* the merged block went to the head: it is the next one split */
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 1024);
  bh_arena_destroy(a);
}

/*
 * buddy_merge_likely: 0 and 1 allocated (order 0), 2 allocated (order 1), 4 allocated from
 * the order-2 block (5 and 6 put back at orders 0 and 1).  Freeing 2 (order 1): its buddy 0
 * is not a free order-1 block and the order-2 block 0's buddy 4 is allocated -> head of
 * order 1, before 6.  Freeing 1: buddy 0 allocated, but the order-1 block 2 (buddy of the
 * order-1 block 0 that 1 belongs to) is free -> tail of order 0, after 5.  So the next
 * order-0 allocations return 5 then 1, and the next order-1 allocation returns 2.
 */
static void test_merge_likely_goes_to_tail(void **state) {
  (void)state;
  bh_arena_t *a = normal_arena(8, BH_BACKING_SIM);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 1);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 1, 0), 2);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 4);
  uint64_t tail0 = bt_stat(a, BH_STAT_to_tail);
  bt_free(a, 2, 1, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_to_tail) - tail0, 0);
  bt_free(a, 1, 0, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_to_tail) - tail0, 1);
  EXPECT_U64(bt_zone(a, 0).nr_free_mt[0][BH_MT_MOVABLE], 2);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 5);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 1);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 1, 0), 2);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 1, 0), 6);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * buddy_merge_likely is false at order >= MAX_PAGE_ORDER - 1 (9): an order-9 block whose
 * order-10 parent has a free buddy still goes to the head.  16 MiB = top blocks 0, 1024,
 * 2048, 3072, all allocated; 2048 is split into two allocated order-9 halves; 0 and 1024 are
 * freed (list: 0, 1024) and 0 is split into two allocated halves.  Then 2560 is freed (head
 * of order 9), then 512: its buddy 0 is allocated, its parent 0's buddy 1024 is a free
 * order-10 block, yet it goes to the head -> the next order-9 allocation returns 512.
 */
static void test_merge_likely_not_below_top(void **state) {
  (void)state;
  bh_arena_t *a = normal_arena(16, BH_BACKING_SIM);
  for (uint64_t b = 0; b < 4; b++)
    EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), b * 1024);
  bt_free(a, 2048, 10, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), 2048);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), 2560);
  bt_free(a, 1024, 10, 0);
  bt_free(a, 0, 10, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), 512);
  uint64_t tail0 = bt_stat(a, BH_STAT_to_tail);
  bt_free(a, 2560, 9, 0);
  bt_free(a, 512, 9, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_to_tail) - tail0, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), 512);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* ---- misuse: every bad free is refused and leaves the arena exactly as it was ---- */

struct snapshot {
  uint64_t stats[BH_NR_STATS];
  bh_zone_info_t zone;
};

static struct snapshot take_snapshot(bh_arena_t *a) {
  struct snapshot s;
  memset(&s, 0, sizeof s);
  bh_stats_read(a, s.stats);
  s.zone = bt_zone(a, 0);
  return s;
}

static void expect_unchanged(bh_arena_t *a, const struct snapshot *before, const char *what) {
  struct snapshot now = take_snapshot(a);
  for (int s = 0; s < BH_NR_STATS; s++)
    if (now.stats[s] != before->stats[s]) {
      print_error("%s changed counter %s: %llu -> %llu\n", what, bh_stat_name(s),
                  (unsigned long long)before->stats[s], (unsigned long long)now.stats[s]);
      fail();
    }
  if (memcmp(&now.zone, &before->zone, sizeof now.zone)) {
    print_error("%s changed the zone state\n", what);
    fail();
  }
  bt_expect_clean(a);
}

struct bad_free {
  const char *what;
  uint64_t pfn;
  unsigned order;
  int err;
};

/*
 * State: order-3 block at 0 (pfns 0..7), order-0 pages at 8 and 9, the order-0 page 9 then
 * freed (so 9 is a free block head), arena of 2048 pages.
 */
static const struct bad_free bad_frees[] = {
    {"double free of 9", 9, 0, BH_ENOTALLOC},
    {"interior page 4 of the order-3 block, as order 2", 4, 2, BH_ENOTALLOC},
    {"interior page 1 of the order-3 block, as order 0", 1, 0, BH_ENOTALLOC},
    {"never allocated free page 10, as order 1", 10, 1, BH_ENOTALLOC},
    {"order-3 block freed as order 2", 0, 2, BH_EORDER},
    {"order-3 block freed as order 0", 0, 0, BH_EORDER},
    {"order-3 block freed as order 4", 0, 4, BH_EORDER},
    {"order-0 page 8 freed as order 3", 8, 3, BH_EORDER},
    {"pfn 4 as order 3 (misaligned)", 4, 3, BH_EALIGN},
    {"pfn 2 as order 2 (misaligned)", 2, 2, BH_EALIGN},
    {"pfn 9 as order 1 (misaligned)", 9, 1, BH_EALIGN},
    {"pfn 2048: one past the end", 2048, 0, BH_EFAULT},
    {"pfn 1 << 40", 1ull << 40, 0, BH_EFAULT},
    {"pfn UINT64_MAX", UINT64_MAX, 0, BH_EFAULT},
    {"order 11 > max_order", 0, 11, BH_EINVAL},
};

static void test_misuse_is_refused(void **state) {
  (void)state;
  bh_arena_t *a = normal_arena(8, BH_BACKING_MMAP);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 3, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 8);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 9);
  bt_free(a, 9, 0, 0);
  struct snapshot before = take_snapshot(a);
  for (size_t i = 0; i < sizeof bad_frees / sizeof bad_frees[0]; i++) {
    const struct bad_free *b = &bad_frees[i];
    int err = bh_free_pfn(a, b->pfn, b->order, 0);
    if (err != b->err) {
      print_error("%s: got %s, expected %s\n", b->what, bh_err_name(err), bh_err_name(b->err));
      fail();
    }
    expect_unchanged(a, &before, b->what);
  }
  assert_int_equal(bh_free_pfn(NULL, 0, 0, 0), BH_EINVAL);

  /* pointer interface */
  uint8_t *base = bh_arena_base(a);
  int local = 0;
  assert_int_equal(bh_free_pages(a, &local, 0), BH_EFAULT);
  assert_int_equal(bh_free_pages(a, NULL, 0), BH_EFAULT);
  assert_int_equal(bh_free_pages(a, base - 4096, 0), BH_EFAULT);
  assert_int_equal(bh_free_pages(a, base + 2048 * 4096ull, 0), BH_EFAULT);
  assert_int_equal(bh_free_pages(a, base + 8 * 4096 + 1, 0), BH_EALIGN);
  assert_int_equal(bh_free_pages(a, base + 9 * 4096, 0), BH_ENOTALLOC);
  assert_int_equal(bh_free_pages(a, base, 1), BH_EORDER);
  expect_unchanged(a, &before, "bad pointer frees");

  /* bad allocation arguments */
  uint64_t pfn = 77;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_MOVABLE, 11, 0, &pfn), BH_EINVAL);
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, NULL), BH_EINVAL);
  assert_int_equal(bh_alloc_pfn(NULL, BH_GFP_MOVABLE, 0, 0, &pfn), BH_EINVAL);
  EXPECT_U64(pfn, 77);
  int err = 0;
  assert_null(bh_alloc_pages(a, BH_GFP_MOVABLE, 11, &err));
  assert_int_equal(err, BH_EINVAL);
  expect_unchanged(a, &before, "bad allocations");

  /* and the legitimate frees still work */
  assert_int_equal(bh_free_pages(a, base + 8 * 4096, 0), BH_OK);
  assert_int_equal(bh_free_pfn(a, 0, 3, 0), BH_OK);
  assert_int_equal(bh_free_pfn(a, 0, 3, 0), BH_ENOTALLOC);
  bt_expect_all_free(a);
  bh_arena_destroy(a);
}

/* Pointer interface: addresses map to pfns; __GFP_ZERO zeroes a reused page. */
static void test_pointer_interface(void **state) {
  (void)state;
  bh_arena_t *a = normal_arena(8, BH_BACKING_MMAP);
  uint8_t *base = bh_arena_base(a);
  int err = 1;
  uint8_t *p = bh_alloc_pages(a, BH_GFP_MOVABLE, 0, &err);
  assert_int_equal(err, BH_OK);
  assert_ptr_equal(p, base);
  EXPECT_U64(bh_addr_to_pfn(a, p), 0);
  EXPECT_U64(bh_addr_to_pfn(a, p + 4095), 0);
  assert_ptr_equal(bh_pfn_to_addr(a, 5), base + 5 * 4096);
  assert_null(bh_pfn_to_addr(a, 2048));
  assert_int_equal(bh_addr_to_pfn(a, base + 2048 * 4096ull), -1);
  assert_int_equal(bh_addr_to_pfn(a, &err), -1);
  memset(p, 0xab, 4096);
  assert_int_equal(bh_free_pages(a, p, 0), BH_OK);
  uint8_t *q = bh_alloc_pages(a, BH_GFP_MOVABLE | BH_GFP_ZERO, 0, NULL);
  assert_ptr_equal(q, p); /* head of the order-0 list again */
  for (int i = 0; i < 4096; i++)
    if (q[i]) {
      print_error("byte %d of a __GFP_ZERO page is %#x\n", i, q[i]);
      fail();
    }
  uint8_t *big = bh_alloc_pages(a, BH_GFP_MOVABLE, 4, NULL);
  assert_ptr_equal(big, base + 16 * 4096); /* 1 (order 0), 2, 4, 8 are too small */
  assert_int_equal(bh_free_pages(a, big, 4), BH_OK);
  assert_int_equal(bh_free_pages(a, q, 0), BH_OK);
  bt_expect_all_free(a);
  bh_arena_destroy(a);
}

/* Out of memory: with watermarks at 0 the whole zone can be allocated, then ENOSPC. */
static void test_enospc(void **state) {
  (void)state;
  bh_arena_t *a = normal_arena(8, BH_BACKING_SIM);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 1024);
  uint64_t pfn = 5;
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &pfn), BH_ENOSPC);
  assert_int_equal(bh_alloc_pfn(a, BH_GFP_KERNEL, 3, 1, &pfn), BH_ENOSPC);
  EXPECT_U64(pfn, 5);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_fail), 2);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_fail_pages), 9);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_calls), 2);
  EXPECT_U64(bt_zone(a, 0).free_pages, 0);
  bt_free(a, 1024, 10, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 1024);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * buddyhint.h says bh_alloc_pfn returns "BH_EINVAL for an order above max_order or bad
 * flags" (an earlier core refused no gfp value).  Bad flags, as the kernel
 * defines them: bits outside the defined BH_GFP_* set, and the zone-modifier combinations
 * gfp_zone() treats as GFP_ZONE_BAD (DMA|DMA32, DMA|HIGHMEM, DMA32|HIGHMEM).
 */
static void test_bad_gfp_flags_rejected(void **state) {
  (void)state;
  bh_arena_t *a = normal_arena(8, BH_BACKING_SIM);
  static const unsigned bad[] = {1u << 12, 1u << 31, BH_GFP_DMA | BH_GFP_DMA32,
                                 BH_GFP_DMA | BH_GFP_HIGHMEM, BH_GFP_DMA32 | BH_GFP_HIGHMEM};
  int wrong = 0;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t pfn = 0;
    int err = bh_alloc_pfn(a, bad[i], 0, 0, &pfn);
    if (err != BH_EINVAL) {
      print_error("gfp %#x: got %s, expected EINVAL\n", bad[i], bh_err_name(err));
      wrong++;
    }
  }
  bh_arena_destroy(a); /* before failing, so that sanitizers report no leak */
  EXPECT_U64(wrong, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_splits_lowest_first),
      cmocka_unit_test(test_free_merges_back),
      cmocka_unit_test(test_merge_likely_goes_to_tail),
      cmocka_unit_test(test_merge_likely_not_below_top),
      cmocka_unit_test(test_misuse_is_refused),
      cmocka_unit_test(test_pointer_interface),
      cmocka_unit_test(test_enospc),
      cmocka_unit_test(test_bad_gfp_flags_rejected),
  };
  return cmocka_run_group_tests_name("buddy_mechanics", tests, NULL, NULL);
}
