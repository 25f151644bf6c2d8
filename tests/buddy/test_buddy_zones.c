/*
 * Zones and nodes: gfp_zone() selection, the zonelist walk (highest zone first, local node
 * first), the watermark each zone enforces (low on the fast path, min on the slow path,
 * kernel.md 1.8) plus lowmem_reserve[highest_zoneidx] for requests that could have used a
 * higher zone, ALLOC_NOFRAGMENT (preferred zone Normal with DMA32 below it) and
 * __GFP_THISNODE.  Allocation counts are worked out from the watermarks by hand: a zone
 * serves order-0 requests while free > mark + reserve, so it serves (free - mark - reserve).
 * All arenas: pcp off (every page is on the buddy lists), sim backing.
 */
#include "buddy_test.h"

#include <string.h>

struct run {
  int node, type;
  uint64_t count;
};

#define MAX_RUNS 16

/*
 * Allocates order-0 blocks until ENOSPC; records the zones they came from as runs of
 * consecutive allocations from one zone.  Returns the number of runs.
 */
static int alloc_until_full(bh_arena_t *a, unsigned gfp, int cpu, struct run runs[MAX_RUNS]) {
  int n = 0;
  for (;;) {
    uint64_t pfn;
    int err = bh_alloc_pfn(a, gfp, 0, cpu, &pfn);
    if (err == BH_ENOSPC)
      return n;
    assert_int_equal(err, BH_OK);
    bh_zone_info_t zi = bt_zone(a, bt_zone_of(a, pfn));
    if (n && runs[n - 1].node == zi.node && runs[n - 1].type == zi.type) {
      runs[n - 1].count++;
      continue;
    }
    assert_true(n < MAX_RUNS);
    runs[n++] = (struct run){zi.node, zi.type, 1};
  }
}

static void expect_runs(const struct run *got, int n, const struct run *want, int nwant) {
  bool same = n == nwant;
  for (int i = 0; same && i < n; i++)
    same =
        got[i].node == want[i].node && got[i].type == want[i].type && got[i].count == want[i].count;
  if (same)
    return;
  print_error("allocation runs differ:\n");
  for (int i = 0; i < n || i < nwant; i++)
    print_error("  %2d: got %s node %d x %llu, expected %s node %d x %llu\n", i,
                i < n ? bh_zone_name(got[i].type) : "-", i < n ? got[i].node : -1,
                i < n ? (unsigned long long)got[i].count : 0ull,
                i < nwant ? bh_zone_name(want[i].type) : "-", i < nwant ? want[i].node : -1,
                i < nwant ? (unsigned long long)want[i].count : 0ull);
  fail();
}

static void expect_wmarks(bh_arena_t *a, int zone, uint64_t min, uint64_t low, uint64_t high,
                          const uint64_t reserve[BH_NR_ZONE_TYPES]) {
  bh_zone_info_t zi = bt_zone(a, zone);
  EXPECT_U64(zi.wmark_min, min);
  EXPECT_U64(zi.wmark_low, low);
  EXPECT_U64(zi.wmark_high, high);
  for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
    EXPECT_U64(zi.lowmem_reserve[t], reserve[t]);
}

static bh_config_t cfg_zones(uint64_t dma, uint64_t dma32, uint64_t normal, uint64_t movable) {
  bh_config_t c = bt_cfg_blank();
  c.backing = BH_BACKING_SIM;
  c.zone_bytes[BH_ZONE_DMA] = dma * MiB;
  c.zone_bytes[BH_ZONE_DMA32] = dma32 * MiB;
  c.zone_bytes[BH_ZONE_NORMAL] = normal * MiB;
  c.zone_bytes[BH_ZONE_MOVABLE] = movable * MiB;
  return c;
}

/* ---- gfp_zone selection ---- */

