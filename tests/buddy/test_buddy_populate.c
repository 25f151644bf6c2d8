/*
 * Starting from a machine's state (bh_arena_populate), joining pages allocated before the
 * trace (bh_arena_adopt), and allocating the block a kernel chose (bh_alloc_pfn_at).
 *
 * The state is crafted by a seeded random workload in one arena, read out of it (free blocks
 * in pfn order, pageblock types, pcp lists), and given to a second arena: the second's
 * /proc/buddyinfo and /proc/pagetypeinfo dumps must equal the first's byte for byte, and the
 * invariant checker must find nothing.  The same with an explicit layout shaped like an x86
 * machine: DMA from pfn 1, a hole in DMA32, a Normal zone that ends inside a max-order block.
 */
#include "buddy_test.h"
#include "test_rng.h"

#include "buddy/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A populate spec read out of an arena. */
struct state {
  bh_populate_t pop;
  bh_block_run_t *free;
  bh_pcp_block_t *pcp;
  uint8_t *pb;
};

static void read_state(bh_arena_t *a, struct state *st) {
  memset(st, 0, sizeof(*st));
  st->free = calloc(a->nr_pages, sizeof(*st->free));
  st->pcp = calloc(a->nr_pages, sizeof(*st->pcp));
  st->pb = calloc((a->nr_pages >> a->pb_order) + 1, 1);
  assert_non_null(st->free);
  size_t nf = 0, np = 0;
  for (uint64_t b = 0; b < a->nr_pages >> a->pb_order; b++)
    st->pb[b] = a->pageblock[b] & BH__PB_ABSENT ? BH_PAGEBLOCK_ABSENT : a->pageblock[b] & 7;
  /* free blocks in pfn order: the populated arena's lists are in pfn order too, which is
   * not the first's order, and the dumps do not show list order */
  for (uint64_t p = 0; p < a->nr_pages; p++)
    if (a->pages[p].flags & BH__PG_BUDDY)
      st->free[nf++] = (bh_block_run_t){p, 1, a->pages[p].order};
  for (int z = 0; z < a->nr_zones; z++)
    for (unsigned c = 0; a->zones[z].pcp && c < a->cfg.nr_cpus; c++)
      for (unsigned l = 0; l < BH__NR_PCP_LISTS; l++) {
        uint32_t head = a->zones[z].pcp[c].head + l;
        for (uint32_t x = a->pages[head].next; x != head; x = a->pages[x].next)
          st->pcp[np++] =
              (bh_pcp_block_t){.pfn = x, .order = a->pages[x].order, .cpu = (uint16_t)c};
      }
  st->pop.pageblock_mt = st->pb;
  st->pop.nr_pageblocks = a->nr_pages >> a->pb_order;
  st->pop.free = st->free;
  st->pop.nr_free = nf;
  st->pop.pcp = st->pcp;
  st->pop.nr_pcp = np;
}

static void free_state(struct state *st) {
  free(st->free);
  free(st->pcp);
  free(st->pb);
}

/* A seeded mix of allocations of every mobility and order 0..10, half of them freed again. */
static void churn(bh_arena_t *a, uint64_t seed, int rounds) {
  static const unsigned gfps[] = {BH_GFP_USER_MOVABLE, BH_GFP_KERNEL, BH_GFP_RECLAIMABLE,
                                  BH_GFP_USER_MOVABLE, BH_GFP_DMA32};
  uint64_t *live = calloc((size_t)rounds, sizeof(uint64_t));
  unsigned *ord = calloc((size_t)rounds, sizeof(unsigned));
  int n = 0;
  uint64_t x = seed;
  for (int i = 0; i < rounds; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    unsigned order = (x >> 8) % 16 < 12 ? 0 : (unsigned)((x >> 16) % 11);
    uint64_t pfn;
    if (bh_alloc_pfn(a, gfps[(x >> 24) % 5], order, (int)((x >> 32) & 1), &pfn) == 0) {
      live[n] = pfn;
      ord[n++] = order;
    }
    if (n && (x >> 40) % 3 == 0) {
      int k = (int)((x >> 44) % (uint64_t)n);
      bt_free(a, live[k], ord[k], (int)((x >> 50) & 1));
      live[k] = live[--n];
      ord[k] = ord[n];
    }
  }
  free(live);
  free(ord);
}

