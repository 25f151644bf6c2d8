/*
 * Free maps: a snapshot's free blocks, pageblock migratetypes and movable pages, derived from
 * /proc/kpageflags and kept as compact text in the machine description.
 *
 * Free blocks.  The kernel marks every page of a free block KPF_BUDDY (the head by PageBuddy,
 * the rest through is_free_buddy_page, fs/proc/page.c), and __free_one_page merges a block
 * with its free buddy whenever it can, so the free blocks are the maximal decomposition of
 * each run of such pages into aligned power-of-two blocks, no larger than MAX_PAGE_ORDER and
 * inside the zone.  (Blocks next to a non-mergeable pageblock, Isolate or HighAtomic, can be
 * smaller than that; they are rare and not told apart.)  Pages on pcp lists are not buddy
 * pages: they count as allocated.  Reading kpageflags takes a while on a busy machine, so the
 * map and the buddyinfo read right after it differ by what changed meanwhile: that difference
 * is kept as freemap_skew_pages.
 *
 * Pageblock migratetypes are not exported.  Each pageblock's pages give evidence: movable
 * (LRU, anonymous, mapped, swap-backed, unevictable, THP, hugetlb, KSM), slab (unmovable or
 * reclaimable), page tables and other flagged kernel pages (unmovable).  Pages without flags
 * (kernel allocations that set none, pcp pages, memory not initialised yet) and reserved
 * pages (whose pageblocks keep the Movable type they get at boot) say nothing.  The types are
 * then chosen so that pagetypeinfo's counts hold exactly: first the pageblocks that hold free
 * blocks, each given the type whose free lists it matches best (pagetypeinfo's free blocks
 * per type and order, against the evidence), then the others by their evidence, the most
 * unmovable-like to Unmovable, slab-heavy ones to Reclaimable, the rest Movable.  A free
 * block above the pageblock order covers pageblocks of one type.  What is left over, free
 * blocks on another type's list than pagetypeinfo says, is kept as freemap_type_error_pages.
 *
 * Pageblocks the kernel does not count in pagetypeinfo (no page at the probe pfn, or memory
 * not yet initialised, whose pages are in no zone yet) are absent: those with KPF_NOPAGE, then
 * from the zone's end those without free or flagged pages, as many as the counts say.
 *
 * Reported blocks.  Free page reporting marks a block it has handed to the host PageReported
 * (mm/page_reporting.c, page_reporting_drain), and the flag stays until the block leaves its
 * free list (__del_page_from_free_list clears it).  PG_reported is PG_uptodate, which means
 * nothing else on a buddy page (include/linux/page-flags.h), and kpageflags copies it as
 * KPF_UPTODATE (fs/proc/page.c): a free block whose head has it has been reported already,
 * and the kernel's reporting skips it until it is allocated or merged.
 *
 * Text ("@start/freemap"):
 *   freemap 1
 *   skew PAGES
 *   type_error PAGES
 *   F GAP ORDER [COUNT]   COUNT (default 1) free blocks of ORDER, one after another, from GAP
 *                         pages after the end of the previous F line's blocks (from pfn 0 for
 *                         the first): small numbers, which compress well
 *   P PFN TOKEN...        pageblock types from PFN (hex): a letter (U M R H I C, or - for
 *                         absent) and how many pageblocks in a row, e.g. "M1528 U3 -512"
 *   M GAP COUNT           COUNT allocated pages that looked movable, GAP pages after the end
 *                         of the previous M line's (the start snapshot only)
 *   reported N            N free blocks were reported, listed in R lines (a later addition: a
 *                         map with neither says nothing of reporting)
 *   R GAP ORDER [COUNT]   COUNT reported free blocks, as F but GAP from the end of the previous
 *                         R line's blocks; each must be one of the F lines' blocks
 *   quiet N               N allocated pages had no flag at all, listed in Q lines (the start
 *                         snapshot only; a later addition: a map without it says nothing)
 *   Q GAP COUNT           COUNT such pages, GAP after the end of the previous Q line's: the
 *                         pages on pcp lists are among them (free_pages_prepare clears a freed
 *                         page's flags, and a pcp page is no buddy page), beside kernel
 *                         allocations that set no flag; kpagecount (a map count, 0 for both)
 *                         tells them no further apart
 */
#include "machine/machine_internal.h"

#include <stdlib.h>
#include <string.h>

#define KPF_UPTODATE (1ull << 3)
#define KPF_LRU (1ull << 5)
#define KPF_SLAB (1ull << 7)
#define KPF_BUDDY (1ull << 10)
#define KPF_MMAP (1ull << 11)
#define KPF_ANON (1ull << 12)
#define KPF_SWAPBACKED (1ull << 14)
#define KPF_HUGE (1ull << 17)
#define KPF_UNEVICTABLE (1ull << 18)
#define KPF_NOPAGE (1ull << 20)
#define KPF_KSM (1ull << 21)
#define KPF_THP (1ull << 22)
#define KPF_PGTABLE (1ull << 26)
#define KPF_RESERVED (1ull << 32)
#define KPF_MLOCKED (1ull << 33)
#define KPF_MOVABLE_MASK                                                                           \
  (KPF_LRU | KPF_ANON | KPF_MMAP | KPF_SWAPBACKED | KPF_UNEVICTABLE | KPF_THP | KPF_HUGE |         \
   KPF_KSM | KPF_MLOCKED)

