/*
 * Configuration, errors and names, the arena's geometry after creation, and the watermarks,
 * lowmem reserves and pcp sizes computed at "boot".  Expected values are worked out by hand
 * from the kernel's formulas (kernel.md 1.1, 1.7, 1.8), each row shows its arithmetic.
 */
#include "buddy_test.h"

#include <string.h>

/* ---- bh_config_init ---- */

static void test_config_defaults(void **state) {
  (void)state;
  bh_config_t c;
  memset(&c, 0xa5, sizeof c);
  bh_config_init(&c);
  assert_int_equal(c.backing, BH_BACKING_MMAP);
  EXPECT_U64(c.nr_nodes, 1);
  EXPECT_U64(c.zone_bytes[BH_ZONE_DMA], 16 * MiB);
  EXPECT_U64(c.zone_bytes[BH_ZONE_DMA32], 496 * MiB);
  EXPECT_U64(c.zone_bytes[BH_ZONE_NORMAL], 512 * MiB);
  EXPECT_U64(c.zone_bytes[BH_ZONE_MOVABLE], 0);
  EXPECT_U64(c.zone_bytes[BH_ZONE_DMA] + c.zone_bytes[BH_ZONE_DMA32] + c.zone_bytes[BH_ZONE_NORMAL],
             1 * GiB);
  EXPECT_U64(c.max_order, 10);
  EXPECT_U64(c.pageblock_order, 9);
  assert_true(c.mobility_grouping);
  assert_true(c.smp);
  assert_true(c.compact_large_blocks);
  assert_false(c.shuffle);
  EXPECT_U64(c.seed, 1);
  EXPECT_U64(c.min_free_kbytes, 0);
  EXPECT_U64(c.watermark_scale_factor, 10);
  EXPECT_U64(c.watermark_boost_factor, 15000);
  static const unsigned ratio[BH_NR_ZONE_TYPES] = {256, 256, 32, 0};
  for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
    EXPECT_U64(c.lowmem_reserve_ratio[t], ratio[t]);
  assert_true(c.pcp);
  EXPECT_U64(c.nr_cpus, 2);
  assert_int_equal(c.pcp_key, BH_PCP_PER_THREAD);
  EXPECT_U64(c.pcp_batch, 0);
  EXPECT_U64(c.pcp_high, 0);
  assert_true(c.pcp_thp);
  assert_false(c.numa_bind);
  assert_false(c.debug_checks);
  const char *msg = "untouched";
  assert_int_equal(bh_config_validate(&c, &msg), BH_OK);
  assert_null(msg);
}

/* ---- bh_config_validate ---- */

struct bad_config {
  const char *name;
  void (*edit)(bh_config_t *c);
  const char *msg_word; /* the message names what is wrong */
};