/* A's state given to a new arena of the same configuration: the same dumps, and clean. */
static bh_arena_t *copy_state(bh_arena_t *a, const bh_config_t *cfg) {
  struct state st;
  read_state(a, &st);
  bh_arena_t *b = bt_create(cfg);
  const char *why = NULL;
  int err = bh_arena_populate(b, &st.pop, &why);
  if (err)
    fail_msg("populate: %s (%s)", bh_strerror(err), why ? why : "");
  bt_expect_clean(b);
  char *da = bt_dump(a, bh_dump_buddyinfo), *db = bt_dump(b, bh_dump_buddyinfo);
  bt_expect_text(db, da, "buddyinfo of the populated arena");
  free(da);
  free(db);
  da = bt_dump(a, bh_dump_pagetypeinfo);
  db = bt_dump(b, bh_dump_pagetypeinfo);
  bt_expect_text(db, da, "pagetypeinfo of the populated arena");
  free(da);
  free(db);
  for (int z = 0; z < bh_zone_count(a); z++) {
    bh_zone_info_t za = bt_zone(a, z), zb = bt_zone(b, z);
    EXPECT_U64(zb.free_pages, za.free_pages);
    EXPECT_U64(zb.pcp_pages, za.pcp_pages);
  }
  free_state(&st);
  return b;
}

static bh_config_t small_cfg(void) {
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  cfg.zone_bytes[BH_ZONE_DMA] = 16 * MiB;
  cfg.zone_bytes[BH_ZONE_DMA32] = 112 * MiB;
  cfg.zone_bytes[BH_ZONE_NORMAL] = 128 * MiB;
  cfg.nr_cpus = 2;
  cfg.smp = false;
  return cfg;
}

static void test_populate_round_trip(void **state) {
  (void)state;
  bh_config_t cfg = small_cfg();
  for (uint64_t seed = 1; seed <= 3; seed++) {
    bh_arena_t *a = bt_create(&cfg);
    churn(a, seed * 0x9e3779b97f4a7c15ull, 30000);
    bt_expect_clean(a);
    bh_arena_t *b = copy_state(a, &cfg);
    bh_arena_destroy(a);
    bh_arena_destroy(b);
  }
}

/* An x86-shaped machine: DMA 1..4095 (a hole in it), DMA32 with 64 MiB missing at its top, a
 * Normal zone of 100 MiB + 12 KiB, which ends inside a max-order block. */
static bh_config_t machine_cfg(void) {
  bh_config_t cfg = small_cfg();
  cfg.nr_layout_zones = 3;
  cfg.layout_zones[0] = (bh_zone_layout_t){.node = 0,
                                           .type = BH_ZONE_DMA,
                                           .start_pfn = 1,
                                           .spanned_pages = 4095,
                                           .present_pages = 3998,
                                           .managed_pages = 3840};
  cfg.layout_zones[1] = (bh_zone_layout_t){.node = 0,
                                           .type = BH_ZONE_DMA32,
                                           .start_pfn = 4096,
                                           .spanned_pages = 0x10000 - 4096,
                                           .present_pages = 0xc000 - 4096,
                                           .managed_pages = 0xb000};
  cfg.layout_zones[2] = (bh_zone_layout_t){.node = 0,
                                           .type = BH_ZONE_NORMAL,
                                           .start_pfn = 0x10000,
                                           .spanned_pages = 25603,
                                           .present_pages = 25603,
                                           .managed_pages = 25000};
  return cfg;
}

