/*
 * A map from recorded pfn to the replay's own block, shared by the buddy replay
 * (src/replay/replay.c) and the jemalloc baseline (src/baseline/jemalloc_replay.c), so that
 * both treat a trace's pfns by the same rules.
 *
 * It has two parts.  The hash part takes any pfn: open addressing with linear probing and
 * backward-shift deletion (no tombstones: replays delete as often as they insert), 24 bytes
 * an entry.  The slots are mmap'ed rather than malloc'ed so that, in the jemalloc baseline,
 * jemalloc's statistics hold the replayed blocks only.
 *
 * A map may also have a direct-indexed part (bh__pfnmap_init_dense): one 8-byte cell per pfn
 * of a range known beforehand, [base, base + span), which the replay's first pass measures.
 * A pfn in the range finds its cell without hashing or probing, through a directory of groups
 * of BH__PFN_GROUP pfns: dir[off / BH__PFN_GROUP] names the group's cells in the cell store
 * (0: the group has none yet), and the cell is at the pfn's place in them.  A group's cells
 * are handed out from the store in order when the first pfn of the group is inserted, so
 * memory follows the groups the trace touches: a trace whose pages lie scattered over a wide
 * range pays for its 16-pfn groups, not for every 4 KiB page of cells (512 pfns) it touches.
 * The pfn is implied by the index, an empty cell has kind 0, and the value is 32 bits wide,
 * so the dense part exists only for values below 2^32 (an arena of fewer than 2^32 pages) and
 * keeps no aux.  Pfns outside the range go to the hash part.
 *
 * Users hold a bh__pfn_ref_t, which names an entry of either part, and read and write it
 * through bh__pfn_* accessors.  Both parts are numbered as one, dense first (bh__pfnmap_slots,
 * bh__pfnmap_slot, bh__pfnmap_slot_pfn), for the walks over every entry.  A map without a
 * dense part can also be used through the hash part's own functions (bh__pfnmap_hfind,
 * bh__pfnmap_hinsert, bh__pfnmap_hdelete), which give the 24-byte entry itself.
 */
#ifndef BH_REPLAY_PFNMAP_H
#define BH_REPLAY_PFNMAP_H

#include <stdint.h>
#include <sys/mman.h>

#include "common/zmap.h"

enum {
  BH__PFN_LIVE = 1,
  BH__PFN_DEAD = 2,    /* skipped or failed: its free is dropped */
  BH__PFN_PRETRACE = 3 /* memory allocated before the trace that compaction moved to val */
};

/* An entry of the hash part. */
typedef struct bh__pfn_entry {
  uint64_t key;  /* recorded pfn + 1 (0 = empty slot) */
  uint64_t val;  /* the replay's block: an arena pfn, or an address */
  uint32_t aux;  /* free for the user (the baseline: 1 + its split parent's index) */
  uint8_t order; /* order of the recorded block */
  uint8_t kind;  /* BH__PFN_LIVE, BH__PFN_DEAD or BH__PFN_PRETRACE */
} bh__pfn_entry_t;

/* The pfns of a group of the direct-indexed part's directory. */
#define BH__PFN_GROUP 16u

/* A cell of the direct-indexed part: its pfn is base + its index. */
typedef struct bh__pfn_cell {
  uint32_t val; /* the replay's block: an arena pfn below 2^32 */
  uint8_t order;
  uint8_t kind; /* 0: empty */
  uint16_t unused;
} bh__pfn_cell_t;

_Static_assert(sizeof(bh__pfn_cell_t) == 8, "a dense cell is 8 bytes");

/* One entry of either part: c in the dense part, e in the hash part, neither for no entry.
 * Valid until the next insert or delete on the map. */
typedef struct bh__pfn_ref {
  bh__pfn_cell_t *c;
  bh__pfn_entry_t *e;
} bh__pfn_ref_t;

typedef struct bh__pfnmap {
  bh__pfn_entry_t *slots; /* the hash part: mask + 1 slots */
  uint64_t mask;
  uint64_t used;         /* entries in both parts */
  uint64_t hused;        /* entries in the hash part */
  bh__pfn_cell_t *dense; /* the direct-indexed part's cell store, by group (or NULL) */
  uint32_t *dir;         /* each group's first cell in dense + 1, 0 for none */
  uint64_t base, span;   /* the direct-indexed part's pfns: [base, base + span) */
  uint64_t ncells;       /* cells of the store handed out to groups */
  /* the hash part grows when hused reaches it: half the slots, where probe runs stay short (at 3/4
   * a replay spent 10 % longer, mostly on the branches of longer runs) */
  uint64_t limit;
  unsigned shift; /* 64 - log2(slots) */
} bh__pfnmap_t;

