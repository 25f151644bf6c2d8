/*
 * Bitmap page hinting (src/strategies/bitmap.c) on crafted states: small mmap arenas without pcp
 * lists, order-9 chunks allocated by the test so that it knows which frees merge where.
 *
 * The usual layout: 48 order-9 chunks are allocated from a 128 MiB Normal zone; they come in
 * buddy pairs (an order-10 block split in two), and freeing the lower half of a pair whose
 * upper half stays allocated ends its merge at exactly order 9: one chunk bit, one block.
 * Two such "lone" chunks are never adjacent, so each report range is its own madvise call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "hinting/hint_test_util.h"

#define NCHUNKS 48
#define GFP BH_GFP_MOVABLE

typedef struct crafted {
  bh_arena_t *a;
  bh_hint_t *h;
  uint64_t chunk[NCHUNKS]; /* allocated chunks, in allocation order */
  int nchunk;
  uint64_t lone[NCHUNKS]; /* lower halves of allocated pairs */
  int nlone;
} crafted_t;

static bool owned(const crafted_t *c, uint64_t pfn) {
  for (int i = 0; i < c->nchunk; i++)
    if (c->chunk[i] == pfn)
      return true;
  return false;
}

/* Tag of page pfn in generation gen, written into the first and last word of the page. */
static uint64_t tag(uint64_t pfn, uint64_t gen) { return (pfn * 0x9e3779b97f4a7c15ull) ^ gen; }

static void write_chunk(bh_arena_t *a, uint64_t pfn, uint64_t gen) {
  for (uint64_t i = 0; i < CHUNK_PAGES; i++) {
    uint64_t *w = bh_pfn_to_addr(a, pfn + i);
    w[0] = w[BH_PAGE_SIZE / 8 - 1] = tag(pfn + i, gen);
  }
}

static uint64_t bad_pages(bh_arena_t *a, uint64_t pfn, uint64_t gen) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < CHUNK_PAGES; i++) {
    uint64_t *w = bh_pfn_to_addr(a, pfn + i);
    bad += w[0] != tag(pfn + i, gen) || w[BH_PAGE_SIZE / 8 - 1] != tag(pfn + i, gen);
  }
  return bad;
}

/* Allocates NCHUNKS chunks on `node` (cpu == node) of an arena already made, finds the lone
 * chunks.  Every chunk gets its tags (generation 1). */
static void craft_node(crafted_t *c, int node) {
  c->nchunk = c->nlone = 0;
  for (int i = 0; i < NCHUNKS; i++) {
    assert_int_equal(bh_alloc_pfn(c->a, GFP | BH_GFP_THISNODE, CHUNK_ORDER, node, &c->chunk[i]),
                     BH_OK);
    c->nchunk++;
    write_chunk(c->a, c->chunk[i], 1);
  }
  for (int i = 0; i < c->nchunk; i++)
    if (!(c->chunk[i] & CHUNK_PAGES) && owned(c, c->chunk[i] ^ CHUNK_PAGES))
      c->lone[c->nlone++] = c->chunk[i];
  assert_true(c->nlone >= 20);
}

static void craft(crafted_t *c, const bh_opt_t *opts, size_t nopts) {
  memset(c, 0, sizeof(*c));
  ht_arena_spec_t spec = {.normal_mib = 128, .pcp = false, .backing = BH_BACKING_MMAP};
  c->a = ht_arena(&spec);
  craft_node(c, 0);
  assert_int_equal(ht_attach(c->a, "bitmap", opts, nopts, BH_CLOCK_VIRTUAL, &c->h), BH_OK);
}

static void uncraft(crafted_t *c) {
  assert_int_equal(ht_check(c->a), 0);
  bh_hint_detach(c->h);
  bh_arena_destroy(c->a);
}

static bool is_free_chunk(bh_arena_t *a, uint64_t pfn, unsigned want_order) {
  bh_zone_t *z = bh_arena_zone(a, a->block_zone[pfn >> a->max_order]);
  unsigned order = 99;
  bh_zone_lock(z);
  bool f = bh_zone_free_block(z, pfn, &order, NULL);
  bh_zone_unlock(z);
  return f && order == want_order;
}

static uint64_t now_plus(bh_hint_t *h, uint64_t d) { return bh_hint_now(h) + d; }

/* ---------------------------------------------------------------------------------------- */

