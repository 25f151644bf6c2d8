/*
 * Memory compaction, after Linux 6.12's mm/compaction.c, for the whole-zone runs of
 * /proc/sys/vm/compact_memory (MIGRATE_SYNC) and of kcompactd's proactive compaction
 * (MIGRATE_SYNC_LIGHT), both with cc->order = -1, ignore_skip_hint and whole_zone.
 *
 * compact_zone() starts the migrate scanner at the zone's first pfn and the free scanner at
 * its last pageblock, then loops: compact_finished() ends the run when the scanners meet
 * (their pageblocks cross) or, for proactive compaction, once the zone's fragmentation score
 * is down to the low mark; isolate_migratepages() takes the next pageblock below the free
 * scanner and isolates its movable allocated blocks until it has COMPACT_CLUSTER_MAX (32)
 * pages (it then stops in the middle of the pageblock); migrate_pages() moves that batch.
 * Each source gets a target from compaction_alloc(): the first entry of the smallest
 * non-empty isolated-free list of at least its order, split like expand() (the upper halves
 * go to the heads of the lower lists).  When no list fits, the free scanner runs once
 * (isolate_freepages): from where it stopped, down pageblock by pageblock over Movable
 * pageblocks that are not one free block of pageblock order, above the migrate scanner's
 * pageblock, isolating free blocks (appended to their order's list, with
 * __isolate_free_page's watermark check) only until it holds as many free pages as the batch
 * still needs.  Targets are all taken before any block moves, as migrate_pages_batch unmaps
 * first; then every source moves through the owner's callback and is freed the way a page is
 * (free_unref_page: the pcp lists for the orders they hold), which is how compaction lets page
 * reporting return memory that was scattered.  A target the owner refuses goes back to the
 * head of its list (compaction_free).  At the end the unused isolated blocks are freed the same
 * way (release_free_list).  The run holds the zone lock throughout: the owner's callback runs
 * with it held.
 *
 * When compaction_alloc finds no target: for an order-0 page migrate_pages fails with -ENOMEM,
 * and the run ends unless the scanners have met (COMPACT_CONTENDED); a larger block is split
 * (try_split_folio) and its pages moved one by one after the batch, and when the split fails
 * the batch ends with -ENOMEM as for an order-0 page (mm/migrate.c:1831-1861, 1943).
 * Splitting changes how the owner must free the block, so the model splits only with the
 * owner's consent (bh_compact_set_split); a refusal is a failed split.  Replays do not split (a
 * recorded trace frees the block whole), so there such a block ends the run.  With
 * compact_skip_unsplit (not the kernel's rule) the block stays where it is, counted as failed,
 * and the batch goes on, as the model did before.  Since >0 order
 * folio compaction (6.9) blocks below the pageblock order move whole (skip_isolation_on_order skips
 * bigger ones); with compact_large_blocks off only order-0 pages move, as before.
 *
 * Left out: the cached scanner positions, skip bits and deferral of direct compaction and of
 * kcompactd's order-targeted runs (no such run exists here), async mode and the fast
 * free-list searches (only for cc->order > 0), and the retries of a migration the owner
 * refuses (one refusal is final, like a pinned page).
 */
#include "buddy/internal.h"

#include <stdlib.h>
#include <string.h>

#define COMPACT_CLUSTER_MAX 32 /* SWAP_CLUSTER_MAX */

/* cc->freepages[order]: isolated free blocks in list order (a ring: head and tail inserts). */
struct freelist {
  uint64_t *pfn;
  size_t head, n, cap;
};

struct migrate_entry {
  uint64_t pfn, dst;
  unsigned order;
};

struct compact_control {
  bh_zone_t *z;
  bh_migrate_fn migrate;
  void *ctx;
  uint64_t migrate_pfn, free_pfn;         /* where each scanner goes on */
  uint64_t nr_freepages, nr_migratepages; /* pages isolated and still to move */
  bool proactive;
  unsigned score_low;
  int slot; /* the pcp lists compaction frees to: a CPU of the zone's node */
  struct freelist freepages[BH_ORDER_LIMIT + 1];
  struct migrate_entry migratepages[COMPACT_CLUSTER_MAX]; /* cc->migratepages, head first */
  struct freelist split; /* pages of split blocks still to move (split_folios) */
  int nr_migrate_entries;
  bh_compact_result_t *res;
  int err;
};

