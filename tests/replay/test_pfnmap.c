/*
 * The recorded-pfn map (src/replay/pfnmap.h): pfns inside the dense range (8-byte cells) and
 * outside it (the hash part) behave alike for insert, find, delete and the fields of an
 * entry; the hash part grows without losing the dense cells; the one numbering of both parts
 * reaches every entry once, with its pfn; and a map asked for values that do not fit a cell
 * (2^32 and up) has the hash part only and keeps them whole; the dense part gives cells to the
 * groups of BH__PFN_GROUP pfns that are used, and only to them.  Checked against plain arrays
 * of what should be there, over a seeded random sequence.
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

#include "replay/pfnmap.h"

enum { BASE = 5000, SPAN = 3000, UNIVERSE = 12000 };

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* What the map should hold: per pfn, live or not, and the fields. */
struct want {
  uint64_t val[UNIVERSE];
  uint8_t live[UNIVERSE], order[UNIVERSE], kind[UNIVERSE];
};

static void check_entry(bh__pfn_ref_t e, const struct want *w, uint64_t p) {
  assert_true(bh__pfn_ok(e));
  assert_int_equal(bh__pfn_val(e), w->val[p]);
  assert_int_equal(bh__pfn_order(e), w->order[p]);
  assert_int_equal(bh__pfn_kind(e), w->kind[p]);
}

/* Every live pfn is found with its fields, every other one is not, and a walk over the slots
 * sees each live pfn once, at its own pfn. */
static void check_all(const bh__pfnmap_t *m, const struct want *w) {
  uint64_t n = 0;
  for (uint64_t p = 0; p < UNIVERSE; p++) {
    bh__pfn_ref_t e = bh__pfnmap_find(m, p);
    if (w->live[p]) {
      check_entry(e, w, p);
      /* the part the pfn belongs to holds it */
      assert_int_equal(e.c != NULL, p - m->base < m->span);
      n++;
    } else {
      assert_false(bh__pfn_ok(e));
    }
  }
  assert_int_equal(m->used, n);
  uint64_t seen = 0;
  for (uint64_t i = 0; i < bh__pfnmap_slots(m); i++) {
    bh__pfn_ref_t e = bh__pfnmap_slot(m, i);
    if (!bh__pfn_ok(e))
      continue;
    uint64_t p = bh__pfnmap_slot_pfn(m, i);
    assert_true(p < UNIVERSE && w->live[p]);
    check_entry(e, w, p);
    seen++;
  }
  assert_int_equal(seen, n);
}

/* A random sequence of inserts (new and existing entries), field updates and deletes, with
 * values below val_limit (0: any 64-bit value). */
static void run(bh__pfnmap_t *m, uint64_t seed, uint64_t val_limit) {
  print_message("seed %llu, span %llu\n", (unsigned long long)seed, (unsigned long long)m->span);
  struct want *w = calloc(1, sizeof(*w));
  assert_non_null(w);
  uint64_t s = seed;
  for (int step = 0; step < 200000; step++) {
    uint64_t p = rng(&s) % UNIVERSE, r = rng(&s);
    if (r % 3) {
      unsigned kind = 1 + (unsigned)(r >> 8) % 3;
      uint64_t used = m->used;
      bh__pfn_ref_t e = bh__pfnmap_insert(m, p, kind);
      assert_true(bh__pfn_ok(e));
      if (!w->live[p]) { /* a new entry: the kind asked for, val and order 0 */
        assert_int_equal(m->used, used + 1);
        w->live[p] = 1;
        w->val[p] = w->order[p] = 0;
        w->kind[p] = (uint8_t)kind;
      } else { /* an existing one, as it was */
        assert_int_equal(m->used, used);
      }
      check_entry(e, w, p);
      if (r & 0x10000) { /* then change its fields */
        uint64_t v = rng(&s);
        w->val[p] = val_limit ? v % val_limit : v;
        w->order[p] = (uint8_t)(v >> 40) % 19;
        w->kind[p] = (uint8_t)(1 + (v >> 50) % 3);
        bh__pfn_set_val(e, w->val[p]);
        bh__pfn_set_order(e, w->order[p]);
        bh__pfn_set_kind(e, w->kind[p]);
        check_entry(bh__pfnmap_find(m, p), w, p);
      }
    } else {
      bh__pfn_ref_t e = bh__pfnmap_find(m, p);
      assert_int_equal(bh__pfn_ok(e), w->live[p]);
      if (bh__pfn_ok(e))
        bh__pfnmap_delete(m, e);
      w->live[p] = 0;
    }
    if (step % 20000 == 0)
      check_all(m, w);
  }
  check_all(m, w);
  free(w);
}

