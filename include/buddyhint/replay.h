/*
 * Trace replay: a recorded (or synthetic) page allocation trace is played through an arena
 * with a hinting strategy attached.  The trace's pfns only identify allocations: the arena
 * allocates on its own and keeps a map from recorded blocks to its blocks.  Time is virtual,
 * taken from the trace timestamps, so a replay is deterministic: the same trace, configuration
 * and seed give the same summary (wall-clock figures aside).
 */
#ifndef BUDDYHINT_REPLAY_H
#define BUDDYHINT_REPLAY_H

#include <buddyhint.h>
#include <buddyhint/strategy.h>
#include <buddyhint/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

enum bh_touch {
  BH_TOUCH_PAGE, /* write one byte in every allocated page (default): resident memory is real */
  BH_TOUCH_NONE, /* write nothing */
  BH_TOUCH_FULL  /* fill every allocated page */
};

/* What a replay attributes its memory to (bh_replay_config_t.by). */
enum bh_replay_by {
  BH_BY_NONE = 0,
  BH_BY_PID,     /* the process (the trace's pid, which ftrace and perf give per thread) */
  BH_BY_COMM,    /* the task name (ftrace, perf, trace.dat; the native formats have none) */
  BH_BY_CALLSITE /* the call site (perf record -g: the first function outside the page
                  * allocator); a trace without call chains has none */
};

/* The most rows an attribution keeps (bh_replay_config_t.by_top); the rest is one row. */
#define BH_REPLAY_MAX_BY 32

/* The longest gap between two events a replay plays out; longer ones are cut to this. */
#define BH_REPLAY_MAX_GAP_NS (600ull * 1000000000ull)
/* The longest idle time after the last event (idle_ns). */
#define BH_REPLAY_MAX_IDLE_NS (86400ull * 1000000000ull)

/* The arena's layout: the recorded machine's if the trace has a description (or --start /
 * --end give one), else the rule-of-thumb x86 layout sized from the trace. */
enum bh_layout_mode {
  BH_LAYOUT_AUTO,   /* the machine's if there is one, else default (the default) */
  BH_LAYOUT_TRACE,  /* the machine's; an error without a description */
  BH_LAYOUT_DEFAULT /* DMA 16 MiB, DMA32 to 4 GiB, Normal above, sized from the trace */
};

/* What the arena holds when the trace starts (in the machine's layout). */
enum bh_start_state {
  BH_START_AUTO,       /* kpageflags if the start snapshot has a free map, else counts if it
                          has buddyinfo and pagetypeinfo, else empty (the default) */
  BH_START_KPAGEFLAGS, /* exactly the snapshot's free blocks and pageblock types */
  BH_START_COUNTS,     /* a state that matches its buddyinfo and pagetypeinfo and the trace */
  BH_START_EMPTY       /* every managed page free; the only one for the default layout */
};

/* Where an allocation goes. */
enum bh_placement {
  BH_PLACEMENT_ALLOCATOR, /* the arena chooses (default); recorded pfns are mapped */
  BH_PLACEMENT_TRACE      /* the recorded block itself, taken off the free lists; when it is
                             not free there, a placement conflict, and the allocator's choice */
};

