/*
 * The state a replay starts from, in a recorded machine's layout (start_state.c): what the
 * trace itself says about each page (its first event), and the free blocks, pageblock types
 * and pcp blocks given to bh_arena_populate, from a start snapshot's free map (kpageflags),
 * from its counts alone (buddyinfo, pagetypeinfo), or an empty machine.
 */
#ifndef BH_TRACE_START_STATE_H
#define BH_TRACE_START_STATE_H

#include <buddyhint.h>
#include <buddyhint/machine.h>
#include <buddyhint/trace.h>

enum bh__start_kind { BH__START_EMPTY, BH__START_KPAGEFLAGS, BH__START_COUNTS };

/*
 * Per page of the layout, what its first event in the trace was (one u32 each): bits 0-1
 * FE_ALLOC or FE_FREE; for the first page of a first allocation also its order + 1 (bits
 * 2-7), its migratetype (bits 8-10) and its CPU (bits 16-31).  A pcp drain before any page
 * event of its block counts as the block's first allocation (the block was free, on that CPU's
 * pcp list, at the drain's order), with BH__FE_DRAINED (bit 11) on its first page, and in bits
 * 12-14 a bit per pcp type whose list of that CPU and order the trace had shown refilled
 * before the drain (BH__FE_GONE_SHIFT): empty then, so not the list the block lay on.
 */
enum { BH__FE_NONE = 0, BH__FE_ALLOC = 1, BH__FE_FREE = 2, BH__FE_DRAINED = 1u << 11 };
#define BH__FE_GONE_SHIFT 12

#define BH__EMPTIED_CPUS 1024 /* CPUs whose refilled pcp lists are kept (emptied) */

typedef struct bh__first_events {
  uint32_t *fe; /* nr_pages entries, or NULL (no trace information) */
  uint64_t nr_pages;
  /* The pfns of the blocks whose first event is an allocation, in the trace's order: the
   * order the kernel took them in, so the order of the pcp lists that held them at the start
   * (the kernel takes a pcp list's head).  NULL when it could not be kept (out of memory):
   * the start state then puts those lists in pfn order. */
  uint64_t *seq;
  size_t nr_seq, seq_cap;
  bool seq_lost;
  /* the start pcp lists as before they were inferred from the trace: in pfn order, each block
   * on its pageblock type's list (bh_replay_config_t.start_order_pfn) */
  bool pfn_order;
  /* the start pcp lists hold only what the trace shows (bh_replay_config_t.start_pcp_trace),
   * not also the pages zoneinfo counts there beyond it */
  bool pcp_trace_only;
  /* a pcp event or a fallback has been seen: the trace records the refills, so a block whose
   * first event is an allocation and that no take gave out came off a pcp list it was on at
   * the start (bh__first_event; known only at the first pass's end, bh__pb_settle, since a
   * start's full lists can serve thousands of allocations before the first refill) */
  bool pcp_seen;
  /* Pageblock types as the trace shows them (NULL: not kept).  A free puts a block of a pcp
   * order on the pcp list of its pageblock's type, and an allocation of the request's type
   * takes from that type's list (free_unref_page, __rmqueue_pcplist): a block freed and then
   * allocated again on the same CPU, with no event between, shows that its pageblock had the
   * request's type when it was freed.  last_free: per page, the CPU slot + 1 (bits 0-5) and
   * order (bits 6-7) of a free that was the page's last event, else 0; pb_type: per pageblock,
   * the type + 1 of its first such evidence, else 0. */
  uint8_t *last_free, *pb_type;
  uint64_t nr_pageblocks;
  /* A bit per page: its first event was a take from the buddy lists (a pcp refill or another
   * zone_locked event), so it was free at the start, whatever its first page event is
   * (bh__first_take).  NULL: not kept. */
  uint64_t *taken;
  /* The takes that were the first event of their first page, as bh__take_key (pfn, the
   * request's migratetype, order; a migratetype out of the pcp types' range: unknown), in the
   * trace's order: the order the kernel took the start's free blocks from the heads of its
   * buddy lists (NULL and takes_lost when it could not be kept; empty without pcp events). */
  uint64_t *takes;
  size_t nr_takes, takes_cap;
  bool takes_lost;
  uint64_t last_refill_pb; /* bh__refill_evidence */
  /* Per CPU (below BH__EMPTIED_CPUS) and pcp migratetype, a bit per order: the trace shows
   * that CPU's pcp list of that type and order refilled (mm_page_alloc_zone_locked with
   * percpu_refill; __rmqueue_pcplist refills only an empty list, mm/page_alloc.c:3082-3092 in
   * 6.12), so it held none of the start's pcp pages that the trace does not show (the start
   * state's pcp_hidden) */
  uint16_t emptied[BH__EMPTIED_CPUS][BH_MT_PCPTYPES];
  unsigned pb_order;
  /* Per CPU (below BH__EMPTIED_CPUS): the drain its latest events belong to, a run of
   * mm_page_pcpu_drain events with no other event of that CPU between (bh__drain_run): its
   * first and last list (bh__pcp_list + 1; 0: no run), and whether its lists came in
   * free_pcppages_bulk's round-robin order. */
  uint8_t run_first[BH__EMPTIED_CPUS], run_last[BH__EMPTIED_CPUS];
  bool run_bad[BH__EMPTIED_CPUS];
} bh__first_events_t;