static void test_zone_selection(void **state) {
  (void)state;
  static const struct {
    unsigned gfp;
    int type;
  } rows[] = {
      {BH_GFP_KERNEL, BH_ZONE_NORMAL},
      {BH_GFP_MOVABLE, BH_ZONE_NORMAL},
      {BH_GFP_RECLAIMABLE, BH_ZONE_NORMAL},
      {BH_GFP_HIGHMEM, BH_ZONE_NORMAL},
      {BH_GFP_THISNODE, BH_ZONE_NORMAL},
      {BH_GFP_USER_MOVABLE, BH_ZONE_MOVABLE},
      {BH_GFP_TRANSHUGE, BH_ZONE_MOVABLE},
      {BH_GFP_DMA, BH_ZONE_DMA},
      {BH_GFP_DMA | BH_GFP_MOVABLE, BH_ZONE_DMA},
      {BH_GFP_DMA32, BH_ZONE_DMA32},
      {BH_GFP_DMA32 | BH_GFP_RECLAIMABLE, BH_ZONE_DMA32},
  };
  bh_config_t c = cfg_zones(4, 8, 8, 8);
  bh_arena_t *a = bt_create(&c);
  uint64_t pages[BH_NR_ZONE_TYPES] = {0};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    for (unsigned order = 0; order <= 3; order += 3) {
      uint64_t pfn = bt_alloc(a, rows[i].gfp, order, 0);
      int z = bt_zone_of(a, pfn);
      if (bt_zone(a, z).type != rows[i].type) {
        print_error("gfp %#x order %u landed in %s, expected %s\n", rows[i].gfp, order,
                    bh_zone_name(bt_zone(a, z).type), bh_zone_name(rows[i].type));
        fail();
      }
      EXPECT_U64(pfn % (1u << order), 0);
      pages[rows[i].type] += 1u << order;
    }
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_dma), pages[BH_ZONE_DMA]);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_dma32), pages[BH_ZONE_DMA32]);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_normal), pages[BH_ZONE_NORMAL]);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_movable), pages[BH_ZONE_MOVABLE]);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_zone_fallback), 0);
  EXPECT_U64(bt_stat(a, BH_STAT_numa_hit), 22);
  EXPECT_U64(bt_stat(a, BH_STAT_numa_miss), 0);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* Without a Movable zone, GFP_HIGHUSER_MOVABLE's preferred zone is Normal: no fallback. */
static void test_user_movable_without_movable_zone(void **state) {
  (void)state;
  bh_config_t c = cfg_zones(0, 8, 8, 0);
  bh_arena_t *a = bt_create(&c);
  uint64_t pfn = bt_alloc(a, BH_GFP_USER_MOVABLE, 0, 0);
  EXPECT_U64(bt_zone(a, bt_zone_of(a, pfn)).type, BH_ZONE_NORMAL);
  EXPECT_U64(pfn, 2048); /* the first Normal top block */
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_zone_fallback), 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_normal), 1);
  bh_arena_destroy(a);
}

/* ---- falling back to lower zones; lowmem_reserve ---- */

/*
 * DMA 4 + DMA32 8 + Normal 8 MiB: lowmem 5120 pages = 20480 KiB, int_sqrt(327680) = 572,
 * pages_min 143.  tmp: DMA 143*1024/5120 = 28, DMA32 and Normal 143*2048/5120 = 57.
 * delta: DMA max(7, 1) = 7, others max(14, 2) = 14.  Reserves: DMA {0, 2048/256 = 8,
 * 4096/256 = 16, 16}, DMA32 {0, 0, 2048/256 = 8, 8}.
 * GFP_KERNEL (highest Normal), fast path at low: Normal 2048 - 71 = 1977, DMA32
 * 2048 - (71 + 8) = 1969, DMA 1024 - (35 + 16) = 973; slow path at min: Normal 71 - 57 = 14,
 * DMA32 79 - (57 + 8) = 14, DMA 51 - (28 + 16) = 7; then ENOSPC.  DMA keeps 44 pages that
 * GFP_DMA (highest DMA, reserve 0) may still take: 44 - 35 = 9 at low, 35 - 28 = 7 at min.
 */
