/*
 * The replay engine.  A first pass over the trace finds its span, its CPUs and its peak live
 * memory (to size the arena); the second pass plays every event through the arena with the
 * hinting strategy attached, on a virtual clock taken from the trace timestamps.
 *
 * Recorded pfns only name allocations.  A map from recorded block to arena block handles what
 * real traces contain: frees of pages allocated before recording started (unknown frees,
 * counted and skipped), high-order non-compound allocations freed piece by piece as order-0
 * pages (the arena block is split like split_page() and freed piece by piece), a recorded pfn
 * allocated again while still live (its free was lost: the old block is freed first), orders
 * above the arena's maximum and allocations the kernel failed (counted and skipped), and
 * allocations the arena cannot serve (counted; the replay goes on).  That meaning of the
 * events is replay/event_meaning.h, shared with the jemalloc baseline; the arena is its
 * backend here (arena_ops).
 */
#include "buddy/replay_core.h"
#include "hinting/hint.h"
#include "replay/attrib.h"
#include "replay/event_meaning.h"
#include "replay/pfnmap.h"
#include "replay/replay_feed.h"
#include "replay/replay_machine.h"
#include "replay/replay_shared.h"
#include "trace/foreign.h"
#include "trace/records.h"
#include "common/compiler.h"
#include "common/grow.h"
#include "common/zmap.h"
#include "common/json.h"

#include <buddyhint/replay.h>
#include <buddyhint/strategy.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* bh_replay_config_t.keep_max_bytes by default: 128 Ki events of a first pass in memory, the
 * rest in a temporary file */
#define BH__KEEP_DEFAULT_BYTES (4ull << 20)

/* Rare paths kept out of the event loop, so that its hot state stays in registers. */
#define COLD __attribute__((noinline, cold))

/* ---- defaults ---- */

void bh_replay_config_init(bh_replay_config_t *cfg) {
  if (!cfg)
    return;
  memset(cfg, 0, sizeof(*cfg));
  bh_config_init(&cfg->arena);
  bh_hint_config_init(&cfg->hint);
  cfg->idle_ns = 60ull * BH_NS_PER_SEC;
  cfg->touch = BH_TOUCH_PAGE;
  cfg->sample_ns = BH_NS_PER_SEC;
  cfg->arena.nr_cpus = 0; /* from the trace */
  cfg->compaction_proactiveness = 20;
  cfg->keep_max_bytes = BH__KEEP_DEFAULT_BYTES;
  cfg->pcp_high_tuning = -1;
  cfg->pcp_free_high_raised = -1;
}

/* ---- state ---- */

#define PEND_MAX 128 /* frees waiting for their mm_page_free_batched: two CPUs' batches */

#define LIFO_CPUS 64 /* CPUs whose order-0 pcp lists the first pass follows (lifo_alloc) */
#define FREE_RING 32 /* a folio batch's folios (PAGEVEC_SIZE 31) and one more */
/* lifo_where's list of a pending page (lifo_free), and an untraced_take's mark of one */
#define LIFO_PENDING 3
#define TAKE_PENDING 16

/* A CPU's first pcp drain where it directly follows its vmstat worker's run (a pcp decay):
 * that run's time (0: none), the drain's pages, and its lowest and highest pfn. */
struct decay_first {
  uint64_t at, pages, lo, hi;
};

struct replay {
  const bh_replay_config_t *cfg;
  bh_replay_summary_t *s;
  /* the frees an untraced allocation followed (struct scan's untraced), the next of them, and
   * the mm_page_free events played so far; untraced NULL: none */
  const uint64_t *untraced;
  size_t nuntraced, untraced_next;
  uint64_t nfrees;
  /* the frees made while their CPU's pcp lock was held (struct scan's locked), the next of
   * them, and whether the free being played is one; locked NULL: none */
  const uint64_t *locked;
  size_t nlocked, locked_next;
  bool free_locked;
  /* the frees of a batch played at their mm_page_free_batched (struct scan's batched), the
   * next of them, and those waiting for it (pend_n of them in pend[]); batched NULL: none */
  const uint64_t *batched;
  size_t nbatched, batched_next;
  unsigned pend_head, pend_n; /* a ring in the frees' order; pfn UINT64_MAX: played */
  bh_event_t pend[PEND_MAX];
  /* the pcp decay runs at the trace's vmstat worker runs (BH_EV_VMSTAT), not every second;
   * the last page event's timestamp (struct scan's last) */
  bool vmstat_trace;
  uint64_t last_page;
  /* allocator placement: empty pcp lists are refilled at the trace's refill events
   * (bh__pcp_refill_empty), not at the allocations that follow them */
  bool refill_at_event;
  /* allocator placement with a start state's hidden pcp pages and the pcp events: until each
   * CPU's first drain in the trace, or its last drain-free if later (calib_until, UINT64_MAX
   * for a CPU with no drain), its frees stay below the high mark (bh__pcp_calibrating) but
   * those a drain follows, where bh__pcp_deficit is switched on; calib_on: the CPUs
   * calibrating now; calib_live until calib_last, the latest of those times; deficit_on the
   * CPUs switched on for the event being played */
  bool calib_live;
  uint64_t calib_on, calib_last, deficit_on;
  uint64_t calib_until[LIFO_CPUS];
  /* struct scan's drain_frees, the next of them */
  const struct drain_free *drain_frees;
  size_t ndrain_frees, drain_frees_next;
  /* where a CPU's first drain is a decay's (struct scan's decay; at 0 where not calibrating),
   * and its first decay after its last drain-free (struct scan's check) */
  struct decay_first decay[LIFO_CPUS], check[LIFO_CPUS];
  /* allocator placement with the pcp events: the drains compared (bh_replay_drains_t), each
   * CPU's moment, and the arena's drained pages after the last event played */
  bool drains_on;
  struct drain_moment {
    uint64_t time_ns, kernel, replay;
    bool open;
  } moment[LIFO_CPUS];
  uint64_t drained_seen;
  /* the refilled pages an allocation without an event took (struct scan's takes), the next of
   * them, the mm_page_alloc events played so far, and whether one is being played now (not
   * counted as the trace's); takes NULL: none */
  const struct untraced_take *takes;
  size_t ntakes, takes_next;
  uint64_t nallocs;
  bool taking;
  char *err;
  size_t errlen;
  bh_arena_t *arena;
  /* the arena's, read on the event paths: its pages, pcp slots, backing (sim: metadata only),
   * data pages (NULL in sim backing) and where it keeps its discarded-page bitmap */
  uint64_t nr_pages;
  unsigned nr_cpus;
  bool sim;
  uint8_t *base;
  _Atomic uint64_t *const *discarded;
  bh_hint_t *hint;
  bh__em_t em; /* the recorded pfns and what each event means (replay/event_meaning.h) */
  uint64_t t0, vnow, next_sample, next_tick;
  uint64_t next_compact; /* kcompactd's next proactive check (UINT64_MAX: compaction off) */
  /* compaction: arena pfn -> 1 + the map slot of the block there, built when a run first
   * moves a block (rev_valid), since the map does not change while compaction runs */
  uint32_t *rev;
  bool rev_valid;
  /* the earlier of next_tick and next_sample (when sampling); 0 against the wall clock, where
   * every event waits for its time */
  uint64_t clock_due;
  uint64_t events, next_poll; /* events played; at next_poll, poll() is due */
  uint64_t total_events;      /* in the trace, for the progress line (0: one pass) */
  bool progress;              /* show the progress line */
  /* sim backing: pages ever written, for the resident model (the arena's core reads it too,
   * bh__discard_set_touched, on the hinting worker's thread when pacing), and how many */
  _Atomic uint64_t *touched;
  uint64_t touched_pages;
  bool touch_sim; /* sim backing and a --touch other than none: allocations set touched */
  /* BH_REPLAY_CHECK_RESIDENT set: every resident count is checked against a full recount;
   * the first difference is kept in drift and fails the run */
  bool check_resident;
  char drift[160];
  unsigned max_order; /* the arena's, read for every allocation */
  struct timespec wall0;
  struct rusage ru0;
  unsigned max_cpu;
  /* in a recorded machine's shape (replay_machine.c): its description and start state */
  bh__rmachine_t rm;
  bool shape;       /* the arena's pfns are the trace's: the paths of shaped_alloc and the rest */
  bool place_trace; /* --placement trace */
  /* the trace's pcp events move the pcp lists (--placement trace with a trace that has them):
   * frees onto a pcp list then make no drain decision of their own */
  bool pcp_trace;
  /* with the pcp events: a bit per pfn for the blocks the start state put on a pcp list, until
   * a traced event puts a block there itself (NULL: none), to tell the start state's misses */
  uint64_t *start_pcp;
  /* per pfn, 1 + the place of the block's first take in the trace among the start's free
   * blocks, 0 once an event touched it (bh__take_rank_set), or NULL */
  uint32_t *take_rank;
  uint64_t take_rank_n;
  bool agree;           /* counting placement agreement */
  uint64_t *first_miss; /* placement agreement: lists that have had a miss (miss_where) */
  /* events up to this trace time happened while the start snapshot was read (0: none) */
  uint64_t window_end;
  /* compaction moved memory allocated before the trace: map entries made after the run */
  struct pretrace_move {
    uint64_t from, to;
    unsigned order;
  } * moves;
  size_t nmoves, moves_cap;
  /* --by: event origins (one table for both passes) and the attribution; NULL without */
  bh__origins_t *origins;
  bh__attrib_t *attrib;
  bool read_once; /* the trace has been opened (cfg->trace_bytes then sees no more) */
};

static void set_err(struct replay *r, const char *fmt, ...) {
  if (!r->err || !r->errlen)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err, r->errlen, fmt, ap);
  va_end(ap);
}

static double secs_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- first pass: span, CPUs, peak live memory ---- */

/* A page on a pcp list as the first pass follows it: its stamp (the lists are last in, first
 * out for frees), pfn, whether a refill put it there (else a free), and whether its list is
 * not known yet (pending: on each of its CPU's lists, lifo_free). */
struct lifo_entry {
  uint64_t stamp, pfn;
  bool refill, pending;
};

/* An allocation without an event that the order of a pcp list shows (lifo_alloc): page pfn,
 * which a refill put on the list (cpu, mt), was taken before the trace's allocation number
 * `before` (of all its mm_page_alloc events). */
struct untraced_take {
  uint64_t before, pfn;
  int32_t cpu;
  int32_t mt;
  uint64_t free_ord; /* the ordinal of the free that put a freed page there; UINT64_MAX else */
};

struct scan {
  uint64_t first, last, peak, events;
  uint64_t map_cap;        /* the most blocks the first pass saw live at once, for the second's map
                            * (0: one pass) */
  uint64_t pfn_lo, pfn_hi; /* the recorded blocks' pages lie in [pfn_lo, pfn_hi) */
  uint64_t groups;         /* the BH__PFN_GROUP-pfn groups (aligned) where blocks started, or 0 */
  unsigned max_cpu;
  uint64_t pcp_events;    /* mm_page_pcpu_drain and mm_page_alloc_zone_locked events */
  uint64_t vmstat_events; /* the vmstat worker's runs (BH_EV_VMSTAT) */
  /* their times, the first VMSTAT_TIMES of them (pass_timer), NULL if none */
  uint64_t *vmstat_times;
  size_t nvmstat_times, vmstat_times_cap;
  /* a text trace's events as the first pass read them, for the second to play without
   * parsing the text again (NULL: read the trace again), and what the reader counted: the
   * first `spilled` of them in the temporary file spill_fd (unlinked; valid when spilled > 0),
   * the rest in kept */
  struct kept_event *kept;
  uint64_t spilled;
  int spill_fd;
  bh_trace_counts_t counts;
  char format[32];
  bool once; /* the trace cannot be read twice (a FIFO, standard input): keep every event */
  /* in a machine's shape, the ordinals (among the trace's mm_page_free events) of the frees
   * that an allocation without an event followed: the block is freed again later with no
   * allocation between (untraced_find); sorted, NULL if none */
  uint64_t *untraced;
  size_t nuntraced;
  /* in a machine's shape, the ordinals (among the mm_page_free events) of the frees made while
   * their CPU's pcp lock was held (lock_watch_free) or that the buddy lists took in (a take
   * from them followed, direct_free: direct_frees of them); sorted, NULL if none */
  uint64_t *locked;
  size_t nlocked, direct_frees;
  /* in a machine's shape, the ordinals (among the mm_page_free events) of the frees of a batch
   * whose mm_page_free_batched followed on their CPU (batched_free); sorted, NULL if none */
  uint64_t *batched;
  size_t nbatched;
  /* the pages a refill put on a pcp list that an allocation without an event took
   * (lifo_alloc), in the order of the allocations they came before; NULL if none */
  struct untraced_take *takes;
  size_t ntakes;
  /* in a machine's shape, per CPU (below LIFO_CPUS): the time until which its pcp count
   * stayed below the high mark at every free: its first pcp drain's, or that of the free the
   * drain directly follows on its CPU (the free that reached the mark,
   * free_unref_page_commit); UINT64_MAX (set by first_pass) where the trace shows none */
  uint64_t calib_until[LIFO_CPUS];
  struct decay_first decay[LIFO_CPUS];
  /* per CPU, its first decay drain (a vmstat run and the drain right after it) after its
   * last drain-free (bh__pcp_decay_check); at 0: none */
  struct decay_first check[LIFO_CPUS];
  /* the frees a drain directly follows on their CPU up to its first drain after an order-0
   * free, in the trace's order; NULL if none.  A drain after a high-order free says only that
   * the count reached the mark somewhere within that block's pages; after an order-0 free,
   * that it reached it at that page: that is the CPU's last. */
  struct drain_free *drain_frees;
  size_t ndrain_frees;
};

/* A free on cpu at time that a pcp drain of that CPU directly follows (struct scan). */
struct drain_free {
  uint64_t time;
  unsigned cpu;
};

/* What the replay uses of an event, in 32 bytes (a bh_event_t takes 48). */
struct kept_event {
  uint64_t time_ns, pfn;
  uint32_t gfp;
  int32_t cpu;
  uint8_t op, order, failed;
  uint8_t pad;     /* 0: no byte of a kept event is undefined (they go to a file) */
  uint32_t origin; /* bh_event_t.origin (0 without --by) */
};
_Static_assert(sizeof(struct kept_event) == 32, "kept events stay 32 bytes");

/* An event as kept.  A pcp event has no gfp and no failed flag: its migratetype (+ 1) and
 * percpu_refill take their places; a fallback's gfp also holds its fallback migratetype (+ 1),
 * fallback_order and change_ownership, in its bytes 1, 2 and 3. */
static inline __attribute__((always_inline)) void kept_pack(struct kept_event *k,
                                                            const bh_event_t *ev) {
  *k = (struct kept_event){ev->time_ns, ev->pfn,    ev->gfp, ev->cpu,   ev->op,
                           ev->order,   ev->failed, 0,       ev->origin};
  if (bh__unlikely(ev->op >= BH_EV_PCPU_DRAIN)) {
    k->gfp = (uint32_t)(uint8_t)(ev->migratetype + 1);
    k->failed = ev->percpu_refill;
    if (ev->op == BH_EV_EXTFRAG)
      k->gfp |= (uint32_t)(uint8_t)(ev->fallback_migratetype + 1) << 8 |
                (uint32_t)ev->fallback_order << 16 | (uint32_t)ev->change_ownership << 24;
  }
}

/* The event kept_pack kept (what the replay reads of it), into ev. */
static inline __attribute__((always_inline)) void kept_unpack(bh_event_t *ev,
                                                              const struct kept_event *k) {
  *ev = (bh_event_t){.time_ns = k->time_ns,
                     .pfn = k->pfn,
                     .gfp = k->gfp,
                     .cpu = k->cpu,
                     .op = k->op,
                     .order = k->order,
                     .failed = k->failed,
                     .origin = k->origin};
  if (bh__unlikely(k->op >= BH_EV_PCPU_DRAIN)) {
    ev->migratetype = (int8_t)((int)(k->gfp & 0xff) - 1);
    ev->percpu_refill = k->failed;
    if (k->op == BH_EV_EXTFRAG) {
      ev->fallback_migratetype = (int8_t)((int)((k->gfp >> 8) & 0xff) - 1);
      ev->fallback_order = (uint8_t)(k->gfp >> 16);
      ev->change_ownership = (uint8_t)(k->gfp >> 24);
    }
    ev->gfp = 0;
    ev->failed = 0;
  }
}

/* r->start_pcp: the heads of the blocks the start state put on pcp lists.  0 or BH_ENOMEM. */
static int mark_start_pcp(struct replay *r) {
  r->start_pcp = calloc((r->nr_pages + 63) / 64, sizeof(uint64_t));
  if (!r->start_pcp)
    return BH_ENOMEM;
  bh__pcp_heads(r->arena, r->start_pcp);
  return 0;
}

/* Whether the block at pfn is on a pcp list where the start state put it (and clears that). */
static bool take_start_pcp(struct replay *r, uint64_t pfn) {
  if (!r->start_pcp || pfn >= r->nr_pages)
    return false;
  uint64_t bit = 1ull << (pfn & 63), *w = &r->start_pcp[pfn >> 6];
  bool was = *w & bit;
  *w &= ~bit;
  return was;
}

/* Does the start state read the pcp drains (bh__first_drain)?  Not with --start-order pfn
 * (no inference). */
static bool drain_evidence(const struct replay *r) {
  return r->rm.fe.fe && !r->cfg->start_order_pfn;
}

/* Allocator placement in the recorded machine's layout with --pcp-refill event: the trace's
 * refill events are played, as the moments its CPUs' lists were empty (pcp_event). */
static bool refills_followed(const struct replay *r) {
  return r->shape && r->cfg->placement != BH_PLACEMENT_TRACE && !r->cfg->pcp_refill_alloc;
}

/* The pcp events are of use where the arena's pfns are the kernel's, to the start state (its
 * first pass reads them under allocator placement too), and for the moments of the refills
 * (refills_followed; else allocator placement plays none of them). */
static int open_trace(struct replay *r, bh_trace_t **t) {
  bh_trace_opts_t o = {.lenient = r->cfg->lenient,
                       .origins = r->origins != NULL,
                       .pcp_events = r->cfg->placement == BH_PLACEMENT_TRACE ||
                                     (!r->read_once && drain_evidence(r)) || refills_followed(r),
                       .vmstat_events = true}; /* counted even when not followed */
  if (!r->read_once) {                         /* cfg->trace_bytes sees the first reading only */
    o.raw_bytes = r->cfg->trace_bytes;
    o.raw_ctx = r->cfg->trace_bytes_ctx;
    r->read_once = true;
  }
  int err = bh_trace_open(r->cfg->trace, &o, t);
  if (err)
    set_err(r, "%s", bh_trace_error(NULL));
  else if (r->origins)
    bh__trace_use_origins(*t, r->origins);
  if (!err && bh_trace_command(*t))
    snprintf(r->s->trace_command, sizeof(r->s->trace_command), "%s", bh_trace_command(*t));
  return err;
}

/*
 * fn (inlined) for each of the next events of t: native binary records where they lie in the
 * reader's buffer, checked and decoded one at a time, which saves a copy of every event;
 * anything else (text, a record that needs a refill or is bad, which the reader reports or
 * skips) through bh_trace_next_batch into evs.  Returns how many events, 0 at the end, or a
 * negative BH_E* code of the reader or of fn.
 */
static inline __attribute__((always_inline)) int each_event(bh_trace_t *t, bh_event_t *evs, int max,
                                                            int (*fn)(void *, const bh_event_t *),
                                                            void *ctx) {
  const unsigned char *rec;
  int n = bh__trace_peek_records(t, &rec, max), k, err = 0;
  for (k = 0; k < n; k++, rec += BH__TRACE_BIN_RECORD) {
    if (bh__unlikely(!bh__trace_record_ok(rec)))
      break;
    bh_event_t ev;
    bh__trace_decode_record(rec, &ev);
    ev.origin = 0; /* records have none: --by reads through bh_trace_next_batch */
    if (bh__unlikely(err = fn(ctx, &ev))) {
      k++;
      break;
    }
  }
  if (n > 0)
    bh__trace_take_records(t, k);
  if (err || k > 0)
    return err ? err : k;
  /* one event at a time for binary, so that the records after it are read in place again */
  n = bh_trace_next_batch(t, evs, bh_trace_format(t) == BH_TRACE_NATIVE_BINARY ? 1 : max);
  for (k = 0; k < n; k++)
    if (bh__unlikely(err = fn(ctx, &evs[k])))
      return err;
  return n;
}

/*
 * The first pass's blocks allocated and not freed, by recorded pfn: a byte per pfn below
 * 2^32, the order of the block that starts there plus 1 (0: none) in its low bits and
 * LIVE_EVER once a block has started there (live_groups counts them), in chunks of 2^16 pfns
 * mapped when first written (and unmapped at the end of the pass, so that the replay after it
 * does not find them in its resident memory); the pfns above in a hash map.  A byte per page of the
 * trace's range where the hash map took 48 to 96 bytes per block.
 */
#define LIVE_CHUNK_SHIFT 16
#define LIVE_DIRECT_LIMIT (1ull << 32)
#define LIVE_EVER 0x80u
#define LIVE_ORDER 0x7fu
struct live_blocks {
  uint8_t **chunk;   /* by pfn >> LIVE_CHUNK_SHIFT; NULL: no block there yet */
  size_t nchunks;    /* room in chunk */
  uint64_t n, max_n; /* blocks now, and at most */
  bh__pfnmap_t far;  /* pfns from LIVE_DIRECT_LIMIT */
};

/* The byte of pfn (< LIVE_DIRECT_LIMIT), its chunk made if `make`; NULL if there is none (or
 * no memory for it). */