/* A take of bh__first_events_t.takes, one 64-bit key: pfn, the request's migratetype, order. */
#define BH__TAKE_PFN_SHIFT 16
static inline uint64_t bh__take_key(uint64_t pfn, int mt, unsigned order) {
  return pfn << BH__TAKE_PFN_SHIFT | (uint64_t)(mt & 0xff) << 8 | (order & 0xff);
}
static inline uint64_t bh__take_pfn(uint64_t key) { return key >> BH__TAKE_PFN_SHIFT; }
static inline unsigned bh__take_mt(uint64_t key) { return (unsigned)(key >> 8) & 0xff; }
static inline unsigned bh__take_order(uint64_t key) { return (unsigned)key & 0xff; }

/* A block whose first event is an allocation, at the end of f->seq (cold: once per block). */
void bh__first_alloc_seq(bh__first_events_t *f, uint64_t pfn);
/* A take from the buddy lists that is the first event of its page (f->takes' key), at the end
 * of f->takes (cold: once per block). */
void bh__first_take_seq(bh__first_events_t *f, uint64_t key);
/* Frees f's arrays and clears it. */
void bh__first_events_free(bh__first_events_t *f);
/* *dst, a copy of src's arrays (dst's are freed first): 0 or BH_ENOMEM. */
int bh__first_events_copy(bh__first_events_t *dst, const bh__first_events_t *src);

/* pb_type: weak evidence (a start pcp page's first allocation, bh__first_event), which any
 * other evidence replaces; bh__pb_settle makes it evidence like the rest at the end. */
#define BH__PB_WEAK 0x10
/* pb_type of a pageblock a claim retyped (bh__refill_evidence): no evidence of its type */
#define BH__PB_CLAIMED 0xff
/* Pageblock b's evidence other than weak, or 0. */
static inline uint8_t bh__pb_firm(const bh__first_events_t *f, uint64_t b) {
  uint8_t v = f->pb_type[b];
  return (v & BH__PB_WEAK) && v != BH__PB_CLAIMED ? 0 : v;
}
/* The first pass is over: weak evidence counts as any other (the start state reads pb_type
 * as a type + 1), where the trace showed a pcp event; without one it was no evidence (every
 * allocation looks untaken where no refill is recorded). */
static inline void bh__pb_settle(bh__first_events_t *f) {
  for (uint64_t b = 0; f->pb_type && b < f->nr_pageblocks; b++)
    if (f->pb_type[b] != BH__PB_CLAIMED && (f->pb_type[b] & BH__PB_WEAK))
      f->pb_type[b] = f->pcp_seen ? (uint8_t)(f->pb_type[b] & ~BH__PB_WEAK) : 0;
}

/* A CPU's slot in bh__first_events_t.last_free (bits 0-5). */
static inline uint8_t bh__lf_cpu(int cpu) { return (uint8_t)((cpu < 0 ? 0 : cpu % 63) + 1); }

/* The evidence of pageblock types in one event (bh__first_events_t.pb_type). */
static inline void bh__pageblock_evidence(bh__first_events_t *f, const bh_event_t *ev) {
  if (ev->order > 3 || ev->op == BH_EV_FREE_BATCHED) /* above the pcp orders but THP's */
    return;
  uint8_t *lf = &f->last_free[ev->pfn];
  uint8_t me = bh__lf_cpu(ev->cpu) | (uint8_t)(ev->order << 6);
  if (ev->op != BH_EV_ALLOC) {
    *lf = me;
    return;
  }
  uint64_t b = ev->pfn >> f->pb_order;
  int mt = bh_gfp_migratetype(ev->gfp);
  if (*lf == me && b < f->nr_pageblocks && !bh__pb_firm(f, b) && mt < BH_MT_PCPTYPES)
    f->pb_type[b] = (uint8_t)(mt + 1);
  *lf = 0;
}

