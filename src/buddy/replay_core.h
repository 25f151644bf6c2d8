/*
 * The allocator core as a replay drives it (src/replay): what a replay that follows a
 * kernel's trace asks of the core beyond the public API (bh_alloc_pfn_at, bh_arena_populate,
 * bh_arena_adopt and the strategy API).  The replay includes this header, never
 * buddy/internal.h: the page descriptors, the zones and the lists stay the core's, and every
 * page flag is read here, the way the core reads it (relaxed atomics, the zone lock where
 * another thread may change the block).  buddy/internal.h includes this header, so each
 * function is declared once.
 *
 *   - the state of a block: free, allocated before the trace, on a pcp list, where it is;
 *   - the start state: the blocks on pcp lists, the notify a reporting machine has pending;
 *   - the pcp-event hooks: the pcp lists and fallbacks moved as the kernel's trace says;
 *   - the written-page model: the owner's bitmap of written pages against the discarded one;
 *   - zone queries: a pfn's zone, a zone's reporting order, the free block counts.
 */
#ifndef BH_BUDDY_REPLAY_CORE_H
#define BH_BUDDY_REPLAY_CORE_H

#include "common/compiler.h"

#include <buddyhint.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct bh_zone;

/*
 * The order the trace shows the kernel first taking the start's free blocks in: rank[pfn], 1 +
 * the block's place in that order, 0 for none (the caller clears an entry when an event
 * touches its page, and keeps the array until it calls this again with NULL).  A block that a
 * hinting strategy puts back on a list's tail (bh_zone_putback) with a rank goes before the
 * ranked blocks at the tail that were taken later: page reporting puts a batch back last
 * isolated first (mm/page_reporting.c:106-135), which reverses the order the blocks lay in,
 * and the takes after it show the order the kernel's put-back left, not the start's.
 */
BH__INTERNAL void bh__take_rank_set(bh_arena_t *a, const uint32_t *rank, uint64_t n);

/* ---- the state of a block ---- */

/* Whether every page of the block of 2^order pages at pfn is free (on the buddy or the pcp
 * lists; not allocated, not isolated by hinting).  False for a block past the arena's end.
 * Reads the page flags under each zone's lock. */
BH__INTERNAL bool bh__block_free(const bh_arena_t *a, uint64_t pfn, unsigned order);

/* Whether page pfn (below bh_arena_pages) is memory allocated before the trace
 * (bh_arena_populate's PG_PRETRACE pages, which bh_arena_adopt takes over). */
BH__INTERNAL bool bh__page_pretrace(const bh_arena_t *a, uint64_t pfn);

/* Sets bit p of map (bh_arena_pages / 64 words, rounded up) for each page p that heads a
 * block on a pcp list: where the start state put blocks on them.  Other bits are kept. */
BH__INTERNAL void bh__pcp_heads(const bh_arena_t *a, uint64_t *map);

/*
 * Where the arena holds the block of `order` at pfn, for a pcp event that did not apply:
 * BH__PCPAT_PCP (on a pcp list at that order; *cpu is the list's CPU), BH__PCPAT_BUDDY (inside
 * a free block on the free lists), BH__PCPAT_ALLOC (inside an allocated block),
 * BH__PCPAT_PRETRACE (inside memory allocated before the trace), BH__PCPAT_SPLIT (its pages
 * are in several blocks, or on a pcp list at another order), BH__PCPAT_ISOLATED (taken off
 * the free lists by hinting), BH__PCPAT_INVALID (outside the arena or its zones' pcp lists, not
 * a pcp order, unaligned).  Reads the arena without its locks, as bh__where_is does (the
 * thread that allocates and frees; flags by relaxed loads).
 */
enum bh__pcp_at {
  BH__PCPAT_PCP,
  BH__PCPAT_BUDDY,
  BH__PCPAT_ALLOC,
  BH__PCPAT_PRETRACE,
  BH__PCPAT_SPLIT,
  BH__PCPAT_ISOLATED,
  BH__PCPAT_INVALID,
};
BH__INTERNAL enum bh__pcp_at bh__pcp_block_where(const bh_arena_t *a, uint64_t pfn, unsigned order,
                                                 int *cpu);