/* 15 chunk bits do not wake the worker, the 16th does; the step isolates, reports and puts
 * back all 16, and the putback sets no bit again. */
static void test_threshold_cycle(void **state) {
  (void)state;
  crafted_t c;
  craft(&c, NULL, 0);
  bh_arena_t *a = c.a;
  bh_hint_t *h = c.h;
  uint64_t notify0 = ht_astat(a, BH_STAT_hint_notify);
  assert_int_equal(ht_sstat(h, "bits_set"), 0);

  for (int i = 0; i < 15; i++) {
    assert_int_equal(bh_free_pfn(a, c.lone[i], CHUNK_ORDER, 0), BH_OK);
    assert_int_equal(ht_sstat(h, "bits_set"), (uint64_t)i + 1);
    assert_int_equal(ht_sstat(h, "bits_pending"), (uint64_t)i + 1);
    assert_int_equal(ht_astat(a, BH_STAT_hint_notify) - notify0, (uint64_t)i + 1);
    assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
    /* time passes, nothing runs */
    assert_int_equal(bh_hint_advance(h, now_plus(h, 10 * BH_NS_PER_SEC)), 0);
  }
  assert_int_equal(ht_hstats(h).steps, 0);
  assert_int_equal(ht_sstat(h, "passes"), 0);

  assert_int_equal(bh_free_pfn(a, c.lone[15], CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(ht_sstat(h, "bits_set"), 16);
  /* the 16th wakes the worker at once */
  assert_int_equal(bh_hint_next_due(h), bh_hint_now(h));
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_int_equal(ht_sstat(h, "passes"), 1);
  assert_int_equal(ht_sstat(h, "isolated"), 16);
  assert_int_equal(ht_sstat(h, "stale_bits"), 0);
  assert_int_equal(ht_sstat(h, "isolate_fail"), 0);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 16);
  assert_int_equal(ht_sstat(h, "reported_pages"), 16 * CHUNK_PAGES);
  assert_int_equal(ht_sstat(h, "report_batches"), 1); /* one batch of 16 */
  assert_int_equal(ht_sstat(h, "put_back"), 16);
  assert_int_equal(ht_sstat(h, "bits_pending"), 0);
  bh_hint_stats_t hs = ht_hstats(h);
  assert_int_equal(hs.steps, 1);
  assert_int_equal(hs.report.ranges, 16);
  assert_int_equal(hs.report.calls, 16); /* no two lone chunks touch */
  assert_int_equal(hs.report.bytes, 16 * CHUNK_PAGES * BH_PAGE_SIZE);
  assert_int_equal(hs.report.errors, 0);
  assert_int_equal(hs.discarded_pages, 16 * CHUNK_PAGES);
  assert_int_equal(ht_astat(a, BH_STAT_isolate_pages), 16 * CHUNK_PAGES);
  assert_int_equal(ht_astat(a, BH_STAT_putback_pages), 16 * CHUNK_PAGES);

  /* reported chunks: free again at order 9, discarded, not resident; their buddies keep data */
  for (int i = 0; i < 16; i++) {
    assert_true(is_free_chunk(a, c.lone[i], CHUNK_ORDER));
    assert_int_equal(ht_discarded_range(a, c.lone[i], CHUNK_PAGES), CHUNK_PAGES);
    assert_int_equal(ht_resident(a, c.lone[i], CHUNK_PAGES), 0);
    uint64_t buddy = c.lone[i] ^ CHUNK_PAGES;
    assert_int_equal(ht_resident(a, buddy, CHUNK_PAGES), CHUNK_PAGES);
    assert_int_equal(bad_pages(a, buddy, 1), 0);
  }
  /* the putback set no bit and notified nobody */
  assert_int_equal(ht_sstat(h, "bits_set"), 16);
  assert_int_equal(ht_astat(a, BH_STAT_hint_notify) - notify0, 16);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  assert_int_equal(bh_hint_advance(h, now_plus(h, 60 * BH_NS_PER_SEC)), 0);
  assert_int_equal(ht_check(a), 0);

  /*
   * The chunks went back as v11's release_buddy_pages returns them, __free_one_page(...,
   * hint = false): not to the tail, since the tail test covers only orders below
   * MAX_ORDER - 2 (5.2's __free_one_page; in 6.12 buddy_merge_likely() returns false for
   * order >= MAX_PAGE_ORDER - 1, mm/page_alloc.c:765-766), but to the head, one after the
   * other in scan (pfn) order.  So the next order-9 allocation takes the last one put back,
   * lone[15] (__rmqueue_smallest takes the list head, mm/page_alloc.c:743-747, 1641), and
   * refaults all of its 512 pages.  A reported chunk allocated and freed again is a new free:
   * its bit is set again.
   */
  uint64_t pfn;
  assert_int_equal(bh_alloc_pfn(a, GFP, CHUNK_ORDER, 0, &pfn), BH_OK);
  assert_int_equal(pfn, c.lone[15]);
  assert_int_equal(ht_hstats(h).refault_pages, CHUNK_PAGES);
  assert_int_equal(ht_discarded_range(a, pfn, CHUNK_PAGES), 0);
  assert_int_equal(bh_free_pfn(a, pfn, CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(ht_sstat(h, "bits_set"), 17);
  assert_int_equal(ht_sstat(h, "bits_pending"), 1);
  uncraft(&c);
}

/* More than a batch pending: reported in batches of 16. */
static void test_batches(void **state) {
  (void)state;
  crafted_t c;
  craft(&c, NULL, 0);
  for (int i = 0; i < 20; i++)
    assert_int_equal(bh_free_pfn(c.a, c.lone[i], CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_hint_advance(c.h, bh_hint_now(c.h)), 1);
  assert_int_equal(ht_sstat(c.h, "reported_blocks"), 20);
  assert_int_equal(ht_sstat(c.h, "report_batches"), 2); /* 16 + 4 */
  assert_int_equal(ht_hstats(c.h).report.ranges, 20);
  uncraft(&c);

  /* batch=5: 20 blocks in 4 batches */
  bh_opt_t o = {"batch", "5"};
  craft(&c, &o, 1);
  for (int i = 0; i < 20; i++)
    assert_int_equal(bh_free_pfn(c.a, c.lone[i], CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_hint_advance(c.h, bh_hint_now(c.h)), 1);
  assert_int_equal(ht_sstat(c.h, "reported_blocks"), 20);
  assert_int_equal(ht_sstat(c.h, "report_batches"), 4);
  uncraft(&c);
}

/* A chunk allocated again before the worker runs leaves a stale bit: counted and cleared, not
 * reported, and its new data survives. */
static void test_stale_bit(void **state) {
  (void)state;
  crafted_t c;
  craft(&c, NULL, 0);
  bh_arena_t *a = c.a;
  bh_hint_t *h = c.h;
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_free_pfn(a, c.lone[i], CHUNK_ORDER, 0), BH_OK);
  /* the last freed chunk is at the head of the order-9 list: allocation takes it back */
  uint64_t pfn;
  assert_int_equal(bh_alloc_pfn(a, GFP, CHUNK_ORDER, 0, &pfn), BH_OK);
  assert_int_equal(pfn, c.lone[15]);
  write_chunk(a, pfn, 2);
  assert_int_equal(ht_sstat(h, "bits_pending"), 16); /* bits are not cleared on allocation */
  assert_int_equal(ht_sstat(h, "cleared_on_alloc"), 0);

  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_int_equal(ht_sstat(h, "stale_bits"), 1);
  assert_int_equal(ht_sstat(h, "isolated"), 15);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 15);
  assert_int_equal(ht_sstat(h, "bits_pending"), 0);
  assert_int_equal(ht_hstats(h).report.ranges, 15);
  assert_int_equal(ht_discarded_range(a, pfn, CHUNK_PAGES), 0);
  assert_int_equal(ht_resident(a, pfn, CHUNK_PAGES), CHUNK_PAGES);
  assert_int_equal(bad_pages(a, pfn, 2), 0);
  for (int i = 0; i < 15; i++)
    assert_int_equal(ht_discarded_range(a, c.lone[i], CHUNK_PAGES), CHUNK_PAGES);
  uncraft(&c);
}

/*
 * v11 (<20190710195158.19640-2-nitesh@redhat.com>) bases a zone type's bitmap on the
 * zone's zone_start_pfn (page_hinting_enable), counts a chunk's bit as (pfn - base_pfn) >>
 * PAGE_HINTING_MIN_ORDER (pfn_to_bit) and probes (bit << PAGE_HINTING_MIN_ORDER) + base_pfn
 * (scan_zone_free_area).  An x86 DMA zone starts at pfn 1: the order-9 block freed at 512
 * sets bit 0, which probes pfn 1 (a free order-0 page), and the order-10 block at 1024 sets
 * bit 1, which probes 513 (inside the order-9 block): both bits are stale, nothing is hinted.
 */
static void test_dma_base_pfn(void **state) {
  (void)state;
  bh_config_t c;
  bh_config_init(&c);
  for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
    c.zone_bytes[t] = 0;
  c.backing = BH_BACKING_SIM;
  c.pcp = false;
  c.nr_layout_zones = 1;
  c.layout_zones[0] = (bh_zone_layout_t){.node = 0,
                                         .type = BH_ZONE_DMA,
                                         .start_pfn = 1,
                                         .spanned_pages = 4095,
                                         .present_pages = 4095,
                                         .managed_pages = 4095,
                                         .wmark_min = 1,
                                         .wmark_low = 1,
                                         .wmark_high = 1};
  bh_arena_t *a = NULL;
  assert_int_equal(bh_arena_create(&c, &a), BH_OK);
  bh_opt_t opt = {"threshold", "1"};
  bh_hint_t *h = NULL;
  assert_int_equal(ht_attach(a, "bitmap", &opt, 1, BH_CLOCK_VIRTUAL, &h), BH_OK);
  uint64_t p9, p10;
  assert_int_equal(bh_alloc_pfn(a, GFP, CHUNK_ORDER, 0, &p9), BH_OK);
  assert_int_equal(p9, 512);
  assert_int_equal(bh_alloc_pfn(a, GFP, CHUNK_ORDER + 1, 0, &p10), BH_OK);
  assert_int_equal(p10, 1024);
  assert_int_equal(bh_free_pfn(a, p9, CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_free_pfn(a, p10, CHUNK_ORDER + 1, 0), BH_OK);
  assert_int_equal(ht_sstat(h, "bits_set"), 2);
  assert_true(bh_hint_advance(h, bh_hint_now(h)) >= 1);
  assert_int_equal(ht_sstat(h, "stale_bits"), 2);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 0);
  assert_int_equal(ht_check(a), 0);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* clear_on_alloc=1: the allocation clears the bit instead. */
static void test_clear_on_alloc(void **state) {
  (void)state;
  crafted_t c;
  bh_opt_t o = {"clear_on_alloc", "1"};
  craft(&c, &o, 1);
  bh_arena_t *a = c.a;
  bh_hint_t *h = c.h;
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_free_pfn(a, c.lone[i], CHUNK_ORDER, 0), BH_OK);
  uint64_t pfn;
  assert_int_equal(bh_alloc_pfn(a, GFP, CHUNK_ORDER, 0, &pfn), BH_OK);
  assert_int_equal(pfn, c.lone[15]);
  assert_int_equal(ht_sstat(h, "cleared_on_alloc"), 1);
  assert_int_equal(ht_sstat(h, "bits_pending"), 15);
  /* the request made by the 16th free runs, but the zone is below the threshold again */
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 0);
  assert_int_equal(ht_sstat(h, "stale_bits"), 0);
  assert_int_equal(ht_sstat(h, "bits_pending"), 15);
  /* one more free reaches the threshold again */
  assert_int_equal(bh_free_pfn(a, c.lone[16], CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_hint_next_due(h), bh_hint_now(h));
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_int_equal(ht_sstat(h, "stale_bits"), 0);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 16);
  assert_int_equal(ht_sstat(h, "bits_pending"), 0);
  assert_int_equal(ht_discarded_range(a, pfn, CHUNK_PAGES), 0);
  uncraft(&c);
}

/* A block that merges to order 10 sets the bit of its first chunk, once. */
static void test_merge_to_order10(void **state) {
  (void)state;
  crafted_t c;
  bh_opt_t o = {"threshold", "2"};
  craft(&c, &o, 1);
  bh_arena_t *a = c.a;
  bh_hint_t *h = c.h;
  uint64_t p = c.lone[0], q = c.lone[1];
  assert_int_equal(bh_free_pfn(a, p, CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_free_pfn(a, p + CHUNK_PAGES, CHUNK_ORDER, 0), BH_OK); /* -> order 10 */
  assert_true(is_free_chunk(a, p, 10));
  assert_int_equal(ht_sstat(h, "bits_set"), 1);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  /* the upper half first: its bit, then the merge sets the lower chunk's bit */
  assert_int_equal(bh_free_pfn(a, q + CHUNK_PAGES, CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_free_pfn(a, q, CHUNK_ORDER, 0), BH_OK);
  assert_true(is_free_chunk(a, q, 10));
  assert_int_equal(ht_sstat(h, "bits_set"), 3);
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  /* p (order 10) and q (order 10) reported; q's upper bit is stale (inside q's block) */
  assert_int_equal(ht_sstat(h, "reported_blocks"), 2);
  assert_int_equal(ht_sstat(h, "reported_pages"), 2 * 2 * CHUNK_PAGES);
  assert_int_equal(ht_sstat(h, "stale_bits"), 1);
  assert_int_equal(ht_discarded_range(a, p, 2 * CHUNK_PAGES), 2 * CHUNK_PAGES);
  assert_int_equal(ht_discarded_range(a, q, 2 * CHUNK_PAGES), 2 * CHUNK_PAGES);
  assert_true(is_free_chunk(a, p, 10));
  assert_true(is_free_chunk(a, q, 10));
  uncraft(&c);
}

/* Below the watermark the isolation fails: the bit is cleared, the block stays free and is
 * not reported. */
static void test_isolate_watermark(void **state) {
  (void)state;
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.zone_bytes[BH_ZONE_DMA] = cfg.zone_bytes[BH_ZONE_DMA32] = 0;
  cfg.zone_bytes[BH_ZONE_NORMAL] = 128 * MiB;
  cfg.pcp = false;
  cfg.min_free_kbytes = 16384; /* min 4096 pages */
  bh_arena_t *a;
  assert_int_equal(bh_arena_create(&cfg, &a), BH_OK);
  /* fill with order-9 chunks down into the min reserve (__GFP_HIGH) */
  uint64_t chunks[64];
  int n = 0;
  while (n < 64 && bh_alloc_pfn(a, GFP | BH_GFP_HIGH, CHUNK_ORDER, 0, &chunks[n]) == BH_OK)
    n++;
  bh_zone_info_t zi;
  assert_int_equal(bh_zone_info(a, 0, &zi), 0);
  assert_true(zi.free_pages < zi.wmark_min);
  bh_opt_t o = {"threshold", "2"};
  bh_hint_t *h;
  assert_int_equal(ht_attach(a, "bitmap", &o, 1, BH_CLOCK_VIRTUAL, &h), BH_OK);
  int freed = 0;
  uint64_t f[2];
  for (int i = 0; i < n && freed < 2; i++) {
    uint64_t p = chunks[i];
    bool buddy_alloc = false;
    for (int j = 0; j < n; j++)
      buddy_alloc |= chunks[j] == (p ^ CHUNK_PAGES);
    if (!(p & CHUNK_PAGES) && buddy_alloc) {
      assert_int_equal(bh_free_pfn(a, p, CHUNK_ORDER, 0), BH_OK);
      f[freed++] = p;
    }
  }
  assert_int_equal(freed, 2);
  assert_int_equal(bh_zone_info(a, 0, &zi), 0);
  assert_true(zi.free_pages <= zi.wmark_min + CHUNK_PAGES);
  assert_int_equal(bh_hint_advance(h, 0), 1);
  assert_int_equal(ht_sstat(h, "isolate_fail"), 2);
  assert_int_equal(ht_sstat(h, "isolated"), 0);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 0);
  assert_int_equal(ht_sstat(h, "bits_pending"), 0);
  assert_int_equal(ht_astat(a, BH_STAT_isolate_fail), 2);
  assert_int_equal(ht_hstats(h).report.ranges, 0);
  for (int i = 0; i < 2; i++) {
    assert_true(is_free_chunk(a, f[i], CHUNK_ORDER));
    assert_int_equal(ht_discarded_range(a, f[i], CHUNK_PAGES), 0);
  }
  assert_int_equal(ht_check(a), 0);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* Allocates NCHUNKS chunks on each of two nodes (one Normal zone each). */
static bh_arena_t *two_node_arena(crafted_t *n0, crafted_t *n1, bh_zone_info_t *z0,
                                  bh_zone_info_t *z1) {
  ht_arena_spec_t spec = {.normal_mib = 128, .nodes = 2, .pcp = false, .backing = BH_BACKING_MMAP};
  memset(n0, 0, sizeof(*n0));
  memset(n1, 0, sizeof(*n1));
  bh_arena_t *a = ht_arena(&spec);
  assert_int_equal(bh_zone_count(a), 2);
  assert_int_equal(bh_zone_info(a, 0, z0), 0);
  assert_int_equal(bh_zone_info(a, 1, z1), 0);
  assert_int_equal(z0->node, 0);
  assert_int_equal(z1->node, 1);
  assert_int_equal(z0->type, BH_ZONE_NORMAL);
  assert_int_equal(z1->type, BH_ZONE_NORMAL);
  n0->a = n1->a = a;
  craft_node(n0, 0);
  craft_node(n1, 1);
  for (int i = 0; i < n0->nchunk; i++)
    assert_true(n0->chunk[i] >= z0->start_pfn && n0->chunk[i] < z0->start_pfn + z0->spanned_pages);
  for (int i = 0; i < n1->nchunk; i++)
    assert_true(n1->chunk[i] >= z1->start_pfn && n1->chunk[i] < z1->start_pfn + z1->spanned_pages);
  return a;
}

/* The still-allocated chunks of a node kept their data. */
static void expect_unfreed_intact(bh_arena_t *a, const crafted_t *n, int nfreed) {
  for (int i = 0; i < n->nchunk; i++) {
    bool freed = false;
    for (int j = 0; j < nfreed; j++)
      freed |= n->chunk[i] == n->lone[j];
    if (!freed)
      assert_int_equal(bad_pages(a, n->chunk[i], 1), 0);
  }
}

/*
 * Two nodes, two Normal zones: v11 keeps one bitmap and one counter per zone type
 * (free_area[MAX_NR_ZONES], spanning the lowest start to the highest end of that type over
 * the nodes, page_hinting_enable), so 10 frees on node 0 and 6 on node 1 reach the threshold
 * of 16 together, and the pass that follows scans both nodes' chunks in one bitmap.
 */
static void test_two_nodes(void **state) {
  (void)state;
  crafted_t n0, n1;
  bh_zone_info_t z0, z1;
  bh_arena_t *a = two_node_arena(&n0, &n1, &z0, &z1);
  bh_hint_t *h;
  assert_int_equal(ht_attach(a, "bitmap", NULL, 0, BH_CLOCK_VIRTUAL, &h), BH_OK);

  for (int i = 0; i < 10; i++)
    assert_int_equal(bh_free_pfn(a, n0.lone[i], CHUNK_ORDER, 0), BH_OK);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  for (int i = 0; i < 5; i++)
    assert_int_equal(bh_free_pfn(a, n1.lone[i], CHUNK_ORDER, 1), BH_OK);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE); /* 15 for the Normal type */
  assert_int_equal(bh_free_pfn(a, n1.lone[5], CHUNK_ORDER, 1), BH_OK);
  assert_int_equal(bh_hint_next_due(h), bh_hint_now(h)); /* the 16th, on the other node */
  assert_int_equal(ht_sstat(h, "bits_pending"), 16);
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  /* one pass over the Normal bitmap: node 0's ten chunks, then node 1's six, one batch */
  assert_int_equal(ht_sstat(h, "reported_blocks"), 16);
  assert_int_equal(ht_sstat(h, "report_batches"), 1);
  assert_int_equal(ht_sstat(h, "stale_bits"), 0);
  assert_int_equal(ht_sstat(h, "bits_pending"), 0);
  for (int i = 0; i < 10; i++)
    assert_int_equal(ht_discarded_range(a, n0.lone[i], CHUNK_PAGES), CHUNK_PAGES);
  for (int i = 0; i < 6; i++)
    assert_int_equal(ht_discarded_range(a, n1.lone[i], CHUNK_PAGES), CHUNK_PAGES);
  assert_int_equal(ht_discarded_range(a, z0.start_pfn, z0.spanned_pages), 10 * CHUNK_PAGES);
  assert_int_equal(ht_discarded_range(a, z1.start_pfn, z1.spanned_pages), 6 * CHUNK_PAGES);
  /* the bitmap spans both zones: (2 * 32768 pages >> 9) + 1 bits, scanned in 64-bit words */
  assert_int_equal(ht_sstat(h, "scanned_bits"), 64 * ((2 * 32768 / CHUNK_PAGES + 1 + 63) / 64));
  expect_unfreed_intact(a, &n0, 10);
  expect_unfreed_intact(a, &n1, 6);
  assert_int_equal(ht_check(a), 0);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* per_zone=1 (not in the series): one bitmap per zone, so the nodes do not add up. */
static void test_two_nodes_per_zone(void **state) {
  (void)state;
  crafted_t n0, n1;
  bh_zone_info_t z0, z1;
  bh_arena_t *a = two_node_arena(&n0, &n1, &z0, &z1);
  bh_opt_t o = {"per_zone", "1"};
  bh_hint_t *h;
  assert_int_equal(ht_attach(a, "bitmap", &o, 1, BH_CLOCK_VIRTUAL, &h), BH_OK);

  /* 10 in node 0: below its threshold; 16 in node 1: node 1's worker pass */
  for (int i = 0; i < 10; i++)
    assert_int_equal(bh_free_pfn(a, n0.lone[i], CHUNK_ORDER, 0), BH_OK);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_free_pfn(a, n1.lone[i], CHUNK_ORDER, 1), BH_OK);
  assert_int_equal(ht_sstat(h, "bits_pending"), 26);
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 16);
  assert_int_equal(ht_sstat(h, "stale_bits"), 0);
  assert_int_equal(ht_sstat(h, "bits_pending"), 10); /* node 0's bits untouched */
  for (int i = 0; i < 16; i++)
    assert_int_equal(ht_discarded_range(a, n1.lone[i], CHUNK_PAGES), CHUNK_PAGES);
  for (int i = 0; i < 10; i++)
    assert_int_equal(ht_discarded_range(a, n0.lone[i], CHUNK_PAGES), 0);
  assert_int_equal(ht_discarded_range(a, z0.start_pfn, z0.spanned_pages), 0);
  assert_int_equal(ht_hstats(h).discarded_pages, 16 * CHUNK_PAGES);

  /* 6 more in node 0 reach its threshold: reported from node 0 */
  for (int i = 10; i < 16; i++)
    assert_int_equal(bh_free_pfn(a, n0.lone[i], CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_hint_next_due(h), bh_hint_now(h));
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 32);
  assert_int_equal(ht_sstat(h, "bits_pending"), 0);
  for (int i = 0; i < 16; i++)
    assert_int_equal(ht_discarded_range(a, n0.lone[i], CHUNK_PAGES), CHUNK_PAGES);
  assert_int_equal(ht_discarded_range(a, z0.start_pfn, z0.spanned_pages), 16 * CHUNK_PAGES);
  assert_int_equal(ht_discarded_range(a, z1.start_pfn, z1.spanned_pages), 16 * CHUNK_PAGES);
  expect_unfreed_intact(a, &n0, 16);
  expect_unfreed_intact(a, &n1, 16);
  assert_int_equal(ht_check(a), 0);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/*
 * putback_tail=1 (not in the series): reported chunks go back to the tail, as free page
 * reporting's __putback_isolated_page does (FPI_TO_TAIL, mm/page_alloc.c:2947-2948), so the
 * next order-9 allocation takes the first one put back, lone[0], which was isolated first.
 */
static void test_putback_tail_option(void **state) {
  (void)state;
  crafted_t c;
  bh_opt_t o = {"putback_tail", "1"};
  craft(&c, &o, 1);
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_free_pfn(c.a, c.lone[i], CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_hint_advance(c.h, bh_hint_now(c.h)), 1);
  assert_int_equal(ht_sstat(c.h, "reported_blocks"), 16);
  uint64_t pfn;
  assert_int_equal(bh_alloc_pfn(c.a, GFP, CHUNK_ORDER, 0, &pfn), BH_OK);
  assert_int_equal(pfn, c.lone[0]);
  assert_int_equal(ht_hstats(c.h).refault_pages, CHUNK_PAGES);
  assert_int_equal(bh_free_pfn(c.a, pfn, CHUNK_ORDER, 0), BH_OK);
  uncraft(&c);
}

/* ---------------------------------------------------------------------------------------- */
/* Reporter coalescing seen end to end                                                       */
/* ---------------------------------------------------------------------------------------- */

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

/* Start of `len` consecutive blocks of `step` pages, all in v (sorted), aligned to align. */
static uint64_t find_run(const uint64_t *v, int n, uint64_t step, int len, uint64_t align) {
  for (int i = 0; i + len <= n; i++) {
    if (v[i] % align)
      continue;
    int k = 1;
    while (k < len && v[i + k] == v[i] + (uint64_t)k * step)
      k++;
    if (k == len)
      return v[i];
  }
  return UINT64_MAX;
}

/* 16 adjacent order-9 blocks (max_order 9, bitmap order=9): one madvise call, 32 MiB. */
static void test_coalesce_16_chunks(void **state) {
  (void)state;
  ht_arena_spec_t spec = {
      .normal_mib = 128, .max_order = 9, .pcp = false, .backing = BH_BACKING_MMAP};
  bh_arena_t *a = ht_arena(&spec);
  uint64_t v[64];
  int n = 0;
  while (n < 64 && bh_alloc_pfn(a, GFP, CHUNK_ORDER, 0, &v[n]) == BH_OK) {
    write_chunk(a, v[n], 1);
    n++;
  }
  qsort(v, (size_t)n, sizeof(v[0]), cmp_u64);
  uint64_t start = find_run(v, n, CHUNK_PAGES, 16, CHUNK_PAGES);
  assert_true(start != UINT64_MAX);
  bh_opt_t o = {"order", "9"};
  bh_hint_t *h;
  assert_int_equal(ht_attach(a, "bitmap", &o, 1, BH_CLOCK_VIRTUAL, &h), BH_OK);
  /* freed in a scrambled order: the reporter sorts */
  static const int perm[16] = {7, 3, 12, 0, 15, 9, 1, 5, 14, 10, 2, 6, 11, 4, 13, 8};
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_free_pfn(a, start + (uint64_t)perm[i] * CHUNK_PAGES, CHUNK_ORDER, 0),
                     BH_OK);
  assert_int_equal(ht_sstat(h, "bits_set"), 16);
  assert_int_equal(ht_resident(a, start, 16 * CHUNK_PAGES), 16 * CHUNK_PAGES);
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 16);
  bh_hint_stats_t hs = ht_hstats(h);
  assert_int_equal(hs.report.calls, 1);
  assert_int_equal(hs.report.ranges, 16);
  assert_int_equal(hs.report.bytes, 32 * MiB);
  assert_int_equal(ht_resident(a, start, 16 * CHUNK_PAGES), 0);
  for (int i = 0; i < n; i++)
    if (v[i] < start || v[i] >= start + 16 * CHUNK_PAGES) {
      assert_int_equal(ht_resident(a, v[i], CHUNK_PAGES), CHUNK_PAGES);
      assert_int_equal(bad_pages(a, v[i], 1), 0);
    }
  assert_int_equal(ht_check(a), 0);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

/* 16 adjacent chunks freed as 8 order-10 blocks (default max order, threshold 8): one call. */
static void test_coalesce_8_order10(void **state) {
  (void)state;
  crafted_t c;
  bh_opt_t o = {"threshold", "8"};
  craft(&c, &o, 1);
  uint64_t v[NCHUNKS];
  memcpy(v, c.chunk, sizeof(v));
  qsort(v, NCHUNKS, sizeof(v[0]), cmp_u64);
  uint64_t start = find_run(v, NCHUNKS, CHUNK_PAGES, 16, 2 * CHUNK_PAGES);
  assert_true(start != UINT64_MAX);
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_free_pfn(c.a, start + (uint64_t)i * CHUNK_PAGES, CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(ht_sstat(c.h, "bits_set"), 8);
  assert_int_equal(bh_hint_advance(c.h, bh_hint_now(c.h)), 1);
  assert_int_equal(ht_sstat(c.h, "reported_blocks"), 8);
  assert_int_equal(ht_sstat(c.h, "reported_pages"), 16 * CHUNK_PAGES);
  bh_hint_stats_t hs = ht_hstats(c.h);
  assert_int_equal(hs.report.calls, 1);
  assert_int_equal(hs.report.ranges, 8);
  assert_int_equal(hs.report.bytes, 32 * MiB);
  assert_int_equal(ht_resident(c.a, start, 16 * CHUNK_PAGES), 0);
  uncraft(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threshold_cycle),    cmocka_unit_test(test_batches),
      cmocka_unit_test(test_stale_bit),          cmocka_unit_test(test_dma_base_pfn),
      cmocka_unit_test(test_clear_on_alloc),     cmocka_unit_test(test_merge_to_order10),
      cmocka_unit_test(test_isolate_watermark),  cmocka_unit_test(test_two_nodes),
      cmocka_unit_test(test_two_nodes_per_zone), cmocka_unit_test(test_putback_tail_option),
      cmocka_unit_test(test_coalesce_16_chunks), cmocka_unit_test(test_coalesce_8_order10),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