enum { ISOLATE_NONE, ISOLATE_SUCCESS };

/* extfrag_for_order(zone, order): percent of the free pages in blocks below 2^order. */
static unsigned zone_score(const bh_zone_t *z, unsigned order) {
  uint64_t free = 0, suitable = 0;
  for (unsigned o = 0; o <= z->arena->max_order; o++) {
    uint64_t n = __atomic_load_n(&z->nr_free[o], __ATOMIC_RELAXED);
    free += n << o;
    if (o >= order)
      suitable += n << (o - order);
  }
  return free ? (unsigned)((free - (suitable << order)) * 100 / free) : 0;
}

/*
 * fragmentation_score_node: each zone's score weighted by its share of the node's present
 * pages (zone->present_pages over node_present_pages + 1, mm/compaction.c:2221-2222), each
 * share rounded down before they are added (fragmentation_score_zone_weighted).  Present, not
 * managed: a zone whose memory is largely reserved (crash kernel, hugetlb pool, memmap) weighs
 * by the pages it has, as in the kernel.
 */
unsigned bh_fragmentation_score(bh_arena_t *a, int node) {
  if (!a || node < 0 || (unsigned)node >= a->cfg.nr_nodes)
    return 0;
  uint64_t present = 0, score = 0;
  for (int i = 0; i < a->nr_zones; i++)
    if (a->zones[i].node == node)
      present += a->zones[i].present_pages;
  for (int i = 0; i < a->nr_zones; i++) {
    const bh_zone_t *z = &a->zones[i];
    if (z->node == node)
      score += z->present_pages * zone_score(z, a->pb_order) / (present + 1);
  }
  return (unsigned)score;
}

/* ---- the isolated free lists ---- */

static bool list_grow(struct freelist *l) {
  size_t cap = l->cap ? l->cap * 2 : 64;
  uint64_t *p = malloc(cap * sizeof(*p));
  if (!p)
    return false;
  for (size_t i = 0; i < l->n; i++)
    p[i] = l->pfn[(l->head + i) % l->cap];
  free(l->pfn);
  l->pfn = p;
  l->cap = cap;
  l->head = 0;
  return true;
}

static bool list_add_tail(struct freelist *l, uint64_t pfn) {
  if (l->n == l->cap && !list_grow(l))
    return false;
  l->pfn[(l->head + l->n++) % l->cap] = pfn;
  return true;
}

static bool list_add_head(struct freelist *l, uint64_t pfn) {
  if (l->n == l->cap && !list_grow(l))
    return false;
  l->head = (l->head + l->cap - 1) % l->cap;
  l->pfn[l->head] = pfn;
  l->n++;
  return true;
}

static uint64_t list_pop_head(struct freelist *l) {
  uint64_t pfn = l->pfn[l->head];
  l->head = (l->head + 1) % l->cap;
  l->n--;
  return pfn;
}

/* ---- scanners ---- */

static inline uint64_t pb_pages(const bh_arena_t *a) { return 1ull << a->pb_order; }

static bool scanners_met(const struct compact_control *cc) {
  unsigned pb = cc->z->arena->pb_order;
  return (cc->free_pfn >> pb) <= (cc->migrate_pfn >> pb);
}

/* An isolated free block back to the allocator, as a freed page goes (release_free_list). */
static void release_block(struct compact_control *cc, uint64_t pfn, unsigned order) {
  cc->z->isolated_pages -= 1ll << order;
  bh__free_pages_zone_locked(cc->z, pfn, order, cc->slot);
}

/*
 * isolate_freepages_block, not strict, stride 1: from *start to end, every free block is
 * isolated (onto the tail of its order's list) until the free pages isolated cover the pages
 * still to migrate; allocated multi-page blocks are skipped whole.  A failed watermark check
 * stops the block early.  *start is left where the scan stopped.
 */