typedef struct bh_replay_config {
  /* path; "-" = stdin.  A trace that cannot be read twice (stdin, a FIFO) is read once: with
   * memory_bytes and arena.nr_cpus given, or else its first pass keeps its events (see
   * keep_max_bytes; where they cannot be kept the run fails with BH_EINVAL, saying to give
   * both). */
  const char *trace;
  bh_config_t arena; /* arena settings; its zone sizes are ignored, see memory_bytes */
  /* 0 = peak live memory of the trace + 25 % + 64 MiB, 4 MiB aligned.  With memory_bytes and
   * arena.nr_cpus both given the trace is read once, else a first pass finds them. */
  uint64_t memory_bytes;
  bh_hint_config_t hint; /* strategy, options, report mode */
  uint64_t idle_ns; /* virtual idle after the last event (default 60 s; <= BH_REPLAY_MAX_IDLE_NS) */
  enum bh_touch touch;    /* default BH_TOUCH_PAGE */
  double speed;           /* 0 = virtual clock (default); > 0 = wall clock at this speed */
  bool lenient;           /* skip malformed lines (counted) instead of failing */
  uint64_t check_every;   /* run bh_arena_check every N events (0 = never) and at the end */
  bool check_after_steps; /* also after every worker step */
  uint64_t sample_ns;     /* timeline sample interval in virtual time (default 1 s) */
  FILE *timeline;         /* CSV timeline output, or NULL */
  FILE *check_report;     /* where check violations are described, or NULL */
  bool progress;          /* progress line on stderr */
  /*
   * vm.compaction_proactiveness, 0..100 (default 20, Linux's): every 500 ms of virtual time
   * kcompactd's proactive check runs (bh_compact_proactive) and moves the trace's movable
   * blocks when a node's fragmentation score is above its high mark; 0 turns it off.  The
   * replay's map follows the blocks it moves.
   */
  unsigned compaction_proactiveness;
  /*
   * The first pass over a text trace keeps its events (32 bytes each) for the second to play
   * without parsing the text again: up to this many bytes in memory (default 4 MiB, 128 Ki
   * events), and past that in an unlinked temporary file ($TMPDIR, else /tmp) a block of
   * that size at a time, so that the memory of a replay follows its live pages, not its
   * events.  With 0, below one event, or when that file cannot be written, the second pass
   * reads the trace again.  Binary traces are read twice either way: they are read in place,
   * about as fast.
   */
  uint64_t keep_max_bytes;
  /* NULL, or given every byte of the trace file as the replay's first reading of it reads
   * them (bh_trace_opts_t.raw_bytes): the command hashes the trace this way instead of
   * reading it once more */
  void (*trace_bytes)(void *ctx, const void *buf, size_t n);
  void *trace_bytes_ctx;
  /*
   * CSV of every block the strategy reported, or NULL: a header "trace_time_s,pfn,order", then
   * one line per block, trace_time_s on the trace's own clock (its timestamps, in seconds; the
   * timeline's time_s is virtual time from the first event) and pfn in the arena's numbering
   * (the recorded pfns where the arena has the recorded layout), in hex (0x...) with
   * reports_hex, as kernel tools print pfns.
   */
  FILE *reports;
  bool reports_hex;
  /*
   * CSV of the allocator's choice for every allocation, or NULL: a header
   * "trace_time_s,cpu,order,migratetype,kernel_pfn,pfn,where", then, where placement agreement
   * is counted (a start state, allocator placement), one line per allocation:
   * the recorded pfn, the one the arena chose, and where the recorded block was in the arena
   * just before (the names of placement_agreement.misses_by_where; "same" where the arena
   * chose it).  pfns in hex with reports_hex.  The way to find which choices disagree.
   */
  FILE *placements;
  /* lost events in the trace (bh_trace_counts_t.lost_events), and every warning of the
   * summary (bh_replay_summary_t.warnings), make the replay fail with BH_EFORMAT instead of
   * being counted in lost_events or listed (default false) */
  bool strict;
  enum bh_layout_mode layout;  /* default BH_LAYOUT_AUTO */
  enum bh_start_state start;   /* default BH_START_AUTO */
  enum bh_placement placement; /* default BH_PLACEMENT_ALLOCATOR */
  /* in a machine's shape, the rules of its kernel where they differ between the kernels users
   * record: -1 (default) the recorded kernel's, 0 and 1 force pcp_high_tuning off or on
   * (bh_config_t; Linux before 6.7 keeps one pcp high mark, 6.7+ tunes it) */
  int pcp_high_tuning;
  /* the same for pcp_free_high_raised (bh_config_t; Linux 6.16+ waits for free_count to
   * reach batch + high_min / 2 before a free_high drain, earlier kernels for batch) */
  int pcp_free_high_raised;
  /* the start state without what the trace shows of it (--start-order pfn): the pcp and buddy
   * lists in pfn order, each pcp block on its pageblock type's list, and the free map's
   * pageblock types, instead of the lists' order the trace's first allocations show and the
   * types its frees and allocations show: what placement agreement is without that
   * inference; default false */
  bool start_order_pfn;
  /* the start pcp lists with only what the trace shows of them (--start-pcp trace), not also
   * as many more pages on each CPU's lists as the start snapshot's zoneinfo counts there
   * ("count:" of each pageset), taken from the allocated pages with no flag that no event
   * touches (the free map's Q lines; none without them): what the pcp lists' counts decide
   * (when a CPU passes its high mark and drains) without that inference; default false */
  bool start_pcp_trace;
  /* in a machine's shape: every free block at the start at or above the strategy's reporting
   * order counts as reported and discarded by the host (--start-reported all), as on a
   * machine whose reporting has run since it booted; default false: the blocks the start
   * snapshot marks PG_reported (--start-reported snapshot).  For a counterfactual from a
   * recording made with reporting off */
  bool start_reported_all;
  /* in a machine's shape: true (--untraced-allocs infer) keeps every block the trace frees
   * twice with nothing allocated over it between allocated from its first free, as taken by an
   * allocation without an event (untraced_allocs); default false (late): only those the pcp
   * lists' order shows gone before their second free, the others as untraced_ignore says */
  bool untraced_infer;
  /* snapshots from directories of /proc files (buddyinfo, pagetypeinfo, zoneinfo, optionally
   * kpageflags): they replace the trace's own, and the layout comes from their zoneinfo */
  const char *start_dir, *end_dir;
  /* at the end of the trace, the arena's buddyinfo, pagetypeinfo, zoneinfo and vmstat in the
   * kernel's formats go to files of these names in this directory (made if missing) */
  const char *dump_dir;
  /*
   * Attribute resident memory and refaults to the trace's processes or call sites (default
   * BH_BY_NONE: nothing is attributed, and the replay pays nothing for it).  Every page keeps
   * the origin of the allocation that last held it, freed or not, so memory freed but not yet
   * reported counts against whoever used it last.  The by_top heaviest keys (default 10, at
   * most BH_REPLAY_MAX_BY) get a row of bh_replay_summary_t.by_rows, the rest one "(other)".
   */
  enum bh_replay_by by;
  unsigned by_top;
  /* in a machine's shape: a free of memory the replay holds free, of a pcp order (an
   * allocation without an event took it, as alloc_pages_bulk does), is dropped, and no pair
   * is kept from its first free (--untraced-allocs ignore; untraced_frees).  Default false
   * (late): the block is taken from the list it lies on right before the free, as that
   * allocation at the latest did, and freed as the kernel freed it (untraced_frees_applied) */
  bool untraced_ignore;
  /* in a machine's shape, with the pcp events: true (--untraced-allocs lists) follows the
   * order-0 pcp lists as the trace shows them (frees on the head, refills at the tail), and
   * where the trace's allocation from a list takes a page below some of them (or a page that
   * lay on it at the start, below them all), allocates those right before it, as an
   * allocation without an event took them (untraced_takes: the kernel stacks a fork takes
   * through alloc_pages_bulk).  For a recording without record's alloc_pages_bulk probes:
   * chosen by itself where the recording says so (its "record" section, bulk_probes 0) unless
   * untraced_late.  Default false, late as above */
  bool untraced_lists;
  /* late even where the recording says it has no alloc_pages_bulk probes (--untraced-allocs
   * late) */
  bool untraced_late;
  /* the pcp decay (decay_pcp_high) on every CPU every second of the trace (--pcp-decay tick),
   * even where the trace has the vmstat worker's runs (BH_EV_VMSTAT, `record --pcp-events`);
   * default false: where it has them, each CPU's decay runs at its runs only, as the kernel's
   * deferrable vmstat work does (an idle CPU's waits for it to wake) */
  bool pcp_decay_tick;
  /* under allocator placement, refill a CPU's empty pcp list at the allocation's own event
   * (--pcp-refill alloc); default false: in a recorded machine's layout, where the trace has
   * the refill events (mm_page_alloc_zone_locked with percpu_refill, `record --pcp-events`),
   * at the refill's event, where the kernel refilled it, with the arena's own blocks (the
   * allocation is traced after it has zeroed its pages: a huge page's refill comes
   * milliseconds before it, and two CPUs' refills can be traced in the other order than
   * their allocations) */
  bool pcp_refill_alloc;
  /* delayed work (page reporting's 2 s, a strategy's requeued passes) fires when it is due
   * (true), not at the tick the recorded kernel's timer wheel fires it (false, the default
   * where the machine's hz is known, or kernel_hz given, and the trace has the vmstat
   * worker's runs to place the wheel's ticks: docs/START-STATE.md) */
  bool pass_timer_exact;
  /* the recorded kernel's CONFIG_HZ where the machine description has none (0: none) */
  unsigned kernel_hz;
} bh_replay_config_t;