static void zone_2mib(bh_config_t *c) { c->zone_bytes[BH_ZONE_NORMAL] = 2 * MiB; }
static void zone_4mib_plus_page(bh_config_t *c) { c->zone_bytes[BH_ZONE_DMA32] += 4096; }
static void zone_odd_small_order(bh_config_t *c) {
  c->max_order = 5; /* largest block 128 KiB */
  c->pageblock_order = 5;
  c->zone_bytes[BH_ZONE_DMA] = 64 * 1024;
}
static void no_memory(bh_config_t *c) { memset(c->zone_bytes, 0, sizeof c->zone_bytes); }
static void pb_above_max(bh_config_t *c) { c->pageblock_order = 11; }
static void pb_zero(bh_config_t *c) { c->pageblock_order = 0; }
static void max_order_zero(bh_config_t *c) { c->max_order = 0; }
static void max_order_19(bh_config_t *c) {
  c->max_order = 19;
  c->pageblock_order = 9;
}
static void nodes_zero(bh_config_t *c) { c->nr_nodes = 0; }
static void nodes_nine(bh_config_t *c) { c->nr_nodes = 9; }
static void cpus_zero(bh_config_t *c) { c->nr_cpus = 0; }
static void cpus_1025(bh_config_t *c) { c->nr_cpus = 1025; }
static void wsf_zero(bh_config_t *c) { c->watermark_scale_factor = 0; }
static void wsf_3001(bh_config_t *c) { c->watermark_scale_factor = 3001; }
static void min_free_huge(bh_config_t *c) { c->min_free_kbytes = 64ull * 1024 * 1024 + 1; }
static void batch_65536(bh_config_t *c) { c->pcp_batch = 65536; }
static void high_below_4_batch(bh_config_t *c) {
  c->pcp_batch = 8;
  c->pcp_high = 31;
}
static void bad_backing(bh_config_t *c) { c->backing = (enum bh_backing)3; }
static void bad_pcp_key(bh_config_t *c) { c->pcp_key = (enum bh_pcp_key)2; }
static void numa_bind_sim(bh_config_t *c) {
  c->backing = BH_BACKING_SIM;
  c->numa_bind = true;
}
static void too_large(bh_config_t *c) {
  c->backing = BH_BACKING_SIM;
  c->zone_bytes[BH_ZONE_NORMAL] = 16ull * 1024 * GiB; /* 2^32 pages */
}

static const struct bad_config bad_configs[] = {
    {"Normal 2 MiB (not a multiple of 4 MiB)", zone_2mib, "multiple"},
    {"DMA32 496 MiB + 4 KiB", zone_4mib_plus_page, "multiple"},
    {"DMA 64 KiB with max_order 5 (128 KiB blocks)", zone_odd_small_order, "multiple"},
    {"every zone empty", no_memory, "memory"},
    {"pageblock_order 11 > max_order 10", pb_above_max, "pageblock_order"},
    {"pageblock_order 0", pb_zero, "pageblock_order"},
    {"max_order 0", max_order_zero, "max_order"},
    {"max_order 19", max_order_19, "max_order"},
    {"nr_nodes 0", nodes_zero, "nr_nodes"},
    {"nr_nodes 9", nodes_nine, "nr_nodes"},
    {"nr_cpus 0", cpus_zero, "nr_cpus"},
    {"nr_cpus 1025", cpus_1025, "nr_cpus"},
    {"watermark_scale_factor 0", wsf_zero, "watermark_scale_factor"},
    {"watermark_scale_factor 3001", wsf_3001, "watermark_scale_factor"},
    {"min_free_kbytes above 64 GiB", min_free_huge, "min_free_kbytes"},
    {"pcp_batch 65536", batch_65536, "pcp_batch"},
    {"pcp_high 31 < 4 * pcp_batch 8", high_below_4_batch, "pcp_high"},
    {"backing 3", bad_backing, "backing"},
    {"pcp_key 2", bad_pcp_key, "pcp_key"},
    {"numa_bind on sim backing", numa_bind_sim, "numa_bind"},
    {"16 TiB arena", too_large, "large"},
};

static void test_config_rejections(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_configs / sizeof bad_configs[0]; i++) {
    const struct bad_config *bc = &bad_configs[i];
    bh_config_t c;
    bh_config_init(&c);
    bc->edit(&c);
    const char *msg = NULL;
    int err = bh_config_validate(&c, &msg);
    if (err != BH_EINVAL || !msg || !strstr(msg, bc->msg_word)) {
      print_error("%s: validate = %s, message \"%s\" (expected EINVAL naming \"%s\")\n", bc->name,
                  bh_err_name(err), msg ? msg : "(null)", bc->msg_word);
      fail();
    }
    assert_int_equal(bh_config_validate(&c, NULL), BH_EINVAL);
    bh_arena_t *a = (bh_arena_t *)&c; /* any non-NULL value: must be reset to NULL */
    assert_int_equal(bh_arena_create(&c, &a), BH_EINVAL);
    assert_null(a);
  }
  const char *msg = NULL;
  assert_int_equal(bh_config_validate(NULL, &msg), BH_EINVAL);
  assert_non_null(msg);
  assert_int_equal(bh_arena_create(NULL, NULL), BH_EINVAL);
}

