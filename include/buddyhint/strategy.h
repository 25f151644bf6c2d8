/*
 * Free page hinting: the strategy plugin API.
 *
 * A strategy is an ops table, modelled on the kernel's page_reporting_dev_info: the allocator
 * calls `notify` after the final merge of a freed block whose order is at or above the
 * strategy's notify order (Linux's page_reporting_notify_free), and `del` when a block of at
 * least the del order leaves a free list (allocation, merge, isolation); a worker calls `step`
 * at the times the strategy asks for.  Both hooks run under the zone lock and must be short.
 * The worker runs either in a background thread (library mode, monotonic clock) or
 * synchronously at virtual times (replay mode, deterministic): the same `step` serves both.
 *
 * The helpers below let a strategy walk and change the free lists the way mm/page_reporting.c
 * does: isolate a free block (with the kernel's watermark check), report ranges to the host
 * (a real madvise on the arena), put blocks back at the list tail without a new notification,
 * and mark blocks reported.  A block may also carry a mark of the strategy's own, which the
 * allocator drops when the block leaves its free list: that tells a worker how long a block
 * has stayed free without a hook on the free path.  A user adds a strategy in one file: fill a
 * bh_strategy_ops_t and call bh_strategy_register() before attaching.
 */
#ifndef BUDDYHINT_STRATEGY_H
#define BUDDYHINT_STRATEGY_H

#include <buddyhint.h>
#include <buddyhint/report.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bh_zone bh_zone_t; /* a zone of an arena, as handed to a strategy */
typedef struct bh_hint bh_hint_t; /* hinting attached to one arena */

#define BH_PFN_NONE UINT64_MAX
#define BH_HINT_IDLE UINT64_MAX /* step's answer when it has nothing to do until a request */
#define BH_NS_PER_SEC 1000000000ull

/* Why a block left a free list (the `reason` of the del hook). */
enum bh_del_reason { BH_DEL_ALLOC, BH_DEL_MERGE, BH_DEL_ISOLATE };

typedef struct bh_opt {
  const char *key, *value;
} bh_opt_t;

/* Capabilities of a strategy (bh_strategy_ops_t.flags). */
enum {
  /* The strategy marks the blocks it reports PageReported (bh_block_set_reported) and leaves
   * them alone until they leave their free list, as free page reporting does
   * (mm/page_reporting.c).  A replay that starts from a recorded machine's state starts the
   * blocks that machine had reported (kpageflags' KPF_UPTODATE) marked and discarded, as the
   * guest's kernel left them.  Without the flag a strategy starts with no block reported. */
  BH_STRATEGY_PAGE_REPORTED = 1u << 0,
};

/* Emits one named statistic of a strategy. */
typedef void (*bh_stat_emit_fn)(void *ctx, const char *name, double value);

typedef struct bh_strategy_ops {
  const char *name;    /* registry key, e.g. "bubble" */
  const char *summary; /* one line */
  const char *options; /* help text: one "key=default  what" line per option */
  /* Creates the strategy's state for the arena behind h from key=value options.  Returns 0,
   * BH_EINVAL for a bad option (say why with bh_hint_set_error), BH_ENOMEM. */
  int (*create)(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state);
  void (*destroy)(void *state); /* NULL state never passed */
  /* Hooks, under the zone lock.  Either may be NULL.  del runs before the core clears the
   * block's PageReported, so bh_block_reported() still tells inside it. */
  void (*notify)(void *state, bh_zone_t *zone, uint64_t pfn, unsigned order);
  void (*del)(void *state, bh_zone_t *zone, uint64_t pfn, unsigned order, int reason);
  /* Worker step at time now_ns.  Returns when it wants to run next (absolute ns), or
   * BH_HINT_IDLE to wait for bh_hint_request(). */
  uint64_t (*step)(void *state, uint64_t now_ns);
  /* Emits the strategy's counters (may be NULL). */
  void (*stats)(void *state, bh_stat_emit_fn emit, void *ctx);
  unsigned flags; /* BH_STRATEGY_* capabilities (added in 0.2: a table built for 0.1 lacks it) */
} bh_strategy_ops_t;

