/*
 * What a recorded allocation or free means, once, for every replay of a trace: the arena
 * replay (src/replay/replay.c) and the jemalloc baseline (src/baseline/jemalloc_replay.c).
 *
 * It turns the trace's mm_page_alloc, mm_page_free and mm_page_free_batched events into
 * allocate and free calls on a backend (bh__em_ops_t: an arena, jemalloc, a test's record),
 * and owns the recorded-pfn bookkeeping (replay/pfnmap.h) and the counts of what each event
 * turned out to be, in a bh_replay_summary_t.  Linux's meaning of the events, 6.12:
 *
 *  - mm_page_alloc (trace_mm_page_alloc in __alloc_pages_noprof, mm/page_alloc.c:4881) names
 *    a block of 2^order pages at pfn that the allocator handed out; a failed allocation has
 *    no pfn and is counted (trace_failed_allocs).  An order the backend cannot serve is
 *    counted (orders_too_large) and its block is dead: its frees are dropped.  A recorded pfn
 *    allocated again while its block is live means its free was not recorded: the old block
 *    is freed first (lost_frees).
 *  - mm_page_free (trace_mm_page_free in free_pages_prepare, mm/page_alloc.c:1097) names a
 *    block leaving its user.  A block allocated without __GFP_COMP at a high order may be
 *    split (split_page, mm/page_alloc.c:2877) and its pages freed one by one: a free of part
 *    of a larger recorded block splits that block into order-0 pieces (split_frees); a free
 *    larger than the recorded block at its pfn frees every recorded block in the range.  A
 *    free of memory the trace never allocated (allocated before recording started) frees
 *    nothing; the backend may know what it was (bh__em_ops_t.untraced), otherwise it is an
 *    unknown free.
 *  - mm_page_free_batched (trace_mm_page_free_batched in free_unref_folios,
 *    mm/page_alloc.c:2857) follows the mm_page_free that free_pages_prepare gave the same
 *    folio in that function's first loop (mm/page_alloc.c:2787): one that repeats one of the
 *    last 64 mm_page_free events frees nothing (batched_dups).
 *
 * Everything is static inline: the arena replay calls it once per event, and with its ops a
 * constant table the compiler calls the backend directly (the common paths are
 * always_inline); the rare paths (splits, ranges, unknown frees) stay out of line.
 */
#ifndef BH_REPLAY_EVENT_MEANING_H
#define BH_REPLAY_EVENT_MEANING_H

#include "replay/pfnmap.h"

#include <buddyhint.h>
#include <buddyhint/replay.h>
#include <buddyhint/trace.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define BH__EM_INLINE static inline __attribute__((always_inline))
#define BH__EM_COLD static __attribute__((noinline, cold, unused))

/* What a free of no recorded block was, as the backend's untraced op tells. */
enum bh__em_untraced {
  BH__EM_UNKNOWN,          /* nothing known: unknown_frees */
  BH__EM_PRETRACE,         /* memory allocated before the trace, which the backend freed: frees and
                              pretrace_frees */
  BH__EM_WINDOW,           /* freed while the start snapshot was read, which saw it free */
  BH__EM_KERNEL_FREE,      /* memory the kernel had free: a batched repeat (batched_dups) or a free
                              of an allocation that left no event (untraced_frees) */
  BH__EM_UNTRACED_APPLIED, /* such a free, whose block the backend took from its list and freed:
                              frees, untraced_frees and untraced_frees_applied */
};

/* Recorded blocks that were never the backend's (dead) and larger than this many pages' order
 * are dropped whole at a free of a piece, rather than split into that many entries. */
#define BH__EM_SPLIT_DEAD_MAX 16

