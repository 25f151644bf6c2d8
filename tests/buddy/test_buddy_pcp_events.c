/*
 * The pcp lists moved as a kernel's trace says (bh__pcp_refill_at, bh__pcp_drain_at,
 * bh__pcp_free_nodrain in populate.c): a refill is mm_page_alloc_zone_locked with
 * percpu_refill, a block that __rmqueue_smallest took (Linux 6.12 mm/page_alloc.c:1645-1649:
 * page_del_and_expand, then the event) and rmqueue_bulk put at the tail of the CPU's list
 * (mm/page_alloc.c:2350); a drain is mm_page_pcpu_drain, a block free_pcppages_bulk took off a
 * pcp list and gave to __free_one_page (mm/page_alloc.c:1257-1264), which merges it.  And
 * the claims of mm_page_alloc_extfrag (bh__claim_block_at).
 */
#include "buddy_test.h"

#include "buddy/internal.h"

#include <stdlib.h>

#define NORMAL_START 131072 /* DMA 4096 + DMA32 126976 pages */
#define TOP 10              /* MAX_PAGE_ORDER: Normal is free in order-10 blocks */

static bh_arena_t *default_sim(void) {
  bh_config_t c;
  bh_config_init(&c);
  c.backing = BH_BACKING_SIM;
  return bt_create(&c);
}

/* The pcp list of cpu in zone 2 (Normal) for (mt, order), as pfns from the head. */
static int list_of(bh_arena_t *a, int cpu, int mt, unsigned order, uint64_t *out, int max) {
  bh_zone_t *z = &a->zones[2];
  uint32_t head = z->pcp[cpu].head + bh__pcp_pindex(a, mt, order);
  int n = 0;
  for (uint32_t x = a->pages[head].next; x != head && n < max; x = a->pages[x].next)
    out[n++] = x;
  return n;
}

/* A refill splits the free top block around the pfn as expand() does, and puts the block at
 * the tail of that CPU's list; a drain merges it back into the top block. */
static void test_refill_and_drain(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  bh_zone_info_t z0 = bt_zone(a, 2);
  uint64_t top_blocks = z0.nr_free[TOP];
  uint64_t pfn = NORMAL_START + 5; /* inside the first top block, not at its head */
  EXPECT_U64(bh__pcp_refill_at(a, pfn, 0, BH_MT_MOVABLE, 1), BH_OK);
  uint64_t p2 = NORMAL_START + 64;
  EXPECT_U64(bh__pcp_refill_at(a, p2, 0, BH_MT_MOVABLE, 1), BH_OK);
  bh_zone_info_t z = bt_zone(a, 2);
  EXPECT_U64(z.pcp_pages, 2);
  EXPECT_U64(z.free_pages, z0.free_pages - 2);
  EXPECT_U64(z.nr_free[TOP], top_blocks - 1);
  /* split around +5: one block of each order 0..9 (+4, +6, +0, +8, ... +512); +64 then takes
   * order 0 of the order-6 block at +64, leaving one of each order 0..5 there */
  for (unsigned o = 0; o < TOP; o++)
    EXPECT_U64(z.nr_free[o], z0.nr_free[o] + (o < 6 ? 2 : o == 6 ? 0 : 1));
  uint64_t l[4] = {0};
  EXPECT_U64(list_of(a, 1, BH_MT_MOVABLE, 0, l, 4), 2);
  EXPECT_U64(l[0], pfn); /* tail-added: in the order refilled */
  EXPECT_U64(l[1], p2);
  EXPECT_U64(list_of(a, 0, BH_MT_MOVABLE, 0, l, 4), 0);
  /* a second refill of the same block finds it gone from the free lists */
  EXPECT_U64(bh__pcp_refill_at(a, pfn, 0, BH_MT_MOVABLE, 0), BH_EBUSY);
  /* an allocation at the recorded pfn takes it from the pcp list */
  EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, 0, 1, p2), BH_OK);
  EXPECT_U64(bt_zone(a, 2).pcp_pages, 1);
  /* drains: not on a pcp list (allocated, free, wrong order) is EBUSY and changes nothing */
  EXPECT_U64(bh__pcp_drain_at(a, p2, 0), BH_EBUSY);
  EXPECT_U64(bh__pcp_drain_at(a, NORMAL_START + 4, 0), BH_EBUSY);
  EXPECT_U64(bh__pcp_drain_at(a, pfn & ~1ull, 1), BH_EBUSY);
  EXPECT_U64(bh__pcp_drain_at(a, NORMAL_START + 3, 1), BH_EALIGN);
  EXPECT_U64(bh__pcp_drain_at(a, pfn, 0), BH_OK);
  EXPECT_U64(bt_zone(a, 2).pcp_pages, 0);
  bt_free(a, p2, 0, 1); /* onto the pcp list (the model's own free) */
  EXPECT_U64(bh__pcp_drain_at(a, p2, 0), BH_OK);
  z = bt_zone(a, 2);
  EXPECT_U64(z.free_pages, z0.free_pages);
  EXPECT_U64(z.nr_free[TOP], top_blocks); /* merged all the way up */
  for (unsigned o = 0; o < TOP; o++)
    EXPECT_U64(z.nr_free[o], z0.nr_free[o]);
  bt_expect_clean(a);
  bt_expect_all_free(a);
  bh_arena_destroy(a);
}

