/*
 * The buddy allocator proper: free lists, allocation (__rmqueue_smallest + expand, the
 * migratetype fallbacks), freeing (__free_one_page), per-CPU page lists and the zonelist walk
 * with its watermark checks.  Behaviour follows Linux 6.12's mm/page_alloc.c (which carries
 * the 6.15 "claim, then steal" fallback rework); the code is our own.
 */
#include "buddy/internal.h"
#include "common/debug.h"

#include <stdlib.h>

#include <sched.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Pageblocks and free lists                                                                 */
/* ---------------------------------------------------------------------------------------- */

static inline void set_pageblock_mt(bh_arena_t *a, uint64_t pfn, int mt) {
  uint8_t *b = &a->pageblock[pfn >> a->pb_order]; /* zone lock held; see bh__pb_mt */
  __atomic_store_n(b, (uint8_t)((__atomic_load_n(b, __ATOMIC_RELAXED) & ~7u) | (unsigned)mt),
                   __ATOMIC_RELAXED);
}

/* change_pageblock_range: every pageblock covered by a block of 2^order pages gets type mt. */
static void set_pageblock_range(bh_arena_t *a, uint64_t pfn, unsigned order, int mt) {
  if (order < a->pb_order) {
    set_pageblock_mt(a, pfn, mt);
    return;
  }
  uint64_t n = 1ull << (order - a->pb_order);
  for (uint64_t i = 0; i < n; i++)
    set_pageblock_mt(a, pfn + (i << a->pb_order), mt);
}

/* account_freepages: NR_FREE_PAGES leaves out Isolate blocks. */
static inline void account_freepages(bh_zone_t *z, int64_t nr, int mt) {
  if (mt == BH_MT_ISOLATE)
    return;
  atomic_store_explicit(&z->free_pages,
                        atomic_load_explicit(&z->free_pages, memory_order_relaxed) + nr,
                        memory_order_relaxed);
  if (mt == BH_MT_HIGHATOMIC)
    z->nr_free_highatomic += nr;
}

/* A free block of order on a free list, right after prev (the list's head or a block). */
static inline void free_list_insert(bh_zone_t *z, uint64_t pfn, unsigned order, uint32_t prev) {
  bh_arena_t *a = z->arena;
  BH_ASSERT(order <= a->max_order && !(pfn & ((1ull << order) - 1)));
  bh__pg_set(bh__pg(a, pfn), BH__PG_BUDDY, (uint8_t)order);
  bh__list_insert(a, (uint32_t)pfn, prev, a->pages[prev].next);
  __atomic_store_n(&z->nr_free[order], z->nr_free[order] + 1, __ATOMIC_RELAXED);
}

static inline void add_to_free_list(bh_zone_t *z, uint64_t pfn, unsigned order, int mt, bool tail) {
  uint32_t head = bh__free_list(z, order, mt);
  free_list_insert(z, pfn, order, tail ? z->arena->pages[head].prev : head);
}

/* A put-back block with a take rank (bh__take_rank_set): on the tail, before the ranked
 * blocks there that the trace shows taken after it. */
static void add_ranked_tail(bh_zone_t *z, uint64_t pfn, unsigned order, int mt) {
  const bh_arena_t *a = z->arena;
  uint32_t head = bh__free_list(z, order, mt), at = a->pages[head].prev, r = a->take_rank[pfn];
  while (at != head && at < a->take_rank_n && a->take_rank[at] > r)
    at = a->pages[at].prev;
  free_list_insert(z, pfn, order, at);
}

void bh__take_rank_set(bh_arena_t *a, const uint32_t *rank, uint64_t n) {
  a->take_rank = rank;
  a->take_rank_n = rank ? n : 0;
}

/*
 * __del_page_from_free_list: unlink a free block, clearing PageReported (which Linux does for
 * every reason a block leaves a list: allocation, merging as a buddy, isolation).
 */
static inline void del_from_free_list(bh_zone_t *z, uint64_t pfn, unsigned order, int reason) {
  bh_arena_t *a = z->arena;
  bh__page_t *p = bh__pg(a, pfn);
  BH_ASSERT((bh__pg_flags(p) & BH__PG_BUDDY) && bh__pg_order(p) == order); /* on a free list */
  if (bh__unlikely(bh__pg_flags(p) & BH__PG_REPORTED)) {
    if (reason == BH__DEL_ALLOC)
      z->ev[BH_STAT_reported_alloc]++;
    else if (reason == BH__DEL_MERGE)
      z->ev[BH_STAT_reported_merge]++;
  }
  if (bh__unlikely(order >= z->del_order))
    a->hint.del(a->hint.ctx, z, pfn, order, reason);
  bh__list_del(a, (uint32_t)pfn);
  bh__pg_set_flags(p, 0);
  __atomic_store_n(&z->nr_free[order], z->nr_free[order] - 1, __ATOMIC_RELAXED);
}

void bh__del_from_free_list(bh_zone_t *z, uint64_t pfn, unsigned order, int mt, int reason) {
  del_from_free_list(z, pfn, order, reason);
  account_freepages(z, -(int64_t)(1ull << order), mt);
}

/* move_to_free_list: to the tail of another type's list; PageReported is kept. */
static void move_to_free_list(bh_zone_t *z, uint64_t pfn, unsigned order, int old_mt, int new_mt) {
  bh_arena_t *a = z->arena;
  bh__list_del(a, (uint32_t)pfn);
  bh__list_add_tail(a, (uint32_t)pfn, bh__free_list(z, order, new_mt));
  account_freepages(z, -(int64_t)(1ull << order), old_mt);
  account_freepages(z, (int64_t)(1ull << order), new_mt);
}

static inline uint64_t list_first(const bh_arena_t *a, uint32_t head) {
  uint32_t n = a->pages[head].next;
  return n == head ? UINT64_MAX : n;
}

/*
 * find_buddy_page_pfn + page_is_buddy: the buddy of the block at pfn is at pfn ^ (1 << order);
 * it may be merged if it is the head of a free block of the same order in the same zone.
 * Zones are aligned to the largest block, so a buddy below the top order is always in the
 * same zone: Linux's page_zone_id() test holds by construction and costs nothing here.
 */
static inline bool page_is_buddy(const bh_arena_t *a, const bh_zone_t *z, uint64_t buddy,
                                 unsigned order) {
  const bh__page_t *b = &a->pages[buddy];
  (void)z;
  return (bh__pg_flags(b) & BH__PG_BUDDY) && bh__pg_order(b) == order;
}

/* ---------------------------------------------------------------------------------------- */
/* Freeing                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/*
 * buddy_merge_likely: a block that did not merge is put at the tail of its list when the
 * block one order up (it and its buddy together) has a free buddy of its own: the missing
 * buddy is probably about to be freed, and keeping this block from being allocated lets the
 * two merge two levels up.
 */
static bool buddy_merge_likely(const bh_arena_t *a, const bh_zone_t *z, uint64_t pfn,
                               unsigned order) {
  if (order + 1 >= a->max_order)
    return false;
  uint64_t higher = pfn & ~(1ull << order);
  uint64_t higher_buddy = higher ^ (1ull << (order + 1));
  return page_is_buddy(a, z, higher_buddy, order + 1);
}

/* The next number of the arena's xorshift64 stream (get_random_long for the shuffle). */
static uint64_t shuffle_random(bh_arena_t *a) {
  uint64_t x = atomic_load_explicit(&a->shuffle_state, memory_order_relaxed);
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  atomic_store_explicit(&a->shuffle_state, x, memory_order_relaxed);
  return x;
}

/* shuffle_pick_tail uses one random bit per call. */
static bool shuffle_pick_tail(bh_arena_t *a) { return shuffle_random(a) & 1; }

/* shuffle_valid_page: the head of a free block of this order in zone z. */
static bool shuffle_valid(const bh_zone_t *z, uint64_t pfn, unsigned order) {
  const bh__page_t *p = &z->arena->pages[pfn];
  return pfn >= z->start_pfn && pfn < z->start_pfn + z->spanned_pages &&
         (bh__pg_flags(p) & BH__PG_BUDDY) && bh__pg_order(p) == order;
}

/* list_swap: entries i and j trade places in their lists. */
static void list_swap(bh_arena_t *a, uint32_t i, uint32_t j) {
  uint32_t pos = a->pages[j].prev;
  bh__list_del(a, j);
  bh__list_insert(a, j, a->pages[i].prev, a->pages[i].next); /* list_replace(i, j) */
  if (pos == i)
    pos = j;
  bh__list_add(a, i, pos);
}

/*
 * __shuffle_zone (mm/shuffle.c), run once after the boot-time free when shuffling is on: each
 * free top-order block, in pfn order, trades places on the free lists with a randomly chosen
 * one of the zone (up to SHUFFLE_RETRY = 10 tries to pick a free block other than itself; the
 * two must have the same pageblock type).  Afterwards shuffle_pick_tail() keeps the lists
 * random at the top order.
 */
void bh__shuffle_zone(bh_zone_t *z) {
  bh_arena_t *a = z->arena;
  const unsigned order = a->max_order;
  const uint64_t step = 1ull << order, end = z->start_pfn + z->spanned_pages;
  for (uint64_t i = z->start_pfn; i < end; i += step) {
    if (!shuffle_valid(z, i, order))
      continue;
    uint64_t j = 0;
    int retry;
    for (retry = 0; retry < 10; retry++) {
      j = z->start_pfn + ((shuffle_random(a) % z->spanned_pages) & ~(step - 1));
      if (shuffle_valid(z, j, order) && j != i)
        break;
    }
    if (retry >= 10 || bh__pb_mt(a, j) != bh__pb_mt(a, i))
      continue;
    list_swap(a, (uint32_t)i, (uint32_t)j);
  }
}

/*
 * __free_one_page.  The block at pfn (2^order pages, pageblock type mt) is free.  While its
 * buddy (pfn ^ 2^order) is also a free block of the same order in the same zone, take the
 * buddy off its list and continue one order up with the combined block (pfn & buddy_pfn).
 * At and above pageblock order two blocks merge only if their types are equal or both
 * mergeable (Unmovable/Movable/Reclaimable), so Isolate and HighAtomic accounting stays
 * exact; when mergeable types differ the buddy's pageblocks take the freeing type, so that
 * every block on a list matches its pageblock type.  The final block goes to the tail if
 * asked (FPI_TO_TAIL: put back from hinting), by a random bit at the top order when
 * shuffling, or when buddy_merge_likely(); else to the head.  Then, unless
 * FPI_SKIP_REPORT_NOTIFY, the hinting strategy is notified of the final order.
 * Called with the zone lock held.
 */
void bh__free_one_page(bh_zone_t *z, uint64_t pfn, unsigned order, int mt, int fpi) {
  bh_arena_t *a = z->arena;
  const unsigned max_order = a->max_order;
  /* VM_BUG_ON_PAGE(pfn & ((1 << order) - 1), page): mm/page_alloc.c:825 of Linux 6.12 */
  BH_ASSERT(order <= max_order && !(pfn & ((1ull << order) - 1)));
  account_freepages(z, (int64_t)(1ull << order), mt);

  while (order < max_order) {
    uint64_t buddy = pfn ^ (1ull << order);
    if (!page_is_buddy(a, z, buddy, order))
      break;
    int buddy_mt = mt;
    if (bh__unlikely(order >= a->pb_order)) {
      buddy_mt = bh__pb_mt(a, buddy);
      if (buddy_mt != mt && (!bh__mt_mergeable(mt) || !bh__mt_mergeable(buddy_mt)))
        break;
    }
    del_from_free_list(z, buddy, order, BH__DEL_MERGE);
    account_freepages(z, -(int64_t)(1ull << order), buddy_mt);
    account_freepages(z, (int64_t)(1ull << order), mt);
    if (bh__unlikely(buddy_mt != mt))
      set_pageblock_range(a, buddy, order, mt);
    z->ev[BH_STAT_merges]++;
    pfn &= buddy;
    order++;
  }

  bool to_tail, ranked = false;
  if (fpi & BH__FPI_TO_TAIL) {
    to_tail = true;
    ranked = a->take_rank && pfn < a->take_rank_n && a->take_rank[pfn];
  } else if (a->cfg.shuffle && order >= max_order)
    to_tail = shuffle_pick_tail(a);
  else
    to_tail = buddy_merge_likely(a, z, pfn, order);
  if (to_tail)
    z->ev[BH_STAT_to_tail]++;
  if (bh__unlikely(ranked))
    add_ranked_tail(z, pfn, order, mt);
  else
    add_to_free_list(z, pfn, order, mt, to_tail);

  if (bh__unlikely(order >= z->notify_order) && !(fpi & BH__FPI_SKIP_REPORT_NOTIFY)) {
    z->ev[BH_STAT_hint_notify]++;
    a->hint.notify(a->hint.ctx, z, pfn, order);
  }
}