/*
 * populate.c: where the block of `order` at pfn is now, for a replay that asks why the
 * allocator chose another block than the kernel did (placement agreement by cause).  Fills
 * *where with one of BH__WHERE_* (BH_WHERE_* in include/buddyhint/replay.h); for a block on a pcp
 * list also its CPU and its position from the list's head (0: the head; capped at 255).  The
 * caller is the thread that allocates and frees (a replay's), the only one that changes
 * allocated blocks; a hinting worker may at the same time isolate a buddy block or put one
 * back (under the zone lock), whose flags are read with relaxed loads, so such a block is
 * classed by either of its states, and a paced replay's worker drains pcp lists (its vmstat
 * tick): links are followed on pcp lists only, under the list's pcp lock.
 */
enum {
  BH__WHERE_PCP_HEAD,
  BH__WHERE_PCP_DEEPER,
  BH__WHERE_PCP_FAR,
  BH__WHERE_PCP_OTHER_LIST,
  BH__WHERE_PCP_OTHER_CPU,
  BH__WHERE_BUDDY,
  BH__WHERE_BUDDY_INSIDE,
  BH__WHERE_ALLOCATED,
  BH__WHERE_PRETRACE,
  BH__WHERE_OTHER,
  BH__WHERE_NR
};
typedef struct bh__where {
  int where, cpu;
  unsigned pos;
} bh__where_t;
BH__INTERNAL void bh__where_is(const bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu,
                               bh__where_t *w);

/* ---- the start state ---- */

/* The orders that have pcp lists, a bit each (0 without pcp lists): bh_populate_t's. */
BH__INTERNAL unsigned bh__pcp_orders(const bh_arena_t *a);

/*
 * A machine that reports free pages and starts with a free block at or above a zone's
 * reporting order that it has not reported, and that no split can have left (the top order,
 * or the lower half of its parent), has a pass pending: each zone that holds such a block
 * notifies the attached strategy once (page_reporting_notify_free), as the free that made
 * the block did.  So does any unreported block at or above the order that holds one of the
 * nfreed freed runs: the frees of the 2 s before the start map was read (a recording's
 * start/window_frees), whose pass had not run by the start.  Not a block that overlaps one of
 * the n unseen runs: free blocks the start map did not show free, whose free, if any, nothing
 * records.  A strategy without a notify hook must not be attached.
 */
BH__INTERNAL void bh__notify_unreported(bh_arena_t *a, const bh_block_run_t *unseen, size_t n,
                                        const bh_block_run_t *freed, size_t nfreed);

/* ---- the pcp-event hooks ---- */

/*
 * populate.c: the pcp lists moved as a kernel's trace says (mm_page_alloc_zone_locked with
 * percpu_refill, mm_page_pcpu_drain), for a replay that follows the kernel's own pfns.
 * bh__pcp_refill_at: the free block of `order` at pfn (inside a buddy block, which is split
 * around it as expand() would) goes to the tail of cpu's pcp list for (mt, order), as
 * rmqueue_bulk puts it (mt outside the pcp types: its pageblock's).  bh__pcp_drain_at: the
 * block of `order` at pfn on a pcp list goes back to the buddy lists, merging
 * (free_pcppages_bulk's __free_one_page).  bh__pcp_free_nodrain: a free onto the head of cpu's
 * pcp list with no high/batch drain decision (the trace's drain events make them); other
 * blocks and bad frees go to bh_free_pfn.  Return BH_OK, BH_EBUSY (the block is not where the
 * event says), BH_EINVAL/BH_EFAULT/BH_EALIGN (not a pcp order, outside, unaligned), or
 * bh_free_pfn's errors.
 */
BH__INTERNAL int bh__pcp_refill_at(bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu);
BH__INTERNAL int bh__pcp_drain_at(bh_arena_t *a, uint64_t pfn, unsigned order);
BH__INTERNAL int bh__pcp_free_nodrain(bh_arena_t *a, uint64_t pfn, unsigned order, int cpu);

/* A free that finds its CPU's pcp lock taken (an interrupt inside a batched free): straight to
 * the buddy lists, as free_unref_page's failed trylock sends it (free_one_page, Linux 6.12
 * mm/page_alloc.c:2761-2766).  bh_free_pfn's checks and errors. */
BH__INTERNAL int bh__free_pfn_locked(bh_arena_t *a, uint64_t pfn, unsigned order);

/*
 * A refill under allocator placement, at the trace's refill event (mm_page_alloc_zone_locked
 * with percpu_refill): if cpu's pcp list for (mt, order) in pfn's zone is empty, it is filled
 * as rmqueue_pcplist fills it for the allocation that is under way (nr_pcp_alloc blocks,
 * rmqueue_bulk, mm/page_alloc.c:3082-3092 in 6.12), with the arena's own blocks; pfn only
 * names the zone.  That allocation's event, which the kernel traces after it has zeroed the
 * pages (post_alloc_hook, :1601, before the trace at :4881), then takes the list's head.  The
 * fast path's alloc_flags (the low watermark, ALLOC_KSWAPD, ALLOC_NOFRAGMENT in a Normal
 * zone); the watermark is not checked again (the kernel's passed: it refilled).  Returns the
 * blocks taken, 0 if the list was not empty or nothing could be taken.
 */