typedef struct bh__em_ops {
  /* A recorded allocation ev (its order at most max_order): 0 with the backend's block in
   * *val, 1 when the backend cannot serve it (alloc_failures), or a negative BH_E* error. */
  int (*alloc)(void *ctx, const bh_event_t *ev, uint64_t *val);
  /* Gives back the backend's block val of 2^order pages (aux as split gave it, else 0). */
  void (*free)(void *ctx, uint64_t val, unsigned order, uint32_t aux, int cpu);
  /* Splits the backend's live block val of 2^order pages into order-0 pieces; piece i is
   * val + i * stride, and every piece gets *aux (0 in a map with a dense part).  0 or a
   * negative BH_E* error. */
  int (*split)(void *ctx, uint64_t val, unsigned order, uint32_t *aux);
  /* A free of no recorded block: an enum bh__em_untraced.  NULL: always BH__EM_UNKNOWN. */
  int (*untraced)(void *ctx, const bh_event_t *ev);
  uint64_t stride;
} bh__em_ops_t;

typedef struct bh__em {
  bh__pfnmap_t map;
  bh_replay_summary_t *s;  /* the counts */
  uint64_t live_pages;     /* pages of the live recorded blocks */
  unsigned max_order;      /* larger orders are orders_too_large */
  unsigned max_order_seen; /* the largest order of an allocation so far */
  int err;                 /* the first error of a split (BH_ENOMEM), sticky */
  /* pfns freed by mm_page_free lately (+ 1, 0 = none): Linux emits mm_page_free_batched for
   * the same folios right after, and those second events must not free anything */
  uint64_t recent[64];
  unsigned recent_pos;
  /* per bucket of bh__em_recent_bucket(): how many recent[] entries fall in it (empty ones
   * count in bucket 0) and where the last one was put.  A lookup then scans recent[] only when
   * its bucket holds two entries or more.  Kept from the first mm_page_free_batched on
   * (recent_counted): traces without one pay nothing for it. */
  uint8_t recent_count[256], recent_last[256];
  bool recent_counted;
} bh__em_t;

/* Counts into s, orders up to max_order; the map is set up by the caller (bh__pfnmap_init or
 * bh__pfnmap_init_dense on m->map). */
static inline void bh__em_init(bh__em_t *m, bh_replay_summary_t *s, unsigned max_order) {
  *m = (bh__em_t){.s = s, .max_order = max_order};
}

/* ---- batched repeats ---- */

static inline unsigned bh__em_recent_bucket(uint64_t key) {
  return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 56);
}

BH__EM_INLINE void bh__em_put_recent(bh__em_t *m, uint64_t pfn) {
  unsigned i = m->recent_pos++ & 63;
  if (__builtin_expect(!m->recent_counted, 1)) {
    m->recent[i] = pfn + 1;
    return;
  }
  unsigned b = bh__em_recent_bucket(pfn + 1);
  m->recent_count[bh__em_recent_bucket(m->recent[i])]--;
  m->recent[i] = pfn + 1;
  m->recent_count[b]++;
  m->recent_last[b] = (uint8_t)i;
}

/* Removes pfn from recent[]: the entry of lowest index if it is there more than once. */
static __attribute__((noinline, unused)) bool bh__em_take_recent(bh__em_t *m, uint64_t pfn) {
  uint64_t key = pfn + 1;
  if (!m->recent_counted) { /* the first mm_page_free_batched: start counting */
    for (unsigned i = 0; i < 64; i++) {
      m->recent_count[bh__em_recent_bucket(m->recent[i])]++;
      m->recent_last[bh__em_recent_bucket(m->recent[i])] = (uint8_t)i;
    }
    m->recent_counted = true;
  }
  unsigned b = bh__em_recent_bucket(key), i = m->recent_last[b];
  if (!m->recent_count[b])
    return false;
  if (m->recent_count[b] > 1 || m->recent[i] != key) /* no single entry known: look */
    for (i = 0; i < 64 && m->recent[i] != key; i++)
      ;
  if (i == 64)
    return false;
  m->recent[i] = 0;
  m->recent_count[b]--;
  m->recent_count[bh__em_recent_bucket(0)]++;
  return true;
}

