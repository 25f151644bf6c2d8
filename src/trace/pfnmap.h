/*
 * A map from recorded pfn to the replay's own block, shared by the buddy replay
 * (src/trace/replay.c) and the jemalloc baseline (src/baseline/jemalloc_replay.c), so that
 * both treat a trace's pfns by the same rules.  Open addressing with linear probing and
 * backward-shift deletion (no tombstones: replays delete as often as they insert).  The slots
 * are mmap'ed rather than malloc'ed so that, in the jemalloc baseline, jemalloc's statistics
 * hold the replayed blocks only.
 *
 * A map may also have a direct-indexed part (bh__pfnmap_init_dense): one entry per pfn of a
 * range known beforehand, [base, base + span), which the replay's first pass measures.  A pfn
 * in the range has its entry at dense[pfn - base], without hashing or probing, and costs
 * memory only where the trace touches it (the entries are mapped lazily, 170 to a page); pfns
 * outside it go to the hash part.  Both parts are numbered as one, dense first
 * (bh__pfnmap_slots, bh__pfnmap_slot), for the walks over every entry.
 */
#ifndef BH_TRACE_PFNMAP_H
#define BH_TRACE_PFNMAP_H

#include <stdint.h>
#include <sys/mman.h>

enum {
  BH__PFN_LIVE = 1,
  BH__PFN_DEAD = 2,    /* skipped or failed: its free is dropped */
  BH__PFN_PRETRACE = 3 /* memory allocated before the trace that compaction moved to val */
};

typedef struct bh__pfn_entry {
  uint64_t key;  /* recorded pfn + 1 (0 = empty slot) */
  uint64_t val;  /* the replay's block: an arena pfn, or an address */
  uint32_t aux;  /* free for the user (the baseline: 1 + its split parent's index) */
  uint8_t order; /* order of the recorded block */
  uint8_t kind;  /* BH__PFN_LIVE or BH__PFN_DEAD */
} bh__pfn_entry_t;

typedef struct bh__pfnmap {
  bh__pfn_entry_t *slots; /* the hash part: mask + 1 slots */
  uint64_t mask;
  uint64_t used;          /* entries in both parts */
  uint64_t hused;         /* entries in the hash part */
  bh__pfn_entry_t *dense; /* the direct-indexed part: span entries from pfn base (or NULL) */
  uint64_t base, span;
  /* the hash part grows when hused reaches it: half the slots, where probe runs stay short (at 3/4
   * a replay spent 10 % longer, mostly on the branches of longer runs) */
  uint64_t limit;
  unsigned shift; /* 64 - log2(slots) */
} bh__pfnmap_t;

/*
 * The home slot of a key: Fibonacci hashing, the top bits of key * 2^64/phi.  Two
 * instructions, and it spreads what traces hold (runs of consecutive pfns, pfns of one
 * alignment) evenly over the slots.  Every insert, find and delete hashes, the deletes once
 * per entry they look at.
 */
static inline uint64_t bh__pfn_home(const bh__pfnmap_t *m, uint64_t key) {
  return (key * 0x9e3779b97f4a7c15ull) >> m->shift;
}

