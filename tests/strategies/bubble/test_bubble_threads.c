/*
 * Bubble hinting with real threads and real madvise:
 *  - a block freed while its buddy is isolated for a report merges with it on putback, and
 *    the merged block is not marked reported (it is reported later at the higher order);
 *  - data safety: two threads allocate and free blocks of orders 0..10 while the worker
 *    (BH_CLOCK_THREAD, delay=10ms) reports with MADV_DONTNEED; every live page keeps its
 *    contents and the arena stays consistent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "bubble_test_util.h"

#include <pthread.h>
#include <sched.h>

#define ORDER 9

/* ---- 4. a block that merged during putback is not marked reported ---- */

struct advance_arg {
  bh_hint_t *h;
  uint64_t until;
  long steps;
  _Atomic int done;
};

static void *advance_thread(void *p) {
  struct advance_arg *arg = p;
  arg->steps = bh_hint_advance(arg->h, arg->until);
  atomic_store(&arg->done, 1);
  return NULL;
}

/*
 * One attempt; returns true if the buddy was freed while the block was isolated.  Memory is
 * allocated in order-8 blocks, with padding freed as in test_bubble.c (upper halves of odd
 * order-9 regions) so that the zone passes the watermark check.  31 even order-9 regions are
 * freed (written first, so that the report's madvise takes a while), A last: fewer than 32
 * blocks, so they all wait in the batch and go out as the zone's leftover at the end of the
 * pass, after the order-10 cycles.  B, A's buddy region, has its lower half allocated and
 * its upper half free (padding): freeing the lower half while A is isolated makes B a free
 * order-9 block, which A meets when it is put back.
 */
static bool putback_merge_attempt(void) {
  bh_arena_t *a = bt_arena(BH_BACKING_MMAP, 256 * MiB, false, 128);
  assert_non_null(a);
  size_t n;
  uint64_t *p8 = bt_fill(a, 8, &n);
  bh_hint_t *h = bt_attach(a, BH_CLOCK_VIRTUAL, NULL);
  assert_non_null(h);
  assert_true(bt_pad8(a, p8, n) >= (30u << ORDER));
  uint64_t regions[31];
  size_t nr = 0;
  for (size_t i = 0; i < n && nr < 31; i++) {
    uint64_t lo = p8[i], hi = lo + 256, bl = lo ^ (1u << ORDER);
    if (((lo >> 8) & 3) || !bsearch(&hi, p8, n, sizeof(hi), bt_cmp_u64) ||
        !bsearch(&bl, p8, n, sizeof(bl), bt_cmp_u64))
      continue;
    memset(bh_pfn_to_addr(a, lo), 0x5a, BH_PAGE_SIZE << ORDER);
    regions[nr++] = lo;
  }
  assert_int_equal(nr, 31);
  for (size_t i = 0; i < nr; i++) {
    assert_int_equal(bh_free_pfn(a, regions[i], 8, 0), 0);
    assert_int_equal(bh_free_pfn(a, regions[i] + 256, 8, 0), 0);
    assert_int_equal(bt_free_order(a, regions[i]), ORDER);
  }
  bh_zone_info_t zi;
  assert_int_equal(bh_zone_info(a, 0, &zi), 0);
  assert_true(zi.free_pages > zi.wmark_low + (32u << ORDER));
  const uint64_t A = regions[nr - 1], B = A ^ (1u << ORDER), M = A & B;
  bh_zone_t *z = bh_arena_zone(a, 0);
  bh_zone_lock(z);
  assert_int_equal(bh_free_list_first(z, ORDER, BH_MT_MOVABLE), A);
  bh_zone_unlock(z);
  assert_int_equal(bt_free_order(a, B), -1);
  assert_int_equal(bt_free_order(a, B + 256), 8); /* padding */

  /* run the pass in another thread; free B as soon as A is seen isolated */
  struct advance_arg arg = {.h = h, .until = 2 * SEC};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, advance_thread, &arg), 0);
  bool freed = false;
  while (!atomic_load(&arg.done)) {
    bh_zone_lock(z);
    bool isolated = a->pages[A].flags & BH__PG_ISOLATED;
    bh_zone_unlock(z);
    if (isolated) {
      assert_int_equal(bh_free_pfn(a, B, 8, 0), 0);
      freed = true;
      break;
    }
    sched_yield();
  }
  pthread_join(t, NULL);
  assert_int_equal(arg.steps, 1);
  if (!freed)
    assert_int_equal(bh_free_pfn(a, B, 8, 0), 0);
  /* No other block was freed during the pass: a putback that merged can only be A meeting B.
   * If B came too late (A already back and marked), B merged with A at free time instead. */
  bool merged_on_putback = bt_stat(h, "putback_merged") >= 1;
  assert_int_equal(bt_free_order(a, M), ORDER + 1);
  if (merged_on_putback) {
    assert_true(bt_stat(h, "putback_merged") == 1);
    /* the merged order-10 block is not marked, and no reported block was merged */
    assert_false(bt_reported(a, M));
    assert_int_equal(bt_arena_stat(a, BH_STAT_reported_merge), 0);
    /* A's batch was reported all the same, and its other blocks were marked */
    assert_true(bt_stat(h, "blocks_reported") == 31);
    for (size_t i = 0; i + 1 < nr; i++)
      assert_true(bt_reported(a, regions[i]));
    assert_int_equal(bh_arena_check(a, stderr, 10), 0);
    /* B's free requested a pass while ACTIVE: the worker requeued itself one delay later,
     * and that pass reports M at order 10 */
    assert_true(bt_stat(h, "requeues") == 1);
    assert_int_equal(bh_hint_next_due(h), 4 * SEC);
    assert_int_equal(bh_hint_advance(h, 4 * SEC), 1);
    assert_true(bt_reported(a, M));
    assert_int_equal(bh_arena_check(a, stderr, 10), 0);
  } else {
    assert_int_equal(bt_arena_stat(a, BH_STAT_reported_merge), 1);
  }
  bh_hint_detach(h);
  bh_arena_destroy(a);
  free(p8);
  return merged_on_putback;
}