BH__INTERNAL int bh__pcp_refill_empty(bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu);

/* The vmstat worker's run on one CPU slot (cpu modulo the slots): the pcp decay of each zone's
 * pcp of that slot, as bh_vmstat_tick does for all of them (decay_pcp_high, Linux 6.12
 * mm/page_alloc.c:2412, from refresh_cpu_vm_stats, mm/vmstat.c:839). */
BH__INTERNAL void bh__vmstat_tick_cpu(bh_arena_t *a, int cpu);

/* The block of `order` on a pcp list at pfn moves to the tail of cpu's list for (mt, order),
 * as a refill puts it: BH_OK, or BH_EBUSY if it is not there. */
BH__INTERNAL int bh__pcp_relist_at(bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu);
/* The block of `order` at pfn, memory allocated before the trace (bh_arena_populate's
 * PG_PRETRACE pages), goes to the tail of cpu's pcp list for (mt, order), as a refill puts
 * it: for a refill the start snapshot saw done.  BH_OK, or BH_EBUSY if its pages are not all
 * such memory (or its pageblock is isolated). */
BH__INTERNAL int bh__pcp_adopt_at(bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu);

/*
 * The start's hidden pcp blocks (the pages zoneinfo counts on a CPU's lists beyond those the
 * trace shows), n of them, in the order the start state placed them: the blocks a CPU's
 * free may take off its lists while bh__pcp_calibrating says the kernel did not drain there.
 * Call after bh_arena_populate.  BH_OK or BH_ENOMEM (then none).
 */
BH__INTERNAL int bh__pcp_surplus_set(bh_arena_t *a, const bh_pcp_block_t *blocks, size_t n);
/*
 * Whether the trace shows CPU slot cpu's frees now below its pcp high mark (its first
 * mm_page_pcpu_drain is still to come).  While on, a free of that CPU that brings its pcp count
 * to the high mark without free_high does not drain: the start's hidden blocks of that pcp
 * go back to memory allocated before the trace, the latest placed first, until the count is
 * below the mark (zoneinfo's count, read before the trace began, held that many too many).
 * Pages so taken: bh__pcp_surplus_pages.
 */
BH__INTERNAL void bh__pcp_calibrating(bh_arena_t *a, int cpu, bool on);
BH__INTERNAL uint64_t bh__pcp_surplus_pages(const bh_arena_t *a);
/*
 * Whether CPU slot cpu's next free is one a mm_page_pcpu_drain of the trace on that CPU
 * directly follows (a free that brought the kernel's count to the high mark), while the start
 * calibrates: the CPU's first drain after an order-0 free, or one after a THP free before it.
 * If that free leaves the pcp's count below the mark (order 0 and THP frees; orders 1 to 3
 * may drain by free_high), the mark is lowered to the count that free reaches (not below
 * high_min), and the free drains as the kernel's did.  The switch is for one free: that free
 * turns it off.  Pages the mark was lowered by: bh__pcp_deficit_pages.
 */
BH__INTERNAL void bh__pcp_deficit(bh_arena_t *a, int cpu, bool on);
/*
 * CPU slot cpu's next pcp decay (bh__vmstat_tick_cpu) is the trace's first mm_page_pcpu_drain
 * on that CPU, pages long, its blocks between pfns lo and hi (in one zone, else nothing).
 * decay_pcp_high drains count - high once it has lowered the mark (mm/page_alloc.c:2412-2440
 * in 6.12), so the kernel's count stood that many above its new mark: where the replay's
 * would drain more, the start held too many (its hidden pages are taken off first, as
 * bh__pcp_calibrating's frees take them, bh__pcp_surplus_pages); where less, the new mark is
 * lowered (bh__pcp_deficit_pages), not below high_min.
 */
BH__INTERNAL void bh__pcp_decay_first(bh_arena_t *a, int cpu, uint64_t lo, uint64_t hi,
                                      uint64_t pages);