static void isolate_freepages_block(struct compact_control *cc, uint64_t *start, uint64_t end) {
  bh_zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  uint64_t pfn = *start, scanned = 0, total = 0;
  for (; pfn < end; pfn++) {
    const bh__page_t *p = &a->pages[pfn];
    uint8_t f = bh__pg_flags(p);
    scanned++;
    if (f & BH__PG_ALLOC) {
      uint64_t n = 1ull << bh__pg_order(p);
      if (n > 1 && pfn + n <= end) { /* PageCompound */
        pfn += n - 1;
        scanned += n - 1;
      }
      continue;
    }
    if (!(f & BH__PG_BUDDY))
      continue;
    unsigned order = bh__pg_order(p);
    uint64_t isolated = bh__isolate_free_page(z, pfn, order);
    if (!isolated)
      break;
    if (!list_add_tail(&cc->freepages[order], pfn)) {
      cc->err = BH_ENOMEM;
      release_block(cc, pfn, order);
      break;
    }
    scanned += isolated - 1;
    total += isolated;
    cc->nr_freepages += isolated;
    if (cc->nr_migratepages <= cc->nr_freepages) {
      pfn += isolated;
      break;
    }
    pfn += isolated - 1;
  }
  if (pfn > end)
    pfn = end;
  *start = pfn;
  z->ev[BH_STAT_compact_free_scanned] += scanned;
  z->ev[BH_STAT_compact_isolated] += total;
  cc->res->free_scanned += scanned;
  cc->res->isolated += total;
}

/* suitable_migration_target: a Movable pageblock that is not one free block (cc->order -1). */
static bool suitable_migration_target(const bh_arena_t *a, uint64_t start) {
  const bh__page_t *p = &a->pages[start];
  if ((bh__pg_flags(p) & BH__PG_BUDDY) && bh__pg_order(p) >= a->pb_order)
    return false;
  return bh__pb_mt(a, start) == BH_MT_MOVABLE;
}

/* isolate_freepages: the free scanner, down from cc->free_pfn to the migrate scanner's block. */
static void isolate_freepages(struct compact_control *cc) {
  bh_zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  const uint64_t pb = pb_pages(a), zone_end = z->zone_start_pfn + z->zone_spanned_pages;
  uint64_t isolate_start = cc->free_pfn;
  uint64_t block_start = isolate_start & ~(pb - 1);
  uint64_t block_end = block_start + pb < zone_end ? block_start + pb : zone_end;
  uint64_t low_pfn = (cc->migrate_pfn & ~(pb - 1)) + pb;
  for (; block_start >= low_pfn && !cc->err;
       block_end = block_start, block_start -= pb, isolate_start = block_start) {
    if (!suitable_migration_target(a, block_start))
      continue;
    isolate_freepages_block(cc, &isolate_start, block_end);
    if (cc->nr_freepages >= cc->nr_migratepages) {
      if (isolate_start >= block_end)
        isolate_start = block_start - pb; /* go on with the next pageblock next time */
      break;
    }
    if (isolate_start < block_end)
      break; /* isolation failed early: do not go on */
  }
  cc->free_pfn = isolate_start;
}

/*
 * compaction_alloc: the first block of the smallest non-empty list of at least this order,
 * after one run of the free scanner if none fits; the part not used goes back to the heads of
 * the lower lists.  Returns UINT64_MAX if there is none.
 */
static uint64_t compaction_alloc(struct compact_control *cc, unsigned order) {
  bh_arena_t *a = cc->z->arena;
  bool isolated = false;
  for (;;) {
    unsigned o = order;
    while (o <= a->max_order && !cc->freepages[o].n)
      o++;
    if (o > a->max_order) {
      if (isolated || cc->err)
        return UINT64_MAX;
      isolate_freepages(cc);
      isolated = true;
      continue;
    }
    uint64_t pfn = list_pop_head(&cc->freepages[o]);
    while (o > order) {
      o--;
      uint64_t half = pfn + (1ull << o);
      bh__pg_set(&a->pages[half], BH__PG_ISOLATED, (uint8_t)o);
      if (!list_add_head(&cc->freepages[o], half)) {
        cc->err = BH_ENOMEM;
        release_block(cc, half, o);
      }
    }
    bh__pg_set(&a->pages[pfn], BH__PG_ISOLATED, (uint8_t)order); /* what is left of it */
    cc->nr_freepages -= 1ull << order;
    cc->nr_migratepages -= 1ull << order;
    return pfn;
  }
}

/* compaction_free: a target that was not used goes back to the head of its list. */
static void compaction_free(struct compact_control *cc, uint64_t pfn, unsigned order) {
  if (!list_add_head(&cc->freepages[order], pfn)) {
    cc->err = BH_ENOMEM;
    release_block(cc, pfn, order);
  } else {
    cc->nr_freepages += 1ull << order;
  }
  cc->nr_migratepages += 1ull << order;
}