/* Registers a strategy (the ops table must outlive its use).  Returns 0, BH_EBUSY if the name
 * is taken, BH_EINVAL for a table without name/create/step, BH_ENOMEM if the registry is full. */
BH_API int bh_strategy_register(const bh_strategy_ops_t *ops);
/* Finds a strategy by name; NULL if unknown.  Built in: "none", "bitmap", "bubble",
 * "adaptive". */
BH_API const bh_strategy_ops_t *bh_strategy_find(const char *name);
/* The i-th registered strategy (0..), NULL past the end. */
BH_API const bh_strategy_ops_t *bh_strategy_at(int i);

/* ---- attaching hinting to an arena ---- */

typedef enum bh_clock_mode {
  BH_CLOCK_VIRTUAL, /* the caller advances time with bh_hint_advance (replay) */
  BH_CLOCK_THREAD   /* a background thread runs the worker on CLOCK_MONOTONIC, and the
                     * once-a-second pcp decay (bh_vmstat_tick) as the kernel's vmstat work */
} bh_clock_mode_t;

typedef struct bh_hint_config {
  const char *strategy; /* default "none" */
  const bh_opt_t *opts; /* strategy options */
  size_t nopts;
  bh_report_mode_t report; /* default BH_REPORT_DONTNEED (BH_REPORT_NONE in sim backing) */
  bh_clock_mode_t clock;   /* default BH_CLOCK_VIRTUAL */
  /*
   * The arena holds a machine that has been running (a replay from a recorded start state):
   * the strategy was registered when that machine booted, so what it does once at
   * registration is not done again (page reporting's initial flush).  Default false.
   */
  bool registered_at_boot;
} bh_hint_config_t;

/* Fills the defaults above (report mode follows the arena's backing at attach time). */
BH_API void bh_hint_config_init(bh_hint_config_t *cfg);
/*
 * Attaches hinting to an arena (at most one at a time) and starts its worker when the clock
 * is BH_CLOCK_THREAD.  Returns 0, BH_ENOENT for an unknown strategy, BH_EINVAL for a bad option
 * (bh_hint_last_error says which), BH_EBUSY if hinting is already attached, BH_ENOTSUP for a
 * report mode the backing cannot do.
 */
BH_API int bh_hint_attach(bh_arena_t *arena, const bh_hint_config_t *cfg, bh_hint_t **out);
/* Stops the worker (joining its thread), returns isolated blocks, detaches and frees h; NULL
 * is accepted.  bh_arena_destroy() does this for hinting still attached.  Detaching twice,
 * or after the arena was destroyed, is undefined (as free() twice). */
BH_API void bh_hint_detach(bh_hint_t *h);
/* The message of the last failed attach on this thread (static storage), or "". */
BH_API const char *bh_hint_last_error(void);

/*
 * Virtual clock: runs every worker step due at or before now_ns, in time order, and sets the
 * clock to now_ns.  Time never goes back (an earlier now_ns only runs nothing).  Returns the
 * number of steps run.  BH_EINVAL in thread mode.
 */
BH_API long bh_hint_advance(bh_hint_t *h, uint64_t now_ns);
/* Current time of the hinting clock (virtual, or CLOCK_MONOTONIC in thread mode). */
BH_API uint64_t bh_hint_now(const bh_hint_t *h);
/* When the worker is next due (BH_HINT_IDLE if it waits for a request). */
BH_API uint64_t bh_hint_next_due(const bh_hint_t *h);

typedef struct bh_hint_stats {
  uint64_t steps;                         /* worker steps run */
  bh_reporter_stats_t report;             /* host side: calls, ranges, bytes, time */
  uint64_t refault_pages, refault_blocks; /* reported pages allocated again */
  uint64_t discarded_pages;               /* pages reported and not allocated since */
} bh_hint_stats_t;

