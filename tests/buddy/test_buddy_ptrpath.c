/*
 * The pointer interface (bh_alloc_pages / bh_free_pages) has an order-0 fast path of its own.
 * It must do exactly what the pfn interface does: the same block, the same error, the same
 * counters, the same pcp high/batch tuning and drains, the same watermark decisions.  Two
 * arenas of the same configuration get the same seeded random sequence of requests, one
 * through each interface, from the same thread (so the same pcp slot), and are compared after
 * every step (result) and regularly (counters, zone state, /proc/zoneinfo text).
 */
#include "buddy_test.h"
#include "test_rng.h"

#include "buddy/internal.h" /* the pcp lock, to make the calling thread's pcp busy */

#include <stdlib.h>
#include <string.h>

#define ZONE_BYTES (64 * MiB) /* 16384 pages: the sequence reaches the watermarks */
#define MAX_LIVE 20000

struct live {
  uint64_t pfn;
  unsigned order;
};

static uint64_t rng_state;
static uint64_t rng(void) { return test_splitmix64(&rng_state); }

static bh_arena_t *make_arena(bool smp, unsigned nr_cpus) {
  bh_config_t c = bt_cfg_one_zone(BH_ZONE_NORMAL, ZONE_BYTES);
  c.zone_bytes[BH_ZONE_DMA32] = 16 * MiB;
  c.backing = BH_BACKING_MMAP;
  c.pcp = true;
  c.smp = smp;
  c.nr_cpus = nr_cpus;
  return bt_create(&c);
}

static void expect_same_state(bh_arena_t *ptr, bh_arena_t *pfn, uint64_t step) {
  uint64_t sp[BH_NR_STATS], sf[BH_NR_STATS];
  bh_stats_read(ptr, sp);
  bh_stats_read(pfn, sf);
  for (int i = 0; i < BH_NR_STATS; i++)
    if (sp[i] != sf[i])
      fail_msg("step %llu: counter %s: pointer interface %llu, pfn interface %llu",
               (unsigned long long)step, bh_stat_name(i), (unsigned long long)sp[i],
               (unsigned long long)sf[i]);
  for (int z = 0; z < bh_zone_count(ptr); z++) {
    bh_zone_info_t a = bt_zone(ptr, z), b = bt_zone(pfn, z);
    EXPECT_U64(a.free_pages, b.free_pages);
    EXPECT_U64(a.pcp_pages, b.pcp_pages);
    EXPECT_U64(a.pcp_high, b.pcp_high);
    EXPECT_U64(a.pcp_batch, b.pcp_batch);
    EXPECT_U64(a.wmark_boost, b.wmark_boost);
    for (int o = 0; o <= BH_ORDER_LIMIT; o++)
      EXPECT_U64(a.nr_free[o], b.nr_free[o]);
  }
  char *zp = bt_dump(ptr, bh_dump_zoneinfo), *zf = bt_dump(pfn, bh_dump_zoneinfo);
  bt_expect_text(zp, zf, "zoneinfo");
  free(zp);
  free(zf);
}

static const unsigned gfps[] = {BH_GFP_KERNEL,
                                BH_GFP_MOVABLE,
                                BH_GFP_USER_MOVABLE,
                                BH_GFP_RECLAIMABLE,
                                BH_GFP_KERNEL | BH_GFP_ZERO,
                                BH_GFP_MOVABLE | BH_GFP_NOFALLBACK_WMARK,
                                BH_GFP_KERNEL | BH_GFP_HIGH,
                                BH_GFP_DMA32,
                                BH_GFP_ATOMIC};