static void test_explicit_layout(void **state) {
  (void)state;
  bh_config_t cfg = machine_cfg();
  bh_arena_t *a = bt_create(&cfg);
  bt_expect_clean(a);
  /* the spans, as a kernel prints them; pfn 0 and the pages past Normal's end are absent */
  bh_zone_info_t dma = bt_zone(a, 0), normal = bt_zone(a, 2);
  EXPECT_U64(dma.start_pfn, 1);
  EXPECT_U64(dma.spanned_pages, 4095);
  EXPECT_U64(dma.present_pages, 3998);
  EXPECT_U64(dma.free_pages, 4095);
  EXPECT_U64(normal.free_pages, 25603);
  /* pagetypeinfo counts what the kernel counts: 8 DMA pageblocks, 51 of Normal (the last
   * pfn counted is 0x10000 + 50 * 512) */
  EXPECT_U64(dma.pageblocks[BH_MT_MOVABLE], 8);
  EXPECT_U64(normal.pageblocks[BH_MT_MOVABLE], 51);
  EXPECT_U64(bh_free_pfn(a, 0, 0, 0), BH_ENOTALLOC); /* absent, allocated for good */
  /* the hole: a state in which DMA32's top 64 MiB are absent and allocated */
  churn(a, 42, 20000);
  struct state st;
  read_state(a, &st);
  for (uint64_t b = 0xc000 >> 9; b < 0x10000 >> 9; b++)
    st.pb[b] = BH_PAGEBLOCK_ABSENT;
  size_t k = 0;
  for (size_t i = 0; i < st.pop.nr_free; i++) /* no free block in the hole */
    if (!(st.free[i].pfn >= 0xc000 && st.free[i].pfn < 0x10000))
      st.free[k++] = st.free[i];
  st.pop.nr_free = k;
  k = 0;
  for (size_t i = 0; i < st.pop.nr_pcp; i++)
    if (!(st.pcp[i].pfn >= 0xc000 && st.pcp[i].pfn < 0x10000))
      st.pcp[k++] = st.pcp[i];
  st.pop.nr_pcp = k;
  bh_arena_t *b = bt_create(&cfg);
  const char *why = NULL;
  if (bh_arena_populate(b, &st.pop, &why))
    fail_msg("populate: %s", why);
  bt_expect_clean(b);
  bh_zone_info_t dma32 = bt_zone(b, 1);
  EXPECT_U64(dma32.pageblocks[BH_MT_UNMOVABLE] + dma32.pageblocks[BH_MT_MOVABLE] +
                 dma32.pageblocks[BH_MT_RECLAIMABLE] + dma32.pageblocks[BH_MT_HIGHATOMIC] +
                 dma32.pageblocks[BH_MT_ISOLATE],
             (0xc000 - 4096) >> 9);
  /* and the round trip of that state */
  bh_arena_t *c = copy_state(b, &cfg);
  /* memory initialised late comes free: a hole pageblock joined and freed counts again */
  EXPECT_U64(bh_arena_adopt(c, 0xc000, 9), 0);
  bt_free(c, 0xc000, 9, 0);
  bt_expect_clean(c);
  EXPECT_U64(bt_zone(c, 1).pageblocks[BH_MT_MOVABLE], bt_zone(b, 1).pageblocks[BH_MT_MOVABLE] + 1);
  free_state(&st);
  bh_arena_destroy(a);
  bh_arena_destroy(b);
  bh_arena_destroy(c);
}

/* Pages allocated before the trace: freed one by one or joined first; never twice. */
static void test_adopt(void **state) {
  (void)state;
  bh_config_t cfg = small_cfg();
  cfg.pcp = false;
  bh_arena_t *a = bt_create(&cfg);
  uint8_t *pb = calloc(a->nr_pages >> a->pb_order, 1);
  memset(pb, BH_MT_MOVABLE, a->nr_pages >> a->pb_order);
  bh_block_run_t free_run = {0x8000, 8, 10}; /* Normal's first 32 MiB, the rest allocated */
  bh_populate_t pop = {.pageblock_mt = pb,
                       .nr_pageblocks = a->nr_pages >> a->pb_order,
                       .free = &free_run,
                       .nr_free = 1};
  const char *why = NULL;
  if (bh_arena_populate(a, &pop, &why))
    fail_msg("populate: %s", why);
  bt_expect_clean(a);
  EXPECT_U64(bt_zone(a, 0).free_pages, 0);
  /* an order-3 free of pages allocated before: adopted, then an ordinary free */
  EXPECT_U64(bh_free_pfn(a, 0x5000, 3, 0), BH_EORDER);
  EXPECT_U64(bh_arena_adopt(a, 0x5000, 3), 0);
  bt_free(a, 0x5000, 3, 0);
  EXPECT_U64(bh_arena_adopt(a, 0x5000, 0), BH_ENOTALLOC); /* free now */
  EXPECT_U64(bh_arena_adopt(a, 0x5001, 1), BH_EALIGN);
  EXPECT_U64(bh_arena_adopt(a, 0x5004, 3), BH_EALIGN);
  EXPECT_U64(bh_arena_adopt(a, 0x5008, 3), 0);
  EXPECT_U64(bh_arena_adopt(a, 0x5008, 3), BH_ENOTALLOC); /* a block already */
  /* order-0 pages allocated before free as they are */
  bt_free(a, 0x6000, 0, 0);
  bt_expect_clean(a);
  free(pb);
  bh_arena_destroy(a);
}