/* The first step of every free: an mm_page_free is remembered, an mm_page_free_batched that
 * repeats a remembered one is a repeat (true: counted, nothing more to do). */
BH__EM_INLINE bool bh__em_batched_repeat(bh__em_t *m, const bh_event_t *ev) {
  if (ev->op == BH_EV_FREE) {
    bh__em_put_recent(m, ev->pfn); /* its batched repeat is a repeat either way */
    return false;
  }
  if (bh__em_take_recent(m, ev->pfn)) {
    m->s->batched_dups++;
    return true;
  }
  return false;
}

/* ---- allocations ---- */

static inline uint32_t bh__em_aux(bh__pfn_ref_t e) { return e.e ? e.e->aux : 0; }

/* An allocation at a recorded pfn whose block is still there: its free was lost. */
BH__EM_COLD void bh__em_free_lost(bh__em_t *m, const bh__em_ops_t *ops, void *ctx, bh__pfn_ref_t e,
                                  int cpu) {
  unsigned kind = bh__pfn_kind(e), order = bh__pfn_order(e);
  if (kind == BH__PFN_LIVE || kind == BH__PFN_PRETRACE) {
    m->s->lost_frees++;
    ops->free(ctx, bh__pfn_val(e), order, bh__em_aux(e), cpu);
    if (kind == BH__PFN_LIVE)
      m->live_pages -= 1ull << order;
  }
  if (e.e)
    e.e->aux = 0;
}

/* An mm_page_alloc event.  0, or a negative BH_E* error (the map or the backend). */
BH__EM_INLINE int bh__em_alloc(bh__em_t *m, const bh__em_ops_t *ops, void *ctx,
                               const bh_event_t *ev) {
  bh_replay_summary_t *s = m->s;
  if (__builtin_expect(ev->failed, 0)) {
    s->trace_failed_allocs++;
    return 0;
  }
  uint64_t used = m->map.used;
  bh__pfn_ref_t e = bh__pfnmap_insert(&m->map, ev->pfn, BH__PFN_DEAD);
  if (__builtin_expect(!bh__pfn_ok(e), 0))
    return BH_ENOMEM;
  if (__builtin_expect(m->map.used == used, 0))
    bh__em_free_lost(m, ops, ctx, e, ev->cpu);
  bh__pfn_set_order(e, ev->order);
  bh__pfn_set_kind(e, BH__PFN_DEAD);
  if (__builtin_expect(ev->order > m->max_order_seen, 0))
    m->max_order_seen = ev->order;
  if (__builtin_expect(ev->order > m->max_order, 0)) {
    s->orders_too_large++;
    return 0;
  }
  uint64_t val;
  int rc = ops->alloc(ctx, ev, &val);
  if (__builtin_expect(rc != 0, 0)) {
    if (rc < 0)
      return rc;
    s->alloc_failures++;
    return 0;
  }
  bh__pfn_set_val(e, val);
  bh__pfn_set_kind(e, BH__PFN_LIVE);
  s->allocs++;
  m->live_pages += 1ull << ev->order;
  if (__builtin_expect(m->live_pages > s->live_peak_bytes >> BH_PAGE_SHIFT, 0))
    s->live_peak_bytes = m->live_pages << BH_PAGE_SHIFT;
  return 0;
}

/* ---- frees ---- */

/* Frees the recorded block of entry e and forgets it. */
BH__EM_INLINE void bh__em_free_entry(bh__em_t *m, const bh__em_ops_t *ops, void *ctx,
                                     bh__pfn_ref_t e, int cpu) {
  unsigned kind = bh__pfn_kind(e), order = bh__pfn_order(e);
  if (kind == BH__PFN_LIVE) {
    ops->free(ctx, bh__pfn_val(e), order, bh__em_aux(e), cpu);
    m->live_pages -= 1ull << order;
  } else if (__builtin_expect(kind == BH__PFN_PRETRACE, 0)) { /* moved by compaction */
    ops->free(ctx, bh__pfn_val(e), order, bh__em_aux(e), cpu);
    m->s->pretrace_frees++;
  }
  bh__pfnmap_delete(&m->map, e);
}