/* Pageblock b had type mt (a pcp type) as an event shows: the first evidence of a pageblock, in
 * the trace's order, counts.  Whether it was the first. */
static inline bool bh__pb_type_first(bh__first_events_t *f, uint64_t b, int mt) {
  if (bh__pb_firm(f, b) || mt < 0 || mt >= BH_MT_PCPTYPES)
    return false;
  f->pb_type[b] = (uint8_t)(mt + 1);
  return true;
}

static inline void bh__drain_run(bh__first_events_t *f, const bh_event_t *ev);

/* A page event of the trace, for the first events of its pages.  Whether it is the first event
 * of its block and an allocation of a block no take gave out: one that lay on a pcp list at the
 * start (with the pcp events recorded). */
static inline bool bh__first_event(bh__first_events_t *f, const bh_event_t *ev) {
  bh__drain_run(f, ev);
  if (ev->order > 20 || ev->pfn >= f->nr_pages || (ev->op == BH_EV_ALLOC && ev->failed))
    return false;
  if (f->last_free)
    bh__pageblock_evidence(f, ev);
  uint64_t n = 1ull << ev->order, end = ev->pfn + n < f->nr_pages ? ev->pfn + n : f->nr_pages;
  uint32_t kind = ev->op == BH_EV_ALLOC ? BH__FE_ALLOC : BH__FE_FREE, head = f->fe[ev->pfn];
  if (head && n == 1)
    return false; /* the common case: seen */
  for (uint64_t p = ev->pfn; p < end; p++)
    if (!f->fe[p])
      f->fe[p] = kind;
  if (kind == BH__FE_ALLOC && !head) { /* the block as it was taken: its first event */
    int mt = bh_gfp_migratetype(ev->gfp);
    uint32_t cpu = ev->cpu < 0 ? 0 : (uint32_t)ev->cpu & 0xffff;
    f->fe[ev->pfn] |= (uint32_t)(ev->order + 1) << 2 | (uint32_t)mt << 8 | cpu << 16;
    bh__first_alloc_seq(f, ev->pfn);
    /* taken off a pcp list it lay on at the start, where a free put it by its pageblock's
     * type then (free_unref_page, mm/page_alloc.c:2750-2756 in 6.12; HighAtomic pageblocks'
     * pages on the Movable list): weak evidence of that type, since the pageblock may have
     * been retyped after the free and before the start; any other evidence outranks it */
    uint64_t b = ev->pfn >> f->pb_order;
    bool untaken = f->taken && !(f->taken[ev->pfn >> 6] & 1ull << (ev->pfn & 63));
    if (f->pb_type && untaken && b < f->nr_pageblocks && !f->pb_type[b] && mt < BH_MT_PCPTYPES)
      f->pb_type[b] = (uint8_t)(BH__PB_WEAK | (mt + 1));
    return untaken;
  }
  return false;
}

/*
 * A pcp drain (mm_page_pcpu_drain) before any other event of its block's pages: at the start
 * the block was on the CPU's pcp list at the drain's order (free_pcppages_bulk drains a block
 * as it lies on the list, mm/page_alloc.c:1264 in 6.12.117), which a free map cannot show (a
 * pcp page is neither buddy nor in use).  Its list is its pageblock's type's, as the drain
 * event says it (HighAtomic and isolated pageblocks' blocks lie on the Movable list).
 */