/* Bad states are refused. */
static void test_populate_errors(void **state) {
  (void)state;
  bh_config_t cfg = small_cfg();
  bh_arena_t *a = bt_create(&cfg);
  uint64_t npb = a->nr_pages >> a->pb_order;
  uint8_t *pb = malloc(npb);
  memset(pb, BH_MT_MOVABLE, npb);
  struct {
    bh_block_run_t run[2];
    size_t n;
  } cases[] = {
      {{{0x1001, 1, 1}}, 1},                 /* misaligned */
      {{{0x1000, 1, 3}, {0x1004, 1, 0}}, 2}, /* overlap */
      {{{0x1000, 1, 3}, {0x1008, 1, 3}}, 2}, /* unmerged buddies */
      {{{0x20000, 1, 0}}, 1},                /* past the arena */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bh_arena_t *b = bt_create(&cfg);
    bh_populate_t pop = {
        .pageblock_mt = pb, .nr_pageblocks = npb, .free = cases[i].run, .nr_free = cases[i].n};
    const char *why = NULL;
    EXPECT_U64(bh_arena_populate(b, &pop, &why), BH_EINVAL);
    assert_non_null(why);
    bh_arena_destroy(b);
  }
  /* different types under one block above the pageblock order */
  bh_arena_t *b = bt_create(&cfg);
  pb[0x1000 >> 9] = BH_MT_UNMOVABLE;
  bh_block_run_t big = {0x1000, 1, 10};
  bh_populate_t pop = {.pageblock_mt = pb, .nr_pageblocks = npb, .free = &big, .nr_free = 1};
  EXPECT_U64(bh_arena_populate(b, &pop, NULL), BH_EINVAL);
  bh_arena_destroy(b);
  free(pb);
  bh_arena_destroy(a);
}

/*
 * bh_alloc_pfn_at splits like expand: taking the block the allocator itself would take gives
 * the same state, and any other block of a free block leaves the same free memory, split
 * around it; a block that is not free is refused and nothing changes.
 */
