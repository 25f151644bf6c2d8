/*
 * Threads: NR_WORKERS threads allocate and free through the pointer interface (mmap backing,
 * pcp on, one pcp slot per thread) while a monitor thread drains the pcp lists and reads the
 * zone info and counters.  Every page handed out is claimed in a shared ownership map (a
 * second owner is an error) and stamped with its owner's tag at both ends; the tags are
 * verified before the free, so a page given to two threads, or written by the allocator
 * while in use, is caught.  Runs for RUN_SECONDS at most.
 */
#include "buddy_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NR_WORKERS 4
#define MAX_HELD 96
#define RUN_SECONDS 1.5
#define MAX_OPS_PER_WORKER 400000

struct shared {
  bh_arena_t *a;
  uint8_t *base;
  _Atomic uint8_t *owner; /* per page: 0 free, else worker id + 1 */
  atomic_long errors;
  atomic_bool stop;
  atomic_long ops, enospc;
};

struct held {
  uint8_t *addr;
  unsigned order;
  uint64_t tag;
};

struct worker {
  struct shared *sh;
  int id;
  uint64_t rng;
  struct held held[MAX_HELD];
  int nr_held;
  uint64_t seq;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rnd(struct worker *w) {
  w->rng ^= w->rng << 13;
  w->rng ^= w->rng >> 7;
  w->rng ^= w->rng << 17;
  return w->rng;
}

static void report(struct shared *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(struct shared *sh, const char *fmt, ...) {
  if (atomic_fetch_add(&sh->errors, 1) >= 10)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

static uint64_t *word(uint8_t *page, int last) {
  return (uint64_t *)(page + (last ? BH_PAGE_SIZE - sizeof(uint64_t) : 0));
}

static void claim_and_stamp(struct worker *w, struct held *h, bool zeroed) {
  struct shared *sh = w->sh;
  int64_t pfn = bh_addr_to_pfn(sh->a, h->addr);
  for (uint64_t i = 0; i < (1ull << h->order); i++) {
    uint8_t expected = 0;
    if (!atomic_compare_exchange_strong(&sh->owner[pfn + i], &expected, (uint8_t)(w->id + 1)))
      report(sh, "worker %d: pfn %" PRId64 " already owned by worker %d\n", w->id, pfn + (int64_t)i,
             expected - 1);
    uint8_t *page = h->addr + (i << BH_PAGE_SHIFT);
    if (zeroed && (*word(page, 0) || *word(page, 1)))
      report(sh, "worker %d: __GFP_ZERO page pfn %" PRId64 " not zeroed\n", w->id,
             pfn + (int64_t)i);
    *word(page, 0) = h->tag + i;
    *word(page, 1) = ~(h->tag + i);
  }
}

static void verify_and_release(struct worker *w, const struct held *h) {
  struct shared *sh = w->sh;
  int64_t pfn = bh_addr_to_pfn(sh->a, h->addr);
  for (uint64_t i = 0; i < (1ull << h->order); i++) {
    uint8_t *page = h->addr + (i << BH_PAGE_SHIFT);
    if (*word(page, 0) != h->tag + i || *word(page, 1) != ~(h->tag + i))
      report(sh, "worker %d: pfn %" PRId64 " overwritten while owned\n", w->id, pfn + (int64_t)i);
    atomic_store(&sh->owner[pfn + i], 0);
  }
}

static unsigned pick_order(struct worker *w) {
  unsigned r = (unsigned)(rnd(w) % 100);
  return r < 60 ? 0 : r < 90 ? 1 + (unsigned)(rnd(w) % 3) : r < 98 ? 4 + (unsigned)(rnd(w) % 3) : 9;
}

static unsigned pick_gfp(struct worker *w) {
  static const unsigned gfps[] = {BH_GFP_KERNEL,       BH_GFP_MOVABLE, BH_GFP_RECLAIMABLE,
                                  BH_GFP_USER_MOVABLE, BH_GFP_DMA32,   BH_GFP_MOVABLE};
  unsigned gfp = gfps[rnd(w) % 6];
  return rnd(w) % 8 == 0 ? gfp | BH_GFP_ZERO : gfp;
}

static void worker_alloc(struct worker *w) {
  unsigned gfp = pick_gfp(w), order = pick_order(w);
  int err = 0;
  uint8_t *p = bh_alloc_pages(w->sh->a, gfp, order, &err);
  if (!p) {
    if (err == BH_ENOSPC)
      atomic_fetch_add(&w->sh->enospc, 1);
    else
      report(w->sh, "worker %d: alloc: %s\n", w->id, bh_err_name(err));
    return;
  }
  struct held *h = &w->held[w->nr_held++];
  *h = (struct held){p, order, ((uint64_t)(w->id + 1) << 56) | (++w->seq << 12)};
  claim_and_stamp(w, h, gfp & BH_GFP_ZERO);
}

static void worker_free(struct worker *w, int i) {
  struct held h = w->held[i];
  w->held[i] = w->held[--w->nr_held];
  verify_and_release(w, &h);
  int err = bh_free_pages(w->sh->a, h.addr, h.order);
  if (err)
    report(w->sh, "worker %d: free: %s\n", w->id, bh_err_name(err));
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  long ops = 0;
  while (!atomic_load(&w->sh->stop) && ops < MAX_OPS_PER_WORKER) {
    bool alloc = w->nr_held == 0 || (w->nr_held < MAX_HELD && rnd(w) % 100 < 55);
    if (alloc)
      worker_alloc(w);
    else
      worker_free(w, (int)(rnd(w) % (uint64_t)w->nr_held));
    ops++;
  }
  while (w->nr_held)
    worker_free(w, w->nr_held - 1);
  atomic_fetch_add(&w->sh->ops, ops);
  return NULL;
}

/* drain_all_pages and readers running against the workers. */
static void *monitor_main(void *arg) {
  struct shared *sh = arg;
  uint64_t v[BH_NR_STATS];
  while (!atomic_load(&sh->stop)) {
    bh_drain_pcp(sh->a);
    for (int z = 0; z < bh_zone_count(sh->a); z++) {
      bh_zone_info_t zi;
      if (bh_zone_info(sh->a, z, &zi) || zi.free_pages + zi.pcp_pages > zi.managed_pages)
        report(sh, "monitor: zone %d: free %" PRIu64 " + pcp %" PRIu64 " > managed\n", z,
               zi.free_pages, zi.pcp_pages);
    }
    bh_stats_read(sh->a, v);
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void test_concurrent_alloc_free(void **state) {
  (void)state;
  bh_config_t c;
  bh_config_init(&c);
  c.nr_cpus = NR_WORKERS;
  c.zone_bytes[BH_ZONE_DMA] = 4 * MiB;
  c.zone_bytes[BH_ZONE_DMA32] = 8 * MiB;
  c.zone_bytes[BH_ZONE_NORMAL] = 32 * MiB;
  struct shared sh;
  memset(&sh, 0, sizeof sh);
  sh.a = bt_create(&c);
  sh.base = bh_arena_base(sh.a);
  sh.owner = calloc(bh_arena_pages(sh.a), 1);
  assert_non_null(sh.owner);

  static struct worker workers[NR_WORKERS];
  pthread_t tid[NR_WORKERS], mon;
  uint64_t seed = (uint64_t)time(NULL);
  for (int i = 0; i < NR_WORKERS; i++) {
    workers[i] = (struct worker){.sh = &sh, .id = i, .rng = seed * 2654435761u + (uint64_t)i + 1};
    assert_int_equal(pthread_create(&tid[i], NULL, worker_main, &workers[i]), 0);
  }
  assert_int_equal(pthread_create(&mon, NULL, monitor_main, &sh), 0);
  /* RUN_SECONDS, and until 1000 operations were made (an amount of work, not a speed: a
   * loaded machine under ThreadSanitizer is slow), at most a minute more */
  double end = now_s() + RUN_SECONDS;
  while ((now_s() < end || atomic_load(&sh.ops) <= 1000) && now_s() < end + 60) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&sh.stop, true);
  for (int i = 0; i < NR_WORKERS; i++)
    pthread_join(tid[i], NULL);
  pthread_join(mon, NULL);
  print_message("test_buddy_threads: %ld operations, %ld ENOSPC, seed %" PRIu64 "\n",
                atomic_load(&sh.ops), atomic_load(&sh.enospc), seed);

  EXPECT_U64(atomic_load(&sh.errors), 0);
  assert_true(atomic_load(&sh.ops) > 1000);
  bh_drain_pcp(sh.a);
  bt_expect_clean(sh.a);
  bt_expect_all_free(sh.a);
  uint64_t v[BH_NR_STATS];
  bh_stats_read(sh.a, v);
  EXPECT_U64(v[BH_STAT_alloc_calls], v[BH_STAT_free_calls]);
  free((void *)sh.owner);
  bh_arena_destroy(sh.a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_alloc_free),
  };
  return cmocka_run_group_tests_name("buddy_threads", tests, NULL, NULL);
}
