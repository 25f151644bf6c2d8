/*
 * The discarded-page bitmap: one bit per page that a report has discarded and nothing has
 * touched since.  The bitmap belongs to the allocator core, which clears the bits (and counts
 * the refaults the host would see) when it hands such a page out again; a reporter above it
 * (src/hinting/reporter.c) enables the bitmap and marks the pages it discards.  So the layers
 * only call downward: hinting into the core, never the core into hinting.
 */
#include "buddy/internal.h"

#include <stdlib.h>

static uint64_t bitmap_words(const bh_arena_t *a) { return (a->nr_pages + 63) / 64; }

/* The mask of bits [from, to) within one 64-bit word, 0 <= from < to <= 64. */
static uint64_t word_mask(unsigned from, unsigned to) {
  uint64_t hi = to == 64 ? ~0ULL : (1ULL << to) - 1;
  return hi & ~((1ULL << from) - 1);
}

/* Sets the bits of pages [pfn, pfn + n). */
static void bits_set(_Atomic uint64_t *map, uint64_t pfn, uint64_t n) {
  uint64_t end = pfn + n;
  while (pfn < end) {
    uint64_t w = pfn / 64, wend = (w + 1) * 64 < end ? (w + 1) * 64 : end;
    uint64_t mask = word_mask((unsigned)(pfn % 64), (unsigned)(wend - w * 64));
    atomic_fetch_or_explicit(&map[w], mask, memory_order_relaxed);
    pfn = wend;
  }
}

/* Clears the bits of pages [pfn, pfn + n); returns how many were set. */
static uint64_t bits_clear(_Atomic uint64_t *map, uint64_t pfn, uint64_t n) {
  uint64_t end = pfn + n, was = 0;
  while (pfn < end) {
    uint64_t w = pfn / 64, wend = (w + 1) * 64 < end ? (w + 1) * 64 : end;
    uint64_t mask = word_mask((unsigned)(pfn % 64), (unsigned)(wend - w * 64));
    if (atomic_load_explicit(&map[w], memory_order_relaxed) & mask) {
      uint64_t old = atomic_fetch_and_explicit(&map[w], ~mask, memory_order_relaxed);
      was += (uint64_t)__builtin_popcountll(old & mask);
    }
    pfn = wend;
  }
  return was;
}

int bh__discard_enable(bh_arena_t *a) {
  if (a->discarded)
    return 0;
  a->discarded = calloc(bitmap_words(a) + 1, sizeof *a->discarded);
  return a->discarded ? 1 : BH_ENOMEM;
}

void bh__discard_disable(bh_arena_t *a) {
  _Atomic uint64_t *map = a->discarded;
  atomic_store_explicit(&a->any_discarded, false, memory_order_relaxed);
  a->discarded = NULL;
  free((void *)map);
}

void bh__discard_mark(bh_arena_t *a, uint64_t pfn, uint64_t n) {
  atomic_store_explicit(&a->any_discarded, true, memory_order_relaxed);
  bits_set(a->discarded, pfn, n);
}

void bh__discard_on_alloc(bh_arena_t *a, uint64_t pfn, unsigned order) {
  _Atomic uint64_t *map = a->discarded;
  if (map == NULL || order > BH_ORDER_LIMIT || pfn >= a->nr_pages)
    return;
  uint64_t n = 1ULL << order;
  if (n > a->nr_pages - pfn)
    n = a->nr_pages - pfn;
  uint64_t was = bits_clear(map, pfn, n);
  if (was) {
    atomic_fetch_add_explicit(&a->refault_pages, was, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->refault_blocks, 1, memory_order_relaxed);
  }
}

BH__POPCNT_CLONES static uint64_t count_bits(const _Atomic uint64_t *map, uint64_t words) {
  uint64_t sum = 0;
  for (uint64_t w = 0; w < words; w++)
    sum += (uint64_t)__builtin_popcountll(atomic_load_explicit(&map[w], memory_order_relaxed));
  return sum;
}

uint64_t bh__discarded_pages(const bh_arena_t *a) {
  if (a->discarded == NULL)
    return 0;
  return count_bits(a->discarded, bitmap_words(a));
}