static const char mt_letters[BH_SNAP_TYPES] = {'U', 'M', 'R', 'H', 'I', 'C'};

/* ---------------------------------------------------------------------------------------- */
/* A growable text buffer                                                                    */
/* ---------------------------------------------------------------------------------------- */

struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = true;
      return;
    }
    if (b->p && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 65536;
    while (cap < b->n + (size_t)k + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
}

/* ---------------------------------------------------------------------------------------- */
/* Parsing                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static const char *fm_skip(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\r'))
    p++;
  return p;
}

static const char *fm_hex(const char *p, const char *e, uint64_t *v) {
  uint64_t x = 0;
  const char *b = p;
  if (e - p > 2 && p[0] == '0' && (p[1] | 0x20) == 'x')
    b = p += 2;
  for (; p < e; p++) {
    unsigned d = *p >= '0' && *p <= '9'                     ? (unsigned)(*p - '0')
                 : (*p | 0x20) >= 'a' && (*p | 0x20) <= 'f' ? (unsigned)((*p | 0x20) - 'a' + 10)
                                                            : 16u;
    if (d == 16)
      break;
    if (x >> 60)
      return NULL;
    x = x << 4 | d;
  }
  *v = x;
  return p == b ? NULL : p;
}

static const char *fm_dec(const char *p, const char *e, uint64_t *v) {
  uint64_t x = 0;
  const char *b = p;
  for (; p < e && *p >= '0' && *p <= '9'; p++)
    if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, (uint64_t)(*p - '0'), &x))
      return NULL;
  *v = x;
  return p == b ? NULL : p;
}

static bool fm_end(const char *p, const char *e) {
  return p && (p == e || *p == ' ' || *p == '\t' || *p == '\r');
}

/* The end of the machine's highest zone, rounded up to a pageblock. */
static uint64_t layout_end(const bh_machine_t *m) {
  uint64_t end = 0;
  for (int i = 0; i < m->info.nr_zones; i++) {
    const bh_machine_zone_t *z = &m->info.zones[i];
    if (z->start_pfn + z->spanned_pages > end)
      end = z->start_pfn + z->spanned_pages;
  }
  uint64_t pb = 1ull << m->info.pageblock_order;
  return (end + pb - 1) & ~(pb - 1);
}

/* Appends run to *runs (*n used of *cap): 0 or BH_ENOMEM. */
static int fm_push(bh_block_run_t **runs, size_t *n, size_t *cap, bh_block_run_t run) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 64;
    bh_block_run_t *q = realloc(*runs, c * sizeof(*q));
    if (!q)
      return BH_ENOMEM;
    *runs = q;
    *cap = c;
  }
  (*runs)[(*n)++] = run;
  return 0;
}

/* The first reported block that is not one of the free blocks (both in pfn order), or
 * UINT64_MAX if every one is. */
static uint64_t fm_unlisted_reported(const bh__snap_t *sn, size_t nf) {
  size_t i = 0;
  uint64_t k = 0; /* the free block i, k */
  for (size_t r = 0; r < sn->nr_reported_runs; r++) {
    const bh_block_run_t *rr = &sn->reported_runs[r];
    for (uint64_t j = 0; j < rr->count; j++) {
      uint64_t pfn = rr->pfn + (j << rr->order);
      for (; i < nf; i++, k = 0) {
        const bh_block_run_t *f = &sn->free_runs[i];
        if (pfn < f->pfn + ((uint64_t)f->count << f->order)) {
          if (pfn >= f->pfn)
            k = (pfn - f->pfn) >> f->order;
          break;
        }
      }
      if (i == nf)
        return pfn;
      const bh_block_run_t *f = &sn->free_runs[i];
      if (f->order != rr->order || f->pfn + (k << f->order) != pfn)
        return pfn;
    }
  }
  return UINT64_MAX;
}

/* Snapshot which of m if it has a free map, else NULL. */
static const bh__snap_t *with_map(const bh_machine_t *m, int which) {
  return m && which >= 0 && which < BH_NR_SNAPS && m->snaps[which].pub.have_freemap
             ? &m->snaps[which]
             : NULL;
}

const bh_block_run_t *bh__machine_reported_runs(const bh_machine_t *m, int which, size_t *n,
                                                bool *known) {
  const bh__snap_t *sn = with_map(m, which);
  *n = sn ? sn->nr_reported_runs : 0;
  if (known)
    *known = sn && sn->reported_known;
  return *n ? sn->reported_runs : NULL;
}

const bh_page_run_t *bh__machine_quiet_runs(const bh_machine_t *m, int which, size_t *n,
                                            bool *known) {
  const bh__snap_t *sn = with_map(m, which);
  *n = sn ? sn->nr_quiet_runs : 0;
  if (known)
    *known = sn && sn->quiet_known;
  return *n ? sn->quiet_runs : NULL;
}