/* Edge values that are valid. */
static void test_config_accepts_bounds(void **state) {
  (void)state;
  bh_config_t c;
  bh_config_init(&c);
  c.max_order = 18;
  c.pageblock_order = 18;
  c.zone_bytes[BH_ZONE_DMA] = 0;
  c.zone_bytes[BH_ZONE_DMA32] = 0;
  c.zone_bytes[BH_ZONE_NORMAL] = 1 * GiB; /* one 1 GiB block */
  c.nr_nodes = 8;
  c.nr_cpus = 1024;
  c.watermark_scale_factor = 3000;
  c.pcp_batch = 65535;
  c.pcp_high = 4 * 65535;
  assert_int_equal(bh_config_validate(&c, NULL), BH_OK);
  bh_config_init(&c);
  c.max_order = 1;
  c.pageblock_order = 1;
  c.zone_bytes[BH_ZONE_DMA] = 8192;
  c.zone_bytes[BH_ZONE_DMA32] = 0;
  c.zone_bytes[BH_ZONE_NORMAL] = 0;
  c.watermark_scale_factor = 1;
  c.min_free_kbytes = 64ull * 1024 * 1024;
  c.pcp_batch = 8;
  c.pcp_high = 32;
  assert_int_equal(bh_config_validate(&c, NULL), BH_OK);
}

/* ---- errors and names ---- */

static const struct {
  int code;
  const char *name, *msg;
} errors[] = {
    {BH_OK, "OK", "success"},
    {-1, "EINVAL", "invalid argument"},
    {-2, "ENOMEM", "out of memory"},
    {-3, "ENOSPC", "no free block satisfies the request"},
    {-4, "EFAULT", "address or pfn outside the arena"},
    {-5, "EALIGN", "address or pfn not aligned to the order"},
    {-6, "ENOTALLOC", "not the head of an allocated block (double free?)"},
    {-7, "EORDER", "order does not match the allocated block"},
    {-8, "ESYS", "a system call failed (see errno)"},
    {-9, "ENOTSUP", "not supported in this configuration"},
    {-10, "ENOENT", "no such name"},
    {-11, "EBUSY", "resource busy"},
    {-12, "EFORMAT", "malformed input"},
    {-13, "EIO", "input/output error"},
    {-14, "?", "unknown error"},
    {1, "?", "unknown error"},
    {-1000, "?", "unknown error"},
};

static void test_errors(void **state) {
  (void)state;
  assert_int_equal(BH_EINVAL, -1);
  assert_int_equal(BH_ENOTALLOC, -6);
  assert_int_equal(BH_EIO, -13);
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
    assert_string_equal(bh_err_name(errors[i].code), errors[i].name);
    assert_string_equal(bh_strerror(errors[i].code), errors[i].msg);
  }
}

static void test_names(void **state) {
  (void)state;
  static const char *zones[] = {"DMA", "DMA32", "Normal", "Movable"};
  static const char *mts[] = {"Unmovable", "Movable", "Reclaimable", "HighAtomic", "Isolate"};
  for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
    assert_string_equal(bh_zone_name(t), zones[t]);
  for (int m = 0; m < BH_MT_TYPES; m++)
    assert_string_equal(bh_migratetype_name(m), mts[m]);
  assert_string_equal(bh_zone_name(-1), "?");
  assert_string_equal(bh_zone_name(BH_NR_ZONE_TYPES), "?");
  assert_string_equal(bh_migratetype_name(BH_MT_TYPES), "?");
  assert_non_null(bh_version());
  assert_non_null(bh_stat_name(0));
  assert_null(bh_stat_name(BH_NR_STATS));
  assert_null(bh_stat_help(-1));
  assert_string_equal(bh_stat_name(BH_STAT_pgalloc_normal), "pgalloc_normal");
}