static void test_putback_merge(void **state) {
  (void)state;
  int attempts = 0;
  while (!putback_merge_attempt()) {
    attempts++;
    assert_true(attempts < 100);
  }
  printf("putback merge observed after %d missed attempt(s)\n", attempts);
}

/* ---- 9. data safety with the thread worker and real madvise ---- */

struct blk {
  uint64_t pfn, tag;
  unsigned order;
};

struct worker {
  bh_arena_t *a;
  int id;
  uint64_t seed, ops, allocs, fails, bad;
  _Atomic int *stop;
  struct blk live[32];
  size_t nlive;
};

static uint64_t word_of(uint64_t tag, uint64_t page) {
  return (tag ^ (page * 0x9E3779B97F4A7C15ull)) | 1;
}

static void write_block(bh_arena_t *a, const struct blk *b) {
  for (uint64_t i = 0; i < (1ull << b->order); i++) {
    uint64_t *w = bh_pfn_to_addr(a, b->pfn + i);
    uint64_t v = word_of(b->tag, i);
    w[0] = v;
    w[BH_PAGE_SIZE / 16] = ~v;
    w[BH_PAGE_SIZE / 8 - 1] = v + 1;
  }
}

static uint64_t check_block(bh_arena_t *a, const struct blk *b) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < (1ull << b->order); i++) {
    const volatile uint64_t *w = bh_pfn_to_addr(a, b->pfn + i);
    uint64_t v = word_of(b->tag, i);
    if (w[0] != v || w[BH_PAGE_SIZE / 16] != ~v || w[BH_PAGE_SIZE / 8 - 1] != v + 1)
      bad++;
  }
  return bad;
}

