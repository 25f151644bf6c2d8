/*
 * The block, start-state and zone queries of buddy/replay_core.h: what a replay asks of the
 * core's pages and zones, answered here so that it reads no page flag itself.  (The pcp-event
 * hooks are in populate.c, the written-page model in discard.c.)
 */
#include "buddy/internal.h"

#include <buddyhint/report.h>

#include <buddyhint/strategy.h>

#include <string.h>

/*
 * Whether the pages [pfn, end) of one max-order block are all free: a page with a state is a
 * block head that decides for itself; a page without one is inside the block of the nearest
 * head below it at an aligned pfn (the smallest order whose head has a state), which must
 * reach it.  The caller holds the zone lock.
 */
static bool pages_free(const bh_arena_t *a, uint64_t pfn, uint64_t end) {
  for (uint64_t p = pfn; p < end; p++) {
    uint8_t f = bh__pg_flags(&a->pages[p]);
    if (f & (BH__PG_ALLOC | BH__PG_ISOLATED))
      return false;
    if (f & BH__PG_STATE)
      continue;
    bool inside = false;
    for (unsigned o = 1; o <= a->max_order; o++) {
      const bh__page_t *h = &a->pages[p & ~((1ull << o) - 1)];
      uint8_t hf = bh__pg_flags(h);
      if (!(hf & BH__PG_STATE))
        continue;
      inside = bh__pg_order(h) >= o && !(hf & (BH__PG_ALLOC | BH__PG_ISOLATED));
      break;
    }
    if (!inside)
      return false;
  }
  return true;
}

bool bh__block_free(const bh_arena_t *a, uint64_t pfn, unsigned order) {
  if (order >= 64)
    return false;
  uint64_t n = 1ull << order;
  if (pfn >= a->nr_pages || n > a->nr_pages - pfn)
    return false;
  /* one max-order block at a time, under its zone's lock: hinting isolates and puts back
   * blocks under it on its own thread when the replay runs against the wall clock */
  for (uint64_t p = pfn, end = pfn + n; p < end;) {
    uint64_t next = (p | ((1ull << a->max_order) - 1)) + 1;
    if (next > end)
      next = end;
    bh_zone_t *z = bh__pfn_zone(a, p);
    bh__zone_lock(z);
    bool all = pages_free(a, p, next);
    bh__zone_unlock(z);
    if (!all)
      return false;
    p = next;
  }
  return true;
}

bool bh__page_pretrace(const bh_arena_t *a, uint64_t pfn) {
  return bh__pg_flags(&a->pages[pfn]) & BH__PG_PRETRACE;
}

void bh__pcp_heads(const bh_arena_t *a, uint64_t *map) {
  for (uint64_t p = 0; p < a->nr_pages; p++)
    if (bh__pg_flags(&a->pages[p]) & BH__PG_PCP)
      map[p >> 6] |= 1ull << (p & 63);
}

unsigned bh__pcp_orders(const bh_arena_t *a) { return a->pcp_orders; }

/*
 * A machine that reports free pages and starts the trace with a free block at or above the
 * reporting order that it has not reported may have a pass pending: the free that made the
 * block notified (page_reporting_notify_free from __free_one_page, mm/page_alloc.c:896-897 in
 * 6.12), and the pass that would report it has not run yet.  But a split notifies nothing:
 * expand (:1441-1467) puts the upper halves of the block it splits on the free lists
 * unreported (the reported flag is the taken block's, cleared as it leaves its list) and
 * requests no pass.  So only a block a split cannot leave shows a pending pass: one at the
 * top order, or the lower half of its parent (expand only ever frees upper halves).  An
 * unreported upper half below the top order may as well be a split's remainder, and on
 * every guest measured it was (docs/START-STATE.md): each zone that holds a block a split
 * cannot leave notifies once, as its free did; a start whose eligible blocks were all
 * reported, or split off reported ones, has nothing pending and its first pass waits for a
 * free.
 *
 * But a block that holds a page freed in the 2 s before the map was read (a recording's
 * start/window_frees: events the trace leaves out, whose result the map holds) was made by a
 * free whose pass had not run by the start, whichever half it is.  So was a free of the
 * reporting order or above there whose block the map holds allocated again (the recorder's
 * own /proc read buffers, freed and taken again around the map's reading): it notified by
 * itself (page_reporting_notify_free, mm/page_alloc.c:896-897 in 6.12), and a pass that ran
 * since would have reported it, had it stayed free; one that lies in a free block (reported:
 * the scan above would have taken an unreported one) has had its pass.
 *
 * Not a zone whose free pages are below what a pass needs to visit it (its low watermark and
 * a full batch at the reporting order, page_reporting_process_zone, mm/page_reporting.c:
 * 268-277): every pass skips it, so its unreported blocks say nothing of a pending one (a
 * guest's DMA zone never has enough).  Nor an unseen block: one the start map held allocated
 * that the trace takes from the buddy lists first (the replay places it free, start_state.c's
 * place_taken).  Its free is not recorded, so nothing says it notified, and its missing
 * reported flag is only the map's silence (the hosts had discarded it at boot and not since):
 * on ten of the eleven guests that reported at order 9, taking it for a notifying free put a
 * pass 2 s after the start where the host's first discard came 2.7 to 64 s after it
 * (docs/START-STATE.md).
 */