/*
 * A free of part of a larger recorded block (a non-compound high-order page freed piece by
 * piece): that block is split into order-0 pieces, as split_page() does, and the piece at pfn
 * is returned; none if no recorded block holds pfn.  Dead blocks above BH__EM_SPLIT_DEAD_MAX
 * are dropped whole instead of being split.
 */
BH__EM_COLD bh__pfn_ref_t bh__em_split_containing(bh__em_t *m, const bh__em_ops_t *ops, void *ctx,
                                                  uint64_t pfn, unsigned order) {
  /* Above the largest order allocated, base is one already looked at or holds no block that
   * reaches pfn: stopping there saves ~60 lookups per unknown free.  A block at base that ends
   * before pfn does not end the search: an older, larger block may still hold pfn. */
  for (unsigned k = order + 1; k <= m->max_order_seen; k++) {
    uint64_t base = pfn & ~((1ull << k) - 1);
    bh__pfn_ref_t e = bh__pfnmap_find(&m->map, base);
    if (!bh__pfn_ok(e) || bh__pfn_order(e) <= order || pfn - base >= (1ull << bh__pfn_order(e)))
      continue;
    unsigned big = bh__pfn_order(e), kind = bh__pfn_kind(e);
    uint64_t val = bh__pfn_val(e);
    uint32_t aux = 0;
    if (kind != BH__PFN_LIVE && big > BH__EM_SPLIT_DEAD_MAX) {
      bh__pfnmap_delete(&m->map, e);
      return (bh__pfn_ref_t){0};
    }
    if (kind == BH__PFN_LIVE) {
      int err = ops->split(ctx, val, big, &aux);
      if (err) {
        if (!m->err)
          m->err = err;
        return (bh__pfn_ref_t){0};
      }
    }
    bh__pfnmap_delete(&m->map, e);
    for (uint64_t i = 0; i < (1ull << big); i++) {
      bh__pfn_ref_t p = bh__pfnmap_insert(&m->map, base + i, kind);
      if (!bh__pfn_ok(p)) {
        if (!m->err)
          m->err = BH_ENOMEM;
        return p;
      }
      bh__pfn_set_val(p, val + i * ops->stride);
      bh__pfn_set_order(p, 0);
      bh__pfn_set_kind(p, kind);
      if (p.e)
        p.e->aux = aux;
    }
    m->s->split_frees++;
    return bh__pfnmap_find(&m->map, pfn);
  }
  return (bh__pfn_ref_t){0};
}

static __attribute__((unused)) int bh__em_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/*
 * The recorded blocks in [next, end) when the range is wider than the map (a free of a huge
 * order, which only a corrupt trace has): taken from the map's slots, in pfn order, each
 * skipping what the one before covers, as the walk over the range would.  Walking pfn by pfn
 * could take 2^63 steps.
 */
BH__EM_COLD void bh__em_free_range_wide(bh__em_t *m, const bh__em_ops_t *ops, void *ctx,
                                        uint64_t next, uint64_t end, int cpu) {
  uint64_t n = 0, *keys = malloc((m->map.used + 1) * sizeof(*keys));
  if (!keys) {
    if (!m->err)
      m->err = BH_ENOMEM;
    return;
  }
  for (uint64_t i = 0, slots = bh__pfnmap_slots(&m->map); i < slots; i++) {
    if (!bh__pfn_ok(bh__pfnmap_slot(&m->map, i)))
      continue;
    uint64_t k = bh__pfnmap_slot_pfn(&m->map, i);
    if (k >= next && k < end)
      keys[n++] = k;
  }
  qsort(keys, n, sizeof(*keys), bh__em_cmp_u64);
  for (uint64_t i = 0; i < n; i++) {
    bh__pfn_ref_t x = keys[i] >= next ? bh__pfnmap_find(&m->map, keys[i]) : (bh__pfn_ref_t){0};
    if (bh__pfn_ok(x)) {
      next = keys[i] + (1ull << bh__pfn_order(x));
      bh__em_free_entry(m, ops, ctx, x, cpu);
    }
  }
  free(keys);
}

