/*
 * The discarded-page bitmap: one bit per page that a report has discarded and nothing has
 * touched since.  The bitmap belongs to the allocator core, which clears the bits (and counts
 * the refaults the host would see) when it hands such a page out again; a reporter above it
 * (src/hinting/reporter.c) enables the bitmap and marks the pages it discards.  So the layers
 * only call downward: hinting into the core, never the core into hinting.
 *
 * Every change of a bit also updates two counts, so that reading them costs no pass over the
 * bitmap: the pages discarded, and, when the arena's owner models written pages (the replay's
 * sim backing, bh__discard_set_touched), the pages both written and discarded.  The owner's
 * resident count is then its written pages minus the latter.
 */
#include "buddy/internal.h"

#include <stdlib.h>

static uint64_t bitmap_words(const bh_arena_t *a) { return (a->nr_pages + 63) / 64; }

/* The mask of bits [from, to) within one 64-bit word, 0 <= from < to <= 64. */
static uint64_t word_mask(unsigned from, unsigned to) {
  uint64_t hi = to == 64 ? ~0ULL : (1ULL << to) - 1;
  return hi & ~((1ULL << from) - 1);
}

/* The bits set in x: the common empty, single-bit and whole words without a (maybe software)
 * popcount. */
static inline uint64_t bits_in(uint64_t x) {
  if (!(x & (x - 1)))
    return x != 0;
  return x == ~0ULL ? 64 : (uint64_t)__builtin_popcountll(x);
}

/* The owner's written-page bitmap word w, 0 without one (see bh__discard_set_touched). */
static inline uint64_t touched_word(const bh_arena_t *a, uint64_t w) {
  return a->touched ? atomic_load_explicit(&a->touched[w], memory_order_relaxed) : 0;
}

/* Sets the bits of pages [pfn, pfn + n) and counts the newly set ones; returns how many of
 * those the owner's written-page bitmap holds written. */
static uint64_t bits_set(bh_arena_t *a, uint64_t pfn, uint64_t n) {
  _Atomic uint64_t *map = a->discarded;
  uint64_t end = pfn + n, added = 0, added_touched = 0;
  while (pfn < end) {
    uint64_t w = pfn / 64, wend = (w + 1) * 64 < end ? (w + 1) * 64 : end;
    uint64_t mask = word_mask((unsigned)(pfn % 64), (unsigned)(wend - w * 64));
    uint64_t fresh = mask & ~atomic_fetch_or_explicit(&map[w], mask, memory_order_relaxed);
    added += bits_in(fresh);
    added_touched += bits_in(fresh & touched_word(a, w));
    pfn = wend;
  }
  if (added)
    atomic_fetch_add_explicit(&a->discarded_count, added, memory_order_relaxed);
  if (added_touched)
    atomic_fetch_add_explicit(&a->touched_discarded, added_touched, memory_order_relaxed);
  return added_touched;
}

/* Clears the bits of pages [pfn, pfn + n); returns how many were set. */
static uint64_t bits_clear(bh_arena_t *a, uint64_t pfn, uint64_t n) {
  _Atomic uint64_t *map = a->discarded;
  uint64_t end = pfn + n, was = 0, was_touched = 0;
  while (pfn < end) {
    uint64_t w = pfn / 64, wend = (w + 1) * 64 < end ? (w + 1) * 64 : end;
    uint64_t mask = word_mask((unsigned)(pfn % 64), (unsigned)(wend - w * 64));
    if (atomic_load_explicit(&map[w], memory_order_relaxed) & mask) {
      uint64_t old = atomic_fetch_and_explicit(&map[w], ~mask, memory_order_relaxed) & mask;
      was += bits_in(old);
      was_touched += bits_in(old & touched_word(a, w));
    }
    pfn = wend;
  }
  if (was)
    atomic_fetch_sub_explicit(&a->discarded_count, was, memory_order_relaxed);
  if (was_touched)
    atomic_fetch_sub_explicit(&a->touched_discarded, was_touched, memory_order_relaxed);
  return was;
}