/* A free map being parsed (bh__freemap_parse): where it goes, the line, and each kind of
 * run's end so far (a run's pfn is a gap after the previous run of its kind). */
struct fm_parse {
  bh_machine_t *m;
  bh__snap_t *sn;
  const char *sec;
  char *err;
  size_t errlen;
  int line;
  unsigned pbo, maxo;
  uint64_t end_pfn, npb;
  size_t fcap, mcap, rcap, qcap, nf, nm;
  uint64_t last_free, last_mov, last_rep, last_quiet, reported, nrep, quiet, nquiet;
};

/* A malformed line of the map: BH_EFORMAT with "SECTION:LINE: what". */
__attribute__((format(printf, 2, 3))) static int fm_bad(const struct fm_parse *f, const char *fmt,
                                                        ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  return bh__errf(f->err, f->errlen, BH_EFORMAT, "%s:%d: %s", f->sec, f->line, what);
}

/* "skew N", "type_error N", "reported N" (p at the word). */
static void fm_counter_line(struct fm_parse *f, const char *p, const char *le) {
  const char *k = p;
  uint64_t v;
  while (p < le && *p != ' ')
    p++;
  if (!fm_dec(fm_skip(p, le), le, &v))
    return;
  if ((size_t)(p - k) == 4 && !memcmp(k, "skew", 4))
    f->sn->pub.freemap_skew_pages = v;
  else if ((size_t)(p - k) == 10 && !memcmp(k, "type_error", 10))
    f->sn->pub.freemap_type_error_pages = v;
  else if ((size_t)(p - k) == 8 && !memcmp(k, "reported", 8)) {
    f->sn->reported_known = true;
    f->reported = v;
  } else if ((size_t)(p - k) == 5 && !memcmp(k, "quiet", 5)) {
    f->sn->quiet_known = true;
    f->quiet = v;
  }
}

/* "F GAP ORDER [COUNT]" (free blocks) or "R ..." (reported ones): p after the pfn. */
static int fm_block_line(struct fm_parse *f, char kind, uint64_t pfn, const char *p,
                         const char *le) {
  uint64_t order, count = 1;
  if (!fm_end(p = fm_dec(fm_skip(p, le), le, &order), le) || order > f->maxo)
    return fm_bad(f, "bad order");
  p = fm_skip(p, le);
  if (p < le && (!fm_end(p = fm_dec(p, le, &count), le) || !count || count > UINT32_MAX))
    return fm_bad(f, "bad count");
  const bh_machine_t *m = f->m;
  uint64_t size = 1ull << order, zend;
  int zi = bh_machine_zone_of(m, pfn);
  if ((pfn & (size - 1)) || zi < 0 ||
      count >
          (((zend = m->info.zones[zi].start_pfn + m->info.zones[zi].spanned_pages) - pfn) >> order))
    return fm_bad(f, "free blocks at %#lx misaligned, out of order or outside a zone",
                  (unsigned long)pfn);
  bh_block_run_t run = {pfn, (uint32_t)count, (uint8_t)order};
  if (kind == 'F') {
    f->last_free = pfn + (count << order);
    return fm_push(&f->sn->free_runs, &f->nf, &f->fcap, run);
  }
  f->last_rep = pfn + (count << order);
  f->nrep += count;
  return fm_push(&f->sn->reported_runs, &f->sn->nr_reported_runs, &f->rcap, run);
}

/* "M GAP PAGES": a run of movable pages, or "Q GAP PAGES": of pages with no flag (p after
 * the pfn). */
static int fm_page_run_line(struct fm_parse *f, char kind, uint64_t pfn, const char *p,
                            const char *le) {
  uint64_t n;
  if (!fm_end(p = fm_dec(fm_skip(p, le), le, &n), le) || !n || pfn + n > f->end_pfn ||
      pfn + n < pfn)
    return fm_bad(f, kind == 'M' ? "bad movable run" : "bad run of pages without flags");
  bh_page_run_t **runs = kind == 'M' ? &f->sn->movable_runs : &f->sn->quiet_runs;
  size_t *nr = kind == 'M' ? &f->nm : &f->sn->nr_quiet_runs,
         *cap = kind == 'M' ? &f->mcap : &f->qcap;
  if (*nr == *cap) {
    size_t c = *cap ? *cap * 2 : 256;
    bh_page_run_t *q = realloc(*runs, c * sizeof(*q));
    if (!q)
      return BH_ENOMEM;
    *runs = q;
    *cap = c;
  }
  (*runs)[(*nr)++] = (bh_page_run_t){pfn, n};
  if (kind == 'M') {
    f->last_mov = pfn + n;
  } else {
    f->last_quiet = pfn + n;
    f->nquiet += n;
  }
  return 0;
}