/* ---------------------------------------------------------------------------------------- */
/* Allocation from the buddy lists                                                           */
/* ---------------------------------------------------------------------------------------- */

/*
 * expand: the block at pfn of order `high` was taken for a request of order `low`.  Halve it
 * repeatedly, putting each upper half on the head of its order's list; the caller keeps the
 * lowest-addressed block.  Returns the pages put back.
 */
static uint64_t expand(bh_zone_t *z, uint64_t pfn, unsigned low, unsigned high, int mt) {
  uint64_t added = 0;
  while (high > low) {
    high--;
    uint64_t size = 1ull << high;
    add_to_free_list(z, pfn + size, high, mt, false);
    added += size;
    z->ev[BH_STAT_splits]++;
  }
  return added;
}

static void page_del_and_expand(bh_zone_t *z, uint64_t pfn, unsigned low, unsigned high, int mt) {
  del_from_free_list(z, pfn, high, BH__DEL_ALLOC);
  uint64_t nr = (1ull << high) - expand(z, pfn, low, high, mt);
  account_freepages(z, -(int64_t)nr, mt);
}

/* __rmqueue_smallest: first fit from the lowest sufficient order, head of the list. */
static uint64_t rmqueue_smallest(bh_zone_t *z, unsigned order, int mt) {
  bh_arena_t *a = z->arena;
  if (a->cfg.smp) /* as account_freepages' lockdep_assert_held (mm/page_alloc.c:666) */
    BH_ASSERT_LOCKED(&z->lock);
  for (unsigned o = order; o <= a->max_order; o++) {
    uint64_t pfn = list_first(a, bh__free_list(z, o, mt));
    if (pfn == UINT64_MAX)
      continue;
    page_del_and_expand(z, pfn, order, o, mt);
    return pfn;
  }
  return UINT64_MAX;
}

/* The fallback table: which other types' lists a request may take from, in order. */
static const int fallbacks[BH_MT_PCPTYPES][BH_MT_PCPTYPES - 1] = {
    [BH_MT_UNMOVABLE] = {BH_MT_RECLAIMABLE, BH_MT_MOVABLE},
    [BH_MT_MOVABLE] = {BH_MT_RECLAIMABLE, BH_MT_UNMOVABLE},
    [BH_MT_RECLAIMABLE] = {BH_MT_UNMOVABLE, BH_MT_MOVABLE},
};

/*
 * can_steal_fallback: large blocks are worth claiming whole; unmovable and reclaimable
 * requests claim regardless of size, since their pollution of movable blocks is the worse
 * kind of fragmentation.
 */
static bool can_steal_fallback(const bh_arena_t *a, unsigned order, int start_mt) {
  if (order >= a->pb_order)
    return true;
  return order >= a->pb_order / 2 || start_mt == BH_MT_RECLAIMABLE || start_mt == BH_MT_UNMOVABLE ||
         !a->cfg.mobility_grouping;
}

/* find_suitable_fallback: the first non-empty fallback list at this order, or -1. */
static int find_suitable_fallback(const bh_zone_t *z, unsigned order, int mt, bool only_stealable,
                                  bool *can_steal) {
  const bh_arena_t *a = z->arena;
  if (z->nr_free[order] == 0)
    return -1;
  *can_steal = false;
  for (int i = 0; i < BH_MT_PCPTYPES - 1; i++) {
    int fmt = fallbacks[mt][i];
    if (bh__list_empty(a, bh__free_list(z, order, fmt)))
      continue;
    if (can_steal_fallback(a, order, mt))
      *can_steal = true;
    if (!only_stealable || *can_steal)
      return fmt;
  }
  return -1;
}

/*
 * boost_watermark: a fragmenting fallback raises the zone's watermarks by a pageblock (up to
 * watermark_boost_factor of the high mark) so that kswapd reclaims, and so frees, earlier.
 */
static bool boost_watermark(bh_zone_t *z) {
  bh_arena_t *a = z->arena;
  unsigned factor = a->cfg.watermark_boost_factor;
  uint64_t pb = 1ull << a->pb_order;
  if (!factor || pb * 4 > z->managed_pages)
    return false;
  uint64_t max_boost = z->watermark[BH__WMARK_HIGH] * factor / 10000;
  if (!max_boost)
    return false;
  if (max_boost < pb)
    max_boost = pb;
  uint64_t boost = atomic_load_explicit(&z->watermark_boost, memory_order_relaxed) + pb;
  atomic_store_explicit(&z->watermark_boost, boost < max_boost ? boost : max_boost,
                        memory_order_relaxed);
  z->ev[BH_STAT_watermark_boost]++;
  return true;
}

/*
 * Walks the pageblock holding pfn: counts free pages and in-use movable pages (allocated
 * blocks requested as Movable: Linux counts PageLRU/__PageMovable pages).  Blocks tile the
 * pageblock, so stepping from head to head visits every page's block.
 */
static void count_pageblock(const bh_arena_t *a, uint64_t start, uint64_t *free_pages,
                            uint64_t *movable_pages) {
  uint64_t end = start + (1ull << a->pb_order);
  *free_pages = *movable_pages = 0;
  for (uint64_t pfn = start; pfn < end;) {
    const bh__page_t *p = &a->pages[pfn];
    uint8_t f = bh__pg_flags_acquire(p); /* pcp and free paths change pages without the lock */
    if (f & BH__PG_BUDDY) {
      *free_pages += 1ull << bh__pg_order(p);
      pfn += 1ull << bh__pg_order(p);
    } else if (f & (BH__PG_ALLOC | BH__PG_PCP | BH__PG_ISOLATED)) {
      unsigned o = bh__pg_order(p);
      if ((f & BH__PG_ALLOC) && bh__pg_mt(p) == BH_MT_MOVABLE)
        *movable_pages += 1ull << o;
      pfn += 1ull << o;
    } else {
      pfn++;
    }
  }
}

/*
 * prep_move_freepages_block's zone check: a pageblock is moved or retyped only if the zone,
 * as the kernel spans it, holds its first and last pfn (mm/page_alloc.c:1736-1739).  It fails
 * for the pageblock of pfn 0 when the x86 DMA zone starts at pfn 1, and for a last pageblock
 * cut by the zone's end: the caller holds this zone's lock only.
 */
bool bh__pageblock_in_zone(const bh_zone_t *z, uint64_t start) {
  uint64_t end = start + (1ull << z->arena->pb_order);
  return start >= z->zone_start_pfn && end <= z->zone_start_pfn + z->zone_spanned_pages;
}

/* __move_freepages_block: every free block of the pageblock to new_mt's list, retype it. */
uint64_t bh__move_freepages_block(bh_zone_t *z, uint64_t start, int old_mt, int new_mt) {
  bh_arena_t *a = z->arena;
  uint64_t end = start + (1ull << a->pb_order), moved = 0;
  for (uint64_t pfn = start; pfn < end;) {
    const bh__page_t *p = &a->pages[pfn];
    if (!(bh__pg_flags(p) & BH__PG_BUDDY)) { /* others' pages change without the zone lock */
      pfn++;
      continue;
    }
    unsigned o = bh__pg_order(p);
    move_to_free_list(z, pfn, o, old_mt, new_mt);
    pfn += 1ull << o;
    moved += 1ull << o;
  }
  set_pageblock_mt(a, start, new_mt);
  return moved;
}

static void count_extfrag(bh_zone_t *z, unsigned order, unsigned cur_order, int start_mt,
                          uint64_t pfn) {
  z->ev[BH_STAT_extfrag_fallback]++;
  if (cur_order < z->arena->pb_order)
    z->ev[BH_STAT_extfrag_fragmenting]++;
  if (bh__pb_mt(z->arena, pfn) == start_mt)
    z->ev[BH_STAT_extfrag_claim]++;
}

/*
 * try_to_claim_block: a block of a foreign type was found at cur_order.  At or above
 * pageblock order take the whole range.  Below it, boost the watermark, then claim the
 * pageblock if at least half of it is free or holds pages of a compatible kind (the
 * half-pageblock rule), moving its free blocks to the requester's lists.
 */
static uint64_t try_to_claim_block(bh_zone_t *z, uint64_t pfn, unsigned cur_order, unsigned order,
                                   int start_mt, unsigned alloc_flags) {
  bh_arena_t *a = z->arena;
  int block_mt = bh__pb_mt(a, pfn);
  if (block_mt == BH_MT_HIGHATOMIC)
    return UINT64_MAX;
  if (cur_order >= a->pb_order) {
    bh__del_from_free_list(z, pfn, cur_order, block_mt, BH__DEL_ALLOC);
    set_pageblock_range(a, pfn, cur_order, start_mt);
    uint64_t added = expand(z, pfn, order, cur_order, start_mt);
    account_freepages(z, (int64_t)added, start_mt);
    return pfn;
  }
  if (boost_watermark(z) && (alloc_flags & BH__ALLOC_KSWAPD))
    atomic_fetch_or_explicit(&z->flags, BH__ZONE_BOOSTED_WATERMARK, memory_order_relaxed);

  uint64_t start = pfn & ~((1ull << a->pb_order) - 1), free_pages, movable_pages, alike;
  if (!bh__pageblock_in_zone(z, start))
    return UINT64_MAX; /* moving the whole block can fail at a zone boundary */
  count_pageblock(a, start, &free_pages, &movable_pages);
  if (start_mt == BH_MT_MOVABLE)
    alike = movable_pages;
  else if (block_mt == BH_MT_MOVABLE)
    alike = (1ull << a->pb_order) - (free_pages + movable_pages);
  else
    alike = 0;
  if (free_pages + alike >= (1ull << (a->pb_order - 1)) || !a->cfg.mobility_grouping) {
    bh__move_freepages_block(z, start, block_mt, start_mt);
    return rmqueue_smallest(z, order, start_mt);
  }
  return UINT64_MAX;
}

/* __rmqueue_claim: largest foreign block first, stop at the first one not worth claiming. */
static uint64_t rmqueue_claim(bh_zone_t *z, unsigned order, int start_mt, unsigned alloc_flags) {
  bh_arena_t *a = z->arena;
  int min_order = (int)order;
  if (order < a->pb_order && (alloc_flags & BH__ALLOC_NOFRAGMENT))
    min_order = (int)a->pb_order;
  for (int o = (int)a->max_order; o >= min_order; o--) {
    bool can_steal;
    int fmt = find_suitable_fallback(z, (unsigned)o, start_mt, false, &can_steal);
    if (fmt == -1)
      continue;
    if (!can_steal)
      break;
    uint64_t pfn = list_first(a, bh__free_list(z, (unsigned)o, fmt));
    uint64_t got = try_to_claim_block(z, pfn, (unsigned)o, order, start_mt, alloc_flags);
    if (got != UINT64_MAX) {
      count_extfrag(z, order, (unsigned)o, start_mt, got);
      return got;
    }
  }
  return UINT64_MAX;
}

/* __rmqueue_steal: the smallest foreign block; its remainder stays on its own type's lists. */
static uint64_t rmqueue_steal(bh_zone_t *z, unsigned order, int start_mt) {
  bh_arena_t *a = z->arena;
  for (unsigned o = order; o <= a->max_order; o++) {
    bool can_steal;
    int fmt = find_suitable_fallback(z, o, start_mt, false, &can_steal);
    if (fmt == -1)
      continue;
    uint64_t pfn = list_first(a, bh__free_list(z, o, fmt));
    page_del_and_expand(z, pfn, order, o, fmt);
    count_extfrag(z, order, o, start_mt, pfn);
    return pfn;
  }
  return UINT64_MAX;
}

enum rmqueue_mode { RMQUEUE_NORMAL, RMQUEUE_CLAIM, RMQUEUE_STEAL };

/* __rmqueue: own type, then claim a block, then (not under NOFRAGMENT) steal a block. */
static uint64_t rmqueue(bh_zone_t *z, unsigned order, int mt, unsigned alloc_flags,
                        enum rmqueue_mode *mode) {
  uint64_t pfn;
  switch (*mode) {
  case RMQUEUE_NORMAL:
    pfn = rmqueue_smallest(z, order, mt);
    if (pfn != UINT64_MAX)
      return pfn;
    /* fall through */
  case RMQUEUE_CLAIM:
    pfn = rmqueue_claim(z, order, mt, alloc_flags);
    if (pfn != UINT64_MAX) {
      *mode = RMQUEUE_NORMAL;
      return pfn;
    }
    /* fall through */
  case RMQUEUE_STEAL:
    if (!(alloc_flags & BH__ALLOC_NOFRAGMENT)) {
      pfn = rmqueue_steal(z, order, mt);
      if (pfn != UINT64_MAX) {
        *mode = RMQUEUE_STEAL;
        return pfn;
      }
    }
  }
  return UINT64_MAX;
}