BH__INTERNAL uint64_t bh__pcp_deficit_pages(const bh_arena_t *a);
/*
 * CPU slot cpu's next pcp decay is the trace's first on that CPU after bh__pcp_deficit
 * lowered its mark, pages long, its blocks between pfns lo and hi (one zone, else nothing):
 * where the kernel's count being that much higher (the mark as it was) gives that drain and
 * the lowered mark does not, the mark goes back up and the pages count as the kernel's, on no
 * list (bh__pcp_ghost_pages).
 */
BH__INTERNAL void bh__pcp_decay_check(bh_arena_t *a, int cpu, uint64_t lo, uint64_t hi,
                                      uint64_t pages);
BH__INTERNAL uint64_t bh__pcp_ghost_pages(const bh_arena_t *a);
/*
 * alloc_pages_bulk's pages (mm/page_alloc.c:4659-4818 in 6.12) come off a pcp list by
 * __rmqueue_pcplist without rmqueue_pcplist, whose free_count halving (:3126) they do not do.
 * The replay allocates such a page by the ordinary path between these two: the free_count of
 * every zone's pcp of cpu, kept, and put back.
 */
typedef struct bh__pcp_free_counts {
  int fc[BH_MAX_NODES * BH_NR_ZONE_TYPES];
} bh__pcp_free_counts_t;
BH__INTERNAL void bh__pcp_free_counts_keep(bh_arena_t *a, int cpu, bh__pcp_free_counts_t *k);
BH__INTERNAL void bh__pcp_free_counts_put(bh_arena_t *a, int cpu, const bh__pcp_free_counts_t *k);

/*
 * The recorded kernel tunes its pcp high marks, but its zoneinfo does not print high_max
 * (Linux 6.7 to 6.12 print "high:" alone): the arena's cap is zone_highsize() of the managed
 * pages now, while the kernel's was computed when its pcp lists were set up, before the init
 * memory and the initrd were freed, a few hundred pages lower.  From this call on, a
 * calibration of the start's pcp (bh__pcp_deficit, bh__pcp_decay_first) that lowers a mark
 * standing at the cap lowers the zone's cap, every CPU's, to it.  Pages it lowered the caps
 * by: bh__pcp_high_max_lowered.
 */
BH__INTERNAL void bh__pcp_high_max_unknown(bh_arena_t *a);
/*
 * The cap from the recording's kernel log (its "record" section's boot_freed_kb): the pages
 * freed after the pcp lists were set up, taken off the managed pages of the zone that holds
 * the kernel image and the initrd (DMA32 where there is one, else Normal; node 0) before
 * zone_highsize() (mm/page_alloc.c:5680-5723 in 6.12), not below a mark the start shows.
 * After the start state is populated; with bh__pcp_high_max_unknown only.
 */
BH__INTERNAL void bh__pcp_boot_cap(bh_arena_t *a, uint64_t freed_pages);
BH__INTERNAL uint64_t bh__pcp_high_max_lowered(const bh_arena_t *a);

/* Pages the pcp lists have returned to the buddy lists since the arena was made (every drain:
 * a free over the high mark, a decay, a drain of all). */
BH__INTERNAL uint64_t bh__pcp_drained_pages(const bh_arena_t *a);

/* whether order has pcp lists (pcp_allowed_order) */
BH__INTERNAL bool bh__pcp_order(const bh_arena_t *a, unsigned order);

/* populate.c: the free block of `order` at pfn, which the start snapshot shows reported, to
 * its list's tail (flagged reported if flag), as the kernel's report left it, without the
 * isolation's effects on its pageblock (they precede the snapshot).  False if pfn heads no
 * free block of that order. */
BH__INTERNAL bool bh__start_block_reported(bh_arena_t *a, uint64_t pfn, unsigned order, bool flag);

/*
 * populate.c: a fallback as a kernel's trace reports it (mm_page_alloc_extfrag), for a replay
 * that follows the kernel's own pfns.  bh__claim_block_at: a claim (change_ownership) of the
 * block of 2^order pages (fallback_order) at pfn: its pageblock (every pageblock of a block of
 * pageblock order or more) becomes mt's, the free blocks in it move to mt's lists.  Returns
 * how many pageblocks changed type (0: all were mt's already), or BH_EINVAL (mt not Unmovable,
 * Movable or Reclaimable; order above the arena's), BH_EFAULT (outside the arena or its zones'
 * spans), BH_EBUSY (an Isolate, HighAtomic or absent pageblock: nothing changed).
 * bh__count_fallback_at: the zone's extfrag counters, as a fallback of the arena's own counts them.
 */
BH__INTERNAL int bh__claim_block_at(bh_arena_t *a, uint64_t pfn, unsigned order, int mt);
BH__INTERNAL void bh__count_fallback_at(bh_arena_t *a, uint64_t pfn, unsigned fallback_order,
                                        bool claim);

