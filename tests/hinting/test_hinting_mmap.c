/*
 * Bitmap hinting on a real mmap arena: what a report does to the data pages.
 *
 * Most of a 256 MiB arena is allocated as order-0 pages and every page is filled with a
 * pattern; every other 2 MiB region is freed, the pcp lists are drained and the virtual clock
 * advanced.  Then mincore must show every freed region gone (reported) and every page still
 * allocated resident with its pattern; allocating reported pages again counts refaults, and
 * they read back as zeros (MADV_DONTNEED).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "hint_test_util.h"

#define ARENA_MIB 256
#define WORDS (BH_PAGE_SIZE / sizeof(uint64_t))

static uint64_t pattern(uint64_t pfn, uint64_t i) {
  return (pfn * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull) ^ 0x5a5a5a5a5a5a5a5aull;
}

static void fill_page(bh_arena_t *a, uint64_t pfn) {
  uint64_t *w = bh_pfn_to_addr(a, pfn);
  for (uint64_t i = 0; i < WORDS; i++)
    w[i] = pattern(pfn, i);
}

static bool page_ok(bh_arena_t *a, uint64_t pfn) {
  const uint64_t *w = bh_pfn_to_addr(a, pfn);
  for (uint64_t i = 0; i < WORDS; i++)
    if (w[i] != pattern(pfn, i))
      return false;
  return true;
}

static bool page_zero(bh_arena_t *a, uint64_t pfn) {
  const uint64_t *w = bh_pfn_to_addr(a, pfn);
  for (uint64_t i = 0; i < WORDS; i++)
    if (w[i])
      return false;
  return true;
}

static void test_reported_pages_leave_memory(void **state) {
  (void)state;
  ht_arena_spec_t spec = {.normal_mib = ARENA_MIB, .pcp = true, .backing = BH_BACKING_MMAP};
  bh_arena_t *a = ht_arena(&spec);
  uint64_t npages = bh_arena_pages(a);
  assert_int_equal(npages, ARENA_MIB * MiB / BH_PAGE_SIZE);
  bh_hint_t *h;
  assert_int_equal(ht_attach(a, "bitmap", NULL, 0, BH_CLOCK_VIRTUAL, &h), BH_OK);

  /* allocate 90 % as order-0 pages and fill them */
  uint8_t *live = calloc(npages, 1);
  assert_non_null(live);
  uint64_t want = npages * 9 / 10, got = 0;
  while (got < want) {
    uint64_t pfn;
    int err = bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &pfn);
    if (err == BH_ENOSPC)
      break;
    assert_int_equal(err, BH_OK);
    assert_int_equal(live[pfn], 0);
    live[pfn] = 1;
    fill_page(a, pfn);
    got++;
  }
  assert_true(got >= npages * 8 / 10);
  uint64_t res0 = ht_resident(a, 0, npages);
  assert_true(res0 >= got);

  /* free every page of the even 2 MiB regions */
  uint64_t nregions = npages >> CHUNK_ORDER;
  bool *had = calloc(nregions, sizeof(bool));
  assert_non_null(had);
  uint64_t freed = 0;
  for (uint64_t pfn = 0; pfn < npages; pfn++)
    if (live[pfn] && !((pfn >> CHUNK_ORDER) & 1)) {
      had[pfn >> CHUNK_ORDER] = true;
      assert_int_equal(bh_free_pfn(a, pfn, 0, 0), BH_OK);
      live[pfn] = 0;
      freed++;
    }
  bh_drain_pcp(a);
  /* each even region is now one free block of order >= 9, with its bit */
  assert_true(ht_sstat(h, "bits_pending") >= 16);
  assert_int_equal(ht_hstats(h).report.calls, 0);

  long steps = bh_hint_advance(h, 60 * BH_NS_PER_SEC);
  assert_true(steps >= 1);
  bh_hint_stats_t hs = ht_hstats(h);
  assert_true(hs.report.calls > 0);
  assert_int_equal(hs.report.errors, 0);
  assert_int_equal(hs.report.bytes, hs.discarded_pages * BH_PAGE_SIZE);
  assert_int_equal(ht_sstat(h, "reported_pages"), hs.discarded_pages);

  uint64_t reported_regions = 0, bad_alloc = 0, nonres_alloc = 0;
  for (uint64_t r = 0; r < nregions; r++) {
    uint64_t base = r << CHUNK_ORDER;
    if (!(r & 1)) {
      /* an even region the workload had pages in was freed, reported, and left memory */
      uint64_t disc = ht_discarded_range(a, base, CHUNK_PAGES);
      if (had[r])
        assert_int_equal(disc, CHUNK_PAGES);
      reported_regions += disc == CHUNK_PAGES;
      assert_int_equal(ht_resident(a, base, CHUNK_PAGES), 0);
    }
    /* every page still allocated is resident, not discarded, and holds its pattern */
    for (uint64_t i = 0; i < CHUNK_PAGES; i++) {
      if (!live[base + i])
        continue;
      if (ht_discarded(a, base + i))
        bad_alloc++;
      if (!ht_resident(a, base + i, 1))
        nonres_alloc++;
      else if (!page_ok(a, base + i))
        bad_alloc++;
    }
  }
  assert_int_equal(bad_alloc, 0);
  assert_int_equal(nonres_alloc, 0);
  assert_true(reported_regions * CHUNK_PAGES >= freed);
  assert_int_equal(ht_sstat(h, "bits_pending"), 0);
  uint64_t res1 = ht_resident(a, 0, npages);
  uint64_t live_pages = got - freed;
  assert_true(res1 >= live_pages);
  assert_true(res1 <= live_pages + (res0 - got)); /* only pages that were resident before */
  assert_int_equal(ht_check(a), 0);

  /* allocate again: reported pages refault, and read zero */
  _Atomic uint64_t *snap_src = a->discarded;
  uint64_t words = (npages + 63) / 64;
  uint64_t *snap = malloc(words * sizeof(uint64_t));
  assert_non_null(snap);
  for (uint64_t w = 0; w < words; w++)
    snap[w] = atomic_load(&snap_src[w]);
  uint64_t refault0 = hs.refault_pages, expect = 0, nalloc = 0, nonzero = 0;
  for (uint64_t k = 0; k < npages / 4; k++) {
    uint64_t pfn;
    int err = bh_alloc_pfn(a, BH_GFP_MOVABLE, 0, 0, &pfn);
    if (err == BH_ENOSPC)
      break;
    assert_int_equal(err, BH_OK);
    nalloc++;
    if ((snap[pfn >> 6] >> (pfn & 63)) & 1) {
      expect++;
      nonzero += !page_zero(a, pfn);
      assert_false(ht_discarded(a, pfn));
    }
  }
  hs = ht_hstats(h);
  assert_true(expect > 0);
  assert_int_equal(hs.refault_pages - refault0, expect);
  assert_int_equal(hs.refault_blocks, expect); /* order-0 blocks: one page each */
  assert_int_equal(nonzero, 0);
  uint64_t disc_now = 0;
  for (uint64_t pfn = 0; pfn < npages; pfn++)
    disc_now += ht_discarded(a, pfn);
  assert_int_equal(hs.discarded_pages, disc_now);
  printf("allocated %llu pages, freed %llu, %llu regions reported in %ld step(s), %llu madvise "
         "calls (%.1f MiB), %llu of %llu reallocated pages refaulted\n",
         (unsigned long long)got, (unsigned long long)freed, (unsigned long long)reported_regions,
         steps, (unsigned long long)hs.report.calls, (double)hs.report.bytes / MiB,
         (unsigned long long)expect, (unsigned long long)nalloc);
  free(had);
  free(snap);
  free(live);
  assert_int_equal(ht_check(a), 0);
  bh_hint_detach(h);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reported_pages_leave_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