static void test_alloc_at(void **state) {
  (void)state;
  bh_config_t cfg = small_cfg();
  cfg.pcp = false;
  bh_arena_t *a = bt_create(&cfg), *b = bt_create(&cfg);
  churn(a, 7, 5000);
  bh_arena_t *c = copy_state(a, &cfg);
  bh_arena_destroy(b);
  b = copy_state(a, &cfg);
  /* the allocator's own choice, then the same pfn at */
  uint64_t pfn;
  assert_int_equal(bh_alloc_pfn(b, BH_GFP_USER_MOVABLE, 2, 0, &pfn), 0);
  assert_int_equal(bh_alloc_pfn_at(c, BH_GFP_USER_MOVABLE, 2, 0, pfn), 0);
  char *db = bt_dump(b, bh_dump_buddyinfo), *dc = bt_dump(c, bh_dump_buddyinfo);
  bt_expect_text(dc, db, "buddyinfo after the same allocation");
  free(db);
  free(dc);
  db = bt_dump(b, bh_dump_pagetypeinfo);
  dc = bt_dump(c, bh_dump_pagetypeinfo);
  bt_expect_text(dc, db, "pagetypeinfo after the same allocation");
  free(db);
  free(dc);
  bt_expect_clean(c);
  /* the same block again: not free */
  EXPECT_U64(bh_alloc_pfn_at(c, BH_GFP_USER_MOVABLE, 2, 0, pfn), BH_EBUSY);
  EXPECT_U64(bh_alloc_pfn_at(c, BH_GFP_USER_MOVABLE, 0, 0, pfn + 1), BH_EBUSY);
  /* the last page of the largest free block: the rest stays free, in every order below */
  uint64_t top = UINT64_MAX;
  unsigned to = 0;
  for (uint64_t p = 0; p < c->nr_pages; p++)
    if ((c->pages[p].flags & BH__PG_BUDDY) && c->pages[p].order >= to) {
      top = p;
      to = c->pages[p].order;
    }
  assert_true(top != UINT64_MAX && to >= 4);
  uint64_t last = top + (1ull << to) - 1;
  bh_zone_info_t before = bt_zone(c, bt_zone_of(c, top));
  assert_int_equal(bh_alloc_pfn_at(c, BH_GFP_KERNEL, 0, 0, last), 0);
  bh_zone_info_t after = bt_zone(c, bt_zone_of(c, top));
  EXPECT_U64(after.free_pages, before.free_pages - 1);
  EXPECT_U64(after.nr_free[to], before.nr_free[to] - 1);
  for (unsigned o = 0; o < to; o++)
    EXPECT_U64(after.nr_free[o], before.nr_free[o] + 1);
  bt_expect_clean(c);
  bt_free(c, last, 0, 0);
  bt_expect_clean(c);
  EXPECT_U64(bt_zone(c, bt_zone_of(c, top)).nr_free[to], before.nr_free[to]);
  EXPECT_U64(bh_alloc_pfn_at(c, BH_GFP_KERNEL, 1, 0, top + 1), BH_EALIGN);
  EXPECT_U64(bh_alloc_pfn_at(c, BH_GFP_KERNEL, 0, 0, c->nr_pages), BH_EFAULT);
  bh_arena_destroy(a);
  bh_arena_destroy(b);
  bh_arena_destroy(c);
}

/* A block on a pcp list is taken off it (and a larger one split, its rest to the buddy). */
static void test_alloc_at_pcp(void **state) {
  (void)state;
  bh_config_t cfg = small_cfg();
  bh_arena_t *a = bt_create(&cfg);
  uint64_t p0 = bt_alloc(a, BH_GFP_USER_MOVABLE, 0, 0), p3 = bt_alloc(a, BH_GFP_KERNEL, 3, 1);
  bt_free(a, p0, 0, 0); /* both to pcp lists */
  bt_free(a, p3, 3, 1);
  EXPECT_U64(a->pages[p3].flags & BH__PG_PCP, BH__PG_PCP);
  bh_zone_info_t z = bt_zone(a, bt_zone_of(a, p3));
  assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, 0, 0, p0), 0);
  assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_KERNEL, 1, 1, p3 + 2), 0);
  bh_zone_info_t y = bt_zone(a, bt_zone_of(a, p3));
  EXPECT_U64(y.pcp_pages, z.pcp_pages - 1 - 8);
  EXPECT_U64(y.free_pages, z.free_pages + 8 - 2); /* p3's other 6 pages: 2 + 4 */
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* The pcp high marks of a machine's start (bh_populate_t.pcp_high), clamped to the zone's
 * high_min..high_max as nr_pcp_high clamps them (mm/page_alloc.c:2632 in 6.12); 0 leaves
 * high_min, as after boot. */