BH_API void bh_hint_stats(const bh_hint_t *h, bh_hint_stats_t *out);
/* Emits the strategy's own counters through emit. */
BH_API void bh_hint_strategy_stats(const bh_hint_t *h, bh_stat_emit_fn emit, void *ctx);
BH_API const bh_strategy_ops_t *bh_hint_strategy(const bh_hint_t *h);
/* The report mode in force (sim arenas always use BH_REPORT_NONE). */
BH_API bh_report_mode_t bh_hint_report_mode(const bh_hint_t *h);

/* ---- helpers for strategies ---- */

BH_API bh_arena_t *bh_hint_arena(const bh_hint_t *h);
/* bh_hint_config_t.registered_at_boot of the attach: skip registration-time work in create. */
BH_API bool bh_hint_registered_at_boot(const bh_hint_t *h);
/* Sets the hook orders for every zone: notify runs for final orders >= notify_order, del for
 * orders >= del_order; UINT8_MAX turns a hook off.  Call from create. */
BH_API void bh_hint_set_orders(bh_hint_t *h, unsigned notify_order, unsigned del_order);
/* Asks for a worker step at bh_hint_delay_due(h, delay_ns) (from a hook or the worker). */
BH_API void bh_hint_request(bh_hint_t *h, uint64_t delay_ns);
/*
 * When work delayed by delay_ns from now runs, on the hinting clock: now + delay_ns, or, where
 * a replay follows a recorded kernel's timer wheel (a virtual clock), the tick the kernel's
 * delayed work would fire at (kernel/time/timer.c: the expiry rounded up to its wheel level's
 * granularity, 8 ticks for delays of 63 to 503 ticks).  For a strategy's requeued passes.
 */
BH_API uint64_t bh_hint_delay_due(const bh_hint_t *h, uint64_t delay_ns);
/* Reports ranges to the host (real madvise / punch / none) and marks them discarded.  Call
 * without any zone lock held.  Returns 0 or an error from the reporter. */
