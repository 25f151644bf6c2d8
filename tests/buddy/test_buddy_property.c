/*
 * Property test: a seeded random mix of allocations and frees over orders 0..10, every
 * zone modifier x mobility combination, several CPU slots, two nodes, pcp on.  Checked:
 *   - every allocation returns a block aligned to its order, inside one zone the gfp allows
 *     (zone type <= gfp_zone, local node under __GFP_THISNODE), made of pages nobody owns;
 *   - the only failure is ENOSPC, frees never fail;
 *   - every CHECK_EVERY operations: bh_arena_check() == 0 and, per zone, free + pcp + pages
 *     we hold == managed;
 *   - at the end, after freeing everything and draining the pcp lists: every zone is whole
 *     again, in top-order blocks only, and the counters balance.
 * The seed is BH_TEST_SEED if set, else time-based, and is printed first.
 */
#include "buddy_test.h"
#include "test_rng.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * One million operations take about 0.8 s in a RelWithDebInfo build and 1.6 s under
 * AddressSanitizer + UBSan (measured on 2 cores), so the count is not lowered under ASan
 * (__SANITIZE_ADDRESS__ / __has_feature(address_sanitizer) would be the switch if it had to
 * be).
 */
#define NR_OPS 1000000
#define CHECK_EVERY 50000
#define NR_CPUS 4
#define NR_NODES 2

struct held {
  uint64_t pfn;
  uint8_t order;
};

struct world {
  bh_arena_t *a;
  uint64_t rng;
  uint8_t *owned; /* one byte per page: 1 while we hold it */
  struct held *held;
  size_t nr_held, cap;
  uint64_t held_pages;
  int nr_zones;
  bh_zone_info_t zone[NR_NODES * BH_NR_ZONE_TYPES]; /* geometry only */
  uint64_t allocs, frees, enospc, pages_allocated, pages_freed;
};

static uint64_t next_rand(struct world *w) { return test_splitmix64(&w->rng); }

static unsigned below(struct world *w, unsigned n) { return (unsigned)(next_rand(w) % n); }

