/*
 * The invariant checker.  With every lock held it verifies, zone by zone:
 *   - every free list holds free-block heads of exactly its order, aligned, inside the zone,
 *     whose pageblock type is the list's type, each on one list only, and nr_free per order
 *     and NR_FREE_PAGES (and the HighAtomic share) agree with what the lists hold;
 *   - every pcp list holds pcp-owned heads of its order and the pcp count agrees;
 *   - walking the zone block by block, every page belongs to exactly one block (free, on a pcp
 *     list, allocated or isolated), interior pages carry no state, free heads were found on a
 *     list, isolated pages add up to the zone's isolated count;
 *   - no two free buddies are left unmerged where __free_one_page would have merged them;
 *   - PageReported is set only on free heads, pageblock types are valid.
 * It returns the number of violations and describes each one.
 */
#include "buddy/internal.h"

#include <stdarg.h>
#include <stdlib.h>

struct checker {
  bh_arena_t *a;
  FILE *report;
  unsigned max_reports;
  long violations;
  uint64_t *seen; /* one bit per page: head found on a list */
};

__attribute__((format(printf, 2, 3))) static void violation(struct checker *c, const char *fmt,
                                                            ...) {
  c->violations++;
  if (!c->report || (c->max_reports && (unsigned long)c->violations > c->max_reports))
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("check: ", c->report);
  vfprintf(c->report, fmt, ap);
  fputc('\n', c->report);
  va_end(ap);
}

static bool test_and_set_seen(struct checker *c, uint64_t pfn) {
  uint64_t bit = 1ull << (pfn & 63), *w = &c->seen[pfn >> 6];
  bool was = *w & bit;
  *w |= bit;
  return was;
}

static bool in_zone(const bh_zone_t *z, uint64_t pfn) {
  return pfn >= z->start_pfn && pfn < z->start_pfn + z->spanned_pages;
}

/* Walks one list; returns its length, or stops with a violation on a broken link. */
static uint64_t walk_list(struct checker *c, const bh_zone_t *z, uint32_t head, const char *what,
                          void (*visit)(struct checker *, const bh_zone_t *, uint64_t, void *),
                          void *arg) {
  bh_arena_t *a = c->a;
  uint64_t n = 0;
  uint32_t prev = head;
  for (uint32_t x = a->pages[head].next; x != head; prev = x, x = a->pages[x].next) {
    if (x >= a->nr_pages || !in_zone(z, x)) {
      violation(c, "%s of zone %s node %d: link to %u outside the zone", what,
                bh_zone_name(z->type), z->node, x);
      return n;
    }
    if (a->pages[x].prev != prev)
      violation(c, "%s: pfn %u has a broken prev link", what, x);
    if (test_and_set_seen(c, x)) {
      violation(c, "%s: pfn %u is on more than one list (or the list loops)", what, x);
      return n;
    }
    visit(c, z, x, arg);
    n++;
  }
  return n;
}

struct free_arg {
  unsigned order;
  int mt;
  uint64_t pages;
};

static void visit_free(struct checker *c, const bh_zone_t *z, uint64_t pfn, void *arg) {
  bh_arena_t *a = c->a;
  struct free_arg *fa = arg;
  const bh__page_t *p = &a->pages[pfn];
  if ((p->flags & BH__PG_STATE) != BH__PG_BUDDY)
    violation(c, "pfn %lu on free list order %u %s is not marked free (flags %#x)",
              (unsigned long)pfn, fa->order, bh_migratetype_name(fa->mt), p->flags);
  if (p->order != fa->order)
    violation(c, "pfn %lu on free list order %u has order %u", (unsigned long)pfn, fa->order,
              p->order);
  if (pfn & ((1ull << fa->order) - 1))
    violation(c, "pfn %lu on free list order %u is misaligned", (unsigned long)pfn, fa->order);
  uint64_t end = pfn + (1ull << fa->order);
  if (end > z->start_pfn + z->spanned_pages)
    violation(c, "free block pfn %lu order %u runs past its zone", (unsigned long)pfn, fa->order);
  uint64_t step = 1ull << a->pb_order;
  for (uint64_t b = pfn; b < end; b += step)
    if (bh__pb_mt(a, b) != fa->mt) {
      violation(c, "free block pfn %lu order %u on the %s list lies in a %s pageblock",
                (unsigned long)pfn, fa->order, bh_migratetype_name(fa->mt),
                bh_migratetype_name(bh__pb_mt(a, b)));
      break;
    }
  fa->pages += 1ull << fa->order;
}