static inline void bh__first_drain(bh__first_events_t *f, const bh_event_t *ev) {
  if (ev->op != BH_EV_PCPU_DRAIN || ev->order > 20 || ev->pfn >= f->nr_pages ||
      (1ull << ev->order) > f->nr_pages - ev->pfn)
    return;
  uint64_t end = ev->pfn + (1ull << ev->order);
  uint32_t mt = ev->migratetype >= 0 && ev->migratetype < BH_MT_PCPTYPES ? (uint32_t)ev->migratetype
                                                                         : BH_MT_MOVABLE;
  if (f->last_free && ev->cpu >= 0 && ev->cpu < BH__EMPTIED_CPUS &&
      (f->last_free[ev->pfn] & 63) == bh__lf_cpu(ev->cpu)) {
    /* freed in the trace on this CPU, its last page event: a drain takes a list's tail, its
     * oldest block (free_pcppages_bulk, :1254; frees go on the head, :2692), so every block
     * the list held at the start has left it, each with an event: the list holds none of
     * the start's that the trace does not show (emptied, as a refill's list).  (A drain of
     * another CPU's lists, drain_all_pages, is traced on the CPU that runs it: a block freed
     * on another CPU says nothing of this one's list.) */
    if (ev->order < 16)
      f->emptied[ev->cpu][mt] |= (uint16_t)(1u << ev->order);
  }
  for (uint64_t p = ev->pfn; p < end; p++)
    if (f->fe[p])
      return; /* the block had an event before: not as it was at the start */
  for (uint64_t p = ev->pfn; p < end; p++)
    f->fe[p] = BH__FE_ALLOC;
  uint32_t cpu = ev->cpu < 0 ? 0 : (uint32_t)ev->cpu & 0xffff, gone = 0;
  for (int t = 0; t < BH_MT_PCPTYPES && ev->cpu >= 0 && ev->cpu < BH__EMPTIED_CPUS; t++)
    gone |= ((f->emptied[ev->cpu][t] >> ev->order) & 1u) << t;
  f->fe[ev->pfn] |= (uint32_t)(ev->order + 1) << 2 | mt << 8 | BH__FE_DRAINED |
                    gone << BH__FE_GONE_SHIFT | cpu << 16;
  bh__first_alloc_seq(f, ev->pfn);
  /* the drain prints the pageblock's type as free_pcppages_bulk reads it for the drain
   * (get_pfnblock_migratetype, mm/page_alloc.c:1256 and :1264 in 6.12): evidence of that
   * type, as a refill's is */
  uint64_t b = ev->pfn >> f->pb_order;
  if (f->pb_type && b < f->nr_pageblocks)
    bh__pb_type_first(f, b, ev->migratetype);
}

/*
 * A pcp refill or a block taken at once (mm_page_alloc_zone_locked) comes from
 * __rmqueue_smallest, which takes only the request's migratetype's free lists
 * (mm/page_alloc.c:1644-1650 in 6.12): the block's pageblock had that type then.  A claim
 * (mm_page_alloc_extfrag with change_ownership) retypes the pageblock first and is traced after
 * the zone_locked event of the block it takes (try_to_steal_block's __move_freepages_block and
 * __rmqueue_smallest, :2022-2023, then __rmqueue_claim's trace, :2255): a claim of the
 * pageblock the last refill gave its type from takes that evidence back, and a claimed
 * pageblock gives none (BH__PB_CLAIMED).  f->last_refill_pb: the pageblock of the last
 * zone_locked event + 1, or 0.
 */
static inline void bh__refill_evidence(bh__first_events_t *f, const bh_event_t *ev) {
  if (!f->pb_type || ev->pfn >= f->nr_pages)
    return;
  uint64_t b = ev->pfn >> f->pb_order;
  if (b >= f->nr_pageblocks)
    return;
  if (ev->op == BH_EV_EXTFRAG) {
    if (ev->change_ownership && (!bh__pb_firm(f, b) || (f->last_refill_pb == b + 1 &&
                                                        f->pb_type[b] == ev->migratetype + 1)))
      f->pb_type[b] = BH__PB_CLAIMED;
    return;
  }
  if (ev->op != BH_EV_ALLOC_ZONE_LOCKED)
    return;
  f->last_refill_pb = bh__pb_type_first(f, b, ev->migratetype) ? b + 1 : 0;
}

/*
 * A block taken from the buddy lists (mm_page_alloc_zone_locked: a pcp refill, or a block
 * __rmqueue_smallest gave out at once) before any other event of its pages: they were free in
 * the buddy at the start.  A page a refill put on a pcp list can leave it with no traced
 * allocation (alloc_pages_bulk traces none) and then be freed: its first page event is a free,
 * and without this it would count as allocated at the start, the free block around it split
 * where the kernel had it whole.
 */
