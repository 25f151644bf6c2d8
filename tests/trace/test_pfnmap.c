/*
 * The recorded-pfn map with a direct-indexed part (src/trace/pfnmap.h): pfns inside the dense
 * range and outside it behave alike for insert, find and delete; the hash part grows without
 * losing the dense entries; and the one numbering of both parts reaches every entry once.
 * Checked against a plain array of what should be there, over a seeded random sequence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trace/pfnmap.h"

enum { BASE = 5000, SPAN = 3000, UNIVERSE = 12000 };

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Every live pfn is found with its value, every other one is not, and a walk over the slots
 * sees each live pfn once. */
static void check_all(const bh__pfnmap_t *m, const uint64_t *val, const uint8_t *live) {
  uint64_t n = 0;
  for (uint64_t p = 0; p < UNIVERSE; p++) {
    bh__pfn_entry_t *e = bh__pfnmap_find(m, p);
    if (live[p]) {
      assert_non_null(e);
      assert_int_equal(e->val, val[p]);
      n++;
    } else {
      assert_null(e);
    }
  }
  assert_int_equal(m->used, n);
  uint64_t seen = 0;
  for (uint64_t i = 0; i < bh__pfnmap_slots(m); i++) {
    const bh__pfn_entry_t *e = bh__pfnmap_slot(m, i);
    if (!e->key)
      continue;
    assert_true(e->key - 1 < UNIVERSE && live[e->key - 1]);
    assert_int_equal(bh__pfnmap_index(m, e), i);
    seen++;
  }
  assert_int_equal(seen, n);
}

static void run(bool dense, uint64_t seed) {
  print_message("seed %llu, dense %d\n", (unsigned long long)seed, dense);
  bh__pfnmap_t m;
  assert_int_equal(dense ? bh__pfnmap_init_dense(&m, 16, BASE, SPAN) : bh__pfnmap_init(&m, 16), 0);
  uint64_t *val = calloc(UNIVERSE, sizeof(*val));
  uint8_t *live = calloc(UNIVERSE, 1);
  assert_non_null(val);
  assert_non_null(live);
  uint64_t s = seed;
  for (int step = 0; step < 200000; step++) {
    uint64_t p = rng(&s) % UNIVERSE;
    if (rng(&s) % 3) {
      bh__pfn_entry_t *e = bh__pfnmap_insert(&m, p);
      assert_non_null(e);
      assert_int_equal(e->key, p + 1);
      if (!live[p])
        assert_int_equal(e->val, 0); /* a new entry is zeroed */
      e->val = val[p] = rng(&s);
      live[p] = 1;
    } else {
      bh__pfn_entry_t *e = bh__pfnmap_find(&m, p);
      assert_int_equal(e != NULL, live[p]);
      if (e)
        bh__pfnmap_delete(&m, e);
      live[p] = 0;
    }
    if (step % 20000 == 0)
      check_all(&m, val, live);
  }
  check_all(&m, val, live);
  if (dense) { /* the dense part took the pfns of its range, the hash part the others */
    assert_int_equal(m.span, SPAN);
    assert_true(m.hused < m.used);
    assert_true(m.mask + 1 > 32); /* the hash part grew past its first size */
  }
  bh__pfnmap_destroy(&m);
  free(val);
  free(live);
}

static void test_hash_only(void **state) {
  (void)state;
  run(false, 0x9e3779b97f4a7c15ull);
}

static void test_dense_and_hash(void **state) {
  (void)state;
  run(true, 0x9e3779b97f4a7c15ull);
  run(true, 12345);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hash_only),
      cmocka_unit_test(test_dense_and_hash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