/* Whether the allocated block at pfn can be isolated for migration (cc->order -1). */
static bool migratable(const bh_arena_t *a, const bh__page_t *p, unsigned order) {
  if (bh__pg_mt(p) != BH_MT_MOVABLE)
    return false; /* neither on an LRU nor __PageMovable */
  if (order >= a->pb_order)
    return false; /* skip_isolation_on_order */
  return order == 0 || a->cfg.compact_large_blocks;
}

/*
 * isolate_migratepages_block: from low_pfn to the end of its pageblock, movable allocated
 * blocks go to the head of cc->migratepages until the batch holds COMPACT_CLUSTER_MAX pages;
 * free blocks and blocks that cannot move are skipped.  Leaves cc->migrate_pfn where it
 * stopped.
 */
static void isolate_migratepages_block(struct compact_control *cc, uint64_t low_pfn, uint64_t end) {
  bh_zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  uint64_t scanned = 0, isolated = 0;
  for (; low_pfn < end; low_pfn++) {
    const bh__page_t *p = &a->pages[low_pfn];
    uint8_t f = bh__pg_flags_acquire(p); /* with PG_ALLOC, the block's own mt */
    scanned++;
    if (f & BH__PG_BUDDY) {
      unsigned order = bh__pg_order(p);
      if (order > 0) {
        low_pfn += (1ull << order) - 1;
        scanned += (1ull << order) - 1;
      }
      continue;
    }
    if (!(f & BH__PG_ALLOC))
      continue;
    unsigned order = bh__pg_order(p);
    if (!migratable(a, p, order)) {
      if (bh__pg_mt(p) == BH_MT_MOVABLE && order > 0) { /* a compound page skipped whole */
        low_pfn += (1ull << order) - 1;
        scanned += (1ull << order) - 1;
      }
      continue;
    }
    /* isolate_success: list_add(&folio->lru, &cc->migratepages) */
    memmove(&cc->migratepages[1], &cc->migratepages[0],
            (size_t)cc->nr_migrate_entries * sizeof(cc->migratepages[0]));
    cc->migratepages[0] = (struct migrate_entry){.pfn = low_pfn, .order = order};
    cc->nr_migrate_entries++;
    cc->nr_migratepages += 1ull << order;
    isolated += 1ull << order;
    low_pfn += (1ull << order) - 1;
    scanned += (1ull << order) - 1;
    if (cc->nr_migratepages >= COMPACT_CLUSTER_MAX) {
      low_pfn++;
      break;
    }
  }
  if (low_pfn > end)
    low_pfn = end;
  z->ev[BH_STAT_compact_migrate_scanned] += scanned;
  cc->res->migrate_scanned += scanned;
  (void)isolated;
  cc->migrate_pfn = low_pfn;
}

/* isolate_migratepages: the first pageblock from cc->migrate_pfn below the free scanner. */
static int isolate_migratepages(struct compact_control *cc) {
  const bh_arena_t *a = cc->z->arena;
  const uint64_t pb = pb_pages(a);
  uint64_t low_pfn = cc->migrate_pfn, block_end = (low_pfn & ~(pb - 1)) + pb;
  if (block_end <= cc->free_pfn)
    isolate_migratepages_block(cc, low_pfn, block_end);
  return cc->nr_migratepages ? ISOLATE_SUCCESS : ISOLATE_NONE;
}

/* Moves one block to its target through the owner's callback, or gives the target back. */
static void move_block(struct compact_control *cc, uint64_t pfn, uint64_t dst, unsigned order) {
  bh_zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  if (a->discarded)
    bh__discard_on_alloc(a, dst, order); /* the copy refaults a reported page */
  if (a->base)
    memcpy(a->base + (dst << BH_PAGE_SHIFT), a->base + (pfn << BH_PAGE_SHIFT),
           BH_PAGE_SIZE << order);
  if (cc->migrate(cc->ctx, pfn, dst, order)) {
    compaction_free(cc, dst, order);
    z->ev[BH_STAT_pgmigrate_fail] += 1ull << order;
    cc->res->migrate_failed += 1ull << order;
    return;
  }
  bh__page_t *src = &a->pages[pfn], *d = &a->pages[dst];
  z->isolated_pages -= 1ll << order;
  bh__pg_set_alloc(d, bh__pg_mt(src), (uint8_t)order);
  bh__free_pages_zone_locked(z, pfn, order, cc->slot);
  z->ev[BH_STAT_pgmigrate_success] += 1ull << order;
  cc->res->migrated += 1ull << order;
}

