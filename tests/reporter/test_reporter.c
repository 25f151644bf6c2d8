/*
 * The host-side reporter: modes, coalescing, what a discard does to the pages, the counters,
 * and the discarded bitmap with its refault accounting.  Runs on hand-made arenas.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "hinting/reporter.h"
#include "reporter/fake_arena.h"

#include <pthread.h>
#include <sys/stat.h>

#define MiB (1ULL << 20)
#define ARENA_BYTES (64 * MiB)

static uint64_t resident(struct bh_arena *a, uint64_t pfn, uint64_t n) {
  uint64_t r = UINT64_MAX;
  assert_int_equal(bh_arena_resident_range(a, pfn, n, &r), 0);
  return r;
}

static bh_reporter_stats_t stats_of(bh__reporter_t *r) {
  bh_reporter_stats_t s;
  memset(&s, 0xff, sizeof s);
  bh__reporter_stats(r, &s);
  return s;
}

static void test_mode_names(void **state) {
  (void)state;
  static const char *names[] = {"dontneed", "free", "punch", "none"};
  for (int m = 0; m < 4; m++) {
    bh_report_mode_t got = (bh_report_mode_t)-1;
    assert_string_equal(bh_report_mode_name((bh_report_mode_t)m), names[m]);
    assert_int_equal(bh_report_mode_parse(names[m], &got), 0);
    assert_int_equal(got, m);
  }
  bh_report_mode_t got = BH_REPORT_NONE;
  assert_int_equal(bh_report_mode_parse("PUNCH", &got), 0);
  assert_int_equal(got, BH_REPORT_PUNCH);
  got = BH_REPORT_FREE;
  assert_int_equal(bh_report_mode_parse("remove", &got), BH_ENOENT);
  assert_int_equal(bh_report_mode_parse("", &got), BH_ENOENT);
  assert_int_equal(got, BH_REPORT_FREE);
  assert_int_equal(bh_report_mode_parse(NULL, &got), BH_EINVAL);
  assert_int_equal(bh_report_mode_parse("none", NULL), BH_EINVAL);
  assert_string_equal(bh_report_mode_name((bh_report_mode_t)4), "?");
}

static void test_create_refusals(void **state) {
  (void)state;
  bh__reporter_t *r = NULL;
  struct bh_arena *sim = fake_arena_sim(ARENA_BYTES);
  assert_int_equal(bh__reporter_create(sim, BH_REPORT_DONTNEED, &r), BH_ENOTSUP);
  assert_int_equal(bh__reporter_create(sim, BH_REPORT_FREE, &r), BH_ENOTSUP);
  assert_int_equal(bh__reporter_create(sim, BH_REPORT_PUNCH, &r), BH_ENOTSUP);
  assert_null(r);
  assert_null(sim->discarded);
  assert_int_equal(bh__reporter_create(sim, (bh_report_mode_t)7, &r), BH_EINVAL);
  assert_int_equal(bh__reporter_create(NULL, BH_REPORT_NONE, &r), BH_EINVAL);
  assert_int_equal(bh__reporter_create(sim, BH_REPORT_NONE, NULL), BH_EINVAL);

  struct bh_arena *anon = fake_arena_mmap(ARENA_BYTES, MADV_NOHUGEPAGE);
  assert_non_null(anon);
  assert_int_equal(bh__reporter_create(anon, BH_REPORT_PUNCH, &r), BH_ENOTSUP);
  struct bh_arena *mfd = fake_arena_memfd(ARENA_BYTES);
  assert_non_null(mfd);
  assert_int_equal(bh__reporter_create(mfd, BH_REPORT_FREE, &r), BH_ENOTSUP);
  assert_null(r);
  assert_null(anon->discarded);
  assert_null(mfd->discarded);

  /* The modes each backing does support; the bitmap lives as long as the reporter. */
  const struct {
    struct bh_arena *a;
    bh_report_mode_t m;
  } ok[] = {
      {sim, BH_REPORT_NONE},  {anon, BH_REPORT_DONTNEED}, {anon, BH_REPORT_FREE},
      {anon, BH_REPORT_NONE}, {mfd, BH_REPORT_PUNCH},     {mfd, BH_REPORT_DONTNEED},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    assert_int_equal(bh__reporter_create(ok[i].a, ok[i].m, &r), 0);
    assert_non_null(r);
    assert_non_null(ok[i].a->discarded);
    assert_int_equal(bh__reporter_mode(r), ok[i].m);
    bh__reporter_destroy(r);
    assert_null(ok[i].a->discarded);
    r = NULL;
  }
  bh__reporter_destroy(NULL);
  fake_arena_free(sim);
  fake_arena_free(anon);
  fake_arena_free(mfd);
}