static bool split_cannot_leave(const bh_arena_t *a, uint64_t pfn, unsigned order) {
  return order >= a->max_order || !(pfn & (1ull << order));
}

/* Whether page pfn lies in a free block on the buddy lists (its zone's lock held). */
static bool in_buddy_block(const bh_arena_t *a, uint64_t pfn) {
  uint64_t head;
  uint8_t flags;
  unsigned order;
  return bh__container_of_pfn(a, pfn, &head, &flags, &order) && (flags & BH__PG_BUDDY);
}

/* Whether [pfn, pfn + 2^order) overlaps one of the n runs (unseen: a few per start; freed:
 * the window's frees, up to 65,536, once per eligible block at the start). */
static bool overlaps(const bh_block_run_t *runs, size_t n, uint64_t pfn, unsigned order) {
  for (size_t i = 0; i < n; i++)
    if (runs[i].pfn < pfn + (1ull << order) &&
        runs[i].pfn + ((uint64_t)runs[i].count << runs[i].order) > pfn)
      return true;
  return false;
}

void bh__notify_unreported(bh_arena_t *a, const bh_block_run_t *unseen, size_t n,
                           const bh_block_run_t *freed, size_t nfreed) {
  for (int i = 0; i < a->nr_zones; i++) {
    bh_zone_t *z = &a->zones[i];
    bool found = false;
    if (z->notify_order > a->max_order ||
        !bh_zone_low_wmark_ok(z, (uint64_t)BH_REPORT_CAPACITY << z->notify_order))
      continue;
    bh__zone_lock(z);
    for (unsigned o = z->notify_order; o <= a->max_order && !found; o++)
      for (int mt = 0; mt < BH_MT_TYPES && !found; mt++)
        for (uint64_t p = bh_free_list_first(z, o, mt); p != BH_PFN_NONE && !found;
             p = bh_free_list_next(z, o, mt, p))
          if (!bh_block_reported(z, p) &&
              (split_cannot_leave(a, p, o) || overlaps(freed, nfreed, p, o)) &&
              !overlaps(unseen, n, p, o)) {
            z->ev[BH_STAT_hint_notify]++;
            a->hint.notify(a->hint.ctx, z, p, o);
            found = true;
          }
    for (size_t k = 0; k < nfreed && !found; k++) { /* a window free that notified by itself */
      const bh_block_run_t *f = &freed[k];
      if (f->order >= z->notify_order && f->pfn >= z->zone_start_pfn &&
          f->pfn < z->zone_start_pfn + z->zone_spanned_pages && !in_buddy_block(a, f->pfn)) {
        z->ev[BH_STAT_hint_notify]++;
        a->hint.notify(a->hint.ctx, z, f->pfn, f->order);
        found = true;
      }
    }
    bh__zone_unlock(z);
  }
}

int bh__pfn_zone_id(const bh_arena_t *a, uint64_t pfn) { return bh__pfn_zone(a, pfn)->id; }

unsigned bh__zone_notify_order(const struct bh_zone *z) { return z->notify_order; }

void bh__free_counts(bh_arena_t *a, uint64_t nr_free[BH_ORDER_LIMIT + 1], uint64_t *free_pages) {
  memset(nr_free, 0, (BH_ORDER_LIMIT + 1) * sizeof(*nr_free));
  uint64_t pages = 0;
  for (int i = 0; i < a->nr_zones; i++) {
    bh_zone_t *z = &a->zones[i];
    bh__zone_lock(z);
    for (unsigned o = 0; o <= a->max_order; o++)
      nr_free[o] += z->nr_free[o];
    pages += (uint64_t)atomic_load(&z->free_pages);
    bh__zone_unlock(z);
  }
  *free_pages = pages;
}