/* ---- an entry's fields, through a reference ---- */

static inline int bh__pfn_ok(bh__pfn_ref_t r) { return r.c || r.e; }
static inline unsigned bh__pfn_order(bh__pfn_ref_t r) { return r.c ? r.c->order : r.e->order; }
static inline unsigned bh__pfn_kind(bh__pfn_ref_t r) { return r.c ? r.c->kind : r.e->kind; }
static inline uint64_t bh__pfn_val(bh__pfn_ref_t r) { return r.c ? r.c->val : r.e->val; }
static inline void bh__pfn_set_order(bh__pfn_ref_t r, unsigned order) {
  if (r.c)
    r.c->order = (uint8_t)order;
  else
    r.e->order = (uint8_t)order;
}
/* kind is never 0: that marks an empty cell. */
static inline void bh__pfn_set_kind(bh__pfn_ref_t r, unsigned kind) {
  if (r.c)
    r.c->kind = (uint8_t)kind;
  else
    r.e->kind = (uint8_t)kind;
}
/* In the dense part val must be below 2^32, which bh__pfnmap_init_dense's max_val promises. */
static inline void bh__pfn_set_val(bh__pfn_ref_t r, uint64_t val) {
  if (r.c)
    r.c->val = (uint32_t)val;
  else
    r.e->val = val;
}

/* ---- the hash part ---- */

/*
 * The home slot of a key: Fibonacci hashing, the top bits of key * 2^64/phi.  Two
 * instructions, and it spreads what traces hold (runs of consecutive pfns, pfns of one
 * alignment) evenly over the slots.  Every insert, find and delete hashes, the deletes once
 * per entry they look at.
 */
static inline uint64_t bh__pfn_home(const bh__pfnmap_t *m, uint64_t key) {
  return (key * 0x9e3779b97f4a7c15ull) >> m->shift;
}

/* Room for about cap entries, in the hash part only; 0 or -1 when the memory cannot be mapped. */
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
  m->dir = NULL;
  m->base = m->span = m->ncells = 0;
  m->limit = n / 2;
  m->shift = 64 - bits;
  return m->slots ? 0 : -1;
}

static inline void bh__pfnmap_destroy(bh__pfnmap_t *m) {
  if (m->slots)
    munmap(m->slots, (m->mask + 1) * sizeof(bh__pfn_entry_t));
  uint64_t groups = (m->span + BH__PFN_GROUP - 1) / BH__PFN_GROUP;
  bh__zunmap(m->dense, groups * BH__PFN_GROUP * sizeof(bh__pfn_cell_t));
  bh__zunmap(m->dir, groups * sizeof(uint32_t));
  m->slots = NULL;
  m->dense = NULL;
  m->dir = NULL;
  m->span = m->ncells = 0;
}

/*
 * A map with a direct-indexed part for pfns [base, base + span) and a hash part of room for
 * about cap entries, for values up to max_val.  When max_val does not fit a cell (2^32 and
 * up) the map has the hash part only, as bh__pfnmap_init makes it.  0, or -1 when the memory
 * cannot be mapped.
 */
static inline int bh__pfnmap_init_dense(bh__pfnmap_t *m, uint64_t cap, uint64_t base, uint64_t span,
                                        uint64_t max_val) {
  if (bh__pfnmap_init(m, cap))
    return -1;
  if (!span || max_val > UINT32_MAX || span > UINT32_MAX - BH__PFN_GROUP)
    return 0;
  /* both mapped lazily: the store is touched in order as groups are handed out, the
   * directory where the trace's pfns lie */
  uint64_t groups = (span + BH__PFN_GROUP - 1) / BH__PFN_GROUP;
  m->dense = bh__zmap(groups * BH__PFN_GROUP * sizeof(bh__pfn_cell_t));
  m->dir = bh__zmap(groups * sizeof(uint32_t));
  if (!m->dense || !m->dir) {
    m->span = span; /* (the sizes to give back) */
    bh__pfnmap_destroy(m);
    return -1;
  }
  m->base = base;
  m->span = span;
  return 0;
}

/* The cell of offset off (pfn - base, below span) in the direct-indexed part, or NULL if its
 * group has none. */
static inline bh__pfn_cell_t *bh__pfnmap_cell(const bh__pfnmap_t *m, uint64_t off) {
  uint32_t g = m->dir[off / BH__PFN_GROUP];
  return g ? &m->dense[g - 1 + off % BH__PFN_GROUP] : NULL;
}