static void test_populate_pcp_high(void **state) {
  (void)state;
  bh_config_t cfg = small_cfg();
  bh_arena_t *a = bt_create(&cfg);
  unsigned n = a->cfg.nr_cpus;
  assert_true(n >= 2);
  size_t nh = (size_t)a->nr_zones * n;
  uint32_t *high = calloc(nh, sizeof(*high));
  bh_zone_t *z = &a->zones[a->nr_zones - 1];
  assert_true(z->pcp_high_max > z->pcp_high_min + 1);
  high[(size_t)(a->nr_zones - 1) * n + 0] = z->pcp_high_min + 1;
  high[(size_t)(a->nr_zones - 1) * n + 1] = UINT32_MAX;
  bh_populate_t pop = {.pcp_high = high, .nr_pcp_high = nh};
  assert_int_equal(bh_arena_populate(a, &pop, NULL), 0);
  assert_int_equal(z->pcp[0].high, (int)z->pcp_high_min + 1);
  assert_int_equal(z->pcp[1].high, (int)z->pcp_high_max);
  assert_int_equal(a->zones[0].pcp[0].high, (int)a->zones[0].pcp_high_min);
  free(high);
  bh_arena_destroy(a);
}

/*
 * Every page descriptor after bh_arena_populate, against the rule page by page: populate
 * writes the pages in runs, 64 pages of its bitmaps at a time, so runs that begin and end
 * inside a word, pageblocks smaller than a word, movable runs over pfn 0 and past the span,
 * absent pageblocks and free blocks of every order are checked one page at a time.
 */
static uint8_t pageblock_pmt(const bh_populate_t *pop, uint8_t t) {
  if (t == BH_PAGEBLOCK_ABSENT)
    return BH_MT_UNMOVABLE;
  if (t == BH_MT_MOVABLE && pop->movable)
    return BH_MT_UNMOVABLE;
  return t == BH_MT_HIGHATOMIC || t == BH_MT_ISOLATE ? BH_MT_UNMOVABLE : t;
}