/* {0,9},{512,9},{2048,0} in shuffled order: two calls, one for [0,1024), one for 2048.  With
 * transparent huge pages (thp), page 2048 is discarded out of a huge page and khugepaged may
 * collapse that huge page again at any time, filling the hole with a zeroed page
 * (khugepaged_max_ptes_none, mm/khugepaged.c): then it is resident again, and still zero. */
static void check_coalesce_dontneed(struct bh_arena *a, bool thp) {
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_DONTNEED, &r), 0);
  fake_fill(a, 0, 2050);
  assert_int_equal(resident(a, 0, 2050), 2050);

  const bh_report_range_t batch[] = {{2048, 0}, {512, 9}, {0, 9}};
  assert_int_equal(bh__reporter_report(r, batch, 3), 0);
  bh_reporter_stats_t s = stats_of(r);
  assert_int_equal(s.calls, 2);
  assert_int_equal(s.ranges, 3);
  assert_int_equal(s.bytes, 1025 * BH_PAGE_SIZE);
  assert_int_equal(s.errors, 0);
  assert_true(s.ns > 0);

  /* Discarded pages left memory; their neighbours kept it, and their data. */
  assert_int_equal(resident(a, 0, 1024), 0);
  assert_int_equal(resident(a, 1024, 1024), 1024);
  if (thp)
    assert_true(resident(a, 2048, 1) <= 1);
  else
    assert_int_equal(resident(a, 2048, 1), 0);
  assert_int_equal(resident(a, 2049, 1), 1);
  assert_int_equal(fake_intact(a, 1024, 1024), 1024);
  assert_int_equal(fake_intact(a, 2049, 1), 1);
  assert_int_equal(fake_zero(a, 0, 1024), 1024);
  assert_int_equal(fake_zero(a, 2048, 1), 1);
  assert_int_equal(bh__discarded_pages(a), 1025);
  bh__reporter_destroy(r);
}

static void test_coalesce_dontneed(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(ARENA_BYTES, MADV_NOHUGEPAGE);
  assert_non_null(a);
  check_coalesce_dontneed(a, false);
  fake_arena_free(a);
}

/* The same with transparent huge pages: an order-0 discard splits the huge page. */
static void test_coalesce_dontneed_thp(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(ARENA_BYTES, MADV_HUGEPAGE);
  assert_non_null(a);
  check_coalesce_dontneed(a, true);
  fake_arena_free(a);
}

/* Invalid batches change nothing: no discard, no counter, no bit. */
static void test_invalid_batches(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(ARENA_BYTES, MADV_NOHUGEPAGE);
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_DONTNEED, &r), 0);
  fake_fill(a, 0, 1024);
  const uint64_t last = a->nr_pages - 1;
  const struct {
    bh_report_range_t v[2];
    int err;
  } bad[] = {
      {{{0, 0}, {1, 1}}, BH_EALIGN},        /* pfn 1 is not order-1 aligned */
      {{{0, 0}, {last + 1, 0}}, BH_EFAULT}, /* past the end */
      {{{0, 0}, {a->nr_pages - 512, 10}}, BH_EALIGN},
      {{{1, 0}, {0, 15}}, BH_EFAULT},  /* aligned, larger than the arena */
      {{{0, 9}, {256, 8}}, BH_EINVAL}, /* overlap */
      {{{8, 3}, {8, 3}}, BH_EINVAL},   /* the same block twice */
      {{{0, 0}, {0, BH_ORDER_LIMIT + 1}}, BH_EINVAL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(bh__reporter_report(r, bad[i].v, 2), bad[i].err);
  assert_int_equal(bh__reporter_report(NULL, bad[0].v, 1), BH_EINVAL);
  assert_int_equal(bh__reporter_report(r, NULL, 1), BH_EINVAL);
  assert_int_equal(bh__reporter_report(r, NULL, 0), 0);
  bh_reporter_stats_t s = stats_of(r);
  assert_int_equal(s.calls + s.ranges + s.bytes + s.ns + s.errors, 0);
  assert_int_equal(resident(a, 0, 1024), 1024);
  assert_int_equal(fake_intact(a, 0, 1024), 1024);
  assert_int_equal(bh__discarded_pages(a), 0);

  /* The last page and the last max-order block are valid. */
  const bh_report_range_t edge[] = {{last, 0}, {a->nr_pages - 1024, 10}};
  assert_int_equal(bh__reporter_report(r, &edge[0], 1), 0);
  assert_int_equal(bh__reporter_report(r, &edge[1], 1), 0);
  s = stats_of(r);
  assert_int_equal(s.calls, 2);
  assert_int_equal(s.bytes, 1025 * BH_PAGE_SIZE);
  assert_int_equal(bh__discarded_pages(a), 1024); /* the last page was in the block */
  bh__reporter_destroy(r);
  fake_arena_free(a);
}

/* Batches above the capacity: 40 touching pages are one call, 40 apart ones 40 calls. */
static void test_large_batches(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(ARENA_BYTES, MADV_NOHUGEPAGE);
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_DONTNEED, &r), 0);
  fake_fill(a, 0, 200);
  bh_report_range_t v[40];
  for (unsigned i = 0; i < 40; i++)
    v[i] = (bh_report_range_t){39 - i, 0};
  assert_int_equal(bh__reporter_report(r, v, 40), 0);
  for (unsigned i = 0; i < 40; i++)
    v[i] = (bh_report_range_t){100 + 2 * ((i * 17) % 40), 0};
  assert_int_equal(bh__reporter_report(r, v, 40), 0);
  bh_reporter_stats_t s = stats_of(r);
  assert_int_equal(s.calls, 41);
  assert_int_equal(s.ranges, 80);
  assert_int_equal(s.bytes, 80 * BH_PAGE_SIZE);
  assert_int_equal(resident(a, 0, 40), 0);
  assert_int_equal(resident(a, 40, 60), 60);
  assert_int_equal(resident(a, 100, 80), 40);
  assert_int_equal(fake_zero(a, 100, 80), 40);
  assert_int_equal(fake_intact(a, 101, 1), 1);
  assert_int_equal(bh__discarded_pages(a), 80);
  bh__reporter_destroy(r);
  fake_arena_free(a);
}