static inline void bh__first_take(bh__first_events_t *f, const bh_event_t *ev) {
  /* a fallback that claims a block of a pageblock or more (try_to_steal_block, :1975-1980 in
   * 6.12.117) or steals one (__rmqueue_steal, :2284-2287) takes the head of the fallback
   * type's list at the fallback's order (get_page_from_free_area, :2251 and :2284) and traces
   * only mm_page_alloc_extfrag, of the block's first page; a smaller claim's take was traced
   * before it (__rmqueue_smallest from :2024): taken already */
  bool fb = ev->op == BH_EV_EXTFRAG;
  unsigned order = fb ? ev->fallback_order : ev->order;
  int mt = fb ? ev->fallback_migratetype : ev->migratetype;
  if ((ev->op != BH_EV_ALLOC_ZONE_LOCKED && !fb) || !f->taken || order > 20 ||
      ev->pfn >= f->nr_pages || (1ull << order) > f->nr_pages - ev->pfn ||
      (fb && (ev->pfn & ((1ull << order) - 1))))
    return;
  if (!f->fe[ev->pfn] && !(f->taken[ev->pfn >> 6] & 1ull << (ev->pfn & 63)))
    bh__first_take_seq(f, bh__take_key(ev->pfn, mt, order));
  else if (fb)
    return;
  for (uint64_t p = ev->pfn, end = p + (1ull << order); p < end; p++)
    if (!f->fe[p])
      f->taken[p >> 6] |= 1ull << (p & 63);
}

/* A pcp refill: its list was empty then (bh__first_events_t.emptied). */
static inline void bh__first_refill(bh__first_events_t *f, const bh_event_t *ev) {
  if (ev->op == BH_EV_ALLOC_ZONE_LOCKED && ev->percpu_refill && ev->cpu >= 0 &&
      ev->cpu < BH__EMPTIED_CPUS && ev->migratetype >= 0 && ev->migratetype < BH_MT_PCPTYPES &&
      ev->order < 16)
    f->emptied[ev->cpu][ev->migratetype] |= (uint16_t)(1u << ev->order);
}

/*
 * The pcp lists of a CPU in free_pcppages_bulk's round-robin order (order_to_pindex,
 * mm/page_alloc.c:537-554 in 6.12): orders 0 to 3 by type, then the THP lists, other types'
 * and Movable's.  A drain event prints its pageblock's type, which is its list's type but for
 * a block that a fallback left on another type's list (bh__drain_run checks the order).
 */
#define BH__PCP_LISTS (4 * BH_MT_PCPTYPES + 2)
static inline int bh__pcp_list(unsigned order, int mt, unsigned pb_order) {
  if (mt < 0 || mt >= BH_MT_PCPTYPES)
    return -1;
  if (order <= 3)
    return (int)order * BH_MT_PCPTYPES + mt;
  return order == pb_order ? 4 * BH_MT_PCPTYPES + (mt == BH_MT_MOVABLE) : -1;
}

/*
 * The end of CPU cpu's drain run: free_pcppages_bulk drains a list until the count it was
 * asked for is reached or the list is empty, then the next non-empty list in round-robin
 * order (mm/page_alloc.c:1240-1266 in 6.12), so every list from its first to (not including)
 * its last was empty when it ended, drained or skipped: emptied, as a refill's list (none of
 * them held a start page the trace does not show).  A run whose lists did not come in that
 * order (two drains with no event between, or a block on another type's list) says nothing.
 */
static inline void bh__drain_run_end(bh__first_events_t *f, int cpu) {
  if (cpu < 0 || cpu >= BH__EMPTIED_CPUS || !f->run_first[cpu])
    return;
  unsigned first = f->run_first[cpu] - 1u, last = f->run_last[cpu] - 1u;
  f->run_first[cpu] = 0;
  if (f->run_bad[cpu])
    return;
  for (unsigned k = first; k != last; k = (k + 1) % BH__PCP_LISTS) {
    unsigned order = k < 4 * BH_MT_PCPTYPES ? k / BH_MT_PCPTYPES : f->pb_order;
    if (order >= 16)
      continue;
    if (k < 4 * BH_MT_PCPTYPES || k == BH__PCP_LISTS - 1)
      f->emptied[cpu][k < 4 * BH_MT_PCPTYPES ? k % BH_MT_PCPTYPES : BH_MT_MOVABLE] |=
          (uint16_t)(1u << order);
    else /* the other types' THP list */
      for (int t = 0; t < BH_MT_PCPTYPES; t++)
        if (t != BH_MT_MOVABLE)
          f->emptied[cpu][t] |= (uint16_t)(1u << order);
  }
}