struct alloc_ctx {
  int node, highest, mt, slot;
  unsigned gfp;
  int preferred; /* first zone of the zonelist usable for highest */
};

/* How much of the node's zonelist a request walks: its own node only with __GFP_THISNODE. */
static inline int zonelist_len(const bh_arena_t *a, const struct alloc_ctx *ac) {
  if (!(ac->gfp & BH_GFP_THISNODE))
    return a->zonelist_len[ac->node];
  int n = 0;
  for (int t = BH_NR_ZONE_TYPES - 1; t >= 0; t--)
    n += a->node_zone[ac->node][t] >= 0;
  return n;
}

static const uint8_t pgalloc_stat[BH_NR_ZONE_TYPES] = {
    BH_STAT_pgalloc_dma, BH_STAT_pgalloc_dma32, BH_STAT_pgalloc_normal, BH_STAT_pgalloc_movable};

/*
 * Marks the block allocated and counts it in ev; the caller holds the lock ev belongs to
 * (zone or pcp), so the block is never seen off a list without an owner.
 */
static inline void account_alloc(bh_arena_t *a, uint64_t *ev, const bh_zone_t *z, uint64_t pfn,
                                 unsigned order, const struct alloc_ctx *ac) {
  bh__pg_set_alloc(&a->pages[pfn], (uint8_t)ac->mt, (uint8_t)order);
  ev[pgalloc_stat[z->type]] += 1ull << order;
  ev[BH_STAT_alloc_calls]++;
  if (bh__unlikely(z->node != ac->node)) /* numa_hit is alloc_calls - numa_miss (bh_stats_read) */
    ev[BH_STAT_numa_miss]++;
  if (z->id != ac->preferred)
    ev[BH_STAT_alloc_zone_fallback]++;
}

/* rmqueue_buddy: one block straight from the buddy lists under the zone lock. */
static uint64_t rmqueue_buddy(bh_zone_t *z, unsigned order, const struct alloc_ctx *ac,
                              unsigned alloc_flags) {
  uint64_t pfn = UINT64_MAX;
  int mt = ac->mt;
  bh__zone_lock(z);
  if (alloc_flags & BH__ALLOC_HIGHATOMIC)
    pfn = rmqueue_smallest(z, order, BH_MT_HIGHATOMIC);
  if (pfn == UINT64_MAX) {
    enum rmqueue_mode mode = RMQUEUE_NORMAL;
    pfn = rmqueue(z, order, mt, alloc_flags, &mode);
    if (pfn == UINT64_MAX && (alloc_flags & (BH__ALLOC_OOM | BH__ALLOC_NON_BLOCK)))
      pfn = rmqueue_smallest(z, order, BH_MT_HIGHATOMIC);
  }
  if (pfn != UINT64_MAX)
    account_alloc(z->arena, z->ev, z, pfn, order, ac);
  bh__zone_unlock(z);
  return pfn;
}

/* ---------------------------------------------------------------------------------------- */
/* Per-CPU page lists                                                                        */
/* ---------------------------------------------------------------------------------------- */

/* Orders 0..PAGE_ALLOC_COSTLY_ORDER and, with pcp_thp, the pageblock order: a->pcp_orders. */
static inline bool pcp_allowed_order(const bh_arena_t *a, unsigned order) {
  return (a->pcp_orders >> order) & 1;
}

static inline unsigned order_to_pindex(const bh_arena_t *a, int mt, unsigned order) {
  if (order > BH__PAGE_ALLOC_COSTLY_ORDER)
    return BH__NR_LOWORDER_PCP_LISTS + (mt == BH_MT_MOVABLE);
  return BH_MT_PCPTYPES * order + (unsigned)mt;
}

static inline unsigned pindex_to_order(const bh_arena_t *a, unsigned pindex) {
  return pindex >= BH__NR_LOWORDER_PCP_LISTS ? a->pb_order : pindex / BH_MT_PCPTYPES;
}

/* Thread numbers, handed out in order of first use; a thread's pcp slot in any arena is its
 * number modulo that arena's nr_cpus. */
static atomic_uint next_thread_number;
static _Thread_local __attribute__((tls_model("initial-exec"))) int tls_slot = -1;

/* pcp_slot's uncommon cases: a thread's first call, more threads than slots, per-CPU slots. */
static __attribute__((noinline)) int pcp_slot_slow(bh_arena_t *a) {
  unsigned n = a->cfg.nr_cpus;
  if (a->cfg.pcp_key == BH_PCP_PER_THREAD) {
    if (tls_slot < 0)
      tls_slot = (int)atomic_fetch_add_explicit(&next_thread_number, 1, memory_order_relaxed);
    return (int)((unsigned)tls_slot % n);
  }
  int c = sched_getcpu();
  return c < 0 ? 0 : (int)((unsigned)c % n);
}

static inline __attribute__((always_inline)) int pcp_slot(bh_arena_t *a, int cpu) {
  unsigned n = a->cfg.nr_cpus;
  if (cpu >= 0)
    return bh__likely((unsigned)cpu < n) ? cpu : (int)((unsigned)cpu % n);
  if (bh__likely(a->cfg.pcp_key == BH_PCP_PER_THREAD)) {
    unsigned s = (unsigned)tls_slot; /* -1 (no number yet) is never below n */
    if (bh__likely(s < n))
      return (int)s; /* no division while threads <= slots */
  }
  return pcp_slot_slow(a);
}

static void kswapd_revive(bh_zone_t *z);

/*
 * free_pcppages_bulk: return `count` pages to the buddy lists, round-robin over the lists
 * starting with the one just freed to, taking the coldest pages (list tails) first.
 */
static void free_pcppages_bulk(bh_zone_t *z, bh__pcp_t *pcp, int count, unsigned pindex,
                               bool zone_locked) {
  bh_arena_t *a = z->arena;
  if (count > pcp->count)
    count = pcp->count;
  if (count <= 0)
    return;
  pindex = pindex == 0 ? BH__NR_PCP_LISTS - 1 : pindex - 1;
  if (!zone_locked)
    bh__zone_lock(z);
  z->ev[BH_STAT_pcp_drain]++;
  uint64_t drained = 0;
  while (count > 0) {
    uint32_t head;
    do {
      if (++pindex > BH__NR_PCP_LISTS - 1)
        pindex = 0;
      head = pcp->head + pindex;
    } while (bh__list_empty(a, head));
    unsigned order = pindex_to_order(a, pindex);
    int nr = 1 << order;
    do {
      uint32_t pfn = a->pages[head].prev;
      bh__list_del(a, pfn);
      bh__pg_set_flags(&a->pages[pfn], 0);
      count -= nr;
      pcp->count -= nr;
      drained += (uint64_t)nr;
      bh__free_one_page(z, pfn, order, bh__pb_mt(a, pfn), BH__FPI_NONE);
    } while (count > 0 && !bh__list_empty(a, head));
  }
  z->ev[BH_STAT_pcp_drain_pages] += drained;
  atomic_fetch_add_explicit(&a->pcp_drained_pages, drained, memory_order_relaxed);
  if (!zone_locked)
    bh__zone_unlock(z);
  kswapd_revive(z);
}

/* The count the kernel's rules see: the pages on the lists and the start's ghost pages. */
static inline int kernel_count(const bh__pcp_t *pcp) { return pcp->count + pcp->ghost; }

/* nr_pcp_alloc (6.12): how many blocks a refill takes; grows while allocations continue. */
static int nr_pcp_alloc(bh__pcp_t *pcp, bh_zone_t *z, unsigned order) {
  int base = pcp->batch, high_min = pcp->high_min, high_max = pcp->high_max;
  int high = pcp->high = bh__pcp_high_clamped(pcp);
  if (high < base)
    return 1;
  int batch = order ? base : base << pcp->alloc_factor;
  unsigned zflags = atomic_load_explicit(&z->flags, memory_order_relaxed);
  if (high_min != high_max && !(zflags & BH__ZONE_BELOW_HIGH))
    high = pcp->high = high + batch < high_max ? high + batch : high_max;
  if (!order) {
    int max_nr = high - kernel_count(pcp) - base;
    if (max_nr < base)
      max_nr = base;
    if (batch <= max_nr && pcp->alloc_factor < BH__PCP_BATCH_SCALE_MAX)
      pcp->alloc_factor++;
    if (batch > max_nr)
      batch = max_nr;
  }
  if (batch > 1) {
    batch >>= order;
    if (batch < 2)
      batch = 2;
  }
  return batch;
}

/* rmqueue_bulk: `count` blocks under one zone lock, appended so the list is in address order. */
static int rmqueue_bulk(bh_zone_t *z, bh__pcp_t *pcp, unsigned order, int count, uint32_t head,
                        int mt, unsigned alloc_flags) {
  bh_arena_t *a = z->arena;
  enum rmqueue_mode mode = RMQUEUE_NORMAL;
  int i;
  bh__zone_lock(z);
  for (i = 0; i < count; i++) {
    uint64_t pfn = rmqueue(z, order, mt, alloc_flags, &mode);
    if (pfn == UINT64_MAX)
      break;
    bh__pg_set_pcp(&a->pages[pfn], (uint8_t)order, (uint32_t)(pcp - z->pcp));
    bh__list_add_tail(a, (uint32_t)pfn, head);
  }
  z->ev[BH_STAT_pcp_refill]++;
  z->ev[BH_STAT_pcp_refill_pages] += (uint64_t)i << order;
  bh__zone_unlock(z);
  return i;
}

/* alloc_flags_nofragment: a request whose preferred zone is z avoids fallbacks that would
 * mix pageblocks, if z is Normal and (on more than one node) a DMA32 zone lies below it; on
 * one node Linux assumes there is one. */
static inline bool nofragment_zone(const bh_arena_t *a, const bh_zone_t *z) {
  return z->type == BH_ZONE_NORMAL &&
         (a->cfg.nr_nodes == 1 || a->node_zone[z->node][BH_ZONE_DMA32] >= 0);
}

/* rmqueue_pcplist's refill of the empty list at head: nr_pcp_alloc blocks, counted.  The
 * blocks taken.  The pcp lock held. */
static inline int pcp_fill(bh_zone_t *z, bh__pcp_t *pcp, unsigned order, uint32_t head, int mt,
                           unsigned alloc_flags) {
  int n = rmqueue_bulk(z, pcp, order, nr_pcp_alloc(pcp, z, order), head, mt, alloc_flags);
  pcp->count += n << order;
  return n;
}

int bh__pcp_refill_empty(bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu) {
  if (!a || pfn >= a->nr_pages || mt < 0 || mt >= BH_MT_PCPTYPES || !pcp_allowed_order(a, order))
    return 0;
  bh_zone_t *z = bh__pfn_zone(a, pfn);
  if (!z || !z->pcp)
    return 0;
  bh__pcp_t *pcp = &z->pcp[bh__cpu_slot(a, cpu)];
  if (!bh__pcp_trylock(pcp))
    return 0;
  uint32_t head = pcp->head + order_to_pindex(a, mt, order);
  int n = 0;
  if (bh__list_empty(a, head))
    n = pcp_fill(z, pcp, order, head, mt,
                 BH__ALLOC_WMARK_LOW | BH__ALLOC_KSWAPD |
                     (nofragment_zone(a, z) ? BH__ALLOC_NOFRAGMENT : 0));
  bh__pcp_unlock(pcp);
  return n;
}

/* Takes the first block of a non-empty pcp list; the caller holds the pcp lock. */
static inline uint32_t pcp_take(bh_arena_t *a, bh_zone_t *z, bh__pcp_t *pcp, uint32_t head,
                                unsigned order, const struct alloc_ctx *ac) {
  uint32_t pfn = a->pages[head].next;
  bh__list_del(a, pfn);
  pcp->count -= 1 << order;
  pcp->ev[BH_STAT_pcp_alloc]++;
  account_alloc(a, pcp->ev, z, pfn, order, ac);
  return pfn;
}

/* rmqueue_pcplist: the hot path; a failed trylock falls back to the buddy lists. */
static uint64_t rmqueue_pcplist(bh_zone_t *z, unsigned order, const struct alloc_ctx *ac,
                                unsigned alloc_flags) {
  bh_arena_t *a = z->arena;
  bh__pcp_t *pcp = &z->pcp[ac->slot];
  int mt = ac->mt;
  if (!bh__pcp_trylock(pcp))
    return UINT64_MAX;
  pcp->free_count >>= 1; /* every call, refill or not: allocations shrink the next free batch */
  uint32_t head = pcp->head + order_to_pindex(a, mt, order);
  if (bh__list_empty(a, head)) {
    int n = pcp_fill(z, pcp, order, head, mt, alloc_flags);
    if (!n) {
      bh__pcp_unlock(pcp);
      return UINT64_MAX;
    }
  }
  uint32_t pfn = pcp_take(a, z, pcp, head, order, ac);
  bh__pcp_unlock(pcp);
  return pfn;
}