/* ---- the written-page model (discard.c) ---- */

/* Allocates the arena's discarded-page bitmap (one bit per page, all clear) if it has none:
 * 1 if it did, 0 if there was one already, or BH_ENOMEM. */
BH__INTERNAL int bh__discard_enable(bh_arena_t *a);
/*
 * Marks pages [pfn, pfn + n) discarded; the bitmap must exist and the range lie in the arena.
 * Returns how many of the pages it marked were resident in the owner's model: written (set in
 * the bitmap of bh__discard_set_touched) and not discarded already; 0 without that bitmap.
 */
BH__INTERNAL uint64_t bh__discard_mark(bh_arena_t *a, uint64_t pfn, uint64_t n);
/* Pages currently marked discarded (0 if there is no bitmap), kept as bits change. */
BH__INTERNAL uint64_t bh__discarded_pages(const bh_arena_t *a);
/* Pages that reports discarded and allocations took again since (refaults), so far. */
BH__INTERNAL uint64_t bh__refault_pages(const bh_arena_t *a);
/*
 * Where the arena keeps its discarded-page bitmap: *map is that bitmap, NULL while there is
 * none (a reporter enables it when it attaches, and frees it when it is destroyed).  The
 * address is the arena's for its whole life: an owner reads it once and the bitmap through it.
 */
BH__INTERNAL _Atomic uint64_t *const *bh__discard_map(const bh_arena_t *a);
/*
 * Written pages, for an owner that models them (the replay's sim backing): `touched` is its
 * bitmap, one bit per page, set when a page is first written and never cleared, with at least
 * (nr_pages + 63) / 64 words, alive as long as the arena (NULL: none).  The core then keeps
 * the number of pages both written and discarded as its own bits change, so that the owner's
 * resident count, written minus that, costs no pass over the bitmaps.  The owner sets its bits
 * on its own thread, a reporter may mark on another: a page is never written while it is
 * being marked (it is isolated, not allocated), so the two meet on no bit they both change.
 * The bitmap must be all clear when it is set here.
 */
BH__INTERNAL void bh__discard_set_touched(bh_arena_t *a, const _Atomic uint64_t *touched);
/* bh__discard_on_touch's rare half: the pages of `hit` were written while discarded. */
BH__INTERNAL void bh__discard_touched_hit(bh_arena_t *a, uint64_t hit);
/*
 * The owner has just set the bits `fresh` of word w of its touched bitmap (bits that were
 * clear): those of them that are discarded count as written and discarded.  map is
 * bh__discard_map(a).  Inline, for every first write: one load and a test when none of them
 * is discarded, as allocation leaves them.
 */
static inline void bh__discard_on_touch(bh_arena_t *a, _Atomic uint64_t *const *map, uint64_t w,
                                        uint64_t fresh) {
  const _Atomic uint64_t *d = *map;
  if (d == NULL)
    return;
  uint64_t hit = fresh & atomic_load_explicit(&d[w], memory_order_relaxed);
  if (bh__unlikely(hit))
    bh__discard_touched_hit(a, hit);
}
/* Pages set both in the discarded bitmap and in the owner's touched bitmap (0 if either is
 * missing). */
BH__INTERNAL uint64_t bh__discard_touched_pages(const bh_arena_t *a);
/* The kept counts recounted by one pass over both bitmaps, to check them: the pages set in
 * the discarded bitmap, in the owner's touched bitmap, and in both. */
BH__INTERNAL void bh__discard_recount(const bh_arena_t *a, uint64_t *discarded, uint64_t *touched,
                                      uint64_t *both);

/* ---- zone queries ---- */

/* The index (bh_arena_zone's i) of the zone that holds pfn, below bh_arena_pages. */
BH__INTERNAL int bh__pfn_zone_id(const bh_arena_t *a, uint64_t pfn);
/* The order at or above which a final merge in z notifies the attached strategy (its
 * reporting order); above bh_arena_max_order if it never does. */
BH__INTERNAL unsigned bh__zone_notify_order(const struct bh_zone *z);
/* The arena's free blocks per order (nr_free, orders 0..bh_arena_max_order) and its free pages
 * as NR_FREE_PAGES counts them (*free_pages), summed over its zones, each read under its lock. */
BH__INTERNAL void bh__free_counts(bh_arena_t *a, uint64_t nr_free[BH_ORDER_LIMIT + 1],
                                  uint64_t *free_pages);

#endif