/* gfp_zone() and gfp_migratetype() on x86-64 (no HIGHMEM zone: __GFP_HIGHMEM alone is Normal). */
static void test_gfp_tables(void **state) {
  (void)state;
  static const struct {
    unsigned gfp;
    int zone, mt;
  } rows[] = {
      {BH_GFP_KERNEL, BH_ZONE_NORMAL, BH_MT_UNMOVABLE},
      {BH_GFP_DMA, BH_ZONE_DMA, BH_MT_UNMOVABLE},
      {BH_GFP_DMA32, BH_ZONE_DMA32, BH_MT_UNMOVABLE},
      {BH_GFP_HIGHMEM, BH_ZONE_NORMAL, BH_MT_UNMOVABLE},
      {BH_GFP_MOVABLE, BH_ZONE_NORMAL, BH_MT_MOVABLE},
      {BH_GFP_USER_MOVABLE, BH_ZONE_MOVABLE, BH_MT_MOVABLE},
      {BH_GFP_DMA | BH_GFP_MOVABLE, BH_ZONE_DMA, BH_MT_MOVABLE},
      {BH_GFP_DMA32 | BH_GFP_MOVABLE, BH_ZONE_DMA32, BH_MT_MOVABLE},
      {BH_GFP_RECLAIMABLE, BH_ZONE_NORMAL, BH_MT_RECLAIMABLE},
      {BH_GFP_DMA32 | BH_GFP_RECLAIMABLE, BH_ZONE_DMA32, BH_MT_RECLAIMABLE},
      {BH_GFP_HIGH | BH_GFP_ATOMIC, BH_ZONE_NORMAL, BH_MT_UNMOVABLE},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    EXPECT_U64(bh_gfp_zone(rows[i].gfp), rows[i].zone);
    EXPECT_U64(bh_gfp_migratetype(rows[i].gfp), rows[i].mt);
  }
}

/* ---- geometry ---- */

/* Every zone is free, in top-order Movable blocks only, every pageblock Movable. */
static void expect_fresh_zone(const bh_zone_info_t *zi, unsigned max_order, unsigned pb_order) {
  EXPECT_U64(zi->managed_pages, zi->spanned_pages);
  EXPECT_U64(zi->free_pages, zi->managed_pages);
  EXPECT_U64(zi->isolated_pages, 0);
  for (unsigned o = 0; o <= max_order; o++) {
    uint64_t want = o == max_order ? zi->managed_pages >> max_order : 0;
    EXPECT_U64(zi->nr_free[o], want);
    for (int mt = 0; mt < BH_MT_TYPES; mt++)
      EXPECT_U64(zi->nr_free_mt[o][mt], mt == BH_MT_MOVABLE ? want : 0);
  }
  for (int mt = 0; mt < BH_MT_TYPES; mt++)
    EXPECT_U64(zi->pageblocks[mt], mt == BH_MT_MOVABLE ? zi->managed_pages >> pb_order : 0);
}