/* An event of CPU ev->cpu: a drain joins or starts its run, any other event ends it. */
static inline void bh__drain_run(bh__first_events_t *f, const bh_event_t *ev) {
  int cpu = ev->cpu;
  if (cpu < 0 || cpu >= BH__EMPTIED_CPUS)
    return;
  int l = ev->op == BH_EV_PCPU_DRAIN ? bh__pcp_list(ev->order, ev->migratetype, f->pb_order) : -1;
  if (l < 0) {
    bh__drain_run_end(f, cpu);
    return;
  }
  if (!f->run_first[cpu]) {
    f->run_first[cpu] = f->run_last[cpu] = (uint8_t)(l + 1);
    f->run_bad[cpu] = false;
    return;
  }
  unsigned first = f->run_first[cpu] - 1u, last = f->run_last[cpu] - 1u;
  unsigned pos = ((unsigned)l + BH__PCP_LISTS - first) % BH__PCP_LISTS,
           at = (last + BH__PCP_LISTS - first) % BH__PCP_LISTS;
  if ((unsigned)l != last && pos <= at)
    f->run_bad[cpu] = true; /* back to a list already left: not one drain's order */
  f->run_last[cpu] = (uint8_t)(l + 1);
}

/* Ends every CPU's drain run: the first pass's end (bh__first_events_copy copies no run). */
static inline void bh__drain_runs_end(bh__first_events_t *f) {
  for (int c = 0; c < BH__EMPTIED_CPUS; c++)
    bh__drain_run_end(f, c);
}

/* What a pcp event or a fallback tells of the start: the drains, the takes, the refills'
 * pageblock types and lists, the claims. */
static inline void bh__pcp_evidence(bh__first_events_t *f, const bh_event_t *ev) {
  f->pcp_seen = true;
  bh__drain_run(f, ev);
  bh__first_drain(f, ev);
  bh__first_take(f, ev);
  bh__refill_evidence(f, ev);
  bh__first_refill(f, ev);
}

/* The state, owned (bh__start_free). */
typedef struct bh__start {
  int kind;
  bh_populate_t pop;
  bh_block_run_t *free;
  bh_pcp_block_t *pcp;
  uint8_t *pageblock_mt;
  bh_page_run_t *movable;
  /* what did not fit: free blocks of the counts that found no place, pages whose first event
   * is an allocation but that the state holds allocated */
  uint64_t unplaced_blocks, unexplained_pages;
  uint64_t pcp_pages;        /* pages put on pcp lists */
  uint64_t pcp_hidden_pages; /* of those, pages zoneinfo counts that the trace does not show */
  bh_pcp_block_t *hidden;    /* their blocks, in the order placed (NULL: none kept) */
  size_t nr_hidden, hidden_cap;
  uint64_t pcp_count_events;   /* start/count_events read (count_adjust) */
  int64_t pcp_count_adjust;    /* what they added to zoneinfo's pcp counts, net */
  uint64_t repaired_pages;     /* kpageflags: free in the map, first freed by the trace */
  uint64_t taken_pages;        /* kpageflags: allocated in the map, first taken from the buddy */
  uint64_t retyped_pageblocks; /* kpageflags: of another type than the map's (the trace's) */
  uint64_t split_retyped_pageblocks; /* of those, by a split's evidence (types_from_splits) */
  /* the blocks of taken_pages as placed (merged with their free buddies) */
  bh_block_run_t *taken;
  size_t nr_taken;
} bh__start_t;

/*
 * Builds the state of kind for an arena laid out as m (nr_pages pages, as the arena has them;
 * pcp_orders: bit o set if order o has pcp lists, 0 without pcp; nr_cpus: its pcp slots, a
 * CPU's events going to slot cpu % nr_cpus).  fe may have fe == NULL.
 * seed spreads the free blocks of a counts state.  Returns 0, BH_ENOMEM, or BH_EINVAL with
 * a message in err.
 */
int bh__start_build(bh__start_t *st, int kind, const bh_machine_t *m, uint64_t nr_pages,
                    unsigned pcp_orders, unsigned nr_cpus, const bh__first_events_t *fe,
                    uint64_t seed, char *err, size_t errlen);
void bh__start_free(bh__start_t *st);

/* Of the pagesets the start zoneinfo of m prints for zone zi, those of the CPUs whose events go
 * to slot cpu (cpu % nr_cpus): their pages on pcp lists, and the sum and number of the high
 * marks they print (zoneinfo_show_print, mm/vmstat.c:1797-1800 in 6.12). */
void bh__start_pagesets(const bh_machine_t *m, int zi, unsigned cpu, unsigned nr_cpus,
                        uint64_t *count, uint64_t *high_sum, unsigned *highs);

/* The arena's layout from m (its zones, watermarks, orders).  Returns 0 or BH_EINVAL. */
int bh__layout_from_machine(bh_config_t *cfg, const bh_machine_t *m, char *err, size_t errlen);

#endif
