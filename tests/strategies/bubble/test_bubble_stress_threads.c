/*
 * A bounded multi-thread stress of bubble hinting on a thread worker, with compaction and
 * real madvise, for ThreadSanitizer (`make test` runs every test named "thread" under it):
 *
 *  - two threads allocate and free unmovable blocks of orders 0..10, write a pattern into
 *    every page and check it before each free;
 *  - a third thread owns movable blocks of orders 0..8 (compaction moves only those), and
 *    runs bh_compact_memory / bh_compact_proactive with a callback that moves its references;
 *  - the bubble worker (BH_CLOCK_THREAD, delay=5ms, order=6) reports with MADV_DONTNEED.
 *
 * Every thread checks all of its live blocks whenever the reporter's call count has changed
 * since its last check, so every report is followed by a check of every live page by its owner
 * (a report that zeroed a live page is seen there).  At the end the arena must pass the
 * invariant checker, with the worker running and after it is detached.  The run lasts two
 * seconds, longer if a thread has not yet done its share of work (400 operations, a check
 * after a report, a compaction), at most a minute (seed printed; BH_TEST_SEED=N repeats it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "bubble_test_util.h"

#include <pthread.h>

#define MAX_LIVE 48

struct blk {
  uint64_t pfn, tag;
  unsigned order;
};

struct stress {
  bh_arena_t *a;
  bh_hint_t *h;
  _Atomic int stop;
};

/* Work each thread does at least, before the run may end (after 2 s; at most 60 s). */
#define MIN_OPS 400
#define MIN_SECONDS 2
#define MAX_SECONDS 60

struct owner {
  struct stress *st;
  int id;
  _Atomic int enough; /* MIN_OPS done, a report checked (and a compaction, if compacting) */
  bool movable;       /* the compacting thread */
  uint64_t seed, ops, allocs, fails, bad, checks, compactions, moved;
  uint64_t seen_reports;
  struct blk live[MAX_LIVE];
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
    const uint64_t *w = bh_pfn_to_addr(a, b->pfn + i);
    uint64_t v = word_of(b->tag, i);
    if (w[0] != v || w[BH_PAGE_SIZE / 16] != ~v || w[BH_PAGE_SIZE / 8 - 1] != v + 1)
      bad++;
  }
  return bad;
}

static uint64_t report_calls(bh_hint_t *h) {
  bh_hint_stats_t hs;
  bh_hint_stats(h, &hs);
  return hs.report.calls;
}

/* Checks every live block if a report happened since the last check. */
static void check_after_reports(struct owner *o) {
  uint64_t calls = report_calls(o->st->h);
  if (calls == o->seen_reports)
    return;
  o->seen_reports = calls;
  o->checks++;
  for (size_t i = 0; i < o->nlive; i++)
    o->bad += check_block(o->st->a, &o->live[i]);
}

/* Compaction moved one of the owner's blocks (zone lock held: no arena calls here). */
static int moved(void *ctx, uint64_t old_pfn, uint64_t new_pfn, unsigned order) {
  struct owner *o = ctx;
  for (size_t i = 0; i < o->nlive; i++)
    if (o->live[i].pfn == old_pfn && o->live[i].order == order) {
      o->live[i].pfn = new_pfn;
      o->moved++;
      return 0;
    }
  o->bad++; /* compaction moved a block this thread does not own */
  return 1;
}

static void compact(struct owner *o, uint64_t r) {
  bh_compact_result_t res;
  int err = r & 1 ? bh_compact_memory(o->st->a, moved, o, &res)
                  : bh_compact_proactive(o->st->a, 100, moved, o, &res);
  if (err < 0)
    o->bad++;
  o->compactions++;
  for (size_t i = 0; i < o->nlive; i++) /* the copies kept every page */
    o->bad += check_block(o->st->a, &o->live[i]);
}