static void test_geometry_default(void **state) {
  (void)state;
  bh_arena_t *a = bt_create(NULL); /* defaults: mmap, 1 GiB, pcp on */
  EXPECT_U64(bh_arena_pages(a), 262144);
  assert_non_null(bh_arena_base(a));
  EXPECT_U64((uintptr_t)bh_arena_base(a) % (4 * MiB), 0); /* aligned like a max-order block */
  assert_int_equal(bh_zone_count(a), 3);
  static const struct {
    int type;
    uint64_t start, pages;
  } want[] = {
      {BH_ZONE_DMA, 0, 4096}, {BH_ZONE_DMA32, 4096, 126976}, {BH_ZONE_NORMAL, 131072, 131072}};
  for (int i = 0; i < 3; i++) {
    bh_zone_info_t zi = bt_zone(a, i);
    EXPECT_U64(zi.node, 0);
    EXPECT_U64(zi.type, want[i].type);
    EXPECT_U64(zi.start_pfn, want[i].start);
    EXPECT_U64(zi.spanned_pages, want[i].pages);
    EXPECT_U64(zi.pcp_pages, 0);
    expect_fresh_zone(&zi, 10, 9);
  }
  EXPECT_U64(bt_zone(a, 0).nr_free[10], 4);
  EXPECT_U64(bt_zone(a, 1).nr_free[10], 124);
  EXPECT_U64(bt_zone(a, 2).nr_free[10], 128);
  bh_zone_info_t zi;
  assert_int_equal(bh_zone_info(a, 3, &zi), BH_EINVAL);
  assert_int_equal(bh_zone_info(a, -1, &zi), BH_EINVAL);
  bt_expect_clean(a);
  bh_arena_destroy(a);
  bh_arena_destroy(NULL);
}