/* nr_pcp_high (6.12, without reclaim): the current high mark; 0 means free everything. */
__attribute__((always_inline)) static inline int nr_pcp_high(bh__pcp_t *pcp, bh_zone_t *z,
                                                             int batch, bool free_high) {
  int high_min = pcp->high_min, high_max = pcp->high_max;
  int high = pcp->high = bh__pcp_high_clamped(pcp);
  if (!high)
    return 0;
  if (free_high) {
    int h = high - (batch << BH__PCP_BATCH_SCALE_MAX);
    pcp->high = h > high_min ? h : high_min;
    return 0;
  }
  if (high_min == high_max)
    return high;
  if (atomic_load_explicit(&z->flags, memory_order_relaxed) & BH__ZONE_BELOW_HIGH) {
    int fc = pcp->free_count > batch ? pcp->free_count : batch;
    pcp->high = high - fc > high_min ? high - fc : high_min;
    high = kernel_count(pcp) > high_min ? kernel_count(pcp) : high_min;
  } else if (kernel_count(pcp) >= high) {
    int need = pcp->free_count + batch;
    if (pcp->high < need)
      pcp->high = need < high_min ? high_min : need > high_max ? high_max : need;
  }
  return high;
}

/* nr_pcp_free: how many pages a drain returns; at least batch stay on the list. */
static int nr_pcp_free(bh__pcp_t *pcp, int batch, int high, bool free_high) {
  if (free_high) {
    int n = batch << BH__PCP_BATCH_SCALE_MAX;
    return pcp->count < n ? pcp->count : n;
  }
  if (high < batch)
    return 1;
  int lo = batch, hi = high - batch, n = pcp->free_count;
  if (n > hi)
    n = hi;
  if (n < lo)
    n = lo;
  return n;
}

/*
 * The end of free_unref_page_commit once the pcp list reached its high mark: drain it, then
 * clear ZONE_BELOW_HIGH if the zone is above its high watermark again.
 */
static void pcp_over_high(bh_zone_t *z, bh__pcp_t *pcp, unsigned pindex, int high, bool free_high,
                          bool zone_locked) {
  free_pcppages_bulk(z, pcp, nr_pcp_free(pcp, pcp->batch, high, free_high), pindex, zone_locked);
  /* high_wmark_pages(): the high mark plus the boost */
  uint64_t high_mark = z->watermark[BH__WMARK_HIGH] +
                       atomic_load_explicit(&z->watermark_boost, memory_order_relaxed);
  if ((atomic_load_explicit(&z->flags, memory_order_relaxed) & BH__ZONE_BELOW_HIGH) &&
      bh__zone_watermark_ok(z, 0, high_mark, BH_ZONE_MOVABLE, 0,
                            atomic_load_explicit(&z->free_pages, memory_order_relaxed)))
    atomic_fetch_and_explicit(&z->flags, ~(unsigned)BH__ZONE_BELOW_HIGH, memory_order_relaxed);
}

/*
 * free_unref_page_commit up to its high check: onto the head of the pcp list, with the
 * counters and the high/batch tuning.  Returns the high mark if the list reached it (the
 * caller drains), else -1; *free_high tells the drain how much to free.
 */
__attribute__((always_inline)) static inline int pcp_add(bh_arena_t *a, bh_zone_t *z,
                                                         bh__pcp_t *pcp, uint64_t pfn,
                                                         unsigned order, int mt,
                                                         bool *free_high_out) {
  pcp->alloc_factor >>= 1;
  unsigned pindex = order_to_pindex(a, mt, order);
  bh__pg_set_pcp(&a->pages[pfn], (uint8_t)order, (uint32_t)(pcp - z->pcp));
  bh__list_add(a, (uint32_t)pfn, pcp->head + pindex);
  pcp->count += 1 << order;
  pcp->ev[BH_STAT_pcp_free]++;
  pcp->ev[BH_STAT_pgfree] += 1ull << order;

  int batch = pcp->batch;
  bool free_high = false;
  if (order && order <= BH__PAGE_ALLOC_COSTLY_ORDER) {
    free_high = pcp->free_count >= pcp->free_high_from &&
                (pcp->flags & BH__PCPF_PREV_FREE_HIGH_ORDER) &&
                (!(pcp->flags & BH__PCPF_FREE_HIGH_BATCH) || kernel_count(pcp) >= batch);
    pcp->flags |= BH__PCPF_PREV_FREE_HIGH_ORDER;
  } else if (pcp->flags & BH__PCPF_PREV_FREE_HIGH_ORDER) {
    pcp->flags &= (uint8_t)~BH__PCPF_PREV_FREE_HIGH_ORDER;
  }
  if (pcp->free_count < (batch << BH__PCP_BATCH_SCALE_MAX))
    pcp->free_count += 1 << order;
  int high = nr_pcp_high(pcp, z, batch, free_high);
  *free_high_out = free_high;
  return kernel_count(pcp) >= high ? high : -1;
}

/* The latest-placed of the start's hidden blocks of this pcp still on its lists back to memory
 * allocated before the trace; false if none is left. */
static bool surplus_take(bh_zone_t *z, bh__pcp_t *pcp) {
  bh_arena_t *a = z->arena;
  while (pcp->surplus.n) {
    uint32_t pfn = pcp->surplus.e[--pcp->surplus.n];
    bh__page_t *p = &a->pages[pfn];
    if (!(bh__pg_flags(p) & BH__PG_PCP) || bh__pcp_owner(z, pfn) != pcp)
      continue; /* allocated, or drained, since */
    unsigned order = bh__pg_order(p);
    int mt = bh__pb_mt(a, pfn);
    uint8_t pmt = mt == BH_MT_RECLAIMABLE ? BH_MT_RECLAIMABLE : BH_MT_UNMOVABLE; /* no flag */
    bh__list_del(a, pfn);
    pcp->count -= 1 << order;
    for (uint64_t q = pfn; q < pfn + (1ull << order); q++) { /* as bh_arena_populate left it */
      bh__pg_set_mt(&a->pages[q], pmt);
      bh__pg_set(&a->pages[q], BH__PG_ALLOC | BH__PG_PRETRACE, 0);
    }
    atomic_fetch_add_explicit(&a->pcp_surplus_pages, 1ull << order, memory_order_relaxed);
    return true;
  }
  return false;
}

/*
 * A free reached the high mark of a pcp where the trace shows the kernel's did not
 * (bh__pcp_calibrating): the start's hidden blocks of this pcp, the latest placed first, go
 * back to memory allocated before the trace until the count is below the mark.  The high mark
 * if it is still reached (no hidden block left on the lists), else -1.
 */
static __attribute__((noinline, cold)) int pcp_surplus(bh_zone_t *z, bh__pcp_t *pcp, int high) {
  while (kernel_count(pcp) >= high && surplus_take(z, pcp))
    ;
  return kernel_count(pcp) >= high ? high : -1;
}

/*
 * A calibration lowered pcp's mark, which stood at its cap, to cap (bh__pcp_high_max_unknown):
 * the kernel's zone_highsize() gave the zone's high_max once, when its pcp lists were set up
 * (zone_set_pageset_high_and_batch, mm/page_alloc.c:5793-5822 in 6.12; the same for every CPU
 * of the zone), so the cap is every CPU's (bh__zone_cap_lower).  Not below high_min; pcp is
 * locked.
 */
static void lower_cap(bh_zone_t *z, bh__pcp_t *pcp, int cap) {
  if (z->arena->pcp_cap_unknown && cap < pcp->high_max && cap >= pcp->high_min)
    bh__zone_cap_lower(z, pcp, cap);
}

void bh__zone_cap_lower(bh_zone_t *z, bh__pcp_t *held, int cap) {
  bh_arena_t *a = z->arena;
  atomic_fetch_add_explicit(&a->pcp_cap_lowered, (uint64_t)(z->pcp[0].high_max - cap),
                            memory_order_relaxed);
  for (unsigned c = 0; c < a->cfg.nr_cpus; c++) {
    bh__pcp_t *p = &z->pcp[c];
    if (p != held && !bh__pcp_trylock(p))
      continue;
    p->high_max = cap;
    if (p->high > cap)
      p->high = cap;
    if (p != held)
      bh__pcp_unlock(p);
  }
}

/*
 * The order-0 free the trace's first drain after one on this CPU follows (bh__pcp_deficit;
 * after a high-order free a drain shows only that the count reached the mark within that
 * block's pages), before it goes on the lists: if it would leave the count below the high mark
 * (as nr_pcp_high gives it outside the reclaim and below-high rules), the kernel's mark was
 * lower, or its count higher, by what is missing.  Which, the trace does not say, but a page
 * more on the kernel's lists is one the trace never shows, drained or allocated: that drain
 * (free_pcppages_bulk takes the free's list's tail first, mm/page_alloc.c:1232-1254 in 6.12)
 * and the lists' next allocations would have reached it.  The mark is lowered (not below
 * high_min), which the tuning carries on as it carries the kernel's (nr_pcp_high :2628-2672,
 * nr_pcp_alloc :3044-3045, decay_pcp_high :2425-2430).  Order-0 and THP frees (orders 1 to 3
 * may drain by free_high instead, :2702-2706).
 */
static __attribute__((noinline, cold)) void pcp_deficit(bh_zone_t *z, bh__pcp_t *pcp,
                                                        unsigned order) {
  pcp->deficit = false;
  int high = bh__pcp_high_clamped(pcp);
  if ((order && order <= BH__PAGE_ALLOC_COSTLY_ORDER) || !high ||
      (atomic_load_explicit(&z->flags, memory_order_relaxed) & BH__ZONE_BELOW_HIGH))
    return;
  int missing = high - kernel_count(pcp) - (1 << order), room = high - pcp->high_min;
  if (missing > room)
    missing = room;
  if (missing <= 0)
    return;
  if (high == pcp->high_max) /* at the cap: it is the cap that is lower */
    lower_cap(z, pcp, high - missing);
  pcp->high = high - missing;
  pcp->lowered += missing;
  atomic_fetch_add_explicit(&z->arena->pcp_deficit_pages, (uint64_t)missing, memory_order_relaxed);
}

/*
 * free_unref_page_commit: onto the head of the pcp list; drain when over the high mark.
 * zone_locked: the caller holds the zone lock already (compaction's frees).
 */
__attribute__((always_inline)) static inline void
free_to_pcp(bh_zone_t *z, bh__pcp_t *pcp, uint64_t pfn, unsigned order, int mt, bool zone_locked) {
  bool free_high;
  if (bh__unlikely(pcp->deficit))
    pcp_deficit(z, pcp, order);
  int high = pcp_add(z->arena, z, pcp, pfn, order, mt, &free_high);
  if (high >= 0 && !free_high && bh__unlikely(pcp->calibrating))
    high = pcp_surplus(z, pcp, high);
  if (high >= 0)
    pcp_over_high(z, pcp, order_to_pindex(z->arena, mt, order), high, free_high, zone_locked);
}

static void drain_pcp(bh_zone_t *z, bh__pcp_t *pcp) {
  bh__pcp_lock(pcp);
  if (pcp->count)
    free_pcppages_bulk(z, pcp, pcp->count, 0, false);
  bh__pcp_unlock(pcp);
}

static void drain_zone_pcp(bh_zone_t *z) {
  if (!z->pcp)
    return;
  for (unsigned c = 0; c < z->arena->cfg.nr_cpus; c++)
    drain_pcp(z, &z->pcp[c]);
}

void bh_drain_pcp(bh_arena_t *a) {
  for (int i = 0; a && i < a->nr_zones; i++)
    drain_zone_pcp(&a->zones[i]);
}

/* ---------------------------------------------------------------------------------------- */
/* Watermarks and the zonelist walk                                                          */
/* ---------------------------------------------------------------------------------------- */

/*
 * __zone_watermark_ok: enough free pages above the mark (lowered for reserves-using requests)
 * plus the lowmem reserve that protects this zone from requests that could have used a
 * higher zone; for order > 0, also some free block of at least that order on a usable list.
 */
bool bh__zone_watermark_ok(bh_zone_t *z, unsigned order, uint64_t mark, int highest_zoneidx,
                           unsigned alloc_flags, int64_t free_pages) {
  bh_arena_t *a = z->arena;
  int64_t min = (int64_t)mark;
  free_pages -= (int64_t)(1ull << order) - 1;
  if (!(alloc_flags & BH__ALLOC_RESERVES))
    free_pages -= (int64_t)z->nr_free_highatomic;
  if (alloc_flags & BH__ALLOC_RESERVES) {
    if (alloc_flags & BH__ALLOC_MIN_RESERVE) {
      min -= min / 2;
      if (alloc_flags & BH__ALLOC_NON_BLOCK)
        min -= min / 4;
    }
    if (alloc_flags & BH__ALLOC_OOM)
      min -= min / 2;
  }
  if (free_pages <= min + (int64_t)z->lowmem_reserve[highest_zoneidx])
    return false;
  if (!order)
    return true;
  for (unsigned o = order; o <= a->max_order; o++) {
    if (!__atomic_load_n(&z->nr_free[o], __ATOMIC_RELAXED))
      continue;
    for (int mt = 0; mt < BH_MT_PCPTYPES; mt++)
      if (!bh__list_empty(a, bh__free_list(z, o, mt)))
        return true;
    if ((alloc_flags & (BH__ALLOC_HIGHATOMIC | BH__ALLOC_OOM)) &&
        !bh__list_empty(a, bh__free_list(z, o, BH_MT_HIGHATOMIC)))
      return true;
  }
  return false;
}

