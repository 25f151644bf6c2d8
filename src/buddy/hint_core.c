/*
 * What the allocator offers hinting strategies: the kernel's own helpers for free page
 * reporting (__isolate_free_page, __putback_isolated_page, PageReported, list rotation) and
 * read access to the free lists.  Everything but the lock calls expects the zone lock held.
 */
#include "buddy/internal.h"
#include "common/debug.h"

#include <buddyhint/strategy.h>

bh_zone_t *bh_arena_zone(bh_arena_t *a, int i) {
  return a && i >= 0 && i < a->nr_zones ? &a->zones[i] : NULL;
}
int bh_zone_index(const bh_zone_t *z) { return z ? z->id : BH_EINVAL; }
uint64_t bh_zone_start_pfn(const bh_zone_t *z) { return z ? z->start_pfn : BH_PFN_NONE; }
uint64_t bh_zone_pages(const bh_zone_t *z) { return z ? z->spanned_pages : 0; }
unsigned bh_arena_max_order(const bh_arena_t *a) { return a ? a->max_order : 0; }
unsigned bh_arena_pageblock_order(const bh_arena_t *a) { return a ? a->pb_order : 0; }
void bh_zone_lock(bh_zone_t *z) {
  if (z)
    bh__zone_lock(z);
}
void bh_zone_unlock(bh_zone_t *z) {
  if (z)
    bh__zone_unlock(z);
}
int bh_zone_type(const bh_zone_t *z) { return z ? z->type : BH_EINVAL; }
int bh_zone_node(const bh_zone_t *z) { return z ? z->node : BH_EINVAL; }

uint64_t bh_zone_nr_free(const bh_zone_t *z, unsigned order) {
  return z && order <= z->arena->max_order ? z->nr_free[order] : 0;
}

/* NULL-safe, as every call here (the argument rule of buddyhint.h). */
static bool in_zone(const bh_zone_t *z, uint64_t pfn) {
  return z && pfn >= z->start_pfn && pfn < z->start_pfn + z->spanned_pages;
}

static bool valid_list(const bh_zone_t *z, unsigned order, int mt) {
  return order <= z->arena->max_order && mt >= 0 && mt < BH_MT_TYPES;
}

bool bh_zone_free_block(const bh_zone_t *z, uint64_t pfn, unsigned *order, int *mt) {
  if (!in_zone(z, pfn))
    return false;
  const bh__page_t *p = &z->arena->pages[pfn];
  if (!(bh__pg_flags(p) & BH__PG_BUDDY))
    return false;
  if (order)
    *order = bh__pg_order(p);
  if (mt)
    *mt = bh__pb_mt(z->arena, pfn);
  return true;
}

uint64_t bh_free_list_first(const bh_zone_t *z, unsigned order, int mt) {
  if (!z || !valid_list(z, order, mt))
    return BH_PFN_NONE;
  uint32_t head = bh__free_list(z, order, mt), n = z->arena->pages[head].next;
  return n == head ? BH_PFN_NONE : n;
}

uint64_t bh_free_list_next(const bh_zone_t *z, unsigned order, int mt, uint64_t pfn) {
  if (!in_zone(z, pfn) || !valid_list(z, order, mt))
    return BH_PFN_NONE;
  uint32_t head = bh__free_list(z, order, mt), n = z->arena->pages[pfn].next;
  return n == head ? BH_PFN_NONE : n;
}

/* list_rotate_to_front: the head moves to just before pfn, so pfn becomes the first entry. */
void bh_free_list_rotate(bh_zone_t *z, unsigned order, int mt, uint64_t pfn) {
  if (!in_zone(z, pfn) || !valid_list(z, order, mt))
    return;
  bh_arena_t *a = z->arena;
  if (!(bh__pg_flags(&a->pages[pfn]) & BH__PG_BUDDY) || bh__pg_order(&a->pages[pfn]) != order)
    return;
  uint32_t head = bh__free_list(z, order, mt);
  if (a->pages[head].next == pfn)
    return;
  bh__list_del(a, head);
  bh__list_insert(a, head, a->pages[pfn].prev, (uint32_t)pfn);
}

bool bh_block_reported(const bh_zone_t *z, uint64_t pfn) {
  return in_zone(z, pfn) && (bh__pg_flags(&z->arena->pages[pfn]) & BH__PG_REPORTED);
}

void bh_block_set_reported(bh_zone_t *z, uint64_t pfn) {
  if (!in_zone(z, pfn))
    return;
  bh__page_t *p = &z->arena->pages[pfn];
  if (bh__pg_flags(p) & BH__PG_BUDDY)
    bh__pg_set_flags(p, bh__pg_flags(p) | BH__PG_REPORTED);
}