static void test_zone_fallback_and_lowmem_reserve(void **state) {
  (void)state;
  bh_config_t c = cfg_zones(4, 8, 8, 0);
  bh_arena_t *a = bt_create(&c);
  EXPECT_U64(bh_arena_config(a)->min_free_kbytes, 572);
  expect_wmarks(a, 0, 28, 35, 42, (const uint64_t[]){0, 8, 16, 16});
  expect_wmarks(a, 1, 57, 71, 85, (const uint64_t[]){0, 0, 8, 8});
  expect_wmarks(a, 2, 57, 71, 85, (const uint64_t[]){0, 0, 0, 0});

  struct run runs[MAX_RUNS];
  int n = alloc_until_full(a, BH_GFP_KERNEL, 0, runs);
  static const struct run want[] = {
      {0, BH_ZONE_NORMAL, 1977}, {0, BH_ZONE_DMA32, 1969}, {0, BH_ZONE_DMA, 973},
      {0, BH_ZONE_NORMAL, 14},   {0, BH_ZONE_DMA32, 14},   {0, BH_ZONE_DMA, 7},
  };
  expect_runs(runs, n, want, 6);
  EXPECT_U64(bt_zone(a, 0).free_pages, 44);
  EXPECT_U64(bt_zone(a, 1).free_pages, 65);
  EXPECT_U64(bt_zone(a, 2).free_pages, 57);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_normal), 1991);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_dma32), 1983);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_dma), 980);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_zone_fallback), 1969 + 973 + 14 + 7);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_fail), 1);

  n = alloc_until_full(a, BH_GFP_DMA, 0, runs);
  static const struct run want_dma[] = {{0, BH_ZONE_DMA, 16}};
  expect_runs(runs, n, want_dma, 1);
  EXPECT_U64(bt_zone(a, 0).free_pages, 28);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_zone_fallback), 1969 + 973 + 14 + 7);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_fail), 2);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * DMA32 8 + Normal 8 + Movable 8 MiB: lowmem 4096 pages (Movable excluded), int_sqrt(262144)
 * = 512, pages_min 128, tmp 64 for every zone, delta max(16, 2) = 16.  Movable min =
 * clamp(2048/1024, 32, 128) = 32.  Reserves: DMA32 {0, 0, 8, 4096/256 = 16}, Normal
 * {0, 0, 0, 2048/32 = 64}.
 * GFP_HIGHUSER_MOVABLE: Movable 2048 - 48 = 2000, Normal 2048 - (80 + 64) = 1904, DMA32
 * 2048 - (80 + 16) = 1952; min: Movable 48 - 32 = 16, Normal 144 - (64 + 64) = 16, DMA32
 * 96 - (64 + 16) = 16.  GFP_KERNEL on a fresh arena never touches Movable: Normal
 * 2048 - 80 = 1968, DMA32 2048 - 88 = 1960, then 80 - 64 = 16 and 88 - 72 = 16.
 */
static void test_movable_zone(void **state) {
  (void)state;
  bh_config_t c = cfg_zones(0, 8, 8, 8);
  bh_arena_t *a = bt_create(&c);
  expect_wmarks(a, 0, 64, 80, 96, (const uint64_t[]){0, 0, 8, 16});
  expect_wmarks(a, 1, 64, 80, 96, (const uint64_t[]){0, 0, 0, 64});
  expect_wmarks(a, 2, 32, 48, 64, (const uint64_t[]){0, 0, 0, 0});
  struct run runs[MAX_RUNS];
  int n = alloc_until_full(a, BH_GFP_USER_MOVABLE, 0, runs);
  static const struct run want[] = {
      {0, BH_ZONE_MOVABLE, 2000}, {0, BH_ZONE_NORMAL, 1904}, {0, BH_ZONE_DMA32, 1952},
      {0, BH_ZONE_MOVABLE, 16},   {0, BH_ZONE_NORMAL, 16},   {0, BH_ZONE_DMA32, 16},
  };
  expect_runs(runs, n, want, 6);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_movable), 2016);
  EXPECT_U64(bt_stat(a, BH_STAT_extfrag_fallback), 0);
  bh_arena_destroy(a);

  a = bt_create(&c);
  n = alloc_until_full(a, BH_GFP_KERNEL, 0, runs);
  static const struct run want_kernel[] = {
      {0, BH_ZONE_NORMAL, 1968},
      {0, BH_ZONE_DMA32, 1960},
      {0, BH_ZONE_NORMAL, 16},
      {0, BH_ZONE_DMA32, 16},
  };
  expect_runs(runs, n, want_kernel, 4);
  EXPECT_U64(bt_zone(a, 2).free_pages, 2048);
  EXPECT_U64(bt_stat(a, BH_STAT_pgalloc_movable), 0);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* ---- nodes ---- */