static void *owner_main(void *p) {
  struct owner *o = p;
  bh_arena_t *a = o->st->a;
  uint64_t rs = o->seed, gen = 0;
  unsigned gfp = o->movable ? BH_GFP_USER_MOVABLE : BH_GFP_KERNEL;
  unsigned orders = o->movable ? 9 : 11;
  while (!atomic_load_explicit(&o->st->stop, memory_order_relaxed)) {
    uint64_t r = bt_rand(&rs);
    o->ops++;
    check_after_reports(o);
    if (o->movable && r % 64 == 0) {
      compact(o, r >> 8);
    } else if ((r % 100 < 55 && o->nlive < MAX_LIVE) || !o->nlive) {
      uint64_t x = bt_rand(&rs); /* mostly small blocks, a few up to the top order */
      struct blk b = {.order = (unsigned)(x % 8 ? (x >> 8) % 4 : (x >> 8) % orders),
                      .tag = ((uint64_t)o->id << 56) ^ (++gen << 20)};
      if (bh_alloc_pfn(a, gfp, b.order, -1, &b.pfn)) {
        o->fails++;
        continue;
      }
      b.tag ^= b.pfn;
      write_block(a, &b);
      o->live[o->nlive++] = b;
      o->allocs++;
    } else {
      size_t i = (size_t)(bt_rand(&rs) % o->nlive);
      o->bad += check_block(a, &o->live[i]);
      if (bh_free_pfn(a, o->live[i].pfn, o->live[i].order, -1))
        o->bad++;
      o->live[i] = o->live[--o->nlive];
    }
    if (o->ops >= MIN_OPS && o->checks && (!o->movable || o->compactions))
      atomic_store_explicit(&o->enough, 1, memory_order_relaxed);
  }
  return NULL;
}

static void test_bubble_compaction_madvise_stress(void **state) {
  (void)state;
  uint64_t seed = bt_seed();
  printf("stress seed: %llu\n", (unsigned long long)seed);
  struct stress st = {.stop = 0};
  st.a = bt_arena(BH_BACKING_MMAP, 128 * MiB, true, 0);
  assert_non_null(st.a);
  st.h = bt_attach(st.a, BH_CLOCK_THREAD, "delay=5ms order=6");
  assert_non_null(st.h);
  enum { N = 3 };
  struct owner o[N];
  pthread_t t[N];
  for (int i = 0; i < N; i++) {
    memset(&o[i], 0, sizeof(o[i]));
    o[i].st = &st;
    o[i].id = i + 1;
    o[i].movable = i == N - 1;
    o[i].seed = seed + 0x9E3779B9ull * (uint64_t)(i + 1);
    assert_int_equal(pthread_create(&t[i], NULL, owner_main, &o[i]), 0);
  }
  /* an amount of work, not a speed: a loaded machine under ThreadSanitizer is slow */
  uint64_t t0 = bt_mono_ns();
  for (;;) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    uint64_t s = (bt_mono_ns() - t0) / SEC;
    int enough = 0;
    for (int i = 0; i < N; i++)
      enough += atomic_load(&o[i].enough);
    if ((s >= MIN_SECONDS && enough == N) || s >= MAX_SECONDS)
      break;
  }
  atomic_store(&st.stop, 1);
  for (int i = 0; i < N; i++)
    pthread_join(t[i], NULL);

  uint64_t bad = 0, checks = 0;
  for (int i = 0; i < N; i++) {
    printf("thread %d (%s): %llu ops, %llu allocs, %llu failed, %llu checks after reports, "
           "%llu compactions moving %llu blocks\n",
           o[i].id, o[i].movable ? "movable, compacting" : "unmovable",
           (unsigned long long)o[i].ops, (unsigned long long)o[i].allocs,
           (unsigned long long)o[i].fails, (unsigned long long)o[i].checks,
           (unsigned long long)o[i].compactions, (unsigned long long)o[i].moved);
    bad += o[i].bad;
    checks += o[i].checks;
    for (size_t j = 0; j < o[i].nlive; j++)
      bad += check_block(st.a, &o[i].live[j]);
  }
  printf("%.0f passes, %.0f blocks reported, %llu report calls\n", bt_stat(st.h, "passes"),
         bt_stat(st.h, "blocks_reported"), (unsigned long long)report_calls(st.h));
  assert_int_equal(bad, 0);
  assert_int_equal(bh_arena_check(st.a, stderr, 10), 0); /* worker still running */
  assert_true(report_calls(st.h) > 0);                   /* real madvise calls happened... */
  assert_true(checks > 0); /* ...and live data was checked after them */
  assert_true(o[N - 1].compactions > 0);
  bh_hint_detach(st.h);
  assert_int_equal(bh_arena_check(st.a, stderr, 10), 0);
  for (int i = 0; i < N; i++)
    for (size_t j = 0; j < o[i].nlive; j++) {
      assert_int_equal(check_block(st.a, &o[i].live[j]), 0);
      assert_int_equal(bh_free_pfn(st.a, o[i].live[j].pfn, o[i].live[j].order, 0), 0);
    }
  assert_int_equal(bh_arena_check(st.a, stderr, 10), 0);
  bh_arena_destroy(st.a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bubble_compaction_madvise_stress),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
