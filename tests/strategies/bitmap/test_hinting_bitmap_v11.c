/*
 * Bitmap page hinting against Nitesh Narayan Lal's v11 patch ("mm: page_hinting: core
 * infrastructure", <20190710195158.19640-2-nitesh@redhat.com>): when the worker is woken.
 *
 * v11's page_hinting_enqueue() sets the chunk's bit, then returns if page_hinting_active is
 * set (a worker pass is running) and otherwise queues the work whenever the zone type's
 * free_pages count is at least max_pages (16).  So frees during a pass never queue work, and
 * bits they leave behind the scan cursor wait for the next qualifying free after the pass,
 * which then queues it because the count is checked on every free, not only when it becomes
 * 16.
 *
 * To free chunks in the middle of a pass deterministically, this test runs the worker on the
 * virtual clock and defines madvise(): the bitmap's first report (a real MADV_DONTNEED on the
 * arena, made without any zone lock held) calls back into the test, which frees chunks below
 * the scan cursor, then the real system call runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hinting/hint_test_util.h"

#define NPAIRS 48

static void (*madvise_hook)(void);

int madvise(void *addr, size_t len, int advice) {
  void (*fn)(void) = madvise_hook;
  madvise_hook = NULL;
  if (fn)
    fn();
  return (int)syscall(SYS_madvise, addr, len, advice);
}

static bh_arena_t *arena;
static uint64_t lone[NPAIRS]; /* lower halves of allocated order-9 pairs, ascending */

/* 256 MiB Normal zone; NPAIRS buddy pairs of order-9 chunks allocated, lone[] as above. */
static void craft(void) {
  ht_arena_spec_t spec = {.normal_mib = 256, .pcp = false, .backing = BH_BACKING_MMAP};
  arena = ht_arena(&spec);
  for (int i = 0; i < NPAIRS; i++) {
    uint64_t lo, hi;
    assert_int_equal(bh_alloc_pfn(arena, BH_GFP_MOVABLE, CHUNK_ORDER, 0, &lo), BH_OK);
    assert_int_equal(bh_alloc_pfn(arena, BH_GFP_MOVABLE, CHUNK_ORDER, 0, &hi), BH_OK);
    assert_int_equal(hi, lo + CHUNK_PAGES); /* an order-10 block split in two */
    lone[i] = lo;
    if (i)
      assert_true(lo > lone[i - 1]);
  }
}

static void free_lone(int from, int to) {
  for (int i = from; i < to; i++)
    assert_int_equal(bh_free_pfn(arena, lone[i], CHUNK_ORDER, 0), BH_OK);
}

/* Called from inside the pass: 17 chunks below the cursor, which is past lone[32]. */
static void free_below_cursor(void) { free_lone(0, 17); }

static void test_no_request_during_pass_then_next_free(void **state) {
  (void)state;
  craft();
  bh_hint_t *h;
  assert_int_equal(ht_attach(arena, "bitmap", NULL, 0, BH_CLOCK_VIRTUAL, &h), BH_OK);

  free_lone(17, 33); /* 16 bits: count 16 >= max_pages, work queued */
  assert_int_equal(bh_hint_next_due(h), bh_hint_now(h));
  madvise_hook = free_below_cursor;
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_null(madvise_hook); /* the report ran the hook */
  assert_int_equal(ht_sstat(h, "reported_blocks"), 16);
  /* 17 bits set behind the cursor while page_hinting_active: no work queued */
  assert_int_equal(ht_sstat(h, "bits_pending"), 17);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h) + 10 * BH_NS_PER_SEC), 0);
  assert_int_equal(ht_sstat(h, "passes"), 1);

  /*
   * The next order-9 free queues the work, even one whose bit is set already.  The released
   * chunks lone[32..17] sit at the head of the order-9 list (released last, to the head), so
   * 17 allocations take them and then lone[16], whose bit is still pending.  Freeing lone[16]
   * sets no new bit, but the count (17) is at least 16 and no pass is running.
   */
  uint64_t got[17];
  for (int i = 0; i < 17; i++)
    assert_int_equal(bh_alloc_pfn(arena, BH_GFP_MOVABLE, CHUNK_ORDER, 0, &got[i]), BH_OK);
  assert_int_equal(got[0], lone[32]);
  assert_int_equal(got[16], lone[16]);
  assert_true(bh_hint_next_due(h) == BH_HINT_IDLE);
  assert_int_equal(bh_free_pfn(arena, lone[16], CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(ht_sstat(h, "bits_pending"), 17);
  assert_int_equal(bh_hint_next_due(h), bh_hint_now(h));
  assert_int_equal(bh_hint_advance(h, bh_hint_now(h)), 1);
  assert_int_equal(ht_sstat(h, "passes"), 2);
  assert_int_equal(ht_sstat(h, "reported_blocks"), 16 + 17);
  assert_int_equal(ht_sstat(h, "bits_pending"), 0);
  for (int i = 0; i <= 16; i++)
    assert_int_equal(ht_discarded_range(arena, lone[i], CHUNK_PAGES), CHUNK_PAGES);
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_free_pfn(arena, got[i], CHUNK_ORDER, 0), BH_OK);
  assert_int_equal(bh_hint_next_due(h), bh_hint_now(h));
  assert_int_equal(ht_check(arena), 0);
  bh_hint_detach(h);
  bh_arena_destroy(arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_request_during_pass_then_next_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
