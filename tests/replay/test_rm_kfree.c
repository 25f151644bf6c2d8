/*
 * The replay's bitmap of the recorded machine's free pages (src/replay/replay_machine.h):
 * bh__rm_kfree_set marks a range a word at a time where it covers whole words, and
 * bh__rm_kfree_mark a block inside the machine only.  Both are checked against marking one
 * bit at a time, from seeded random bitmaps, for every start and length over four words
 * (ranges inside one word, ending on a word's edge, spanning several), setting and
 * clearing; the bits outside the range must stay as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replay/replay_machine.h"

enum { WORDS = 4, BITS = WORDS * 64 };

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void ref_set(uint64_t *w, uint64_t pfn, uint64_t n, bool free) {
  for (uint64_t p = pfn; p < pfn + n; p++) {
    if (free)
      w[p >> 6] |= 1ull << (p & 63);
    else
      w[p >> 6] &= ~(1ull << (p & 63));
  }
}

static void test_set_ranges(void **state) {
  (void)state;
  uint64_t seed = 0x9e3779b97f4a7c15ull, got[WORDS], want[WORDS];
  bh__rmachine_t rm = {.kfree = got, .nr_pages = BITS};
  for (int free = 0; free < 2; free++)
    for (uint64_t pfn = 0; pfn < BITS; pfn++)
      for (uint64_t n = 0; pfn + n <= BITS; n++) {
        for (int i = 0; i < WORDS; i++)
          got[i] = want[i] = rng(&seed);
        bh__rm_kfree_set(&rm, pfn, n, free);
        ref_set(want, pfn, n, free);
        if (memcmp(got, want, sizeof(got)))
          fail_msg("%s pfn %llu n %llu", free ? "free" : "alloc", (unsigned long long)pfn,
                   (unsigned long long)n);
      }
}

static void test_mark_blocks(void **state) {
  (void)state;
  uint64_t seed = 12345, got[WORDS], want[WORDS];
  bh__rmachine_t rm = {.kfree = got, .nr_pages = BITS - 3}; /* the last word partly outside */
  for (int free = 0; free < 2; free++)
    for (unsigned order = 0; order <= 8; order++)
      for (uint64_t pfn = 0; pfn < BITS + 8; pfn++) {
        for (int i = 0; i < WORDS; i++)
          got[i] = want[i] = rng(&seed);
        bh__rm_kfree_mark(&rm, pfn, order, free);
        if (pfn + (1ull << order) <= rm.nr_pages) /* else nothing */
          ref_set(want, pfn, 1ull << order, free);
        if (memcmp(got, want, sizeof(got)))
          fail_msg("%s pfn %llu order %u", free ? "free" : "alloc", (unsigned long long)pfn, order);
        if (free && pfn + (1ull << order) <= rm.nr_pages)
          assert_true(bh__rm_kfree_all(&rm, pfn, order));
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_set_ranges),
      cmocka_unit_test(test_mark_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