static void test_hash_only(void **state) {
  (void)state;
  bh__pfnmap_t m;
  assert_int_equal(bh__pfnmap_init(&m, 16), 0);
  run(&m, 0x9e3779b97f4a7c15ull, 0);
  assert_null(m.dense);
  assert_true(m.mask + 1 > 1024); /* the hash part grew past its first size */
  bh__pfnmap_destroy(&m);
}

static void test_dense_and_hash(void **state) {
  (void)state;
  uint64_t seeds[] = {0x9e3779b97f4a7c15ull, 12345};
  for (int i = 0; i < 2; i++) {
    bh__pfnmap_t m;
    assert_int_equal(bh__pfnmap_init_dense(&m, 16, BASE, SPAN, UINT32_MAX), 0);
    assert_non_null(m.dense);
    assert_int_equal(m.span, SPAN);
    run(&m, seeds[i], 1ull << 32); /* every value a cell can hold, UINT32_MAX too */
    /* the dense part took the pfns of its range, the hash part the others */
    assert_true(m.hused < m.used);
    assert_true(m.mask + 1 > 1024); /* the hash part grew past its first size */
    bh__pfnmap_destroy(&m);
  }
}

/* Values from 2^32 do not fit a cell: the map falls back to the hash part alone, and a value
 * of 2^32 + x reads back whole, not as x. */
static void test_wide_values_fall_back(void **state) {
  (void)state;
  bh__pfnmap_t m;
  assert_int_equal(bh__pfnmap_init_dense(&m, 16, BASE, SPAN, 1ull << 32), 0);
  assert_null(m.dense);
  assert_int_equal(m.span, 0);
  bh__pfn_ref_t e = bh__pfnmap_insert(&m, BASE + 1, BH__PFN_LIVE);
  assert_non_null(e.e);
  bh__pfn_set_val(e, (1ull << 32) + 7);
  assert_int_equal(bh__pfn_val(bh__pfnmap_find(&m, BASE + 1)), (1ull << 32) + 7);
  bh__pfnmap_delete(&m, e);
  run(&m, 777, 0);
  bh__pfnmap_destroy(&m);
}

/* The dense part's cells go to the groups of pfns that are inserted, first come first served,
 * BH__PFN_GROUP at a time: a find or a slot in a group never inserted takes none, a delete
 * keeps the group's cells, and a group of a range that does not start at a multiple of the
 * group size is counted from the range's base. */