/*
 * Two nodes of DMA32 4 + Normal 4 MiB; CPU slot 1 belongs to node 1.  Watermarks (see
 * test_buddy_config "two nodes"): min 32, low 40, DMA32 reserve[Normal] 4.  Node 1's zonelist
 * is N1 Normal, N1 DMA32, N0 Normal, N0 DMA32: GFP_KERNEL from slot 1 takes N1 Normal
 * 1024 - 40 = 984, then N1 DMA32 1024 - 44 = 980, and only then goes remote (dropping
 * ALLOC_NOFRAGMENT on the way): N0 Normal 984, N0 DMA32 980; then the slow path at min
 * walks the same order: 8, 8, 8, 8.
 */
static void test_zonelist_local_node_first(void **state) {
  (void)state;
  bh_config_t c = cfg_zones(0, 4, 4, 0);
  c.nr_nodes = 2;
  bh_arena_t *a = bt_create(&c);
  EXPECT_U64(bt_zone(a, 3).node, 1);
  EXPECT_U64(bt_zone(a, 3).type, BH_ZONE_NORMAL);
  struct run runs[MAX_RUNS];
  int n = alloc_until_full(a, BH_GFP_KERNEL, 1, runs);
  static const struct run want[] = {
      {1, BH_ZONE_NORMAL, 984}, {1, BH_ZONE_DMA32, 980}, {0, BH_ZONE_NORMAL, 984},
      {0, BH_ZONE_DMA32, 980},  {1, BH_ZONE_NORMAL, 8},  {1, BH_ZONE_DMA32, 8},
      {0, BH_ZONE_NORMAL, 8},   {0, BH_ZONE_DMA32, 8},
  };
  expect_runs(runs, n, want, 8);
  EXPECT_U64(bt_stat(a, BH_STAT_numa_hit), 984 + 980 + 8 + 8);
  EXPECT_U64(bt_stat(a, BH_STAT_numa_miss), 984 + 980 + 8 + 8);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_zone_fallback), 980 + 984 + 980 + 8 + 8 + 8);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* __GFP_THISNODE uses only the local node's zones: slot 1 fills node 1 and then fails. */
static void test_thisnode(void **state) {
  (void)state;
  bh_config_t c = cfg_zones(0, 4, 4, 0);
  c.nr_nodes = 2;
  bh_arena_t *a = bt_create(&c);
  struct run runs[MAX_RUNS];
  int n = alloc_until_full(a, BH_GFP_THISNODE, 1, runs);
  static const struct run want[] = {
      {1, BH_ZONE_NORMAL, 984},
      {1, BH_ZONE_DMA32, 980},
      {1, BH_ZONE_NORMAL, 8},
      {1, BH_ZONE_DMA32, 8},
  };
  expect_runs(runs, n, want, 4);
  EXPECT_U64(bt_zone(a, 0).free_pages, 1024);
  EXPECT_U64(bt_zone(a, 1).free_pages, 1024);
  EXPECT_U64(bt_stat(a, BH_STAT_numa_miss), 0);
  /* slot 0 still allocates from node 0 */
  uint64_t pfn = bt_alloc(a, BH_GFP_THISNODE, 0, 0);
  EXPECT_U64(bt_zone(a, bt_zone_of(a, pfn)).node, 0);
  bh_arena_destroy(a);
}