COLD static uint8_t *live_chunk_make(struct live_blocks *l, uint64_t pfn) {
  size_t c = (size_t)(pfn >> LIVE_CHUNK_SHIFT);
  if (c >= l->nchunks) {
    size_t n = l->nchunks ? l->nchunks : 16;
    while (n <= c)
      n *= 2;
    uint8_t **p = realloc(l->chunk, n * sizeof(*p));
    if (!p)
      return NULL;
    memset(p + l->nchunks, 0, (n - l->nchunks) * sizeof(*p));
    l->chunk = p;
    l->nchunks = n;
  }
  if (!l->chunk[c]) {
    void *p = mmap(NULL, 1u << LIVE_CHUNK_SHIFT, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return NULL;
    l->chunk[c] = p;
  }
  return &l->chunk[c][pfn & ((1u << LIVE_CHUNK_SHIFT) - 1)];
}

static inline uint8_t *live_byte(const struct live_blocks *l, uint64_t pfn) {
  size_t c = (size_t)(pfn >> LIVE_CHUNK_SHIFT);
  if (bh__unlikely(c >= l->nchunks) || bh__unlikely(!l->chunk[c]))
    return NULL;
  return &l->chunk[c][pfn & ((1u << LIVE_CHUNK_SHIFT) - 1)];
}

/* The groups of BH__PFN_GROUP pfns (aligned) in which a block has started below
 * LIVE_DIRECT_LIMIT; 0 if a block started above it, where nothing was counted. */
static uint64_t live_groups(const struct live_blocks *l) {
  if (l->far.used)
    return 0;
  uint64_t n = 0;
  for (size_t c = 0; c < l->nchunks; c++) {
    const uint64_t *w = (const uint64_t *)(const void *)l->chunk[c];
    for (size_t i = 0; w && i < (1u << LIVE_CHUNK_SHIFT) / 8; i += BH__PFN_GROUP / 8) {
      uint64_t any = 0;
      for (size_t j = 0; j < BH__PFN_GROUP / 8; j++)
        any |= w[i + j];
      n += (any & 0x8080808080808080ull) != 0;
    }
  }
  return n;
}

static void live_destroy(struct live_blocks *l) {
  for (size_t c = 0; c < l->nchunks; c++)
    if (l->chunk[c])
      munmap(l->chunk[c], 1u << LIVE_CHUNK_SHIFT);
  free(l->chunk);
  l->chunk = NULL;
  l->nchunks = 0;
  bh__pfnmap_destroy(&l->far);
}

/* live_insert for a pfn from LIVE_DIRECT_LIMIT, in the far map.  Out of line: such pfns are
 * rare, and inlined into every event of the first pass the hash code would crowd it. */
COLD static int live_insert_far(struct live_blocks *l, uint64_t pfn, unsigned order) {
  bh__pfn_entry_t *e = bh__pfnmap_hinsert(&l->far, pfn);
  if (!e)
    return -1;
  int was = e->kind == BH__PFN_LIVE ? e->order + 1 : 0;
  e->kind = BH__PFN_LIVE;
  e->order = (uint8_t)order;
  return was;
}

/* A block of `order` allocated at pfn: returns the order + 1 of the block that was live there
 * (0: none), or -1 without memory. */
static inline __attribute__((always_inline)) int live_insert(struct live_blocks *l, uint64_t pfn,
                                                             unsigned order) {
  int was;
  if (bh__likely(pfn < LIVE_DIRECT_LIMIT)) {
    uint8_t *b = live_byte(l, pfn);
    if (bh__unlikely(!b) && !(b = live_chunk_make(l, pfn)))
      return -1;
    was = *b & LIVE_ORDER;
    *b = (uint8_t)(LIVE_EVER | (order + 1));
  } else if ((was = live_insert_far(l, pfn, order)) < 0) {
    return -1;
  }
  if (!was && ++l->n > l->max_n)
    l->max_n = l->n;
  return was;
}

/* live_update's part for a pfn from LIVE_DIRECT_LIMIT, in the far map (out of line, as
 * live_insert_far). */
COLD static int live_update_far(struct live_blocks *l, uint64_t pfn, int order, bool set) {
  bh__pfn_entry_t *e = bh__pfnmap_hfind(&l->far, pfn);
  if (!e)
    return 0;
  int was = e->order + 1;
  if (set && order < 0)
    bh__pfnmap_hdelete(&l->far, e);
  else if (set)
    e->order = (uint8_t)order;
  return was;
}

/* The order + 1 of the block live at pfn (0: none); with `order` >= 0 it becomes that block's
 * new order, with -1 the block is removed. */
static inline __attribute__((always_inline)) int live_update(struct live_blocks *l, uint64_t pfn,
                                                             int order, bool set) {
  int was;
  if (bh__likely(pfn < LIVE_DIRECT_LIMIT)) {
    uint8_t *b = live_byte(l, pfn);
    if (!b || !(*b & LIVE_ORDER))
      return 0;
    was = *b & LIVE_ORDER;
    if (set)
      *b = (uint8_t)(LIVE_EVER | (order + 1));
  } else if (!(was = live_update_far(l, pfn, order, set))) {
    return 0;
  }
  if (set && order < 0)
    l->n--;
  return was;
}

struct scan_state {
  struct scan *sc;
  struct live_blocks live; /* the blocks allocated and not freed */
  uint64_t cur;            /* their pages */
  bool keep;               /* keeping the events (a text trace, below keep_max so far) */
  size_t kept_cap;         /* room in sc->kept, in events */
  /* where the next kept event goes, and the end of sc->kept's room (once keeping is given
   * up, scratch: the rest of the batch is written there) */
  struct kept_event *kept_next, *kept_end, scratch;
  uint64_t keep_max;      /* bh_replay_config_t.keep_max_bytes */
  bh__first_events_t *fe; /* each page's first event, for a start state (or NULL) */
  bool drains;            /* with fe: the pcp drains are evidence of it (bh__first_drain) */
  bool pcp_unplayed;      /* the pcp events are read for the start state only */
  /* with fe: the pfns whose last event was a free of order <= 3, that free's ordinal in val
   * and its order (the hash part of a pfn map; an allocation deletes its pages' entries) */
  bh__pfnmap_t last_free;
  size_t untraced_cap;
  uint64_t nfrees; /* mm_page_free events so far */
  /* with fe, the order-0 pcp lists as the trace shows them, for when an allocation without an
   * event took a page (lifo_alloc): each free pushed onto its CPU's list of its last
   * allocation's type with a stamp.  Per page of fe: last_mt, that type + 1 (0 unknown);
   * lifo_stamp, its stamp (low 32 bits) while on such a list (0: not), and lifo_where, that
   * list's CPU << 2 | type.  NULL: not followed.  pairs_all: every pair, --untraced-allocs
   * infer */
  uint8_t *last_mt, *lifo_where;
  uint32_t *lifo_stamp;
  struct lifo_entry *lifo[LIFO_CPUS][BH_MT_PCPTYPES];
  size_t lifo_n[LIFO_CPUS][BH_MT_PCPTYPES], lifo_cap[LIFO_CPUS][BH_MT_PCPTYPES];
  uint64_t stamp;
  bool pairs_all;
  /* with follow_refills, the refill under way on (cpu, mt): its blocks so far, 0 once a traced
   * allocation or free touches the list (a refill is a run of refill events, each block added
   * at the list's tail; a lone one may be a direct take, rmqueue_buddy), and its first block's
   * stamp */
  uint32_t batch_len[LIFO_CPUS][BH_MT_PCPTYPES];
  uint64_t batch_stamp[LIFO_CPUS][BH_MT_PCPTYPES];
  uint64_t nallocs; /* mm_page_alloc events so far */
  size_t takes_cap;
  bool oom;            /* out of memory following the lists (first_pass_pcp) */
  bool follow_refills; /* the refilled pages too (untraced_lists) */
  /* with fe, each CPU's batched free as the frees show it (lock_watch_*), NULL until the first
   * free; and sc->locked's room */
  struct lock_watch *lw;
  size_t locked_cap, batched_cap;
  /* with fe, per CPU: the time and kind (bh_event_t.op) of its last event; a bit per CPU
   * whose first drain has been seen (sc->calib_until), and one per CPU whose first drain, a
   * decay's, is being counted (sc->decay) */
  uint64_t last_t[LIFO_CPUS];
  uint8_t last_op[LIFO_CPUS];
  uint64_t drain_seen, decay_counting;
  /* with fe, per CPU: the pfn of its last event, its last frees' pfns and orders (a batched
   * free's mm_page_free_batched has no order: free_unref_folios traces its folios'
   * mm_page_free first, FREE_RING at most), and a bit per CPU whose drain after an order-0
   * free is found (its last sc->drain_frees) */
  uint64_t last_pfn[LIFO_CPUS];
  struct {
    uint64_t pfn;
    uint8_t order;
  } free_ring[LIFO_CPUS][FREE_RING];
  uint64_t free_ring_next[LIFO_CPUS]; /* the CPU's frees so far */
  uint64_t deficit_seen;
  size_t drain_frees_cap;
  /* a bit per CPU whose check's vmstat run was its last event, one whose check drain is
   * being counted, one whose check is done */
  uint64_t check_run, check_counting, check_done;
};

/* ---- allocations without an event ----
 * alloc_pages_bulk (vmalloc, kernel stacks, some drivers) takes pages off a pcp list's head
 * without mm_page_alloc, so a block the trace frees can leave the kernel's pcp list at once,
 * unseen, and the trace's next event of it is another free.  The first pass finds such frees
 * (the same pfn and order freed twice, nothing allocated over it between); the replay then
 * leaves the block allocated at the first free, as if the untraced allocation took it right
 * away (before it, another allocation from that list would take the block the kernel's did
 * not have): every such pair with --untraced-allocs infer, by default (late) those where the
 * trace shows the page gone from its list before its second free (lifo_alloc); the others
 * are taken at their second free (arena_untraced).  Kept for frees up to order 3 (the pcp
 * orders but THP's). */

#define LF_MAX_ORDER 3
#define LF_MAX_ENTRIES (4u << 20) /* 192 MiB of table at most; then no more are found */

/* A free of the trace (mm_page_free): if its block was freed last, with nothing allocated over
 * it since, that earlier free goes on sc->untraced.  0 or BH_ENOMEM. */
COLD static int untraced_free(struct scan_state *st, const bh_event_t *ev) {
  uint64_t ordinal = st->nfrees++;
  bh__pfnmap_t *m = &st->last_free;
  if (ev->order > LF_MAX_ORDER)
    return 0;
  if (!m->slots && bh__pfnmap_init(m, 1 << 12))
    return BH_ENOMEM;
  bh__pfn_entry_t *e = bh__pfnmap_hfind(m, ev->pfn);
  if (!e && m->used >= LF_MAX_ENTRIES)
    return 0;
  if (e && e->order == ev->order && (st->pairs_all || (e->aux & 1))) {
    struct scan *sc = st->sc;
    if (bh__grow(&sc->untraced, &st->untraced_cap, sc->nuntraced, sizeof(*sc->untraced)))
      return BH_ENOMEM;
    sc->untraced[sc->nuntraced++] = e->val;
  }
  if (!e && !(e = bh__pfnmap_hinsert(m, ev->pfn)))
    return BH_ENOMEM;
  e->val = ordinal;
  e->order = ev->order;
  e->aux = 0;
  return 0;
}

/* ---- frees under a held pcp lock ----
 * free_unref_folios frees a batch in two loops: free_pages_prepare for every folio first
 * (mm_page_free), then each onto its CPU's pcp list with the pcp lock held from the first to
 * the last (mm_page_free_batched; Linux 6.12 mm/page_alloc.c:2774-2866, the lock at :2840, the
 * event at :2857).  An interrupt that frees a page on that CPU meanwhile finds the lock taken:
 * free_unref_page's trylock fails and the page goes straight to the buddy lists (:2761-2766),
 * with no high mark, no drain, no pcp list.  The trace shows it as an mm_page_free between two
 * mm_page_free_batched events of one batch: the first pass keeps the frees that follow a CPU's
 * mm_page_free_batched, and the CPU's next mm_page_free_batched decides: of a page freed
 * before the first of them, the batch was still going on and those of a pcp order were made
 * under the lock; of one of them or later, a new batch began (its first loop may free folios
 * of any order, so every free since counts). */

#define LW_RING 64 /* a CPU's last frees: a batch holds 31 folios (PAGEVEC_SIZE) */
#define LW_CANDS 16

struct lock_watch {
  uint64_t pfn[LW_RING]; /* the CPU's last frees, the n-th at pfn[n % LW_RING] */
  uint64_t ord[LW_RING]; /* their ordinals among the trace's frees + 1; 0: batched already */
  uint32_t n, bnext;     /* the free the next mm_page_free_batched likely repeats */
  bool after_batched;    /* an mm_page_free_batched seen on the CPU */
  uint32_t nsince;       /* frees since its last one, the first of them the CPU's first-th */
  uint32_t first;
  uint8_t ncand;           /* those of a pcp order, the first LW_CANDS */
  uint64_t cand[LW_CANDS]; /* their ordinals among the trace's frees */
};

COLD static int lock_watch_alloc(struct scan_state *st) {
  return (st->lw = calloc(LIFO_CPUS, sizeof(*st->lw))) ? 0 : BH_ENOMEM;
}

/* An mm_page_free of the first pass, the ordinal-th: one for every free, so inline. */
static inline __attribute__((always_inline)) int
lock_watch_free(struct scan_state *st, const bh_event_t *ev, uint64_t ordinal) {
  if ((unsigned)ev->cpu >= LIFO_CPUS)
    return 0;
  if (bh__unlikely(!st->lw) && lock_watch_alloc(st))
    return BH_ENOMEM;
  struct lock_watch *w = &st->lw[ev->cpu];
  uint32_t n = w->n++;
  w->pfn[n % LW_RING] = ev->pfn;
  w->ord[n % LW_RING] = ordinal + 1;
  if (!w->after_batched)
    return 0;
  if (!w->nsince++)
    w->first = n;
  if (ev->order <= LF_MAX_ORDER && w->ncand < LW_CANDS)
    w->cand[w->ncand++] = ordinal;
  return 0;
}

/* The candidates of w, decided by an mm_page_free_batched of pfn: made under the lock if pfn
 * was freed before the first of them.  0 or BH_ENOMEM. */
COLD static int lock_watch_decide(struct scan_state *st, struct lock_watch *w, uint64_t pfn) {
  unsigned nc = w->ncand;
  uint32_t since = w->nsince;
  w->ncand = 0;
  w->nsince = 0;
  if (since > LW_CANDS)
    return 0; /* too many frees since to be an interrupt's */
  /* the CPU's last free of pfn still in the ring */
  uint32_t oldest = w->n > LW_RING ? w->n - LW_RING : 0;
  for (uint32_t k = w->n; k-- > oldest;) {
    if (w->pfn[k % LW_RING] != pfn)
      continue;
    if (k >= w->first)
      return 0; /* one of them or later: a new batch, or a batch after frees of its own */
    struct scan *sc = st->sc;
    for (unsigned c = 0; c < nc; c++) {
      if (bh__grow(&sc->locked, &st->locked_cap, sc->nlocked, sizeof(*sc->locked)))
        return BH_ENOMEM;
      sc->locked[sc->nlocked++] = w->cand[c];
    }
    return 0;
  }
  return 0;
}

/*
 * free_unref_folios puts a batch's folios on the pcp list in its second loop, each right
 * after its mm_page_free_batched (Linux 6.12 mm/page_alloc.c:2857-2859); between its
 * mm_page_free (free_pages_prepare in the first loop, :2787 and :1097) and then the page is
 * on no list, and another CPU's refill or drain meanwhile sees the lists without it.  The
 * first pass lists the frees (their ordinals) that the CPU's mm_page_free_batched of the same
 * pfn follows (sc->batched); the replay frees those at that event.  0 or BH_ENOMEM.
 */
static int batched_free(struct scan_state *st, struct lock_watch *w, uint64_t pfn) {
  uint32_t oldest = w->n > LW_RING ? w->n - LW_RING : 0, k = w->bnext;
  /* the second loop goes through the batch in the first loop's order: the free after the
   * last one repeated, most of the time */
  if (k < oldest || k >= w->n || w->pfn[k % LW_RING] != pfn)
    for (k = w->n; k-- > oldest && w->pfn[k % LW_RING] != pfn;)
      ;
  uint64_t o = k < oldest || k >= w->n ? 0 : w->ord[k % LW_RING];
  if (!o)
    return 0; /* not a free of this CPU's since, or repeated already */
  w->ord[k % LW_RING] = 0;
  w->bnext = k + 1;
  struct scan *sc = st->sc;
  if (bh__grow(&sc->batched, &st->batched_cap, sc->nbatched, sizeof(*sc->batched)))
    return BH_ENOMEM;
  sc->batched[sc->nbatched++] = o - 1;
  return 0;
}

/* An mm_page_free_batched of the first pass.  0 or BH_ENOMEM. */
static inline __attribute__((always_inline)) int lock_watch_batched(struct scan_state *st,
                                                                    const bh_event_t *ev) {
  if ((unsigned)ev->cpu >= LIFO_CPUS || !st->lw)
    return 0;
  struct lock_watch *w = &st->lw[ev->cpu];
  w->after_batched = true;
  int rc = 0;
  if (bh__unlikely(w->ncand))
    rc = lock_watch_decide(st, w, ev->pfn);
  else
    w->nsince = 0;
  return rc ? rc : batched_free(st, w, ev->pfn);
}

/* Page pfn left its pcp list with no event (lifo_alloc): its last free is one an allocation
 * without an event followed, before the event that shows it. */
static void lifo_gone(struct scan_state *st, uint64_t pfn) {
  bh__pfn_entry_t *e = st->last_free.used ? bh__pfnmap_hfind(&st->last_free, pfn) : NULL;
  if (e)
    e->aux |= 1;
}

/* The list of (cpu, mt), or NULL if not followed. */
static size_t *lifo_list(struct scan_state *st, int cpu, int mt, struct lifo_entry ***v,
                         size_t **cap) {
  if (cpu < 0 || cpu >= LIFO_CPUS || mt < 0 || mt >= BH_MT_PCPTYPES)
    return NULL;
  *v = &st->lifo[cpu][mt];
  *cap = &st->lifo_cap[cpu][mt];
  return &st->lifo_n[cpu][mt];
}

/* The pcp list type of a page freed before the trace allocated it: its pageblock's type as
 * the trace has shown it so far (bh__first_events_t.pb_type, firm evidence: a block freed and
 * allocated again from that type's list), or -1.  Not the start map's types, which the free
 * map infers and can get wrong where a pageblock has no free page (free_unref_page puts the
 * page on its pageblock's type's list, mm/page_alloc.c:2750-2756 in 6.12). */
static inline __attribute__((always_inline)) int evidence_list(const struct scan_state *st,
                                                               uint64_t pfn) {
  uint64_t b = pfn >> st->fe->pb_order;
  uint8_t e = st->fe->pb_type && b < st->fe->nr_pageblocks ? bh__pb_firm(st->fe, b) : 0;
  return e && e != BH__PB_CLAIMED ? e - 1 : -1;
}

/* x on top of the list (cpu, mt), if that list is followed.  0 or BH_ENOMEM. */
static inline __attribute__((always_inline)) int lifo_push(struct scan_state *st, int cpu, int mt,
                                                           struct lifo_entry x) {
  struct lifo_entry **v;
  size_t *cap, *n = lifo_list(st, cpu, mt, &v, &cap);
  if (!n)
    return 0;
  if (*n == *cap && *cap >= 1u << 16) { /* drop the entries of pages gone since (drained) */
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
      if (st->lifo_stamp[(*v)[i].pfn] == (uint32_t)(*v)[i].stamp)
        (*v)[k++] = (*v)[i];
    *n = k;
  }
  if (bh__grow(v, cap, *n, sizeof(**v)))
    return BH_ENOMEM;
  (*v)[(*n)++] = x;
  st->batch_len[cpu][mt] = 0;
  return 0;
}

/* lifo_free's page whose list is not known yet: on each of its CPU's lists, pending. */
COLD static int lifo_free_pending(struct scan_state *st, const bh_event_t *ev) {
  struct lifo_entry x = {++st->stamp, ev->pfn, false, true};
  int rc = 0;
  for (int t = 0; !rc && t < BH_MT_PCPTYPES; t++)
    rc = lifo_push(st, ev->cpu, t, x);
  st->lifo_stamp[ev->pfn] = (uint32_t)st->stamp;
  st->lifo_where[ev->pfn] = (uint8_t)(ev->cpu << 2 | LIFO_PENDING);
  return rc;
}

/*
 * An order-0 page freed onto a pcp list: on top of its CPU's list of the type of its last
 * traced allocation (a free puts it on its pageblock's type's list, free_unref_page_commit,
 * mm/page_alloc.c:2689 in 6.12; which the allocation's type is, as a rule), or for a page
 * allocated before the trace, of the type the trace has shown its pageblock to have.  Where
 * it has not shown it yet (untraced_lists), on each of the CPU's lists, pending: a take from
 * one of them counts if the trace shows the pageblock of that type by its end (takes_settle).
 * 0 or BH_ENOMEM.
 */
COLD static int lifo_free(struct scan_state *st, const bh_event_t *ev) {
  if (ev->order || !st->last_mt || ev->pfn >= st->fe->nr_pages || ev->cpu < 0 ||
      ev->cpu >= LIFO_CPUS) /* (lists followed for these CPUs only, lifo_list) */
    return 0;
  int mt = st->last_mt[ev->pfn] ? st->last_mt[ev->pfn] - 1 : evidence_list(st, ev->pfn);
  if (mt >= BH_MT_PCPTYPES)
    return 0;
  if (mt < 0)
    return st->follow_refills ? lifo_free_pending(st, ev) : 0;
  int rc = lifo_push(st, ev->cpu, mt, (struct lifo_entry){++st->stamp, ev->pfn, false, false});
  st->lifo_stamp[ev->pfn] = (uint32_t)st->stamp;
  st->lifo_where[ev->pfn] = (uint8_t)(ev->cpu << 2 | mt);
  return rc;
}

/* Page pfn, refilled onto the list (cpu, mt) or, with untraced_lists, freed there (refill
 * false: by its last free, whose ordinal the take keeps), was taken from it by an allocation
 * without an event, before the trace's next allocation.  0 or BH_ENOMEM. */
COLD static int lifo_take(struct scan_state *st, uint64_t pfn, int cpu, int mt, bool refill) {
  struct scan *sc = st->sc;
  if (bh__grow(&sc->takes, &st->takes_cap, sc->ntakes, sizeof(*sc->takes)))
    return BH_ENOMEM;
  bh__pfn_entry_t *e = !refill && st->last_free.used ? bh__pfnmap_hfind(&st->last_free, pfn) : NULL;
  sc->takes[sc->ntakes++] =
      (struct untraced_take){st->nallocs, pfn, cpu, mt, e ? e->val : UINT64_MAX};
  return 0;
}

/* Pops the entries above the one stamped floor (0: every entry), or, with min, those stamped
 * below min: pages still there had left the list with no event (lifo_take for a refilled one,
 * and with untraced_lists for a freed one; else lifo_gone).  A pending page's take is a
 * candidate (TAKE_PENDING), its copies on the other lists stay.  0 or BH_ENOMEM. */
static int lifo_pop(struct scan_state *st, struct lifo_entry *v, size_t *n, int cpu, int mt,
                    uint64_t floor, uint64_t min) {
  while (*n && (uint32_t)v[*n - 1].stamp != floor && !(min && v[*n - 1].stamp >= min)) {
    struct lifo_entry x = v[--*n];
    if (st->lifo_stamp[x.pfn] != (uint32_t)x.stamp)
      continue; /* gone with an event since */
    if (x.pending) {
      if (lifo_take(st, x.pfn, cpu, mt | TAKE_PENDING, false))
        return BH_ENOMEM;
      continue;
    }
    st->lifo_stamp[x.pfn] = 0; /* still there: gone unseen */
    if (!x.refill && !st->follow_refills)
      lifo_gone(st, x.pfn);
    else if (lifo_take(st, x.pfn, cpu, mt, x.refill))
      return BH_ENOMEM;
  }
  return 0;
}

/*
 * A block a refill takes onto (cpu, mt), followed (untraced_lists): added at the list's tail
 * (rmqueue_bulk, mm/page_alloc.c:2376 in 6.12), the bottom of the stack.  A refill comes only
 * when the list is empty (:3082-3092), so what the list held had left it unseen; but a lone
 * event of the kind is also what an order-0 allocation that skips the pcp list makes
 * (rmqueue_buddy, when the pcp lock is taken or the refill failed, with percpu_refill set as
 * well), so the list is emptied only at the run's second block.  0 or BH_ENOMEM.
 */
static int lifo_refill(struct scan_state *st, const bh_event_t *ev, int mt, struct lifo_entry **v,
                       size_t *cap, size_t *n) {
  int cpu = ev->cpu;
  if (!st->batch_len[cpu][mt])
    st->batch_stamp[cpu][mt] = st->stamp + 1;
  else if (st->batch_len[cpu][mt] == 1 && lifo_pop(st, *v, n, cpu, mt, 0, st->batch_stamp[cpu][mt]))
    return BH_ENOMEM; /* the run's second block: a refill, the list was empty */
  st->batch_len[cpu][mt]++;
  if (bh__grow(v, cap, *n, sizeof(**v)))
    return BH_ENOMEM;
  memmove(*v + 1, *v, *n * sizeof(**v));
  (*v)[0] = (struct lifo_entry){++st->stamp, ev->pfn, true, false};
  ++*n;
  st->lifo_stamp[ev->pfn] = (uint32_t)st->stamp;
  st->lifo_where[ev->pfn] = (uint8_t)(cpu << 2 | mt);
  return 0;
}

/*
 * A traced order-0 allocation on a CPU takes its list's head (__rmqueue_pcplist,
 * mm/page_alloc.c:3095 in 6.12): where it takes a page freed or refilled onto that list, the
 * pages above it had left the list already, with no event of theirs: an allocation without
 * an event took them (a drain takes the list's tail, and is traced).  A refill shows its list
 * empty (:3082-3092): every page still on it had left the same way.  A page a free put there
 * is then one of a pair of frees (lifo_gone); a page a refill put there (with untraced_lists:
 * lifo_refill) is taken by the replay where the trace shows it gone (lifo_take).  With
 * untraced_lists (which wants the pcp events recorded), a page freed there is taken so too,
 * and start_page (a block whose first event is this allocation and no take: it lay on this
 * list at the start, below everything freed onto it since, as no refill came between, a
 * refill being traced) shows every page still on the list gone.  0 or BH_ENOMEM.
 */
COLD static int lifo_alloc(struct scan_state *st, const bh_event_t *ev, bool refill,
                           bool start_page) {
  if (!st->last_mt || ev->pfn >= st->fe->nr_pages ||
      (1ull << ev->order) > st->fe->nr_pages - ev->pfn)
    return 0;
  int mt = refill ? ev->migratetype : bh_gfp_migratetype(ev->gfp);
  if (!refill)
    st->last_mt[ev->pfn] = (uint8_t)(mt + 1);
  if (ev->order) { /* a larger block: its pages are off the lists */
    for (uint64_t p = ev->pfn; !refill && p < ev->pfn + (1ull << ev->order); p++)
      st->lifo_stamp[p] = 0;
    return 0;
  }
  struct lifo_entry **v;
  size_t *cap, *n = lifo_list(st, ev->cpu, mt, &v, &cap);
  uint64_t floor = 0; /* refill: everything on the list */
  if (!refill) {
    uint32_t stamp = st->lifo_stamp[ev->pfn];
    st->lifo_stamp[ev->pfn] = 0; /* allocated, off whatever list it was on */
    bool lone = false;           /* the one block of a refill event run: maybe a direct take */
    if (n) {
      lone = st->batch_len[ev->cpu][mt] == 1;
      st->batch_len[ev->cpu][mt] = 0;
    }
    if (start_page && !stamp && n && st->follow_refills && !lone)
      return lifo_pop(st, *v, n, ev->cpu, mt, 0, 0);
    uint8_t where = st->lifo_where[ev->pfn];
    if (!stamp || !n ||
        (where != (uint8_t)(ev->cpu << 2 | mt) && where != (uint8_t)(ev->cpu << 2 | LIFO_PENDING)))
      return 0; /* not a page of this list as the trace shows it */
    if (lone && *n && (uint32_t)(*v)[0].stamp == stamp) {
      memmove(*v, *v + 1, --*n * sizeof(**v)); /* it alone leaves: the rest stays */
      return 0;
    }
    floor = stamp;
  }
  if (!n)
    return 0;
  if (refill && st->follow_refills)
    return lifo_refill(st, ev, mt, v, cap, n);
  /* a refill without following them: the list was empty, everything on it had left */
  if (lifo_pop(st, *v, n, ev->cpu, mt, floor, 0))
    return BH_ENOMEM;
  if (!refill && *n)
    --*n; /* the allocated page's own entry */
  return 0;
}

/* The candidate takes of pending pages (lifo_free) whose list the trace has shown by its end
 * to be their pageblock's type are takes; the others are dropped. */
static void takes_settle(struct scan_state *st) {
  struct scan *sc = st->sc;
  size_t k = 0;
  for (size_t i = 0; i < sc->ntakes; i++) {
    struct untraced_take t = sc->takes[i];
    if (t.mt & TAKE_PENDING) {
      t.mt &= ~TAKE_PENDING;
      if (evidence_list(st, t.pfn) != t.mt)
        continue;
    }
    sc->takes[k++] = t;
  }
  sc->ntakes = k;
}

/* A drain takes a page off its list (to the buddy lists), as the trace shows. */
COLD static void lifo_drain(struct scan_state *st, const bh_event_t *ev) {
  if (st->last_mt && !ev->order && ev->pfn < st->fe->nr_pages)
    st->lifo_stamp[ev->pfn] = 0;
}

/* A pcp drain (mm_page_pcpu_drain) of a block whose last event was a free: it went from the
 * pcp list to the buddy lists, so an allocation without an event that followed took it later,
 * from a pcp list a refill put it on, not at once: the free stays a free.  (Without the pcp
 * events nothing shows this, and the block is held from its free.) */
COLD static void untraced_drained(struct scan_state *st, const bh_event_t *ev) {
  bh__pfn_entry_t *e = st->last_free.used ? bh__pfnmap_hfind(&st->last_free, ev->pfn) : NULL;
  if (e)
    bh__pfnmap_hdelete(&st->last_free, e);
}

/* A take from the buddy lists (mm_page_alloc_zone_locked) of a block freed last at a pcp
 * order and neither drained nor allocated since: that free went to the buddy lists, not to a
 * pcp list (free_unref_page's failed trylock, Linux 6.12 mm/page_alloc.c:2760-2766, or an
 * isolated pageblock, :2751-2754), and the replay makes it there, as a free under the held
 * lock (sc->locked).  0 or BH_ENOMEM. */
COLD static int direct_free(struct scan_state *st, const bh_event_t *ev) {
  bh__pfn_entry_t *e = st->last_free.used ? bh__pfnmap_hfind(&st->last_free, ev->pfn) : NULL;
  if (!e)
    return 0;
  struct scan *sc = st->sc;
  if (bh__grow(&sc->locked, &st->locked_cap, sc->nlocked, sizeof(*sc->locked)))
    return BH_ENOMEM;
  sc->locked[sc->nlocked++] = e->val;
  sc->direct_frees++;
  return 0;
}

/* What a pcp event or a fallback shows of the start (the drains, takes and refills,
 * bh__pcp_evidence) and of allocations without an event (the first pass, with fe). */
static inline void first_pass_pcp(struct scan_state *st, const bh_event_t *ev) {
  if (st->drains)
    bh__pcp_evidence(st->fe, ev);
  if (!st->fe)
    return;
  if (ev->op == BH_EV_EXTFRAG)
    return;
  if (ev->op == BH_EV_ALLOC_ZONE_LOCKED && direct_free(st, ev))
    st->oom = true;
  untraced_drained(st, ev);
  if (ev->op == BH_EV_PCPU_DRAIN)
    lifo_drain(st, ev);
  else if (ev->percpu_refill && !ev->order && lifo_alloc(st, ev, true, false))
    st->oom = true; /* mm_page_alloc_zone_locked */
}

/* An allocation of the trace: the frees of its pages are followed by it, not by an untraced
 * allocation. */
COLD static void untraced_alloc(struct scan_state *st, const bh_event_t *ev) {
  for (uint64_t p = ev->pfn; st->last_free.used && p < ev->pfn + (1ull << ev->order); p++) {
    bh__pfn_entry_t *e = bh__pfnmap_hfind(&st->last_free, p);
    if (e)
      bh__pfnmap_hdelete(&st->last_free, e);
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The takes of freed pages whose free went to the buddy lists, as the trace showed later
 * (sc->locked, sorted: a take from the buddy lists of the block with no drain between, or a
 * free under the CPU's held pcp lock): the page was never on the list, and no allocation
 * took it from there. */
static void takes_not_locked(struct scan *sc) {
  size_t k = 0;
  for (size_t i = 0; i < sc->ntakes; i++) {
    uint64_t o = sc->takes[i].free_ord;
    if (o == UINT64_MAX || !bsearch(&o, sc->locked, sc->nlocked, sizeof(*sc->locked), cmp_u64))
      sc->takes[k++] = sc->takes[i];
  }
  sc->ntakes = k;
}

/* The kept events' memory and spill file, released. */
static void kept_free(struct scan *sc) {
  free(sc->kept);
  sc->kept = NULL;
  if (sc->spilled)
    close(sc->spill_fd);
  sc->spilled = 0;
}

/* An unlinked temporary file for the events that do not fit in memory ($TMPDIR, else /tmp, as
 * the reader's decompressed trace.dat): a descriptor, or -1. */
static int spill_open(void) {
  const char *dir = getenv("TMPDIR");
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/buddyhint-events-XXXXXX", dir && *dir ? dir : "/tmp");
  if (n < 0 || (size_t)n >= sizeof(path))
    return -1;
  int fd = mkostemp(path, O_CLOEXEC);
  if (fd >= 0)
    unlink(path);
  return fd;
}

/* The kept events in memory, appended to the spill file: true, or false if it cannot be
 * written (no room on its file system). */
static bool spill_write(struct scan *sc, size_t n) {
  if (!sc->spilled && (sc->spill_fd = spill_open()) < 0)
    return false;
  const char *p = (const char *)sc->kept;
  size_t len = n * sizeof(*sc->kept);
  off_t at = (off_t)(sc->spilled * sizeof(*sc->kept));
  while (len) {
    ssize_t w = pwrite(sc->spill_fd, p, len, at);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (!sc->spilled)
        close(sc->spill_fd);
      return false;
    }
    p += w;
    len -= (size_t)w;
    at += w;
  }
  sc->spilled += n;
  return true;
}

/*
 * Makes room for more kept events: a larger buffer up to keep_max bytes, then the buffer's
 * events written to the spill file and the buffer used again, so that the memory they take
 * stays below keep_max however long the trace.  When neither can be done (keep_max below one
 * event, no memory, no room for the file) the events are not kept: the second pass reads the
 * trace again.
 */
COLD static struct kept_event *keep_grow(struct scan_state *st) {
  struct scan *sc = st->sc;
  if (!st->keep) /* given up earlier in this batch */
    return &st->scratch;
  size_t used = sc->kept ? (size_t)(st->kept_next - sc->kept) : 0;
  size_t cap = st->kept_cap ? st->kept_cap * 2 : 65536;
  if (cap * sizeof(*sc->kept) > st->keep_max && !st->kept_cap)
    cap = (size_t)(st->keep_max / sizeof(*sc->kept)); /* the first buffer, smaller */
  struct kept_event *p = NULL;
  if (cap && cap * sizeof(*p) <= st->keep_max && cap > st->kept_cap)
    p = realloc(sc->kept, cap * sizeof(*p));
  if (p) {
    sc->kept = p;
    st->kept_cap = cap;
    st->kept_next = p + used;
    st->kept_end = p + cap;
  } else if (st->kept_cap && spill_write(sc, st->kept_cap)) {
    st->kept_next = sc->kept;
  } else {
    kept_free(sc);
    st->keep = false;
    st->kept_cap = 0;
    st->kept_next = &st->scratch;
    st->kept_end = &st->scratch + 1;
  }
  return st->kept_next;
}

/* A vmstat worker's run at t, kept for pass_timer (the first VMSTAT_TIMES).  0 or BH_ENOMEM. */
enum { VMSTAT_TIMES = 1 << 16 };
COLD static int vmstat_time(struct scan *sc, uint64_t t) {
  if (sc->nvmstat_times >= VMSTAT_TIMES)
    return 0;
  if (bh__grow(&sc->vmstat_times, &sc->vmstat_times_cap, sc->nvmstat_times, sizeof(uint64_t)))
    return BH_ENOMEM;
  sc->vmstat_times[sc->nvmstat_times++] = t;
  return 0;
}

/* CPU c's first drain at t: its calib_until, the free it directly follows or its own time;
 * if it directly follows the CPU's vmstat run, that run's time, the drain counted from here. */
COLD static void first_drain(struct scan_state *st, unsigned c, uint64_t t) {
  st->drain_seen |= 1ull << c;
  uint8_t op = st->last_op[c];
  uint64_t free_t = op == BH_EV_FREE || op == BH_EV_FREE_BATCHED ? st->last_t[c] : 0,
           vmstat_t = op == BH_EV_VMSTAT ? st->last_t[c] : 0;
  st->sc->calib_until[c] = free_t ? free_t : t;
  st->sc->decay[c].at = vmstat_t;
  st->decay_counting |= (uint64_t)(vmstat_t != 0) << c;
}

/* The order of the free of pfn among CPU c's last frees (mm_page_free), or -1. */
COLD static int ring_order(const struct scan_state *st, unsigned c, uint64_t pfn) {
  for (uint64_t i = 1; i <= FREE_RING && i <= st->free_ring_next[c]; i++) {
    uint64_t k = (st->free_ring_next[c] - i) % FREE_RING;
    if (st->free_ring[c][k].pfn == pfn)
      return st->free_ring[c][k].order;
  }
  return -1;
}

/* A drain event of CPU c before its drain after an order-0 free is found: if it begins a
 * drain that directly follows a free, that free is one of sc->drain_frees, the CPU's last if
 * it is an order-0 free. */
COLD static int deficit_drain(struct scan_state *st, unsigned c) {
  uint8_t op = st->last_op[c];
  if (op != BH_EV_FREE && op != BH_EV_FREE_BATCHED)
    return 0;
  struct scan *sc = st->sc;
  if (bh__grow(&sc->drain_frees, &st->drain_frees_cap, sc->ndrain_frees, sizeof(*sc->drain_frees)))
    return BH_ENOMEM;
  sc->drain_frees[sc->ndrain_frees++] = (struct drain_free){st->last_t[c], c};
  st->deficit_seen |= (uint64_t)(ring_order(st, c, st->last_pfn[c]) == 0) << c;
  return 0;
}

/* A drain event of a CPU's first drain, a decay's (d): its pages and pfns counted. */
COLD static void decay_drain(struct decay_first *d, const bh_event_t *ev) {
  if (!d->pages || ev->pfn < d->lo)
    d->lo = ev->pfn;
  if (ev->pfn > d->hi)
    d->hi = ev->pfn;
  d->pages += 1ull << ev->order;
}

/* An event of CPU c after its last drain-free, until its first decay drain (sc->check) is
 * read: a vmstat run, the drain events right after it, then whatever comes next ends it. */
COLD static void check_event(struct scan_state *st, unsigned c, const bh_event_t *ev) {
  uint64_t bit = 1ull << c;
  struct decay_first *d = &st->sc->check[c];
  if (ev->op == BH_EV_PCPU_DRAIN && (st->check_run & bit || st->check_counting & bit)) {
    st->check_run &= ~bit;
    st->check_counting |= bit;
    decay_drain(d, ev);
    return;
  }
  if (st->check_counting & bit) {
    st->check_counting &= ~bit;
    st->check_done |= bit;
    return;
  }
  st->check_run &= ~bit;
  if (ev->op == BH_EV_VMSTAT) {
    st->check_run |= bit;
    *d = (struct decay_first){.at = ev->time_ns};
  }
}

/* With a start state: ev on its CPU, for the time until which that CPU's frees stayed below
 * its pcp high mark (sc->calib_until): its first drain, or the free it directly follows. */
static inline __attribute__((always_inline)) void last_on_cpu(struct scan_state *st,
                                                              const bh_event_t *ev) {
  unsigned c = ev->cpu < 0 ? 0 : (unsigned)ev->cpu;
  if (c >= LIFO_CPUS)
    return;
  if (bh__unlikely(ev->op == BH_EV_PCPU_DRAIN) && !((st->drain_seen >> c) & 1))
    first_drain(st, c, ev->time_ns);
  if (bh__unlikely(ev->op == BH_EV_PCPU_DRAIN) && !((st->deficit_seen >> c) & 1))
    st->oom |= deficit_drain(st, c) != 0;
  if (ev->op == BH_EV_FREE) {
    uint64_t k = st->free_ring_next[c]++ % FREE_RING;
    st->free_ring[c][k].pfn = ev->pfn;
    st->free_ring[c][k].order = (uint8_t)ev->order;
  }
  st->last_pfn[c] = ev->pfn;
  /* after its last drain-free, until its check is read: a vmstat run, a drain, the one after */
  if (bh__unlikely((st->deficit_seen & ~st->check_done) >> c & 1) &&
      (ev->op == BH_EV_VMSTAT || ev->op == BH_EV_PCPU_DRAIN ||
       (st->check_run | st->check_counting) >> c & 1))
    check_event(st, c, ev);
  if (bh__unlikely((st->decay_counting >> c) & 1)) { /* the drain goes on to its last event */
    if (ev->op == BH_EV_PCPU_DRAIN)
      decay_drain(&st->sc->decay[c], ev);
    else
      st->decay_counting &= ~(1ull << c);
  }
  st->last_t[c] = ev->time_ns;
  st->last_op[c] = (uint8_t)ev->op;
}

/* One event of the first pass.  Returns 0 or BH_ENOMEM. */
static inline __attribute__((always_inline)) int scan_event(void *ctx, const bh_event_t *ev) {
  struct scan_state *st = ctx;
  struct scan *sc = st->sc;
  struct live_blocks *live = &st->live;
  uint64_t *cur = &st->cur;
  if (bh__unlikely(st->fe != NULL))
    last_on_cpu(st, ev);
  if (bh__unlikely(ev->op == BH_EV_VMSTAT)) { /* kept and counted, but no page event: it
                                               * does not start the clock */
    sc->events++;
    sc->vmstat_events++;
    if (st->fe)
      bh__drain_run(st->fe, ev); /* a decay's drain is a drain of its own */
    return vmstat_time(sc, ev->time_ns);
  }
  if (sc->events++ == sc->vmstat_events) /* the first page event */
    sc->first = ev->time_ns;
  sc->last = ev->time_ns;
  if (ev->cpu >= 0 && (unsigned)ev->cpu > sc->max_cpu)
    sc->max_cpu = (unsigned)ev->cpu;
  if (bh__unlikely(ev->op >= BH_EV_PCPU_DRAIN)) { /* no page changes hands */
    sc->pcp_events += ev->op != BH_EV_EXTFRAG;    /* the fallbacks alone drain no pcp list */
    first_pass_pcp(st, ev);
    return 0;
  }
  if (bh__unlikely(st->fe != NULL)) {
    bool start_page = bh__first_event(st->fe, ev);
    if (ev->op == BH_EV_FREE &&
        (untraced_free(st, ev) || lifo_free(st, ev) || lock_watch_free(st, ev, st->nfrees - 1)))
      return BH_ENOMEM;
    else if (ev->op == BH_EV_FREE_BATCHED && lock_watch_batched(st, ev))
      return BH_ENOMEM;
    else if (ev->op == BH_EV_ALLOC && !ev->failed) {
      untraced_alloc(st, ev);
      if (lifo_alloc(st, ev, false, start_page))
        return BH_ENOMEM;
    }
    st->nallocs += ev->op == BH_EV_ALLOC;
  }
  if (ev->op == BH_EV_ALLOC) {
    if (ev->failed)
      return 0;
    int was = live_insert(live, ev->pfn, ev->order);
    if (was < 0)
      return BH_ENOMEM;
    if (was)
      *cur -= 1ull << (was - 1);
    *cur += 1ull << ev->order;
    if (*cur > sc->peak)
      sc->peak = *cur;
    if (ev->pfn < sc->pfn_lo)
      sc->pfn_lo = ev->pfn;
    if (ev->pfn + (1ull << ev->order) > sc->pfn_hi)
      sc->pfn_hi = ev->pfn + (1ull << ev->order);
  } else {
    uint64_t n = 1ull << ev->order;
    if (ev->op == BH_EV_FREE_BATCHED)
      return 0; /* follows an mm_page_free of the same folio (an upper bound is fine) */
    /* pieces of larger blocks and unknown frees are not subtracted: the peak found is an
     * upper bound, which is what sizing needs */
    int was = live_update(live, ev->pfn, 0, false);
    if (was && ev->order >= was - 1) {
      *cur -= 1ull << (was - 1);
      live_update(live, ev->pfn, -1, true);
    } else if (was) {
      *cur -= n;
      live_update(live, ev->pfn, 0, true);
    }
  }
  return 0;
}

/* scan_event of a text trace's first pass, which keeps the event for the second (after
 * scan_event: the byte stores of kept_pack may alias the scan's counters, which would then be
 * loaded again). */
static inline __attribute__((always_inline)) int scan_keep_event(void *ctx, const bh_event_t *ev) {
  struct scan_state *st = ctx;
  int err = scan_event(ctx, ev);
  struct kept_event *k = st->kept_next;
  if (bh__unlikely(k == st->kept_end))
    k = keep_grow(st);
  st->kept_next = k + 1;
  kept_pack(k, ev);
  return err;
}

/* The pcp events read for the start state only (bh__first_drain; allocator placement where
 * no refill is followed, refills_followed): not counted, not kept, the replay does not read
 * them. */
static inline __attribute__((always_inline)) bool unplayed(struct scan_state *st,
                                                           const bh_event_t *ev) {
  if (bh__likely(ev->op < BH_EV_PCPU_DRAIN) || ev->op == BH_EV_VMSTAT)
    return false; /* the vmstat worker's runs are played (vmstat_event) */
  first_pass_pcp(st, ev);
  return true;
}

static inline __attribute__((always_inline)) int scan_event_unplayed(void *ctx,
                                                                     const bh_event_t *ev) {
  return unplayed(ctx, ev) ? 0 : scan_event(ctx, ev);
}

static inline __attribute__((always_inline)) int scan_keep_event_unplayed(void *ctx,
                                                                          const bh_event_t *ev) {
  return unplayed(ctx, ev) ? 0 : scan_keep_event(ctx, ev);
}

/* The next events of the first pass.  The loop that keeps them is a copy of its own, so that
 * the first pass over a binary trace pays nothing for keeping, and so are those that leave out
 * the pcp events read for the start state only (a trace without them pays nothing). */
__attribute__((noinline)) static int scan_some(bh_trace_t *t, bh_event_t *evs, int max,
                                               struct scan_state *st) {
  if (bh__unlikely(st->pcp_unplayed))
    return st->keep ? each_event(t, evs, max, scan_keep_event_unplayed, st)
                    : each_event(t, evs, max, scan_event_unplayed, st);
  return st->keep ? each_event(t, evs, max, scan_keep_event, st)
                  : each_event(t, evs, max, scan_event, st);
}

static void format_name(bh_trace_t *t, char *out, size_t len) {
  bool plain = !strcmp(bh_trace_compression(t), "none");
  snprintf(out, len, "%s%s%s", bh_trace_format_name(t), plain ? "" : "+",
           plain ? "" : bh_trace_compression(t));
}

/* --strict: events the trace lost are an error rather than a count. */
static int lost_check(struct replay *r, uint64_t lost) {
  if (!lost || !r->cfg->strict)
    return 0;
  set_err(r, "%s: the trace lost %llu events (--strict)", r->cfg->trace, (unsigned long long)lost);
  return BH_EFORMAT;
}

/* Whether the first pass follows the pcp lists for allocations without an event (lists): as
 * asked, or where the recording says it has no alloc_pages_bulk probes and no other kind was
 * asked for. */
static bool lists_followed(const struct replay *r) {
  const bh_replay_config_t *c = r->cfg;
  return c->untraced_lists || (!c->untraced_late && !c->untraced_ignore && !c->untraced_infer &&
                               r->rm.shape && bh__rm_bulk_unprobed(&r->rm));
}

/* keep_all: keep the events of a binary trace too (for several replays: bh__replay_share) */
static int first_pass(struct replay *r, struct scan *sc, bool keep_all) {
  bh_trace_t *t;
  int err = open_trace(r, &t);
  if (err)
    return err;
  struct scan_state st = {.sc = sc,
                          .keep_max = r->cfg->keep_max_bytes,
                          .fe = r->rm.fe.fe ? &r->rm.fe : NULL,
                          .drains = drain_evidence(r),
                          .pcp_unplayed = r->cfg->placement != BH_PLACEMENT_TRACE &&
                                          drain_evidence(r) && !refills_followed(r),
                          .pairs_all = r->cfg->untraced_infer,
                          .follow_refills = lists_followed(r)};
  if (bh__pfnmap_init(&st.live.far, 1 << 10)) {
    bh_trace_close(t);
    return BH_ENOMEM;
  }
  size_t lifo_pages = st.fe ? st.fe->nr_pages + 1 : 0; /* (the arrays below, per page) */
  if (st.fe && !r->cfg->untraced_ignore && !r->cfg->untraced_infer) { /* NULL: no list order */
    st.last_mt = bh__zmap(lifo_pages);
    st.lifo_where = bh__zmap(lifo_pages);
    st.lifo_stamp = bh__zmap(lifo_pages * sizeof(uint32_t));
    if (!st.last_mt || !st.lifo_where || !st.lifo_stamp) {
      bh__zunmap(st.last_mt, lifo_pages);
      bh__zunmap(st.lifo_where, lifo_pages);
      bh__zunmap(st.lifo_stamp, lifo_pages * sizeof(uint32_t));
      st.last_mt = st.lifo_where = NULL;
      st.lifo_stamp = NULL;
    }
  }
  bool once = sc->once;
  memset(sc, 0, sizeof(*sc));
  sc->pfn_lo = UINT64_MAX;
  for (unsigned c = 0; c < LIFO_CPUS; c++)
    sc->calib_until[c] = UINT64_MAX; /* no drain seen */
  /* binary records are read in place about as fast as kept events would be played */
  st.keep = (once || keep_all || bh_trace_format(t) != BH_TRACE_NATIVE_BINARY) && st.keep_max;
  enum { BATCH = 256 };
  bh_event_t evs[BATCH];
  while ((err = scan_some(t, evs, BATCH, &st)) > 0)
    ;
  if (!err && st.oom)
    err = BH_ENOMEM;
  if (err)
    set_err(r, "%s", err == BH_ENOMEM ? "out of memory" : bh_trace_error(t));
  if (!err && once && !st.keep) {
    set_err(r,
            "%s cannot be read twice (a FIFO or standard input) and its events could not be "
            "kept (in %llu MiB of memory and a temporary file in $TMPDIR or /tmp): give "
            "--memory and --cpus (memory_bytes, arena.nr_cpus) to read it once",
            r->cfg->trace, (unsigned long long)(r->cfg->keep_max_bytes >> 20));
    err = BH_EINVAL;
  }
  if (err || !st.keep)
    kept_free(sc);
  bh_trace_counts(t, &sc->counts);
  if (!err)
    err = lost_check(r, sc->counts.lost_events);
  format_name(t, sc->format, sizeof(sc->format));
  sc->map_cap = st.live.max_n;
  sc->groups = live_groups(&st.live);
  live_destroy(&st.live);
  if (st.fe)
    bh__drain_runs_end(st.fe); /* the trace's end ends each CPU's last drain */
  bh__pfnmap_destroy(&st.last_free);
  bh__zunmap(st.last_mt, lifo_pages);
  bh__zunmap(st.lifo_where, lifo_pages);
  bh__zunmap(st.lifo_stamp, lifo_pages * sizeof(uint32_t));
  for (int c = 0; c < LIFO_CPUS; c++)
    for (int m = 0; m < BH_MT_PCPTYPES; m++)
      free(st.lifo[c][m]);
  if (sc->nuntraced) /* found in the order of their second frees */
    qsort(sc->untraced, sc->nuntraced, sizeof(*sc->untraced), cmp_u64);
  free(st.lw);
  /* found CPU by CPU, each CPU's in order: an insertion sort moves each past the few of other
   * CPUs' batches found before it (a sort of them all cost a replay 3 % of its instructions) */
  for (size_t i = 1; i < sc->nbatched; i++) {
    uint64_t v = sc->batched[i];
    size_t j = i;
    for (; j && sc->batched[j - 1] > v; j--)
      sc->batched[j] = sc->batched[j - 1];
    sc->batched[j] = v;
  }
  if (sc->nlocked) { /* found CPU by CPU, and a free may be found both ways */
    qsort(sc->locked, sc->nlocked, sizeof(*sc->locked), cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < sc->nlocked; i++)
      if (sc->locked[i] != sc->locked[k - 1])
        sc->locked[k++] = sc->locked[i];
    sc->nlocked = k;
  }
  if (st.fe && sc->ntakes)
    takes_settle(&st);
  if (sc->nlocked && sc->ntakes)
    takes_not_locked(sc);
  bh_trace_close(t);
  return err;
}

/* x86 layout: DMA the first 16 MiB, DMA32 up to 4 GiB, Normal above. */
void bh_replay_zone_layout(bh_config_t *c, uint64_t total) {
  if (!c || c->max_order > BH_ORDER_LIMIT)
    return;
  uint64_t block = BH_PAGE_SIZE << c->max_order;
  total = (total + block - 1) / block * block;
  uint64_t dma = 16ull << 20;
  if (dma % block || total < 4 * block)
    dma = 0;
  uint64_t dma32 = total < (4ull << 30) ? total - dma : (4ull << 30) - dma;
  dma32 = dma32 / block * block;
  memset(c->zone_bytes, 0, sizeof(c->zone_bytes));
  c->zone_bytes[BH_ZONE_DMA] = dma;
  c->zone_bytes[BH_ZONE_DMA32] = dma32;
  c->zone_bytes[BH_ZONE_NORMAL] = total - dma - dma32;
}

/* ---- resident memory and the timeline ---- */

/* The kept counts against a full pass over the bitmaps; the first difference goes to drift. */
COLD static void check_resident(struct replay *r, uint64_t pages) {
  bh_arena_t *a = r->arena;
  uint64_t written, discarded, both;
  bh__discard_recount(a, &discarded, &written, &both);
  uint64_t want = written - both;
  if (r->drift[0] ||
      (want == pages && written == r->touched_pages && discarded == bh__discarded_pages(a)))
    return;
  snprintf(r->drift, sizeof(r->drift),
           "resident count drifted at %.3f s: kept %lu resident, %lu written, %lu discarded; "
           "recounted %lu, %lu, %lu",
           (double)r->vnow / 1e9, (unsigned long)pages, (unsigned long)r->touched_pages,
           (unsigned long)bh__discarded_pages(a), (unsigned long)want, (unsigned long)written,
           (unsigned long)discarded);
}

/* Resident bytes now; for the sim backing, the pages written minus those of them discarded,
 * both kept as the bitmaps change. */
static uint64_t resident_bytes(struct replay *r) {
  bh_arena_t *a = r->arena;
  if (!r->sim) {
    uint64_t b = 0;
    bh_arena_resident(a, &b);
    return b;
  }
  uint64_t pages = r->touched_pages - bh__discard_touched_pages(a);
  if (bh__unlikely(r->check_resident))
    check_resident(r, pages);
  return pages << BH_PAGE_SHIFT;
}

static void timeline_header(struct replay *r) {
  FILE *f = r->cfg->timeline;
  if (!f)
    return;
  fprintf(f, "time_s,live_bytes,resident_bytes,discarded_bytes,free_pages");
  for (unsigned o = 0; o <= r->max_order; o++)
    fprintf(f, ",free_o%u", o);
  fprintf(f, "\n");
}

static void sample(struct replay *r, uint64_t t) {
  uint64_t res = resident_bytes(r);
  if (res > r->s->rss_peak_bytes)
    r->s->rss_peak_bytes = res;
  FILE *f = r->cfg->timeline;
  if (!f)
    return;
  bh_arena_t *a = r->arena;
  uint64_t nr_free[BH_ORDER_LIMIT + 1], free_pages;
  bh__free_counts(a, nr_free, &free_pages);
  fprintf(f, "%.3f,%lu,%lu,%lu,%lu", (double)t / 1e9,
          (unsigned long)(r->em.live_pages << BH_PAGE_SHIFT), (unsigned long)res,
          (unsigned long)(bh__discarded_pages(a) << BH_PAGE_SHIFT), (unsigned long)free_pages);
  for (unsigned o = 0; o <= r->max_order; o++)
    fprintf(f, ",%lu", (unsigned long)nr_free[o]);
  fprintf(f, "\n");
}

static void check(struct replay *r) {
  long v = bh_arena_check(r->arena, r->cfg->check_report, 20);
  if (v > 0)
    r->s->check_violations += v;
}

/* Moves virtual time to t: worker steps, vmstat ticks and samples due before it, in order. */
static inline bool nothing_due(const struct replay *r, uint64_t t) {
  return t < r->clock_due && t < bh__hint_next_due(r->hint); /* setup attached r->hint */
}

/* clock_due after next_tick or next_sample moved: one comparison per event instead of three. */
static void set_clock_due(struct replay *r) {
  r->clock_due = r->next_tick < r->next_compact ? r->next_tick : r->next_compact;
  if (r->cfg->sample_ns && r->next_sample < r->clock_due)
    r->clock_due = r->next_sample;
  if (r->cfg->speed > 0 || r->t0 == UINT64_MAX)
    r->clock_due = 0; /* pacing, or one pass before the first event: every event in general */
}

/*
 * Sets the bits `mask` of word w of the touched map and counts the ones that were clear; those
 * the core tells apart if discarded.  Only this thread writes the map: a relaxed load and
 * store, no locked instruction.
 */
static inline void touch_word(struct replay *r, uint64_t w, uint64_t mask) {
  uint64_t old = atomic_load_explicit(&r->touched[w], memory_order_relaxed);
  uint64_t fresh = mask & ~old;
  if (!fresh)
    return;
  atomic_store_explicit(&r->touched[w], old | mask, memory_order_relaxed);
  r->touched_pages += fresh == ~0ull ? 64 : (uint64_t)__builtin_popcountll(fresh);
  bh__discard_on_touch(r->arena, r->discarded, w, fresh);
}

/* touch_word for one page: the common order-0 allocation, no popcount. */
static inline void touch_page(struct replay *r, uint64_t pfn) {
  uint64_t w = pfn >> 6, bit = 1ull << (pfn & 63);
  uint64_t old = atomic_load_explicit(&r->touched[w], memory_order_relaxed);
  if (old & bit)
    return;
  atomic_store_explicit(&r->touched[w], old | bit, memory_order_relaxed);
  r->touched_pages++;
  bh__discard_on_touch(r->arena, r->discarded, w, bit);
}

/* Sets bits [pfn, pfn + n) of the touched map a word at a time. */
COLD static void touch_range(struct replay *r, uint64_t pfn, uint64_t n) {
  for (uint64_t i = pfn, end = pfn + n; i < end;) {
    unsigned b = (unsigned)(i & 63);
    uint64_t w = end - i < 64 - b ? end - i : 64 - b;
    touch_word(r, i >> 6, (w == 64 ? ~0ull : (1ull << w) - 1) << b);
    i += w;
  }
}

/*
 * Compaction moved memory the start state holds allocated before the trace: its recorded pfn
 * now lives at new_pfn.  The map gets the entry after the run (inserting now could rehash the
 * slots the reverse index points at).  Returns 0, or 1 to keep the block in place.
 */
COLD static int pretrace_moved(struct replay *r, uint64_t old_pfn, uint64_t new_pfn,
                               unsigned order) {
  if (r->nmoves == r->moves_cap) {
    size_t cap = r->moves_cap ? r->moves_cap * 2 : 256;
    struct pretrace_move *m = realloc(r->moves, cap * sizeof(*m));
    if (!m)
      return 1;
    r->moves = m;
    r->moves_cap = cap;
  }
  r->moves[r->nmoves++] = (struct pretrace_move){old_pfn, new_pfn, order};
  if (r->touch_sim) /* the copy writes the new pages */
    touch_range(r, new_pfn, 1ull << order);
  return 0;
}

/* The moves of pretrace_moved into the map. */
COLD static void pretrace_moves_apply(struct replay *r) {
  for (size_t i = 0; i < r->nmoves; i++) {
    bh__pfn_ref_t e = bh__pfnmap_insert(&r->em.map, r->moves[i].from, BH__PFN_PRETRACE);
    if (!bh__pfn_ok(e))
      break;
    bh__pfn_set_val(e, r->moves[i].to);
    bh__pfn_set_order(e, r->moves[i].order);
    bh__pfn_set_kind(e, BH__PFN_PRETRACE); /* the insert gives only a new entry its kind */
  }
  r->nmoves = 0;
}

/* Compaction moved the block at old_pfn to new_pfn: the map entry follows it. */
static int migrate_block(void *ctx, uint64_t old_pfn, uint64_t new_pfn, unsigned order) {
  struct replay *r = ctx;
  if (!r->rev_valid) {
    if (!r->rev && !(r->rev = malloc(r->nr_pages * sizeof(*r->rev))))
      return 1; /* without the index the block stays where it is */
    memset(r->rev, 0, r->nr_pages * sizeof(*r->rev));
    for (uint64_t i = 0, n = bh__pfnmap_slots(&r->em.map); i < n; i++) {
      bh__pfn_ref_t e = bh__pfnmap_slot(&r->em.map, i);
      if (bh__pfn_ok(e) && (bh__pfn_kind(e) == BH__PFN_LIVE || bh__pfn_kind(e) == BH__PFN_PRETRACE))
        r->rev[bh__pfn_val(e)] = (uint32_t)(i + 1);
    }
    r->rev_valid = true;
  }
  uint32_t slot = r->rev[old_pfn];
  bh__pfn_ref_t e = slot ? bh__pfnmap_slot(&r->em.map, slot - 1) : (bh__pfn_ref_t){0};
  if (!bh__pfn_ok(e) && r->shape && bh__page_pretrace(r->arena, old_pfn))
    return pretrace_moved(r, old_pfn, new_pfn, order);
  if (!bh__pfn_ok(e) || (bh__pfn_kind(e) != BH__PFN_LIVE && bh__pfn_kind(e) != BH__PFN_PRETRACE) ||
      bh__pfn_val(e) != old_pfn)
    return 1;
  bh__pfn_set_val(e, new_pfn);
  r->rev[new_pfn] = slot;
  r->rev[old_pfn] = 0;
  if (r->attrib)
    bh__attrib_move(r->attrib, old_pfn, new_pfn, order);
  if (r->touch_sim) /* the copy writes the new pages */
    touch_range(r, new_pfn, 1ull << order);
  return 0;
}

/*
 * kcompactd's proactive compaction checks, at r->next_compact: each node's every 500 ms, or
 * 32 s after a run on that node that did not lower its score (the arena keeps the timers).
 * Returns the time to the next check.
 */
static uint64_t kcompactd(struct replay *r) {
  bh_compact_result_t res;
  uint64_t next = UINT64_MAX;
  r->rev_valid = false;
  bh_kcompactd_run(r->arena, r->cfg->compaction_proactiveness, r->next_compact, migrate_block, r,
                   &res, &next);
  if (r->nmoves)
    pretrace_moves_apply(r);
  if (r->attrib) /* the refaults of compaction's copies are no allocation's */
    r->attrib->refaults_seen = bh__refault_pages(r->arena);
  return next > r->next_compact && next != UINT64_MAX ? next - r->next_compact : BH_NS_PER_SEC / 2;
}

/* The hinting worker's steps due by virtual time t, and the checker after them if asked. */
/*
 * Resident memory only falls when a worker step reports (madvise, hole punch, or the sim
 * model's discard); allocations, touches, refaults and compaction's copies only raise it.  So
 * its peak is reached just before a step, or at the end: measured there (and at the end, in
 * finish), rss_peak_bytes is exact, never below the live memory the trace held (every live
 * page was written, unless --touch none).  Against the wall clock (--speed) the worker is a
 * thread of its own and only the periodic samples see the peak.
 */
static void step_worker(struct replay *r, uint64_t t) {
  if (r->cfg->speed > 0)
    return;
  if (bh__hint_next_due(r->hint) <= t) {
    uint64_t res = resident_bytes(r);
    if (res > r->s->rss_peak_bytes)
      r->s->rss_peak_bytes = res;
  }
  if (bh_hint_advance(r->hint, t) > 0 && r->cfg->check_after_steps)
    check(r);
}

/* The samples due before t (or at t too, when `at` is set). */
static void take_samples(struct replay *r, uint64_t t, bool at) {
  while (r->cfg->sample_ns && (r->next_sample < t || (at && r->next_sample == t))) {
    step_worker(r, r->next_sample);
    sample(r, r->next_sample);
    r->next_sample += r->cfg->sample_ns;
  }
}

COLD static void advance_slow(struct replay *r, uint64_t t) {
  for (;;) {
    uint64_t tick = r->next_tick < r->next_compact ? r->next_tick : r->next_compact;
    if (tick > t)
      break;
    take_samples(r, tick, false);
    step_worker(r, tick);
    if (tick == r->next_tick) {
      /* the vmstat worker, once a second: its pcp decay drains are in the trace's drain
       * events when it has them */
      if (!r->pcp_trace && !r->vmstat_trace)
        bh_vmstat_tick(r->arena);
      r->next_tick += BH_NS_PER_SEC;
    }
    if (tick == r->next_compact)
      r->next_compact += kcompactd(r);
  }
  take_samples(r, t, true);
  step_worker(r, t);
  r->vnow = t;
  set_clock_due(r);
}

static inline void advance_to(struct replay *r, uint64_t t) {
  if (bh__likely(nothing_due(r, t)))
    r->vnow = t; /* the common case */
  else
    advance_slow(r, t);
}

COLD static void wait_wall(struct replay *r, uint64_t t) {
  double target = (double)t / 1e9 / r->cfg->speed, now = secs_since(&r->wall0);
  if (target > now) {
    double d = target - now;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR)
      ;
  }
}

/* ---- events ---- */

static inline void touch(struct replay *r, uint64_t pfn, unsigned order) {
  uint64_t n = 1ull << order;
  if (bh__likely(r->touch_sim)) {
    if (bh__likely(order == 0))
      touch_page(r, pfn);
    else
      touch_range(r, pfn, n);
    return;
  }
  if (r->sim)
    return; /* --touch none */
  uint8_t *p = r->base + (pfn << BH_PAGE_SHIFT);
  if (r->cfg->touch == BH_TOUCH_FULL)
    memset(p, 0x5a, n << BH_PAGE_SHIFT);
  else if (r->cfg->touch == BH_TOUCH_PAGE)
    for (uint64_t i = 0; i < n; i++)
      p[i << BH_PAGE_SHIFT] = (uint8_t)(pfn + i);
}

/* arena_free with the trace's pcp events applied (onto a pcp list without a drain decision of
 * its own), or for a free the trace shows made under its CPU's pcp lock (to the buddy lists). */
COLD static void arena_free_other(struct replay *r, uint64_t pfn, unsigned order, int cpu) {
  if (r->pcp_trace && r->start_pcp && pfn < r->nr_pages)
    r->start_pcp[pfn >> 6] &= ~(1ull << (pfn & 63));
  if (r->free_locked)
    bh__free_pfn_locked(r->arena, pfn, order);
  else
    bh__pcp_free_nodrain(r->arena, pfn, order, cpu);
}

/* A free. */
static inline void arena_free(struct replay *r, uint64_t pfn, unsigned order, int cpu) {
  if (bh__unlikely(r->pcp_trace | r->free_locked))
    arena_free_other(r, pfn, order, cpu);
  else
    bh_free_pfn(r->arena, pfn, order, cpu);
}

/* A miss of placement agreement, by where the kernel's block was; the first one on each
 * (zone, CPU, order, migratetype) list is counted apart, before the lists have drifted. */
COLD static void miss_where(struct replay *r, const bh_event_t *ev, int mt, int where) {
  bh_replay_agreement_t *g = &r->s->agreement;
  g->miss_where[where]++;
  if (!r->first_miss || ev->pfn >= r->nr_pages)
    return;
  uint64_t key =
      (((uint64_t)bh__pfn_zone_id(r->arena, ev->pfn) * r->nr_cpus + ev->cpu % r->nr_cpus) *
           (BH_ORDER_LIMIT + 1) +
       ev->order) *
          BH_MT_TYPES +
      (uint64_t)mt;
  if (r->first_miss[key / 64] & (1ull << (key % 64)))
    return;
  r->first_miss[key / 64] |= 1ull << (key % 64);
  g->first_miss_where[where]++;
}

/* --placements: the kernel's block and the arena's, and where the kernel's was. */
COLD static void placement_line(struct replay *r, const bh_event_t *ev, int mt, uint64_t pfn,
                                const char *where) {
  const char *fmt =
      r->cfg->reports_hex ? "%.6f,%d,%u,%s,0x%lx,0x%lx,%s\n" : "%.6f,%d,%u,%s,%lu,%lu,%s\n";
  fprintf(r->cfg->placements, fmt, (double)ev->time_ns / 1e9, ev->cpu, ev->order,
          bh_migratetype_name(mt), (unsigned long)ev->pfn, (unsigned long)pfn,
          where ? where : "same");
}

/*
 * An allocation in the recorded machine's shape: with --placement trace the recorded block
 * itself if it is free (else a placement conflict and the allocator's choice); with the
 * allocator's placement, whether it chose the kernel's pfn.  A recorded block that the start
 * state holds allocated is a start conflict (a page on a pcp list that was not inferred, or an
 * event between the snapshot and the trace).
 */
__attribute__((noinline)) static int shaped_alloc(struct replay *r, const bh_event_t *ev,
                                                  uint64_t *pfn) {
  bh_arena_t *a = r->arena;
  bh_replay_summary_t *s = r->s;
  bool inside = ev->pfn < r->nr_pages && (1ull << ev->order) <= r->nr_pages - ev->pfn;
  if (inside && bh__page_pretrace(a, ev->pfn))
    s->start_conflicts++;
  if (r->rm.kfree)
    bh__rm_kfree_mark(&r->rm, ev->pfn, ev->order, false);
  if (r->place_trace) {
    if (inside && bh_alloc_pfn_at(a, ev->gfp, ev->order, ev->cpu, ev->pfn) == BH_OK) {
      *pfn = ev->pfn;
      return BH_OK;
    }
    s->placement_conflicts++;
  }
  _Static_assert((int)BH__WHERE_NR == (int)BH_WHERE_NR,
                 "the core's and the summary's causes differ");
  bh__where_t w = {BH__WHERE_OTHER, -1, 0};
  if (r->agree)
    bh__where_is(a, ev->pfn, ev->order, bh_gfp_migratetype(ev->gfp), (int)(ev->cpu % r->nr_cpus),
                 &w);
  int rc = bh_alloc_pfn(a, ev->gfp, ev->order, ev->cpu, pfn);
  if (rc == BH_OK && r->agree && !r->taking) {
    bh_replay_agreement_t *g = &s->agreement;
    int same = *pfn == ev->pfn, mt = bh_gfp_migratetype(ev->gfp);
    if (!same)
      miss_where(r, ev, mt, w.where);
    if (bh__unlikely(r->cfg->placements != NULL))
      placement_line(r, ev, mt, *pfn, same ? NULL : bh__where_names[w.where]);
    g->allocs++;
    g->same += (uint64_t)same;
    g->by_order[ev->order][0]++;
    g->by_order[ev->order][1] += (uint64_t)same;
    g->by_mt[mt][0]++;
    g->by_mt[mt][1] += (uint64_t)same;
  }
  return rc;
}

/*
 * An allocation while the start snapshot was read: if the snapshot already saw it (its block
 * is allocated in the start state, and was not before), that block is the allocation.
 */
COLD static bool window_alloc(struct replay *r, const bh_event_t *ev) {
  if (ev->order > r->max_order || bh_arena_adopt(r->arena, ev->pfn, ev->order) != BH_OK)
    return false;
  if (r->rm.kfree)
    bh__rm_kfree_mark(&r->rm, ev->pfn, ev->order, false);
  r->s->window_events++;
  touch(r, ev->pfn, ev->order);
  return true;
}

/* --by: the allocation of ev at arena pfn, and the refaults it took, for its origin. */
COLD static int attrib_alloc(struct replay *r, const bh_event_t *ev, uint64_t pfn) {
  uint64_t now = bh__refault_pages(r->arena);
  int err = bh__attrib_alloc(r->attrib, pfn, ev->order, ev->origin, now - r->attrib->refaults_seen);
  r->attrib->refaults_seen = now;
  return err;
}

/* The arena as the backend of the event meaning (replay/event_meaning.h): a recorded
 * allocation served at an arena pfn (the snapshot's block while it was read, the recorded
 * machine's placement in its shape, else the allocator's choice), touched as --touch says. */
static inline __attribute__((always_inline)) int arena_alloc(void *ctx, const bh_event_t *ev,
                                                             uint64_t *val) {
  struct replay *r = ctx;
  if (bh__unlikely(ev->time_ns <= r->window_end) && window_alloc(r, ev)) {
    *val = ev->pfn;
    return 0;
  }
  uint64_t pfn;
  if (bh__unlikely(r->shape) ? shaped_alloc(r, ev, &pfn) != BH_OK
                             : bh_alloc_pfn(r->arena, ev->gfp, ev->order, ev->cpu, &pfn) != BH_OK)
    return 1;
  if (bh__unlikely(r->attrib) && attrib_alloc(r, ev, pfn))
    return BH_ENOMEM;
  touch(r, pfn, ev->order);
  *val = pfn;
  return 0;
}

static inline __attribute__((always_inline)) void
arena_free_op(void *ctx, uint64_t pfn, unsigned order, uint32_t aux, int cpu) {
  (void)aux;
  arena_free(ctx, pfn, order, cpu);
}

/* A recorded block freed piece by piece: the arena block is split as split_page() does. */
static int arena_split(void *ctx, uint64_t pfn, unsigned order, uint32_t *aux) {
  struct replay *r = ctx;
  bh_split_pages(r->arena, pfn, order);
  *aux = 0;
  return 0;
}

/* A free of no recorded block: memory the start state holds allocated before the trace (an
 * ordinary free), freed while the snapshot was read (which saw it free), or memory the kernel
 * had free (a batched free repeating one too long ago for the recent frees, or an allocation
 * that left no event: alloc_pages_bulk takes pages from pcp lists without mm_page_alloc). */
static int arena_untraced(void *ctx, const bh_event_t *ev) {
  struct replay *r = ctx;
  if (r->shape && bh_arena_adopt(r->arena, ev->pfn, ev->order) == BH_OK) {
    arena_free(r, ev->pfn, ev->order, ev->cpu);
    return BH__EM_PRETRACE;
  }
  if (ev->time_ns <= r->window_end && bh__block_free(r->arena, ev->pfn, ev->order))
    return BH__EM_WINDOW;
  if (bh__rm_kfree_all(&r->rm, ev->pfn, ev->order)) {
    /* an allocation without an event took the block (alloc_pages_bulk takes pcp pages without
     * mm_page_alloc, mm/page_alloc.c:4659-4818 in 6.12.117), at the latest right before this
     * free, which the kernel made as any other (free_unref_page: onto this CPU's pcp list,
     * alloc_factor halved, free_unref_page_commit :2676): taken from where the arena holds it, and
     * freed */
    if (!r->cfg->untraced_ignore && ev->op == BH_EV_FREE && ev->order <= LF_MAX_ORDER &&
        bh_alloc_pfn_at(r->arena, BH_GFP_KERNEL, ev->order, ev->cpu, ev->pfn) == BH_OK) {
      arena_free(r, ev->pfn, ev->order, ev->cpu);
      return BH__EM_UNTRACED_APPLIED;
    }
    return BH__EM_KERNEL_FREE;
  }
  return BH__EM_UNKNOWN;
}

static const bh__em_ops_t arena_ops = {
    .alloc = arena_alloc,
    .free = arena_free_op,
    .split = arena_split,
    .untraced = arena_untraced,
    .stride = 1,
};

static inline int do_alloc(struct replay *r, const bh_event_t *ev) {
  return bh__em_alloc(&r->em, &arena_ops, r, ev);
}

/* A page alloc_pages_bulk took (ev->bulk, or an untraced take): allocated as any other, but
 * without rmqueue_pcplist's free_count halving (bh__pcp_free_counts_keep). */
COLD static int bulk_alloc(struct replay *r, const bh_event_t *ev) {
  bh__pcp_free_counts_t k;
  bh__pcp_free_counts_keep(r->arena, ev->cpu, &k);
  int err = do_alloc(r, ev);
  bh__pcp_free_counts_put(r->arena, ev->cpu, &k);
  return err;
}

/* Before the trace's allocation ev: the refilled pages an allocation without an event took
 * from a pcp list's head first (the first pass's takes, lifo_alloc), allocated as the
 * kernel's allocation of them would be: from the head of that CPU's list of their type,
 * under the arena's placement; the page itself under the trace's.  Not counted in the
 * placement agreement (untraced_takes). */
COLD static int untraced_takes(struct replay *r, const bh_event_t *ev) {
  static const unsigned gfp_of[BH_MT_PCPTYPES] = {BH_GFP_KERNEL, BH_GFP_USER_MOVABLE,
                                                  BH_GFP_RECLAIMABLE};
  uint64_t k = r->nallocs++;
  int err = 0;
  r->taking = true;
  for (; !err && r->takes_next < r->ntakes && r->takes[r->takes_next].before == k;
       r->takes_next++) {
    const struct untraced_take *x = &r->takes[r->takes_next];
    bh_event_t take = {.time_ns = ev->time_ns,
                       .pfn = x->pfn,
                       .op = BH_EV_ALLOC,
                       .order = 0,
                       .cpu = x->cpu,
                       .gfp = gfp_of[x->mt],
                       .migratetype = (int8_t)x->mt};
    err = bulk_alloc(r, &take);
    r->s->untraced_takes++;
  }
  r->taking = false;
  return err;
}

/* The waiting frees without those played (one CPU's waiting may hold the ring's head while
 * another's batches come and go).  Whether there is room then. */
COLD static bool pending_compact(struct replay *r) {
  unsigned n = 0;
  for (unsigned i = 0; i < r->pend_n; i++) {
    const bh_event_t *p = &r->pend[(r->pend_head + i) % PEND_MAX];
    if (p->pfn != UINT64_MAX)
      r->pend[(r->pend_head + n++) % PEND_MAX] = *p;
  }
  r->pend_n = n;
  return n < PEND_MAX;
}

/* Whether this mm_page_free is one an allocation without an event followed (the first pass's
 * untraced list): the block stays allocated, as the kernel's was right after; or one of a
 * batch (the batched list): it waits in pend[] for its mm_page_free_batched.  Else whether it
 * is one made under its CPU's pcp lock (the first pass's locked list): r->free_locked. */
static bool listed_free(struct replay *r, const bh_event_t *ev) {
  uint64_t k = r->nfrees++;
  if (r->untraced_next < r->nuntraced && r->untraced[r->untraced_next] == k) {
    r->untraced_next++;
    r->s->untraced_allocs++;
    return true;
  }
  if (r->locked_next < r->nlocked && r->locked[r->locked_next] == k) {
    r->locked_next++;
    r->s->locked_frees++;
    r->free_locked = true;
  }
  while (r->batched_next < r->nbatched && r->batched[r->batched_next] < k)
    r->batched_next++;
  if (r->batched_next < r->nbatched && r->batched[r->batched_next] == k && !r->free_locked &&
      (r->pend_n < PEND_MAX || pending_compact(r))) { /* played at its mm_page_free_batched */
    r->batched_next++;
    r->pend[(r->pend_head + r->pend_n++) % PEND_MAX] = *ev;
    return true;
  }
  return false;
}

static inline void free_block(struct replay *r, const bh_event_t *ev) {
  bh__em_free_block(&r->em, &arena_ops, r, ev);
  r->free_locked = false;
  if (bh__unlikely(r->rm.kfree != NULL))
    bh__rm_kfree_mark(&r->rm, ev->pfn, ev->order, true);
}

/* An mm_page_free_batched: the free of its page waiting for it, if any, now (on this CPU's
 * list, as free_unref_page_commit puts it). */
static bool pending_free(struct replay *r, const bh_event_t *ev) {
  for (unsigned i = 0; i < r->pend_n; i++) {
    bh_event_t *p = &r->pend[(r->pend_head + i) % PEND_MAX];
    if (p->pfn != ev->pfn)
      continue;
    bh_event_t f = *p;
    p->pfn = UINT64_MAX;
    while (r->pend_n && r->pend[r->pend_head].pfn == UINT64_MAX) {
      r->pend_head = (r->pend_head + 1) % PEND_MAX;
      r->pend_n--;
    }
    f.cpu = ev->cpu;
    f.time_ns = ev->time_ns;
    r->s->batched_frees_deferred++;
    bh__em_batched_repeat(&r->em, ev); /* the mm_page_free's twin: consumed */
    free_block(r, &f);
    return true;
  }
  return false;
}

static inline void do_free(struct replay *r, const bh_event_t *ev) {
  if (bh__unlikely(r->pend_n) && ev->op == BH_EV_FREE_BATCHED && pending_free(r, ev))
    return;
  if (bh__em_batched_repeat(&r->em, ev))
    return;
  if (ev->op == BH_EV_FREE && (r->untraced || r->locked || r->batched) && listed_free(r, ev))
    return;
  free_block(r, ev);
}

/* ---- the run ---- */

/* --reports: one line per reported block, on the trace's clock (t0 + virtual time; against
 * the wall clock, the time elapsed at the replay's speed). */
static void on_report(void *ctx, const bh_report_range_t *ranges, size_t n) {
  struct replay *r = ctx;
  uint64_t vt = r->cfg->speed > 0 ? (uint64_t)(secs_since(&r->wall0) * r->cfg->speed * 1e9)
                                  : bh_hint_now(r->hint);
  double t = (double)(r->t0 + vt) / 1e9;
  const char *fmt = r->cfg->reports_hex ? "%.6f,0x%lx,%u\n" : "%.6f,%lu,%u\n";
  for (size_t i = 0; i < n; i++)
    fprintf(r->cfg->reports, fmt, t, (unsigned long)ranges[i].pfn, ranges[i].order);
}

/*
 * The map from recorded pfn to arena block.  With a first pass, directly indexed over the
 * range of pfns it saw allocated when that would take no more memory than the hash map's
 * 24-byte slots: the 16-pfn groups where the first pass saw blocks start get 8-byte cells,
 * and the directory takes 4 bytes per 16 pfns of the range (without a count of the groups,
 * every group of the range is counted).  So a trace that keeps its memory in one place (a
 * memhog, a guest's own range) pays 8 bytes per page it uses where the hash map took two to
 * four 24-byte slots per block, and one whose pages lie scattered over a wide range pays for
 * the groups it uses.
 * A cell holds a 32-bit arena pfn, so an arena of 2^32 pages or more keeps the hash map.
 * Otherwise the hash map, as large as the most blocks live at once need (no rehashing on the
 * way), or small.
 */
static int map_init(struct replay *r, const struct scan *sc) {
  uint64_t cap = sc->map_cap > 1024 ? sc->map_cap : 1024, slots = 1024;
  while (slots < cap * 2)
    slots <<= 1;
  uint64_t lo = sc->pfn_lo & ~(uint64_t)(BH__PFN_GROUP - 1); /* groups aligned as counted */
  uint64_t span = sc->pfn_hi > lo ? sc->pfn_hi - lo : 0;
  uint64_t groups = sc->groups ? sc->groups : (span + BH__PFN_GROUP - 1) / BH__PFN_GROUP;
  uint64_t max_val = r->nr_pages - 1;
  if (sc->map_cap && span && span < (1ull << 31) && max_val <= UINT32_MAX &&
      groups * BH__PFN_GROUP * sizeof(bh__pfn_cell_t) + span / BH__PFN_GROUP * sizeof(uint32_t) <=
          slots * sizeof(bh__pfn_entry_t))
    return bh__pfnmap_init_dense(&r->em.map, 1024, lo, span, max_val) ? BH_ENOMEM : BH_OK;
  return bh__pfnmap_init(&r->em.map, cap) ? BH_ENOMEM : BH_OK;
}

/*
 * A recorded guest's page reporting ran at its page_reporting_order
 * (/sys/module/page_reporting/parameters/page_reporting_order, in the description): a
 * strategy that is the kernel's page reporting (BH_STRATEGY_PAGE_REPORTED) takes it unless
 * its order option gives one, through hc's options (a copy with it added, *opts, freed by the
 * caller after the attach; buf holds its value).  Notes which in the summary.  0 or BH_ENOMEM.
 */
static int reporting_order(struct replay *r, bh_hint_config_t *hc, bh_opt_t **opts, char *buf,
                           size_t len) {
  const bh_strategy_ops_t *ops = bh_strategy_find(hc->strategy ? hc->strategy : "none");
  r->s->reporting_order = -1;
  r->s->reporting_order_source[0] = '\0';
  if (!ops || !(ops->flags & BH_STRATEGY_PAGE_REPORTED) || (hc->nopts && !hc->opts))
    return 0; /* (no options with a count: the attach refuses them) */
  const char *given = NULL;
  for (size_t i = 0; i < hc->nopts; i++)
    if (hc->opts[i].key && !strcmp(hc->opts[i].key, "order"))
      given = hc->opts[i].value;
  int recorded = r->shape && r->rm.m ? bh_machine_info(r->rm.m)->page_reporting_order : -1;
  const char *source = given ? "option" : recorded >= 0 ? "recorded" : "default";
  snprintf(r->s->reporting_order_source, sizeof(r->s->reporting_order_source), "%s", source);
  r->s->reporting_order = given           ? atoi(given)
                          : recorded >= 0 ? recorded
                                          : (int)bh_arena_pageblock_order(r->arena);
  if (given || recorded < 0)
    return 0;
  *opts = malloc((hc->nopts + 1) * sizeof(**opts));
  if (!*opts)
    return BH_ENOMEM;
  if (hc->nopts)
    memcpy(*opts, hc->opts, hc->nopts * sizeof(**opts));
  snprintf(buf, len, "%d", recorded);
  (*opts)[hc->nopts] = (bh_opt_t){"order", buf};
  hc->opts = *opts;
  hc->nopts++;
  return 0;
}

/*
 * The recorded kernel's timer wheel, for the hinting clock (bh__hint_set_wheel): a delayed
 * work of 63 to 503 ticks, page reporting's 2 s among them, fires on a tick whose jiffies are
 * a multiple of 8 (kernel/time/timer.c:567-619 in 6.12).  The vmstat worker's runs say where
 * those ticks fall on the trace's clock: its own delayed work is such a timer (about one
 * second, round_jiffies_relative in vmstat_update), so on a CPU that is not idle it runs just
 * after one (an idle CPU's, deferrable, waits for any later tick).  Of the runs' times modulo
 * 8 ticks, the tick-long window that holds the most starts at the first of them: the wheel's
 * phase.  Needs the kernel's HZ (the machine's, or cfg->kernel_hz), 8 runs, and a quarter of
 * them in that window; else delays stay exact.
 */
static void pass_timer(struct replay *r, const struct scan *sc) {
  bh_replay_summary_t *s = r->s;
  snprintf(s->pass_timer, sizeof(s->pass_timer), "exact");
  unsigned hz = r->cfg->kernel_hz;
  if (!hz && r->rm.m)
    hz = bh_machine_info(r->rm.m)->hz;
  if (r->cfg->pass_timer_exact || !hz || !r->hint || sc->nvmstat_times < 8)
    return;
  uint64_t tick = 1000000000ull / hz, g = 8 * tick;
  size_t n = sc->nvmstat_times;
  uint64_t *v = malloc(n * sizeof(*v));
  if (!v)
    return;
  for (size_t i = 0; i < n; i++)
    v[i] = sc->vmstat_times[i] % g;
  qsort(v, n, sizeof(*v), cmp_u64);
  size_t best = 0, at = 0;
  for (size_t i = 0, j = 0; i < n; i++) { /* [v[i], v[i] + tick), around the circle */
    while (j < i + n && (v[j % n] + (j >= n ? g : 0)) - v[i] < tick)
      j++;
    if (j - i > best) {
      best = j - i;
      at = i;
    }
  }
  double share = (double)best / (double)n;
  uint64_t phase = v[at];
  free(v);
  if (share < 0.25)
    return;
  /* a tick on the hinting clock (0 = the trace's first event) with jiffies a multiple of 8 */
  int64_t align = (int64_t)phase - (int64_t)(sc->first % g);
  bh__hint_set_wheel(r->hint, tick, align);
  snprintf(s->pass_timer, sizeof(s->pass_timer), "wheel");
  s->pass_timer_hz = hz;
  s->pass_timer_share = share;
}

/*
 * r->take_rank from the first pass's takes (bh__first_events_t.takes): the start's free blocks
 * in the order the kernel first took them, which the start state gives their lists
 * (docs/MACHINE-SHAPE.md) and the core keeps through a hinting strategy's put-backs
 * (bh__take_rank_set).  None without the takes.  0 or BH_ENOMEM.
 */
static int take_ranks(struct replay *r) {
  const bh__first_events_t *f = &r->rm.fe;
  if (!f->takes || f->takes_lost || !f->nr_takes || f->nr_takes >= UINT32_MAX || !f->nr_pages)
    return 0;
  r->take_rank = calloc(f->nr_pages, sizeof(*r->take_rank));
  if (!r->take_rank)
    return BH_ENOMEM;
  r->take_rank_n = f->nr_pages;
  for (size_t i = f->nr_takes; i-- > 0;) {
    uint64_t p = bh__take_pfn(f->takes[i]);
    if (p < f->nr_pages)
      r->take_rank[p] = (uint32_t)(i + 1);
  }
  return 0;
}

static int setup(struct replay *r, const struct scan *sc) {
  const bh_replay_config_t *cfg = r->cfg;
  bh_config_t ac = cfg->arena;
  uint64_t mem = cfg->memory_bytes;
  if (!mem)
    mem = (sc->peak << BH_PAGE_SHIFT) + (sc->peak << BH_PAGE_SHIFT) / 4 + (64ull << 20);
  if (r->shape) { /* the machine's own layout: --memory does not apply */
    int e = bh__rm_configure(&r->rm, &ac, r->err, r->errlen);
    if (e)
      return e;
    if (cfg->pcp_high_tuning >= 0)
      ac.pcp_high_tuning = cfg->pcp_high_tuning;
    if (cfg->pcp_free_high_raised >= 0)
      ac.pcp_free_high_raised = cfg->pcp_free_high_raised;
    mem = bh__rm_pages(&r->rm) << BH_PAGE_SHIFT;
  } else {
    bh_replay_zone_layout(&ac, mem);
  }
  r->s->pcp_high_tuned = ac.pcp_high_tuning && ac.pcp;
  r->s->pcp_free_high_raised = ac.pcp_free_high_raised && ac.pcp;
  r->s->untraced_lists = lists_followed(r);
  r->s->start_order_pfn = cfg->start_order_pfn;
  r->s->start_pcp_trace = cfg->start_pcp_trace;
  r->s->start_reported_all = cfg->start_reported_all;
  /* on the virtual clock only this thread touches the arena: no locks, as CONFIG_SMP=n */
  ac.smp = cfg->speed > 0;
  if (!ac.nr_cpus) /* one pcp slot per CPU seen in the trace */
    ac.nr_cpus = sc->max_cpu + 1 > 1024 ? 1024 : sc->max_cpu + 1;
  const char *why;
  if (bh_config_validate(&ac, &why)) {
    set_err(r, "arena: %s", why);
    return BH_EINVAL;
  }
  int err = bh_arena_create(&ac, &r->arena);
  if (err) {
    set_err(r, "cannot create a %lu MiB arena: %s", (unsigned long)(mem >> 20), bh_strerror(err));
    return err;
  }
  const bh_config_t *made = bh_arena_config(r->arena);
  if (r->shape && made->pcp_high_tuning && !made->pcp_high && !bh__rm_high_max_printed(&r->rm))
    bh__pcp_high_max_unknown(r->arena); /* the cap, zoneinfo's high_max, is the arena's guess */
  r->nr_pages = bh_arena_pages(r->arena);
  r->nr_cpus = made->nr_cpus;
  r->sim = made->backing == BH_BACKING_SIM;
  r->base = bh_arena_base(r->arena);
  r->discarded = bh__discard_map(r->arena);
  r->max_order = bh_arena_max_order(r->arena);
  r->em.s = r->s;
  r->em.max_order = r->max_order;
  if (r->shape) { /* the start state, before hinting is attached */
    r->rm.fe.pfn_order = cfg->start_order_pfn;
    r->rm.fe.pcp_trace_only = cfg->start_pcp_trace;
    if (!cfg->start_order_pfn && take_ranks(r))
      return BH_ENOMEM;
    err = bh__rm_populate(&r->rm, r->arena, bh__pcp_orders(r->arena), ac.seed, r->s, r->err,
                          r->errlen);
    if (err)
      return err;
    long long boot_kb = bh__rm_boot_freed_kb(&r->rm);
    if (boot_kb >= 0) /* the cap as the recorded kernel set it, where zoneinfo does not say */
      bh__pcp_boot_cap(r->arena, (uint64_t)boot_kb >> (BH_PAGE_SHIFT - 10));
    bh__take_rank_set(r->arena, r->take_rank, r->take_rank_n);
    r->place_trace = cfg->placement == BH_PLACEMENT_TRACE;
    r->pcp_trace = r->place_trace && sc->pcp_events;
    if (r->pcp_trace && mark_start_pcp(r))
      return BH_ENOMEM;
    r->agree = !r->place_trace && r->rm.start != BH__START_EMPTY;
    r->s->agreement.present = r->agree;
    if (r->agree) {
      uint64_t keys =
          (uint64_t)bh_zone_count(r->arena) * r->nr_cpus * (BH_ORDER_LIMIT + 1) * BH_MT_TYPES;
      r->first_miss = calloc((keys + 63) / 64, sizeof(uint64_t)); /* NULL: not counted */
    }
    const bh_snapshot_t *snap = bh_machine_snapshot(r->rm.m, BH_SNAP_START);
    if (r->rm.start != BH__START_EMPTY && snap)
      r->window_end = snap->window_end_ns;
  }
  bh_hint_config_t hc = cfg->hint;
  if (cfg->speed > 0)
    hc.clock = BH_CLOCK_THREAD;
  /* a recorded machine's reporting was registered when it booted: no initial flush now */
  hc.registered_at_boot = r->shape && r->rm.start != BH__START_EMPTY;
  bh_opt_t *opts = NULL;
  char order[16];
  if ((err = reporting_order(r, &hc, &opts, order, sizeof(order))) != 0)
    return err;
  err = bh_hint_attach(r->arena, &hc, &r->hint);
  free(opts);
  if (err) {
    set_err(r, "strategy '%s': %s", hc.strategy ? hc.strategy : "none",
            bh_hint_last_error()[0] ? bh_hint_last_error() : bh_strerror(err));
    return err;
  }
  if (r->shape) {
    bool marks = bh_hint_strategy(r->hint)->flags & BH_STRATEGY_PAGE_REPORTED;
    bh__rm_start_reported(&r->rm, r->arena, marks, r->s);
    if (cfg->start_reported_all && r->rm.start != BH__START_EMPTY &&
        bh__rm_start_reported_all(r->arena, marks, r->s)) {
      set_err(r, "--start-reported all: out of memory");
      return BH_ENOMEM;
    }
  }
  pass_timer(r, sc);
  /* a recorded machine's reporting has a pass pending for the unreported free blocks only a
   * free can have made, of those the start map shows free */
  if (hc.registered_at_boot && (bh_hint_strategy(r->hint)->flags & BH_STRATEGY_PAGE_REPORTED)) {
    size_t nfreed = 0;
    bh_block_run_t *freed = bh__rm_window_frees(&r->rm, &nfreed);
    /* requested at the window free that made it, where the free's time is recorded (and
     * delayed work follows the recorded kernel's timer: else the request is taken at the
     * trace's start, as before the times were recorded: docs/START-STATE.md) */
    uint64_t at;
    if (r->hint->wheel_tick && bh__rm_window_request(&r->rm, r->arena, &at))
      bh__hint_request_from(r->hint, BH__REQUEST_AT, (int64_t)at - (int64_t)sc->first);
    else /* a request of unknown time (a smaller free merged up to the order): due 2 s after
          * the start, not rounded to a tick it cannot be placed against */
      bh__hint_request_from(r->hint, BH__REQUEST_UNTIMED, 0);
    bh__notify_unreported(r->arena, r->rm.unseen, r->rm.nr_unseen, freed, nfreed);
    bh__hint_request_from(r->hint, BH__REQUEST_NOW, 0);
    free(freed);
  }
  if (cfg->placements) /* rows only where agreement is counted */
    fprintf(cfg->placements, "trace_time_s,cpu,order,migratetype,kernel_pfn,pfn,where\n");
  if (cfg->reports) {
    fprintf(cfg->reports, "trace_time_s,pfn,order\n");
    r->hint->on_report = on_report;
    r->hint->on_report_ctx = r;
  }
  if (ac.backing == BH_BACKING_SIM) {
    r->touched = calloc((size_t)(r->nr_pages + 63) / 64, sizeof(*r->touched));
    if (!r->touched)
      return BH_ENOMEM;
    bh__discard_set_touched(r->arena, r->touched);
    const char *check = getenv("BH_REPLAY_CHECK_RESIDENT");
    /* against the wall clock the worker marks pages while a recount runs: no exact check */
    r->check_resident = check && *check && strcmp(check, "0") && !(cfg->speed > 0);
    r->touch_sim = cfg->touch != BH_TOUCH_NONE;
  }
  r->s->memory_bytes = r->nr_pages << BH_PAGE_SHIFT;
  r->s->nr_cpus = ac.nr_cpus;
  return map_init(r, sc);
}

static void progress(struct replay *r, uint64_t done, uint64_t total) {
  double el = secs_since(&r->wall0), rate = el > 0 ? (double)done / el : 0;
  if (!total || done > total) { /* one pass: the total is not known */
    fprintf(stderr, "\rreplay: %lu events, %.2f M events/s   ", (unsigned long)done, rate / 1e6);
    return;
  }
  fprintf(stderr, "\rreplay: %lu/%lu events (%.0f%%), %.2f M events/s, ETA %.0f s   ",
          (unsigned long)done, (unsigned long)total, 100.0 * (double)done / (double)total,
          rate / 1e6, rate > 0 ? (double)(total - done) / rate : 0);
}

/*
 * A gap between two events longer than BH_REPLAY_MAX_GAP_NS is cut to that: the clock's
 * origin moves so that the rest of the trace follows the gap's first ten minutes.  By then
 * the workers, the pcp decay and kcompactd have long been idle, and a timestamp far in the
 * future cannot keep the replay ticking for years of virtual time.
 */
COLD static uint64_t shorten_gap(struct replay *r, uint64_t vt) {
  r->t0 += vt - r->vnow - BH_REPLAY_MAX_GAP_NS;
  r->s->gaps_shortened++;
  return r->vnow + BH_REPLAY_MAX_GAP_NS;
}

/*
 * The clock of an event with timestamp time_ns, in general: its virtual time (never back
 * before vnow, a gap cut to BH_REPLAY_MAX_GAP_NS), then advance_to, after waiting for the
 * wall clock when pacing.
 */
COLD static void event_clock_slow(struct replay *r, uint64_t time_ns) {
  if (r->t0 == UINT64_MAX) { /* one pass: time starts at the first event */
    r->t0 = time_ns;
    set_clock_due(r);
  }
  /* timestamps of different CPUs may interleave slightly out of order: never back before
   * vnow (t0 + vnow is at most the latest timestamp seen, no overflow), but counted */
  if (time_ns < r->t0 + r->vnow)
    r->s->time_reversals++;
  uint64_t t = time_ns > r->t0 + r->vnow ? time_ns - r->t0 : r->vnow;
  if (t - r->vnow > BH_REPLAY_MAX_GAP_NS)
    t = shorten_gap(r, t);
  if (nothing_due(r, t)) {
    r->vnow = t;
    bh__hint_clock(r->hint, t);
    return;
  }
  if (r->cfg->speed > 0)
    wait_wall(r, t);
  advance_slow(r, t);
}

/*
 * The clock of an event, for every event: when nothing is due before its virtual time, the
 * clock only moves forward to it.  Nothing due is never more than a second after vnow (the
 * vmstat tick), so such an event is no gap to cut either; a timestamp before t0 wraps to a
 * large vt and takes the general path, as does every event when pacing (clock_due 0).
 */
static inline void event_clock(struct replay *r, uint64_t time_ns) {
  uint64_t vt = time_ns - r->t0, due = r->clock_due, hint_due = bh__hint_next_due(r->hint);
  if (hint_due < due)
    due = hint_due;
  if (bh__likely(vt < due)) {
    if (vt > r->vnow) {
      r->vnow = vt;
      bh__hint_clock(r->hint, vt);
    } else if (bh__unlikely(vt < r->vnow))
      r->s->time_reversals++; /* played at vnow, as the slow path does */
    return;
  }
  event_clock_slow(r, time_ns);
}

/* The event count at which poll() is next due: a multiple of 65536 or of check_every. */
static void set_next_poll(struct replay *r) {
  uint64_t events = r->events, every = r->cfg->check_every;
  r->next_poll = (events | 0xffff) + 1;
  if (every && every - events % every < r->next_poll - events)
    r->next_poll = events + (every - events % every);
}

/* What is due every so many events: the invariant check of --check-every, the resident
 * memory peak and the progress line every 65536 events. */
COLD static void poll(struct replay *r) {
  uint64_t events = r->events, every = r->cfg->check_every;
  if (every && events % every == 0)
    check(r);
  if ((events & 0xffff) == 0) {
    uint64_t res = resident_bytes(r);
    if (res > r->s->rss_peak_bytes)
      r->s->rss_peak_bytes = res;
    if (r->progress)
      progress(r, events, r->total_events);
  }
  set_next_poll(r);
}

/* Why a pcp event did not apply, by where the replay holds its block (bh_replay_pcp_cause). */
static int pcp_miss_cause(bool drain, enum bh__pcp_at where) {
  switch (where) {
  case BH__PCPAT_PRETRACE:
    return drain ? BH_PCP_MISS_drain_start_state : BH_PCP_MISS_refill_start_state;
  case BH__PCPAT_ALLOC:
    return drain ? BH_PCP_MISS_drain_allocated : BH_PCP_MISS_refill_allocated;
  case BH__PCPAT_BUDDY: /* a refill of a free block applies */
    return BH_PCP_MISS_drain_free;
  case BH__PCPAT_ISOLATED: /* free, taken off the lists by the replay's hinting */
    return drain ? BH_PCP_MISS_drain_free : BH_PCP_MISS_isolated;
  case BH__PCPAT_SPLIT:
  case BH__PCPAT_PCP: /* a drain of a block on a pcp list applies; a refill relists it */
    return drain ? BH_PCP_MISS_drain_split : BH_PCP_MISS_refill_split;
  default:
    return BH_PCP_MISS_invalid;
  }
}

/*
 * A refill of a piece of a block the replay holds on a pcp list at a larger order: the kernel
 * had freed that block past its pcp lists into the free lists, as free_unref_page and
 * free_unref_folios do when the CPU's pcp lock is taken (an interrupt freeing on a CPU whose
 * task holds it: mm/page_alloc.c:2761-2766 and :2840-2845 in 6.12), which no event shows, and
 * the refill split it.  The block goes to the free lists (a drain's way in, __free_one_page,
 * as free_one_page's; counted with the drains) and the refill is applied again.  Whether it
 * applied.
 */
static bool refill_piece(struct replay *r, const bh_event_t *ev) {
  for (unsigned o = ev->order + 1; o <= r->max_order; o++) {
    uint64_t head = ev->pfn & ~((1ull << o) - 1);
    int cpu;
    if (bh__pcp_block_where(r->arena, head, o, &cpu) != BH__PCPAT_PCP)
      continue;
    take_start_pcp(r, head);
    return bh__pcp_drain_at(r->arena, head, o) == BH_OK &&
           bh__pcp_refill_at(r->arena, ev->pfn, ev->order, ev->migratetype, ev->cpu) == BH_OK;
  }
  return false;
}

/*
 * A pcp event.  Under allocator placement only a refill counts, as the moment its CPU's list
 * was empty: bh__pcp_refill_empty refills it there with the arena's own blocks, before the
 * allocation that the kernel traces after zeroing its pages (--pcp-refill event, in the
 * recorded machine's layout).  Under --placement trace a refill moves the recorded block from
 * the free lists to the CPU's pcp list, a drain moves it back.  A zone_locked event without
 * percpu_refill, and one for a block that an allocation takes at once (rmqueue_buddy), need
 * nothing: the allocation's bh_alloc_pfn_at takes the block from a pcp list as well as from the
 * free lists. A refill of a block the replay holds on a pcp list moves it to the refilling CPU's
 * list: the kernel freed it to its free lists past the pcp lists (free_unref_page's free_one_page
 * when the pcp lock is taken, Linux 6.12 mm/page_alloc.c:2763, and free_unref_folios), which its
 * mm_page_free does not say.  An event that does not apply is counted by cause (what the replay
 * holds there).
 */
COLD static void pcp_event(struct replay *r, const bh_event_t *ev) {
  bh_replay_summary_t *s = r->s;
  if (!r->place_trace) { /* allocator placement: a refill is the moment a list was empty */
    if (r->refill_at_event && ev->op == BH_EV_ALLOC_ZONE_LOCKED && ev->percpu_refill &&
        bh__pcp_refill_empty(r->arena, ev->pfn, ev->order, ev->migratetype, ev->cpu) > 0)
      s->pcp_refills_at_event++;
    return;
  }
  r->pcp_trace = true;
  bool drain = ev->op == BH_EV_PCPU_DRAIN;
  int rc;
  if (drain) {
    rc = bh__pcp_drain_at(r->arena, ev->pfn, ev->order);
  } else if (ev->percpu_refill) {
    rc = bh__pcp_refill_at(r->arena, ev->pfn, ev->order, ev->migratetype, ev->cpu);
  } else {
    s->pcp_events_direct++;
    return;
  }
  int cpu = -1;
  enum bh__pcp_at where =
      rc == BH_OK ? BH__PCPAT_PCP : bh__pcp_block_where(r->arena, ev->pfn, ev->order, &cpu);
  if (rc != BH_OK && !drain && where == BH__PCPAT_PCP &&
      bh__pcp_relist_at(r->arena, ev->pfn, ev->order, ev->migratetype, ev->cpu) == BH_OK) {
    s->pcp_refills_relisted++;
    s->pcp_refills_relisted_start += take_start_pcp(r, ev->pfn);
    rc = BH_OK;
  }
  if (rc != BH_OK && !drain && where == BH__PCPAT_SPLIT && refill_piece(r, ev)) {
    s->pcp_refills_relisted++;
    rc = BH_OK;
  }
  if (rc != BH_OK && drain && where == BH__PCPAT_PRETRACE &&
      bh__pcp_adopt_at(r->arena, ev->pfn, ev->order, ev->migratetype, ev->cpu) == BH_OK &&
      bh__pcp_drain_at(r->arena, ev->pfn, ev->order) == BH_OK) {
    s->pcp_drains_adopted++; /* on a pcp list at the start, which the start did not know */
    rc = BH_OK;
  }
  if (rc != BH_OK && !drain && where == BH__PCPAT_PRETRACE && ev->time_ns <= r->window_end &&
      bh__pcp_adopt_at(r->arena, ev->pfn, ev->order, ev->migratetype, ev->cpu) == BH_OK) {
    s->window_events++; /* refilled while the free map was read, which saw it taken */
    rc = BH_OK;
  }
  if (rc == BH_OK) {
    if (!drain)
      take_start_pcp(r, ev->pfn); /* on a pcp list now by the trace's own event */
    s->pcp_events_applied++;
    return;
  }
  s->pcp_events_missed++;
  s->pcp_drains_missed += drain;
  int cause = pcp_miss_cause(drain, where);
  if (cause == BH_PCP_MISS_drain_free && ev->time_ns <= r->window_end)
    cause = BH_PCP_MISS_window; /* the free map, read after it, holds the block free */
  s->pcp_missed_by_cause[cause]++;
}

/*
 * A fallback (mm_page_alloc_extfrag).  Under --placement trace a claim retypes the pageblock
 * (every pageblock of a block of pageblock order or more) to the allocation's migratetype and
 * moves its free blocks to that type's lists, as try_to_steal_block did in the kernel (Linux
 * 6.12 mm/page_alloc.c:1973-1980, :2021-2024).  A claim below pageblock order took its block
 * with __rmqueue_smallest, whose zone_locked event came first (and moved it to a pcp list if
 * it was a refill); a steal, or a claim of a larger block, fires no zone_locked event, so a
 * block whose order and migratetype the pcp lists take goes to the CPU's pcp list here, as a
 * zone_locked event with percpu_refill would put it: the allocation that follows takes it
 * from there, as from the free lists.  Under allocator placement the arena makes its own
 * fallbacks: the event is only counted.
 */
COLD static void extfrag_event(struct replay *r, const bh_event_t *ev) {
  bh_replay_summary_t *s = r->s;
  if (!r->place_trace) {
    s->extfrag_events_ignored++;
    return;
  }
  bh_arena_t *a = r->arena;
  bool claim = ev->change_ownership;
  int rc = BH_OK;
  if (claim) {
    rc = bh__claim_block_at(a, ev->pfn, ev->fallback_order, ev->migratetype);
    if (rc >= 0) {
      s->extfrag_pageblocks_retyped += (uint64_t)rc;
      rc = BH_OK;
    }
  }
  if (rc == BH_OK && (!claim || ev->fallback_order >= bh_arena_pageblock_order(a)) &&
      ev->migratetype >= 0 && ev->migratetype < BH_MT_PCPTYPES && bh__pcp_order(a, ev->order)) {
    rc = bh__pcp_refill_at(a, ev->pfn, ev->order, ev->migratetype, ev->cpu);
    int cpu = -1;
    if (rc != BH_OK && bh__pcp_block_where(a, ev->pfn, ev->order, &cpu) == BH__PCPAT_PCP)
      rc = bh__pcp_relist_at(a, ev->pfn, ev->order, ev->migratetype, ev->cpu);
    if (rc == BH_OK) {
      s->extfrag_refills++;
      take_start_pcp(r, ev->pfn);
    }
  }
  if (rc == BH_OK) {
    bh__count_fallback_at(a, ev->pfn, ev->fallback_order, claim);
    s->extfrag_events_applied++;
    s->extfrag_claims_applied += claim;
  } else {
    s->extfrag_events_missed++;
  }
}

/*
 * The vmstat worker ran on the event's CPU: its pcp decay (the kernel's deferrable work runs
 * where the CPU is awake, mm/vmstat.c:2003-2015, :2120 in 6.12), after the work due by its
 * time (no page event: it counts as none, and moves the clock only inside the page events'
 * span); with the pcp events applied, the trace's drains are the decay's.
 */
COLD static void vmstat_event(struct replay *r, const bh_event_t *ev) {
  if (!r->vmstat_trace || r->pcp_trace)
    return;
  /* work due by the run's time (a reporting pass, a sample) ran before it: its order against
   * the decay's drain decides what a pass finds merged.  Within the page events' span and no
   * gap to cut, so that the clock's span and cuts stay those of the trace without the runs. */
  if (r->t0 != UINT64_MAX && ev->time_ns > r->t0 + r->vnow && ev->time_ns <= r->last_page &&
      ev->time_ns - (r->t0 + r->vnow) <= BH_REPLAY_MAX_GAP_NS)
    event_clock(r, ev->time_ns);
  unsigned c = ev->cpu < 0 ? 0 : (unsigned)ev->cpu;
  const struct decay_first *d = c < LIFO_CPUS ? &r->decay[c] : NULL;
  if (d && d->at && ev->time_ns == d->at) /* its first drain */
    bh__pcp_decay_first(r->arena, (int)c, d->lo, d->hi, d->pages);
  const struct decay_first *k = c < LIFO_CPUS ? &r->check[c] : NULL;
  if (k && k->at && ev->time_ns == k->at) /* its first decay after its mark was lowered */
    bh__pcp_decay_check(r->arena, (int)c, k->lo, k->hi, k->pages);
  bh__vmstat_tick_cpu(r->arena, ev->cpu);
}

/*
 * The start's pcp count against the trace's first drains.  zoneinfo's count of a CPU's pcp
 * pages is read before the trace begins, and the events between are recorded only in part;
 * the start state places that many pages (the hidden ones beyond those the trace shows).  The
 * trace's first drain on a CPU shows when its count first reached the high mark: until then
 * every free left it below (free_unref_page_commit drains at count >= high,
 * mm/page_alloc.c:2713-2717 in 6.12).  Where a replay's free reaches the mark before, the
 * start held too many: hidden pages are taken off (bh__pcp_calibrating).  Where the free that
 * drain directly follows leaves the replay's count below the mark, the mark is lowered to it
 * (bh__pcp_deficit).  A drain after a THP's free says only that the mark lay within that
 * block's 512 pages: until its first drain after an order-0 free a CPU goes on calibrating,
 * its frees a drain follows (drain_frees) let drain, the mark lowered where the replay's
 * would not, every other kept below it.  Allocator placement only, where the trace has pcp
 * events and the start's pcp lists come from zoneinfo: with hidden pages or without, for
 * zoneinfo's mark may be off from the kernel's at the trace's first drain all the same.
 */
COLD static void calibrate_setup(struct replay *r, const struct scan *sc) {
  r->calib_live = r->shape && !r->place_trace && sc->pcp_events && !r->s->start_pcp_trace;
  memcpy(r->calib_until, sc->calib_until, sizeof(r->calib_until));
  memcpy(r->decay, sc->decay, sizeof(r->decay));
  memcpy(r->check, sc->check, sizeof(r->check));
  for (unsigned k = 0; !r->calib_live && k < LIFO_CPUS; k++)
    r->decay[k].at = r->check[k].at = 0;
  for (unsigned k = 0; k < LIFO_CPUS; k++)
    if (!r->check[k].pages) /* the last vmstat run seen had no drain after it */
      r->check[k].at = 0;
  r->drain_frees = r->calib_live ? sc->drain_frees : NULL;
  r->ndrain_frees = r->calib_live ? sc->ndrain_frees : 0;
  r->drain_frees_next = 0;
  /* a CPU calibrates until its first drain or, if later, its last drain-free */
  for (size_t i = 0; i < r->ndrain_frees; i++) {
    unsigned k = r->drain_frees[i].cpu;
    if (r->drain_frees[i].time > r->calib_until[k])
      r->calib_until[k] = r->drain_frees[i].time;
  }
  r->calib_on = r->calib_last = r->deficit_on = 0;
  for (unsigned k = 0; k < r->nr_cpus && k < LIFO_CPUS; k++)
    r->calib_last = r->calib_until[k] > r->calib_last ? r->calib_until[k] : r->calib_last;
}

/* Before a page event of CPU ev->cpu: whether that CPU calibrates now, switched in the arena
 * where it changes; once every CPU's first drain has passed, no more. */
COLD static void calibrate_at(struct replay *r, const bh_event_t *ev) {
  for (unsigned k = 0; r->deficit_on; k++) /* the last event's switch is spent */
    if ((r->deficit_on >> k) & 1) {
      bh__pcp_deficit(r->arena, (int)k, false);
      r->deficit_on &= ~(1ull << k);
    }
  unsigned c = ev->cpu < 0 ? 0 : (unsigned)ev->cpu;
  if (c >= LIFO_CPUS || c >= r->nr_cpus)
    return;
  bool drain_free = false; /* a free the kernel's drain directly follows (drain_frees) */
  while (r->drain_frees_next < r->ndrain_frees &&
         r->drain_frees[r->drain_frees_next].time < ev->time_ns)
    r->drain_frees_next++;
  for (size_t i = r->drain_frees_next;
       i < r->ndrain_frees && r->drain_frees[i].time == ev->time_ns && !drain_free; i++)
    drain_free = r->drain_frees[i].cpu == c;
  drain_free &= ev->op == BH_EV_FREE || ev->op == BH_EV_FREE_BATCHED;
  bool on = ev->time_ns < r->calib_until[c] && !drain_free;
  if (on != ((r->calib_on >> c) & 1)) {
    bh__pcp_calibrating(r->arena, (int)c, on);
    r->calib_on ^= 1ull << c;
  }
  if (drain_free) {
    bh__pcp_deficit(r->arena, (int)c, true); /* the free a kernel's drain follows */
    r->deficit_on |= 1ull << c;
  }
  /* a CPU may calibrate yet, or a switch is to be spent */
  r->calib_live = r->calib_on || r->deficit_on || ev->time_ns < r->calib_last;
}

/* A moment ends (bh_replay_drains_t): counted where the kernel or the replay drained. */
COLD static void drains_close(struct replay *r, unsigned c) {
  struct drain_moment *d = &r->moment[c];
  bh_replay_drains_t *g = &r->s->drains;
  d->open = false;
  g->kernel += d->kernel != 0;
  g->replay += d->replay != 0;
  if (d->kernel == d->replay) {
    g->same += d->kernel != 0;
    return;
  }
  if (g->first_time_s < 0) {
    g->first_time_s = (double)d->time_ns / 1e9;
    g->first_cpu = (int)c;
    g->first_kernel_pages = d->kernel;
    g->first_replay_pages = d->replay;
  }
}

/* An event of CPU c, played: a drain event adds to the kernel's side of c's open moment; any
 * other ends it and opens the next, with the pages the replay drained while playing it (the
 * arena's drained pages since the event before: nothing else moves them between events). */
static inline void drains_event(struct replay *r, const bh_event_t *ev) {
  uint64_t now = bh__pcp_drained_pages(r->arena), drained = now - r->drained_seen;
  unsigned c = ev->cpu < 0 ? 0 : (unsigned)ev->cpu;
  r->drained_seen = now;
  if (c >= LIFO_CPUS)
    return;
  struct drain_moment *d = &r->moment[c];
  if (ev->op == BH_EV_PCPU_DRAIN) {
    if (!d->open) /* after an event of another kind's moment was closed: its own */
      *d = (struct drain_moment){.time_ns = ev->time_ns, .open = true};
    d->kernel += 1ull << ev->order;
    return;
  }
  if (d->open)
    drains_close(r, c);
  *d = (struct drain_moment){.time_ns = ev->time_ns, .replay = drained, .open = true};
}

/* The trace's end: every open moment ends. */
COLD static void drains_end(struct replay *r) {
  for (unsigned c = 0; r->drains_on && c < LIFO_CPUS; c++)
    if (r->moment[c].open)
      drains_close(r, c);
}

/*
 * One event: the clock first (worker steps, ticks, samples due before the event), then the
 * event.  Everything that is not needed for every event is behind one comparison (clock_due,
 * next_poll): this is most of a replay's time outside the allocator.  Inlined into both
 * loops of each_event, where a decoded record is a local the compiler keeps in registers.
 */
static inline __attribute__((always_inline)) int play_one(struct replay *r, const bh_event_t *ev) {
  if (bh__unlikely(ev->op == BH_EV_VMSTAT)) {
    vmstat_event(r, ev);
    return 0;
  }
  if (bh__unlikely(r->take_rank != NULL) && ev->pfn < r->take_rank_n)
    r->take_rank[ev->pfn] = 0; /* touched: where it lies no longer follows the start's order */
  if (bh__unlikely(r->calib_live))
    calibrate_at(r, ev);
  event_clock(r, ev->time_ns);
  r->events++;
  if (ev->op == BH_EV_ALLOC) {
    int err = bh__unlikely(r->takes != NULL) ? untraced_takes(r, ev) : 0;
    if (!err)
      err = bh__likely(!ev->bulk) ? do_alloc(r, ev) : bulk_alloc(r, ev);
    if (bh__unlikely(err))
      return err;
  } else if (bh__likely(ev->op <= BH_EV_FREE_BATCHED)) {
    do_free(r, ev);
  } else if (ev->op == BH_EV_EXTFRAG) {
    extfrag_event(r, ev);
  } else {
    pcp_event(r, ev);
  }
  if (bh__unlikely(r->events == r->next_poll))
    poll(r);
  return 0;
}

/* One event with the drains compared (drains_event). */
__attribute__((noinline)) static int play_compared(struct replay *r, const bh_event_t *ev) {
  int err = play_one(r, ev);
  drains_event(r, ev);
  return err;
}

static inline __attribute__((always_inline)) int play_event(void *ctx, const bh_event_t *ev) {
  struct replay *r = ctx;
  return bh__likely(!r->drains_on) ? play_one(r, ev) : play_compared(r, ev);
}

/* The next events of t, played: how many, 0 at the end, or a negative BH_E* code. */
__attribute__((noinline)) static int play_some(struct replay *r, bh_trace_t *t, bh_event_t *evs,
                                               int max) {
  return each_event(t, evs, max, play_event, r);
}

/*
 * The next events of t with --by: through bh_trace_next_batch, where the reader fills in
 * every event's origin (binary records read in place have none).  A loop of its own, so that
 * play_some stays as it is.
 */
__attribute__((noinline)) static int play_some_origins(struct replay *r, bh_trace_t *t,
                                                       bh_event_t *evs, int max) {
  int n = bh_trace_next_batch(t, evs, max);
  for (int k = 0; k < n; k++) {
    int err = play_event(r, &evs[k]);
    if (bh__unlikely(err))
      return err;
  }
  return n;
}

/* The events the first pass kept, played in order: those in the spill file a block at a time,
 * then those in memory. */
static int play_kept(struct replay *r, const struct kept_event *k, uint64_t n);
static int play_all_kept(struct replay *r, const struct scan *sc) {
  if (sc->spilled) {
    enum { BLOCK = 1 << 15 }; /* events: 1 MiB */
    struct kept_event *b = malloc(BLOCK * sizeof(*b));
    if (!b)
      return BH_ENOMEM;
    for (uint64_t done = 0; done < sc->spilled;) {
      size_t want = sc->spilled - done < BLOCK ? (size_t)(sc->spilled - done) : BLOCK;
      ssize_t got = pread(sc->spill_fd, b, want * sizeof(*b), (off_t)(done * sizeof(*b)));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0 || got % (ssize_t)sizeof(*b)) { /* the file was made by this process */
        free(b);
        set_err(r, "reading back the trace's events from a temporary file: %s",
                got < 0 ? strerror(errno) : "short read");
        return BH_ESYS;
      }
      int err = play_kept(r, b, (uint64_t)got / sizeof(*b));
      if (err) {
        free(b);
        return err;
      }
      done += (uint64_t)got / sizeof(*b);
    }
    free(b);
  }
  return play_kept(r, sc->kept, sc->events - sc->spilled);
}

/* The events the first pass kept, played in order. */
__attribute__((noinline)) static int play_kept(struct replay *r, const struct kept_event *k,
                                               uint64_t n) {
  for (const struct kept_event *end = k + n; k < end; k++) {
    bh_event_t ev;
    kept_unpack(&ev, k);
    int err = play_event(r, &ev);
    if (bh__unlikely(err))
      return err;
  }
  return 0;
}

static int play(struct replay *r, const struct scan *sc) {
  bh_trace_t *t = NULL;
  int err;
  if (!sc->kept && (err = open_trace(r, &t)))
    return err;
  bh_replay_summary_t *s = r->s;
  if (t)
    format_name(t, s->trace_format, sizeof(s->trace_format));
  else
    snprintf(s->trace_format, sizeof(s->trace_format), "%s", sc->format);
  timeline_header(r);
  r->t0 = sc->first;
  r->next_sample = 0;
  if (r->shape && !r->cfg->untraced_ignore && sc->nuntraced) {
    r->untraced = sc->untraced;
    r->nuntraced = sc->nuntraced;
  }
  r->vmstat_trace = sc->vmstat_events && !r->cfg->pcp_decay_tick;
  r->last_page = sc->last;
  r->refill_at_event = refills_followed(r) && sc->pcp_events;
  r->drains_on = !r->place_trace && sc->pcp_events;
  r->drained_seen = bh__pcp_drained_pages(r->arena); /* the start's own drains are no event's */
  r->s->drains = (bh_replay_drains_t){.present = r->drains_on, .first_time_s = -1, .first_cpu = -1};
  calibrate_setup(r, sc);
  r->s->vmstat_events = sc->vmstat_events;
  if (r->shape && sc->nlocked) {
    r->locked = sc->locked;
    r->nlocked = sc->nlocked;
    r->s->locked_frees_taken = sc->direct_frees;
  }
  if (r->shape && sc->nbatched) {
    r->batched = sc->batched;
    r->nbatched = sc->nbatched;
  }
  if (r->shape && !r->cfg->untraced_ignore && sc->ntakes) {
    r->takes = sc->takes;
    r->ntakes = sc->ntakes;
  }
  r->next_tick = BH_NS_PER_SEC;
  r->next_compact = r->cfg->compaction_proactiveness ? BH_NS_PER_SEC / 2 : UINT64_MAX;
  set_clock_due(r);
  r->events = 0;
  set_next_poll(r);
  r->progress = r->cfg->progress && isatty(STDERR_FILENO);
  r->total_events = sc->events;
  enum { BATCH = 256 };
  bh_event_t evs[BATCH];
  if (t && r->origins) {
    while ((err = play_some_origins(r, t, evs, BATCH)) > 0)
      ;
  } else if (t) {
    while ((err = play_some(r, t, evs, BATCH)) > 0)
      ;
  } else {
    err = play_all_kept(r, sc);
  }
  for (; r->pend_n; r->pend_n--, r->pend_head = (r->pend_head + 1) % PEND_MAX)
    if (r->pend[r->pend_head].pfn != UINT64_MAX) /* a batch the trace ended in: as it was */
      free_block(r, &r->pend[r->pend_head]);
  drains_end(r);
  s->events = r->events;
  s->start_pcp_surplus_pages = bh__pcp_surplus_pages(r->arena);
  s->start_pcp_deficit_pages = bh__pcp_deficit_pages(r->arena);
  s->start_pcp_ghost_pages = bh__pcp_ghost_pages(r->arena);
  s->pcp_high_max_lowered = bh__pcp_high_max_lowered(r->arena);
  if (r->progress)
    fprintf(stderr, "\n");
  if (err < 0) {
    if (t || err != BH_ESYS) /* BH_ESYS without t: said by play_all_kept */
      set_err(r, "%s", err == BH_ENOMEM || !t ? "out of memory" : bh_trace_error(t));
  } else {
    bh_trace_counts_t c = sc->counts;
    if (t)
      bh_trace_counts(t, &c);
    s->skipped_lines = c.other_lines;
    s->malformed_lines = c.malformed;
    s->lost_events = c.lost_events;
    err = lost_check(r, c.lost_events);
  }
  bh_trace_close(t);
  return err;
}

static void idle(struct replay *r) {
  uint64_t end = r->vnow + r->cfg->idle_ns;
  if (r->cfg->speed > 0) {
    wait_wall(r, end);
    r->vnow = end;
    sample(r, end);
    return;
  }
  advance_to(r, end);
  sample(r, end);
}

static void emit_stat(void *ctx, const char *name, double v) {
  bh_replay_summary_t *s = ctx;
  if (s->nr_strategy_stats >= BH_REPLAY_MAX_STATS)
    return;
  snprintf(s->strategy_stat_names[s->nr_strategy_stats], 32, "%s", name);
  s->strategy_stats[s->nr_strategy_stats++] = v;
}

static double tv_secs(const struct timeval *tv) {
  return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/*
 * Which arena pages are resident at the end, one byte each (1 = resident): mincore for real
 * memory, written and not discarded for the sim backing.  NULL when that cannot be found out.
 */
static uint8_t *resident_pages(struct replay *r) {
  bh_arena_t *a = r->arena;
  uint64_t n = r->nr_pages;
  uint8_t *v = calloc(n ? n : 1, 1);
  if (!v)
    return NULL;
  if (r->sim) {
    const _Atomic uint64_t *discarded = *r->discarded;
    for (uint64_t p = 0; r->touched && p < n; p++) {
      uint64_t d = discarded ? atomic_load_explicit(&discarded[p / 64], memory_order_relaxed) : 0;
      uint64_t t = atomic_load_explicit(&r->touched[p / 64], memory_order_relaxed);
      v[p] = (uint8_t)(((t & ~d) >> (p % 64)) & 1);
    }
    return v;
  }
  if (sysconf(_SC_PAGESIZE) == BH_PAGE_SIZE && r->base &&
      !mincore(r->base, n << BH_PAGE_SHIFT, v)) {
    for (uint64_t p = 0; p < n; p++)
      v[p] &= 1;
    return v;
  }
  for (uint64_t p = 0; p < n; p++) { /* host pages of another size */
    uint64_t k = 0;
    bh_arena_resident_range(a, p, 1, &k);
    v[p] = k != 0;
  }
  return v;
}

static void attrib_rows(struct replay *r) {
  uint8_t *res = resident_pages(r);
  bh__attrib_rows(r->attrib, r->origins, &r->em.map, res, r->cfg->by_top ? r->cfg->by_top : 10,
                  r->s);
  free(res);
}

void bh__replay_warn(bh_replay_summary_t *s, const char *fmt, ...) {
  char w[sizeof(s->warnings[0])];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w, sizeof(w), fmt, ap);
  va_end(ap);
  for (int i = 0; i < s->nr_warnings; i++)
    if (!strcmp(s->warnings[i], w))
      return;
  if (s->nr_warnings == BH_REPLAY_MAX_WARNINGS) {
    s->nr_warnings_dropped++;
    return;
  }
  memcpy(s->warnings[s->nr_warnings++], w, sizeof(w));
}

/* What makes the trace suspect: no frees at all, or too many events lost. */
static void trace_warnings(bh_replay_summary_t *s) {
  if (s->allocs && !s->frees && !s->unknown_frees)
    bh__replay_warn(s,
                    "the trace holds %lu allocations and no free: were the free events "
                    "(kmem:mm_page_free) recorded?",
                    (unsigned long)s->allocs);
  double share = (double)s->lost_events / (double)(s->events + s->lost_events + !s->events);
  if (share > BH_REPLAY_LOST_WARN_SHARE)
    bh__replay_warn(s,
                    "the recording lost %lu of its %lu events (%.1f %%): the replay misses "
                    "them (a larger buffer, or fewer events, when recording)",
                    (unsigned long)s->lost_events, (unsigned long)(s->events + s->lost_events),
                    100.0 * share);
}

static void finish(struct replay *r) {
  bh_replay_summary_t *s = r->s;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  s->cpu_seconds = tv_secs(&ru.ru_utime) + tv_secs(&ru.ru_stime) - tv_secs(&r->ru0.ru_utime) -
                   tv_secs(&r->ru0.ru_stime);
  s->minflt = (uint64_t)(ru.ru_minflt - r->ru0.ru_minflt);
  s->virtual_seconds = (double)r->vnow / 1e9;
  snprintf(s->pcp_decay, sizeof(s->pcp_decay), "%s",
           r->pcp_trace      ? "drains"
           : r->vmstat_trace ? "vmstat"
                             : "tick");
  snprintf(s->pcp_refill, sizeof(s->pcp_refill), "%s",
           r->place_trace       ? "trace"
           : r->refill_at_event ? "event"
                                : "alloc");
  s->wall_seconds = secs_since(&r->wall0);
  s->rss_final_bytes = resident_bytes(r);
  if (s->rss_final_bytes > s->rss_peak_bytes)
    s->rss_peak_bytes = s->rss_final_bytes;
  s->live_final_bytes = r->em.live_pages << BH_PAGE_SHIFT;
  if (r->hint) {
    bh_hint_stats_t hs;
    bh_hint_stats(r->hint, &hs);
    s->reported_bytes = hs.report.bytes;
    s->returned_bytes = hs.report.returned;
    s->madvise_calls = hs.report.calls;
    s->refaults = hs.refault_pages;
    s->refault_blocks = hs.refault_blocks;
    bh_hint_strategy_stats(r->hint, emit_stat, s);
    snprintf(s->report_mode, sizeof(s->report_mode), "%s",
             bh_report_mode_name(bh_hint_report_mode(r->hint)));
  }
  bh_stats_read(r->arena, s->arena_stats);
  if (r->attrib)
    attrib_rows(r);
  if (r->cfg->check_every || r->cfg->check_after_steps)
    check(r);
  trace_warnings(s);
}

/* ---- one first pass for several replays ---- */

struct bh__replay_shared {
  struct scan sc;         /* kept: the events, or NULL */
  bh__first_events_t fe;  /* each page's first event (fe.fe NULL: none) */
  bh__origins_t *origins; /* --by: the origins the kept events name, or NULL */
};

/* A replay's first pass taken from sh: true, or false when sh does not fit (the replay then
 * makes its own).  The kept events and the origins stay sh's (borrowed: sc->kept is
 * sh->sc.kept, and r->origins sh->origins when there are kept events). */
static bool use_shared(struct replay *r, const bh__replay_shared_t *sh, struct scan *sc) {
  if (r->rm.fe.fe && (!sh->fe.fe || sh->fe.nr_pages != r->rm.fe.nr_pages))
    return false;
  if (sh->sc.kept && !r->origins != !sh->origins)
    return false;
  if (r->rm.fe.fe && bh__first_events_copy(&r->rm.fe, &sh->fe))
    return false; /* out of memory: the replay makes its own first pass */
  *sc = sh->sc;
  if (sc->kept && r->origins) { /* the origins the kept events name; the replay only reads them */
    bh__origins_free(r->origins);
    r->origins = sh->origins;
  }
  return true;
}

int bh__replay_share(const bh_replay_config_t *cfg, bh__replay_shared_t **out, char *err,
                     size_t errlen) {
  if (!cfg || !out || !cfg->trace)
    return BH_EINVAL;
  *out = NULL;
  if (err && errlen)
    err[0] = 0;
  bh__replay_shared_t *sh = calloc(1, sizeof(*sh));
  bh_replay_summary_t *s = calloc(1, sizeof(*s)); /* bh__rm_load's strings, not used */
  struct replay r = {.cfg = cfg, .s = s, .err = err, .errlen = errlen};
  int rc = sh && s ? 0 : BH_ENOMEM;
  if (!rc)
    rc = bh__rm_load(&r.rm, cfg, s, err, errlen);
  if (!rc)
    rc = bh__rm_want_first_events(&r.rm);
  if (!rc && cfg->by != BH_BY_NONE) {
    if (cfg->by > BH_BY_CALLSITE) {
      set_err(&r, "unknown attribution %d", (int)cfg->by);
      rc = BH_EINVAL;
    } else if (!(r.origins = bh__origins_new())) {
      rc = BH_ENOMEM;
    }
  }
  if (!rc) {
    /* binary records carry no origins in place: with --by only a text trace's are kept */
    sh->sc = (struct scan){.first = UINT64_MAX, .once = !bh__rm_rereadable(cfg->trace)};
    rc = first_pass(&r, &sh->sc, !r.origins);
  }
  if (!rc) {
    sh->fe = r.rm.fe;
    memset(&r.rm.fe, 0, sizeof(r.rm.fe));
    if (sh->sc.kept) {
      sh->origins = r.origins;
      r.origins = NULL;
    }
    *out = sh;
    sh = NULL;
  }
  bh__rm_free(&r.rm);
  bh__origins_free(r.origins);
  bh__replay_shared_free(sh);
  free(s);
  return rc;
}

void bh__replay_shared_free(bh__replay_shared_t *sh) {
  if (!sh)
    return;
  kept_free(&sh->sc);
  free(sh->sc.untraced);
  free(sh->sc.vmstat_times);
  free(sh->sc.locked);
  free(sh->sc.batched);
  free(sh->sc.takes);
  free(sh->sc.drain_frees);
  bh__first_events_free(&sh->fe);
  bh__origins_free(sh->origins);
  free(sh);
}

int bh_replay_run(const bh_replay_config_t *cfg, bh_replay_summary_t *out, char *err,
                  size_t errlen) {
  return bh__replay_run_shared(cfg, NULL, out, err, errlen);
}

int bh__replay_run_shared(const bh_replay_config_t *cfg, const bh__replay_shared_t *sh,
                          bh_replay_summary_t *out, char *err, size_t errlen) {
  if (!cfg || !out || !cfg->trace)
    return BH_EINVAL;
  struct replay r = {.cfg = cfg, .s = out, .err = err, .errlen = errlen};
  int rc0;
  memset(out, 0, sizeof(*out));
  if (err && errlen)
    err[0] = 0;
  snprintf(out->trace, sizeof(out->trace), "%s", cfg->trace);
  snprintf(out->strategy, sizeof(out->strategy), "%s",
           cfg->hint.strategy ? cfg->hint.strategy : "none");
  static const char *const backings[] = {"mmap", "memfd", "sim"};
  snprintf(out->backing, sizeof(out->backing), "%s",
           cfg->arena.backing <= BH_BACKING_SIM ? backings[cfg->arena.backing] : "?");
  if (cfg->idle_ns > BH_REPLAY_MAX_IDLE_NS) {
    set_err(&r, "idle time above %llu s", BH_REPLAY_MAX_IDLE_NS / BH_NS_PER_SEC);
    return BH_EINVAL;
  }
  if (cfg->compaction_proactiveness > 100) {
    set_err(&r, "compaction proactiveness %u is not in 0..100", cfg->compaction_proactiveness);
    return BH_EINVAL;
  }
  if (cfg->dump_dir && (rc0 = bh__rm_dump_check(cfg->dump_dir, err, errlen)))
    return rc0;
  if ((rc0 = bh__rm_load(&r.rm, cfg, out, err, errlen))) {
    bh__rm_free(&r.rm);
    return rc0;
  }
  r.shape = r.rm.shape;
  /* The first pass sizes the arena and counts CPUs: with both given, one pass does; in the
   * machine's shape it also finds each page's first event for the start state. */
  if ((rc0 = bh__rm_want_first_events(&r.rm))) {
    bh__rm_free(&r.rm);
    return rc0;
  }
  bool one_pass = cfg->memory_bytes && cfg->arena.nr_cpus && !r.rm.fe.fe;
  clock_gettime(CLOCK_MONOTONIC, &r.wall0);
  getrusage(RUSAGE_SELF, &r.ru0);
  struct scan sc = {.first = UINT64_MAX, .once = !bh__rm_rereadable(cfg->trace)};
  bh__attrib_t attrib;
  int rc = 0;
  if (cfg->by != BH_BY_NONE) {
    if (cfg->by > BH_BY_CALLSITE) {
      set_err(&r, "unknown attribution %d", (int)cfg->by);
      rc = BH_EINVAL;
    } else if (!(r.origins = bh__origins_new())) {
      rc = BH_ENOMEM;
    }
  }
  bool borrowed = false; /* sc.kept and r.origins are sh's */
  if (!rc && sh)
    borrowed = use_shared(&r, sh, &sc);
  if (!rc && !borrowed && !one_pass)
    rc = first_pass(&r, &sc, false);
  if (!rc)
    rc = setup(&r, &sc);
  if (!rc && r.origins) {
    rc = bh__attrib_init(&attrib, cfg->by, r.nr_pages);
    r.attrib = rc ? NULL : &attrib;
  }
  if (!rc)
    rc = play(&r, &sc);
  if (!rc) { /* the end of the trace: where the end snapshot was taken */
    bh__rm_fidelity(&r.rm, r.arena, out);
    if (cfg->dump_dir)
      rc = bh__rm_dump(&r.rm, r.arena, cfg->dump_dir, err, errlen);
  }
  if (!rc) {
    idle(&r);
    finish(&r);
  }
  if (!rc && r.drift[0]) {
    set_err(&r, "%s", r.drift);
    rc = BH_EINVAL;
  }
  if (!rc && cfg->strict && out->nr_warnings) { /* --strict: a warning is an error */
    set_err(&r, "%s: %s (--strict)", cfg->trace, out->warnings[0]);
    rc = BH_EFORMAT;
  }
  bh_hint_detach(r.hint);
  bh_arena_destroy(r.arena);
  free(r.take_rank);
  bh__pfnmap_destroy(&r.em.map);
  bh__rm_free(&r.rm);
  free(r.moves);
  free(r.first_miss);
  if (!borrowed) {
    kept_free(&sc);
    free(sc.untraced);
    free(sc.vmstat_times);
    free(sc.locked);
    free(sc.batched);
    free(sc.takes);
    free(sc.drain_frees);
  }
  free((void *)r.touched);
  free(r.rev);
  free(r.start_pcp);
  if (r.attrib)
    bh__attrib_destroy(r.attrib);
  if (!borrowed || !sc.kept || !r.origins)
    bh__origins_free(r.origins);
  return rc;
}

/* ---- a replay fed its events as they happen (replay_feed.h) ---- */

struct bh__replay_feed {
  struct replay r;
  struct scan sc; /* no first pass: what setup reads of one, empty */
  bh_replay_config_t cfg;
  bh_replay_summary_t s;
  char err[256];
};

static void feed_free(bh__replay_feed_t *f) {
  struct replay *r = &f->r;
  bh_hint_detach(r->hint);
  bh_arena_destroy(r->arena);
  free(r->take_rank);
  bh__pfnmap_destroy(&r->em.map);
  bh__rm_free(&r->rm);
  free(r->moves);
  free(r->first_miss);
  free((void *)r->touched);
  free(r->rev);
  free(r->start_pcp);
  free(f);
}

int bh__replay_feed_open(const bh_replay_config_t *cfg, bh_machine_t *m, uint64_t t0_ns,
                         bh__replay_feed_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (err && errlen)
    err[0] = 0;
  bh__replay_feed_t *f = calloc(1, sizeof(*f));
  if (!f) {
    bh_machine_free(m);
    return BH_ENOMEM;
  }
  f->cfg = *cfg;
  f->cfg.trace = "live";
  f->cfg.layout = BH_LAYOUT_TRACE;
  f->cfg.start = BH_START_KPAGEFLAGS;
  f->cfg.placement = BH_PLACEMENT_ALLOCATOR;
  f->cfg.by = BH_BY_NONE;
  f->cfg.speed = 0;
  f->cfg.start_dir = f->cfg.end_dir = f->cfg.dump_dir = NULL;
  struct replay *r = &f->r;
  *r = (struct replay){.cfg = &f->cfg, .s = &f->s, .err = err, .errlen = errlen};
  bh_replay_summary_t *s = &f->s;
  snprintf(s->trace, sizeof(s->trace), "live");
  snprintf(s->trace_format, sizeof(s->trace_format), "live");
  snprintf(s->strategy, sizeof(s->strategy), "%s",
           cfg->hint.strategy ? cfg->hint.strategy : "none");
  static const char *const backings[] = {"mmap", "memfd", "sim"};
  snprintf(s->backing, sizeof(s->backing), "%s",
           cfg->arena.backing <= BH_BACKING_SIM ? backings[cfg->arena.backing] : "?");
  int rc = 0;
  if (cfg->compaction_proactiveness > 100) {
    set_err(r, "compaction proactiveness %u is not in 0..100", cfg->compaction_proactiveness);
    rc = BH_EINVAL;
  }
  if (!rc)
    rc = bh__rm_load_machine(&r->rm, m, &f->cfg, s, err, errlen);
  else
    bh_machine_free(m);
  r->shape = r->rm.shape;
  clock_gettime(CLOCK_MONOTONIC, &r->wall0);
  getrusage(RUSAGE_SELF, &r->ru0);
  /* the map directly indexed over the machine's pfns, its cells mapped where the events go:
   * no hash part to grow (and copy) as the machine allocates */
  uint64_t pages = rc ? 0 : bh__rm_pages(&r->rm);
  f->sc = (struct scan){.first = t0_ns,
                        .last = t0_ns,
                        .pfn_lo = 0,
                        .pfn_hi = pages,
                        .map_cap = pages / 4 > 1024 ? pages / 4 : 1024};
  if (!rc)
    rc = setup(r, &f->sc);
  if (rc) {
    feed_free(f);
    return rc;
  }
  /* placement agreement is not shown live, and finding where the kernel's block was in the
   * model (bh__where_is) took three quarters of a live replay's time */
  r->agree = false;
  s->agreement.present = false;
  free(r->first_miss);
  r->first_miss = NULL;
  r->t0 = t0_ns;
  r->next_sample = 0;
  r->next_tick = BH_NS_PER_SEC;
  r->next_compact = f->cfg.compaction_proactiveness ? BH_NS_PER_SEC / 2 : UINT64_MAX;
  set_clock_due(r);
  set_next_poll(r);
  r->err = f->err; /* the caller's buffer is theirs again */
  r->errlen = sizeof(f->err);
  *out = f;
  return 0;
}

int bh__replay_feed_events(bh__replay_feed_t *f, const bh_event_t *evs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int err = play_event(&f->r, &evs[i]);
    if (bh__unlikely(err))
      return err;
  }
  f->s.events = f->r.events;
  return 0;
}