static void run_sequence(bool smp, unsigned nr_cpus, uint64_t seed, uint64_t steps) {
  bh_arena_t *ptr = make_arena(smp, nr_cpus), *pfn = make_arena(smp, nr_cpus);
  uint8_t *base = bh_arena_base(ptr);
  struct live *live = calloc(MAX_LIVE, sizeof(*live));
  assert_non_null(live);
  size_t n = 0;
  rng_state = seed;
  for (uint64_t step = 0; step < steps; step++) {
    /* phases of growth (towards exhaustion) and shrinking, so that the watermarks, the
     * slow path, refills and drains all happen */
    bool grow = (step / 20000) % 2 == 0;
    uint64_t r = rng();
    if (n == 0 || (n < MAX_LIVE && r % 100 < (grow ? 97u : 20u))) {
      unsigned order = r % 10 == 0 ? (unsigned)(r >> 8) % 4 : 0;
      unsigned gfp = gfps[(r >> 16) % (sizeof(gfps) / sizeof(gfps[0]))];
      int ep = 77;
      uint64_t got = UINT64_MAX;
      uint8_t *p = bh_alloc_pages(ptr, gfp, order, &ep);
      int ef = bh_alloc_pfn(pfn, gfp, order, -1, &got);
      if (ep != ef)
        fail_msg("step %llu: alloc gfp %#x order %u: pointer %d, pfn %d", (unsigned long long)step,
                 gfp, order, ep, ef);
      if (ep == BH_OK) {
        assert_non_null(p);
        EXPECT_U64((uint64_t)(p - base) >> 12, got);
        if (gfp & BH_GFP_ZERO)
          for (size_t i = 0; i < (4096u << order); i += 512)
            assert_int_equal(p[i], 0);
        p[0] = 0xa5; /* dirty it, so that a later BH_GFP_ZERO has something to clear */
        live[n].pfn = got;
        live[n].order = order;
        n++;
      } else {
        assert_null(p);
      }
    } else {
      size_t i = (size_t)(rng() % n);
      struct live l = live[i];
      uint8_t *p = base + (l.pfn << 12);
      if (r % 97 == 0) { /* a wrong order first: refused alike, nothing changes */
        int ep = bh_free_pages(ptr, p, l.order + 1);
        int ef = bh_free_pfn(pfn, l.pfn, l.order + 1, -1);
        assert_int_equal(ep, ef);
        assert_int_not_equal(ep, BH_OK);
      }
      int ep = bh_free_pages(ptr, p, l.order);
      int ef = bh_free_pfn(pfn, l.pfn, l.order, -1);
      assert_int_equal(ep, BH_OK);
      assert_int_equal(ef, BH_OK);
      if (r % 89 == 0) { /* a double free: refused alike */
        ep = bh_free_pages(ptr, p, l.order);
        ef = bh_free_pfn(pfn, l.pfn, l.order, -1);
        assert_int_equal(ep, ef);
        assert_int_equal(ep, BH_ENOTALLOC);
      }
      live[i] = live[--n];
    }
    if (step % 2000 == 1999)
      expect_same_state(ptr, pfn, step);
  }
  expect_same_state(ptr, pfn, steps);
  while (n) {
    n--;
    assert_int_equal(bh_free_pages(ptr, base + (live[n].pfn << 12), live[n].order), BH_OK);
    assert_int_equal(bh_free_pfn(pfn, live[n].pfn, live[n].order, -1), BH_OK);
  }
  expect_same_state(ptr, pfn, steps);
  bt_expect_clean(ptr);
  bt_expect_clean(pfn);
  free(live);
  bh_arena_destroy(ptr);
  bh_arena_destroy(pfn);
}

static void test_ptrpath_same_as_pfn_smp(void **state) {
  (void)state;
  run_sequence(true, 2, 1, 80000);
}

static void test_ptrpath_same_as_pfn_up(void **state) {
  (void)state;
  run_sequence(false, 1, 2, 80000);
}