static inline uint64_t wmark_pages(const bh_zone_t *z, unsigned alloc_flags) {
  return z->watermark[alloc_flags & BH__ALLOC_WMARK_MASK] +
         atomic_load_explicit(&z->watermark_boost, memory_order_relaxed);
}

/* zone_watermark_fast's order-0 shortcut: the free pages the request may use above the mark
 * and the lowmem reserve.  False is no answer: the full check then decides. */
__attribute__((always_inline)) static inline bool watermark_order0_ok(const bh_zone_t *z,
                                                                      int64_t free_pages,
                                                                      uint64_t mark, int highest,
                                                                      unsigned alloc_flags) {
  int64_t reserved = (alloc_flags & BH__ALLOC_RESERVES) ? 0 : (int64_t)z->nr_free_highatomic;
  int64_t usable = free_pages - (reserved < free_pages ? reserved : free_pages);
  return usable > (int64_t)(mark + z->lowmem_reserve[highest]);
}

/* zone_watermark_fast: the order-0 shortcut, then the full check. */
__attribute__((always_inline)) static inline bool zone_watermark_fast(bh_zone_t *z, unsigned order,
                                                                      uint64_t mark, int highest,
                                                                      unsigned alloc_flags) {
  int64_t free_pages = atomic_load_explicit(&z->free_pages, memory_order_relaxed);
  if (!order && watermark_order0_ok(z, free_pages, mark, highest, alloc_flags))
    return true;
  if (bh__zone_watermark_ok(z, order, mark, highest, alloc_flags, free_pages))
    return true;
  if (!order && (alloc_flags & BH__ALLOC_MIN_RESERVE) &&
      atomic_load_explicit(&z->watermark_boost, memory_order_relaxed) &&
      (alloc_flags & BH__ALLOC_WMARK_MASK) == BH__ALLOC_WMARK_MIN)
    return bh__zone_watermark_ok(z, order, z->watermark[BH__WMARK_MIN], highest, alloc_flags,
                                 free_pages);
  return false;
}

/*
 * reserve_highatomic_pageblock: a successful high-order atomic request reserves its pageblock
 * for such requests, up to about 1 % of the zone.
 */
static void reserve_highatomic_pageblock(bh_zone_t *z, uint64_t pfn, unsigned order) {
  bh_arena_t *a = z->arena;
  uint64_t pb = 1ull << a->pb_order;
  if (z->managed_pages / 100 < pb)
    return;
  uint64_t max_managed = (z->managed_pages / 100 + pb - 1) & ~(pb - 1);
  if (z->nr_reserved_highatomic >= max_managed)
    return;
  bh__zone_lock(z);
  int mt = bh__pb_mt(a, pfn);
  if (z->nr_reserved_highatomic < max_managed && bh__mt_mergeable(mt) &&
      (order >= a->pb_order || bh__pageblock_in_zone(z, pfn & ~(pb - 1)))) {
    if (order < a->pb_order) {
      bh__move_freepages_block(z, pfn & ~(pb - 1), mt, BH_MT_HIGHATOMIC);
      z->nr_reserved_highatomic += pb;
    } else {
      set_pageblock_range(a, pfn, order, BH_MT_HIGHATOMIC);
      z->nr_reserved_highatomic += 1ull << order;
    }
    z->ev[BH_STAT_highatomic_reserve]++;
  }
  bh__zone_unlock(z);
}

/*
 * unreserve_highatomic_pageblock: gives one HighAtomic pageblock of the zonelist back to the
 * request's migratetype (the first HighAtomic free block found, lowest order first), keeping
 * one reserved pageblock per zone unless forced.  The allocator calls it forced before it
 * would fail a request that may block (should_reclaim_retry, "before OOM, exhaust
 * highatomic_reserve"); Linux also calls it unforced after direct reclaim made progress, which
 * never happens here.  Returns whether a block was converted.
 */
static bool unreserve_highatomic_pageblock(bh_arena_t *a, const struct alloc_ctx *ac, bool force) {
  const int *zl = a->zonelist[ac->node];
  for (int i = 0; i < zonelist_len(a, ac); i++) {
    bh_zone_t *z = &a->zones[zl[i]];
    uint64_t pb = 1ull << a->pb_order;
    if (z->type > ac->highest || (!force && z->nr_reserved_highatomic <= pb))
      continue;
    bh__zone_lock(z);
    for (unsigned o = 0; o <= a->max_order; o++) {
      uint64_t pfn = list_first(a, bh__free_list(z, o, BH_MT_HIGHATOMIC));
      if (pfn == UINT64_MAX)
        continue;
      int mt = bh__pb_mt(a, pfn);
      if (mt == BH_MT_HIGHATOMIC) {
        uint64_t size = pb > (1ull << o) ? pb : 1ull << o;
        z->nr_reserved_highatomic -=
            size < z->nr_reserved_highatomic ? size : z->nr_reserved_highatomic;
      }
      uint64_t moved = 1;
      if (o < a->pb_order) { /* not in the zone: cannot be, its reservation moved it */
        moved = bh__pageblock_in_zone(z, pfn & ~(pb - 1))
                    ? bh__move_freepages_block(z, pfn & ~(pb - 1), mt, ac->mt)
                    : 0;
      } else {
        move_to_free_list(z, pfn, o, mt, ac->mt);
        set_pageblock_range(a, pfn, o, ac->mt);
      }
      if (moved) {
        z->ev[BH_STAT_highatomic_unreserve]++;
        bh__zone_unlock(z);
        return true;
      }
    }
    bh__zone_unlock(z);
  }
  return false;
}

/*
 * kswapd (mm/vmscan.c), as far as a model without reclaimable memory has it.  A wake runs the
 * node's kswapd at once, in the waker's context: balance_pgdat() samples the boosts of the
 * zones up to highest_zoneidx, finds nothing to reclaim (a pass that reclaims nothing counts
 * a kswapd failure, unless the node was balanced and not boosted), subtracts the sampled
 * boosts, and goes round again while the node is unbalanced and kswapd has not failed
 * MAX_RECLAIM_RETRIES (16) times.  Once it has, the node is "hopeless": wakeups return at
 * once, so boosts are no longer cleared.  In Linux any reclaim that makes progress revives it
 * (kswapd_failures = 0: shrink_node, mm/vmscan.c:6077 in 6.12, lru_gen_shrink_node :5005, and
 * direct reclaim); there is no reclaim here, so the stand-in for progress is a free to the
 * buddy lists that leaves the node balanced again (kswapd_revive).  kcompactd, which balance_pgdat
 * wakes at the pageblock order after a boosted pass and wakeup_kswapd wakes instead of a hopeless
 * or balanced kswapd, is not modelled (see docs/FIDELITY.md).
 */
#define BH__MAX_RECLAIM_RETRIES 16

/* pgdat_balanced: some zone up to highest passes the high watermark (with its boost). */
static bool pgdat_balanced(bh_arena_t *a, int node, unsigned order, int highest) {
  bool managed = false;
  for (int t = 0; t <= highest; t++) {
    int zi = a->node_zone[node][t];
    if (zi < 0)
      continue;
    bh_zone_t *z = &a->zones[zi];
    managed = true;
    if (bh__zone_watermark_ok(z, order, wmark_pages(z, BH__ALLOC_WMARK_HIGH), highest, 0,
                              atomic_load_explicit(&z->free_pages, memory_order_relaxed)))
      return true;
  }
  return !managed;
}

static bool pgdat_watermark_boosted(bh_arena_t *a, int node, int highest) {
  for (int t = highest; t >= 0; t--) {
    int zi = a->node_zone[node][t];
    if (zi >= 0 && atomic_load_explicit(&a->zones[zi].watermark_boost, memory_order_relaxed))
      return true;
  }
  return false;
}

/* balance_pgdat without reclaim; counted as pageoutrun in the zone that woke it. */
static void balance_pgdat(bh_arena_t *a, bh_zone_t *waker, int node, unsigned order, int highest) {
  uint64_t boosts[BH_NR_ZONE_TYPES] = {0}, boosted = 0;
  for (int t = 0; t <= highest; t++) {
    int zi = a->node_zone[node][t];
    if (zi >= 0)
      boosted += boosts[t] =
          atomic_load_explicit(&a->zones[zi].watermark_boost, memory_order_relaxed);
  }
  bh__zone_lock(waker);
  waker->ev[BH_STAT_pageoutrun]++;
  bh__zone_unlock(waker);
  if (!boosted && pgdat_balanced(a, node, order, highest))
    return; /* nothing to do: not a failure */
  atomic_fetch_add_explicit(&a->kswapd_failures[node], 1, memory_order_relaxed);
  for (int t = 0; boosted && t <= highest; t++) {
    int zi = a->node_zone[node][t];
    if (zi < 0 || !boosts[t])
      continue;
    bh_zone_t *z = &a->zones[zi];
    bh__zone_lock(z);
    uint64_t b = atomic_load_explicit(&z->watermark_boost, memory_order_relaxed);
    atomic_store_explicit(&z->watermark_boost, b - (b < boosts[t] ? b : boosts[t]),
                          memory_order_relaxed);
    bh__zone_unlock(z);
  }
}

/*
 * A free to the buddy lists of z's node: if kswapd has failed and the node is balanced again
 * (some zone above its high watermark with its boost), that counts as the reclaim progress
 * which resets kswapd_failures in Linux (see above).  One relaxed load while kswapd is fine.
 */
static void kswapd_revive(bh_zone_t *z) {
  bh_arena_t *a = z->arena;
  if (bh__likely(!atomic_load_explicit(&a->kswapd_failures[z->node], memory_order_relaxed)))
    return;
  if (pgdat_balanced(a, z->node, 0, BH_NR_ZONE_TYPES - 1))
    atomic_store_explicit(&a->kswapd_failures[z->node], 0, memory_order_relaxed);
}

/* wakeup_kswapd, then kswapd's balance-and-try-to-sleep loop. */
static void wakeup_kswapd(bh_zone_t *z, unsigned order, int highest) {
  bh_arena_t *a = z->arena;
  int node = z->node;
  if (atomic_load_explicit(&a->kswapd_failures[node], memory_order_relaxed) >=
          BH__MAX_RECLAIM_RETRIES ||
      (pgdat_balanced(a, node, order, highest) && !pgdat_watermark_boosted(a, node, highest)))
    return;
  if (atomic_exchange_explicit(&a->kswapd_running[node], true, memory_order_acquire))
    return; /* running: it is not waiting on kswapd_wait */
  do
    balance_pgdat(a, z, node, order, highest);
  while (atomic_load_explicit(&a->kswapd_failures[node], memory_order_relaxed) <
             BH__MAX_RECLAIM_RETRIES &&
         !pgdat_balanced(a, node, order, highest));
  atomic_store_explicit(&a->kswapd_running[node], false, memory_order_release);
}

/* wake_all_kswapds: each node of the zonelist once, from its first usable zone. */
static void wake_all_kswapds(bh_arena_t *a, const struct alloc_ctx *ac, unsigned order) {
  const int *zl = a->zonelist[ac->node];
  int last_node = -1;
  for (int i = 0; i < zonelist_len(a, ac); i++) {
    bh_zone_t *z = &a->zones[zl[i]];
    if (z->type > ac->highest || z->node == last_node)
      continue;
    wakeup_kswapd(z, order, ac->highest);
    last_node = z->node;
  }
}

/* The end of rmqueue: a boosted zone wakes kswapd (order 0, its own zone index). */
static inline void boosted_wakeup(bh_zone_t *z, unsigned alloc_flags) {
  if (bh__unlikely(atomic_load_explicit(&z->flags, memory_order_relaxed) &
                   BH__ZONE_BOOSTED_WATERMARK) &&
      (alloc_flags & BH__ALLOC_KSWAPD)) {
    atomic_fetch_and_explicit(&z->flags, ~(unsigned)BH__ZONE_BOOSTED_WATERMARK,
                              memory_order_relaxed);
    wakeup_kswapd(z, 0, z->type);
  }
}

