/*
 * Memory measurement: arena residency through mincore, process memory through smaps_rollup
 * and getrusage.  Runs on hand-made arenas.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "reporter/fake_arena.h"

#include <buddyhint/report.h>

#define MiB (1ULL << 20)

static uint64_t resident(struct bh_arena *a, uint64_t pfn, uint64_t n) {
  uint64_t r = UINT64_MAX;
  assert_int_equal(bh_arena_resident_range(a, pfn, n, &r), 0);
  return r;
}

static uint64_t arena_resident(struct bh_arena *a) {
  uint64_t b = UINT64_MAX;
  assert_int_equal(bh_arena_resident(a, &b), 0);
  return b;
}

static void touch(struct bh_arena *a, uint64_t pfn) { fake_page(a, pfn)[pfn % BH_PAGE_SIZE] = 1; }

/* A 512 MiB arena (two mincore chunks of 64 Ki pages): only touched pages count. */
static void test_arena_resident_exact(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_mmap(512 * MiB, MADV_NOHUGEPAGE);
  assert_non_null(a);
  assert_int_equal(a->nr_pages, 131072);
  assert_int_equal(arena_resident(a), 0);
  const uint64_t pfns[] = {0, 5, 65534, 65535, 65536, 100000, 131071};
  for (size_t i = 0; i < sizeof pfns / sizeof pfns[0]; i++)
    touch(a, pfns[i]);
  for (uint64_t p = 1000; p < 1100; p++)
    touch(a, p);
  assert_int_equal(arena_resident(a), 107 * BH_PAGE_SIZE);
  assert_int_equal(resident(a, 0, a->nr_pages), 107);
  assert_int_equal(resident(a, 0, 5), 1);
  assert_int_equal(resident(a, 5, 1), 1);
  assert_int_equal(resident(a, 6, 994), 0);
  assert_int_equal(resident(a, 1050, 100), 50);
  assert_int_equal(resident(a, 65535, 2), 2); /* across the chunk boundary */
  assert_int_equal(resident(a, 65000, 131072 - 65000), 5);
  assert_int_equal(resident(a, 131071, 1), 1);
  assert_int_equal(resident(a, 131071, 0), 0);
  assert_int_equal(resident(a, 131072, 0), 0);

  uint64_t r = 7;
  assert_int_equal(bh_arena_resident_range(a, 131071, 2, &r), BH_EFAULT);
  assert_int_equal(bh_arena_resident_range(a, 131073, 0, &r), BH_EFAULT);
  assert_int_equal(bh_arena_resident_range(a, 1, UINT64_MAX, &r), BH_EFAULT);
  assert_int_equal(r, 7);
  assert_int_equal(bh_arena_resident_range(NULL, 0, 1, &r), BH_EINVAL);
  assert_int_equal(bh_arena_resident_range(a, 0, 1, NULL), BH_EINVAL);
  assert_int_equal(bh_arena_resident(a, NULL), BH_EINVAL);
  assert_int_equal(bh_arena_resident(NULL, &r), BH_EINVAL);

  /* After a discard the page no longer counts. */
  assert_int_equal(madvise(fake_page(a, 65536), BH_PAGE_SIZE, MADV_DONTNEED), 0);
  assert_int_equal(arena_resident(a), 106 * BH_PAGE_SIZE);
  fake_arena_free(a);
}

/* A memfd arena counts the pages held by the memfd. */
static void test_arena_resident_memfd(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_memfd(64 * MiB);
  assert_non_null(a);
  assert_int_equal(arena_resident(a), 0);
  for (uint64_t p = 0; p < 300; p += 3)
    touch(a, p);
  assert_int_equal(arena_resident(a), 100 * BH_PAGE_SIZE);
  assert_int_equal(resident(a, 0, 3), 1);
  fake_arena_free(a);
}

static void test_arena_resident_sim(void **state) {
  (void)state;
  struct bh_arena *a = fake_arena_sim(64 * MiB);
  uint64_t r = 9;
  assert_int_equal(bh_arena_resident_range(a, 10, 100, &r), 0);
  assert_int_equal(r, 0);
  assert_int_equal(bh_arena_resident_range(a, 16384, 1, &r), BH_EFAULT);
  assert_int_equal(arena_resident(a), 0);
  fake_arena_free(a);
}

/* Rss and Anonymous rise by at least what we touch, minflt by a fault per page. */
static void test_procmem(void **state) {
  (void)state;
  bh_procmem_t m0, m1;
  memset(&m0, 0, sizeof m0);
  assert_int_equal(bh_procmem_read(&m0), 0);
  assert_true(m0.rss_bytes > 0);
  assert_true(m0.anon_bytes > 0);
  assert_true(m0.rss_bytes >= m0.anon_bytes);
  assert_true(m0.minflt > 0);
  assert_true(m0.rss_bytes % 1024 == 0);
  assert_int_equal(bh_procmem_read(NULL), BH_EINVAL);

  struct bh_arena *a = fake_arena_mmap(64 * MiB, MADV_NOHUGEPAGE);
  assert_int_equal(bh_procmem_read(&m0), 0);
  for (uint64_t p = 0; p < 8192; p++)
    touch(a, p);
  assert_int_equal(bh_procmem_read(&m1), 0);
  assert_true(m1.rss_bytes >= m0.rss_bytes + 32 * MiB);
  assert_true(m1.anon_bytes >= m0.anon_bytes + 32 * MiB);
  assert_true(m1.rss_bytes < m0.rss_bytes + 40 * MiB);
  assert_true(m1.minflt >= m0.minflt + 8192);
  assert_true(m1.majflt >= m0.majflt);
  assert_int_equal(arena_resident(a), 32 * MiB);

  /* And fall back once the pages are discarded. */
  assert_int_equal(madvise(a->base, 32 * MiB, MADV_DONTNEED), 0);
  bh_procmem_t m2;
  assert_int_equal(bh_procmem_read(&m2), 0);
  assert_true(m2.rss_bytes + 31 * MiB <= m1.rss_bytes);
  fake_arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arena_resident_exact),
      cmocka_unit_test(test_arena_resident_memfd),
      cmocka_unit_test(test_arena_resident_sim),
      cmocka_unit_test(test_procmem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