/* Frees without drain decisions: past pcp->high nothing goes back to the buddy lists, where
 * the model's own free (free_unref_page_commit) drains a batch. */
static void test_free_nodrain(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  enum { N = 2000 }; /* above this arena's high (at most managed/8 / cpus) for one slot */
  uint64_t *p = malloc(N * sizeof(*p));
  for (int i = 0; i < N; i++)
    p[i] = bt_alloc(a, BH_GFP_MOVABLE, 0, 0);
  bh_drain_pcp(a);
  uint64_t drains = bt_stat(a, BH_STAT_pcp_drain);
  for (int i = 0; i < N; i++)
    EXPECT_U64(bh__pcp_free_nodrain(a, p[i], 0, 0), BH_OK);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_drain), drains);
  EXPECT_U64(bt_zone(a, 2).pcp_pages, N);
  EXPECT_U64(bt_zone(a, 2).pcp_high < N, 1);
  uint64_t l[1] = {0};
  EXPECT_U64(list_of(a, 0, BH_MT_MOVABLE, 0, l, 1), 1);
  EXPECT_U64(l[0], p[N - 1]); /* head-added, as a free */
  /* a double free is bh_free_pfn's error */
  EXPECT_U64(bh__pcp_free_nodrain(a, p[0], 0, 0), BH_ENOTALLOC);
  bt_expect_clean(a);
  bh_drain_pcp(a);
  bt_expect_all_free(a);
  free(p);
  bh_arena_destroy(a);
}

/* A refill of a block on a pcp list moves it to the tail of the refilling CPU's list; where a
 * block is, as the replay tells its misses apart. */