/* Fills the defaults documented above (the arena defaults of bh_config_init). */
BH_API void bh_replay_config_init(bh_replay_config_t *cfg);

/*
 * Why a pcp event of a --placement trace replay did not apply, by what the replay held where
 * the event's block is (docs/PCP-EVENTS.md): a drain of a block that is not
 * on a pcp list, a refill of one that is not free.  One list: the enum, the names in the JSON
 * (pcp_events_missed_by_cause) and bh_replay_pcp_cause_name.
 *   drain_start_state  the block is memory the start state holds allocated before the trace,
 *                      not all of it in pieces it could take back (pcp_drains_adopted: those
 *                      it could): it was on a kernel's pcp list at the start
 *   drain_allocated    a traced allocation holds it: its free is missing (lost, or not traced)
 *   drain_free         it is free on the free lists: it reached the kernel's pcp list without
 *                      a zone_locked event (a fallback steal, CMA) or its refill was missed
 *   drain_split        the replay has its pages in other blocks (a pcp block of another order)
 *   refill_start_state the start state holds it allocated before the trace: the kernel had it
 *                      free (the free map's skew, or a free without an event; not a page a
 *                      take from the buddy lists came to before any other event)
 *   refill_allocated   a traced allocation holds it: its free is missing
 *   refill_split       partly free, partly not, in the replay (a piece of a block on a pcp list
 *                      at a larger order is not a miss: the kernel had freed that block past
 *                      its pcp lists, and it goes to the free lists first)
 *   isolated           a refill of a block the replay's hinting had taken off the free lists
 *                      to report it
 *   window             a drain while the start snapshot's free map was read, of a block the
 *                      map holds free: it was read after the drain (the replay is right)
 *   invalid            outside the arena, a zone without pcp lists, not a pcp order
 */