static void *worker_main(void *p) {
  struct worker *w = p;
  uint64_t rs = w->seed, gen = 0;
  while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
    uint64_t r = bt_rand(&rs);
    w->ops++;
    if ((r % 100 < 55 && w->nlive < 32) || !w->nlive) {
      unsigned order = (unsigned)(bt_rand(&rs) % 11);
      struct blk b = {.order = order, .tag = ((uint64_t)w->id << 56) ^ (++gen << 20)};
      if (bh_alloc_pfn(w->a, BH_GFP_USER_MOVABLE, order, -1, &b.pfn)) {
        w->fails++;
        continue;
      }
      b.tag ^= b.pfn;
      write_block(w->a, &b);
      w->live[w->nlive++] = b;
      w->allocs++;
    } else {
      size_t i = (size_t)(bt_rand(&rs) % w->nlive);
      w->bad += check_block(w->a, &w->live[i]);
      if (bh_free_pfn(w->a, w->live[i].pfn, w->live[i].order, -1))
        w->bad++;
      w->live[i] = w->live[--w->nlive];
    }
  }
  return NULL;
}

static void test_data_safety(void **state) {
  (void)state;
  uint64_t seed = bt_seed();
  printf("data safety seed: %llu\n", (unsigned long long)seed);
  bh_arena_t *a = bt_arena(BH_BACKING_MMAP, 256 * MiB, true, 0);
  assert_non_null(a);
  bh_hint_t *h = bt_attach(a, BH_CLOCK_THREAD, "delay=10ms");
  assert_non_null(h);
  _Atomic int stop = 0;
  struct worker w[2];
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    memset(&w[i], 0, sizeof(w[i]));
    w[i].a = a;
    w[i].id = i + 1;
    w[i].seed = seed + 0x1234567ull * (uint64_t)(i + 1);
    w[i].stop = &stop;
    assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
  }
  /* 2.5 s, and until the worker made ten passes that reported something (a loaded machine
   * under ThreadSanitizer is slow: an amount of work, not a speed), at most a minute */
  uint64_t t0 = bt_mono_ns();
  for (;;) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    uint64_t el = bt_mono_ns() - t0;
    bool enough = bt_stat(h, "passes") >= 10 && bt_stat(h, "blocks_reported") > 0;
    if ((el >= 2500 * MSEC && enough) || el >= 60 * SEC)
      break;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  uint64_t bad = 0, ops = 0;
  for (int i = 0; i < 2; i++) {
    bad += w[i].bad;
    ops += w[i].ops;
    for (size_t j = 0; j < w[i].nlive; j++)
      bad += check_block(a, &w[i].live[j]);
  }
  bh_hint_stats_t hs;
  bh_hint_stats(h, &hs);
  printf("%llu ops (%llu + %llu allocs, %llu + %llu failed), %.0f passes, %.0f blocks / %.0f MiB "
         "reported, %llu madvise calls, %llu refaulted pages\n",
         (unsigned long long)ops, (unsigned long long)w[0].allocs, (unsigned long long)w[1].allocs,
         (unsigned long long)w[0].fails, (unsigned long long)w[1].fails, bt_stat(h, "passes"),
         bt_stat(h, "blocks_reported"), bt_stat(h, "bytes_reported") / MiB,
         (unsigned long long)hs.report.calls, (unsigned long long)hs.refault_pages);
  assert_int_equal(bad, 0);
  assert_int_equal(bh_arena_check(a, stderr, 10), 0); /* worker still running */
  assert_true(bt_stat(h, "passes") >= 10);
  assert_true(bt_stat(h, "blocks_reported") > 0);
  assert_true(hs.report.calls > 0);
  bh_hint_detach(h);
  assert_int_equal(bh_arena_check(a, stderr, 10), 0);
  /* contents survived the last passes too */
  for (int i = 0; i < 2; i++)
    for (size_t j = 0; j < w[i].nlive; j++) {
      assert_int_equal(check_block(a, &w[i].live[j]), 0);
      assert_int_equal(bh_free_pfn(a, w[i].live[j].pfn, w[i].live[j].order, 0), 0);
    }
  assert_int_equal(bh_arena_check(a, stderr, 10), 0);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_putback_merge),
      cmocka_unit_test(test_data_safety),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
