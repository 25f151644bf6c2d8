/*
 * Bitmap hinting with its real worker thread (BH_CLOCK_THREAD) racing two threads that
 * allocate and free blocks of orders 0..10, 1536 operations each (a count, not a time: on a
 * loaded machine the page faults of the tags make an operation take milliseconds).  Every
 * page of a block gets a tag in its first and last word when it is handed out, and the tags
 * are read back before the block is freed (and now and then while it is live): a report that
 * discarded allocated memory, or a block handed out twice, shows up as a bad tag.  The
 * threshold is small (4) so that the worker runs often.  At the end the arena must pass the
 * invariant checker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "hint_test_util.h"

#include <pthread.h>

#define NTHREADS 2
#define SLOTS 512
#define OPS_PER_THREAD 1536 /* a multiple of 64 */
#define WORDS (BH_PAGE_SIZE / sizeof(uint64_t))

struct slot {
  uint8_t *addr;
  unsigned order;
  uint64_t tag;
};

struct worker {
  bh_arena_t *a;
  int id;
  uint64_t seed;
  struct slot slots[SLOTS];
  /* results */
  uint64_t ops, allocs, frees, enospc, errors, bad_tags, verifies;
};

static const unsigned order_weight[] = {40, 15, 10, 10, 4, 4, 4, 4, 4, 3, 2};

static unsigned pick_order(ht_rng_t *r) {
  unsigned x = (unsigned)ht_below(r, 100), order = 0;
  while (x >= order_weight[order]) {
    x -= order_weight[order];
    order++;
  }
  return order;
}

static uint64_t page_tag(uint64_t tag, uint64_t i) { return tag * 0x100000001b3ull + i; }

static void write_tags(struct slot *s) {
  for (uint64_t i = 0; i < (1ull << s->order); i++) {
    uint64_t *w = (uint64_t *)(s->addr + i * BH_PAGE_SIZE);
    w[0] = w[WORDS - 1] = page_tag(s->tag, i);
  }
}

static uint64_t check_tags(const struct slot *s) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < (1ull << s->order); i++) {
    const uint64_t *w = (const uint64_t *)(s->addr + i * BH_PAGE_SIZE);
    bad += w[0] != page_tag(s->tag, i) || w[WORDS - 1] != page_tag(s->tag, i);
  }
  return bad;
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  ht_rng_t rng = {w->seed};
  uint64_t next_tag = ((uint64_t)w->id << 48) + 1;
  while (w->ops < OPS_PER_THREAD) {
    for (int k = 0; k < 64; k++) {
      struct slot *s = &w->slots[ht_below(&rng, SLOTS)];
      w->ops++;
      if (!s->addr) {
        unsigned order = pick_order(&rng);
        unsigned gfp = ht_below(&rng, 4) ? BH_GFP_MOVABLE : 0;
        int err;
        void *p = bh_alloc_pages(w->a, gfp, order, &err);
        if (!p) {
          if (err == BH_ENOSPC)
            w->enospc++;
          else
            w->errors++;
          continue;
        }
        s->addr = p;
        s->order = order;
        s->tag = next_tag++;
        write_tags(s);
        w->allocs++;
      } else {
        w->bad_tags += check_tags(s);
        if (bh_free_pages(w->a, s->addr, s->order) != BH_OK)
          w->errors++;
        s->addr = NULL;
        w->frees++;
      }
      if (ht_below(&rng, 32) == 0) {
        const struct slot *v = &w->slots[ht_below(&rng, SLOTS)];
        if (v->addr) {
          w->bad_tags += check_tags(v);
          w->verifies++;
        }
      }
    }
  }
  return NULL;
}

static void test_worker_thread_race(void **state) {
  (void)state;
  ht_arena_spec_t spec = {.normal_mib = 256, .pcp = true, .backing = BH_BACKING_MMAP};
  bh_arena_t *a = ht_arena(&spec);
  bh_opt_t opts[] = {{"threshold", "4"}};
  bh_hint_t *h;
  assert_int_equal(ht_attach(a, "bitmap", opts, 1, BH_CLOCK_THREAD, &h), BH_OK);

  uint64_t seed = ht_seed("test_worker_thread_race");
  static struct worker w[NTHREADS];
  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    memset(&w[i], 0, sizeof(w[i]));
    w[i].a = a;
    w[i].id = i + 1;
    w[i].seed = seed + (uint64_t)i * 0x9e3779b97f4a7c15ull;
    assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++)
    assert_int_equal(pthread_join(t[i], NULL), 0);

  uint64_t ops = 0, allocs = 0, frees = 0, enospc = 0, errors = 0, bad = 0, verifies = 0;
  for (int i = 0; i < NTHREADS; i++) {
    ops += w[i].ops;
    allocs += w[i].allocs;
    frees += w[i].frees;
    enospc += w[i].enospc;
    errors += w[i].errors;
    bad += w[i].bad_tags;
    verifies += w[i].verifies;
  }
  /* the worker may still be in a pass: the checker takes every lock */
  assert_int_equal(ht_check(a), 0);
  /* free what is left, reading the tags one last time */
  for (int i = 0; i < NTHREADS; i++)
    for (int s = 0; s < SLOTS; s++)
      if (w[i].slots[s].addr) {
        bad += check_tags(&w[i].slots[s]);
        if (bh_free_pages(a, w[i].slots[s].addr, w[i].slots[s].order) != BH_OK)
          errors++;
      }
  bh_drain_pcp(a);
  bh_hint_stats_t hs = ht_hstats(h);
  uint64_t reported = ht_sstat(h, "reported_blocks"), stale = ht_sstat(h, "stale_bits"),
           passes = ht_sstat(h, "passes");
  printf("%llu ops (%llu allocs, %llu frees, %llu ENOSPC, %llu extra verifies); worker: %llu "
         "steps, %llu passes, %llu blocks reported (%llu stale bits), %llu madvise calls, "
         "%.1f MiB, %llu pages refaulted\n",
         (unsigned long long)ops, (unsigned long long)allocs, (unsigned long long)frees,
         (unsigned long long)enospc, (unsigned long long)verifies, (unsigned long long)hs.steps,
         (unsigned long long)passes, (unsigned long long)reported, (unsigned long long)stale,
         (unsigned long long)hs.report.calls, (double)hs.report.bytes / MiB,
         (unsigned long long)hs.refault_pages);
  assert_int_equal(errors, 0);
  assert_int_equal(bad, 0);
  assert_true(allocs > 1000);
  assert_true(hs.steps > 0);
  assert_true(reported > 0);
  assert_true(hs.report.calls > 0);
  assert_int_equal(hs.report.errors, 0);
  assert_int_equal(ht_check(a), 0);
  bh_hint_detach(h);
  assert_int_equal(ht_check(a), 0);
  /* everything is free again */
  uint64_t free_pages = 0;
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_info_t zi;
    assert_int_equal(bh_zone_info(a, i, &zi), 0);
    free_pages += zi.free_pages;
    assert_int_equal(zi.isolated_pages, 0);
    assert_int_equal(zi.pcp_pages, 0);
  }
  assert_int_equal(free_pages, bh_arena_pages(a));
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_worker_thread_race),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