/* clang-format off */
#define BH_REPLAY_PCP_CAUSES(X)                                                                    \
  X(drain_start_state) X(drain_allocated) X(drain_free) X(drain_split)                             \
  X(refill_start_state) X(refill_allocated) X(refill_split) X(isolated) X(window) X(invalid)
/* clang-format on */
enum bh_replay_pcp_cause {
#define BH__PCP_CAUSE_ENUM(n) BH_PCP_MISS_##n,
  BH_REPLAY_PCP_CAUSES(BH__PCP_CAUSE_ENUM)
#undef BH__PCP_CAUSE_ENUM
      BH_PCP_MISS_CAUSES
};

#define BH_REPLAY_MAX_STATS 48
/* Warnings a summary holds at most (more are counted in nr_warnings_dropped). */
#define BH_REPLAY_MAX_WARNINGS 8
/* The lost-event share above which a summary warns: 2 %. */
#define BH_REPLAY_LOST_WARN_SHARE 0.02
#define BH_REPLAY_MAX_ZONES (BH_MAX_NODES * BH_NR_ZONE_TYPES)

/*
 * How far the replay's state at the end of the trace lands from the machine's end snapshot.
 * Per zone and order the free blocks (buddyinfo), per zone and migratetype the pageblocks
 * (pagetypeinfo; index BH_MT_TYPES is CMA, which the model does not have).
 */
typedef struct bh_replay_fidelity {
  bool present; /* there was an end snapshot to compare with */
  int nr_zones;
  struct {
    int node, type;
    uint64_t predicted[BH_ORDER_LIMIT + 1], recorded[BH_ORDER_LIMIT + 1];
    uint64_t pb_predicted[BH_MT_TYPES + 1], pb_recorded[BH_MT_TYPES + 1];
  } zones[BH_REPLAY_MAX_ZONES];
  unsigned max_order, pageblock_order;
  /* the headline: the free memory in the wrong order, sum over zones and orders of
   * 2^order * |predicted - recorded| blocks over predicted + recorded free pages (0: the same
   * free blocks per zone and order; 1: nothing in common) */
  double free_order_error;
  uint64_t predicted_free_pages, recorded_free_pages;
  /* free memory in blocks of pageblock order and above, which THP and page reporting need */
  uint64_t predicted_high_order_pages, recorded_high_order_pages;
  double high_order_error; /* (predicted - recorded) / recorded; 0 if none was recorded */
  /* pageblocks of the wrong type: sum over zones and types of |predicted - recorded| over
   * twice the recorded pageblocks */
  double pageblock_error;
  /* free blocks reported (PageReported) at the end: the end snapshot's free map against the
   * arena, matched by pfn and order; only where the free map records reporting */
  bool reported_present;
  uint64_t reported_recorded, reported_predicted, reported_matched;
} bh_replay_fidelity_t;