/* Two nodes: each gets every zone, node-major and low to high, pfns contiguous. */
static void test_geometry_two_nodes(void **state) {
  (void)state;
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  c.nr_nodes = 2;
  c.zone_bytes[BH_ZONE_MOVABLE] = 64 * MiB;
  bh_arena_t *a = bt_create(&c);
  assert_null(bh_arena_base(a));
  EXPECT_U64(bh_arena_pages(a), 2 * (262144 + 16384));
  assert_int_equal(bh_zone_count(a), 8);
  static const uint64_t pages[BH_NR_ZONE_TYPES] = {4096, 126976, 131072, 16384};
  uint64_t pfn = 0;
  for (int n = 0; n < 2; n++)
    for (int t = 0; t < BH_NR_ZONE_TYPES; t++) {
      int i = n * 4 + t;
      bh_zone_info_t zi = bt_zone(a, i);
      EXPECT_U64(zi.node, n);
      EXPECT_U64(zi.type, t);
      EXPECT_U64(zi.start_pfn, pfn);
      EXPECT_U64(zi.spanned_pages, pages[t]);
      expect_fresh_zone(&zi, 10, 9);
      EXPECT_U64(bt_zone_index(a, n, t), i);
      pfn += pages[t];
    }
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* Absent zones are skipped; with max_order 6 / pageblock 5 the block sizes follow. */
static void test_geometry_small_orders(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_blank();
  c.max_order = 6;
  c.pageblock_order = 5;
  c.zone_bytes[BH_ZONE_DMA32] = 512 * 1024;
  c.zone_bytes[BH_ZONE_MOVABLE] = 256 * 1024;
  bh_arena_t *a = bt_create(&c);
  assert_int_equal(bh_zone_count(a), 2);
  bh_zone_info_t z0 = bt_zone(a, 0), z1 = bt_zone(a, 1);
  EXPECT_U64(z0.type, BH_ZONE_DMA32);
  EXPECT_U64(z1.type, BH_ZONE_MOVABLE);
  EXPECT_U64(z1.start_pfn, 128);
  expect_fresh_zone(&z0, 6, 5);
  expect_fresh_zone(&z1, 6, 5);
  EXPECT_U64(z0.nr_free[6], 2);
  EXPECT_U64(z0.pageblocks[BH_MT_MOVABLE], 4);
  bh_arena_destroy(a);
}

/* ---- watermarks, lowmem_reserve, pcp sizes ---- */

struct zone_wmarks {
  int node, type;
  uint64_t min, low, high;
  uint64_t reserve[BH_NR_ZONE_TYPES];
  unsigned batch, pcp_high;
};

struct wmark_layout {
  const char *name;
  void (*setup)(bh_config_t *c);
  uint64_t min_free_kbytes;
  int nr_zones;
  struct zone_wmarks z[4];
};

static void layout_default(bh_config_t *c) { (void)c; }

static void layout_movable(bh_config_t *c) {
  c->zone_bytes[BH_ZONE_NORMAL] = 256 * MiB;
  c->zone_bytes[BH_ZONE_MOVABLE] = 256 * MiB;
}

static void layout_tiny(bh_config_t *c) {
  memset(c->zone_bytes, 0, sizeof c->zone_bytes);
  c->max_order = 6;
  c->pageblock_order = 5;
  c->zone_bytes[BH_ZONE_NORMAL] = 512 * 1024;
}

static void layout_two_nodes(bh_config_t *c) {
  memset(c->zone_bytes, 0, sizeof c->zone_bytes);
  c->nr_nodes = 2;
  c->zone_bytes[BH_ZONE_DMA32] = 4 * MiB;
  c->zone_bytes[BH_ZONE_NORMAL] = 4 * MiB;
}

static void layout_explicit(bh_config_t *c) {
  memset(c->zone_bytes, 0, sizeof c->zone_bytes);
  c->zone_bytes[BH_ZONE_NORMAL] = 64 * MiB;
  c->min_free_kbytes = 1024;
  c->watermark_scale_factor = 200;
}

static void layout_ratios(bh_config_t *c) {
  c->zone_bytes[BH_ZONE_MOVABLE] = 128 * MiB;
  c->lowmem_reserve_ratio[BH_ZONE_DMA] = 0; /* no reserve in DMA */
  c->lowmem_reserve_ratio[BH_ZONE_DMA32] = 100;
  c->lowmem_reserve_ratio[BH_ZONE_NORMAL] = 1;
}

static const struct wmark_layout layouts[] = {
    /*
     * 1 GiB: lowmem 262144 pages = 1048576 KiB; int_sqrt(1048576 * 16) = 4096 KiB;
     * pages_min 1024.  tmp = 1024 * managed / 262144: DMA 16, DMA32 496, Normal 512.
     * delta = max(tmp/4, managed*10/10000): DMA max(4, 4) = 4, DMA32 max(124, 126) = 126,
     * Normal max(128, 131) = 131.  Reserves /256: DMA 126976/256 = 496, 258048/256 = 1008;
     * DMA32 131072/256 = 512.  batch: min(managed>>10, 256)/4 -> 2^n-1: DMA 4/4 = 1 -> 0 -> 1,
     * DMA32 124/4 = 31 -> 46 -> 31, Normal 128/4 = 32 -> 48 -> 31; high = low / 2 CPUs.
     */
    {"default 1 GiB",
     layout_default,
     4096,
     3,
     {{0, BH_ZONE_DMA, 16, 20, 24, {0, 496, 1008, 1008}, 1, 10},
      {0, BH_ZONE_DMA32, 496, 622, 748, {0, 0, 512, 512}, 31, 311},
      {0, BH_ZONE_NORMAL, 512, 643, 774, {0, 0, 0, 0}, 31, 321}}},
    /*
     * DMA 16 + DMA32 496 + Normal 256 + Movable 256 MiB: lowmem 196608 pages = 786432 KiB;
     * int_sqrt(12582912) = 3547 (3547^2 = 12581209); pages_min 886.
     * tmp: DMA 886*4096/196608 = 18, DMA32 886*126976/196608 = 572, Normal and Movable
     * 886*65536/196608 = 295.  delta: DMA max(4, 4), DMA32 max(143, 126), Normal/Movable
     * max(73, 65).  Movable min = clamp(65536/1024 = 64, 32, 128).  Reserves: DMA /256:
     * 496, 192512/256 = 752, 258048/256 = 1008; DMA32 /256: 256, 512; Normal /32: 2048.
     * batch Normal/Movable 64/4 = 16 -> 24 -> 15; high: 22/2, 715/2, 368/2, 137/2.
     */
    {"with a Movable zone",
     layout_movable,
     3547,
     4,
     {{0, BH_ZONE_DMA, 18, 22, 26, {0, 496, 752, 1008}, 1, 11},
      {0, BH_ZONE_DMA32, 572, 715, 858, {0, 0, 256, 512}, 31, 357},
      {0, BH_ZONE_NORMAL, 295, 368, 441, {0, 0, 0, 2048}, 15, 184},
      {0, BH_ZONE_MOVABLE, 64, 137, 210, {0, 0, 0, 0}, 15, 68}}},
    /*
     * Normal 512 KiB (128 pages, max_order 6): int_sqrt(512 * 16) = 90, clamped up to 128 KiB;
     * pages_min 32; delta max(8, 0) = 8.  batch 1; high_min max(40/2, 4) = 20 exceeds
     * high_max max(128/8/2, 4) = 8, so pcp->high = clamp(high, 20, 8) = 8 in effect.
     */
    {"tiny zone: min_free_kbytes clamped to 128",
     layout_tiny,
     128,
     1,
     {{0, BH_ZONE_NORMAL, 32, 40, 48, {0, 0, 0, 0}, 1, 8}}},
    /*
     * Two nodes of DMA32 4 + Normal 4 MiB: lowmem counts both nodes, 4096 pages = 16384 KiB;
     * int_sqrt(262144) = 512; pages_min 128; every zone tmp 128*1024/4096 = 32, delta
     * max(8, 1) = 8.  DMA32 reserve 1024/256 = 4 per node.  One CPU slot per node: high 40.
     */
    {"two nodes",
     layout_two_nodes,
     512,
     4,
     {{0, BH_ZONE_DMA32, 32, 40, 48, {0, 0, 4, 4}, 1, 40},
      {0, BH_ZONE_NORMAL, 32, 40, 48, {0, 0, 0, 0}, 1, 40},
      {1, BH_ZONE_DMA32, 32, 40, 48, {0, 0, 4, 4}, 1, 40},
      {1, BH_ZONE_NORMAL, 32, 40, 48, {0, 0, 0, 0}, 1, 40}}},
    /*
     * Normal 64 MiB with min_free_kbytes 1024 and scale factor 200: pages_min 256, delta
     * max(64, 16384*200/10000 = 327) = 327.  batch 16/4 = 4 -> 6 -> 3; high 583/2 = 291.
     */
    {"explicit min_free_kbytes and scale factor",
     layout_explicit,
     1024,
     1,
     {{0, BH_ZONE_NORMAL, 256, 583, 910, {0, 0, 0, 0}, 3, 291}}},
    /*
     * Default + Movable 128 MiB with ratios {0, 100, 1, 0}: lowmem 262144 pages as in the
     * default row (Movable is not lowmem), so DMA/DMA32/Normal watermarks are unchanged;
     * Movable tmp = 1024*32768/262144 = 128, min clamp(32, 32, 128) = 32, delta max(32, 32).
     * Reserves: DMA 0 (ratio 0); DMA32 131072/100 = 1310, 163840/100 = 1638; Normal 32768/1.
     */
    {"lowmem_reserve ratios",
     layout_ratios,
     4096,
     4,
     {{0, BH_ZONE_DMA, 16, 20, 24, {0, 0, 0, 0}, 1, 10},
      {0, BH_ZONE_DMA32, 496, 622, 748, {0, 0, 1310, 1638}, 31, 311},
      {0, BH_ZONE_NORMAL, 512, 643, 774, {0, 0, 0, 32768}, 31, 321},
      {0, BH_ZONE_MOVABLE, 32, 64, 96, {0, 0, 0, 0}, 7, 32}}},
};

static void expect_zone_wmarks(bh_arena_t *a, int i, const struct zone_wmarks *w,
                               const char *layout) {
  bh_zone_info_t zi = bt_zone(a, i);
  if (zi.node != w->node || zi.type != w->type || zi.wmark_min != w->min ||
      zi.wmark_low != w->low || zi.wmark_high != w->high || zi.pcp_batch != w->batch ||
      zi.pcp_high != w->pcp_high || memcmp(zi.lowmem_reserve, w->reserve, sizeof w->reserve)) {
    print_error("%s, zone %d: got node %d %s min %llu low %llu high %llu reserve {%llu %llu "
                "%llu %llu} batch %u high %u\n",
                layout, i, zi.node, bh_zone_name(zi.type), (unsigned long long)zi.wmark_min,
                (unsigned long long)zi.wmark_low, (unsigned long long)zi.wmark_high,
                (unsigned long long)zi.lowmem_reserve[0], (unsigned long long)zi.lowmem_reserve[1],
                (unsigned long long)zi.lowmem_reserve[2], (unsigned long long)zi.lowmem_reserve[3],
                zi.pcp_batch, zi.pcp_high);
    print_error("%*s  expected node %d %s min %llu low %llu high %llu reserve {%llu %llu %llu "
                "%llu} batch %u high %u\n",
                (int)strlen(layout), "", w->node, bh_zone_name(w->type), (unsigned long long)w->min,
                (unsigned long long)w->low, (unsigned long long)w->high,
                (unsigned long long)w->reserve[0], (unsigned long long)w->reserve[1],
                (unsigned long long)w->reserve[2], (unsigned long long)w->reserve[3], w->batch,
                w->pcp_high);
    fail();
  }
  EXPECT_U64(zi.wmark_boost, 0);
}

static void test_watermarks(void **state) {
  (void)state;
  for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
    const struct wmark_layout *wl = &layouts[l];
    bh_config_t c;
    bh_config_init(&c);
    c.backing = BH_BACKING_SIM;
    wl->setup(&c);
    bh_arena_t *a = bt_create(&c);
    assert_int_equal(bh_zone_count(a), wl->nr_zones);
    EXPECT_U64(bh_arena_config(a)->min_free_kbytes, wl->min_free_kbytes);
    for (int i = 0; i < wl->nr_zones; i++)
      expect_zone_wmarks(a, i, &wl->z[i], wl->name);
    bh_arena_destroy(a);
  }
}