static void test_relist_and_where(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  uint64_t pfn = NORMAL_START + 8;
  int cpu = -1;
  EXPECT_U64(bh__pcp_block_where(a, pfn, 0, &cpu), BH__PCPAT_BUDDY);
  EXPECT_U64(bh__pcp_relist_at(a, pfn, 0, BH_MT_MOVABLE, 1), BH_EBUSY); /* not on a list */
  EXPECT_U64(bh__pcp_refill_at(a, pfn, 0, BH_MT_MOVABLE, 0), BH_OK);
  EXPECT_U64(bh__pcp_refill_at(a, pfn + 1, 0, BH_MT_MOVABLE, 1), BH_OK);
  EXPECT_U64(bh__pcp_block_where(a, pfn, 0, &cpu), BH__PCPAT_PCP);
  EXPECT_U64(cpu, 0);
  EXPECT_U64(bh__pcp_block_where(a, pfn, 1, &cpu), BH__PCPAT_SPLIT); /* two blocks */
  EXPECT_U64(bh__pcp_relist_at(a, pfn, 0, BH_MT_MOVABLE, 1), BH_OK);
  EXPECT_U64(bh__pcp_block_where(a, pfn, 0, &cpu), BH__PCPAT_PCP);
  EXPECT_U64(cpu, 1);
  uint64_t l[4] = {0};
  EXPECT_U64(list_of(a, 0, BH_MT_MOVABLE, 0, l, 4), 0);
  EXPECT_U64(list_of(a, 1, BH_MT_MOVABLE, 0, l, 4), 2);
  EXPECT_U64(l[0], pfn + 1);
  EXPECT_U64(l[1], pfn); /* at the tail */
  EXPECT_U64(bt_zone(a, 2).pcp_pages, 2);
  bt_expect_clean(a); /* the checker: each pcp page knows its list's CPU */
  /* allocated in the trace, and allocated before it */
  EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, 0, 1, pfn), BH_OK);
  EXPECT_U64(bh__pcp_block_where(a, pfn, 0, &cpu), BH__PCPAT_ALLOC);
  uint64_t big = NORMAL_START + 1024;
  EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, 3, 1, big), BH_OK);
  EXPECT_U64(bh__pcp_block_where(a, big + 2, 0, &cpu), BH__PCPAT_ALLOC); /* inside it */
  EXPECT_U64(bh__pcp_block_where(a, big + 2, 1, &cpu), BH__PCPAT_ALLOC);
  EXPECT_U64(bh__pcp_block_where(a, big + 2, 4, &cpu), BH__PCPAT_INVALID); /* no pcp order */
  EXPECT_U64(bh__pcp_block_where(a, big + 1, 1, &cpu), BH__PCPAT_INVALID); /* unaligned */
  bh_arena_destroy(a);
}

/* Allocations at recorded pfns from a long pcp list, head first: finding a block's list is
 * O(1) (its CPU is in the page), not a walk to the list's head, which made this quadratic
 * (a 64 Ki-page list took minutes). */