/*
 * rmqueue: pcp for small orders, else (or if the pcp is busy/empty) the buddy lists.
 * pcp_busy: the caller already found this zone's pcp lock taken, for this very call.
 */
static uint64_t rmqueue_zone(bh_zone_t *z, const struct alloc_ctx *ac, unsigned order,
                             unsigned alloc_flags, bool pcp_busy) {
  uint64_t pfn = UINT64_MAX;
  if (bh__likely(pcp_allowed_order(z->arena, order) && !pcp_busy)) {
    pfn = rmqueue_pcplist(z, order, ac, alloc_flags);
    if (pfn != UINT64_MAX)
      goto out;
  }
  pfn = rmqueue_buddy(z, order, ac, alloc_flags);
out:
  boosted_wakeup(z, alloc_flags);
  return pfn;
}

/*
 * get_page_from_freelist: walk the zonelist (higher zones first, local node first) for the
 * first zone that passes its watermark and has a block.  Under ALLOC_NOFRAGMENT, reaching a
 * remote node or failing everywhere drops the flag and walks again, so that locality and then
 * avoiding fragmentation win, in that order.
 */
static uint64_t get_page_from_freelist_busy(bh_arena_t *a, const struct alloc_ctx *ac,
                                            unsigned order, unsigned alloc_flags, int *zone_out,
                                            int busy_zone) {
  const int *zl = a->zonelist[ac->node];
  int n = zonelist_len(a, ac);
retry:;
  bool no_fallback = alloc_flags & BH__ALLOC_NOFRAGMENT;
  for (int i = 0; i < n; i++) {
    bh_zone_t *z = &a->zones[zl[i]];
    if (z->type > ac->highest)
      continue;
    if (no_fallback && a->cfg.nr_nodes > 1 && z->node != ac->node) {
      alloc_flags &= ~(unsigned)BH__ALLOC_NOFRAGMENT;
      goto retry;
    }
    unsigned zflags = atomic_load_explicit(&z->flags, memory_order_relaxed);
    if (!(zflags & BH__ZONE_BELOW_HIGH)) {
      if (zone_watermark_fast(z, order, wmark_pages(z, BH__ALLOC_WMARK_HIGH), ac->highest,
                              alloc_flags))
        goto try_this_zone;
      atomic_fetch_or_explicit(&z->flags, BH__ZONE_BELOW_HIGH, memory_order_relaxed);
    }
    if (!zone_watermark_fast(z, order, wmark_pages(z, alloc_flags), ac->highest, alloc_flags)) {
      atomic_fetch_add_explicit(&z->wmark_fail, 1, memory_order_relaxed);
      continue;
    }
  try_this_zone:;
    bool busy = zl[i] == busy_zone;
    if (busy) /* the trylock failed once: a later visit (a NOFRAGMENT retry) tries again */
      busy_zone = -1;
    uint64_t pfn = rmqueue_zone(z, ac, order, alloc_flags, busy);
    if (pfn != UINT64_MAX) {
      if (bh__unlikely(alloc_flags & BH__ALLOC_HIGHATOMIC))
        reserve_highatomic_pageblock(z, pfn, order);
      *zone_out = zl[i];
      return pfn;
    }
  }
  if (no_fallback) {
    bh_zone_t *pz = &a->zones[ac->preferred];
    bh__zone_lock(pz);
    pz->ev[BH_STAT_nofragment_retry]++;
    bh__zone_unlock(pz);
    alloc_flags &= ~(unsigned)BH__ALLOC_NOFRAGMENT;
    goto retry;
  }
  return UINT64_MAX;
}

static uint64_t get_page_from_freelist(bh_arena_t *a, const struct alloc_ctx *ac, unsigned order,
                                       unsigned alloc_flags, int *zone_out) {
  return get_page_from_freelist_busy(a, ac, order, alloc_flags, zone_out, -1);
}

static inline int gfp_zone(unsigned gfp) {
  if (gfp & BH_GFP_DMA)
    return BH_ZONE_DMA;
  if (gfp & BH_GFP_DMA32)
    return BH_ZONE_DMA32;
  if ((gfp & BH_GFP_MOVABLE) && (gfp & BH_GFP_HIGHMEM))
    return BH_ZONE_MOVABLE;
  return BH_ZONE_NORMAL;
}

static inline int gfp_migratetype(unsigned gfp) {
  if (gfp & BH_GFP_MOVABLE)
    return BH_MT_MOVABLE;
  if (gfp & BH_GFP_RECLAIMABLE)
    return BH_MT_RECLAIMABLE;
  return BH_MT_UNMOVABLE;
}

int bh_gfp_zone(unsigned gfp) { return gfp_zone(gfp); }
int bh_gfp_migratetype(unsigned gfp) { return gfp_migratetype(gfp); }

/* alloc_fast's answer when the preferred zone passed its watermark but its pcp lock was taken */
#define BH__FAST_PCP_BUSY (UINT64_MAX - 1)

/* The mark the first zone is checked against: get_page_from_freelist checks the high mark
 * until the zone is first found below it (ZONE_BELOW_HIGH), then the request's own. */
static inline __attribute__((always_inline)) uint64_t first_zone_mark(const bh_zone_t *z,
                                                                      unsigned alloc_flags) {
  unsigned zflags = atomic_load_explicit(&z->flags, memory_order_relaxed);
  return wmark_pages(z, (zflags & BH__ZONE_BELOW_HIGH) ? alloc_flags : BH__ALLOC_WMARK_HIGH);
}

/* rmqueue_pcplist's common case: a block off the slot's pcp list of the request's type, or
 * UINT64_MAX (the list is empty: nothing changed) or BH__FAST_PCP_BUSY. */
static inline __attribute__((always_inline)) uint64_t
pcp_fast_take(bh_arena_t *a, bh_zone_t *z, const struct alloc_ctx *ac, unsigned order) {
  bh__pcp_t *pcp = &z->pcp[ac->slot];
  if (bh__unlikely(!bh__pcp_trylock(pcp)))
    return BH__FAST_PCP_BUSY;
  uint32_t head = pcp->head + order_to_pindex(a, ac->mt, order);
  if (bh__unlikely(bh__list_empty(a, head))) {
    bh__pcp_unlock(pcp);
    return UINT64_MAX;
  }
  pcp->free_count >>= 1; /* as rmqueue_pcplist does */
  uint32_t pfn = pcp_take(a, z, pcp, head, order, ac);
  bh__pcp_unlock(pcp);
  return pfn;
}

/*
 * The fast path of get_page_from_freelist: the preferred zone (the first of the zonelist)
 * passes its watermark and the pcp list of the request's type has a block.  It does what the
 * zonelist walk does for its first zone, without the walk.  Anything else (a failed check,
 * the first time BELOW_HIGH must be set, an empty list to refill) returns UINT64_MAX before
 * any side effect, and the caller takes the full path; a busy pcp returns BH__FAST_PCP_BUSY,
 * and the full path starts without that zone's pcp, as rmqueue_pcplist's one failed trylock
 * sends rmqueue to the buddy lists (6.12 mm/page_alloc.c:3112-3116, :2758-2763).
 */
static inline __attribute__((always_inline)) uint64_t
alloc_fast(bh_arena_t *a, const struct alloc_ctx *ac, unsigned order, unsigned alloc_flags) {
  bh_zone_t *z = &a->zones[ac->preferred];
  if (bh__unlikely(!zone_watermark_fast(z, order, first_zone_mark(z, alloc_flags), ac->highest,
                                        alloc_flags)))
    return UINT64_MAX;
  uint64_t pfn = pcp_fast_take(a, z, ac, order);
  if (bh__likely(pfn < BH__FAST_PCP_BUSY))
    boosted_wakeup(z, alloc_flags);
  return pfn;
}

static inline bool discarded_any(const bh_arena_t *a, uint64_t pfn, unsigned order) {
  if (bh__likely(!atomic_load_explicit(&a->any_discarded, memory_order_relaxed)))
    return false;
  if (order < 6) {
    uint64_t w = atomic_load_explicit(&a->discarded[pfn >> 6], memory_order_relaxed);
    uint64_t mask = ((1ull << (1u << order)) - 1) << (pfn & 63);
    return w & mask;
  }
  return true; /* the reporter scans whole words */
}

static inline __attribute__((always_inline)) void prep_new_page(bh_arena_t *a, uint64_t pfn,
                                                                unsigned order, unsigned gfp) {
  if (bh__unlikely(discarded_any(a, pfn, order)))
    bh__discard_on_alloc(a, pfn, order);
  if ((gfp & BH_GFP_ZERO) && a->base)
    memset(a->base + (pfn << BH_PAGE_SHIFT), 0, BH_PAGE_SIZE << order);
}

int bh__preferred_zone(const bh_arena_t *a, int node, int highest) {
  for (int i = 0; i < a->zonelist_len[node]; i++)
    if (a->zones[a->zonelist[node][i]].type <= highest)
      return a->zonelist[node][i];
  return -1;
}

/* Flags Linux's gfp_zone() treats as GFP_ZONE_BAD: two zone modifiers at once. */
static bool gfp_zone_bad(unsigned gfp) {
  unsigned z = gfp & (BH_GFP_DMA | BH_GFP_DMA32 | BH_GFP_HIGHMEM);
  return z & (z - 1);
}

/*
 * Decodes every valid gfp once per node: the zone and migratetype of the request, its
 * preferred zone and ALLOC_NOFRAGMENT, GFP_ZONE_BAD.  Also the orders with pcp lists.
 */
int bh__build_gfp_ctx(bh_arena_t *a) {
  unsigned nr = BH__GFP_VALID + 1;
  a->gfp_ctx = malloc(sizeof(*a->gfp_ctx) * nr * a->cfg.nr_nodes);
  if (!a->gfp_ctx)
    return BH_ENOMEM;
  for (unsigned n = 0; n < a->cfg.nr_nodes; n++)
    for (unsigned gfp = 0; gfp < nr; gfp++) {
      int highest = gfp_zone(gfp);
      int mt = a->cfg.mobility_grouping ? gfp_migratetype(gfp) : BH_MT_UNMOVABLE;
      int pz = bh__preferred_zone(a, (int)n, highest);
      uint32_t e = (uint32_t)(pz + 1) | (uint32_t)highest << BH__GC_HIGHEST_SHIFT |
                   (uint32_t)mt << BH__GC_MT_SHIFT;
      /* the fast path's alloc_flags: the low watermark (min with NOFALLBACK_WMARK),
       * ALLOC_KSWAPD from __GFP_KSWAPD_RECLAIM, and alloc_flags_nofragment: the preferred
       * zone is Normal; with more than one node, a DMA32 zone must also lie below it (on one
       * node Linux assumes there is one) */
      uint32_t flags = (gfp & BH_GFP_NOFALLBACK_WMARK) ? BH__ALLOC_WMARK_MIN : BH__ALLOC_WMARK_LOW;
      if (!(gfp & BH_GFP_NO_KSWAPD))
        flags |= BH__ALLOC_KSWAPD;
      if (pz >= 0 && nofragment_zone(a, &a->zones[pz]))
        flags |= BH__ALLOC_NOFRAGMENT;
      e |= flags << BH__GC_FLAGS_SHIFT;
      if (gfp_zone_bad(gfp))
        e |= BH__GC_BAD;
      a->gfp_ctx[n * nr + gfp] = e;
    }
  a->pcp_orders = 0;
  if (a->cfg.pcp) {
    a->pcp_orders = (1u << (BH__PAGE_ALLOC_COSTLY_ORDER + 1)) - 1;
    if (a->cfg.pcp_thp)
      a->pcp_orders |= 1u << a->pb_order;
  }
  a->fast_slots = a->cfg.pcp && a->cfg.pcp_key == BH_PCP_PER_THREAD ? a->cfg.nr_cpus : 0;
  return BH_OK;
}

/* gfp_to_alloc_flags: the slow path's flags. */
static unsigned gfp_to_alloc_flags(unsigned gfp, unsigned order) {
  unsigned alloc_flags = BH__ALLOC_WMARK_MIN;
  if (gfp & BH_GFP_HIGH)
    alloc_flags |= BH__ALLOC_MIN_RESERVE;
  if (!(gfp & BH_GFP_NO_KSWAPD))
    alloc_flags |= BH__ALLOC_KSWAPD;
  if ((gfp & BH_GFP_ATOMIC) && !(gfp & BH_GFP_NOMEMALLOC)) {
    alloc_flags |= BH__ALLOC_NON_BLOCK;
    if (order > 0 && (alloc_flags & BH__ALLOC_MIN_RESERVE))
      alloc_flags |= BH__ALLOC_HIGHATOMIC;
  }
  return alloc_flags;
}

/*
 * should_reclaim_retry with nothing reclaimable: retry (at most MAX_RECLAIM_RETRIES times in a
 * row) while some zone would pass its min watermark for the request, and otherwise, before
 * giving up, while unreserve_highatomic_pageblock(force) finds a block to give back.
 */
