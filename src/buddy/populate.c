/*
 * Starting from a machine's state, and following a kernel's own choices.
 *
 * bh_arena_populate gives a new arena the state of a recorded machine: exactly the given free
 * blocks are free, on the buddy lists of their pageblock's type (or on pcp lists), and every
 * other page of a zone is allocated "before the trace", an order-0 block flagged PG_PRETRACE.
 * When a trace frees such memory, bh_arena_adopt joins the pages into the block the trace
 * frees, so the free is an ordinary one.  bh_alloc_pfn_at takes the very block a kernel
 * allocated, splitting the free block around it as __rmqueue_smallest/expand would have
 * split it had the kernel's lists held it first.
 *
 * The invariant checker (bh_arena_check) is the test of all three: a populated arena must
 * pass it, and its buddyinfo and pagetypeinfo dumps must be the given state's.
 */
#include "buddy/internal.h"

#include <buddyhint/strategy.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int bad(const char **why, const char *msg) {
  if (why)
    *why = msg;
  return BH_EINVAL;
}

/* The zone that holds the max-order block of pfn, or NULL. */
static bh_zone_t *zone_at(const bh_arena_t *a, uint64_t pfn) {
  if (pfn >= a->nr_pages)
    return NULL;
  uint8_t id = a->block_zone[pfn >> a->max_order];
  return id == 0xff ? NULL : &a->zones[id];
}

/* [pfn, pfn + n) inside the zone's span as the kernel has it. */
static bool in_span(const bh_zone_t *z, uint64_t pfn, uint64_t n) {
  return pfn >= z->zone_start_pfn && pfn + n <= z->zone_start_pfn + z->zone_spanned_pages;
}

static inline bool pb_absent(const bh_arena_t *a, uint64_t pfn) {
  return a->pageblock[pfn >> a->pb_order] & BH__PB_ABSENT;
}

/* Every page of [pfn, pfn + n) is allocated before the trace and not claimed since. */
static bool all_pretrace(const bh_arena_t *a, uint64_t pfn, uint64_t n) {
  const bh__page_t *pg = a->pages;
  for (uint64_t i = pfn; i < pfn + n; i++)
    if (pg[i].flags != (BH__PG_ALLOC | BH__PG_PRETRACE) || pg[i].order)
      return false;
  return true;
}

/* The migratetype of a block's pageblocks, or -1 if they differ or one is absent. */
static inline int block_mt(const bh_arena_t *a, uint64_t pfn, unsigned order) {
  int mt = bh__pb_mt(a, pfn);
  if (order <= a->pb_order) /* one pageblock: nearly every block */
    return pb_absent(a, pfn) ? -1 : mt;
  uint64_t step = 1ull << a->pb_order, end = pfn + (1ull << order);
  for (uint64_t b = pfn & ~(step - 1); b < end; b += step)
    if (pb_absent(a, b) || bh__pb_mt(a, b) != mt)
      return -1;
  return mt;
}

/* Empties the zone's free lists and pcp lists and zeroes what counts them. */
static void reset_zone(bh_zone_t *z) {
  bh_arena_t *a = z->arena;
  for (unsigned i = 0; i < (a->max_order + 1) * BH_MT_TYPES; i++)
    bh__list_init(a, z->free_head + i);
  memset(z->nr_free, 0, sizeof(z->nr_free));
  atomic_store(&z->free_pages, 0);
  z->nr_free_highatomic = 0;
  z->isolated_pages = 0;
  for (unsigned c = 0; z->pcp && c < a->cfg.nr_cpus; c++) {
    for (unsigned i = 0; i < BH__NR_PCP_LISTS; i++)
      bh__list_init(a, z->pcp[c].head + i);
    z->pcp[c].count = 0;
  }
}

/* The zone's pageblock types. */
static int set_pageblocks(bh_zone_t *z, const bh_populate_t *pop, const char **why) {
  bh_arena_t *a = z->arena;
  uint64_t step = 1ull << a->pb_order;
  for (uint64_t pfn = z->start_pfn; pfn < z->start_pfn + z->spanned_pages; pfn += step) {
    uint64_t b = pfn >> a->pb_order;
    uint8_t v = b < pop->nr_pageblocks ? pop->pageblock_mt[b] : BH_PAGEBLOCK_ABSENT;
    uint8_t keep = a->pageblock[b] & BH__PB_ABSENT; /* outside the span: stays absent */
    if (v == BH_PAGEBLOCK_ABSENT)
      a->pageblock[b] = BH_MT_MOVABLE | BH__PB_ABSENT;
    else if (v < BH_MT_TYPES)
      a->pageblock[b] = v | keep;
    else
      return bad(why, "a pageblock type is not a migratetype");
  }
  return 0;
}

/*
 * Bitmaps over the arena's pages: the pages of the free blocks, and the movable pages.  They
 * let the checks and the page descriptors work a run or 64 pages at a time; fresh anonymous
 * memory comes zeroed, without a memset.
 */
struct bits {
  uint64_t *free, *movable;
  size_t bytes;
};