void bh__replay_feed_advance(bh__replay_feed_t *f, uint64_t now_ns) {
  struct replay *r = &f->r;
  if (now_ns > r->t0 && now_ns - r->t0 > r->vnow && now_ns - r->t0 - r->vnow < BH_REPLAY_MAX_GAP_NS)
    advance_to(r, now_ns - r->t0);
}

/* The figures of finish() that cost little, into f->s. */
static void feed_now(bh__replay_feed_t *f, const bh_machine_t *now) {
  struct replay *r = &f->r;
  bh_replay_summary_t *s = &f->s;
  s->events = r->events;
  s->virtual_seconds = (double)r->vnow / 1e9;
  s->wall_seconds = secs_since(&r->wall0);
  s->rss_final_bytes = resident_bytes(r);
  if (s->rss_final_bytes > s->rss_peak_bytes)
    s->rss_peak_bytes = s->rss_final_bytes;
  s->live_final_bytes = r->em.live_pages << BH_PAGE_SHIFT;
  bh_hint_stats_t hs;
  bh_hint_stats(r->hint, &hs);
  s->reported_bytes = hs.report.bytes;
  s->returned_bytes = hs.report.returned;
  s->madvise_calls = hs.report.calls;
  s->refaults = hs.refault_pages;
  s->refault_blocks = hs.refault_blocks;
  s->nr_strategy_stats = 0;
  bh_hint_strategy_stats(r->hint, emit_stat, s);
  snprintf(s->report_mode, sizeof(s->report_mode), "%s",
           bh_report_mode_name(bh_hint_report_mode(r->hint)));
  bh_stats_read(r->arena, s->arena_stats);
  if (now) {
    bh__rmachine_t at = {.m = (bh_machine_t *)now}; /* only read */
    bh__rm_fidelity(&at, r->arena, s);
  } else {
    memset(&s->fidelity, 0, sizeof(s->fidelity));
  }
}