static bool should_reclaim_retry(bh_arena_t *a, const struct alloc_ctx *ac, unsigned order,
                                 unsigned alloc_flags, int *no_progress_loops) {
  bool ret = false;
  if (++*no_progress_loops <= BH__MAX_RECLAIM_RETRIES) {
    const int *zl = a->zonelist[ac->node];
    for (int i = 0; i < zonelist_len(a, ac) && !ret; i++) {
      bh_zone_t *z = &a->zones[zl[i]];
      if (z->type <= ac->highest)
        ret = bh__zone_watermark_ok(z, order, wmark_pages(z, BH__ALLOC_WMARK_MIN), ac->highest,
                                    alloc_flags,
                                    atomic_load_explicit(&z->free_pages, memory_order_relaxed));
    }
  }
  return ret || unreserve_highatomic_pageblock(a, ac, true);
}

/*
 * __alloc_pages_slowpath, for a guest with nothing to reclaim and no OOM killer: wake kswapd
 * (unless __GFP_KSWAPD_RECLAIM is missing: BH_GFP_NO_KSWAPD) and try the min watermark with
 * the reserves the request may use; a request that cannot block (BH_GFP_ATOMIC) stops after
 * the second try.  One that may block would enter direct reclaim, which makes no progress
 * here, so neither the pcp drain nor the unforced unreserve that follow a successful reclaim
 * happen (unless cfg.reclaim_progress says reclaim progresses); a costly order (> 3) then
 * fails, a smaller one retries as should_reclaim_retry allows (with progress too: nothing
 * reclaimed makes its watermark check pass).  Direct compaction is not modelled.  Returns the
 * pfn or UINT64_MAX.
 */
static uint64_t alloc_slowpath(bh_arena_t *a, const struct alloc_ctx *ac, unsigned order,
                               int *zid) {
  unsigned alloc_flags = gfp_to_alloc_flags(ac->gfp, order);
  if (alloc_flags & BH__ALLOC_KSWAPD)
    wake_all_kswapds(a, ac, order);
  uint64_t pfn = get_page_from_freelist(a, ac, order, alloc_flags, zid);
  int no_progress_loops = 0;
  while (pfn == UINT64_MAX) {
    if (alloc_flags & BH__ALLOC_KSWAPD)
      wake_all_kswapds(a, ac, order);
    pfn = get_page_from_freelist(a, ac, order, alloc_flags, zid);
    if (pfn != UINT64_MAX || (ac->gfp & BH_GFP_ATOMIC))
      break;
    if (a->cfg.reclaim_progress) {
      /* __alloc_pages_direct_reclaim after a reclaim that made progress */
      unreserve_highatomic_pageblock(a, ac, false);
      bh_drain_pcp(a);
      pfn = get_page_from_freelist(a, ac, order, alloc_flags, zid);
      if (pfn != UINT64_MAX)
        break;
    }
    if (order > BH__PAGE_ALLOC_COSTLY_ORDER ||
        !should_reclaim_retry(a, ac, order, alloc_flags, &no_progress_loops))
      break;
  }
  return pfn;
}

/* The request's context, from the gfp table of the slot's node; returns the table's entry
 * (BH__GC_BAD: a mask the allocator refuses; then ac is not to be used). */
static inline __attribute__((always_inline)) uint32_t
alloc_ctx_init(const bh_arena_t *a, int slot, unsigned gfp, struct alloc_ctx *ac) {
  ac->slot = slot;
  ac->node = a->cfg.nr_nodes == 1 ? 0 : slot % (int)a->cfg.nr_nodes;
  uint32_t gc = a->gfp_ctx[(unsigned)ac->node * (BH__GFP_VALID + 1) + gfp];
  ac->highest = (int)(gc >> BH__GC_HIGHEST_SHIFT) & 7;
  ac->mt = (int)(gc >> BH__GC_MT_SHIFT) & 7;
  ac->gfp = gfp;
  ac->preferred = (int)(gc & BH__GC_ZONE_MASK) - 1;
  return gc;
}

/*
 * bh_alloc_pfn's body, inlined into it and into bh_alloc_pages so that the pointer interface
 * pays no call of its own (the same holds for free_pfn below).  pcp_busy: the pointer
 * interface's fast path already found the calling slot's pcp lock taken.
 */
static inline __attribute__((always_inline)) int
alloc_pfn(bh_arena_t *a, unsigned gfp, unsigned order, int cpu, uint64_t *pfn_out, bool pcp_busy) {
  if (!a || !pfn_out || order > a->max_order || (gfp & ~BH__GFP_VALID))
    return BH_EINVAL;
  struct alloc_ctx ac;
  uint32_t gc = alloc_ctx_init(a, pcp_slot(a, cpu), gfp, &ac);
  if (bh__unlikely(gc & BH__GC_BAD))
    return BH_EINVAL;
  if (bh__unlikely(ac.preferred < 0))
    return BH_ENOSPC;

  unsigned alloc_flags = gc >> BH__GC_FLAGS_SHIFT;

  int zid = -1, busy_zone = pcp_busy ? ac.preferred : -1;
  uint64_t pfn = UINT64_MAX;
  if (bh__likely(!pcp_busy && pcp_allowed_order(a, order) && !(gfp & BH_GFP_NOFALLBACK_WMARK))) {
    pfn = alloc_fast(a, &ac, order, alloc_flags);
    if (bh__unlikely(pfn == BH__FAST_PCP_BUSY)) {
      busy_zone = ac.preferred;
      pfn = UINT64_MAX;
    }
  }
  if (pfn == UINT64_MAX)
    pfn = get_page_from_freelist_busy(a, &ac, order, alloc_flags, &zid, busy_zone);
  else
    zid = ac.preferred;
  if (pfn == UINT64_MAX)
    pfn = alloc_slowpath(a, &ac, order, &zid);
  if (pfn == UINT64_MAX) {
    bh_zone_t *z = &a->zones[ac.preferred];
    bh__zone_lock(z);
    z->ev[BH_STAT_alloc_fail]++;
    z->ev[BH_STAT_alloc_fail_pages] += 1ull << order;
    bh__zone_unlock(z);
    return BH_ENOSPC;
  }
  prep_new_page(a, pfn, order, gfp);
  *pfn_out = pfn;
  return BH_OK;
}

int bh_alloc_pfn(bh_arena_t *a, unsigned gfp, unsigned order, int cpu, uint64_t *pfn_out) {
  return alloc_pfn(a, gfp, order, cpu, pfn_out, false);
}

/* ---------------------------------------------------------------------------------------- */
/* Freeing: validation, pcp or zone                                                          */
/* ---------------------------------------------------------------------------------------- */

/* check_free's checks after the bound: for a pfn known to be in the arena (the pointer
 * interface's fast free has it from an offset below the mapping's size). */
static inline __attribute__((always_inline)) int check_free_in_arena(const bh_arena_t *a,
                                                                     uint64_t pfn, unsigned order) {
  if (order > a->max_order)
    return BH_EINVAL;
  if (pfn & ((1ull << order) - 1))
    return BH_EALIGN;
  const bh__page_t *p = &a->pages[pfn];
  if ((bh__pg_flags(p) & (BH__PG_ALLOC | BH__PG_NOPAGE)) != BH__PG_ALLOC)
    return BH_ENOTALLOC; /* not allocated, or no page (outside a zone's span) */
  if (bh__pg_order(p) != order)
    return BH_EORDER;
  return BH_OK;
}

static inline __attribute__((always_inline)) int check_free(const bh_arena_t *a, uint64_t pfn,
                                                            unsigned order) {
  if (pfn >= a->nr_pages)
    return BH_EFAULT;
  return check_free_in_arena(a, pfn, order);
}

/*
 * split_large_buddy: a block above the pageblock order is freed one pageblock at a time, each
 * with its own pageblock's type (they merge again if their types allow).  Zone lock held.
 */
static void split_large_buddy(bh_zone_t *z, uint64_t pfn, unsigned order) {
  bh_arena_t *a = z->arena;
  uint64_t end = pfn + (1ull << order);
  if (order > a->pb_order)
    order = a->pb_order;
  do {
    bh__free_one_page(z, pfn, order, bh__pb_mt(a, pfn), BH__FPI_NONE);
    pfn += 1ull << order;
  } while (pfn < end);
}

/* free_one_page: straight to the buddy lists under the zone lock (off the pcp fast path). */
static void free_one_page(bh_zone_t *z, uint64_t pfn, unsigned order) {
  bh__zone_lock(z);
  z->ev[BH_STAT_pgfree] += 1ull << order;
  z->ev[BH_STAT_free_calls]++;
  split_large_buddy(z, pfn, order);
  bh__zone_unlock(z);
  kswapd_revive(z);
}

/*
 * free_unref_page for a block the caller took off the allocator with the zone lock held
 * (compaction's migrated sources and left-over targets): onto the pcp list of slot `slot`
 * for the orders the pcp lists hold (if its lock is free), else to the buddy lists.
 */
void bh__free_pages_zone_locked(bh_zone_t *z, uint64_t pfn, unsigned order, int slot) {
  bh_arena_t *a = z->arena;
  bh__pg_set_flags(&a->pages[pfn], 0);
  if (pcp_allowed_order(a, order)) {
    int mt = bh__pb_mt(a, pfn);
    if (mt > BH_MT_RECLAIMABLE)
      mt = mt == BH_MT_ISOLATE ? -1 : BH_MT_MOVABLE;
    bh__pcp_t *pcp = &z->pcp[(unsigned)slot % a->cfg.nr_cpus];
    if (mt >= 0 && bh__pcp_trylock(pcp)) {
      free_to_pcp(z, pcp, pfn, order, mt, true);
      bh__pcp_unlock(pcp);
      return;
    }
  }
  z->ev[BH_STAT_pgfree] += 1ull << order;
  split_large_buddy(z, pfn, order);
}

/* pcp_busy: the CPU's pcp lock is known taken for this call (an interrupt's free inside a batched
 * free, as a trace shows it): free_unref_page's failed trylock, straight to the buddy lists. */
static inline __attribute__((always_inline)) int free_pfn(bh_arena_t *a, uint64_t pfn,
                                                          unsigned order, int cpu, bool pcp_busy) {
  /*
   * The check and the state change are not one atomic step: two threads freeing the same
   * block at once is a caller bug we detect only on a best-effort basis, as Linux does with
   * its refcount.  A single thread's double free is always caught.
   */
  int err = check_free(a, pfn, order);
  if (err)
    return err;
  bh_zone_t *z = bh__pfn_zone(a, pfn);
  bh__pg_set_flags(&a->pages[pfn], 0);
  if (bh__likely(pcp_allowed_order(a, order) && !pcp_busy)) {
    int mt = bh__pb_mt(a, pfn);
    if (bh__unlikely(mt > BH_MT_RECLAIMABLE)) {
      if (mt == BH_MT_ISOLATE) {
        free_one_page(z, pfn, order);
        return BH_OK;
      }
      mt = BH_MT_MOVABLE;
    }
    bh__pcp_t *pcp = &z->pcp[pcp_slot(a, cpu)];
    if (bh__pcp_trylock(pcp)) {
      pcp->ev[BH_STAT_free_calls]++;
      free_to_pcp(z, pcp, pfn, order, mt, false);
      bh__pcp_unlock(pcp);
      return BH_OK;
    }
  }
  free_one_page(z, pfn, order);
  return BH_OK;
}

int bh_free_pfn(bh_arena_t *a, uint64_t pfn, unsigned order, int cpu) {
  if (!a)
    return BH_EINVAL;
  return free_pfn(a, pfn, order, cpu, false);
}

int bh__free_pfn_locked(bh_arena_t *a, uint64_t pfn, unsigned order) {
  if (!a)
    return BH_EINVAL;
  return free_pfn(a, pfn, order, -1, true);
}

/*
 * The pointer interface has a fast path of its own for the common case: an order-0 request
 * whose preferred zone passes the order-0 watermark shortcut, on the calling thread's own pcp
 * slot, with a block on its pcp list (and, to free, a block that goes back onto one under the
 * high mark).  It does what alloc_pfn and free_pfn do in that case, with no call, so that it
 * needs no saved registers.  Anything else leaves it before any side effect for the general
 * path (the same checks again, in their order), or, once the block is taken, for the
 * out-of-line rest of the work.
 */
/* The general path (alloc_pfn); pcp_busy: the fast path found its pcp lock taken. */
static __attribute__((noinline)) void *
alloc_pages_general(bh_arena_t *a, unsigned gfp, unsigned order, int *err, bool pcp_busy) {
  uint64_t pfn;
  int e = !a ? BH_EINVAL : a->base ? alloc_pfn(a, gfp, order, -1, &pfn, pcp_busy) : BH_ENOTSUP;
  if (err)
    *err = e;
  return e ? NULL : a->base + (pfn << BH_PAGE_SHIFT);
}