/* Room for about cap entries; 0 or -1 when the memory cannot be mapped. */
static inline int bh__pfnmap_init(bh__pfnmap_t *m, uint64_t cap) {
  uint64_t n = 1024;
  unsigned bits = 10;
  while (n < cap * 2) {
    n <<= 1;
    bits++;
  }
  void *p = mmap(NULL, n * sizeof(bh__pfn_entry_t), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  m->slots = p == MAP_FAILED ? NULL : p;
  m->mask = n - 1;
  m->used = m->hused = 0;
  m->dense = NULL;
  m->base = m->span = 0;
  m->limit = n / 2;
  m->shift = 64 - bits;
  return m->slots ? 0 : -1;
}

/* A map with a direct-indexed part for pfns [base, base + span) and a hash part of room for
 * about cap entries; 0, or -1 when the memory cannot be mapped. */
static inline int bh__pfnmap_init_dense(bh__pfnmap_t *m, uint64_t cap, uint64_t base,
                                        uint64_t span) {
  if (bh__pfnmap_init(m, cap))
    return -1;
  if (!span)
    return 0;
  void *p = mmap(NULL, span * sizeof(bh__pfn_entry_t), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    munmap(m->slots, (m->mask + 1) * sizeof(bh__pfn_entry_t));
    m->slots = NULL;
    return -1;
  }
  m->dense = p;
  m->base = base;
  m->span = span;
  return 0;
}

static inline void bh__pfnmap_destroy(bh__pfnmap_t *m) {
  if (m->slots)
    munmap(m->slots, (m->mask + 1) * sizeof(bh__pfn_entry_t));
  if (m->dense)
    munmap(m->dense, m->span * sizeof(bh__pfn_entry_t));
  m->slots = m->dense = NULL;
  m->span = 0;
}

/* The number of slots of both parts, and slot i of them (dense first); a slot whose key is 0
 * is empty. */
static inline uint64_t bh__pfnmap_slots(const bh__pfnmap_t *m) { return m->span + m->mask + 1; }
static inline bh__pfn_entry_t *bh__pfnmap_slot(const bh__pfnmap_t *m, uint64_t i) {
  return i < m->span ? &m->dense[i] : &m->slots[i - m->span];
}
/* The number of e in that numbering. */
static inline uint64_t bh__pfnmap_index(const bh__pfnmap_t *m, const bh__pfn_entry_t *e) {
  if (m->span && e >= m->dense && e < m->dense + m->span)
    return (uint64_t)(e - m->dense);
  return m->span + (uint64_t)(e - m->slots);
}

static inline bh__pfn_entry_t *bh__pfnmap_find(const bh__pfnmap_t *m, uint64_t pfn) {
  uint64_t key = pfn + 1;
  if (pfn - m->base < m->span) {
    bh__pfn_entry_t *e = &m->dense[pfn - m->base];
    return e->key ? e : NULL;
  }
  for (uint64_t i = bh__pfn_home(m, key);; i = (i + 1) & m->mask) {
    bh__pfn_entry_t *e = &m->slots[i];
    if (e->key == key)
      return e;
    if (!e->key)
      return NULL;
  }
}

/* Doubles the slots.  Out of line: it is rare, and inlined into every insert it would crowd
 * the callers' registers. */
static __attribute__((noinline, cold, unused)) int bh__pfnmap_grow(bh__pfnmap_t *m);

/* The entry of pfn: the existing one, or a new zeroed one (m->used grows); NULL if full and
 * the map cannot grow. */
static inline bh__pfn_entry_t *bh__pfnmap_insert(bh__pfnmap_t *m, uint64_t pfn) {
  uint64_t key = pfn + 1;
  if (pfn - m->base < m->span) {
    bh__pfn_entry_t *e = &m->dense[pfn - m->base];
    if (!e->key) {
      *e = (bh__pfn_entry_t){.key = key};
      m->used++;
    }
    return e;
  }
  if (__builtin_expect(m->hused >= m->limit, 0) && bh__pfnmap_grow(m))
    return NULL;
  for (uint64_t i = bh__pfn_home(m, key);; i = (i + 1) & m->mask) {
    bh__pfn_entry_t *e = &m->slots[i];
    if (e->key == key)
      return e;
    if (!e->key) {
      *e = (bh__pfn_entry_t){.key = key};
      m->used++;
      m->hused++;
      return e;
    }
  }
}

static __attribute__((noinline, cold, unused)) int bh__pfnmap_grow(bh__pfnmap_t *m) {
  bh__pfnmap_t bigger;
  if (bh__pfnmap_init(&bigger, m->mask + 1))
    return -1;
  for (uint64_t i = 0; i <= m->mask; i++)
    if (m->slots[i].key)
      *bh__pfnmap_insert(&bigger, m->slots[i].key - 1) = m->slots[i];
  munmap(m->slots, (m->mask + 1) * sizeof(bh__pfn_entry_t));
  bigger.used = m->used;
  bigger.dense = m->dense;
  bigger.base = m->base;
  bigger.span = m->span;
  *m = bigger;
  return 0;
}

/* Removes e, moving later entries of its probe run back so that no tombstone is left. */
static inline void bh__pfnmap_delete(bh__pfnmap_t *m, bh__pfn_entry_t *e) {
  if (m->span && e >= m->dense && e < m->dense + m->span) {
    e->key = 0;
    m->used--;
    return;
  }
  uint64_t i = (uint64_t)(e - m->slots), j = i;
  for (;;) {
    j = (j + 1) & m->mask;
    bh__pfn_entry_t *x = &m->slots[j];
    if (!x->key)
      break;
    uint64_t home = bh__pfn_home(m, x->key);
    /* x may move back to i unless its home lies cyclically in (i, j] */
    if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
      m->slots[i] = *x;
      i = j;
    }
  }
  m->slots[i].key = 0;
  m->used--;
  m->hused--;
}

#endif