void bh__replay_feed_figures(bh__replay_feed_t *f, const bh_machine_t *now,
                             bh_replay_summary_t *s) {
  feed_now(f, now);
  *s = f->s;
}

int bh__replay_feed_close(bh__replay_feed_t *f, const bh_machine_t *now, bh_replay_summary_t *out,
                          char *err, size_t errlen) {
  if (!f)
    return 0;
  feed_now(f, now);
  struct replay *r = &f->r;
  if (r->cfg->check_every || r->cfg->check_after_steps)
    check(r);
  trace_warnings(&f->s);
  f->s.cpu_seconds = 0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  f->s.cpu_seconds = tv_secs(&ru.ru_utime) + tv_secs(&ru.ru_stime) - tv_secs(&r->ru0.ru_utime) -
                     tv_secs(&r->ru0.ru_stime);
  int rc = 0;
  if (r->drift[0]) {
    if (err && errlen)
      snprintf(err, errlen, "%s", r->drift);
    rc = BH_EINVAL;
  }
  *out = f->s;
  feed_free(f);
  return rc;
}

/* ---- JSON ---- */

const char *bh_replay_pcp_cause_name(int cause) {
  static const char *const names[] = {
#define BH__PCP_CAUSE_NAME(n) #n,
      BH_REPLAY_PCP_CAUSES(BH__PCP_CAUSE_NAME)
#undef BH__PCP_CAUSE_NAME
  };
  return cause >= 0 && cause < BH_PCP_MISS_CAUSES ? names[cause] : NULL;
}