static uint64_t memfd_blocks(int fd) {
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  return (uint64_t)st.st_blocks; /* 512-byte units */
}

/* Punching holes in a memfd arena frees the pages in the file; they read back zero. */
static void test_punch_memfd(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_memfd(ARENA_BYTES);
  assert_non_null(a);
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_PUNCH, &r), 0);
  fake_fill(a, 0, 64);
  assert_int_equal(memfd_blocks(a->memfd), 64 * 8);
  assert_int_equal(resident(a, 0, 64), 64);

  const bh_report_range_t batch[] = {{16, 0}, {4, 2}, {0, 2}, {32, 4}};
  assert_int_equal(bh__reporter_report(r, batch, 4), 0);
  bh_reporter_stats_t s = stats_of(r);
  assert_int_equal(s.calls, 3); /* [0,8), 16, [32,48) */
  assert_int_equal(s.ranges, 4);
  assert_int_equal(s.bytes, 25 * BH_PAGE_SIZE);
  assert_int_equal(s.errors, 0);
  assert_int_equal(memfd_blocks(a->memfd), (64 - 25) * 8);
  assert_int_equal(resident(a, 0, 8), 0);
  assert_int_equal(resident(a, 8, 8), 8);
  assert_int_equal(resident(a, 16, 1), 0);
  assert_int_equal(resident(a, 17, 15), 15);
  assert_int_equal(resident(a, 32, 16), 0);
  assert_int_equal(resident(a, 48, 16), 16);
  assert_int_equal(fake_intact(a, 8, 8), 8);
  assert_int_equal(fake_intact(a, 17, 15), 15);
  assert_int_equal(fake_intact(a, 48, 16), 16);
  assert_int_equal(fake_zero(a, 0, 8), 8);
  assert_int_equal(fake_zero(a, 16, 1), 1);
  assert_int_equal(fake_zero(a, 32, 16), 16);
  assert_int_equal(bh__discarded_pages(a), 25);
  bh__reporter_destroy(r);
  fake_arena_free(a);
}

/* MADV_DONTNEED on a shared mapping only unmaps: the memfd keeps the pages and the data. */
static void test_dontneed_memfd_only_unmaps(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_memfd(ARENA_BYTES);
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_DONTNEED, &r), 0);
  fake_fill(a, 0, 16);
  const bh_report_range_t batch[] = {{0, 3}};
  assert_int_equal(bh__reporter_report(r, batch, 1), 0);
  assert_int_equal(stats_of(r).calls, 1);
  assert_int_equal(memfd_blocks(a->memfd), 16 * 8);
  assert_int_equal(resident(a, 0, 16), 16);
  assert_int_equal(fake_intact(a, 0, 16), 16);
  bh__reporter_destroy(r);
  fake_arena_free(a);
}