/* "P PFN T1N1 T2N2 ...": pageblock types from a pageblock-aligned pfn (p after it). */
static int fm_pageblock_line(struct fm_parse *f, uint64_t pfn, const char *p, const char *le) {
  if (pfn & ((1ull << f->pbo) - 1))
    return fm_bad(f, "pageblocks from a misaligned pfn");
  uint64_t b = pfn >> f->pbo, n;
  for (p = fm_skip(p, le); p < le; p = fm_skip(p, le)) {
    int t = -1;
    for (int k = 0; k < BH_SNAP_TYPES; k++)
      if (*p == mt_letters[k])
        t = k;
    if (*p != '-' && t < 0)
      return fm_bad(f, "bad pageblock type '%c'", *p);
    if (!fm_end(p = fm_dec(p + 1, le, &n), le) || !n || b + n > f->npb || b + n < b)
      return fm_bad(f, "bad pageblock count");
    memset(f->sn->pageblock_mt + b, t < 0 ? BH_PB_ABSENT : t, n);
    b += n;
  }
  return 0;
}

/* One line after the first (p at its first word). */
static int fm_line(struct fm_parse *f, const char *p, const char *le) {
  char kind = *p;
  if (kind == 's' || kind == 't' || kind == 'r' || kind == 'q') { /* skew N, ... quiet N */
    fm_counter_line(f, p, le);
    return 0;
  }
  if (!fm_end(p + 1, le))
    return fm_bad(f, "unknown line");
  uint64_t pfn;
  p = fm_skip(p + 1, le);
  if (!fm_end(p = kind == 'P' ? fm_hex(p, le, &pfn) : fm_dec(p, le, &pfn), le))
    return fm_bad(f, "bad pfn");
  if (kind == 'F' || kind == 'M' || kind == 'R' || kind == 'Q') { /* after the previous run */
    uint64_t base = kind == 'F'   ? f->last_free
                    : kind == 'R' ? f->last_rep
                    : kind == 'Q' ? f->last_quiet
                                  : f->last_mov;
    if (pfn > UINT64_MAX / 2 - base)
      return fm_bad(f, "bad pfn");
    pfn += base;
  }
  switch (kind) {
  case 'F':
  case 'R':
    return fm_block_line(f, kind, pfn, p, le);
  case 'M':
  case 'Q':
    return fm_page_run_line(f, kind, pfn, p, le);
  case 'P':
    return fm_pageblock_line(f, pfn, p, le);
  default:
    return fm_bad(f, "unknown line");
  }
}

/* After the last line: the reported blocks agree with the count and are free blocks. */
static int fm_finish(struct fm_parse *f) {
  bh__snap_t *sn = f->sn;
  uint64_t stray;
  if (f->nquiet != f->quiet) /* a "quiet" line counts the Q lines' pages */
    return bh__errf(f->err, f->errlen, BH_EFORMAT, "%s: Q lines hold %lu pages, 'quiet' says %lu",
                    f->sec, (unsigned long)f->nquiet, (unsigned long)f->quiet);
  if (f->nrep && !sn->reported_known) /* R lines say it: a count is only a check */
    sn->reported_known = true;
  else if (f->nrep != f->reported)
    return bh__errf(f->err, f->errlen, BH_EFORMAT,
                    "%s: R lines name %lu blocks, 'reported' says %lu", f->sec,
                    (unsigned long)f->nrep, (unsigned long)f->reported);
  else if ((stray = fm_unlisted_reported(sn, f->nf)) != UINT64_MAX)
    return bh__errf(f->err, f->errlen, BH_EFORMAT,
                    "%s: reported block at %#lx is not one of the free blocks", f->sec,
                    (unsigned long)stray);
  return 0;
}