static void test_long_list(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  enum { N = 1 << 16 };
  for (uint64_t i = 0; i < N; i++)
    EXPECT_U64(bh__pcp_refill_at(a, NORMAL_START + i, 0, BH_MT_MOVABLE, 1), BH_OK);
  EXPECT_U64(bt_zone(a, 2).pcp_pages, N);
  for (uint64_t i = 0; i < N; i++)
    EXPECT_U64(bh_alloc_pfn_at(a, BH_GFP_MOVABLE, 0, 1, NORMAL_START + i), BH_OK);
  EXPECT_U64(bt_zone(a, 2).pcp_pages, 0);
  EXPECT_U64(bt_stat(a, BH_STAT_pcp_alloc), N);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

/* Free blocks on the Normal zone's list for (order, mt). */
static uint64_t free_list_len(bh_arena_t *a, unsigned order, int mt) {
  bh_zone_t *z = &a->zones[2];
  uint32_t head = bh__free_list(z, order, mt);
  uint64_t n = 0;
  for (uint32_t x = a->pages[head].next; x != head; x = a->pages[x].next)
    n++;
  return n;
}

/*
 * A claim as mm_page_alloc_extfrag reports it (bh__claim_block_at).  Below pageblock order the
 * one pageblock is retyped and every free block in it moves to the new type's lists
 * (__move_freepages_block, Linux 6.12 mm/page_alloc.c:1687-1715, called at :2023); at or
 * above it every pageblock of the block is retyped (change_pageblock_range, :1977), and a free
 * block larger than the range has one type over all its pageblocks (__free_one_page matches a
 * merged buddy's type, :870-874), so all of them go.  HighAtomic (and Isolate) pageblocks are
 * never claimed (:1969-1970).
 */
static void test_claim(void **state) {
  (void)state;
  bh_arena_t *a = default_sim();
  uint64_t pb = 1ull << a->pb_order, top = 1ull << TOP;
  uint64_t m10 = free_list_len(a, TOP, BH_MT_MOVABLE);
  EXPECT_U64(bh__pb_mt(a, NORMAL_START), BH_MT_MOVABLE);
  /* order 9 inside a free order-10 block: both of its pageblocks */
  EXPECT_U64(bh__claim_block_at(a, NORMAL_START + 7, a->pb_order, BH_MT_UNMOVABLE), 2);
  EXPECT_U64(bh__pb_mt(a, NORMAL_START), BH_MT_UNMOVABLE);
  EXPECT_U64(bh__pb_mt(a, NORMAL_START + pb), BH_MT_UNMOVABLE);
  EXPECT_U64(free_list_len(a, TOP, BH_MT_UNMOVABLE), 1);
  EXPECT_U64(free_list_len(a, TOP, BH_MT_MOVABLE), m10 - 1);
  EXPECT_U64(bh__claim_block_at(a, NORMAL_START, 0, BH_MT_UNMOVABLE), 0); /* already */
  /* below pageblock order: a refill split the next top block around its first page; the
   * claim takes its first pageblock (orders 0..8 free in it) and leaves the second */
  uint64_t b = NORMAL_START + top;
  EXPECT_U64(bh__pcp_refill_at(a, b, 0, BH_MT_MOVABLE, 0), BH_OK);
  EXPECT_U64(bh__claim_block_at(a, b + 3, 0, BH_MT_RECLAIMABLE), 1);
  EXPECT_U64(bh__pb_mt(a, b), BH_MT_RECLAIMABLE);
  EXPECT_U64(bh__pb_mt(a, b + pb), BH_MT_MOVABLE);
  for (unsigned o = 0; o < a->pb_order; o++)
    EXPECT_U64(free_list_len(a, o, BH_MT_RECLAIMABLE), 1);
  EXPECT_U64(free_list_len(a, a->pb_order, BH_MT_RECLAIMABLE), 0);
  EXPECT_U64(free_list_len(a, a->pb_order, BH_MT_MOVABLE), 1); /* the second pageblock */
  bt_expect_clean(a);
  /* refused, nothing changed: a HighAtomic pageblock, a type the claim cannot give, outside */
  uint64_t h = NORMAL_START + 2 * top;
  uint8_t *t = &a->pageblock[h >> a->pb_order];
  uint8_t was = *t;
  *t = (uint8_t)((was & ~7u) | BH_MT_HIGHATOMIC);
  EXPECT_U64(bh__claim_block_at(a, h, 0, BH_MT_UNMOVABLE), BH_EBUSY);
  EXPECT_U64(bh__pb_mt(a, h), BH_MT_HIGHATOMIC);
  *t = was;
  EXPECT_U64(bh__claim_block_at(a, h, 0, BH_MT_HIGHATOMIC), BH_EINVAL);
  EXPECT_U64(bh__claim_block_at(a, a->nr_pages, 0, BH_MT_UNMOVABLE), BH_EFAULT);
  EXPECT_U64(bh__pb_mt(a, h), BH_MT_MOVABLE);
  bh__count_fallback_at(a, b, 0, true);
  EXPECT_U64(bt_stat(a, BH_STAT_extfrag_fallback), 1);
  EXPECT_U64(bt_stat(a, BH_STAT_extfrag_fragmenting), 1);
  EXPECT_U64(bt_stat(a, BH_STAT_extfrag_claim), 1);
  bt_expect_clean(a);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refill_and_drain),
      cmocka_unit_test(test_free_nodrain),
      cmocka_unit_test(test_relist_and_where),
      cmocka_unit_test(test_long_list),
      cmocka_unit_test(test_claim),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