int bh__discard_enable(bh_arena_t *a) {
  if (a->discarded)
    return 0;
  a->discarded = calloc(bitmap_words(a) + 1, sizeof *a->discarded);
  if (!a->discarded)
    return BH_ENOMEM;
  atomic_store_explicit(&a->discarded_count, 0, memory_order_relaxed);
  atomic_store_explicit(&a->touched_discarded, 0, memory_order_relaxed);
  return 1;
}

void bh__discard_disable(bh_arena_t *a) {
  _Atomic uint64_t *map = a->discarded;
  atomic_store_explicit(&a->any_discarded, false, memory_order_relaxed);
  a->discarded = NULL;
  atomic_store_explicit(&a->discarded_count, 0, memory_order_relaxed);
  atomic_store_explicit(&a->touched_discarded, 0, memory_order_relaxed);
  free((void *)map);
}

uint64_t bh__discard_mark(bh_arena_t *a, uint64_t pfn, uint64_t n) {
  atomic_store_explicit(&a->any_discarded, true, memory_order_relaxed);
  return bits_set(a, pfn, n);
}

void bh__discard_on_alloc(bh_arena_t *a, uint64_t pfn, unsigned order) {
  _Atomic uint64_t *map = a->discarded;
  if (map == NULL || order > BH_ORDER_LIMIT || pfn >= a->nr_pages)
    return;
  uint64_t n = 1ULL << order;
  if (n > a->nr_pages - pfn)
    n = a->nr_pages - pfn;
  uint64_t was = bits_clear(a, pfn, n);
  if (was) {
    atomic_fetch_add_explicit(&a->refault_pages, was, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->refault_blocks, 1, memory_order_relaxed);
  }
}

void bh__discard_set_touched(bh_arena_t *a, const _Atomic uint64_t *touched) {
  a->touched = touched;
  atomic_store_explicit(&a->touched_discarded, 0, memory_order_relaxed);
}

void bh__discard_touched_hit(bh_arena_t *a, uint64_t hit) {
  atomic_fetch_add_explicit(&a->touched_discarded, bits_in(hit), memory_order_relaxed);
}

uint64_t bh__discarded_pages(const bh_arena_t *a) {
  return a->discarded ? atomic_load_explicit(&a->discarded_count, memory_order_relaxed) : 0;
}

uint64_t bh__refault_pages(const bh_arena_t *a) {
  return atomic_load_explicit(&a->refault_pages, memory_order_relaxed);
}

_Atomic uint64_t *const *bh__discard_map(const bh_arena_t *a) { return &a->discarded; }

uint64_t bh__discard_touched_pages(const bh_arena_t *a) {
  return a->discarded ? atomic_load_explicit(&a->touched_discarded, memory_order_relaxed) : 0;
}

/* Over `words` words: the bits set in map (NULL: none) into *in_map, in touched (NULL: none)
 * into *in_touched, and in both into *in_both. */
BH__POPCNT_CLONES static void count_bits(const _Atomic uint64_t *map,
                                         const _Atomic uint64_t *touched, uint64_t words,
                                         uint64_t *in_map, uint64_t *in_touched,
                                         uint64_t *in_both) {
  uint64_t m = 0, t = 0, b = 0;
  for (uint64_t w = 0; w < words; w++) {
    uint64_t d = map ? atomic_load_explicit(&map[w], memory_order_relaxed) : 0;
    uint64_t x = touched ? atomic_load_explicit(&touched[w], memory_order_relaxed) : 0;
    m += (uint64_t)__builtin_popcountll(d);
    t += (uint64_t)__builtin_popcountll(x);
    b += (uint64_t)__builtin_popcountll(d & x);
  }
  *in_map = m;
  *in_touched = t;
  *in_both = b;
}

void bh__discard_recount(const bh_arena_t *a, uint64_t *discarded, uint64_t *touched,
                         uint64_t *both) {
  count_bits(a->discarded, a->touched, bitmap_words(a), discarded, touched, both);
}