/* MADV_FREE: the pages stay mapped but the kernel marks them lazily freeable. */
static void test_madv_free(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(ARENA_BYTES, MADV_NOHUGEPAGE);
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_FREE, &r), 0);
  fake_fill(a, 0, 2048 + 1);
  bh_procmem_t before, after;
  assert_int_equal(bh_procmem_read(&before), 0);
  const bh_report_range_t batch[] = {{1536, 9}, {0, 9}, {512, 9}, {1024, 9}};
  assert_int_equal(bh__reporter_report(r, batch, 4), 0);
  assert_int_equal(bh_procmem_read(&after), 0);
  bh_reporter_stats_t s = stats_of(r);
  assert_int_equal(s.calls, 1);
  assert_int_equal(s.ranges, 4);
  assert_int_equal(s.bytes, 8 * MiB);
  assert_int_equal(s.errors, 0);
  /* Pages wait in per-CPU batches of at most 31 before they are flagged lazyfree. */
  uint64_t slack = 64 * BH_PAGE_SIZE * (uint64_t)sysconf(_SC_NPROCESSORS_ONLN);
  assert_true(after.lazyfree_bytes >= before.lazyfree_bytes + 8 * MiB - slack);
  assert_true(after.lazyfree_bytes <= before.lazyfree_bytes + 8 * MiB);
  /* Without memory pressure nothing is reclaimed yet. */
  assert_int_equal(resident(a, 0, 2049), 2049);
  assert_int_equal(fake_intact(a, 2048, 1), 1);
  assert_int_equal(bh__discarded_pages(a), 2048);
  bh__reporter_destroy(r);
  fake_arena_free(a);
}

/* NONE counts ranges and bytes, makes no call, and leaves the data in place. */
static void test_none_counts_only(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(ARENA_BYTES, MADV_NOHUGEPAGE);
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_NONE, &r), 0);
  fake_fill(a, 0, 1024);
  const bh_report_range_t batch[] = {{512, 9}, {0, 8}};
  assert_int_equal(bh__reporter_report(r, batch, 2), 0);
  bh_reporter_stats_t s = stats_of(r);
  assert_int_equal(s.calls, 0);
  assert_int_equal(s.ns, 0);
  assert_int_equal(s.ranges, 2);
  assert_int_equal(s.bytes, 768 * BH_PAGE_SIZE);
  assert_int_equal(resident(a, 0, 1024), 1024);
  assert_int_equal(fake_intact(a, 0, 1024), 1024);
  assert_int_equal(bh__discarded_pages(a), 768);
  bh__reporter_destroy(r);
  fake_arena_free(a);
}

/* Sim backing: NONE is the only mode, and its reports are counted and marked. */
static void test_sim_none(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_sim(1ULL << 36); /* 64 GiB of metadata-only pages */
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_NONE, &r), 0);
  const bh_report_range_t batch[] = {{a->nr_pages - 1024, 10}, {1ULL << 20, 9}};
  assert_int_equal(bh__reporter_report(r, batch, 2), 0);
  bh_reporter_stats_t s = stats_of(r);
  assert_int_equal(s.calls, 0);
  assert_int_equal(s.ranges, 2);
  assert_int_equal(s.bytes, 1536 * BH_PAGE_SIZE);
  assert_int_equal(bh__discarded_pages(a), 1536);
  uint64_t bytes = 1;
  assert_int_equal(bh_arena_resident(a, &bytes), 0);
  assert_int_equal(bytes, 0);
  bh__reporter_destroy(r);
  fake_arena_free(a);
}

