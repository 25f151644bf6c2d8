/*
 * Adaptive hinting with a real worker thread (BH_CLOCK_THREAD) and real madvise: two threads
 * allocate, tag, check and free blocks of orders 0..10 while the worker scans the small
 * orders every few milliseconds and reports what has stayed free.  Every live block keeps its
 * contents, the arena stays consistent, and once the threads stop, blocks below the
 * pageblock order that stay free are reported (waited for, not timed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "hinting/hint_test_util.h"

#include <pthread.h>

#define SLOTS 512
#define OPS 60000

struct worker_arg {
  bh_arena_t *a;
  int cpu;
  uint64_t seed, bad_tags, errors, kept;
  struct {
    uint64_t pfn, tag;
    unsigned order;
    bool live;
  } slot[SLOTS];
};

static uint64_t *word(bh_arena_t *a, uint64_t pfn, unsigned order, bool last) {
  uint64_t *base = bh_pfn_to_addr(a, pfn);
  return last ? base + ((BH_PAGE_SIZE << order) / 8 - 1) : base;
}

static void *worker(void *p) {
  struct worker_arg *w = p;
  ht_rng_t r = {w->seed};
  for (int op = 0; op < OPS; op++) {
    int i = (int)ht_below(&r, SLOTS);
    if (!w->slot[i].live) {
      unsigned order = ht_below(&r, 4) ? (unsigned)ht_below(&r, 4) : (unsigned)ht_below(&r, 11);
      uint64_t pfn;
      int err = bh_alloc_pfn(w->a, BH_GFP_USER_MOVABLE, order, w->cpu, &pfn);
      if (err) {
        w->errors += err != BH_ENOSPC;
        continue;
      }
      uint64_t tag = ((uint64_t)w->cpu << 56) | (uint64_t)op;
      *word(w->a, pfn, order, false) = tag;
      *word(w->a, pfn, order, true) = ~tag;
      w->slot[i].pfn = pfn;
      w->slot[i].tag = tag;
      w->slot[i].order = order;
      w->slot[i].live = true;
    } else {
      unsigned order = w->slot[i].order;
      if (*word(w->a, w->slot[i].pfn, order, false) != w->slot[i].tag ||
          *word(w->a, w->slot[i].pfn, order, true) != ~w->slot[i].tag)
        w->bad_tags++;
      w->errors += bh_free_pfn(w->a, w->slot[i].pfn, order, w->cpu) != BH_OK;
      w->slot[i].live = false;
    }
  }
  /* keep every fourth order-0 block, so that small free blocks stay between them */
  for (int i = 0; i < SLOTS; i++) {
    if (!w->slot[i].live)
      continue;
    if (w->slot[i].order == 0 && i % 4 == 0) {
      w->kept++;
      continue;
    }
    w->errors += bh_free_pfn(w->a, w->slot[i].pfn, w->slot[i].order, w->cpu) != BH_OK;
    w->slot[i].live = false;
  }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  uint64_t seed = ht_seed("test_adaptive_threads");
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.zone_bytes[BH_ZONE_DMA] = 0;
  cfg.zone_bytes[BH_ZONE_DMA32] = 0;
  cfg.zone_bytes[BH_ZONE_NORMAL] = 256 * MiB;
  cfg.smp = true;
  cfg.nr_cpus = 2;
  bh_arena_t *a = NULL;
  assert_int_equal(bh_arena_create(&cfg, &a), 0);
  bh_opt_t opts[] = {{"age", "2ms"}, {"interval", "3ms"}, {"delay", "10ms"}, {"low", "0"}};
  bh_hint_t *h = NULL;
  assert_int_equal(ht_attach(a, "adaptive", opts, 4, BH_CLOCK_THREAD, &h), 0);
  static struct worker_arg w[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    memset(&w[i], 0, sizeof(w[i]));
    w[i].a = a;
    w[i].cpu = i;
    w[i].seed = seed + (uint64_t)i;
    assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]), 0);
  }
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  bh_drain_pcp(a);
  /* the worker keeps scanning: wait (up to a minute) until it has reported small blocks */
  double t0 = ht_mono_s();
  while (ht_sstat(h, "aged_blocks_reported") == 0 && ht_mono_s() - t0 < 60) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  uint64_t aged = ht_sstat(h, "aged_blocks_reported");
  printf("%llu blocks reported below the pageblock order (%llu scans, %llu report calls), "
         "%llu refaults\n",
         (unsigned long long)aged, (unsigned long long)ht_sstat(h, "scans"),
         (unsigned long long)ht_sstat(h, "report_calls"),
         (unsigned long long)ht_hstats(h).refault_pages);
  bh_hint_detach(h);
  assert_int_equal(ht_check(a), 0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(w[i].bad_tags, 0);
    assert_int_equal(w[i].errors, 0);
    for (int s = 0; s < SLOTS; s++)
      if (w[i].slot[s].live) {
        assert_true(*word(a, w[i].slot[s].pfn, 0, false) == w[i].slot[s].tag);
        assert_int_equal(bh_free_pfn(a, w[i].slot[s].pfn, 0, 0), 0);
      }
  }
  assert_true(w[0].kept + w[1].kept > 0);
  assert_true(aged > 0);
  assert_int_equal(ht_check(a), 0);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