struct jw {
  FILE *f;
  int indent, n;
};

static void key(struct jw *w, const char *k) {
  int n = w->n++;
  fprintf(w->f, "%s%s%*s\"%s\": ", n ? "," : "", w->indent ? "\n" : (n ? " " : ""), w->indent, "",
          k);
}
static void jstr(struct jw *w, const char *k, const char *v) {
  key(w, k);
  bh__json_str(w->f, v);
}
static void ju64(struct jw *w, const char *k, uint64_t v) {
  key(w, k);
  fprintf(w->f, "%lu", (unsigned long)v);
}
static void ji64(struct jw *w, const char *k, int64_t v) {
  key(w, k);
  fprintf(w->f, "%lld", (long long)v);
}
static void jint(struct jw *w, const char *k, int v) {
  key(w, k);
  fprintf(w->f, "%d", v);
}
static void jdbl(struct jw *w, const char *k, double v) {
  key(w, k);
  fprintf(w->f, "%.6f", v);
}

int bh_replay_summary_json(const bh_replay_summary_t *s, FILE *f, int indent) {
  if (!s || !f)
    return BH_EINVAL;
  struct jw w = {f, indent < 0 ? 0 : indent > 8 ? 8 : indent, 0};
  fputc('{', f);
  jstr(&w, "trace", s->trace);
  jstr(&w, "trace_format", s->trace_format);
  jstr(&w, "strategy", s->strategy);
  jstr(&w, "backing", s->backing);
  jstr(&w, "report_mode", s->report_mode);
  ju64(&w, "memory_bytes", s->memory_bytes);
  ju64(&w, "nr_cpus", s->nr_cpus);
  ju64(&w, "events", s->events);
  ju64(&w, "allocs", s->allocs);
  ju64(&w, "frees", s->frees);
  ju64(&w, "alloc_failures", s->alloc_failures);
  ju64(&w, "unknown_frees", s->unknown_frees);
  ju64(&w, "skipped_lines", s->skipped_lines);
  ju64(&w, "malformed_lines", s->malformed_lines);
  ju64(&w, "trace_failed_allocs", s->trace_failed_allocs);
  ju64(&w, "split_frees", s->split_frees);
  ju64(&w, "orders_too_large", s->orders_too_large);
  ju64(&w, "lost_frees", s->lost_frees);
  ju64(&w, "batched_dups", s->batched_dups);
  ju64(&w, "gaps_shortened", s->gaps_shortened);
  ju64(&w, "time_reversals", s->time_reversals);
  ju64(&w, "lost_events", s->lost_events);
  jstr(&w, "layout", s->layout);
  jstr(&w, "pcp_high", s->pcp_high_tuned ? "tuned" : "fixed");
  jstr(&w, "pcp_free_high", s->pcp_free_high_raised ? "raised" : "batch");
  jstr(&w, "start_order", s->start_order_pfn ? "pfn" : "trace");
  jstr(&w, "start_pcp", s->start_pcp_trace ? "trace" : "zoneinfo");
  jstr(&w, "start_reported", s->start_reported_all ? "all" : "snapshot");
  jstr(&w, "start_state", s->start_state);
  jstr(&w, "placement", s->placement);
  jint(&w, "reporting_order", s->reporting_order);
  jstr(&w, "reporting_order_source", s->reporting_order_source);
  ju64(&w, "pretrace_frees", s->pretrace_frees);
  ju64(&w, "start_conflicts", s->start_conflicts);
  ju64(&w, "placement_conflicts", s->placement_conflicts);
  ju64(&w, "pcp_events_applied", s->pcp_events_applied);
  ju64(&w, "pcp_events_missed", s->pcp_events_missed);
  ju64(&w, "pcp_events_direct", s->pcp_events_direct);
  ju64(&w, "pcp_drains_missed", s->pcp_drains_missed);
  key(&w, "pcp_events_missed_by_cause");
  for (int i = 0; i < BH_PCP_MISS_CAUSES; i++)
    fprintf(f, "%s\"%s\": %lu", i ? ", " : "{", bh_replay_pcp_cause_name(i),
            (unsigned long)s->pcp_missed_by_cause[i]);
  fputc('}', f);
  ju64(&w, "pcp_refills_relisted", s->pcp_refills_relisted);
  ju64(&w, "pcp_refills_relisted_start", s->pcp_refills_relisted_start);
  ju64(&w, "pcp_drains_adopted", s->pcp_drains_adopted);
  ju64(&w, "extfrag_events_applied", s->extfrag_events_applied);
  ju64(&w, "extfrag_events_missed", s->extfrag_events_missed);
  ju64(&w, "extfrag_events_ignored", s->extfrag_events_ignored);
  ju64(&w, "extfrag_claims_applied", s->extfrag_claims_applied);
  ju64(&w, "extfrag_pageblocks_retyped", s->extfrag_pageblocks_retyped);
  ju64(&w, "extfrag_refills", s->extfrag_refills);
  ju64(&w, "start_pcp_pages", s->start_pcp_pages);
  ju64(&w, "start_pcp_hidden_pages", s->start_pcp_hidden_pages);
  ju64(&w, "start_pcp_count_events", s->start_pcp_count_events);
  ji64(&w, "start_pcp_count_adjust", s->start_pcp_count_adjust);
  ju64(&w, "start_pcp_surplus_pages", s->start_pcp_surplus_pages);
  ju64(&w, "start_pcp_deficit_pages", s->start_pcp_deficit_pages);
  ju64(&w, "start_pcp_ghost_pages", s->start_pcp_ghost_pages);
  ju64(&w, "pcp_high_max_lowered", s->pcp_high_max_lowered);
  ju64(&w, "start_unplaced_blocks", s->start_unplaced_blocks);
  ju64(&w, "start_unexplained_pages", s->start_unexplained_pages);
  ju64(&w, "start_repaired_pages", s->start_repaired_pages);
  ju64(&w, "start_taken_pages", s->start_taken_pages);
  ju64(&w, "start_retyped_pageblocks", s->start_retyped_pageblocks);
  ju64(&w, "start_split_retyped_pageblocks", s->start_split_retyped_pageblocks);
  ju64(&w, "start_reported_blocks", s->start_reported_blocks);
  ju64(&w, "start_reported_marked", s->start_reported_marked);
  ju64(&w, "start_reported_missed", s->start_reported_missed);
  ju64(&w, "window_events", s->window_events);
  ju64(&w, "untraced_frees", s->untraced_frees);
  ju64(&w, "untraced_allocs", s->untraced_allocs);
  ju64(&w, "untraced_frees_applied", s->untraced_frees_applied);
  ju64(&w, "locked_frees", s->locked_frees);
  ju64(&w, "locked_frees_taken", s->locked_frees_taken);
  ju64(&w, "batched_frees_deferred", s->batched_frees_deferred);
  ju64(&w, "vmstat_events", s->vmstat_events);
  jstr(&w, "pcp_decay", s->pcp_decay);
  jstr(&w, "pcp_refill", s->pcp_refill);
  jstr(&w, "pass_timer", s->pass_timer[0] ? s->pass_timer : "exact");
  ju64(&w, "pass_timer_hz", s->pass_timer_hz);
  jdbl(&w, "pass_timer_share", s->pass_timer_share);
  ju64(&w, "pcp_refills_at_event", s->pcp_refills_at_event);
  ju64(&w, "untraced_takes", s->untraced_takes);
  jint(&w, "untraced_lists", s->untraced_lists);
  jdbl(&w, "virtual_seconds", s->virtual_seconds);
  jdbl(&w, "wall_seconds", s->wall_seconds);
  jdbl(&w, "cpu_seconds", s->cpu_seconds);
  ju64(&w, "rss_peak_bytes", s->rss_peak_bytes);
  ju64(&w, "rss_final_bytes", s->rss_final_bytes);
  ju64(&w, "live_peak_bytes", s->live_peak_bytes);
  ju64(&w, "live_final_bytes", s->live_final_bytes);
  ju64(&w, "reported_bytes", s->reported_bytes);
  ju64(&w, "returned_bytes", s->returned_bytes);
  ju64(&w, "madvise_calls", s->madvise_calls);
  ju64(&w, "refaults", s->refaults);
  ju64(&w, "refault_blocks", s->refault_blocks);
  ju64(&w, "minflt", s->minflt);
  key(&w, "check_violations");
  fprintf(f, "%ld", s->check_violations);
  /* not the first key: the CSV's columns keep their places */
  ju64(&w, "schema_version", BH_REPLAY_SCHEMA_VERSION);
  key(&w, "warnings");
  fputc('[', f);
  for (int i = 0; i < s->nr_warnings; i++) {
    fprintf(f, "%s", i ? ", " : "");
    bh__json_str(f, s->warnings[i]);
  }
  fputc(']', f);
  if (s->trace_command[0])
    jstr(&w, "trace_command", s->trace_command);
  if (s->by) {
    key(&w, "by");
    bh__attrib_json(s, f);
  }
  bh__rm_json(f, s, w.indent ? "\n" : " ", w.indent);
  w.n++;
  key(&w, "strategy_stats");
  fputc('{', f);
  for (int i = 0; i < s->nr_strategy_stats; i++) {
    fprintf(f, "%s", i ? ", " : "");
    bh__json_str(f, s->strategy_stat_names[i]);
    fprintf(f, ": %.0f", s->strategy_stats[i]);
  }
  fputc('}', f);
  key(&w, "arena_stats");
  fputc('{', f);
  for (int i = 0; i < BH_NR_STATS; i++)
    fprintf(f, "%s\"%s\": %lu", i ? ", " : "", bh_stat_name(i), (unsigned long)s->arena_stats[i]);
  fprintf(f, "}%s}", indent ? "\n" : "");
  return ferror(f) ? BH_EIO : BH_OK;
}