static void count_failed(struct compact_control *cc, unsigned order) {
  cc->z->ev[BH_STAT_pgmigrate_fail] += 1ull << order;
  cc->res->migrate_failed += 1ull << order;
}

/*
 * try_split_folio: with the owner's consent (bh_compact_set_split), the block becomes 2^order
 * allocated order-0 pages, queued on the split list as split_folio_to_list leaves them: the
 * tail pages from the last down (__split_huge_page), then the head.  Returns false if the
 * block stays whole.
 */
static bool split_block(struct compact_control *cc, uint64_t pfn, unsigned order) {
  bh_arena_t *a = cc->z->arena;
  if (!a->compact_split || a->compact_split(cc->ctx, pfn, order))
    return false;
  uint8_t mt = bh__pg_mt(&a->pages[pfn]);
  for (uint64_t i = 0; i < (1ull << order); i++)
    bh__pg_set_alloc(&a->pages[pfn + i], mt, 0);
  for (uint64_t i = 1ull << order; i-- > 0 && !cc->err;)
    if (!list_add_tail(&cc->split, pfn + i))
      cc->err = BH_ENOMEM; /* the pages stay where they are, split */
  cc->res->split++;
  return true;
}

/*
 * migrate_pages for one batch: every source gets its target first, in list order; a source
 * without one ends the batch with -ENOMEM (the sources after it stay), unless it is above
 * order 0 and its owner lets it split (see the top of the file; with compact_skip_unsplit a
 * block that does not split stays and the batch goes on).  Then the sources that have a
 * target move through the owner's callback and are freed (migrate_pages_batch's "goto move").
 * Unless the batch ended with -ENOMEM, the pages of split blocks then move one by one, until
 * one finds no target (migrate_pages' one async pass over split_folios; after -ENOMEM they
 * stay, mm/migrate.c:2089-2092).  Returns BH_ENOSPC for -ENOMEM, else 0.
 */
static int migrate_pages(struct compact_control *cc) {
  int n = cc->nr_migrate_entries, moving = 0, rc = 0;
  for (; moving < n; moving++) {
    struct migrate_entry *m = &cc->migratepages[moving];
    m->dst = compaction_alloc(cc, m->order);
    if (m->dst != UINT64_MAX)
      continue;
    if (m->order > 0 && split_block(cc, m->pfn, m->order))
      continue;
    count_failed(cc, m->order);
    if (m->order == 0 || !cc->z->arena->cfg.compact_skip_unsplit) {
      rc = BH_ENOSPC;
      break;
    }
  }
  for (int i = 0; i < moving; i++)
    if (cc->migratepages[i].dst != UINT64_MAX)
      move_block(cc, cc->migratepages[i].pfn, cc->migratepages[i].dst, cc->migratepages[i].order);
  while (cc->split.n) {
    uint64_t pfn = list_pop_head(&cc->split);
    uint64_t dst = rc ? UINT64_MAX : compaction_alloc(cc, 0);
    if (dst == UINT64_MAX) {
      if (!rc)
        count_failed(cc, 0);
      rc = rc ? rc : 1; /* the rest of the split pages stay */
      continue;
    }
    move_block(cc, pfn, dst, 0);
  }
  cc->nr_migrate_entries = 0;
  cc->nr_migratepages = 0;
  return rc == BH_ENOSPC ? BH_ENOSPC : 0;
}

/* compact_finished for cc->order -1. */
static bool compact_finished(struct compact_control *cc) {
  if (scanners_met(cc))
    return true; /* COMPACT_COMPLETE */
  return cc->proactive && zone_score(cc->z, cc->z->arena->pb_order) <= cc->score_low;
}

