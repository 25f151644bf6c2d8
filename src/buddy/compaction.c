/*
 * Memory compaction, after Linux 6.12's mm/compaction.c: a migrate scanner walks a zone up
 * from its start, pageblock by pageblock, and moves every movable allocated block it finds
 * to free pages that a free scanner isolates walking down from the zone's end; the run ends
 * when the two meet, or, for proactive compaction, once the zone's fragmentation score is
 * down to the low mark.  Freed source blocks merge on the buddy lists (and notify hinting,
 * which is how compaction lets page reporting return memory that was scattered).
 *
 * What the model leaves out: the scanners' cached positions and skip bits (every run starts
 * over), deferral, async mode (only the whole-zone SYNC_LIGHT/SYNC runs of kcompactd and
 * compact_memory exist) and the fast free-list searches.  Since >0 order folio compaction
 * (6.9) blocks below the pageblock order move whole, to the smallest isolated free block that
 * fits, split like expand(); bigger ones are skipped (skip_isolation_on_order).  The whole
 * zone pass runs under the zone lock: the owner's callback runs with it held.
 */
#include "buddy/internal.h"

#include <stdlib.h>
#include <string.h>

void bh__discard_on_alloc(bh_arena_t *a, uint64_t pfn, unsigned order);

/* cc->freepages[order]: isolated free blocks, order kept beside the pfn. */
struct freelist {
  uint64_t *pfn;
  size_t n, cap;
};

struct compact_control {
  bh__zone_t *z;
  bh_migrate_fn migrate;
  void *ctx;
  uint64_t migrate_pfn, free_pfn; /* next pageblock of each scanner */
  bool proactive;
  unsigned score_low;
  struct freelist free[BH_ORDER_LIMIT + 1];
  bh_compact_result_t *res;
  int err;
};

/* extfrag_for_order(zone, order): percent of the free pages in blocks below 2^order. */
static unsigned zone_score(const bh__zone_t *z, unsigned order) {
  uint64_t free = 0, suitable = 0;
  for (unsigned o = 0; o <= z->arena->max_order; o++) {
    uint64_t n = __atomic_load_n(&z->nr_free[o], __ATOMIC_RELAXED);
    free += n << o;
    if (o >= order)
      suitable += n << (o - order);
  }
  return free ? (unsigned)((free - (suitable << order)) * 100 / free) : 0;
}

unsigned bh_fragmentation_score(bh_arena_t *a, int node) {
  if (!a || node < 0 || (unsigned)node >= a->cfg.nr_nodes)
    return 0;
  uint64_t present = 0, score = 0;
  for (int i = 0; i < a->nr_zones; i++)
    if (a->zones[i].node == node)
      present += a->zones[i].managed_pages;
  for (int i = 0; i < a->nr_zones; i++) {
    const bh__zone_t *z = &a->zones[i];
    if (z->node == node)
      score += z->managed_pages * zone_score(z, a->pb_order);
  }
  return (unsigned)(score / (present + 1));
}

static bool push(struct compact_control *cc, unsigned order, uint64_t pfn) {
  struct freelist *l = &cc->free[order];
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    uint64_t *p = realloc(l->pfn, cap * sizeof(*p));
    if (!p)
      return false;
    l->pfn = p;
    l->cap = cap;
  }
  l->pfn[l->n++] = pfn;
  return true;
}

/* Whether the pageblock at pfn lies inside a free block above the pageblock order. */
static bool in_big_free_block(const bh_arena_t *a, uint64_t pfn) {
  for (unsigned o = a->pb_order + 1; o <= a->max_order; o++) {
    const bh__page_t *head = &a->pages[pfn & ~((1ull << o) - 1)];
    if ((bh__pg_flags(head) & BH__PG_BUDDY) && bh__pg_order(head) >= o)
      return true;
  }
  return false;
}

/* An isolated block back to the buddy lists (release_free_list). */
static void release_block(struct compact_control *cc, uint64_t pfn, unsigned order) {
  bh__zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  bh__pg_set_flags(&a->pages[pfn], 0);
  z->isolated_pages -= 1ll << order;
  bh__free_one_page(z, pfn, order, bh__pb_mt(a, pfn), BH__FPI_NONE);
}

/*
 * isolate_freepages, one pageblock: every free block of a Movable pageblock below the
 * pageblock order (a pageblock that is one free block stays whole: suitable_migration_target),
 * each under __isolate_free_page's min watermark check.
 */