BH_API int bh_hint_report(bh_hint_t *h, const bh_report_range_t *ranges, size_t n);
/* For create: records why an option was rejected. */
BH_API void bh_hint_set_error(bh_hint_t *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * Option parsing helpers: 0 or BH_EINVAL.  Integers are decimal, or hex after "0x" (a
 * leading zero is not octal: "011" is eleven); durations and sizes are decimal with an
 * optional fraction and exponent.  No sign, blank, nan, inf or hex float anywhere.
 */
/* An integer in [min, max]. */
BH_API int bh_opt_u64(const bh_opt_t *o, uint64_t min, uint64_t max, uint64_t *out);
/* 1, true, yes, on / 0, false, no, off (any case). */
BH_API int bh_opt_bool(const bh_opt_t *o, bool *out);
/* Parses "1.5", "2s", "500ms", "30us", "100ns" (bare numbers are seconds) into ns, at most
 * 1e18 ns. */
BH_API int bh_opt_duration(const bh_opt_t *o, uint64_t *ns);
/* Parses "4096", "64K", "512M", "1.5G", "2T" (binary units, an optional "B" or "iB") into
 * bytes. */
BH_API int bh_opt_size(const bh_opt_t *o, uint64_t *bytes);

/* The number of zones: bh_zone_count() (buddyhint.h). */
BH_API bh_zone_t *bh_arena_zone(bh_arena_t *a, int i);
BH_API int bh_zone_index(const bh_zone_t *z);
BH_API uint64_t bh_zone_start_pfn(const bh_zone_t *z);
BH_API uint64_t bh_zone_pages(const bh_zone_t *z);
/* The zone's type (enum bh_zone_type) and node. */
BH_API int bh_zone_type(const bh_zone_t *z);
BH_API int bh_zone_node(const bh_zone_t *z);
BH_API unsigned bh_arena_max_order(const bh_arena_t *a);
BH_API unsigned bh_arena_pageblock_order(const bh_arena_t *a);
BH_API void bh_zone_lock(bh_zone_t *z);
BH_API void bh_zone_unlock(bh_zone_t *z);

/* The rest need the zone lock. */

/* Blocks on free_area[order] (all types). */
BH_API uint64_t bh_zone_nr_free(const bh_zone_t *z, unsigned order);
/* If pfn heads a free block on a buddy list: true, with its order and list type. */
BH_API bool bh_zone_free_block(const bh_zone_t *z, uint64_t pfn, unsigned *order, int *mt);
/* Free list walking, head to tail: first block, next after pfn; BH_PFN_NONE at the end. */
BH_API uint64_t bh_free_list_first(const bh_zone_t *z, unsigned order, int mt);
BH_API uint64_t bh_free_list_next(const bh_zone_t *z, unsigned order, int mt, uint64_t pfn);
/* list_rotate_to_front: makes pfn (on that list) the head, keeping the cyclic order. */
BH_API void bh_free_list_rotate(bh_zone_t *z, unsigned order, int mt, uint64_t pfn);
/* PageReported of a free block head. */
BH_API bool bh_block_reported(const bh_zone_t *z, uint64_t pfn);
BH_API void bh_block_set_reported(bh_zone_t *z, uint64_t pfn);
/*
 * A strategy's own mark on a free block head, carrying a 32-bit value (a time, a pass
 * number).  The strategy sets it; the allocator drops it whenever the block leaves its free
 * list -- allocation, merging as a buddy, splitting, isolation, compaction -- with the store
 * that already clears PageReported there, so the mark costs the free and allocation paths
 * nothing.  A change of list type keeps it, as it keeps PageReported; a block put back from
 * isolation, a merged block and the halves of a split start unmarked.  So a block that still
 * carries a mark has been free, as this block at this order, ever since the mark was set: a
 * strategy learns how long memory has stayed free by marking blocks as its worker first sees
 * them, where a hook on every free would tax the allocator.  There is one mark per block, for
 * the strategy attached.
 */
/* True if pfn heads a free block that carries a mark; its value in *value (may be NULL). */
BH_API bool bh_block_marked(const bh_zone_t *z, uint64_t pfn, uint32_t *value);
/* Marks the free block at pfn with value, replacing an earlier mark.  Returns 0, or BH_EINVAL
 * (and changes nothing) if pfn does not head a free block on a list of this zone. */
BH_API int bh_block_set_mark(bh_zone_t *z, uint64_t pfn, uint32_t value);
/* Removes the mark of the free block at pfn, if it has one. */
BH_API void bh_block_clear_mark(bh_zone_t *z, uint64_t pfn);
/*
 * __isolate_free_page: takes the free block at pfn of this order off its list, unless the
 * zone would fall below min watermark + 2^order.  Returns 0, BH_ENOSPC (watermark),
 * BH_EINVAL (not a free block of that order).  When the block is at least half a pageblock,
 * its mergeable pageblocks go through move_freepages_block() to Movable, as in the kernel:
 * their other free blocks move to the tails of the Movable lists.
 */
BH_API int bh_zone_isolate(bh_zone_t *z, uint64_t pfn, unsigned order);
/*
 * __putback_isolated_page: returns an isolated block to the tail of its list, merging, and
 * without notifying the strategy.  *still_head (may be NULL) tells whether the block is still
 * a free block of the same order afterwards (it did not merge).  Returns 0 or BH_EINVAL.
 */
BH_API int bh_zone_putback(bh_zone_t *z, uint64_t pfn, unsigned order, bool *still_head);
/*
 * An isolated block back to the free lists as a plain free would put it, merging, without
 * notifying the strategy: the head of its list, unless buddy_merge_likely() (or the shuffle at
 * the top order) chooses the tail.  This is how Nitesh Narayan Lal's v11 page hinting returned
 * reported blocks (release_buddy_pages: __free_one_page(..., hint = false)); reported order-9
 * and order-10 blocks land at the head, where the next allocation of their order takes them.
 * *still_head as for bh_zone_putback.  Returns 0 or BH_EINVAL.
 */
BH_API int bh_zone_release(bh_zone_t *z, uint64_t pfn, unsigned order, bool *still_head);
/* zone_watermark_ok at order 0 for the low watermark (with its boost) + extra_pages: the
 * check free page reporting makes before it works on a zone. */
BH_API bool bh_zone_low_wmark_ok(const bh_zone_t *z, uint64_t extra_pages);

#ifdef __cplusplus
}
#endif

#endif