static void test_dense_groups(void **state) {
  (void)state;
  bh__pfnmap_t m;
  assert_int_equal(bh__pfnmap_init_dense(&m, 16, BASE + 3, SPAN, UINT32_MAX), 0);
  const uint64_t G = BH__PFN_GROUP;
  uint64_t pfns[] = {BASE + 3, BASE + 3 + G - 1, BASE + 3 + 40 * G + 5, BASE + 3 + G};
  uint64_t cells[] = {G, G, 2 * G, 3 * G}; /* the store's cells handed out after each insert */
  for (int i = 0; i < 4; i++) {
    bh__pfn_ref_t e = bh__pfnmap_insert(&m, pfns[i], BH__PFN_LIVE);
    assert_non_null(e.c);
    bh__pfn_set_val(e, 100 + (uint64_t)i);
    assert_int_equal(m.ncells, cells[i]);
  }
  /* the second group handed out is the 41st of the range, the third the 2nd */
  assert_ptr_equal(bh__pfnmap_find(&m, pfns[2]).c, &m.dense[G + 5]);
  assert_ptr_equal(bh__pfnmap_find(&m, pfns[3]).c, &m.dense[2 * G]);
  assert_false(bh__pfn_ok(bh__pfnmap_find(&m, BASE + 3 + 7 * G)));
  assert_false(bh__pfn_ok(bh__pfnmap_find(&m, BASE + 3 + G + 1)));
  uint64_t n = 0;
  for (uint64_t i = 0; i < bh__pfnmap_slots(&m); i++)
    if (bh__pfn_ok(bh__pfnmap_slot(&m, i))) {
      uint64_t p = bh__pfnmap_slot_pfn(&m, i);
      int k = p == pfns[0] ? 0 : p == pfns[1] ? 1 : p == pfns[2] ? 2 : p == pfns[3] ? 3 : -1;
      assert_true(k >= 0);
      assert_int_equal(bh__pfn_val(bh__pfnmap_slot(&m, i)), 100 + (uint64_t)k);
      n++;
    }
  assert_int_equal(n, 4);
  assert_int_equal(m.ncells, 3 * G); /* finds and the walk took no cells */
  bh__pfnmap_delete(&m, bh__pfnmap_find(&m, pfns[0]));
  bh__pfnmap_delete(&m, bh__pfnmap_find(&m, pfns[1]));
  bh__pfn_ref_t e = bh__pfnmap_insert(&m, pfns[1], BH__PFN_DEAD);
  assert_ptr_equal(e.c, &m.dense[G - 1]); /* the group kept its cells */
  assert_int_equal(bh__pfn_kind(e), BH__PFN_DEAD);
  assert_int_equal(bh__pfn_val(e), 0);
  assert_int_equal(m.ncells, 3 * G);
  assert_int_equal(m.used, 3);
  bh__pfnmap_destroy(&m);
}

/* The hash part's own functions give the 24-byte entry and agree with the references. */
static void test_hash_functions(void **state) {
  (void)state;
  bh__pfnmap_t m;
  assert_int_equal(bh__pfnmap_init(&m, 16), 0);
  for (uint64_t p = 0; p < 5000; p++) {
    bh__pfn_entry_t *e = bh__pfnmap_hinsert(&m, p * 4096);
    assert_non_null(e);
    assert_int_equal(e->key, p * 4096 + 1);
    assert_int_equal(e->val, 0); /* a new entry is zeroed */
    e->val = p;
    e->aux = (uint32_t)p * 3;
  }
  assert_int_equal(m.used, 5000);
  assert_int_equal(m.hused, 5000);
  for (uint64_t p = 0; p < 5000; p += 2)
    bh__pfnmap_hdelete(&m, bh__pfnmap_hfind(&m, p * 4096));
  for (uint64_t p = 0; p < 5000; p++) {
    bh__pfn_entry_t *e = bh__pfnmap_hfind(&m, p * 4096);
    bh__pfn_ref_t r = bh__pfnmap_find(&m, p * 4096);
    if (p % 2) {
      assert_non_null(e);
      assert_ptr_equal(r.e, e);
      assert_int_equal(e->aux, p * 3);
      assert_int_equal(bh__pfn_val(r), p);
    } else {
      assert_null(e);
      assert_false(bh__pfn_ok(r));
    }
  }
  assert_int_equal(m.used, 2500);
  bh__pfnmap_destroy(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hash_only),      cmocka_unit_test(test_dense_and_hash),
      cmocka_unit_test(test_dense_groups),   cmocka_unit_test(test_wide_values_fall_back),
      cmocka_unit_test(test_hash_functions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