static void check_free_lists(struct checker *c, bh_zone_t *z) {
  bh_arena_t *a = c->a;
  int64_t free_pages = 0, highatomic = 0;
  for (unsigned o = 0; o <= a->max_order; o++) {
    uint64_t blocks = 0;
    for (int mt = 0; mt < BH_MT_TYPES; mt++) {
      struct free_arg fa = {o, mt, 0};
      blocks += walk_list(c, z, bh__free_list(z, o, mt), "free list", visit_free, &fa);
      if (mt != BH_MT_ISOLATE)
        free_pages += (int64_t)fa.pages;
      if (mt == BH_MT_HIGHATOMIC)
        highatomic += (int64_t)fa.pages;
    }
    if (blocks != z->nr_free[o])
      violation(c, "zone %s node %d order %u: nr_free %lu but the lists hold %lu",
                bh_zone_name(z->type), z->node, o, (unsigned long)z->nr_free[o],
                (unsigned long)blocks);
  }
  int64_t counted = atomic_load(&z->free_pages);
  if (counted != free_pages)
    violation(c, "zone %s node %d: NR_FREE_PAGES %ld but the lists hold %ld pages",
              bh_zone_name(z->type), z->node, (long)counted, (long)free_pages);
  if (z->nr_free_highatomic != highatomic)
    violation(c, "zone %s node %d: free HighAtomic pages %ld but the lists hold %ld",
              bh_zone_name(z->type), z->node, (long)z->nr_free_highatomic, (long)highatomic);
}

struct pcp_list_of {
  unsigned order, cpu;
};

static void visit_pcp(struct checker *c, const bh_zone_t *z, uint64_t pfn, void *arg) {
  const bh__page_t *p = &c->a->pages[pfn];
  const struct pcp_list_of *l = arg;
  if ((p->flags & BH__PG_STATE) != BH__PG_PCP || p->order != l->order)
    violation(c, "pfn %lu on a pcp list of order %u has flags %#x order %u", (unsigned long)pfn,
              l->order, p->flags, p->order);
  else if (p->priv != l->cpu)
    violation(c, "pfn %lu on cpu %u's pcp list says cpu %u", (unsigned long)pfn, l->cpu, p->priv);
}

static void check_pcp(struct checker *c, bh_zone_t *z) {
  bh_arena_t *a = c->a;
  for (unsigned cpu = 0; z->pcp && cpu < a->cfg.nr_cpus; cpu++) {
    bh__pcp_t *pcp = &z->pcp[cpu];
    uint64_t pages = 0;
    for (unsigned i = 0; i < BH__NR_PCP_LISTS; i++) {
      struct pcp_list_of l = {i >= BH__NR_LOWORDER_PCP_LISTS ? a->pb_order : i / BH_MT_PCPTYPES,
                              cpu};
      pages += walk_list(c, z, pcp->head + i, "pcp list", visit_pcp, &l) << l.order;
    }
    if (pages != (uint64_t)pcp->count)
      violation(c, "zone %s node %d cpu %u: pcp count %d but the lists hold %lu pages",
                bh_zone_name(z->type), z->node, cpu, pcp->count, (unsigned long)pages);
  }
}

/* Would __free_one_page have merged this free block with its buddy? */
static bool mergeable_pair(const bh_arena_t *a, uint64_t pfn, uint64_t buddy, unsigned order) {
  if (order < a->pb_order)
    return true;
  int m1 = bh__pb_mt(a, pfn), m2 = bh__pb_mt(a, buddy);
  return m1 == m2 || (bh__mt_mergeable(m1) && bh__mt_mergeable(m2));
}