static inline void *alloc_pages_slow(bh_arena_t *a, unsigned gfp, unsigned order, int *err) {
  return alloc_pages_general(a, gfp, order, err, false);
}

/* The end of rmqueue and prep_new_page, for a block the fast path took when either has work. */
static __attribute__((noinline)) void *
alloc_pages_finish(bh_zone_t *z, uint64_t pfn, unsigned alloc_flags, unsigned gfp, int *err) {
  bh_arena_t *a = z->arena;
  boosted_wakeup(z, alloc_flags);
  prep_new_page(a, pfn, 0, gfp);
  if (err)
    *err = BH_OK;
  return a->base + (pfn << BH_PAGE_SHIFT);
}

void *bh_alloc_pages(bh_arena_t *a, unsigned gfp, unsigned order, int *err) {
  if (bh__unlikely(!a || !a->base || order || (gfp & ~BH__GFP_VALID) ||
                   (gfp & BH_GFP_NOFALLBACK_WMARK)))
    return alloc_pages_slow(a, gfp, order, err);
  unsigned slot = (unsigned)tls_slot; /* pcp_slot's common case; -1 is never below nr_cpus */
  if (bh__unlikely(slot >= a->fast_slots))
    return alloc_pages_slow(a, gfp, order, err);
  struct alloc_ctx ac;
  uint32_t gc = alloc_ctx_init(a, (int)slot, gfp, &ac);
  if (bh__unlikely((gc & BH__GC_BAD) || ac.preferred < 0))
    return alloc_pages_slow(a, gfp, order, err);
  unsigned alloc_flags = gc >> BH__GC_FLAGS_SHIFT;

  /* alloc_fast without the full watermark check: only zone_watermark_fast's shortcut */
  bh_zone_t *z = &a->zones[ac.preferred];
  if (bh__unlikely(!watermark_order0_ok(z,
                                        atomic_load_explicit(&z->free_pages, memory_order_relaxed),
                                        first_zone_mark(z, alloc_flags), ac.highest, alloc_flags)))
    return alloc_pages_slow(a, gfp, order, err);
  uint64_t pfn = pcp_fast_take(a, z, &ac, 0);
  if (bh__unlikely(pfn == BH__FAST_PCP_BUSY)) /* a remote drain: rmqueue_pcplist's one failed
                                               * trylock sends the first zone to its buddy lists */
    return alloc_pages_general(a, gfp, 0, err, true);
  if (bh__unlikely(pfn == UINT64_MAX))
    return alloc_pages_slow(a, gfp, order, err);

  if (bh__unlikely(
          (atomic_load_explicit(&z->flags, memory_order_relaxed) & BH__ZONE_BOOSTED_WATERMARK) ||
          atomic_load_explicit(&a->any_discarded, memory_order_relaxed) || (gfp & BH_GFP_ZERO)))
    return alloc_pages_finish(z, pfn, alloc_flags, gfp, err);
  if (err)
    *err = BH_OK;
  return a->base + ((uint64_t)pfn << BH_PAGE_SHIFT);
}

static __attribute__((noinline)) int free_pages_slow(bh_arena_t *a, void *addr, unsigned order) {
  if (!a)
    return BH_EINVAL;
  /* bh_addr_to_pfn, inlined */
  uintptr_t off = (uintptr_t)addr - (uintptr_t)a->base;
  if (!a->base || !addr || (uintptr_t)addr < (uintptr_t)a->base || off >= a->map_bytes)
    return BH_EFAULT;
  if ((uintptr_t)addr & (BH_PAGE_SIZE - 1))
    return BH_EALIGN;
  return free_pfn(a, (uint64_t)(off >> BH_PAGE_SHIFT), order, -1, false);
}

/* The fast free's block reached the pcp list's high mark: drain, then drop the pcp lock. */
static __attribute__((noinline)) int free_pages_over_high(bh_zone_t *z, bh__pcp_t *pcp,
                                                          unsigned pindex, int high) {
  pcp_over_high(z, pcp, pindex, high, false, false);
  bh__pcp_unlock(pcp);
  return BH_OK;
}

int bh_free_pages(bh_arena_t *a, void *addr, unsigned order) {
  unsigned slot = (unsigned)tls_slot;
  if (bh__unlikely(!a || order || slot >= a->fast_slots))
    return free_pages_slow(a, addr, order);
  /* bh_addr_to_pfn's checks: with a mapping, an address below it (NULL too) wraps `off`
   * past map_bytes, the size of the mapping */
  uintptr_t off = (uintptr_t)addr - (uintptr_t)a->base;
  if (bh__unlikely(!a->base || off >= a->map_bytes || ((uintptr_t)addr & (BH_PAGE_SIZE - 1))))
    return free_pages_slow(a, addr, order);
  uint64_t pfn = off >> BH_PAGE_SHIFT; /* below nr_pages: map_bytes is nr_pages pages */
  if (bh__unlikely(check_free_in_arena(a, pfn, 0)))
    return free_pages_slow(a, addr, order);
  bh__page_t *p = &a->pages[pfn];
  int mt = bh__pb_mt(a, pfn);
  if (bh__unlikely(mt > BH_MT_RECLAIMABLE))
    return free_pages_slow(a, addr, order);
  bh_zone_t *z = bh__pfn_zone(a, pfn);
  bh__pcp_t *pcp = &z->pcp[slot];
  if (bh__unlikely(!bh__pcp_trylock(pcp))) { /* free_pfn's busy pcp: the buddy lists, once */
    bh__pg_set_flags(p, 0);
    free_one_page(z, pfn, 0);
    return BH_OK;
  }

  /* free_pfn and free_to_pcp for order 0 */
  bh__pg_set_flags(p, 0);
  pcp->ev[BH_STAT_free_calls]++;
  bool free_high;
  int high = pcp_add(a, z, pcp, pfn, 0, mt, &free_high);
  if (bh__unlikely(high >= 0))
    return free_pages_over_high(z, pcp, order_to_pindex(a, mt, 0), high);
  bh__pcp_unlock(pcp);
  return BH_OK;
}

void *bh_pfn_to_addr(const bh_arena_t *a, uint64_t pfn) {
  if (!a || !a->base || pfn >= a->nr_pages)
    return NULL;
  return a->base + (pfn << BH_PAGE_SHIFT);
}

int64_t bh_addr_to_pfn(const bh_arena_t *a, const void *addr) {
  if (!a || !a->base || !addr)
    return -1;
  uintptr_t off = (uintptr_t)addr - (uintptr_t)a->base;
  if ((uintptr_t)addr < (uintptr_t)a->base || off >= a->map_bytes)
    return -1;
  return (int64_t)(off >> BH_PAGE_SHIFT);
}

/*
 * split_page: an allocated block of 2^order pages becomes 2^order allocated order-0 pages,
 * each freed on its own later (as the kernel does for non-compound high-order pages).
 */
int bh_split_pages(bh_arena_t *a, uint64_t pfn, unsigned order) {
  if (!a)
    return BH_EINVAL;
  int err = check_free(a, pfn, order);
  if (err)
    return err;
  bh_zone_t *z = bh__pfn_zone(a, pfn);
  bh__zone_lock(z);
  uint8_t mt = bh__pg_mt(&a->pages[pfn]);
  for (uint64_t i = 0; i < (1ull << order); i++)
    bh__pg_set_alloc(&a->pages[pfn + i], mt, 0);
  bh__zone_unlock(z);
  return BH_OK;
}

/* The mark decay_pcp_high lowers a mark high to, the count the kernel's rules see count. */
static int decayed_mark(const bh__pcp_t *pcp, int high, int count) {
  if (high <= pcp->high_min)
    return high;
  int h = high - (high >> 3), k = count - (pcp->batch << BH__PCP_BATCH_SCALE_MAX);
  if (h < k)
    h = k;
  return h > pcp->high_min ? h : pcp->high_min;
}

/* The mark decay_pcp_high lowers pcp's to. */
static int decayed_high(const bh__pcp_t *pcp) {
  return decayed_mark(pcp, pcp->high, kernel_count(pcp));
}

/* The trace's first drain of this pcp's CPU is this decay's, want pages long
 * (bh__pcp_decay_first): hidden blocks off while the replay's would drain more, then the new
 * mark, returned, lowered (not below high_min) while it would drain less. */
static __attribute__((noinline, cold)) int decay_first(bh_zone_t *z, bh__pcp_t *pcp, int want) {
  while (kernel_count(pcp) - decayed_high(pcp) > want && surplus_take(z, pcp))
    ;
  int h = decayed_high(pcp), l = kernel_count(pcp) - want;
  if (l < pcp->high_min)
    l = pcp->high_min;
  if (l >= h)
    return h;
  if (pcp->high == pcp->high_max) { /* the cap the kernel's mark decayed from: the least whose
                                     * decay gives l (decayed_mark) */
    int cap = l;
    while (cap - (cap >> 3) < l)
      cap++;
    if (decayed_mark(pcp, cap, kernel_count(pcp)) == l)
      lower_cap(z, pcp, cap);
  }
  atomic_fetch_add_explicit(&z->arena->pcp_deficit_pages, (uint64_t)(h - l), memory_order_relaxed);
  return l;
}

/*
 * The trace's first decay of this pcp's CPU after its mark was lowered (bh__pcp_decay_check),
 * want pages long.  pcp_deficit lowered the mark where the kernel's count stood higher than
 * the replay's against it: either its mark was lower or its count higher by pages the trace
 * never shows.  A decay tells them apart: it lowers the mark by an eighth of the mark itself
 * (mm/page_alloc.c:2425-2430 in 6.12), so the two drain differently.  Where the count's drains
 * want pages and the mark's do not, the mark goes back up and the pages are counted as the
 * kernel's (ghost: on no list, never drained).
 */
static __attribute__((noinline, cold)) void decay_check(bh_zone_t *z, bh__pcp_t *pcp) {
  int want = pcp->decay_check, m = pcp->lowered, count = kernel_count(pcp);
  int high = pcp->high + m < pcp->high_max ? pcp->high + m : pcp->high_max; /* as it was */
  pcp->decay_check = -1;
  if (m <= 0 || count - decayed_high(pcp) == want ||
      count + m - decayed_mark(pcp, high, count + m) != want)
    return;
  pcp->high = high;
  pcp->ghost += m;
  pcp->lowered = 0;
  atomic_fetch_add_explicit(&z->arena->pcp_ghost_pages, (uint64_t)m, memory_order_relaxed);
}

/*
 * decay_pcp_high (6.12), run by the vmstat worker every second: lower each pcp's high mark by
 * an eighth (not below high_min, nor more than a scaled batch below the count) and return what
 * is above it, so idle pcp lists give their pages back to the buddy lists.
 */
static void decay_pcp_high(bh_zone_t *z, bh__pcp_t *pcp) {
  bh__pcp_lock(pcp);
  if (bh__unlikely(pcp->decay_check >= 0))
    decay_check(z, pcp);
  int want = pcp->decay_first;
  pcp->decay_first = -1;
  pcp->high = bh__unlikely(want >= 0) ? decay_first(z, pcp, want) : decayed_high(pcp);
  /* returned in batch-sized calls, each starting again from list 0 */
  for (int to_drain = kernel_count(pcp) - pcp->high; to_drain > 0; to_drain -= pcp->batch)
    free_pcppages_bulk(z, pcp, to_drain < pcp->batch ? to_drain : pcp->batch, 0, false);
  bh__pcp_unlock(pcp);
}

void bh_vmstat_tick(bh_arena_t *a) {
  for (int i = 0; a && i < a->nr_zones; i++)
    for (unsigned c = 0; a->zones[i].pcp && c < a->cfg.nr_cpus; c++)
      decay_pcp_high(&a->zones[i], &a->zones[i].pcp[c]);
}

void bh__vmstat_tick_cpu(bh_arena_t *a, int cpu) {
  unsigned c = bh__cpu_slot(a, cpu);
  for (int i = 0; i < a->nr_zones; i++)
    if (a->zones[i].pcp)
      decay_pcp_high(&a->zones[i], &a->zones[i].pcp[c]);
}

/* ---------------------------------------------------------------------------------------- */
/* For the arena's other units (populate.c)                                                  */
/* ---------------------------------------------------------------------------------------- */

void bh__add_to_free_list(bh_zone_t *z, uint64_t pfn, unsigned order, int mt, bool tail) {
  add_to_free_list(z, pfn, order, mt, tail);
  account_freepages(z, (int64_t)(1ull << order), mt);
}

unsigned bh__pcp_pindex(const bh_arena_t *a, int mt, unsigned order) {
  return order_to_pindex(a, mt, order);
}

bool bh__pcp_order(const bh_arena_t *a, unsigned order) { return pcp_allowed_order(a, order); }