/* Bits set by a report, cleared by allocation; each allocation counts only what was set. */
static void test_refault_accounting(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(ARENA_BYTES, MADV_NOHUGEPAGE);
  bh__discard_on_alloc(a, 0, 10); /* no bitmap yet: nothing happens */
  assert_int_equal(a->refault_pages + a->refault_blocks, 0);
  assert_int_equal(bh__discarded_pages(a), 0);

  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_DONTNEED, &r), 0);
  const bh_report_range_t batch[] = {{0, 9}, {1024, 0}, {70, 0}, {4096, 12}};
  /* {70,0} overlaps {0,9}: rejected, nothing marked */
  assert_int_equal(bh__reporter_report(r, batch, 4), BH_EINVAL);
  assert_int_equal(bh__discarded_pages(a), 0);
  const bh_report_range_t ok[] = {{0, 9}, {1024, 0}, {4096, 12}, {600, 3}};
  assert_int_equal(bh__reporter_report(r, ok, 4), 0);
  assert_int_equal(bh__discarded_pages(a), 512 + 1 + 4096 + 8);

  bh__discard_on_alloc(a, 0, 10); /* [0,1024) holds [0,512) and [600,608) */
  assert_int_equal(a->refault_pages, 520);
  assert_int_equal(a->refault_blocks, 1);
  bh__discard_on_alloc(a, 0, 10); /* again: nothing left to count */
  assert_int_equal(a->refault_pages, 520);
  assert_int_equal(a->refault_blocks, 1);
  bh__discard_on_alloc(a, 2048, 11); /* no marked page */
  assert_int_equal(a->refault_blocks, 1);
  bh__discard_on_alloc(a, 1024, 0);
  assert_int_equal(a->refault_pages, 521);
  assert_int_equal(a->refault_blocks, 2);

  /* Partial words: order 3 at 4160 (bits 0..7 of word 65), order 0 at 4167 again. */
  bh__discard_on_alloc(a, 4160, 3);
  assert_int_equal(a->refault_pages, 529);
  bh__discard_on_alloc(a, 4167, 0);
  assert_int_equal(a->refault_pages, 529);
  assert_int_equal(a->refault_blocks, 3);
  bh__discard_on_alloc(a, 4096, 12); /* the rest of the order-12 block */
  assert_int_equal(a->refault_pages, 529 + 4096 - 8);
  assert_int_equal(a->refault_blocks, 4);
  assert_int_equal(bh__discarded_pages(a), 0);

  /* Reporting again sets the bits again. */
  assert_int_equal(bh__reporter_report(r, &ok[3], 1), 0);
  assert_int_equal(bh__discarded_pages(a), 8);
  bh__discard_on_alloc(a, 604, 2);
  assert_int_equal(bh__discarded_pages(a), 4);
  assert_int_equal(a->refault_pages, 529 + 4096 - 8 + 4);
  assert_int_equal(a->refault_blocks, 5);
  bh__reporter_destroy(r);
  assert_null(a->discarded);
  bh__discard_on_alloc(a, 600, 3); /* detached: no-op */
  assert_int_equal(a->refault_blocks, 5);
  fake_arena_free(a);
}

/* Concurrent reports of disjoint pages: every counter and bit adds up. */
#define THREADS 4
#define REPORTS 200
struct worker {
  bh__reporter_t *r;
  unsigned id;
  int err;
};

static void *report_worker(void *p) {
  struct worker *w = p;
  for (unsigned i = 0; i < REPORTS && !w->err; i++) {
    /* three touching order-0 pages of this thread's own group of four */
    uint64_t base = ((uint64_t)i * THREADS + w->id) * 4;
    bh_report_range_t v[] = {{base + 2, 0}, {base, 0}, {base + 1, 0}};
    w->err = bh__reporter_report(w->r, v, 3);
  }
  return NULL;
}

static void test_concurrent_reports(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(ARENA_BYTES, MADV_NOHUGEPAGE);
  bh__reporter_t *r;
  assert_int_equal(bh__reporter_create(a, BH_REPORT_DONTNEED, &r), 0);
  fake_fill(a, 0, THREADS * REPORTS * 4);
  pthread_t t[THREADS];
  struct worker w[THREADS];
  for (unsigned i = 0; i < THREADS; i++) {
    w[i] = (struct worker){r, i, 0};
    assert_int_equal(pthread_create(&t[i], NULL, report_worker, &w[i]), 0);
  }
  for (unsigned i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].err, 0);
  }
  bh_reporter_stats_t s = stats_of(r);
  assert_int_equal(s.calls, THREADS * REPORTS); /* one call per report */
  assert_int_equal(s.ranges, THREADS * REPORTS * 3);
  assert_int_equal(s.bytes, THREADS * REPORTS * 3 * BH_PAGE_SIZE);
  assert_int_equal(bh__discarded_pages(a), THREADS * REPORTS * 3);
  assert_int_equal(resident(a, 0, THREADS * REPORTS * 4), THREADS * REPORTS);
  for (uint64_t k = 0; k < THREADS * REPORTS; k++)
    assert_int_equal(fake_intact(a, k * 4 + 3, 1), 1);
  bh__reporter_destroy(r);
  fake_arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mode_names),         cmocka_unit_test(test_create_refusals),
      cmocka_unit_test(test_coalesce_dontneed),  cmocka_unit_test(test_coalesce_dontneed_thp),
      cmocka_unit_test(test_invalid_batches),    cmocka_unit_test(test_large_batches),
      cmocka_unit_test(test_punch_memfd),        cmocka_unit_test(test_dontneed_memfd_only_unmaps),
      cmocka_unit_test(test_madv_free),          cmocka_unit_test(test_none_counts_only),
      cmocka_unit_test(test_sim_none),           cmocka_unit_test(test_refault_accounting),
      cmocka_unit_test(test_concurrent_reports),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