/* How often the arena chose the very block the kernel chose, overall and per order and the
 * request's migratetype (a recorded machine's layout and start state, allocator placement). */
/*
 * Where the kernel's block was in the arena when the arena chose another one (placement
 * agreement by cause, docs/MACHINE-SHAPE.md):
 *   PCP_HEAD        at the head of the very pcp list the allocation took from
 *   PCP_DEEPER      on that list, further from its head (the list's order differs)
 *   PCP_FAR         on a pcp list, more than 256 blocks from its head
 *   PCP_OTHER_LIST  on another pcp list of the same CPU (another migratetype or order)
 *   PCP_OTHER_CPU   on another CPU's pcp list
 *   BUDDY           a free block of that order on the buddy lists
 *   BUDDY_INSIDE    inside a larger free block on the buddy lists
 *   ALLOCATED       allocated by an earlier allocation of the replay
 *   PRETRACE        allocated before the trace, by the start state
 *   OTHER           anything else (isolated, outside the arena)
 */
enum {
  BH_WHERE_PCP_HEAD,
  BH_WHERE_PCP_DEEPER,
  BH_WHERE_PCP_FAR,
  BH_WHERE_PCP_OTHER_LIST,
  BH_WHERE_PCP_OTHER_CPU,
  BH_WHERE_BUDDY,
  BH_WHERE_BUDDY_INSIDE,
  BH_WHERE_ALLOCATED,
  BH_WHERE_PRETRACE,
  BH_WHERE_OTHER,
  BH_WHERE_NR
};

typedef struct bh_replay_agreement {
  bool present;
  uint64_t allocs, same;
  uint64_t by_order[BH_ORDER_LIMIT + 1][2]; /* [allocs, same] */
  uint64_t by_mt[BH_MT_TYPES][2];
  uint64_t miss_where[BH_WHERE_NR];       /* allocations that chose another block, by where the
                                              kernel's block was then */
  uint64_t first_miss_where[BH_WHERE_NR]; /* the same, for the first miss on each CPU's pcp
                                             list of each (zone, migratetype, order) */
} bh_replay_agreement_t;

/*
 * The pcp drains compared (allocator placement, a trace with the pcp events): a moment is an
 * event of a CPU (a free, a vmstat run, ...) after which the kernel's trace shows that CPU's
 * pcp lists drained (its mm_page_pcpu_drain events up to the CPU's next other event) or the
 * replay drained them while playing it.  kernel and replay count the moments each drained,
 * same those where both drained as many pages; the first moment where they differ (first_*,
 * first_time_s < 0: none), in the trace's clock.  Where the pcp model and the kernel part.
 */
typedef struct bh_replay_drains {
  bool present;
  uint64_t kernel, replay, same;
  double first_time_s;
  int first_cpu;
  uint64_t first_kernel_pages, first_replay_pages;
} bh_replay_drains_t;