/* The pointer interface's own checks, in bh_addr_to_pfn's and check_free's order. */
static void test_ptrpath_bad_addresses(void **state) {
  (void)state;
  bh_arena_t *a = make_arena(true, 2);
  uint8_t *base = bh_arena_base(a);
  size_t bytes = (size_t)bh_arena_pages(a) << 12;
  int e = 0;
  uint8_t *p = bh_alloc_pages(a, BH_GFP_KERNEL, 0, &e);
  assert_int_equal(e, BH_OK);
  assert_int_equal(bh_free_pages(NULL, p, 0), BH_EINVAL);
  assert_int_equal(bh_free_pages(a, NULL, 0), BH_EFAULT);
  assert_int_equal(bh_free_pages(a, base - 4096, 0), BH_EFAULT);
  assert_int_equal(bh_free_pages(a, base + bytes, 0), BH_EFAULT);
  assert_int_equal(bh_free_pages(a, p + 8, 0), BH_EALIGN);
  assert_int_equal(bh_free_pages(a, p + 4096, 0), BH_ENOTALLOC);
  assert_int_equal(bh_free_pages(a, p, 1), BH_EORDER);
  assert_int_equal(bh_free_pages(a, p, 99), BH_EINVAL);
  assert_int_equal(bh_free_pages(a, p, 0), BH_OK);
  assert_int_equal(bh_free_pages(a, p, 0), BH_ENOTALLOC);
  assert_null(bh_alloc_pages(a, 0x1000, 0, &e));
  assert_int_equal(e, BH_EINVAL);
  assert_null(bh_alloc_pages(a, BH_GFP_KERNEL, 99, &e));
  assert_int_equal(e, BH_EINVAL);
  assert_null(bh_alloc_pages(NULL, BH_GFP_KERNEL, 0, &e));
  assert_int_equal(e, BH_EINVAL);
  p = bh_alloc_pages(a, BH_GFP_KERNEL, 0, NULL); /* err may be NULL */
  assert_non_null(p);
  assert_int_equal(bh_free_pages(a, p, 0), BH_OK);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/*
 * A busy pcp list (its lock held, as during a remote drain): the fast path's order-0
 * allocation comes from the buddy lists of the same zone and its free goes to them, as
 * rmqueue_pcplist's and free_unref_page's failed trylock do (mm/page_alloc.c:3112-3116 and
 * :2758-2763 in 6.12; then rmqueue_buddy, :3162), the same as through the pfn interface.
 */
static void test_ptrpath_busy_pcp(void **state) {
  (void)state;
  bh_arena_t *ptr = make_arena(true, 2), *pfn = make_arena(true, 2);
  uint8_t *base = bh_arena_base(ptr);
  /* one pair each, so that this thread has its slot and its pcp list has pages */
  uint8_t *p = bh_alloc_pages(ptr, BH_GFP_KERNEL, 0, NULL);
  uint64_t got;
  assert_non_null(p);
  assert_int_equal(bh_alloc_pfn(pfn, BH_GFP_KERNEL, 0, -1, &got), BH_OK);
  EXPECT_U64((uint64_t)(p - base) >> 12, got);
  assert_int_equal(bh_free_pages(ptr, p, 0), BH_OK);
  assert_int_equal(bh_free_pfn(pfn, got, 0, -1), BH_OK);
  expect_same_state(ptr, pfn, 0);
  /* the zone and pcp list the pair used, in both arenas */
  int zi = -1, slot = -1;
  for (int z = 0; z < bh_zone_count(ptr) && zi < 0; z++)
    for (unsigned c = 0; c < 2; c++)
      if (ptr->zones[z].pcp[c].count > 0) {
        zi = z;
        slot = (int)c;
        break;
      }
  assert_true(zi >= 0);
  bh__pcp_t *busy[2] = {&ptr->zones[zi].pcp[slot], &pfn->zones[zi].pcp[slot]};
  int pcp_before = busy[0]->count;
  uint64_t st[BH_NR_STATS];
  bh_stats_read(ptr, st);
  uint64_t pcp_allocs = st[BH_STAT_pcp_alloc], pcp_frees = st[BH_STAT_pcp_free];
  for (int i = 0; i < 2; i++)
    assert_true(bh__pcp_trylock(busy[i]));
  int e = 77;
  p = bh_alloc_pages(ptr, BH_GFP_KERNEL, 0, &e);
  assert_int_equal(e, BH_OK);
  assert_non_null(p);
  assert_int_equal(bh_alloc_pfn(pfn, BH_GFP_KERNEL, 0, -1, &got), BH_OK);
  EXPECT_U64((uint64_t)(p - base) >> 12, got);
  assert_int_equal(busy[0]->count, pcp_before); /* not from the pcp list */
  assert_int_equal(bh_free_pages(ptr, p, 0), BH_OK);
  assert_int_equal(bh_free_pfn(pfn, got, 0, -1), BH_OK);
  assert_int_equal(busy[0]->count, pcp_before); /* not onto it either */
  for (int i = 0; i < 2; i++)
    bh__pcp_unlock(busy[i]);
  bh_stats_read(ptr, st); /* (which takes the pcp locks) */
  EXPECT_U64(st[BH_STAT_pcp_alloc], pcp_allocs);
  EXPECT_U64(st[BH_STAT_pcp_free], pcp_frees);
  expect_same_state(ptr, pfn, 1);
  bt_expect_clean(ptr);
  bh_arena_destroy(ptr);
  bh_arena_destroy(pfn);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ptrpath_same_as_pfn_smp),
      cmocka_unit_test(test_ptrpath_same_as_pfn_up),
      cmocka_unit_test(test_ptrpath_bad_addresses),
      cmocka_unit_test(test_ptrpath_busy_pcp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