static void isolate_freepages_block(struct compact_control *cc, uint64_t start) {
  bh__zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  uint64_t end = start + (1ull << a->pb_order);
  if (bh__pb_mt(a, start) != BH_MT_MOVABLE)
    return;
  const bh__page_t *head = &a->pages[start];
  if (((bh__pg_flags(head) & BH__PG_BUDDY) && bh__pg_order(head) >= a->pb_order) ||
      in_big_free_block(a, start))
    return;
  for (uint64_t pfn = start; pfn < end;) {
    bh__page_t *p = &a->pages[pfn];
    uint8_t f = bh__pg_flags(p);
    unsigned order = f & BH__PG_STATE ? bh__pg_order(p) : 0;
    z->ev[BH_STAT_compact_free_scanned] += 1ull << order;
    cc->res->free_scanned += 1ull << order;
    if (f & BH__PG_BUDDY) {
      uint64_t mark = z->watermark[BH__WMARK_MIN] + (1ull << order);
      if (!bh__zone_watermark_ok(z, 0, mark, 0, 0,
                                 atomic_load_explicit(&z->free_pages, memory_order_relaxed)))
        return;
      if (!push(cc, order, pfn)) {
        cc->err = BH_ENOMEM;
        return;
      }
      bh__del_from_free_list(z, pfn, order, BH_MT_MOVABLE, BH__DEL_ISOLATE);
      bh__pg_set(p, BH__PG_ISOLATED, (uint8_t)order);
      z->isolated_pages += 1ll << order;
      z->ev[BH_STAT_compact_isolated] += 1ull << order;
      cc->res->isolated += 1ull << order;
    }
    pfn += 1ull << order;
  }
}

/* compaction_alloc: the smallest isolated block that fits, split like expand(). */
static uint64_t compaction_alloc(struct compact_control *cc, unsigned order) {
  bh_arena_t *a = cc->z->arena;
  for (;;) {
    for (unsigned o = order; o < a->pb_order; o++) {
      struct freelist *l = &cc->free[o];
      if (!l->n)
        continue;
      uint64_t pfn = l->pfn[--l->n];
      while (o > order) {
        o--;
        uint64_t half = pfn + (1ull << o);
        if (!push(cc, o, half)) {
          cc->err = BH_ENOMEM;
          release_block(cc, half, o);
          release_block(cc, pfn, o);
          return UINT64_MAX;
        }
        bh__pg_set(&a->pages[half], BH__PG_ISOLATED, (uint8_t)o);
      }
      bh__pg_set(&a->pages[pfn], BH__PG_ISOLATED, (uint8_t)order); /* what is left of it */
      return pfn;
    }
    /* nothing fits: the free scanner takes the next pageblock down, unless the scanners met */
    if (cc->err || cc->free_pfn <= cc->migrate_pfn)
      return UINT64_MAX;
    isolate_freepages_block(cc, cc->free_pfn);
    cc->free_pfn -= 1ull << a->pb_order;
  }
}

/* Moves one movable block; false when the run must end (no target left). */
static bool migrate_block(struct compact_control *cc, uint64_t pfn, unsigned order) {
  bh__zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  uint64_t dst = compaction_alloc(cc, order);
  if (dst == UINT64_MAX)
    return false;
  if (a->discarded)
    bh__discard_on_alloc(a, dst, order); /* the copy refaults a reported page */
  if (a->base)
    memcpy(a->base + (dst << BH_PAGE_SHIFT), a->base + (pfn << BH_PAGE_SHIFT),
           BH_PAGE_SIZE << order);
  if (cc->migrate(cc->ctx, pfn, dst, order)) {
    /* compaction_free: the target goes back to the isolated blocks */
    if (!push(cc, order, dst)) {
      cc->err = BH_ENOMEM;
      release_block(cc, dst, order);
      return false;
    }
    z->ev[BH_STAT_pgmigrate_fail] += 1ull << order;
    cc->res->migrate_failed += 1ull << order;
    return true;
  }
  bh__page_t *src = &a->pages[pfn], *d = &a->pages[dst];
  z->isolated_pages -= 1ll << order;
  bh__pg_set_alloc(d, bh__pg_mt(src), (uint8_t)order);
  bh__pg_set_flags(src, 0);
  bh__free_one_page(z, pfn, order, bh__pb_mt(a, pfn), BH__FPI_NONE);
  z->ev[BH_STAT_pgmigrate_success] += 1ull << order;
  cc->res->migrated += 1ull << order;
  return true;
}