typedef struct bh_replay_summary {
  char trace[512], strategy[64], backing[16], report_mode[16], trace_format[32];
  uint64_t events, allocs, frees, alloc_failures, unknown_frees, skipped_lines;
  uint64_t malformed_lines, trace_failed_allocs, split_frees, orders_too_large;
  uint64_t lost_frees;       /* a recorded pfn allocated again while still live: freed for it */
  uint64_t batched_dups;     /* mm_page_free_batched events repeating an mm_page_free */
  uint64_t gaps_shortened;   /* gaps between events cut to BH_REPLAY_MAX_GAP_NS */
  uint64_t time_reversals;   /* events timestamped before an earlier event (played at its time) */
  uint64_t lost_events;      /* events the recording lost, as the trace says (bh_trace_counts_t) */
  char layout[16];           /* "machine" or "default" */
  char start_state[16];      /* "kpageflags", "counts" or "empty" */
  char placement[16];        /* "allocator" or "trace" */
  bool pcp_high_tuned;       /* the arena's pcp high marks were tuned (6.7+) or fixed (6.1) */
  bool pcp_free_high_raised; /* free_high from batch + high_min / 2 (6.16+) or from batch */
  bool start_order_pfn;      /* the start state was not inferred from the trace (start_order_pfn) */
  bool start_pcp_trace;      /* start_pcp_trace: the start pcp lists as the trace shows them */
  bool start_reported_all;   /* start_reported_all: every large free block started reported */
  uint64_t pretrace_frees;   /* frees of memory the start state holds allocated before the trace
                                (played as frees; without a start state they are unknown_frees) */
  uint64_t start_conflicts;  /* allocations of blocks the start state holds allocated */
  uint64_t placement_conflicts; /* --placement trace: recorded block not free in the arena */
  /* --placement trace with a trace that has the pcp events (mm_page_pcpu_drain,
   * mm_page_alloc_zone_locked): those that moved a block between the pcp and the free lists,
   * those whose block was not where the event says (free, on a pcp list), and zone_locked
   * events without percpu_refill (the allocation that follows takes the block) */
  uint64_t pcp_events_applied, pcp_events_missed, pcp_events_direct;
  uint64_t pcp_drains_missed; /* of pcp_events_missed, the drains (the rest are refills) */
  uint64_t pcp_missed_by_cause[BH_PCP_MISS_CAUSES]; /* pcp_events_missed by cause */
  /* of pcp_events_applied, refills of a block the replay held on a pcp list, or of a piece of
   * one: the kernel had freed it to its free lists past the pcp lists (free_unref_page when
   * the pcp lock is taken, an isolated pageblock), which the free's event does not say; it
   * moves to the refilling CPU's list (a piece's block to the free lists first); of them,
   * blocks the start state had put on a pcp list (the kernel had them free: the start state's
   * error, not the free's) */
  uint64_t pcp_refills_relisted, pcp_refills_relisted_start;
  /* of pcp_events_applied, drains of memory the start state holds allocated before the trace:
   * it was on a kernel's pcp list at the start, which the free map cannot show (the start
   * state's error); it goes to the free lists as the kernel's did */
  uint64_t pcp_drains_adopted;
  /* --placement trace with the fallbacks (mm_page_alloc_extfrag, recorded with --pcp-events):
   * those applied (a claim retyped the pageblock and moved its free blocks; a steal, or a claim
   * of a block of pageblock order or more, put its block on a pcp list where the kernel's
   * rmqueue_bulk could have, or needed nothing) and missed (the pageblock Isolate or
   * HighAtomic, or the block not free where the event says); of the applied, the claims, the
   * pageblocks they changed the type of (a claim of a pageblock the replay already has of the
   * allocation's type changes none), and the blocks put on a pcp list.  With allocator
   * placement the arena makes its own fallbacks: a caller's fallback events are only counted
   * (ignored); a trace's are not read. */
  uint64_t extfrag_events_applied, extfrag_events_missed, extfrag_events_ignored;
  uint64_t extfrag_claims_applied, extfrag_pageblocks_retyped, extfrag_refills;
  uint64_t start_pcp_pages;        /* pages the start state put on pcp lists */
  uint64_t start_pcp_hidden_pages; /* of those, pages zoneinfo counts that the trace does not
                                      show (not start_pcp_trace) */
  /* the recorded events (start/count_events) that changed the pcp lists between zoneinfo's
   * reading and the trace's start, and the pages they added to its counts (net, all CPUs) */
  uint64_t start_pcp_count_events;
  int64_t start_pcp_count_adjust;
  /* of the hidden pages, those taken off again: a CPU's free reached its pcp high mark where
   * the trace shows no drain, before its first drain after an order-0 free, or the first
   * drain, a decay's, was shorter than the replay's would be (allocator placement, with the
   * pcp events): zoneinfo's count held that many too many */
  uint64_t start_pcp_surplus_pages;
  /* pages the pcp high marks were lowered by: the order-0 free the trace's first drain after
   * one on a CPU follows, or a THP free a drain follows before it, left its count that far
   * below the mark, or the first drain, a decay's, was that much longer than the replay's
   * would be (allocator placement, with the pcp events; not below high_min): the kernel's mark
   * was that much lower, or its count higher by pages the trace never shows */
  uint64_t start_pcp_deficit_pages;
  /* of those, pages the CPU's first decay after showed the kernel's lists held instead (its
   * mark as it was, its count that much higher: docs/RESULTS-unseen.md), counted against the
   * mark from then on */
  uint64_t start_pcp_ghost_pages;
  /* a recording whose zoneinfo does not print high_max (Linux 6.7-6.12): pages the zones' pcp
   * caps were lowered by where a calibration found the kernel's cap below the arena's */
  uint64_t pcp_high_max_lowered;
  uint64_t start_unplaced_blocks;   /* counts start: free blocks that found no place */
  uint64_t start_unexplained_pages; /* first allocated by the trace, allocated in the start */
  uint64_t start_repaired_pages;    /* free in the free map, but first freed by the trace: the
                                       start state holds them allocated */
  /* free blocks the free map records as reported (PG_reported) that start discarded by the
   * host, at the tail of their lists (every strategy), and those that are not free blocks of
   * that order in the start state (repaired) */
  uint64_t start_reported_blocks, start_reported_missed;
  uint64_t start_reported_marked; /* of start_reported_blocks, those the strategy sees as
                                     reported (BH_STRATEGY_PAGE_REPORTED); all are discarded */
  /* events while the start snapshot was read that it had already seen: an allocation of a
   * block it holds allocated (that block is the allocation), a free of one it holds free */
  uint64_t window_events;
  /* frees of memory the kernel held free by the trace and the start state: the allocation
   * left no event (alloc_pages_bulk serves pages from pcp lists without mm_page_alloc) */
  uint64_t untraced_frees;
  bh_replay_agreement_t agreement;
  bh_replay_fidelity_t fidelity;
  uint64_t memory_bytes, nr_cpus;
  double virtual_seconds, wall_seconds, cpu_seconds;
  uint64_t rss_peak_bytes, rss_final_bytes, live_peak_bytes, live_final_bytes;
  uint64_t reported_bytes, madvise_calls, refaults, refault_blocks, minflt;
  /* of reported_bytes, the resident memory the reports took back: pages written by the
   * workload and not discarded already when a report discarded them (bh_reporter_stats_t) */
  uint64_t returned_bytes;
  long check_violations;
  /*
   * What makes the result suspect, one sentence each: a trace with allocations and no frees
   * (its free events were not recorded), a lost-event share above BH_REPLAY_LOST_WARN_SHARE,
   * files of a --start/--end folder that were not read.  With bh_replay_config_t.strict any
   * of them fails the replay instead (BH_EFORMAT).
   */
  int nr_warnings, nr_warnings_dropped;
  char warnings[BH_REPLAY_MAX_WARNINGS][320];
  /* the command the trace was read through (perf.data: perf script ...), or "" */
  char trace_command[512];
  /* bh_replay_config_t.by: the rows, heaviest resident memory first */
  enum bh_replay_by by;
  int nr_by_rows;
  struct bh_replay_by_row {
    char key[96];            /* the pid, comm or call site; "(unknown)", "(other)" */
    uint64_t allocs;         /* allocations the replay made for it */
    uint64_t alloc_bytes;    /* memory they asked for */
    uint64_t live_bytes;     /* of it, still allocated at the end */
    uint64_t resident_bytes; /* resident at the end in pages it allocated last */
    uint64_t refaults;       /* reported pages its allocations faulted back in */
  } by_rows[BH_REPLAY_MAX_BY + 1];
  uint64_t arena_stats[BH_NR_STATS];
  int nr_strategy_stats;
  char strategy_stat_names[BH_REPLAY_MAX_STATS][32];
  double strategy_stats[BH_REPLAY_MAX_STATS];
  /* kpageflags start: pageblocks whose type the trace shows to differ from the free map's
   * choice (the trace's wins; not with start_order_pfn) */
  uint64_t start_retyped_pageblocks;
  /* of those, pageblocks a split showed not of the map's type (a take of the head of a larger
   * free block shows the lists below it empty) */
  uint64_t start_split_retyped_pageblocks;
  /* frees that an allocation without an event followed (the trace frees the block again with
   * nothing allocated over it between: alloc_pages_bulk takes pcp pages without
   * mm_page_alloc), left allocated; with untraced_infer only */
  uint64_t untraced_allocs;
  /* kpageflags start: pages allocated in the free map whose first event is a take from the
   * buddy lists (mm_page_alloc_zone_locked): the start state holds them free */
  uint64_t start_taken_pages;
  /* of untraced_frees, those whose block was free in the arena, taken from its list right
   * before the free and freed through the free path (not with untraced_ignore) */
  uint64_t untraced_frees_applied;
  /* pages a refill put on a pcp list that an allocation without an event took, as the trace's
   * next allocation from that list shows (it takes a page below them): allocated right
   * before it (untraced_lists only) */
  uint64_t untraced_takes;
  /* the pcp lists were followed for them (untraced_lists, asked for or by the recording) */
  bool untraced_lists;
  /* the order a strategy that is the kernel's page reporting (bubble, adaptive) reported at,
   * -1 for another strategy; and where it came from: "option" (its order option), "recorded"
   * (the recorded machine's page_reporting_order, taken where no option gives one) or
   * "default" (the strategy's own, the pageblock order) */
  int reporting_order;
  char reporting_order_source[16];
  /* machine shape: frees the trace shows made while their CPU's pcp lock was held (inside a
   * batched free's second loop, between two of its mm_page_free_batched events: an interrupt
   * freeing), freed to the buddy lists as the kernel's failed trylock did */
  uint64_t locked_frees;
  /* of those, the frees the trace shows went to the buddy lists by a take from them
   * (mm_page_alloc_zone_locked) of the freed block with no drain or allocation between */
  uint64_t locked_frees_taken;
  /* machine shape: frees of a batch (free_unref_folios) played at their mm_page_free_batched
   * event, where the kernel puts the page on its pcp list, not at their mm_page_free */
  uint64_t batched_frees_deferred;
  /* the vmstat worker's runs in the trace (BH_EV_VMSTAT), and what ran the pcp decay: "vmstat"
   * (each CPU's at its runs), "tick" (every CPU every second) or "drains" (none: the trace's
   * own drains, applied under --placement trace) */
  uint64_t vmstat_events;
  char pcp_decay[8];
  /* when a pcp list was refilled under allocator placement: "event" (at the trace's refill
   * events; pcp_refills_at_event of them refilled an empty list), "alloc" (at the allocations:
   * --pcp-refill alloc, or a trace without those events), "trace" (--placement trace: the
   * trace's own refills) */
  char pcp_refill[8];
  uint64_t pcp_refills_at_event;
  /* when delayed work fired: "wheel" (at the recorded kernel's timer wheel's ticks, of
   * pass_timer_hz, placed by the vmstat worker's runs: pass_timer_share of them in one tick
   * of every 8) or "exact" (when due) */
  char pass_timer[8];
  unsigned pass_timer_hz;
  double pass_timer_share;
  bh_replay_drains_t drains;
} bh_replay_summary_t;