int bh__freemap_parse(bh_machine_t *m, int which, const char *text, size_t len, char *err,
                      size_t errlen) {
  bh__snap_t *sn = &m->snaps[which];
  bh__snap_free_map(sn);
  const char *sec = which == BH_SNAP_START ? "start/freemap" : "end/freemap";
  if (!m->layout_set || !m->info.pageblock_order || !m->info.max_order)
    return bh__errf(err, errlen, BH_EFORMAT,
                    "%s: needs the zoneinfo, buddyinfo and pagetypeinfo (or the "
                    "machine's max_order and pageblock_order)",
                    sec);
  struct fm_parse f = {.m = m,
                       .sn = sn,
                       .sec = sec,
                       .err = err,
                       .errlen = errlen,
                       .pbo = m->info.pageblock_order,
                       .maxo = m->info.max_order,
                       .end_pfn = layout_end(m),
                       .fcap = 256,
                       .mcap = 256};
  f.npb = f.end_pfn >> f.pbo;
  sn->free_runs = malloc(f.fcap * sizeof(*sn->free_runs));
  sn->movable_runs = malloc(f.mcap * sizeof(*sn->movable_runs));
  sn->pageblock_mt = malloc(f.npb ? f.npb : 1);
  if (!sn->free_runs || !sn->movable_runs || !sn->pageblock_mt) {
    bh__snap_free_map(sn);
    return BH_ENOMEM;
  }
  memset(sn->pageblock_mt, BH_PB_ABSENT, f.npb);
  const char *s = text, *e = text + len, *l, *le;
  int rc = 0;
  while (!rc && bh__next_line(&s, e, &l, &le)) {
    f.line++;
    const char *p = fm_skip(l, le);
    if (p == le || *p == '#')
      continue;
    if (f.line == 1)
      rc = (size_t)(le - p) < 9 || memcmp(p, "freemap 1", 9) ? fm_bad(&f, "not 'freemap 1'") : 0;
    else
      rc = fm_line(&f, p, le);
  }
  if (!rc && f.line == 0)
    rc = bh__errf(err, errlen, BH_EFORMAT, "%s: empty", sec);
  if (!rc)
    rc = fm_finish(&f);
  if (rc) {
    bh__snap_free_map(sn);
    return rc;
  }
  bh_snapshot_t *pub = &sn->pub;
  pub->free_runs = sn->free_runs;
  pub->nr_free_runs = f.nf;
  pub->movable_runs = sn->movable_runs;
  pub->nr_movable_runs = f.nm;
  pub->pageblock_mt = sn->pageblock_mt;
  pub->nr_pageblocks = f.npb;
  pub->have_freemap = true;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Deriving a free map from kpageflags                                                       */
/* ---------------------------------------------------------------------------------------- */

/* What one pageblock (or several, under one free block above the pageblock order) holds. */
struct unit {
  uint64_t pb;   /* first pageblock */
  uint32_t size; /* pageblocks */
  uint32_t mov, slab, kern, free_pages, flagged;
  uint32_t nfree; /* free blocks in it; their orders are in the zone's block list */
  uint32_t first_free;
  int type;
};

/* Pages of u whose evidence contradicts type t. */
static uint64_t unit_cost(const struct unit *u, int t) {
  switch (t) {
  case BH_MT_MOVABLE:
  case BH_MT_CMA:
    return (uint64_t)u->slab + u->kern;
  case BH_MT_UNMOVABLE:
  case BH_MT_HIGHATOMIC:
    return u->mov;
  case BH_MT_RECLAIMABLE:
    return (uint64_t)u->mov + u->kern;
  default: /* Isolate: only temporary, only where counts demand one */
    return (uint64_t)u->mov + u->slab + u->kern + 1;
  }
}

struct zone_work {
  const bh_snapshot_zone_t *counts; /* pagetypeinfo of this snapshot */
  bool have_counts;
  struct unit *u;
  size_t nu;
  uint64_t *blocks; /* free blocks: pfn << 8 | order, in pfn order */
  size_t nb;
  int64_t resid[BH_SNAP_TYPES][BH_ORDER_LIMIT + 1]; /* assigned - recorded free blocks */
  int64_t left[BH_SNAP_TYPES];                      /* pageblocks still to give each type */
};

/* Free-list mismatch (pages) of giving unit u type t, as a change of the residual. */
static int64_t free_gain(const struct zone_work *w, const struct unit *u, int t) {
  int64_t d = 0, h[BH_ORDER_LIMIT + 1] = {0};
  for (uint32_t k = 0; k < u->nfree; k++)
    h[w->blocks[u->first_free + k] & 0xff]++;
  for (int o = 0; o <= BH_ORDER_LIMIT; o++) {
    if (!h[o])
      continue;
    int64_t r = w->resid[t][o];
    d += ((r + h[o] < 0 ? -(r + h[o]) : r + h[o]) - (r < 0 ? -r : r)) * ((int64_t)1 << o);
  }
  return d; /* > 0: worse */
}

static void give(struct zone_work *w, struct unit *u, int t) {
  u->type = t;
  w->left[t] -= u->size;
  for (uint32_t k = 0; k < u->nfree; k++)
    w->resid[t][w->blocks[u->first_free + k] & 0xff]++;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/*
 * Types for the units of one zone: free units first, each to the type (with room left) whose
 * recorded free lists it matches best (free-list mismatch counts twice: it is the harder data),
 * then the others by their evidence.
 */
static void assign_types(struct zone_work *w, unsigned pbo) {
  static const int order_of_types[] = {BH_MT_CMA,         BH_MT_ISOLATE,   BH_MT_HIGHATOMIC,
                                       BH_MT_RECLAIMABLE, BH_MT_UNMOVABLE, BH_MT_MOVABLE};
  (void)pbo;
  if (!w->have_counts) { /* no pagetypeinfo: evidence alone */
    for (size_t i = 0; i < w->nu; i++) {
      struct unit *u = &w->u[i];
      u->type = u->mov >= u->slab + u->kern ? BH_MT_MOVABLE
                : u->slab > u->kern         ? BH_MT_RECLAIMABLE
                                            : BH_MT_UNMOVABLE;
    }
    return;
  }
  for (int t = 0; t < BH_SNAP_TYPES; t++)
    for (int o = 0; o <= BH_ORDER_LIMIT; o++)
      w->resid[t][o] = -(int64_t)w->counts->nr_free_mt[t][o];
  /* the free units, the most free memory first */
  uint64_t *order = malloc(w->nu * sizeof(*order));
  size_t nfu = 0;
  for (size_t i = 0; order && i < w->nu; i++) {
    w->u[i].type = -1;
    if (w->u[i].nfree)
      order[nfu++] = (uint64_t)(UINT32_MAX - w->u[i].free_pages) << 32 | i;
  }
  if (order)
    qsort(order, nfu, sizeof(*order), cmp_u64);
  for (size_t k = 0; order && k < nfu; k++) {
    struct unit *u = &w->u[order[k] & 0xffffffff];
    int best = -1;
    int64_t best_j = INT64_MAX;
    for (int t = 0; t < BH_SNAP_TYPES; t++) {
      if (w->left[t] < (int64_t)u->size)
        continue;
      int64_t j = 2 * free_gain(w, u, t) + (int64_t)unit_cost(u, t);
      if (j < best_j) {
        best_j = j;
        best = t;
      }
    }
    if (best >= 0)
      give(w, u, best);
  }
  free(order);
  /* the rest by evidence: each type in turn takes the units it fits best */
  for (size_t ti = 0; ti < sizeof(order_of_types) / sizeof(order_of_types[0]); ti++) {
    int t = order_of_types[ti];
    for (;;) {
      struct unit *best = NULL;
      int64_t best_j = INT64_MAX;
      for (size_t i = 0; i < w->nu; i++) {
        struct unit *u = &w->u[i];
        if (u->type >= 0 || (int64_t)u->size > w->left[t])
          continue;
        /* how much better t fits than Movable (the default); Movable takes any */
        int64_t j = t == BH_MT_MOVABLE
                        ? 0
                        : (int64_t)unit_cost(u, t) - (int64_t)unit_cost(u, BH_MT_MOVABLE);
        if (j < best_j) {
          best_j = j;
          best = u;
          if (t == BH_MT_MOVABLE)
            break;
        }
      }
      if (!best)
        break;
      give(w, best, t);
    }
  }
  for (size_t i = 0; i < w->nu; i++) /* counts that did not add up: the boot default */
    if (w->u[i].type < 0)
      give(w, &w->u[i], BH_MT_MOVABLE);
}

/* Maximal decomposition of the free run [a, b) (inside one zone) into w->blocks. */
static int add_free_run(struct zone_work *w, size_t *cap, uint64_t a, uint64_t b,
                        unsigned max_order) {
  while (a < b) {
    unsigned o = 0;
    while (o < max_order && !(a & ((2ull << o) - 1)) && a + (2ull << o) <= b)
      o++;
    if (w->nb == *cap) {
      uint64_t *q = realloc(w->blocks, (*cap = *cap ? *cap * 2 : 1024) * sizeof(*q));
      if (!q)
        return BH_ENOMEM;
      w->blocks = q;
    }
    w->blocks[w->nb++] = a << 8 | o;
    a += 1ull << o;
  }
  return 0;
}

/* The free map's text as it is derived, zone by zone. */
struct fm_text {
  struct sbuf f, r;        /* F lines, R lines */
  uint64_t last_f, last_r; /* the end of the previous F line's blocks, R line's */
  uint64_t reported;       /* blocks in R lines */
  uint64_t skew, type_err; /* doubled */
};

/* Runs of one order of w's free blocks into the text: F lines of all of them, R lines of
 * those whose head kpageflags marks reported (KPF_UPTODATE on a buddy head is PG_reported). */
static void emit_blocks(const struct zone_work *w, const uint64_t *flags, struct fm_text *out) {
  for (int rep = 0; rep < 2; rep++) {
    struct sbuf *b = rep ? &out->r : &out->f;
    uint64_t *last = rep ? &out->last_r : &out->last_f;
    for (size_t i = 0; i < w->nb;) {
      uint64_t pfn = w->blocks[i] >> 8, order = w->blocks[i] & 0xff, c = 1;
      if (rep && !(flags[pfn] & KPF_UPTODATE)) {
        i++;
        continue;
      }
      while (i + c < w->nb && (w->blocks[i + c] & 0xff) == order &&
             (w->blocks[i + c] >> 8) == pfn + (c << order) &&
             (!rep || (flags[pfn + (c << order)] & KPF_UPTODATE)))
        c++;
      if (c > 1)
        sb_printf(b, "%c %lu %lu %lu\n", rep ? 'R' : 'F', (unsigned long)(pfn - *last),
                  (unsigned long)order, (unsigned long)c);
      else
        sb_printf(b, "%c %lu %lu\n", rep ? 'R' : 'F', (unsigned long)(pfn - *last),
                  (unsigned long)order);
      *last = pfn + (c << order);
      if (rep)
        out->reported += c;
      i += c;
    }
  }
}

/* The pageblock types and free blocks of zone zi into the text; evidence from flags. */
static int derive_zone(bh_machine_t *m, int which, int zi, const uint64_t *flags, uint64_t n,
                       uint8_t *pbt, struct fm_text *out) {
  const bh_machine_zone_t *z = &m->info.zones[zi];
  const bh_snapshot_t *snap = &m->snaps[which].pub;
  unsigned pbo = m->info.pageblock_order, maxo = m->info.max_order;
  uint64_t pbsz = 1ull << pbo, zs = z->start_pfn, ze = z->start_pfn + z->spanned_pages;
  if (ze > n)
    ze = n; /* kpageflags shorter than the zone: the rest stays allocated */
  struct zone_work w;
  memset(&w, 0, sizeof(w));
  w.counts = &snap->zones[zi];
  w.have_counts = snap->have_pagetypeinfo;
  size_t bcap = 0;
  int rc = 0;
  /* free blocks */
  for (uint64_t p = zs; p < ze && !rc;) {
    if (!(flags[p] & KPF_BUDDY) || (flags[p] & KPF_NOPAGE)) {
      p++;
      continue;
    }
    uint64_t q = p;
    while (q < ze && (flags[q] & KPF_BUDDY) && !(flags[q] & KPF_NOPAGE))
      q++;
    rc = add_free_run(&w, &bcap, p, q, maxo);
    p = q;
  }
  /* units: one per pageblock, or one per free block above the pageblock order */
  uint64_t pb0 = zs >> pbo, pb1 = (z->start_pfn + z->spanned_pages + pbsz - 1) >> pbo;
  w.u = rc ? NULL : calloc(pb1 - pb0 + 1, sizeof(*w.u));
  if (!rc && !w.u)
    rc = BH_ENOMEM;
  size_t bi = 0;
  uint64_t present = 0;
  for (uint64_t pb = pb0; !rc && pb < pb1;) {
    /* the kernel counts a pageblock by the page at zone_start + k * pageblock_nr_pages */
    uint64_t probe = zs + (pb - pb0) * pbsz;
    bool nopage = probe >= n || (flags[probe] & KPF_NOPAGE);
    while (bi < w.nb && (w.blocks[bi] >> 8) < pb << pbo)
      bi++;
    struct unit *u = &w.u[w.nu];
    memset(u, 0, sizeof(*u));
    u->pb = pb;
    u->size = 1;
    u->first_free = (uint32_t)bi;
    if (bi < w.nb && (w.blocks[bi] >> 8) == pb << pbo && (w.blocks[bi] & 0xff) > pbo)
      u->size = 1u << ((w.blocks[bi] & 0xff) - pbo);
    uint64_t from = pb << pbo, to = (pb + u->size) << pbo;
    while (bi < w.nb && (w.blocks[bi] >> 8) < to) {
      u->nfree++;
      u->free_pages += 1u << (w.blocks[bi] & 0xff);
      bi++;
    }
    for (uint64_t p = from < zs ? zs : from; p < to && p < ze; p++) {
      uint64_t f = flags[p];
      if (f & (KPF_BUDDY | KPF_NOPAGE | KPF_RESERVED))
        continue;
      if (f & KPF_MOVABLE_MASK)
        u->mov++;
      else if (f & KPF_SLAB)
        u->slab++;
      else if (f & KPF_PGTABLE)
        u->kern++;
      if (f)
        u->flagged++;
    }
    if (nopage && !u->nfree) {
      pbt[pb - pb0] = BH_PB_ABSENT;
    } else {
      w.nu++;
      present += u->size;
    }
    pb += u->size;
  }
  if (rc) {
    free(w.u);
    free(w.blocks);
    return rc;
  }
  /* more pageblocks than the kernel counted: memory not initialised yet, from the end */
  if (w.have_counts) {
    uint64_t counted = 0;
    for (int t = 0; t < BH_SNAP_TYPES; t++)
      counted += w.counts->pageblocks[t];
    for (size_t i = w.nu; present > counted && i-- > 0;) {
      struct unit *u = &w.u[i];
      if (u->size == 1 && !u->nfree && !u->flagged) {
        u->type = BH_PB_ABSENT;
        u->size = 0; /* marks it absent */
        present--;
      }
    }
    for (int t = 0; t < BH_SNAP_TYPES; t++)
      w.left[t] = (int64_t)w.counts->pageblocks[t];
    /* counts that do not add up (the files were read at different moments): Movable */
    int64_t sum = 0;
    for (int t = 0; t < BH_SNAP_TYPES; t++)
      sum += w.left[t];
    w.left[BH_MT_MOVABLE] += (int64_t)present - sum;
  }
  /* absent units out of the way */
  size_t k = 0;
  for (size_t i = 0; i < w.nu; i++) {
    if (w.u[i].size == 0 && w.u[i].type == BH_PB_ABSENT)
      pbt[w.u[i].pb - pb0] = BH_PB_ABSENT;
    else
      w.u[k++] = w.u[i];
  }
  w.nu = k;
  assign_types(&w, pbo);
  for (size_t i = 0; i < w.nu; i++)
    memset(pbt + (w.u[i].pb - pb0), w.u[i].type, w.u[i].size);
  emit_blocks(&w, flags, out);
  /* what the map says against buddyinfo and pagetypeinfo */
  int64_t hist[BH_SNAP_TYPES][BH_ORDER_LIMIT + 1];
  memset(hist, 0, sizeof(hist));
  for (size_t i = 0; i < w.nb; i++) {
    uint64_t pfn = w.blocks[i] >> 8, order = w.blocks[i] & 0xff;
    uint8_t t = pbt[(pfn >> pbo) - pb0];
    hist[t < BH_SNAP_TYPES ? t : BH_MT_MOVABLE][order]++;
  }
  for (unsigned o = 0; o <= maxo; o++) {
    int64_t all = 0;
    for (int t = 0; t < BH_SNAP_TYPES; t++) {
      all += hist[t][o];
      if (w.have_counts) {
        int64_t d = hist[t][o] - (int64_t)w.counts->nr_free_mt[t][o];
        out->type_err += (uint64_t)(d < 0 ? -d : d) << o;
      }
    }
    if (snap->have_buddyinfo) {
      int64_t d = all - (int64_t)snap->zones[zi].nr_free[o];
      out->skew += (uint64_t)(d < 0 ? -d : d) << o;
    }
  }
  free(w.u);
  free(w.blocks);
  return 0;
}

/* An allocated page that looks movable (M lines), and one with no flag at all (Q lines). */
static bool movable_page(uint64_t f) {
  return !(f & (KPF_BUDDY | KPF_NOPAGE)) && (f & KPF_MOVABLE_MASK);
}
static bool quiet_page(uint64_t f) { return !f; }

/* The runs of the zones' pages that pick accepts, as "KIND GAP COUNT" lines into sb (GAP from
 * the end of the previous line's run); returns their pages. */
static uint64_t page_run_lines(struct sbuf *sb, const bh_machine_t *m, const uint64_t *flags,
                               uint64_t n, char kind, bool (*pick)(uint64_t)) {
  uint64_t pages = 0, last = 0;
  for (int zi = 0; zi < m->info.nr_zones; zi++) {
    const bh_machine_zone_t *z = &m->info.zones[zi];
    uint64_t end = z->start_pfn + z->spanned_pages < n ? z->start_pfn + z->spanned_pages : n;
    for (uint64_t p = z->start_pfn; p < end;) {
      if (!pick(flags[p])) {
        p++;
        continue;
      }
      uint64_t q = p;
      while (q < end && pick(flags[q]))
        q++;
      sb_printf(sb, "%c %lu %lu\n", kind, (unsigned long)(p - last), (unsigned long)(q - p));
      pages += q - p;
      last = p = q;
    }
  }
  return pages;
}

int bh__freemap_derive(bh_machine_t *m, int which, const uint64_t *flags, const uint64_t *count,
                       uint64_t n, char **text, char *err, size_t errlen) {
  (void)count; /* the map counts say nothing kpageflags does not (KPF_MMAP) */
  *text = NULL;
  if (!m->layout_set || !m->info.pageblock_order || !m->info.max_order)
    return bh__errf(err, errlen, BH_EFORMAT,
                    "kpageflags: needs the zoneinfo, buddyinfo and pagetypeinfo");
  unsigned pbo = m->info.pageblock_order;
  uint64_t npb = layout_end(m) >> pbo;
  uint8_t *pbt = malloc(npb ? npb : 1);
  if (!pbt)
    return BH_ENOMEM;
  memset(pbt, BH_PB_ABSENT, npb);
  struct sbuf out = {0};
  struct fm_text ft;
  memset(&ft, 0, sizeof(ft));
  int rc = 0;
  for (int zi = 0; !rc && zi < m->info.nr_zones; zi++) {
    const bh_machine_zone_t *z = &m->info.zones[zi];
    rc = derive_zone(m, which, zi, flags, n, pbt + (z->start_pfn >> pbo), &ft);
  }
  /* allocated pages without a flag (pcp pages among them): the start snapshot only */
  struct sbuf quiet = {0};
  uint64_t nquiet =
      !rc && which == BH_SNAP_START ? page_run_lines(&quiet, m, flags, n, 'Q', quiet_page) : 0;
  if (!rc) {
    sb_printf(&out, "freemap 1\nskew %lu\ntype_error %lu\nreported %lu\n",
              (unsigned long)(ft.skew / 2), (unsigned long)(ft.type_err / 2),
              (unsigned long)ft.reported);
    if (which == BH_SNAP_START)
      sb_printf(&out, "quiet %lu\n", (unsigned long)nquiet);
    if (ft.f.p)
      sb_printf(&out, "%s", ft.f.p);
    if (ft.r.p)
      sb_printf(&out, "%s", ft.r.p);
    /* pageblock types, 64 runs a line */
    for (uint64_t b = 0; b < npb;) {
      int runs = 0;
      sb_printf(&out, "P %lx", (unsigned long)(b << pbo));
      while (b < npb && runs < 64) {
        uint64_t c = 1;
        while (b + c < npb && pbt[b + c] == pbt[b])
          c++;
        sb_printf(&out, " %c%lu", pbt[b] < BH_SNAP_TYPES ? mt_letters[pbt[b]] : '-',
                  (unsigned long)c);
        b += c;
        runs++;
      }
      sb_printf(&out, "\n");
    }
    /* movable allocated pages: the replay starts from the start snapshot only */
    if (which == BH_SNAP_START)
      page_run_lines(&out, m, flags, n, 'M', movable_page);
    if (quiet.p)
      sb_printf(&out, "%s", quiet.p);
    if (out.oom || quiet.oom)
      rc = BH_ENOMEM;
  }
  free(quiet.p);
  free(pbt);
  free(ft.f.p);
  free(ft.r.p);
  if (ft.f.oom || ft.r.oom)
    rc = rc ? rc : BH_ENOMEM;
  if (rc) {
    free(out.p);
    return rc;
  }
  *text = out.p;
  return 0;
}