/* compact_zone: one whole-zone run; the caller holds the zone lock. */
static void compact_zone(struct compact_control *cc) {
  bh_zone_t *z = cc->z;
  bh_arena_t *a = z->arena;
  const uint64_t pb = pb_pages(a);
  /* the zone as the kernel spans it (zone_start_pfn, zone_end_pfn: DMA starts at pfn 1) */
  cc->migrate_pfn = z->zone_start_pfn;
  cc->free_pfn = (z->zone_start_pfn + z->zone_spanned_pages - 1) & ~(pb - 1);
  cc->nr_freepages = cc->nr_migratepages = 0;
  cc->nr_migrate_entries = 0;
  cc->slot = z->node;
  z->ev[BH_STAT_compact_runs]++;
  cc->res->zones++;
  while (!cc->err && !compact_finished(cc)) {
    if (isolate_migratepages(cc) == ISOLATE_NONE)
      continue;
    if (migrate_pages(cc) == BH_ENOSPC && !scanners_met(cc))
      break; /* COMPACT_CONTENDED */
  }
  for (unsigned o = 0; o <= a->max_order; o++) {
    struct freelist *l = &cc->freepages[o];
    while (l->n)
      release_block(cc, list_pop_head(l), o);
  }
  cc->nr_freepages = 0;
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
    bh_zone_t *z = &a->zones[i];
    if (node >= 0 && z->node != node)
      continue;
    cc.z = z;
    bh__zone_lock(z);
    compact_zone(&cc);
    bh__zone_unlock(z);
  }
  for (unsigned o = 0; o <= BH_ORDER_LIMIT; o++)
    free(cc.freepages[o].pfn);
  free(cc.split.pfn);
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

int bh_compact_set_split(bh_arena_t *a, bh_split_fn split) {
  if (!a)
    return BH_EINVAL;
  a->compact_split = split;
  return BH_OK;
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

/* fragmentation_score_wmark */
static unsigned score_wmark(unsigned proactiveness, bool low) {
  unsigned wmark_low = 100 - proactiveness < 5 ? 5 : 100 - proactiveness;
  return low ? wmark_low : (wmark_low + 10 < 100 ? wmark_low + 10 : 100);
}

/*
 * One node's proactive check (should_proactive_compact_node, then compact_node(proactive)):
 * compacts when the node's score is above the high mark.  Adds to res; returns 1 if it
 * compacted, 0 if not, or an error.  *lowered tells whether the node's score went down.
 */
static int proactive_node(bh_arena_t *a, int node, unsigned proactiveness, bh_migrate_fn migrate,
                          void *ctx, bh_compact_result_t *res, bool *lowered) {
  unsigned before = bh_fragmentation_score(a, node);
  *lowered = true;
  if (before <= score_wmark(proactiveness, false))
    return 0;
  int err = compact_zones(a, node, true, score_wmark(proactiveness, true), migrate, ctx, res);
  if (err)
    return err;
  *lowered = bh_fragmentation_score(a, node) < before;
  return 1;
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
  int nodes = 0;
  for (unsigned n = 0; n < a->cfg.nr_nodes; n++) {
    bool lowered;
    int r = proactive_node(a, (int)n, proactiveness, migrate, ctx, res, &lowered);
    if (r < 0)
      return r;
    nodes += r;
  }
  res->score_after = max_score(a);
  return nodes;
}

#define KCOMPACTD_INTERVAL_NS 500000000ull /* HPAGE_FRAG_CHECK_INTERVAL_MSEC */
#define COMPACT_MAX_DEFER_SHIFT 6

int bh_kcompactd_run(bh_arena_t *a, unsigned proactiveness, uint64_t now_ns, bh_migrate_fn migrate,
                     void *ctx, bh_compact_result_t *res, uint64_t *next_ns) {
  bh_compact_result_t local;
  if (!a || !migrate || proactiveness > 100 || !next_ns)
    return BH_EINVAL;
  if (!res)
    res = &local;
  memset(res, 0, sizeof(*res));
  res->score_before = res->score_after = max_score(a);
  *next_ns = UINT64_MAX;
  if (!proactiveness)
    return 0;
  int nodes = 0;
  for (unsigned n = 0; n < a->cfg.nr_nodes; n++) {
    uint64_t *due = &a->kcompactd_next[n];
    if (*due <= now_ns) {
      bool lowered;
      int r = proactive_node(a, (int)n, proactiveness, migrate, ctx, res, &lowered);
      if (r < 0)
        return r;
      nodes += r;
      /* a run that did not lower the score defers the next check (kcompactd()) */
      *due = now_ns +
             (lowered ? KCOMPACTD_INTERVAL_NS : KCOMPACTD_INTERVAL_NS << COMPACT_MAX_DEFER_SHIFT);
    }
    *next_ns = *due < *next_ns ? *due : *next_ns;
  }
  res->score_after = max_score(a);
  return nodes;
}