/*
 * A free that is not of exactly one recorded block (e: the entry at the pfn, or none): a
 * piece of a larger block, a range of several blocks, or a free of no recorded block.
 */
BH__EM_COLD void bh__em_free_other(bh__em_t *m, const bh__em_ops_t *ops, void *ctx,
                                   const bh_event_t *ev, bh__pfn_ref_t e) {
  bh_replay_summary_t *s = m->s;
  uint64_t pfn = ev->pfn;
  if (!bh__pfn_ok(e) || bh__pfn_order(e) > ev->order)
    e = bh__em_split_containing(m, ops, ctx, pfn, ev->order);
  if (!bh__pfn_ok(e)) {
    switch (ops->untraced ? ops->untraced(ctx, ev) : BH__EM_UNKNOWN) {
    case BH__EM_PRETRACE:
      s->frees++;
      s->pretrace_frees++;
      break;
    case BH__EM_WINDOW:
      s->window_events++;
      break;
    case BH__EM_KERNEL_FREE:
      if (ev->op == BH_EV_FREE_BATCHED)
        s->batched_dups++;
      else
        s->untraced_frees++;
      break;
    case BH__EM_UNTRACED_APPLIED:
      s->frees++;
      s->untraced_frees++;
      s->untraced_frees_applied++;
      break;
    default:
      s->unknown_frees++;
    }
    return;
  }
  s->frees++;
  uint64_t next = pfn + (1ull << bh__pfn_order(e)), end = pfn + (1ull << ev->order);
  bh__em_free_entry(m, ops, ctx, e, ev->cpu);
  /* a free larger than the recorded block: every other recorded block inside the range */
  if (end - next > bh__pfnmap_slots(&m->map)) {
    bh__em_free_range_wide(m, ops, ctx, next, end, ev->cpu);
    return;
  }
  for (uint64_t q = next; q < end;) {
    bh__pfn_ref_t x = bh__pfnmap_find(&m->map, q);
    if (!bh__pfn_ok(x)) {
      q++;
      continue;
    }
    next = q + (1ull << bh__pfn_order(x));
    bh__em_free_entry(m, ops, ctx, x, ev->cpu);
    q = next;
  }
}

/* A free after bh__em_batched_repeat said it is not a repeat. */
BH__EM_INLINE void bh__em_free_block(bh__em_t *m, const bh__em_ops_t *ops, void *ctx,
                                     const bh_event_t *ev) {
  bh__pfn_ref_t e = bh__pfnmap_find(&m->map, ev->pfn);
  if (__builtin_expect(!bh__pfn_ok(e) || bh__pfn_order(e) != ev->order, 0)) {
    bh__em_free_other(m, ops, ctx, ev, e);
  } else {
    m->s->frees++;
    bh__em_free_entry(m, ops, ctx, e, ev->cpu);
  }
}

/* An mm_page_free or mm_page_free_batched event. */
BH__EM_INLINE void bh__em_free(bh__em_t *m, const bh__em_ops_t *ops, void *ctx,
                               const bh_event_t *ev) {
  if (!bh__em_batched_repeat(m, ev))
    bh__em_free_block(m, ops, ctx, ev);
}

/* Any event of the trace: 0, or a negative BH_E* error (the map or the backend). */
BH__EM_INLINE int bh__em_event(bh__em_t *m, const bh__em_ops_t *ops, void *ctx,
                               const bh_event_t *ev) {
  if (ev->op == BH_EV_ALLOC)
    return bh__em_alloc(m, ops, ctx, ev);
  if (ev->op == BH_EV_FREE || ev->op == BH_EV_FREE_BATCHED)
    bh__em_free(m, ops, ctx, ev);
  return m->err;
}

#endif