/*
 * min_free_kbytes at the top clamp: an 8 TiB sim Normal zone (2^31 pages; 1 GiB blocks so
 * that creation touches few descriptors).  int_sqrt(2^33 KiB * 16) = 370727 > 262144.
 * pages_min 65536 = tmp; delta = max(16384, 2^31*10/10000 = 2147483); batch 256/4 = 64 ->
 * 96 -> 63; high 2213019/2 = 1106509.
 */
static void test_watermarks_top_clamp(void **state) {
  (void)state;
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, 8192 * GiB);
  c.backing = BH_BACKING_SIM;
  c.max_order = 18;
  c.pageblock_order = 18;
  c.pcp = true;
  bh_arena_t *a = NULL;
  int err = bh_arena_create(&c, &a);
  if (err == BH_ENOMEM) {
    print_message("8 TiB sim arena: not enough address space here, skipped\n");
    skip();
  }
  assert_int_equal(err, BH_OK);
  EXPECT_U64(bh_arena_config(a)->min_free_kbytes, 262144);
  const struct zone_wmarks w = {0, BH_ZONE_NORMAL, 65536, 2213019, 4360502, {0}, 63, 1106509};
  expect_zone_wmarks(a, 0, &w, "8 TiB");
  EXPECT_U64(bt_zone(a, 0).nr_free[18], 8192);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_defaults),
      cmocka_unit_test(test_config_rejections),
      cmocka_unit_test(test_config_accepts_bounds),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_gfp_tables),
      cmocka_unit_test(test_geometry_default),
      cmocka_unit_test(test_geometry_two_nodes),
      cmocka_unit_test(test_geometry_small_orders),
      cmocka_unit_test(test_watermarks),
      cmocka_unit_test(test_watermarks_top_clamp),
  };
  return cmocka_run_group_tests_name("buddy_config", tests, NULL, NULL);
}