/* ---- ALLOC_NOFRAGMENT ---- */

/*
 * DMA32 4 + Normal 8 MiB, watermarks 0: DMA32 is top block 0; Normal is 1024..3071.
 * Movable 1024 (order 0), 2048 (order 10) and 1536 (order 9) leave Normal with only Movable
 * blocks below pageblock order (1025..1535).  An Unmovable order-0 request (preferred
 * Normal, DMA32 below: ALLOC_NOFRAGMENT) does not fall back below pageblock order in Normal
 * but claims DMA32's free top block: pfn 0, a zone fallback.
 */
static bh_arena_t *nofragment_arena(void) {
  bh_config_t c = cfg_zones(0, 4, 8, 0);
  bt_cfg_no_wmarks(&c);
  bh_arena_t *a = bt_create(&c);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 0, 0), 1024);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 10, 0), 2048);
  EXPECT_U64(bt_alloc(a, BH_GFP_MOVABLE, 9, 0), 1536);
  return a;
}

static void test_nofragment_prefers_lower_zone(void **state) {
  (void)state;
  bh_arena_t *a = nofragment_arena();
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 0);
  EXPECT_U64(bt_stat(a, BH_STAT_alloc_zone_fallback), 1);
  EXPECT_U64(bt_stat(a, BH_STAT_extfrag_fragmenting), 0);
  EXPECT_U64(bt_zone(a, 1).pageblocks[BH_MT_UNMOVABLE], 0);
  /*
   * Fill DMA32 with GFP_DMA32 requests (highest DMA32: no reserve, no NOFRAGMENT).  The next
   * GFP_KERNEL request finds nothing without fragmenting, drops ALLOC_NOFRAGMENT and claims
   * Normal's pageblock 1024 (511 free >= 256): pfn 1025, fragmenting.
   */
  for (unsigned o = 0; o < 10; o++)
    EXPECT_U64(bt_alloc(a, BH_GFP_DMA32, o, 0), 1u << o);
  EXPECT_U64(bt_zone(a, 0).free_pages, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1025);
  EXPECT_U64(bt_stat(a, BH_STAT_extfrag_fragmenting), 1);
  EXPECT_U64(bt_zone(a, 1).pageblocks[BH_MT_UNMOVABLE], 1);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * The counter nofragment_retry ("allocations retried without ALLOC_NOFRAGMENT",
 * include/buddyhint/stats.h) counts the second zonelist walk.  In the state of
 * test_nofragment_prefers_lower_zone, the GFP_KERNEL request that ends at pfn 1025 walked
 * the zonelist once with ALLOC_NOFRAGMENT, failed, and retried without it: 1 retry.
 */
static void test_nofragment_retry_counted(void **state) {
  (void)state;
  bh_arena_t *a = nofragment_arena();
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 0);
  EXPECT_U64(bt_stat(a, BH_STAT_nofragment_retry), 0);
  for (unsigned o = 0; o < 10; o++)
    bt_alloc(a, BH_GFP_DMA32, o, 0);
  EXPECT_U64(bt_alloc(a, BH_GFP_KERNEL, 0, 0), 1025);
  uint64_t retries = bt_stat(a, BH_STAT_nofragment_retry);
  bh_arena_destroy(a); /* before failing, so that sanitizers report no leak */
  EXPECT_U64(retries, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zone_selection),
      cmocka_unit_test(test_user_movable_without_movable_zone),
      cmocka_unit_test(test_zone_fallback_and_lowmem_reserve),
      cmocka_unit_test(test_movable_zone),
      cmocka_unit_test(test_zonelist_local_node_first),
      cmocka_unit_test(test_thisnode),
      cmocka_unit_test(test_nofragment_prefers_lower_zone),
      cmocka_unit_test(test_nofragment_retry_counted),
  };
  return cmocka_run_group_tests_name("buddy_zones", tests, NULL, NULL);
}