bool bh_zone_low_wmark_ok(const bh_zone_t *z, uint64_t extra) {
  if (!z)
    return false;
  uint64_t low = z->watermark[BH__WMARK_LOW] +
                 atomic_load_explicit(&((bh_zone_t *)z)->watermark_boost, memory_order_relaxed);
  return bh__zone_watermark_ok((bh_zone_t *)z, 0, low + extra, 0, 0,
                               atomic_load_explicit(&z->free_pages, memory_order_relaxed));
}

/*
 * __isolate_free_page: unless the block is on an Isolate pageblock, the zone must keep its
 * min watermark + 2^order free (order-0 check, as if the block were allocated); the block
 * leaves its list (PageReported cleared) and, when it is at least half a pageblock, every
 * mergeable pageblock it covers goes through move_freepages_block() to Movable: its other
 * free blocks move to the tails of the Movable lists, also when the pageblock is Movable
 * already (not a pageblock the zone does not span whole, bh__pageblock_in_zone).  Returns 2^order,
 * or 0 if the watermark check fails.  Zone lock held.
 */
uint64_t bh__isolate_free_page(bh_zone_t *z, uint64_t pfn, unsigned order) {
  bh_arena_t *a = z->arena;
  if (a->cfg.smp) /* the callers hold it (page_reporting_cycle) */
    BH_ASSERT_LOCKED(&z->lock);
  int mt = bh__pb_mt(a, pfn);
  if (mt != BH_MT_ISOLATE) {
    uint64_t mark = z->watermark[BH__WMARK_MIN] + (1ull << order);
    if (!bh__zone_watermark_ok(z, 0, mark, 0, 0,
                               atomic_load_explicit(&z->free_pages, memory_order_relaxed)))
      return 0;
  }
  bh__del_from_free_list(z, pfn, order, mt, BH__DEL_ISOLATE);
  bh__pg_set(&a->pages[pfn], BH__PG_ISOLATED, (uint8_t)order);
  z->isolated_pages += 1ll << order;
  if (order + 1 >= a->pb_order) {
    uint64_t step = 1ull << a->pb_order, end = pfn + (1ull << order);
    for (uint64_t b = pfn & ~(step - 1); b < end; b += step)
      if (bh__mt_mergeable(bh__pb_mt(a, b)) && bh__pageblock_in_zone(z, b))
        bh__move_freepages_block(z, b, bh__pb_mt(a, b), BH_MT_MOVABLE);
  }
  return 1ull << order;
}

int bh_zone_isolate(bh_zone_t *z, uint64_t pfn, unsigned order) {
  if (!in_zone(z, pfn) || order > z->arena->max_order)
    return BH_EINVAL;
  bh_arena_t *a = z->arena;
  bh__page_t *p = &a->pages[pfn];
  if (!(bh__pg_flags(p) & BH__PG_BUDDY) || bh__pg_order(p) != order)
    return BH_EINVAL;
  if (!bh__isolate_free_page(z, pfn, order)) {
    z->ev[BH_STAT_isolate_fail]++;
    return BH_ENOSPC;
  }
  z->ev[BH_STAT_isolate_calls]++;
  z->ev[BH_STAT_isolate_pages] += 1ull << order;
  return BH_OK;
}

/* Takes an isolated block back: the checks and accounting both put-backs share. */
static int take_isolated(bh_zone_t *z, uint64_t pfn, unsigned order) {
  if (!in_zone(z, pfn))
    return BH_EINVAL;
  bh_arena_t *a = z->arena;
  bh__page_t *p = &a->pages[pfn];
  if (!(bh__pg_flags(p) & BH__PG_ISOLATED) || bh__pg_order(p) != order)
    return BH_EINVAL;
  if (a->cfg.smp) /* __putback_isolated_page's lockdep_assert_held (mm/page_alloc.c:2944) */
    BH_ASSERT_LOCKED(&z->lock);
  bh__pg_set_flags(p, 0);
  z->isolated_pages -= 1ll << order;
  z->ev[BH_STAT_putback_pages] += 1ull << order;
  return BH_OK;
}

static void free_isolated(bh_zone_t *z, uint64_t pfn, unsigned order, int fpi, bool *still_head) {
  const bh__page_t *p = &z->arena->pages[pfn];
  bh__free_one_page(z, pfn, order, bh__pb_mt(z->arena, pfn), fpi);
  if (still_head)
    *still_head = (bh__pg_flags(p) & BH__PG_BUDDY) && bh__pg_order(p) == order;
}

int bh_zone_putback(bh_zone_t *z, uint64_t pfn, unsigned order, bool *still_head) {
  int err = take_isolated(z, pfn, order);
  if (!err)
    free_isolated(z, pfn, order, BH__FPI_SKIP_REPORT_NOTIFY | BH__FPI_TO_TAIL, still_head);
  return err;
}

int bh_zone_release(bh_zone_t *z, uint64_t pfn, unsigned order, bool *still_head) {
  int err = take_isolated(z, pfn, order);
  if (!err)
    free_isolated(z, pfn, order, BH__FPI_SKIP_REPORT_NOTIFY, still_head);
  return err;
}