static uint64_t *bits_new(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void bits_free(struct bits *bs) {
  if (bs->free)
    munmap(bs->free, bs->bytes);
  if (bs->movable)
    munmap(bs->movable, bs->bytes);
}

/* Bits [p, p + n) of a word: the mask of those in word p / 64 (n <= 64 - p % 64). */
static inline uint64_t word_mask(uint64_t p, uint64_t n) {
  return (n >= 64 ? ~0ull : (1ull << n) - 1) << (p & 63);
}

/* Sets bits [p, p + n); false, and nothing set, if one of them was set already. */
static bool bits_claim(uint64_t *bm, uint64_t p, uint64_t n) {
  if ((p & 63) + n <= 64) { /* within one word: most blocks */
    uint64_t m = word_mask(p, n);
    if (bm[p >> 6] & m)
      return false;
    bm[p >> 6] |= m;
    return true;
  }
  for (uint64_t q = p, e = p + n; q < e;) {
    uint64_t len = 64 - (q & 63) < e - q ? 64 - (q & 63) : e - q;
    if (bm[q >> 6] & word_mask(q, len))
      return false;
    q += len;
  }
  for (uint64_t q = p, e = p + n; q < e;) {
    uint64_t len = 64 - (q & 63) < e - q ? 64 - (q & 63) : e - q;
    bm[q >> 6] |= word_mask(q, len);
    q += len;
  }
  return true;
}

/* Sets bits [p, p + n), set or not. */
static void bits_set(uint64_t *bm, uint64_t p, uint64_t n) {
  for (uint64_t q = p, e = p + n; q < e;) {
    uint64_t len = 64 - (q & 63) < e - q ? 64 - (q & 63) : e - q;
    bm[q >> 6] |= word_mask(q, len);
    q += len;
  }
}

static int set_movable(bh_arena_t *a, const bh_populate_t *pop, struct bits *bs, const char **why) {
  for (size_t i = 0; i < pop->nr_movable; i++) {
    const bh_page_run_t *r = &pop->movable[i];
    if (r->pfn >= a->nr_pages || r->count > a->nr_pages - r->pfn)
      return bad(why, "a movable run lies outside the arena");
    bits_set(bs->movable, r->pfn, r->count);
  }
  return 0;
}

/* One free block checked and its pages marked; it goes on its list once the pages are set. */
static int check_free(bh_arena_t *a, uint64_t pfn, unsigned order, struct bits *bs,
                      const char **why) {
  bh_zone_t *z = zone_at(a, pfn);
  if (order > a->max_order || (pfn & ((1ull << order) - 1)))
    return bad(why, "a free block is misaligned or above MAX_PAGE_ORDER");
  uint64_t n = 1ull << order;
  if (!z || !in_span(z, pfn, n))
    return bad(why, "a free block lies outside its zone's span");
  if (block_mt(a, pfn, order) < 0)
    return bad(why, "a free block lies in an absent pageblock or across pageblocks of "
                    "different types");
  if (!bits_claim(bs->free, pfn, n))
    return bad(why, "free blocks overlap");
  return 0;
}

/* The second word of a page descriptor (flags, order 0, mt, spare, priv 0), as one store. */
_Static_assert(offsetof(bh__page_t, flags) == 8 && offsetof(bh__page_t, priv) == 12 &&
                   sizeof(bh__page_t) == 16,
               "a page descriptor's flags to priv are its second 8 bytes");

static inline uint64_t desc_word(uint8_t flags, uint8_t mt) {
  bh__page_t t;
  memset(&t, 0, sizeof(t));
  t.flags = flags;
  t.mt = mt;
  uint64_t w;
  memcpy(&w, (const char *)&t + offsetof(bh__page_t, flags), sizeof(w));
  return w;
}

static inline void put_desc(bh__page_t *pg, uint64_t i, uint64_t w) {
  memcpy((char *)&pg[i] + offsetof(bh__page_t, flags), &w, sizeof(w));
}

/* Pages [p, e) given the same word, sixteen stores a round. */
static void fill_desc(bh__page_t *pg, uint64_t p, uint64_t e, uint64_t w) {
  for (; p + 16 <= e; p += 16) { /* spelt out: -O2 keeps a loop of 16 as a loop */
    put_desc(pg, p, w);
    put_desc(pg, p + 1, w);
    put_desc(pg, p + 2, w);
    put_desc(pg, p + 3, w);
    put_desc(pg, p + 4, w);
    put_desc(pg, p + 5, w);
    put_desc(pg, p + 6, w);
    put_desc(pg, p + 7, w);
    put_desc(pg, p + 8, w);
    put_desc(pg, p + 9, w);
    put_desc(pg, p + 10, w);
    put_desc(pg, p + 11, w);
    put_desc(pg, p + 12, w);
    put_desc(pg, p + 13, w);
    put_desc(pg, p + 14, w);
    put_desc(pg, p + 15, w);
  }
  for (; p < e; p++)
    put_desc(pg, p, w);
}

/* A run of pages that will all get the same word, filled when it ends. */
struct pending {
  uint64_t start, end, w;
};

static inline void pending_add(bh__page_t *pg, struct pending *r, uint64_t p, uint64_t e,
                               uint64_t w) {
  if (r->end == p && r->w == w) {
    r->end = e;
    return;
  }
  fill_desc(pg, r->start, r->end, r->w);
  *r = (struct pending){p, e, w};
}

/*
 * Every page of the zone: an order-0 block allocated before the trace, of its pageblock's
 * kind (Movable ones movable unless a movable map is given, then the map's movable pages;
 * absent memory is never moved), PG_NOPAGE outside the zone's span; the pages of free blocks
 * with no flags (their heads go on the lists next).  The links are left as they are.  This is
 * the one loop over all pages before the first event: the bitmaps are read 64 pages at a
 * time, and the pages are written in runs of one word, across words, pageblocks and runs of
 * the bitmaps alike (nearly the whole zone is a few long runs).
 */
static void set_pages(bh_zone_t *z, const bh_populate_t *pop, const struct bits *bs) {
  bh_arena_t *a = z->arena;
  bh__page_t *pg = a->pages; /* a local: the stores cannot change it */
  uint64_t step = 1ull << a->pb_order;
  const uint8_t alloc = BH__PG_ALLOC | BH__PG_PRETRACE;
  struct pending run = {z->start_pfn, z->start_pfn, 0};
  for (uint64_t pfn = z->start_pfn; pfn < z->start_pfn + z->spanned_pages; pfn += step) {
    int mt = bh__pb_mt(a, pfn);
    bool present = !pb_absent(a, pfn);
    uint8_t pmt = !present                                        ? BH_MT_UNMOVABLE
                  : mt == BH_MT_MOVABLE && pop->movable           ? BH_MT_UNMOVABLE
                  : mt == BH_MT_HIGHATOMIC || mt == BH_MT_ISOLATE ? BH_MT_UNMOVABLE
                                                                  : (uint8_t)mt;
    uint8_t mmt = present ? BH_MT_MOVABLE : pmt; /* a page of the movable map */
    /* the word of a page by its bits: free (1), movable (2) */
    uint64_t word[4] = {desc_word(alloc, pmt), desc_word(0, pmt), desc_word(alloc, mmt),
                        desc_word(0, mmt)};
    bool whole = in_span(z, pfn, step);
    for (uint64_t p = pfn, end = pfn + step; p < end;) {
      uint64_t len = 64, all = ~0ull, fw, mw = 0;
      if (!(p & 63) && end - p >= 64) { /* a whole word: nearly always */
        fw = bs->free[p >> 6];
        if (bs->movable)
          mw = bs->movable[p >> 6];
      } else {
        len = 64 - (p & 63) < end - p ? 64 - (p & 63) : end - p;
        all = word_mask(p, len) >> (p & 63);
        fw = (bs->free[p >> 6] >> (p & 63)) & all;
        mw = bs->movable ? (bs->movable[p >> 6] >> (p & 63)) & all : 0;
      }
      if (whole && !mw && (!fw || fw == all)) { /* 64 pages alike: nearly always */
        pending_add(pg, &run, p, p + len, word[fw & 1]);
      } else if (!whole) { /* a pageblock across the span's edge: page by page */
        for (uint64_t i = 0; i < len; i++) {
          uint8_t fl = (fw >> i) & 1 ? 0 : alloc | (in_span(z, p + i, 1) ? 0 : BH__PG_NOPAGE);
          pending_add(pg, &run, p + i, p + i + 1, desc_word(fl, (mw >> i) & 1 ? mmt : pmt));
        }
      } else {
        /* the runs of pages alike: a run ends at bit i where bit i + 1 differs */
        uint64_t ends = ((fw ^ (fw >> 1)) | (mw ^ (mw >> 1))) & (all >> 1);
        for (uint64_t s = 0; s < len;) {
          uint64_t e = ends ? (uint64_t)__builtin_ctzll(ends) + 1 : len;
          ends &= ends - 1;
          pending_add(pg, &run, p + s, p + e, word[((fw >> s) & 1) | ((mw >> s) & 1) << 1]);
          s = e;
        }
      }
      p += len;
    }
  }
  fill_desc(pg, run.start, run.end, run.w);
}

/* A checked free block onto the tail of its pageblock type's list. */
static void add_free(bh_arena_t *a, uint64_t pfn, unsigned order) {
  a->pages[pfn].mt = 0;
  bh__add_to_free_list(zone_at(a, pfn), pfn, order, bh__pb_mt(a, pfn), true);
}

/* No free block may have a free buddy of its order that __free_one_page would merge it with. */
static int check_merged(const bh_arena_t *a, uint64_t pfn, unsigned order, const char **why) {
  if (order >= a->max_order)
    return 0;
  uint64_t buddy = pfn ^ (1ull << order);
  const bh__page_t *b = &a->pages[buddy];
  if (!(b->flags & BH__PG_BUDDY) || b->order != order)
    return 0;
  if (order >= a->pb_order) {
    int m1 = bh__pb_mt(a, pfn), m2 = bh__pb_mt(a, buddy);
    if (m1 != m2 && !(bh__mt_mergeable(m1) && bh__mt_mergeable(m2)))
      return 0;
  }
  return bad(why, "two free blocks are buddies the kernel would have merged");
}

/* One block onto the tail of a pcp list. */
static int add_pcp(bh_arena_t *a, const bh_pcp_block_t *pb, const char **why) {
  uint64_t pfn = pb->pfn, n = 1ull << pb->order;
  bh_zone_t *z = zone_at(a, pfn);
  if (!z || !z->pcp || pb->order > a->max_order || !bh__pcp_order(a, pb->order))
    return bad(why, "a pcp block of an order without pcp lists, or outside the zones");
  if ((pfn & (n - 1)) || !in_span(z, pfn, n))
    return bad(why, "a pcp block is misaligned or outside its zone's span");
  int mt = block_mt(a, pfn, pb->order);
  if (mt < 0 || mt == BH_MT_ISOLATE)
    return bad(why, "a pcp block lies in an absent or isolated pageblock");
  if (!all_pretrace(a, pfn, n))
    return bad(why, "a pcp block overlaps a free block or another pcp block");
  if (mt > BH_MT_RECLAIMABLE)
    mt = BH_MT_MOVABLE; /* as free_unref_page: HighAtomic blocks go on the Movable list */
  if (pb->list) {
    if (pb->list - 1 >= BH_MT_PCPTYPES)
      return bad(why, "a pcp block's list is not of a pcp migratetype");
    mt = pb->list - 1;
  }
  bh__pcp_t *pcp = &z->pcp[pb->cpu % a->cfg.nr_cpus];
  for (uint64_t i = pfn + 1; i < pfn + n; i++)
    bh__pg_set_flags(&a->pages[i], 0);
  bh__pg_set_pcp(&a->pages[pfn], pb->order, (uint32_t)(pcp - z->pcp));
  bh__list_add_tail(a, (uint32_t)pfn, pcp->head + bh__pcp_pindex(a, mt, pb->order));
  pcp->count += (int)n;
  return 0;
}

static void lock_zones(bh_arena_t *a, bool lock) {
  for (int i = 0; i < a->nr_zones; i++) {
    if (lock)
      bh__zone_lock(&a->zones[i]);
    else
      bh__zone_unlock(&a->zones[i]);
  }
}

/* The pcp high marks a machine had at the start (bh_populate_t.pcp_high). */
static void set_pcp_high(bh_arena_t *a, const bh_populate_t *pop) {
  unsigned n = a->cfg.nr_cpus;
  if (!pop->pcp_high || pop->nr_pcp_high != (size_t)a->nr_zones * n)
    return;
  for (int i = 0; i < a->nr_zones; i++)
    for (unsigned c = 0; a->zones[i].pcp && c < n; c++) {
      bh__pcp_t *pcp = &a->zones[i].pcp[c];
      int64_t h = pop->pcp_high[(size_t)i * n + c];
      if (h)
        pcp->high = h < pcp->high_min ? pcp->high_min : h > pcp->high_max ? pcp->high_max : (int)h;
    }
}

int bh_arena_populate(bh_arena_t *a, const bh_populate_t *pop, const char **why) {
  if (why)
    *why = NULL;
  if (!a || !pop || (pop->nr_pageblocks && !pop->pageblock_mt) || (pop->nr_free && !pop->free) ||
      (pop->nr_pcp && !pop->pcp) || (pop->nr_movable && !pop->movable))
    return bad(why, "missing arguments");
  for (int i = 0; i < a->nr_zones; i++)
    if (a->zones[i].notify_order != UINT8_MAX || a->zones[i].del_order != UINT8_MAX)
      return BH_EBUSY;
  struct bits bs = {NULL, NULL, ((a->nr_pages + 63) / 64 * 8 + 4095) & ~(size_t)4095};
  bs.free = bits_new(bs.bytes);
  bs.movable = pop->nr_movable ? bits_new(bs.bytes) : NULL;
  if (!bs.free || (pop->nr_movable && !bs.movable)) {
    bits_free(&bs);
    return BH_ENOMEM;
  }
  int err = 0;
  lock_zones(a, true);
  for (int i = 0; !err && i < a->nr_zones; i++) {
    reset_zone(&a->zones[i]);
    err = set_pageblocks(&a->zones[i], pop, why);
  }
  if (!err)
    err = set_movable(a, pop, &bs, why);
  for (size_t i = 0; !err && i < pop->nr_free; i++) {
    const bh_block_run_t *r = &pop->free[i];
    for (uint64_t k = 0; !err && k < r->count; k++)
      err = check_free(a, r->pfn + (k << r->order), r->order, &bs, why);
  }
  for (int i = 0; !err && i < a->nr_zones; i++)
    set_pages(&a->zones[i], pop, &bs);
  for (size_t i = 0; !err && i < pop->nr_free; i++) {
    const bh_block_run_t *r = &pop->free[i];
    for (uint64_t k = 0; k < r->count; k++)
      add_free(a, r->pfn + (k << r->order), r->order);
  }
  for (size_t i = 0; !err && i < pop->nr_free; i++) {
    const bh_block_run_t *r = &pop->free[i];
    for (uint64_t k = 0; !err && k < r->count; k++)
      err = check_merged(a, r->pfn + (k << r->order), r->order, why);
  }
  for (size_t i = 0; !err && i < pop->nr_pcp; i++)
    err = add_pcp(a, &pop->pcp[i], why);
  if (!err)
    set_pcp_high(a, pop);
  lock_zones(a, false);
  bits_free(&bs);
  return err;
}

int bh_arena_adopt(bh_arena_t *a, uint64_t pfn, unsigned order) {
  if (!a || order > a->max_order)
    return BH_EINVAL;
  uint64_t n = 1ull << order;
  if (pfn >= a->nr_pages || n > a->nr_pages - pfn)
    return BH_EFAULT;
  if (pfn & (n - 1))
    return BH_EALIGN;
  bh_zone_t *z = zone_at(a, pfn);
  if (!z || !in_span(z, pfn, n))
    return BH_EFAULT;
  bh__zone_lock(z);
  if (!all_pretrace(a, pfn, n)) {
    bh__zone_unlock(z);
    return BH_ENOTALLOC;
  }
  for (uint64_t i = pfn + 1; i < pfn + n; i++)
    bh__pg_set_flags(&a->pages[i], 0);
  bh__pg_set(&a->pages[pfn], BH__PG_ALLOC, (uint8_t)order);
  uint64_t step = 1ull << a->pb_order;
  for (uint64_t b = pfn & ~(step - 1); b < pfn + n; b += step)
    a->pageblock[b >> a->pb_order] &= (uint8_t)~BH__PB_ABSENT; /* initialised now */
  bh__zone_unlock(z);
  return BH_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Allocating the block a kernel chose                                                       */
/* ---------------------------------------------------------------------------------------- */

/*
 * The block of `high` order at head holds pfn: split it down to `low`, putting the halves that
 * do not hold pfn at the head of their free lists (as expand puts the upper halves), and
 * return pfn's block.
 */
static void split_around(bh_zone_t *z, uint64_t head, unsigned high, uint64_t pfn, unsigned low,
                         int mt) {
  while (high > low) {
    high--;
    uint64_t half = 1ull << high;
    uint64_t other = pfn < head + half ? head + half : head;
    if (other == head)
      head += half;
    bh__add_to_free_list(z, other, high, mt, false);
    z->ev[BH_STAT_splits]++;
  }
}

static const uint8_t pgalloc_stat[BH_NR_ZONE_TYPES] = {
    BH_STAT_pgalloc_dma, BH_STAT_pgalloc_dma32, BH_STAT_pgalloc_normal, BH_STAT_pgalloc_movable};

static void mark_allocated(bh_zone_t *z, uint64_t pfn, unsigned order, int mt, uint64_t *ev) {
  bh__page_t *p = &z->arena->pages[pfn];
  p->mt = (uint8_t)mt;
  bh__pg_set(p, BH__PG_ALLOC, (uint8_t)order);
  ev[pgalloc_stat[z->type]] += 1ull << order;
  ev[BH_STAT_alloc_calls]++; /* and numa_hit, which bh_stats_read derives */
}

/* The head of the block of state flag (PG_BUDDY or PG_PCP) that holds pfn, and its order. */
static bool find_block(const bh_arena_t *a, uint64_t pfn, unsigned order, uint8_t flag,
                       uint64_t *head, unsigned *horder) {
  for (unsigned o = order; o <= a->max_order; o++) {
    uint64_t h = pfn & ~((1ull << o) - 1);
    const bh__page_t *p = &a->pages[h];
    if ((bh__pg_flags(p) & flag) && bh__pg_order(p) == o) {
      *head = h;
      *horder = o;
      return true;
    }
  }
  return false;
}

int bh_alloc_pfn_at(bh_arena_t *a, unsigned gfp, unsigned order, int cpu, uint64_t pfn) {
  (void)cpu;
  if (!a || order > a->max_order || (gfp & ~BH__GFP_VALID))
    return BH_EINVAL;
  uint64_t n = 1ull << order, head;
  if (pfn >= a->nr_pages || n > a->nr_pages - pfn)
    return BH_EFAULT;
  if (pfn & (n - 1))
    return BH_EALIGN;
  bh_zone_t *z = zone_at(a, pfn);
  if (!z)
    return BH_EFAULT;
  int mt = a->cfg.mobility_grouping ? bh_gfp_migratetype(gfp) : BH_MT_UNMOVABLE;
  unsigned high;
  int err = BH_EBUSY;
  bh__zone_lock(z);
  if (find_block(a, pfn, order, BH__PG_BUDDY, &head, &high)) {
    int bmt = bh__pb_mt(a, head);
    bh__del_from_free_list(z, head, high, bmt, BH__DEL_ALLOC);
    split_around(z, head, high, pfn, order, bmt);
    mark_allocated(z, pfn, order, mt, z->ev);
    err = BH_OK;
  } else if (z->pcp && find_block(a, pfn, order, BH__PG_PCP, &head, &high)) {
    bh__pcp_t *pcp = bh__pcp_owner(z, head);
    if (pcp && bh__pcp_trylock(pcp)) {
      bh__list_del(a, (uint32_t)head);
      pcp->count -= 1 << high;
      bh__pg_set_flags(&a->pages[head], 0);
      /* the rest of a larger pcp block goes back to the buddy lists */
      split_around(z, head, high, pfn, order, bh__pb_mt(a, head));
      pcp->ev[BH_STAT_pcp_alloc]++;
      mark_allocated(z, pfn, order, mt, pcp->ev);
      bh__pcp_unlock(pcp);
      err = BH_OK;
    }
  }
  bh__zone_unlock(z);
  if (err)
    return err;
  if (atomic_load_explicit(&a->any_discarded, memory_order_relaxed))
    bh__discard_on_alloc(a, pfn, order);
  if ((gfp & BH_GFP_ZERO) && a->base)
    memset(a->base + (pfn << BH_PAGE_SHIFT), 0, BH_PAGE_SIZE << order);
  return BH_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* The pcp lists as a kernel's pcp events move them                                          */
/* ---------------------------------------------------------------------------------------- */

/* pfn, order: inside the arena, aligned, a zone with pcp lists for that order; else NULL. */
static bh_zone_t *pcp_zone(const bh_arena_t *a, uint64_t pfn, unsigned order, int *err) {
  uint64_t n = 1ull << order;
  *err = BH_EINVAL;
  if (order > a->max_order || !bh__pcp_order(a, order))
    return NULL;
  *err = BH_EFAULT;
  if (pfn >= a->nr_pages || n > a->nr_pages - pfn)
    return NULL;
  *err = BH_EALIGN;
  if (pfn & (n - 1))
    return NULL;
  bh_zone_t *z = zone_at(a, pfn);
  *err = z && z->pcp ? BH_OK : BH_EINVAL;
  return *err ? NULL : z;
}

int bh__pcp_refill_at(bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu) {
  int err;
  bh_zone_t *z = a ? pcp_zone(a, pfn, order, &err) : NULL;
  if (!z)
    return a ? err : BH_EINVAL;
  uint64_t head;
  unsigned high;
  bh__pcp_t *pcp = &z->pcp[bh__cpu_slot(a, cpu)];
  bh__pcp_lock(pcp); /* the pcp lock, then the zone lock, as rmqueue_pcplist/rmqueue_bulk */
  bh__zone_lock(z);
  err = BH_EBUSY;
  if (find_block(a, pfn, order, BH__PG_BUDDY, &head, &high)) {
    int bmt = bh__pb_mt(a, head);
    int list_mt = bh__pcp_list_mt(bmt);
    if (mt < 0 || mt >= BH_MT_PCPTYPES)
      mt = list_mt < 0 ? BH_MT_MOVABLE : list_mt;
    bh__del_from_free_list(z, head, high, bmt, BH__DEL_ALLOC);
    split_around(z, head, high, pfn, order, bmt); /* expand() */
    bh__pg_set_pcp(&a->pages[pfn], (uint8_t)order, (uint32_t)(pcp - z->pcp));
    bh__list_add_tail(a, (uint32_t)pfn, pcp->head + bh__pcp_pindex(a, mt, order));
    pcp->count += 1 << order;
    z->ev[BH_STAT_pcp_refill_pages] += 1ull << order;
    err = BH_OK;
  }
  bh__zone_unlock(z);
  bh__pcp_unlock(pcp);
  return err;
}

int bh__pcp_drain_at(bh_arena_t *a, uint64_t pfn, unsigned order) {
  int err;
  bh_zone_t *z = a ? pcp_zone(a, pfn, order, &err) : NULL;
  if (!z)
    return a ? err : BH_EINVAL;
  bh__page_t *p = &a->pages[pfn];
  if (!(bh__pg_flags(p) & BH__PG_PCP) || bh__pg_order(p) != order)
    return BH_EBUSY;
  bh__pcp_t *pcp = bh__pcp_owner(z, pfn);
  if (!pcp)
    return BH_EBUSY;
  bh__pcp_lock(pcp);
  bh__zone_lock(z);
  err = BH_EBUSY;
  if ((bh__pg_flags(p) & BH__PG_PCP) && bh__pg_order(p) == order) { /* still there */
    bh__list_del(a, (uint32_t)pfn);
    bh__pg_set_flags(p, 0);
    pcp->count -= 1 << order;
    z->ev[BH_STAT_pcp_drain_pages] += 1ull << order;
    bh__free_one_page(z, pfn, order, bh__pb_mt(a, pfn), BH__FPI_NONE);
    err = BH_OK;
  }
  bh__zone_unlock(z);
  bh__pcp_unlock(pcp);
  return err;
}

int bh__pcp_free_nodrain(bh_arena_t *a, uint64_t pfn, unsigned order, int cpu) {
  int err;
  bh_zone_t *z = a ? pcp_zone(a, pfn, order, &err) : NULL;
  bh__page_t *p = z ? &a->pages[pfn] : NULL;
  /* anything but a plain allocated block of a pcp order in a pcp pageblock: bh_free_pfn's
   * own checks and path (its errors, the buddy lists for an isolated pageblock) */
  int mt = z ? bh__pcp_list_mt(bh__pb_mt(a, pfn)) : -1;
  if (!z || (bh__pg_flags(p) & (BH__PG_ALLOC | BH__PG_NOPAGE)) != BH__PG_ALLOC ||
      bh__pg_order(p) != order || mt < 0)
    return bh_free_pfn(a, pfn, order, cpu);
  bh__pcp_t *pcp = &z->pcp[bh__cpu_slot(a, cpu)];
  bh__pcp_lock(pcp);
  bh__pg_set_pcp(p, (uint8_t)order, (uint32_t)(pcp - z->pcp));
  bh__list_add(a, (uint32_t)pfn, pcp->head + bh__pcp_pindex(a, mt, order));
  pcp->count += 1 << order;
  pcp->ev[BH_STAT_free_calls]++;
  pcp->ev[BH_STAT_pcp_free]++;
  pcp->ev[BH_STAT_pgfree] += 1ull << order;
  bh__pcp_unlock(pcp);
  return BH_OK;
}

/* The pcp whose list holds block b (a hidden block the start placed on one), or NULL. */
static bh__pcp_t *surplus_pcp(bh_arena_t *a, const bh_pcp_block_t *b) {
  int err;
  bh_zone_t *z = pcp_zone(a, b->pfn, b->order, &err);
  return z && (bh__pg_flags(&a->pages[b->pfn]) & BH__PG_PCP) ? bh__pcp_owner(z, b->pfn) : NULL;
}

/* Each pcp's surplus stack from the n blocks, each on the pcp surplus_pcp gives (or none), the
 * last pushed on top; each stack sized once.  BH_OK or BH_ENOMEM (then none). */
int bh__pcp_surplus_set(bh_arena_t *a, const bh_pcp_block_t *blocks, size_t n) {
  if (!a)
    return BH_EINVAL;
  for (size_t i = 0; i < n; i++) {
    bh__pcp_t *pcp = surplus_pcp(a, &blocks[i]);
    if (pcp)
      pcp->surplus.n++;
  }
  int err = BH_OK;
  for (int k = 0; k < a->nr_zones; k++)
    for (unsigned c = 0; a->zones[k].pcp && c < a->cfg.nr_cpus; c++) {
      bh__pcp_stack_t *st = &a->zones[k].pcp[c].surplus;
      free(st->e);
      st->e = st->n && !err ? malloc(st->n * sizeof(*st->e)) : NULL;
      err = st->n && !st->e ? BH_ENOMEM : err;
      st->n = 0;
    }
  for (size_t j = 0; !err && j < n; j++) {
    bh__pcp_t *pcp = surplus_pcp(a, &blocks[j]);
    if (pcp && pcp->surplus.e)
      pcp->surplus.e[pcp->surplus.n++] = (uint32_t)blocks[j].pfn;
  }
  return err;
}

/* The switch at offset off (calibrating or deficit) of CPU slot cpu's pcp in every zone. */
static void pcp_switch(bh_arena_t *a, int cpu, size_t off, bool on) {
  unsigned c = bh__cpu_slot(a, cpu);
  for (int k = 0; k < a->nr_zones; k++)
    if (a->zones[k].pcp)
      *(bool *)((char *)&a->zones[k].pcp[c] + off) = on;
}

void bh__pcp_deficit(bh_arena_t *a, int cpu, bool on) {
  pcp_switch(a, cpu, offsetof(bh__pcp_t, deficit), on);
}

/* CPU slot cpu's pcp of the zone holding pfns lo to hi (one zone), or NULL. */
static bh__pcp_t *pcp_of_range(bh_arena_t *a, int cpu, uint64_t lo, uint64_t hi) {
  if (!a || lo > hi || hi >= a->nr_pages)
    return NULL;
  bh_zone_t *z = zone_at(a, lo);
  return z && zone_at(a, hi) == z && z->pcp ? &z->pcp[bh__cpu_slot(a, cpu)] : NULL;
}

void bh__pcp_decay_first(bh_arena_t *a, int cpu, uint64_t lo, uint64_t hi, uint64_t pages) {
  bh__pcp_t *pcp = pcp_of_range(a, cpu, lo, hi);
  if (pcp && pages <= INT_MAX)
    pcp->decay_first = (int)pages;
}

void bh__pcp_decay_check(bh_arena_t *a, int cpu, uint64_t lo, uint64_t hi, uint64_t pages) {
  bh__pcp_t *pcp = pcp_of_range(a, cpu, lo, hi);
  if (pcp && pages <= INT_MAX)
    pcp->decay_check = (int)pages;
}

uint64_t bh__pcp_ghost_pages(const bh_arena_t *a) {
  return atomic_load_explicit(&a->pcp_ghost_pages, memory_order_relaxed);
}

void bh__pcp_free_counts_keep(bh_arena_t *a, int cpu, bh__pcp_free_counts_t *k) {
  unsigned c = bh__cpu_slot(a, cpu);
  for (int i = 0; i < a->nr_zones; i++)
    if (a->zones[i].pcp) {
      bh__pcp_t *pcp = &a->zones[i].pcp[c];
      bh__pcp_lock(pcp);
      k->fc[i] = pcp->free_count;
      bh__pcp_unlock(pcp);
    }
}

void bh__pcp_free_counts_put(bh_arena_t *a, int cpu, const bh__pcp_free_counts_t *k) {
  unsigned c = bh__cpu_slot(a, cpu);
  for (int i = 0; i < a->nr_zones; i++)
    if (a->zones[i].pcp) {
      bh__pcp_t *pcp = &a->zones[i].pcp[c];
      bh__pcp_lock(pcp);
      pcp->free_count = k->fc[i];
      bh__pcp_unlock(pcp);
    }
}

void bh__pcp_high_max_unknown(bh_arena_t *a) { a->pcp_cap_unknown = true; }

uint64_t bh__pcp_high_max_lowered(const bh_arena_t *a) {
  return atomic_load_explicit(&a->pcp_cap_lowered, memory_order_relaxed);
}

uint64_t bh__pcp_drained_pages(const bh_arena_t *a) {
  return atomic_load_explicit(&a->pcp_drained_pages, memory_order_relaxed);
}

void bh__pcp_calibrating(bh_arena_t *a, int cpu, bool on) {
  pcp_switch(a, cpu, offsetof(bh__pcp_t, calibrating), on);
}

uint64_t bh__pcp_deficit_pages(const bh_arena_t *a) {
  return atomic_load_explicit(&a->pcp_deficit_pages, memory_order_relaxed);
}

uint64_t bh__pcp_surplus_pages(const bh_arena_t *a) {
  return atomic_load_explicit(&a->pcp_surplus_pages, memory_order_relaxed);
}

bool bh__container_of_pfn(const bh_arena_t *a, uint64_t pfn, uint64_t *head, uint8_t *flags,
                          unsigned *order) {
  for (unsigned o = 0; o <= a->max_order; o++) {
    uint64_t h = pfn & ~((1ull << o) - 1);
    const bh__page_t *p = &a->pages[h];
    uint8_t f = bh__pg_flags(p);
    if ((f & BH__PG_STATE) && h + (1ull << bh__pg_order(p)) > pfn) {
      *head = h;
      *flags = f;
      *order = bh__pg_order(p);
      return true;
    }
  }
  return false;
}

enum bh__pcp_at bh__pcp_block_where(const bh_arena_t *a, uint64_t pfn, unsigned order, int *cpu) {
  int err;
  bh_zone_t *z = a ? pcp_zone(a, pfn, order, &err) : NULL;
  if (!z)
    return BH__PCPAT_INVALID;
  uint64_t head;
  uint8_t f;
  unsigned o;
  if (!bh__container_of_pfn(a, pfn, &head, &f, &o) || (f & BH__PG_NOPAGE))
    return BH__PCPAT_INVALID;
  /* several order-0 pieces of memory allocated before the trace, which bh__pcp_adopt_at
   * joins into the event's block: a drain of a start pcp block above order 0 */
  if (o < order && (f & BH__PG_PRETRACE) && all_pretrace(a, pfn, 1ull << order))
    return BH__PCPAT_PRETRACE;
  if (o < order || ((f & BH__PG_PCP) && (head != pfn || o != order)))
    return BH__PCPAT_SPLIT; /* the event's block is several of the arena's, or part of one */
  if (f & BH__PG_PCP) {
    const bh__pcp_t *pcp = bh__pcp_owner(z, pfn);
    *cpu = pcp ? (int)(pcp - z->pcp) : -1;
    return BH__PCPAT_PCP;
  }
  if (f & BH__PG_BUDDY)
    return BH__PCPAT_BUDDY;
  if (f & BH__PG_ISOLATED)
    return BH__PCPAT_ISOLATED;
  return (f & BH__PG_PRETRACE) ? BH__PCPAT_PRETRACE : BH__PCPAT_ALLOC;
}

int bh__pcp_relist_at(bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu) {
  int err;
  bh_zone_t *z = a ? pcp_zone(a, pfn, order, &err) : NULL;
  if (!z)
    return a ? err : BH_EINVAL;
  bh__page_t *p = &a->pages[pfn];
  if (!(bh__pg_flags(p) & BH__PG_PCP) || bh__pg_order(p) != order)
    return BH_EBUSY;
  bh__pcp_t *from = bh__pcp_owner(z, pfn), *to = &z->pcp[bh__cpu_slot(a, cpu)];
  if (!from)
    return BH_EBUSY;
  int list_mt = bh__pcp_list_mt(bh__pb_mt(a, pfn));
  if (mt < 0 || mt >= BH_MT_PCPTYPES)
    mt = list_mt < 0 ? BH_MT_MOVABLE : list_mt;
  bh__pcp_t *first = from < to ? from : to, *second = from < to ? to : from;
  bh__pcp_lock(first); /* two pcp locks in address order */
  if (second != first)
    bh__pcp_lock(second);
  bh__list_del(a, (uint32_t)pfn);
  from->count -= 1 << order;
  bh__list_add_tail(a, (uint32_t)pfn, to->head + bh__pcp_pindex(a, mt, order));
  a->pages[pfn].priv = (uint32_t)(to - z->pcp);
  to->count += 1 << order;
  if (second != first)
    bh__pcp_unlock(second);
  bh__pcp_unlock(first);
  return BH_OK;
}

int bh__pcp_adopt_at(bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu) {
  int err;
  bh_zone_t *z = a ? pcp_zone(a, pfn, order, &err) : NULL;
  if (!z)
    return a ? err : BH_EINVAL;
  uint64_t n = 1ull << order;
  int list_mt = bh__pcp_list_mt(bh__pb_mt(a, pfn));
  if (!in_span(z, pfn, n) || list_mt < 0)
    return BH_EBUSY;
  if (mt < 0 || mt >= BH_MT_PCPTYPES)
    mt = list_mt;
  bh__pcp_t *pcp = &z->pcp[bh__cpu_slot(a, cpu)];
  bh__pcp_lock(pcp);
  bh__zone_lock(z);
  err = BH_EBUSY;
  if (all_pretrace(a, pfn, n)) {
    for (uint64_t i = pfn + 1; i < pfn + n; i++)
      bh__pg_set_flags(&a->pages[i], 0);
    bh__pg_set_pcp(&a->pages[pfn], (uint8_t)order, (uint32_t)(pcp - z->pcp));
    bh__list_add_tail(a, (uint32_t)pfn, pcp->head + bh__pcp_pindex(a, mt, order));
    pcp->count += (int)n;
    err = BH_OK;
  }
  bh__zone_unlock(z);
  bh__pcp_unlock(pcp);
  return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Where a block is now (placement agreement by cause)                                       */
/* ---------------------------------------------------------------------------------------- */

/* Steps along a pcp list from a block to its head, each way, before giving up on a position. */
#define WHERE_WALK 256

/* The list head reached from page n by following prev (or next) links, within WHERE_WALK
 * steps, and the steps taken; BH__NIL if none was reached. */
static uint32_t walk_to_head(const bh_arena_t *a, uint32_t n, bool back, unsigned *steps) {
  uint32_t x = n;
  for (unsigned s = 1; s <= WHERE_WALK; s++) {
    x = back ? a->pages[x].prev : a->pages[x].next;
    if (x >= a->nr_pages) {
      *steps = s;
      return x;
    }
  }
  return BH__NIL;
}

static void where_pcp(const bh_arena_t *a, uint64_t head, int mt, unsigned order, int cpu,
                      bh__where_t *w) {
  const bh_zone_t *z = bh__pfn_zone(a, head);
  unsigned steps = 0;
  uint32_t lh = walk_to_head(a, (uint32_t)head, true, &steps);
  bool known_pos = lh != BH__NIL;
  if (!known_pos)
    lh = walk_to_head(a, (uint32_t)head, false, &steps);
  if (lh == BH__NIL) {
    w->where = BH__WHERE_PCP_FAR;
    return;
  }
  unsigned idx = lh - z->pcp[0].head;
  w->cpu = (int)(idx / BH__NR_PCP_LISTS);
  w->pos = known_pos ? steps - 1 : WHERE_WALK;
  bool same_list = bh__pg_order(&a->pages[head]) == order &&
                   idx % BH__NR_PCP_LISTS == bh__pcp_pindex(a, mt, order);
  if (w->cpu != cpu)
    w->where = BH__WHERE_PCP_OTHER_CPU;
  else if (!same_list)
    w->where = BH__WHERE_PCP_OTHER_LIST;
  else
    w->where = w->pos == 0 ? BH__WHERE_PCP_HEAD
               : known_pos ? BH__WHERE_PCP_DEEPER
                           : BH__WHERE_PCP_FAR;
}

/* where_pcp for the pcp block at head (of horder), which holds pfn, under its pcp's lock: a
 * paced replay's hinting worker drains pcp lists from its own thread (bh_vmstat_tick).  False
 * if the block is no longer on that list. */
static bool where_pcp_locked(const bh_arena_t *a, uint64_t head, unsigned horder, uint64_t pfn,
                             unsigned order, int mt, int cpu, bh__where_t *w) {
  bh__pcp_t *pcp = bh__pcp_owner(bh__pfn_zone(a, head), head);
  if (!pcp)
    return false;
  bh__pcp_lock(pcp);
  bool on = (bh__pg_flags(&a->pages[head]) & BH__PG_PCP) &&
            bh__pcp_owner(bh__pfn_zone(a, head), head) == pcp;
  if (on) {
    where_pcp(a, head, mt, order, cpu, w);
    if (head != pfn || horder != order)
      w->where = BH__WHERE_PCP_OTHER_LIST;
  }
  bh__pcp_unlock(pcp);
  return on;
}

void bh__where_is(const bh_arena_t *a, uint64_t pfn, unsigned order, int mt, int cpu,
                  bh__where_t *w) {
  *w = (bh__where_t){BH__WHERE_OTHER, -1, 0};
  if (pfn >= a->nr_pages || order > a->max_order || (1ull << order) > a->nr_pages - pfn)
    return;
  uint64_t head;
  unsigned horder;
  for (int pass = 0; pass < 2; pass++) { /* again if its pcp list gave it up meanwhile */
    if (find_block(a, pfn, order, BH__PG_BUDDY, &head, &horder)) {
      w->where = horder == order ? BH__WHERE_BUDDY : BH__WHERE_BUDDY_INSIDE;
      return;
    }
    if (!find_block(a, pfn, 0, BH__PG_PCP, &head, &horder))
      break;
    if (where_pcp_locked(a, head, horder, pfn, order, mt, cpu, w))
      return;
  }
  for (unsigned o = 0; o <= a->max_order; o++) {
    uint64_t h = pfn & ~((1ull << o) - 1);
    const bh__page_t *p = &a->pages[h];
    if ((bh__pg_flags(p) & BH__PG_ALLOC) && bh__pg_order(p) >= o) {
      w->where = (bh__pg_flags(p) & BH__PG_PRETRACE) ? BH__WHERE_PRETRACE : BH__WHERE_ALLOCATED;
      return;
    }
  }
}

/* Whether the trace takes from the free block at pfn of order (bh__take_rank_set): a take's
 * rank is kept at the pfn it took, the block's head where __rmqueue_smallest split it. */
static bool block_ranked(const bh_arena_t *a, uint64_t pfn, unsigned order) {
  for (uint64_t q = pfn; a->take_rank && q < pfn + (1ull << order) && q < a->take_rank_n; q++)
    if (a->take_rank[q])
      return true;
  return false;
}

/*
 * A free block the start snapshot shows reported: to its list's tail, where
 * page_reporting_drain put it back (__putback_isolated_page, mm/page_alloc.c:2950-2951 in
 * 6.12.117), unless the trace takes from it: the start state put the blocks the trace takes
 * first on their lists in the order of their takes, which is where the kernel's list held it
 * (it takes a list's head, get_page_from_free_area :743), and a block put back at the tail
 * before the snapshot can have come nearer the head since, as the blocks before it were taken.
 * Not isolated and put back again: __isolate_free_page's move of the block's pageblock to
 * Movable, its other free blocks to the Movable lists' tails (:2916-2925, for a block of
 * pageblock_order - 1 or more), happened when the kernel reported the block, before the
 * snapshot; the snapshot's pageblock types and the lists' order the start state took from the
 * trace's takes already hold what came of it.  Flagged PageReported if flag.
 */
bool bh__start_block_reported(bh_arena_t *a, uint64_t pfn, unsigned order, bool flag) {
  bh_zone_t *z = a ? zone_at(a, pfn) : NULL;
  if (!z || !in_span(z, pfn, 1))
    return false;
  bh__zone_lock(z);
  bh__page_t *p = &a->pages[pfn];
  bool found = (bh__pg_flags(p) & BH__PG_BUDDY) && bh__pg_order(p) == order;
  if (found && !block_ranked(a, pfn, order)) {
    bh__list_del(a, (uint32_t)pfn);
    bh__list_add_tail(a, (uint32_t)pfn, bh__free_list(z, order, bh__pb_mt(a, pfn)));
  }
  if (found) {
    if (flag)
      bh_block_set_reported(z, pfn);
  }
  bh__zone_unlock(z);
  return found;
}

/*
 * A claim the kernel's trace reports (mm_page_alloc_extfrag with change_ownership): the
 * pageblocks of the block of 2^order pages at pfn become mt's, each with its free blocks moved
 * to mt's lists, as try_to_steal_block does (Linux 6.12 mm/page_alloc.c:1973-1980 for a block
 * of pageblock order or more, change_pageblock_range; :2021-2024 below it, the one pageblock
 * through __move_freepages_block).  A free block of the arena that holds the range and is
 * larger covers pageblocks of one type (__free_one_page makes them so): the claim takes all of
 * them, or the block would span two types.
 */
int bh__claim_block_at(bh_arena_t *a, uint64_t pfn, unsigned order, int mt) {
  if (!a || order > a->max_order || mt < 0 || mt >= BH_MT_PCPTYPES)
    return BH_EINVAL;
  unsigned span = order > a->pb_order ? order : a->pb_order;
  uint64_t start = pfn & ~((1ull << span) - 1), head;
  unsigned high;
  bh_zone_t *z = zone_at(a, start);
  if (!z || pfn >= a->nr_pages || (1ull << span) > a->nr_pages - start ||
      !in_span(z, start, 1ull << span))
    return BH_EFAULT;
  bh__zone_lock(z);
  if (find_block(a, start, span, BH__PG_BUDDY, &head, &high) && high > span) {
    start = head;
    span = high;
  }
  uint64_t end = start + (1ull << span), pb = 1ull << a->pb_order;
  int err = BH_OK;
  for (uint64_t b = start; b < end && !err; b += pb) {
    int old = bh__pb_mt(a, b);
    if (old == BH_MT_ISOLATE || old == BH_MT_HIGHATOMIC || pb_absent(a, b))
      err = BH_EBUSY; /* the kernel claims neither; an absent one is not the zone's */
  }
  int retyped = 0;
  for (uint64_t b = start; b < end && !err; b += pb) {
    int old = bh__pb_mt(a, b);
    if (old != mt) {
      bh__move_freepages_block(z, b, old, mt);
      retyped++;
    }
  }
  bh__zone_unlock(z);
  return err ? err : retyped;
}

/* The arena's fallback counters for a fallback the kernel's trace reports (count_extfrag). */
void bh__count_fallback_at(bh_arena_t *a, uint64_t pfn, unsigned fallback_order, bool claim) {
  bh_zone_t *z = a ? zone_at(a, pfn) : NULL;
  if (!z)
    return;
  bh__zone_lock(z);
  z->ev[BH_STAT_extfrag_fallback]++;
  if (fallback_order < a->pb_order)
    z->ev[BH_STAT_extfrag_fragmenting]++;
  if (claim)
    z->ev[BH_STAT_extfrag_claim]++;
  bh__zone_unlock(z);
}