static uint64_t test_seed(void) {
  const char *env = getenv("BH_TEST_SEED");
  if (env && *env)
    return strtoull(env, NULL, 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
}

/* Orders weighted towards small ones, as real traffic is; every order 0..10 occurs. */
static unsigned pick_order(struct world *w) {
  unsigned r = below(w, 1000);
  if (r < 550)
    return 0;
  if (r < 850)
    return 1 + below(w, 3); /* 1..3: pcp orders */
  if (r < 960)
    return 4 + below(w, 5); /* 4..8 */
  if (r < 990)
    return 9; /* pageblock order: the THP pcp list */
  return 10;
}

static unsigned pick_gfp(struct world *w) {
  static const unsigned zone_bits[] = {0, BH_GFP_DMA, BH_GFP_DMA32, BH_GFP_HIGHMEM,
                                       BH_GFP_HIGHMEM}; /* HIGHMEM twice: the Movable zone */
  static const unsigned mobility[] = {0, BH_GFP_MOVABLE, BH_GFP_RECLAIMABLE, BH_GFP_MOVABLE};
  unsigned gfp = zone_bits[below(w, 5)] | mobility[below(w, 4)];
  unsigned extra = below(w, 100);
  if (extra < 5)
    gfp |= BH_GFP_HIGH; /* __GFP_HIGH or non-blocking, never both: no HighAtomic reserve, */
  else if (extra < 10)  /* so that every pageblock can merge back at the end */
    gfp |= BH_GFP_ATOMIC;
  else if (extra < 15)
    gfp |= BH_GFP_THISNODE;
  else if (extra < 18)
    gfp |= BH_GFP_NOFALLBACK_WMARK;
  return gfp;
}

static int zone_of(const struct world *w, uint64_t pfn) {
  for (int i = 0; i < w->nr_zones; i++)
    if (pfn >= w->zone[i].start_pfn && pfn < w->zone[i].start_pfn + w->zone[i].spanned_pages)
      return i;
  return -1;
}

static void check_new_block(struct world *w, unsigned gfp, unsigned order, int cpu, uint64_t pfn) {
  uint64_t n = 1ull << order;
  int z = zone_of(w, pfn);
  if (z < 0 || pfn % n || zone_of(w, pfn + n - 1) != z)
    fail_msg("gfp %#x order %u: bad block at pfn %" PRIu64, gfp, order, pfn);
  if (w->zone[z].type > bh_gfp_zone(gfp))
    fail_msg("gfp %#x: pfn %" PRIu64 " in zone %s above gfp_zone", gfp, pfn,
             bh_zone_name(w->zone[z].type));
  if ((gfp & BH_GFP_THISNODE) && w->zone[z].node != cpu % NR_NODES)
    fail_msg("gfp %#x from slot %d: pfn %" PRIu64 " on node %d", gfp, cpu, pfn, w->zone[z].node);
  for (uint64_t i = 0; i < n; i++)
    if (w->owned[pfn + i])
      fail_msg("pfn %" PRIu64 " handed out twice (block %" PRIu64 " order %u)", pfn + i, pfn,
               order);
  memset(w->owned + pfn, 1, n);
}

static void do_alloc(struct world *w) {
  unsigned gfp = pick_gfp(w), order = pick_order(w);
  int cpu = (int)below(w, NR_CPUS);
  uint64_t pfn;
  int err = bh_alloc_pfn(w->a, gfp, order, cpu, &pfn);
  if (err == BH_ENOSPC) {
    w->enospc++;
    return;
  }
  if (err)
    fail_msg("alloc gfp %#x order %u: %s", gfp, order, bh_err_name(err));
  check_new_block(w, gfp, order, cpu, pfn);
  if (w->nr_held == w->cap) {
    w->cap = w->cap ? 2 * w->cap : 1024;
    w->held = realloc(w->held, w->cap * sizeof *w->held);
    assert_non_null(w->held);
  }
  w->held[w->nr_held++] = (struct held){pfn, (uint8_t)order};
  w->held_pages += 1ull << order;
  w->allocs++;
  w->pages_allocated += 1ull << order;
}

static void do_free(struct world *w, size_t i) {
  struct held h = w->held[i];
  w->held[i] = w->held[--w->nr_held];
  memset(w->owned + h.pfn, 0, 1ull << h.order);
  int err = bh_free_pfn(w->a, h.pfn, h.order, (int)below(w, NR_CPUS));
  if (err)
    fail_msg("free pfn %" PRIu64 " order %u: %s", h.pfn, h.order, bh_err_name(err));
  w->held_pages -= 1ull << h.order;
  w->frees++;
  w->pages_freed += 1ull << h.order;
}

/* Pages we hold per zone + the zone's free and pcp pages = its managed pages. */
static void check_conservation(struct world *w) {
  uint64_t held[NR_NODES * BH_NR_ZONE_TYPES] = {0};
  for (size_t i = 0; i < w->nr_held; i++)
    held[zone_of(w, w->held[i].pfn)] += 1ull << w->held[i].order;
  for (int z = 0; z < w->nr_zones; z++) {
    bh_zone_info_t zi = bt_zone(w->a, z);
    if (zi.free_pages + zi.pcp_pages + held[z] != zi.managed_pages)
      fail_msg("zone %d (%s node %d): free %" PRIu64 " + pcp %" PRIu64 " + held %" PRIu64
               " != managed %" PRIu64,
               z, bh_zone_name(zi.type), zi.node, zi.free_pages, zi.pcp_pages, held[z],
               zi.managed_pages);
  }
}

static void checkpoint(struct world *w, uint64_t op) {
  long v = bh_arena_check(w->a, stderr, 20);
  if (v)
    fail_msg("bh_arena_check: %ld violations after %" PRIu64 " operations", v, op);
  check_conservation(w);
}

/*
 * Two nodes of DMA 4 + DMA32 8 + Normal 16 + Movable 8 MiB (9216 pages per node), 4 CPU
 * slots, pcp on with Linux's sizes, sim backing.
 */
static bh_arena_t *property_arena(void) {
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  c.nr_nodes = NR_NODES;
  c.nr_cpus = NR_CPUS;
  c.zone_bytes[BH_ZONE_DMA] = 4 * MiB;
  c.zone_bytes[BH_ZONE_DMA32] = 8 * MiB;
  c.zone_bytes[BH_ZONE_NORMAL] = 16 * MiB;
  c.zone_bytes[BH_ZONE_MOVABLE] = 8 * MiB;
  return bt_create(&c);
}

static void test_random_alloc_free(void **state) {
  (void)state;
  uint64_t seed = test_seed();
  print_message("test_buddy_property: BH_TEST_SEED=%" PRIu64 " (%d operations)\n", seed, NR_OPS);
  fflush(stdout);
  struct world w;
  memset(&w, 0, sizeof w);
  w.rng = seed;
  w.a = property_arena();
  w.nr_zones = bh_zone_count(w.a);
  for (int z = 0; z < w.nr_zones; z++)
    w.zone[z] = bt_zone(w.a, z);
  uint64_t nr_pages = bh_arena_pages(w.a);
  w.owned = calloc(nr_pages, 1);
  assert_non_null(w.owned);

  for (uint64_t op = 1; op <= NR_OPS; op++) {
    /* drift between emptier and fuller phases so that watermarks and fallbacks are hit */
    uint64_t phase = (op / 100000) % 2;
    unsigned alloc_pct = w.held_pages < nr_pages / 4 ? 70 : phase ? 58 : 42;
    if (!w.nr_held || below(&w, 100) < alloc_pct)
      do_alloc(&w);
    else
      do_free(&w, below(&w, (unsigned)w.nr_held));
    if (op % 9973 == 0)
      bh_drain_pcp(w.a);
    if (op % CHECK_EVERY == 0)
      checkpoint(&w, op);
  }
  checkpoint(&w, NR_OPS);
  print_message("  %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64 " ENOSPC, %zu held\n",
                w.allocs, w.frees, w.enospc, w.nr_held);

  while (w.nr_held)
    do_free(&w, w.nr_held - 1);
  bh_drain_pcp(w.a);
  bt_expect_clean(w.a);
  bt_expect_all_free(w.a);

  uint64_t v[BH_NR_STATS];
  bh_stats_read(w.a, v);
  EXPECT_U64(v[BH_STAT_alloc_calls], w.allocs);
  EXPECT_U64(v[BH_STAT_free_calls], w.frees);
  EXPECT_U64(v[BH_STAT_alloc_fail], w.enospc);
  EXPECT_U64(v[BH_STAT_pgfree], w.pages_freed);
  EXPECT_U64(v[BH_STAT_pgalloc_dma] + v[BH_STAT_pgalloc_dma32] + v[BH_STAT_pgalloc_normal] +
                 v[BH_STAT_pgalloc_movable],
             w.pages_allocated);
  EXPECT_U64(v[BH_STAT_numa_hit] + v[BH_STAT_numa_miss], w.allocs);
  assert_true(v[BH_STAT_pcp_alloc] > 0 && v[BH_STAT_pcp_refill] > 0 && v[BH_STAT_pcp_drain] > 0);
  assert_true(w.enospc > 0);                    /* the mix reached the watermarks */
  assert_true(v[BH_STAT_extfrag_fallback] > 0); /* and the fallbacks */
  free(w.owned);
  free(w.held);
  bh_arena_destroy(w.a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_alloc_free),
  };
  return cmocka_run_group_tests_name("buddy_property", tests, NULL, NULL);
}