static void check_pages(unsigned pb_order, uint64_t seed) {
  bh_config_t cfg = machine_cfg();
  cfg.pageblock_order = pb_order;
  bh_arena_t *a = bt_create(&cfg);
  uint64_t np = a->nr_pages, npb = np >> pb_order, x = seed;
  uint8_t *pb = malloc(npb), *mov = calloc(np, 1), *fh = calloc(np, 1), *cover = calloc(np, 1);
  bh_block_run_t *fr = calloc(4096, sizeof(*fr));
  bh_page_run_t *mr = calloc(4096, sizeof(*mr));
  bh_pcp_block_t *pr = calloc(64, sizeof(*pr));
  assert_true(pb && mov && fh && cover && fr && mr && pr);
  for (uint64_t b = 0; b < npb; b++) { /* long stretches of one type, some absent */
    uint64_t r = test_splitmix64(&x);
    pb[b] = b && r % 8 ? pb[b - 1] : r % 11 == 0 ? BH_PAGEBLOCK_ABSENT : (uint8_t)(r >> 8) % 5;
  }
  for (uint64_t b = 0xc000ull >> pb_order; b < 0x10000ull >> pb_order; b++)
    pb[b] = BH_PAGEBLOCK_ABSENT; /* DMA32's hole */
  size_t nm = 0, nf = 0, npcp = 0;
  mr[nm++] = (bh_page_run_t){0, 3};                   /* pfn 0: outside DMA's span */
  mr[nm++] = (bh_page_run_t){0x10000 + 25603 - 2, 5}; /* across Normal's end */
  while (nm < 600) {
    uint64_t r = test_splitmix64(&x), pfn = r % np, n = 1 + (r >> 32) % 150;
    if (pfn + n <= np)
      mr[nm++] = (bh_page_run_t){pfn, n};
  }
  for (size_t i = 0; i < nm; i++)
    memset(mov + mr[i].pfn, 1, mr[i].count);
  for (int tries = 0; tries < 20000 && nf < 4096; tries++) { /* valid blocks, never buddies */
    uint64_t r = test_splitmix64(&x);
    unsigned o = (r >> 40) % 16 < 8 ? 0 : (unsigned)((r >> 44) % (cfg.max_order + 1));
    uint64_t n = 1ull << o, pfn = (r % np) & ~(n - 1), z;
    if (pfn + n > np)
      continue;
    for (z = 0; z < 3; z++)
      if (pfn >= cfg.layout_zones[z].start_pfn &&
          pfn + n <= cfg.layout_zones[z].start_pfn + cfg.layout_zones[z].spanned_pages)
        break;
    bool ok = z < 3;
    for (uint64_t p = pfn; ok && p < pfn + n; p++)
      ok = !cover[p] && pb[p >> pb_order] != BH_PAGEBLOCK_ABSENT &&
           pb[p >> pb_order] == pb[pfn >> pb_order];
    uint64_t buddy = pfn ^ n;
    if (!ok || (o < cfg.max_order && buddy < np && fh[buddy] == o + 1))
      continue;
    memset(cover + pfn, 1, n);
    fh[pfn] = (uint8_t)(o + 1);
    fr[nf++] = (bh_block_run_t){pfn, 1, (uint8_t)o};
  }
  for (uint64_t p = 0x10000 + 7; npcp < 40; p += 211) /* order-0 pcp blocks among the rest */
    if (!cover[p] && pb[p >> pb_order] != BH_PAGEBLOCK_ABSENT && pb[p >> pb_order] != 4) {
      cover[p] = 2;
      pr[npcp++] = (bh_pcp_block_t){.pfn = p, .order = 0, .cpu = (uint16_t)(npcp & 1)};
    }
  bh_populate_t pop = {.pageblock_mt = pb,
                       .nr_pageblocks = npb,
                       .free = fr,
                       .nr_free = nf,
                       .pcp = pr,
                       .nr_pcp = npcp,
                       .movable = mr,
                       .nr_movable = nm};
  const char *why = NULL;
  if (bh_arena_populate(a, &pop, &why))
    fail_msg("populate: %s", why ? why : "");
  bt_expect_clean(a);
  uint64_t bad = 0;
  for (int zi = 0; zi < a->nr_zones; zi++) {
    const bh_zone_t *zn = &a->zones[zi];
    for (uint64_t p = zn->start_pfn; p < zn->start_pfn + zn->spanned_pages; p++) {
      const bh__page_t *g = &a->pages[p];
      uint8_t t = pb[p >> pb_order], fl, order = 0, mt;
      bool span = p >= zn->zone_start_pfn && p < zn->zone_start_pfn + zn->zone_spanned_pages;
      bool present = !(a->pageblock[p >> pb_order] & BH__PB_ABSENT); /* or past the span */
      mt = !present ? BH_MT_UNMOVABLE : mov[p] ? BH_MT_MOVABLE : pageblock_pmt(&pop, t);
      if (fh[p]) {
        fl = BH__PG_BUDDY;
        order = fh[p] - 1;
        mt = 0;
      } else if (cover[p] == 2) {
        fl = BH__PG_PCP;
      } else {
        fl = cover[p] ? 0 : BH__PG_ALLOC | BH__PG_PRETRACE | (span ? 0 : BH__PG_NOPAGE);
      }
      uint32_t priv = cover[p] == 2 ? g->priv : 0;
      if (g->flags != fl || g->order != order || g->mt != mt || g->priv != priv || g->spare) {
        if (bad++ < 5)
          print_error("pb_order %u seed %lu: pfn %#lx flags %#x order %u mt %u priv %u, want "
                      "%#x %u %u %u\n",
                      pb_order, (unsigned long)seed, (unsigned long)p, g->flags, g->order, g->mt,
                      g->priv, fl, order, mt, priv);
      }
    }
  }
  EXPECT_U64(bad, 0);
  assert_true(nf > 1000);
  free(pb);
  free(mov);
  free(fh);
  free(cover);
  free(fr);
  free(mr);
  free(pr);
  bh_arena_destroy(a);
}

static void test_populate_pages(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    check_pages(9, seed);
    check_pages(3, seed); /* eight pageblocks to a word of the bitmaps */
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_populate_round_trip),
      cmocka_unit_test(test_explicit_layout),
      cmocka_unit_test(test_adopt),
      cmocka_unit_test(test_populate_errors),
      cmocka_unit_test(test_alloc_at),
      cmocka_unit_test(test_alloc_at_pcp),
      cmocka_unit_test(test_populate_pcp_high),
      cmocka_unit_test(test_populate_pages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