static void check_blocks(struct checker *c, bh_zone_t *z) {
  bh_arena_t *a = c->a;
  uint64_t end = z->start_pfn + z->spanned_pages, isolated = 0;
  for (uint64_t pfn = z->start_pfn; pfn < end;) {
    const bh__page_t *p = &a->pages[pfn];
    unsigned state = p->flags & BH__PG_STATE;
    if (!state || (state & (state - 1))) {
      violation(c, "pfn %lu belongs to no block (flags %#x)", (unsigned long)pfn, p->flags);
      pfn++;
      continue;
    }
    if (p->order > a->max_order || (pfn & ((1ull << p->order) - 1))) {
      violation(c, "block head pfn %lu has a bad order %u", (unsigned long)pfn, p->order);
      pfn++;
      continue;
    }
    if ((p->flags & BH__PG_REPORTED) && state != BH__PG_BUDDY)
      violation(c, "pfn %lu is marked reported but is not free", (unsigned long)pfn);
    if ((p->flags & BH__PG_MARKED) && state != BH__PG_BUDDY)
      violation(c, "pfn %lu carries a strategy's mark but is not free", (unsigned long)pfn);
    bool listed = c->seen[pfn >> 6] & (1ull << (pfn & 63));
    if ((state == BH__PG_BUDDY || state == BH__PG_PCP) && !listed)
      violation(c, "%s block pfn %lu order %u is on no list",
                state == BH__PG_BUDDY ? "free" : "pcp", (unsigned long)pfn, p->order);
    if ((state == BH__PG_ALLOC || state == BH__PG_ISOLATED) && listed)
      violation(c, "%s block pfn %lu is on a list",
                state == BH__PG_ALLOC ? "allocated" : "isolated", (unsigned long)pfn);
    if (state == BH__PG_ISOLATED)
      isolated += 1ull << p->order;
    if (state == BH__PG_BUDDY && p->order < a->max_order) {
      uint64_t buddy = pfn ^ (1ull << p->order);
      const bh__page_t *b = &a->pages[buddy];
      if ((b->flags & BH__PG_BUDDY) && b->order == p->order && buddy > pfn &&
          mergeable_pair(a, pfn, buddy, p->order))
        violation(c, "free buddies pfn %lu and %lu of order %u are not merged", (unsigned long)pfn,
                  (unsigned long)buddy, p->order);
    }
    uint64_t next = pfn + (1ull << p->order);
    for (uint64_t i = pfn + 1; i < next && i < end; i++)
      if (a->pages[i].flags & BH__PG_STATE) {
        violation(c, "pfn %lu inside the block at %lu carries state %#x", (unsigned long)i,
                  (unsigned long)pfn, a->pages[i].flags);
        break;
      }
    pfn = next;
  }
  if ((int64_t)isolated != z->isolated_pages)
    violation(c, "zone %s node %d: %ld pages counted isolated, %lu found", bh_zone_name(z->type),
              z->node, (long)z->isolated_pages, (unsigned long)isolated);
  for (uint64_t pb = z->start_pfn; pb < end; pb += 1ull << a->pb_order)
    if (bh__pb_mt(a, pb) >= BH_MT_TYPES)
      violation(c, "pageblock at pfn %lu has an invalid type %d", (unsigned long)pb,
                bh__pb_mt(a, pb));
}

static void lock_all(bh_arena_t *a, bool lock) {
  for (int i = 0; i < a->nr_zones; i++) {
    bh_zone_t *z = &a->zones[i];
    for (unsigned c = 0; z->pcp && c < a->cfg.nr_cpus; c++) {
      if (lock)
        bh__pcp_lock(&z->pcp[c]);
      else
        bh__pcp_unlock(&z->pcp[c]);
    }
    if (lock)
      bh__zone_lock(z);
    else
      bh__zone_unlock(z);
  }
}

long bh_arena_check(bh_arena_t *a, FILE *report, unsigned max_reports) {
  if (!a)
    return -1;
  struct checker c = {a, report, max_reports, 0, NULL};
  c.seen = calloc((size_t)(a->nr_pages / 64 + 1), sizeof(uint64_t));
  if (!c.seen)
    return BH_ENOMEM;
  lock_all(a, true);
  for (int i = 0; i < a->nr_zones; i++) {
    check_free_lists(&c, &a->zones[i]);
    check_pcp(&c, &a->zones[i]);
  }
  for (int i = 0; i < a->nr_zones; i++)
    check_blocks(&c, &a->zones[i]);
  lock_all(a, false);
  free(c.seen);
  if (report && max_reports && (unsigned long)c.violations > max_reports)
    fprintf(report, "check: ... %ld violations in all\n", c.violations);
  return c.violations;
}
