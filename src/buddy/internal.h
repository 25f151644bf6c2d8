/*
 * Internal structures of the allocator core.  Names follow include/linux/mmzone.h so that a
 * kernel developer finds their way: zone, free_area, pageblock, per_cpu_pages (pcp).
 */
#ifndef BH_BUDDY_INTERNAL_H
#define BH_BUDDY_INTERNAL_H

#define BH_BUILDING_LIBRARY 1
#include <buddyhint.h>

#include "common/compiler.h"
/* what the replay may call: the pcp-event hooks, the written-page model, block and zone
 * queries (declared there, once) */
#include "buddy/replay_core.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/*
 * For a loop of __builtin_popcountll over a bitmap: on x86-64 a second copy compiled for the
 * POPCNT instruction, chosen when the program loads if the CPU has it (GCC's and clang's
 * target_clones); elsewhere, and on CPUs without it, the portable code (libgcc's popcount).
 * Not under ThreadSanitizer: the clones' resolver (an ifunc) runs before its runtime is up.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BH__NO_IFUNC 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define BH__NO_IFUNC 1
#endif
#if defined(__x86_64__) && defined(__has_attribute) && !defined(BH__NO_IFUNC)
#if __has_attribute(target_clones)
#define BH__POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#endif
#endif
#ifndef BH__POPCNT_CLONES
#define BH__POPCNT_CLONES
#endif

/* Debug code that still compiles in release builds. */
#ifdef NDEBUG
static const bool bh_debug = false;
#else
static const bool bh_debug = true;
#endif

#define BH__NIL UINT32_MAX   /* "no page" in a 32-bit link */
#define BH__GFP_VALID 0xfffu /* BH_GFP_DMA .. BH_GFP_NOMEMALLOC */

/*
 * Page descriptor: 16 bytes, kept apart from the data pages.  A page is in exactly one of
 * these states, told by the flags of the head of the block it belongs to:
 *   PG_BUDDY    head of a free block on free_area[order].free_list[list mt]
 *   PG_PCP      head of a block on a pcp list (order in `order`)
 *   PG_ALLOC    head of an allocated block (order in `order`, request type in `mt`)
 *   PG_ISOLATED head of a free block taken off the lists by isolation (hinting)
 *   none        a page inside one of the above blocks
 * PG_REPORTED is meaningful on PG_BUDDY heads only (Linux's PageReported), and so is
 * PG_MARKED, a strategy's own mark (bh_block_set_mark) with its value in `priv`: both go with
 * the store that clears the flags when a block leaves its free list.
 */
enum {
  BH__PG_BUDDY = 1u << 0,
  BH__PG_PCP = 1u << 1,
  BH__PG_ALLOC = 1u << 2,
  BH__PG_ISOLATED = 1u << 3,
  BH__PG_REPORTED = 1u << 4,
  /* with PG_ALLOC: allocated before the trace (bh_arena_populate), an order-0 block that
   * bh_arena_adopt may join with its neighbours */
  BH__PG_PRETRACE = 1u << 5,
  /* with PG_ALLOC and PG_PRETRACE: outside every zone's span (pfn 0 on x86, the pages past a
   * zone's end in its last max-order block): allocated for good, never freed */
  BH__PG_NOPAGE = 1u << 6,
  BH__PG_MARKED = 1u << 7,
  BH__PG_STATE = BH__PG_BUDDY | BH__PG_PCP | BH__PG_ALLOC | BH__PG_ISOLATED,
};

/* Pageblock byte: migratetype in the low 3 bits; this bit for a pageblock that dumps do not
 * count (BH_PAGEBLOCK_ABSENT in bh_arena_populate). */
#define BH__PB_ABSENT 0x80u

typedef struct bh__page {
  uint32_t next, prev; /* list links as page indices (list heads live past the last page) */
  uint8_t flags;
  uint8_t order;
  uint8_t mt; /* PG_ALLOC: migratetype of the request (claim rule, compaction) */
  uint8_t spare;
  uint32_t priv; /* free for strategies; PG_PCP: the CPU whose list holds it */
} bh__page_t;

_Static_assert(sizeof(bh__page_t) == 16, "page descriptor must stay 16 bytes");

/* Linux's ALLOC_* flags (mm/internal.h). */
enum {
  BH__ALLOC_WMARK_MIN = 0,
  BH__ALLOC_WMARK_LOW = 1,
  BH__ALLOC_WMARK_HIGH = 2,
  BH__ALLOC_WMARK_MASK = 3,
  BH__ALLOC_NO_WATERMARKS = 0x04,
  BH__ALLOC_OOM = 0x08,
  BH__ALLOC_NON_BLOCK = 0x10,
  BH__ALLOC_MIN_RESERVE = 0x20,
  BH__ALLOC_NOFRAGMENT = 0x100,
  BH__ALLOC_HIGHATOMIC = 0x200,
  BH__ALLOC_KSWAPD = 0x800,
  BH__ALLOC_RESERVES =
      BH__ALLOC_NON_BLOCK | BH__ALLOC_MIN_RESERVE | BH__ALLOC_HIGHATOMIC | BH__ALLOC_OOM,
};

/* FPI flags of __free_one_page. */
enum { BH__FPI_NONE = 0, BH__FPI_SKIP_REPORT_NOTIFY = 1, BH__FPI_TO_TAIL = 2 };

/* Why a block leaves a free list (del_page_from_free_list). */
enum bh__del_reason { BH__DEL_ALLOC, BH__DEL_MERGE, BH__DEL_ISOLATE };

enum { BH__WMARK_MIN, BH__WMARK_LOW, BH__WMARK_HIGH, BH__NR_WMARK };

/* Zone flags. */
enum { BH__ZONE_BOOSTED_WATERMARK = 1u << 0, BH__ZONE_BELOW_HIGH = 1u << 1 };

#define BH__NR_LOWORDER_PCP_LISTS (BH_MT_PCPTYPES * 4)   /* orders 0..PAGE_ALLOC_COSTLY_ORDER */
#define BH__NR_PCP_LISTS (BH__NR_LOWORDER_PCP_LISTS + 2) /* + NR_PCP_THP */
#define BH__PAGE_ALLOC_COSTLY_ORDER 3
#define BH__PCP_BATCH_SCALE_MAX 5

/* A stack of pcp blocks' pfns, the top the last. */
typedef struct bh__pcp_stack {
  uint32_t n;
  uint32_t *e;
} bh__pcp_stack_t;

/* struct per_cpu_pages (6.12): one per zone and CPU slot. */
typedef struct bh__pcp {
  atomic_int locked; /* pcp_spin_trylock: a failed trylock falls back to the buddy lists */
  int count;         /* pages on all lists */
  int high, high_min, high_max, batch;
  int free_count;
  int free_high_from; /* free_count at which free_high may start: batch (+ high_min / 2, 6.16) */
  uint8_t alloc_factor;
  uint8_t flags; /* PCPF_PREV_FREE_HIGH_ORDER, PCPF_FREE_HIGH_BATCH */
  uint32_t head; /* first list head index: lists are head + pindex */
  bool smp;      /* the arena's cfg.smp: false, no locking at all */
  /* bh__pcp_surplus_set: the start's hidden blocks of this pcp, and whether the trace shows
   * that the kernel's count stayed below its high mark at this CPU's frees now
   * (bh__pcp_calibrating): a free that reaches the mark takes them off instead of draining.
   * And whether the next free is the order-0 one the trace's first drain after one on this CPU
   * follows (bh__pcp_deficit): one that leaves the count below the mark lowers the mark to it.
   * decay_first: the pages the trace's first drain of this CPU took, where the next decay is
   * that drain's (bh__pcp_decay_first), else -1. */
  bool calibrating, deficit;
  int decay_first;
  /* lowered: pages bh__pcp_deficit lowered the mark by; decay_check: the pages the trace's
   * first decay of this CPU after that took (bh__pcp_decay_check), else -1; ghost: pages that
   * decay showed the kernel's lists held beyond the replay's instead, on none of its lists:
   * counted against the high mark as the kernel counts them, never drained (the trace never
   * shows them) */
  int lowered, decay_check, ghost;
  bh__pcp_stack_t surplus;
  uint64_t ev[BH_NR_STATS]; /* event counters updated under this pcp's lock */
  char pad[64];
} bh__pcp_t;

enum { BH__PCPF_PREV_FREE_HIGH_ORDER = 1, BH__PCPF_FREE_HIGH_BATCH = 2 };

/* A zone: one type under one name, bh_zone_t (buddyhint/strategy.h declares it opaque for
 * strategies; C11 lets the typedef be repeated). */
typedef struct bh_zone bh_zone_t;
struct bh_zone {
  pthread_mutex_t lock;
  struct bh_arena *arena;
  int node, type, id;
  /* the zone's pages: a range of whole max-order blocks */
  uint64_t start_pfn, spanned_pages, managed_pages;
  /* its span as a kernel prints it (an explicit layout's; else start_pfn, spanned_pages) */
  uint64_t zone_start_pfn, zone_spanned_pages, present_pages;
  /* free_area[order]: list heads are at index free_head + order*BH_MT_TYPES + mt */
  uint32_t free_head;
  uint64_t nr_free[BH_ORDER_LIMIT + 1];
  _Atomic int64_t free_pages; /* NR_FREE_PAGES (Isolate excluded), read without the lock */
  int64_t nr_free_highatomic;
  int64_t isolated_pages; /* held by hinting isolation */
  uint64_t watermark[BH__NR_WMARK];
  _Atomic uint64_t watermark_boost;
  uint64_t lowmem_reserve[BH_NR_ZONE_TYPES];
  uint64_t nr_reserved_highatomic;
  _Atomic unsigned flags;
  unsigned pcp_batch, pcp_high_min, pcp_high_max;
  bh__pcp_t *pcp;              /* [nr_cpus] */
  uint64_t ev[BH_NR_STATS];    /* event counters updated under the zone lock */
  _Atomic uint64_t wmark_fail; /* counted without the lock, on the allocation path */
  /*
   * Hinting hooks.  notify_order is the order at or above which a final merge calls
   * hint_notify (UINT8_MAX: never), del_order the order at or above which a block leaving
   * a free list calls hint_del.  With hinting off both checks are one predictable branch.
   */
  uint8_t notify_order, del_order;
  void *hint_zone; /* strategy's per-zone state */
};

typedef struct bh__hint_hooks {
  void (*notify)(void *ctx, bh_zone_t *z, uint64_t pfn, unsigned order);
  void (*del)(void *ctx, bh_zone_t *z, uint64_t pfn, unsigned order, int reason);
  void (*detach)(void *ctx); /* bh_arena_destroy detaches what is still attached */
  void *ctx;
} bh__hint_hooks_t;

struct bh_arena {
  bh_config_t cfg;
  uint64_t nr_pages;
  uint8_t *base;     /* data pages (NULL in sim backing) */
  size_t map_bytes;  /* size of the data mapping */
  int memfd;         /* BH_BACKING_MEMFD, else -1 */
  bh__page_t *pages; /* nr_pages descriptors, then list heads */
  size_t pages_bytes;
  uint64_t nr_links;   /* descriptors + heads */
  uint8_t *pageblock;  /* one byte per pageblock: migratetype in the low 3 bits */
  uint8_t *block_zone; /* zone id of each max-order block (zones are aligned to them) */
  unsigned max_order, pb_order;
  int nr_zones; /* populated zones, node-major, low to high */
  bh_zone_t *zones;
  /* zonelist per node: zone ids highest to lowest, local node first, then other nodes */
  int zonelist[BH_MAX_NODES][BH_MAX_NODES * BH_NR_ZONE_TYPES];
  int zonelist_len[BH_MAX_NODES];
  /* per (node, gfp): the request's zone and migratetype, the first usable zone of the
   * zonelist and whether a request starting there gets ALLOC_NOFRAGMENT, decoded once
   * (BH__GC_*; index node << 12 | gfp) so that an allocation does one load for them */
  uint32_t *gfp_ctx;
  unsigned pcp_orders; /* bit per order that has pcp lists (0 without pcp) */
  /* the pointer interface's order-0 fast path serves threads whose pcp slot number is below
   * this: nr_cpus with order-0 pcp lists and per-thread slots, else 0 (one compare for all) */
  unsigned fast_slots;
  int node_zone[BH_MAX_NODES][BH_NR_ZONE_TYPES]; /* zone id or -1 */
  _Atomic uint64_t shuffle_state;
  /* kswapd per node: reclaim passes that freed nothing (pgdat->kswapd_failures), and whether
   * it is running (not waiting on kswapd_wait) */
  _Atomic int kswapd_failures[BH_MAX_NODES];
  atomic_bool kswapd_running[BH_MAX_NODES];
  /* kcompactd per node: when its next proactive check is due (bh_kcompactd_run) */
  uint64_t kcompactd_next[BH_MAX_NODES];
  bh_split_fn compact_split; /* bh_compact_set_split */
  /* The order the trace shows the kernel first taking the start's free blocks in
   * (bh__take_rank_set; NULL: none): per pfn, 1 + a block's rank, 0 for none or once an event
   * touched it.  Borrowed from the replay. */
  const uint32_t *take_rank;
  uint64_t take_rank_n;
  _Atomic uint64_t pcp_surplus_pages; /* taken off by bh__pcp_calibrating's frees */
  _Atomic uint64_t pcp_deficit_pages; /* high marks lowered by bh__pcp_deficit's frees */
  _Atomic uint64_t pcp_ghost_pages;   /* of those, counted as pages instead (decay_check) */
  _Atomic uint64_t pcp_drained_pages; /* pages free_pcppages_bulk returned, ever */
  /* the recorded kernel tunes its pcp marks but its zoneinfo does not print high_max
   * (bh__pcp_high_max_unknown): a calibration at the cap tells the cap; the pages it lowered
   * the zones' caps by */
  bool pcp_cap_unknown;
  _Atomic uint64_t pcp_cap_lowered;
  bh__hint_hooks_t hint;
  /* Pages discarded by a report and not touched since: set by the reporter, cleared (and
   * counted as refaults) when allocated.  NULL until a reporter is attached. */
  _Atomic uint64_t *discarded;
  /* set by the first report: until then an allocation need not look at `discarded` (a
   * replay without reports, or before the first, pays one test per allocation) */
  _Atomic bool any_discarded;
  _Atomic uint64_t refault_pages, refault_blocks;
  /* The pages set in `discarded` (kept as bits change, so a count costs no pass), and, when
   * the arena's owner models written pages (bh__discard_set_touched), the owner's bitmap of
   * them and the pages set in both. */
  _Atomic uint64_t discarded_count;
  const _Atomic uint64_t *touched;
  _Atomic uint64_t touched_discarded;
};

/* ---- helpers shared by the core files ---- */

/*
 * pcp_spin_trylock: the allocation and free paths only try, and fall back to the buddy lists
 * (a contended pcp is like the kernel's pcp held by an interrupt); drains, statistics and the
 * checker wait for it.
 */
static inline bool bh__pcp_trylock(bh__pcp_t *pcp) {
  if (!pcp->smp)
    return true; /* CONFIG_SMP=n: one thread, nothing to exclude */
  int expected = 0;
  return atomic_compare_exchange_strong_explicit(&pcp->locked, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}
static inline void bh__pcp_lock(bh__pcp_t *pcp) {
  while (!bh__pcp_trylock(pcp))
    sched_yield();
}
static inline void bh__pcp_unlock(bh__pcp_t *pcp) {
  if (pcp->smp)
    atomic_store_explicit(&pcp->locked, 0, memory_order_release);
}

/*
 * A page's flags and order are written under the lock that owns the block (zone or pcp) but
 * read by the merge loop under the zone lock for neighbouring blocks that a pcp or a freeing
 * thread may own: those accesses are relaxed atomics (plain moves on x86), so they are defined.
 */
static inline uint8_t bh__pg_flags(const bh__page_t *p) {
  return __atomic_load_n(&p->flags, __ATOMIC_RELAXED);
}
static inline uint8_t bh__pg_order(const bh__page_t *p) {
  return __atomic_load_n(&p->order, __ATOMIC_RELAXED);
}
static inline void bh__pg_set(bh__page_t *p, uint8_t flags, uint8_t order) {
  __atomic_store_n(&p->order, order, __ATOMIC_RELAXED);
  __atomic_store_n(&p->flags, flags, __ATOMIC_RELAXED);
}
/* A block onto cpu's pcp list: PG_PCP, its order, and the CPU in priv (bh__pcp_owner). */
static inline void bh__pg_set_pcp(bh__page_t *p, uint8_t order, uint32_t cpu) {
  p->priv = cpu;
  bh__pg_set(p, BH__PG_PCP, order);
}
static inline void bh__pg_set_flags(bh__page_t *p, uint8_t flags) {
  __atomic_store_n(&p->flags, flags, __ATOMIC_RELAXED);
}
/*
 * An allocated block's request type (`mt`) is written by the allocating thread under the pcp
 * lock and read by compaction and the claim rule under the zone lock.  The allocation stores
 * the type, then PG_ALLOC with release; a reader that sees PG_ALLOC with acquire sees that
 * block's type.  Both are plain moves on x86.
 */
static inline uint8_t bh__pg_mt(const bh__page_t *p) {
  return __atomic_load_n(&p->mt, __ATOMIC_RELAXED);
}
static inline void bh__pg_set_mt(bh__page_t *p, uint8_t mt) {
  __atomic_store_n(&p->mt, mt, __ATOMIC_RELAXED);
}
static inline uint8_t bh__pg_flags_acquire(const bh__page_t *p) {
  return __atomic_load_n(&p->flags, __ATOMIC_ACQUIRE);
}
static inline void bh__pg_set_alloc(bh__page_t *p, uint8_t mt, uint8_t order) {
  bh__pg_set_mt(p, mt);
  __atomic_store_n(&p->order, order, __ATOMIC_RELAXED);
  __atomic_store_n(&p->flags, (uint8_t)BH__PG_ALLOC, __ATOMIC_RELEASE);
}

static inline bh__page_t *bh__pg(const bh_arena_t *a, uint64_t idx) { return &a->pages[idx]; }

/* The zone lock (zone->lock), not taken in a CONFIG_SMP=n arena (cfg.smp false). */
static inline void bh__zone_lock(bh_zone_t *z) {
  if (z->arena->cfg.smp)
    pthread_mutex_lock(&z->lock);
}
static inline void bh__zone_unlock(bh_zone_t *z) {
  if (z->arena->cfg.smp)
    pthread_mutex_unlock(&z->lock);
}

/*
 * A pageblock's type is written under its zone's lock and read without it by the free path
 * (bh_free_pfn picks the pcp list by it): relaxed byte accesses, plain moves on x86.
 */
static inline int bh__pb_mt(const bh_arena_t *a, uint64_t pfn) {
  return __atomic_load_n(&a->pageblock[pfn >> a->pb_order], __ATOMIC_RELAXED) & 7;
}

/* The pcp list type of a block of pageblock type mt, as free_unref_page chooses it: -1 for an
 * isolated pageblock (its frees bypass the pcp lists). */
static inline int bh__pcp_list_mt(int mt) {
  if (mt <= BH_MT_RECLAIMABLE)
    return mt;
  return mt == BH_MT_ISOLATE ? -1 : BH_MT_MOVABLE;
}

/* The pcp slot of CPU cpu (a negative CPU, one the trace does not name, is slot 0). */
static inline unsigned bh__cpu_slot(const bh_arena_t *a, int cpu) {
  return (cpu < 0 ? 0u : (unsigned)cpu) % a->cfg.nr_cpus;
}

/* A pcp's high mark within [high_min, high_max] (nr_pcp_high, nr_pcp_alloc: clamp()). */
static inline int bh__pcp_high_clamped(const bh__pcp_t *pcp) {
  return pcp->high < pcp->high_min   ? pcp->high_min
         : pcp->high > pcp->high_max ? pcp->high_max
                                     : pcp->high;
}

/* The pcp of zone z whose list holds the block at pfn (bh__pg_set_pcp keeps its CPU), or NULL;
 * for a block with PG_PCP set. */
static inline bh__pcp_t *bh__pcp_owner(const bh_zone_t *z, uint64_t pfn) {
  uint32_t c = z->arena->pages[pfn].priv;
  return c < z->arena->cfg.nr_cpus ? &z->pcp[c] : NULL;
}

static inline uint32_t bh__free_list(const bh_zone_t *z, unsigned order, int mt) {
  return z->free_head + order * BH_MT_TYPES + (unsigned)mt;
}

static inline bool bh__mt_mergeable(int mt) { return mt < BH_MT_PCPTYPES; }

static inline bh_zone_t *bh__pfn_zone(const bh_arena_t *a, uint64_t pfn) {
  return &a->zones[a->block_zone[pfn >> a->max_order]];
}

/*
 * Circular lists of 32-bit indices.  The `next` links are relaxed atomics because the
 * watermark check peeks at free list heads without the zone lock, as Linux does; on x86 they
 * are plain moves.
 */
static inline void bh__set_next(bh_arena_t *a, uint32_t n, uint32_t next) {
  __atomic_store_n(&a->pages[n].next, next, __ATOMIC_RELAXED);
}
static inline bool bh__list_empty(const bh_arena_t *a, uint32_t head) {
  return __atomic_load_n(&a->pages[head].next, __ATOMIC_RELAXED) == head;
}
static inline void bh__list_init(bh_arena_t *a, uint32_t head) {
  bh__set_next(a, head, head);
  a->pages[head].prev = head;
}
/* The list operations read a->pages once: the compiler cannot tell that the stores to the
 * links leave it unchanged, and would load it again after each. */
static inline void bh__list_insert(bh_arena_t *a, uint32_t n, uint32_t prev, uint32_t next) {
  bh__page_t *pg = a->pages;
  pg[n].prev = prev;
  __atomic_store_n(&pg[n].next, next, __ATOMIC_RELAXED);
  __atomic_store_n(&pg[prev].next, n, __ATOMIC_RELAXED);
  pg[next].prev = n;
}
static inline void bh__list_add(bh_arena_t *a, uint32_t n, uint32_t head) {
  bh__list_insert(a, n, head, a->pages[head].next);
}
static inline void bh__list_add_tail(bh_arena_t *a, uint32_t n, uint32_t head) {
  bh__list_insert(a, n, a->pages[head].prev, head);
}
static inline void bh__list_del(bh_arena_t *a, uint32_t n) {
  bh__page_t *pg = a->pages;
  uint32_t p = pg[n].prev, x = pg[n].next;
  __atomic_store_n(&pg[p].next, x, __ATOMIC_RELAXED);
  pg[x].prev = p;
  __atomic_store_n(&pg[n].next, BH__NIL, __ATOMIC_RELAXED);
  pg[n].prev = BH__NIL;
}

/* gfp_ctx entries (see struct bh_arena). */
enum {
  BH__GC_ZONE_MASK = 0xff,  /* preferred zone id + 1; 0: no usable zone */
  BH__GC_HIGHEST_SHIFT = 8, /* 3 bits: gfp_zone() */
  BH__GC_MT_SHIFT = 11,     /* 3 bits: migratetype of the request */
  BH__GC_BAD = 1u << 15,    /* GFP_ZONE_BAD: two zone modifiers */
  BH__GC_FLAGS_SHIFT = 16,  /* the fast path's alloc_flags: watermark, ALLOC_NOFRAGMENT
                             * (alloc_flags_nofragment), ALLOC_KSWAPD */
};

/* page_alloc.c */
BH__INTERNAL int bh__build_gfp_ctx(bh_arena_t *a);
BH__INTERNAL void bh__free_one_page(bh_zone_t *z, uint64_t pfn, unsigned order, int mt, int fpi);
/* The zone's pcp cap (every CPU's high_max, marks above it lowered to it) lowered to cap, below
 * high_max and not below high_min, counted in pcp_cap_lowered.  held: a pcp whose lock the
 * caller holds, or NULL; another CPU's lock is only tried (taken by nobody else in a replay). */
BH__INTERNAL void bh__zone_cap_lower(bh_zone_t *z, bh__pcp_t *held, int cap);
BH__INTERNAL void bh__del_from_free_list(bh_zone_t *z, uint64_t pfn, unsigned order, int mt,
                                         int reason);
BH__INTERNAL bool bh__zone_watermark_ok(bh_zone_t *z, unsigned order, uint64_t mark,
                                        int highest_zoneidx, unsigned alloc_flags,
                                        int64_t free_pages);
/* Whether the zone spans the whole pageblock at start (prep_move_freepages_block). */
BH__INTERNAL bool bh__pageblock_in_zone(const bh_zone_t *z, uint64_t start);
BH__INTERNAL uint64_t bh__move_freepages_block(bh_zone_t *z, uint64_t start, int old_mt,
                                               int new_mt);
BH__INTERNAL int bh__preferred_zone(const bh_arena_t *a, int node, int highest);
BH__INTERNAL void bh__shuffle_zone(bh_zone_t *z);
BH__INTERNAL void bh__free_pages_zone_locked(bh_zone_t *z, uint64_t pfn, unsigned order, int slot);

/* add_to_free_list with its free page accounting (the other half of bh__del_from_free_list) */
BH__INTERNAL void bh__add_to_free_list(bh_zone_t *z, uint64_t pfn, unsigned order, int mt,
                                       bool tail);
/* order_to_pindex: the pcp list of a block of this order and migratetype */
BH__INTERNAL unsigned bh__pcp_pindex(const bh_arena_t *a, int mt, unsigned order);

/* populate.c: the block that holds pfn (the smallest aligned head at or below it with a
 * state whose block reaches pfn), its head, flags and order; false inside no block (cannot
 * happen in a consistent arena).  Flags by relaxed loads. */
BH__INTERNAL bool bh__container_of_pfn(const bh_arena_t *a, uint64_t pfn, uint64_t *head,
                                       uint8_t *flags, unsigned *order);

/* hint_core.c */
BH__INTERNAL uint64_t bh__isolate_free_page(bh_zone_t *z, uint64_t pfn, unsigned order);

/* discard.c: the discarded-page bitmap (a->discarded), which the core owns and a reporter
 * marks; bh__discard_enable, bh__discard_mark and the written-page model are in
 * buddy/replay_core.h. */
/* Frees a->discarded and sets it to NULL.  No report and no allocation may run meanwhile. */
BH__INTERNAL void bh__discard_disable(bh_arena_t *a);
/*
 * Called by the allocator when the block of 2^order pages at pfn is allocated: clears its
 * pages' bits in a->discarded, adds the number of pages that were set to a->refault_pages and,
 * if any was set, 1 to a->refault_blocks.  Does nothing if a->discarded is NULL.
 */
BH__INTERNAL void bh__discard_on_alloc(bh_arena_t *a, uint64_t pfn, unsigned order);

#endif