/*
 * Runs a replay.  Returns 0 with *out filled; BH_EFORMAT for a malformed trace (err says
 * "FILE:LINE: what"), BH_EIO for a file that cannot be read, BH_EINVAL/BH_ENOENT for a bad
 * configuration or strategy, BH_ENOMEM if the arena cannot be created.  err (errlen bytes) gets
 * a message on failure.
 */
BH_API int bh_replay_run(const bh_replay_config_t *cfg, bh_replay_summary_t *out, char *err,
                         size_t errlen);

/*
 * The zones a replay gives an arena of total bytes (rounded up to max-order blocks of
 * cfg->max_order), laid out as x86: DMA the first 16 MiB, DMA32 up to 4 GiB, Normal above.
 * Only cfg->zone_bytes is written.
 */
BH_API void bh_replay_zone_layout(bh_config_t *cfg, uint64_t total);

typedef struct bh_replay_by_row bh_replay_by_row_t;

/* "pid", "comm", "callsite" (BH_BY_NONE: "none"); and back: 0 or BH_EINVAL. */
BH_API const char *bh_replay_by_name(enum bh_replay_by by);
BH_API int bh_replay_by_parse(const char *name, enum bh_replay_by *out);

/* The name of a pcp miss cause as the JSON has it ("drain_free", ...); NULL out of range. */
BH_API const char *bh_replay_pcp_cause_name(int cause);

/* The version of the summary's JSON (its "schema_version"): raised when a key changes
 * meaning or goes away, not when one is added. */
#define BH_REPLAY_SCHEMA_VERSION 1

/* Writes the summary as one JSON object (keys documented in docs/USAGE.md). */
BH_API int bh_replay_summary_json(const bh_replay_summary_t *s, FILE *out, int indent);

#ifdef __cplusplus
}
#endif

#endif