/* compact_zone: one whole-zone run; the caller holds the zone lock. */
static void compact_zone(struct compact_control *cc) {
  bh__zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  uint64_t pb = 1ull << a->pb_order;
  cc->migrate_pfn = z->start_pfn;
  cc->free_pfn = z->start_pfn + ((z->spanned_pages - 1) & ~(pb - 1));
  z->ev[BH_STAT_compact_runs]++;
  cc->res->zones++;
  bool more = true;
  while (more && cc->migrate_pfn < cc->free_pfn && !cc->err) {
    if (cc->proactive && zone_score(z, a->pb_order) <= cc->score_low)
      break; /* compact_finished for proactive compaction */
    uint64_t start = cc->migrate_pfn, end = start + pb, pfn = start;
    if (in_big_free_block(a, start))
      pfn = end;
    while (pfn < end && more) {
      bh__page_t *p = &a->pages[pfn];
      uint8_t f = bh__pg_flags_acquire(p); /* with PG_ALLOC, the block's own mt */
      unsigned order = f & BH__PG_STATE ? bh__pg_order(p) : 0;
      z->ev[BH_STAT_compact_migrate_scanned] += 1ull << order;
      cc->res->migrate_scanned += 1ull << order;
      if ((f & BH__PG_ALLOC) && bh__pg_mt(p) == BH_MT_MOVABLE && order < a->pb_order &&
          (order == 0 || a->cfg.compact_large_blocks))
        more = migrate_block(cc, pfn, order);
      pfn += 1ull << order;
    }
    cc->migrate_pfn = pfn > end ? pfn : end; /* past a free block bigger than a pageblock */
  }
  for (unsigned o = 0; o <= a->max_order; o++) {
    struct freelist *l = &cc->free[o];
    while (l->n)
      release_block(cc, l->pfn[--l->n], o);
  }
}

static int compact_zones(bh_arena_t *a, int node, bool proactive, unsigned score_low,
                         bh_migrate_fn migrate, void *ctx, bh_compact_result_t *res) {
  struct compact_control cc;
  memset(&cc, 0, sizeof(cc));
  cc.migrate = migrate;
  cc.ctx = ctx;
  cc.proactive = proactive;
  cc.score_low = score_low;
  cc.res = res;
  for (int i = 0; i < a->nr_zones && !cc.err; i++) {
    bh__zone_t *z = &a->zones[i];
    if (node >= 0 && z->node != node)
      continue;
    cc.z = z;
    bh__zone_lock(z);
    compact_zone(&cc);
    bh__zone_unlock(z);
  }
  for (unsigned o = 0; o <= BH_ORDER_LIMIT; o++)
    free(cc.free[o].pfn);
  return cc.err;
}

static unsigned max_score(bh_arena_t *a) {
  unsigned m = 0;
  for (unsigned n = 0; n < a->cfg.nr_nodes; n++) {
    unsigned s = bh_fragmentation_score(a, (int)n);
    m = s > m ? s : m;
  }
  return m;
}

int bh_compact_memory(bh_arena_t *a, bh_migrate_fn migrate, void *ctx, bh_compact_result_t *res) {
  bh_compact_result_t local;
  if (!a || !migrate)
    return BH_EINVAL;
  if (!res)
    res = &local;
  memset(res, 0, sizeof(*res));
  res->score_before = max_score(a);
  int err = compact_zones(a, -1, false, 0, migrate, ctx, res);
  res->score_after = max_score(a);
  return err;
}

int bh_compact_proactive(bh_arena_t *a, unsigned proactiveness, bh_migrate_fn migrate, void *ctx,
                         bh_compact_result_t *res) {
  bh_compact_result_t local;
  if (!a || !migrate || proactiveness > 100)
    return BH_EINVAL;
  if (!res)
    res = &local;
  memset(res, 0, sizeof(*res));
  res->score_before = max_score(a);
  res->score_after = res->score_before;
  if (!proactiveness)
    return 0;
  /* fragmentation_score_wmark */
  unsigned low = 100 - proactiveness < 5 ? 5 : 100 - proactiveness;
  unsigned high = low + 10 < 100 ? low + 10 : 100;
  int nodes = 0;
  for (unsigned n = 0; n < a->cfg.nr_nodes; n++) {
    if (bh_fragmentation_score(a, (int)n) <= high)
      continue;
    int err = compact_zones(a, (int)n, true, low, migrate, ctx, res);
    if (err)
      return err;
    nodes++;
  }
  res->score_after = max_score(a);
  return nodes;
}