/* The hash part's entry of pfn, or NULL. */
static inline bh__pfn_entry_t *bh__pfnmap_hfind(const bh__pfnmap_t *m, uint64_t pfn) {
  uint64_t key = pfn + 1;
  for (uint64_t i = bh__pfn_home(m, key);; i = (i + 1) & m->mask) {
    bh__pfn_entry_t *e = &m->slots[i];
    if (e->key == key)
      return e;
    if (!e->key)
      return NULL;
  }
}

/* Doubles the hash part.  Out of line: it is rare, and inlined into every insert it would
 * crowd the callers' registers. */
static __attribute__((noinline, cold, unused)) int bh__pfnmap_grow(bh__pfnmap_t *m);

/* The hash part's entry of pfn: the existing one, or a new zeroed one (m->used and m->hused
 * grow); NULL if full and the map cannot grow. */
static inline bh__pfn_entry_t *bh__pfnmap_hinsert(bh__pfnmap_t *m, uint64_t pfn) {
  uint64_t key = pfn + 1;
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
      *bh__pfnmap_hinsert(&bigger, m->slots[i].key - 1) = m->slots[i];
  munmap(m->slots, (m->mask + 1) * sizeof(bh__pfn_entry_t));
  bigger.used = m->used;
  bigger.dense = m->dense;
  bigger.dir = m->dir;
  bigger.base = m->base;
  bigger.span = m->span;
  bigger.ncells = m->ncells;
  *m = bigger;
  return 0;
}

/* Removes e from the hash part, moving later entries of its probe run back so that no
 * tombstone is left. */
static inline void bh__pfnmap_hdelete(bh__pfnmap_t *m, bh__pfn_entry_t *e) {
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

/* ---- both parts ---- */

/* The entry of pfn, or none. */
static inline bh__pfn_ref_t bh__pfnmap_find(const bh__pfnmap_t *m, uint64_t pfn) {
  if (pfn - m->base < m->span) {
    bh__pfn_cell_t *c = bh__pfnmap_cell(m, pfn - m->base);
    return (bh__pfn_ref_t){.c = c && c->kind ? c : NULL};
  }
  return (bh__pfn_ref_t){.e = bh__pfnmap_hfind(m, pfn)};
}

/* The entry of pfn: the existing one as it is, or a new one of the given kind (never 0), val
 * and order 0 (m->used grows); none if the hash part is full and cannot grow. */
static inline bh__pfn_ref_t bh__pfnmap_insert(bh__pfnmap_t *m, uint64_t pfn, unsigned kind) {
  if (pfn - m->base < m->span) {
    uint64_t off = pfn - m->base;
    uint32_t *g = &m->dir[off / BH__PFN_GROUP];
    if (!*g) { /* the group's first pfn: its cells, fresh (zero) from the store */
      *g = (uint32_t)m->ncells + 1;
      m->ncells += BH__PFN_GROUP;
    }
    bh__pfn_cell_t *c = &m->dense[*g - 1 + off % BH__PFN_GROUP];
    if (!c->kind) {
      *c = (bh__pfn_cell_t){.kind = (uint8_t)kind};
      m->used++;
    }
    return (bh__pfn_ref_t){.c = c};
  }
  uint64_t hused = m->hused;
  bh__pfn_entry_t *e = bh__pfnmap_hinsert(m, pfn);
  if (e && m->hused != hused)
    e->kind = (uint8_t)kind;
  return (bh__pfn_ref_t){.e = e};
}

/* Removes the entry r names. */
static inline void bh__pfnmap_delete(bh__pfnmap_t *m, bh__pfn_ref_t r) {
  if (r.c) {
    r.c->kind = 0;
    m->used--;
  } else {
    bh__pfnmap_hdelete(m, r.e);
  }
}

/* The number of slots of both parts, and the entry in slot i of them (dense first; none for
 * an empty slot). */
static inline uint64_t bh__pfnmap_slots(const bh__pfnmap_t *m) { return m->span + m->mask + 1; }
static inline bh__pfn_ref_t bh__pfnmap_slot(const bh__pfnmap_t *m, uint64_t i) {
  if (i < m->span) {
    bh__pfn_cell_t *c = bh__pfnmap_cell(m, i);
    return (bh__pfn_ref_t){.c = c && c->kind ? c : NULL};
  }
  bh__pfn_entry_t *e = &m->slots[i - m->span];
  return (bh__pfn_ref_t){.e = e->key ? e : NULL};
}
/* The pfn of the entry in slot i, which is not empty. */
static inline uint64_t bh__pfnmap_slot_pfn(const bh__pfnmap_t *m, uint64_t i) {
  return i < m->span ? m->base + i : m->slots[i - m->span].key - 1;
}

#endif
