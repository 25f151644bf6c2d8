/*
 * libbuddyhint: the Linux zoned buddy page allocator in userspace, as an instrument for free
 * page hinting research.
 *
 * An arena is one contiguous region of "physical" pages, split into nodes and zones exactly as
 * a Linux machine's memory is.  Pages are handed out by a faithful reimplementation of
 * mm/page_alloc.c (Linux 6.x): free_area lists per order and migratetype, __rmqueue_smallest +
 * expand, __free_one_page with buddy_merge_likely, mobility grouping with the fallback table and
 * the half-pageblock claim rule, watermarks and lowmem_reserve, per-CPU page (pcp) lists.
 *
 * Page frame numbers (pfn) count 4 KiB pages from the start of the arena.  In the `mmap`
 * backing every pfn is backed by a real page of an anonymous mapping; in the `sim` backing only
 * the metadata exists and addresses are never handed out (use the pfn calls).
 *
 * Every call that can fail returns 0 or a negative BH_E* code (the pointer calls return NULL
 * and say why through an optional out-parameter).  Misuse (a double free, a foreign or
 * misaligned address, a wrong order) is reported and leaves the arena unchanged.
 *
 * Arguments: one rule for every call of this header and of those in include/buddyhint/.
 *   - A NULL handle (arena, zone, hint, trace, writer) or a NULL pointer the call needs is
 *     never dereferenced.  The call then returns BH_EINVAL if it returns an error code; NULL
 *     if it returns a pointer; 0 if it returns a count, a size or an order; BH_PFN_NONE if it
 *     returns a pfn (bh_addr_to_pfn: -1); false if it answers a question; and a void call
 *     does nothing (except that an output structure it was given is zeroed).  Name lookups
 *     return a placeholder ("?", "unknown") for values they do not know.  A few calls give
 *     NULL a meaning of their own, which their comment says (bh_trace_error(NULL), a NULL
 *     config for the defaults).
 *   - An enum or count out of its range (a clock or report mode, an order above max_order,
 *     nopts > 0 with opts NULL) is BH_EINVAL, or for calls without an error code the same
 *     answer as for NULL.
 *   - A handle that was destroyed may not be used again: destroying, closing or detaching it
 *     twice, or any call after that, is undefined, as with free().
 * tests/api/test_api_args.c checks this rule for every entry point.
 */
#ifndef BUDDYHINT_H
#define BUDDYHINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <buddyhint/stats.h>
#include <buddyhint/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BH_BUILDING_LIBRARY)
#define BH_API __attribute__((visibility("default")))
#else
#define BH_API
#endif

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                    */
/* ---------------------------------------------------------------------------------------- */

/* X(NAME, value, message): one list generates the enum, bh_strerror() and bh_err_name(). */
#define BH_ERRNO_MAP(X)                                                                            \
  X(EINVAL, -1, "invalid argument")                                                                \
  X(ENOMEM, -2, "out of memory")                                                                   \
  X(ENOSPC, -3, "no free block satisfies the request")                                             \
  X(EFAULT, -4, "address or pfn outside the arena")                                                \
  X(EALIGN, -5, "address or pfn not aligned to the order")                                         \
  X(ENOTALLOC, -6, "not the head of an allocated block (double free?)")                            \
  X(EORDER, -7, "order does not match the allocated block")                                        \
  X(ESYS, -8, "a system call failed (see errno)")                                                  \
  X(ENOTSUP, -9, "not supported in this configuration")                                            \
  X(ENOENT, -10, "no such name")                                                                   \
  X(EBUSY, -11, "resource busy")                                                                   \
  X(EFORMAT, -12, "malformed input")                                                               \
  X(EIO, -13, "input/output error")

#define BH__ERR_ENUM(name, value, msg) BH_##name = (value),
enum bh_error { BH_OK = 0, BH_ERRNO_MAP(BH__ERR_ENUM) };
#undef BH__ERR_ENUM

/* Returns a static message for a BH_E* code (or "success" for 0, "unknown error" otherwise). */
BH_API const char *bh_strerror(int err);
/* Returns the code's name without the BH_ prefix, e.g. "ENOMEM"; "OK" for 0; "?" if unknown. */
BH_API const char *bh_err_name(int err);
/* Returns the library version as "MAJOR.MINOR.PATCH". */
BH_API const char *bh_version(void);

/* ---------------------------------------------------------------------------------------- */
/* Topology, migratetypes, gfp flags                                                         */
/* ---------------------------------------------------------------------------------------- */

#define BH_PAGE_SHIFT 12
#define BH_PAGE_SIZE (1UL << BH_PAGE_SHIFT)
#define BH_MAX_NODES 8
#define BH_ORDER_LIMIT 18 /* largest configurable MAX_PAGE_ORDER */

enum bh_zone_type { BH_ZONE_DMA, BH_ZONE_DMA32, BH_ZONE_NORMAL, BH_ZONE_MOVABLE, BH_NR_ZONE_TYPES };

/* Same order as Linux's enum migratetype (without CMA). */
enum bh_migratetype {
  BH_MT_UNMOVABLE,
  BH_MT_MOVABLE,
  BH_MT_RECLAIMABLE,
  BH_MT_HIGHATOMIC, /* == MIGRATE_PCPTYPES */
  BH_MT_ISOLATE,
  BH_MT_TYPES
};
#define BH_MT_PCPTYPES BH_MT_HIGHATOMIC

/* Names as /proc prints them: "DMA", "Normal", "Unmovable", "HighAtomic", ... */
BH_API const char *bh_zone_name(int zone_type);
BH_API const char *bh_migratetype_name(int mt);

/*
 * GFP-style request flags.  Zone selection follows Linux's gfp_zone(): DMA, DMA32, or
 * (default) Normal; MOVABLE together with HIGHMEM may use the Movable zone.  Mobility:
 * MOVABLE → Movable, RECLAIMABLE → Reclaimable, neither → Unmovable.
 */
#define BH_GFP_DMA 0x01u
#define BH_GFP_HIGHMEM 0x02u
#define BH_GFP_DMA32 0x04u
#define BH_GFP_MOVABLE 0x08u
#define BH_GFP_RECLAIMABLE 0x10u
#define BH_GFP_HIGH 0x20u      /* __GFP_HIGH: may dip into the min reserve (ALLOC_MIN_RESERVE) */
#define BH_GFP_ATOMIC 0x40u    /* cannot block: ALLOC_NON_BLOCK, high-order atomic reserve */
#define BH_GFP_ZERO 0x80u      /* zero the pages (mmap backing) */
#define BH_GFP_THISNODE 0x100u /* only the local node's zones */
#define BH_GFP_NOFALLBACK_WMARK 0x200u /* use the min watermark as the first attempt (slowpath) */
#define BH_GFP_NO_KSWAPD 0x400u        /* without __GFP_KSWAPD_RECLAIM: never wakes kswapd */
#define BH_GFP_NOMEMALLOC 0x800u /* __GFP_NOMEMALLOC: with ATOMIC, no ALLOC_NON_BLOCK reserves */

#define BH_GFP_KERNEL 0u
#define BH_GFP_USER_MOVABLE (BH_GFP_MOVABLE | BH_GFP_HIGHMEM) /* GFP_HIGHUSER_MOVABLE */
/* GFP_TRANSHUGE_LIGHT: no reclaim of either kind, no reserves; GFP_TRANSHUGE: may block */
#define BH_GFP_TRANSHUGE_LIGHT                                                                     \
  (BH_GFP_MOVABLE | BH_GFP_HIGHMEM | BH_GFP_ATOMIC | BH_GFP_NOMEMALLOC | BH_GFP_NO_KSWAPD)
#define BH_GFP_TRANSHUGE (BH_GFP_MOVABLE | BH_GFP_HIGHMEM | BH_GFP_NOMEMALLOC | BH_GFP_NO_KSWAPD)

/* gfp_zone() and gfp_migratetype() as Linux computes them. */
BH_API int bh_gfp_zone(unsigned gfp);
BH_API int bh_gfp_migratetype(unsigned gfp);

/* ---------------------------------------------------------------------------------------- */
/* Configuration                                                                             */
/* ---------------------------------------------------------------------------------------- */

enum bh_backing {
  BH_BACKING_MMAP,  /* real anonymous private mapping (MAP_NORESERVE); data pages are memory */
  BH_BACKING_MEMFD, /* a memfd mapped shared: reports may punch holes, as QEMU does for files */
  BH_BACKING_SIM    /* metadata only; addresses are not handed out */
};

enum bh_pcp_key {
  BH_PCP_PER_THREAD, /* each thread gets a pcp slot round-robin on first use (default) */
  BH_PCP_PER_CPU     /* the slot of the CPU the thread runs on (sched_getcpu) */
};

/*
 * Arena configuration.  bh_config_init() fills the defaults given on each field; the library
 * reads no environment.  Sizes are in bytes and must be multiples of the largest block
 * (4 KiB << max_order, 4 MiB by default); a zone size of 0 means the zone is absent.
 */
/*
 * One zone of an explicit layout: a recorded machine's zone at its own pfns (see
 * bh_config_t.nr_layout_zones).  Watermarks all 0: computed from managed_pages and
 * min_free_kbytes as at boot; else taken as they are, with protection as lowmem_reserve.
 */
typedef struct bh_zone_layout {
  int node, type; /* type: enum bh_zone_type */
  uint64_t start_pfn, spanned_pages, present_pages, managed_pages;
  uint64_t wmark_min, wmark_low, wmark_high;
  uint64_t protection[BH_NR_ZONE_TYPES]; /* lowmem_reserve against requests for each type */
} bh_zone_layout_t;

typedef struct bh_config {
  enum bh_backing backing; /* default BH_BACKING_MMAP */
  unsigned nr_nodes;       /* 1..BH_MAX_NODES, default 1; every node gets zone_bytes */
  /* Per-node zone sizes.  Default 1 GiB: DMA 16 MiB, DMA32 496 MiB, Normal 512 MiB, Movable 0. */
  uint64_t zone_bytes[BH_NR_ZONE_TYPES];
  unsigned max_order;       /* MAX_PAGE_ORDER (inclusive), default 10, bounds 1..BH_ORDER_LIMIT */
  unsigned pageblock_order; /* default 9, bounds 1..max_order */
  bool mobility_grouping;   /* page_group_by_mobility_disabled == !this; default true */
  bool shuffle;             /* shuffle_pick_tail for orders >= max_order; default false */
  uint64_t seed;            /* seeds the shuffle bits; default 1 */
  /* min_free_kbytes; 0 = Linux's default int_sqrt(lowmem_kbytes*16) clamped to [128, 262144]. */
  uint64_t min_free_kbytes;
  unsigned watermark_scale_factor; /* 1/10000 of managed pages, default 10, bounds 1..3000 */
  unsigned watermark_boost_factor; /* default 15000 (150 % of high), 0 disables boosting */
  unsigned lowmem_reserve_ratio[BH_NR_ZONE_TYPES]; /* default {256, 256, 32, 0} */
  bool pcp;                                        /* per-CPU page lists; default true */
  unsigned nr_cpus;        /* pcp slots (CPUs of the modelled machine), default 2, 1..1024 */
  enum bh_pcp_key pcp_key; /* default BH_PCP_PER_THREAD */
  unsigned pcp_batch;      /* 0 = Linux's zone_batchsize(); else pages, 1..65535 */
  unsigned pcp_high;       /* 0 = Linux's zone_highsize(); else pages, >= 4*batch */
  bool pcp_thp;            /* pcp lists for pageblock_order too (NR_PCP_THP), default true */
  /* each pcp's high mark tuned as it runs between high_min and high_max (nr_pcp_high,
   * decay_pcp_high: Linux 6.7+; default true); false: fixed at zone_highsize(), as before 6.7
   * (Linux 6.1's pageset_update) */
  bool pcp_high_tuning;
  /* a CPU freeing orders 1-3 with no allocation between drains at once (free_high) once its
   * free_count reaches batch + high_min / 2 (Linux 6.16+); false (default): once it reaches
   * batch (6.7-6.15, free_unref_page_commit) */
  bool pcp_free_high_raised;
  bool numa_bind;    /* mbind each node's range to a host node (libnuma), default false */
  bool debug_checks; /* extra consistency checks on every call; default false */
  /* compaction moves allocated blocks above order 0 whole (>0 order folio compaction, Linux
   * 6.9+; default true); false: order-0 pages only, larger blocks stay (before 6.9) */
  bool compact_large_blocks;
  /*
   * false (default): nothing is reclaimable, as in the model: direct reclaim makes no
   * progress, so a failing request that may block never drains the pcp lists or gives a
   * HighAtomic pageblock back unforced.  true: direct reclaim counts as having made progress,
   * as on a machine with page cache to reclaim: such a request gives one HighAtomic pageblock
   * back (keeping the last), drains every pcp list and retries, as
   * __alloc_pages_direct_reclaim does after a successful reclaim (no page is reclaimed).
   */
  bool reclaim_progress;
  /*
   * true (default): any thread may call into the arena; zone locks and pcp locks are taken
   * as in an SMP kernel.  false: as a CONFIG_SMP=n kernel, where spinlocks compile to nothing:
   * the caller guarantees that one thread at a time uses the arena (no BH_CLOCK_THREAD worker
   * either), and no lock is taken.  Replays on the virtual clock run this way.
   */
  bool smp;
  /*
   * An explicit layout (default none: zones from zone_bytes): nr_layout_zones zones at their
   * recorded pfns, node-major and low to high, so that the arena's pfns are the machine's.
   * A zone may start or end inside a max-order block (DMA starts at pfn 1 on x86): the pages
   * of that block outside the zone are absent, allocated for good, as are the pages between
   * zones; two zones may not share a max-order block.  zone_bytes and nr_nodes are ignored
   * (nr_nodes becomes the highest node + 1).  Every page of a zone's span starts free;
   * bh_arena_populate() gives the arena a machine's actual state.
   */
  unsigned nr_layout_zones;
  bh_zone_layout_t layout_zones[BH_MAX_NODES * BH_NR_ZONE_TYPES];
  /*
   * (Added after layout_zones, so that the fields before keep their offsets.)  Each CPU's
   * share of its last-level cache (per_cpu_data_slice_size: the LLC's size over the CPUs
   * sharing it), in bytes; default 2 MiB, 0 = no cache information.  A pcp whose
   * share exceeds 3 * batch pages keeps batch pages through a burst of frees of orders 1..3
   * before it drains them all (PCPF_FREE_HIGH_BATCH, Linux 6.8+, zone_pcp_update_cacheinfo).
   */
  uint64_t cpu_data_slice_bytes;
  /*
   * false (default): a block above order 0 that finds no compaction target and is not split
   * (bh_compact_set_split refuses, or none is set, as in replays) ends the batch and the run
   * with -ENOMEM, as a failed try_split_folio does in migrate_pages_batch.  true: it stays
   * where it is and the batch goes on (not the kernel's rule; the model's before).
   */
  bool compact_skip_unsplit;
} bh_config_t;

/* Fills *cfg with the defaults documented above. */
BH_API void bh_config_init(bh_config_t *cfg);
/* Returns 0 if *cfg is usable, else BH_EINVAL and, if msg is given, why (static string). */
BH_API int bh_config_validate(const bh_config_t *cfg, const char **msg);

/* ---------------------------------------------------------------------------------------- */
/* Arena                                                                                     */
/* ---------------------------------------------------------------------------------------- */

typedef struct bh_arena bh_arena_t;

/*
 * Creates an arena from *cfg (NULL = defaults).  Returns 0 and sets *out, or a negative BH_E*
 * code (BH_EINVAL for a bad config, BH_ENOMEM / BH_ESYS if memory could not be mapped).
 */
BH_API int bh_arena_create(const bh_config_t *cfg, bh_arena_t **out);
/*
 * Destroys the arena and unmaps its memory; NULL is accepted.  Hinting still attached to it
 * is detached first (bh_hint_detach: a BH_CLOCK_THREAD worker is stopped and joined), so
 * its bh_hint_t is gone too.  Destroying an arena twice, or detaching its hinting after
 * this, is undefined (as free() twice).
 */
BH_API void bh_arena_destroy(bh_arena_t *arena);
/* The configuration the arena was created with (defaults resolved). */
BH_API const bh_config_t *bh_arena_config(const bh_arena_t *arena);

/* Total pages of the arena; base address (NULL in sim backing); size in bytes. */
BH_API uint64_t bh_arena_pages(const bh_arena_t *arena);
BH_API void *bh_arena_base(const bh_arena_t *arena);

/*
 * Allocates a block of 2^order pages as alloc_pages(gfp, order) does.  cpu selects the pcp
 * slot (and so the local node): a value >= 0 is taken modulo nr_cpus, -1 uses the calling
 * thread's slot.  Returns 0 and the block's first pfn in *pfn, BH_ENOSPC if no zone could serve
 * it (counted in alloc_fail), BH_EINVAL for an order above max_order or bad flags.
 */
BH_API int bh_alloc_pfn(bh_arena_t *arena, unsigned gfp, unsigned order, int cpu, uint64_t *pfn);
/*
 * Frees the block of 2^order pages at pfn.  Returns 0, or BH_EFAULT (outside the arena),
 * BH_EALIGN, BH_ENOTALLOC (not an allocated block head: double free, interior page), BH_EORDER
 * (allocated with another order); on error nothing changes.
 */
BH_API int bh_free_pfn(bh_arena_t *arena, uint64_t pfn, unsigned order, int cpu);

/*
 * Pointer interface (mmap/memfd backing).  bh_alloc_pages returns the block's address or NULL,
 * with the reason in *err if err is not NULL.  bh_free_pages returns 0 or an error as
 * bh_free_pfn, and BH_EFAULT for an address that is not in the arena.
 */
BH_API void *bh_alloc_pages(bh_arena_t *arena, unsigned gfp, unsigned order, int *err);
BH_API int bh_free_pages(bh_arena_t *arena, void *addr, unsigned order);

/*
 * split_page: turns the allocated block of 2^order pages at pfn into 2^order allocated
 * order-0 pages that are freed one by one.  Returns 0 or an error as bh_free_pfn.
 */
BH_API int bh_split_pages(bh_arena_t *arena, uint64_t pfn, unsigned order);

/* Address of a pfn (NULL in sim backing or outside the arena) and the reverse (-1 if foreign). */
BH_API void *bh_pfn_to_addr(const bh_arena_t *arena, uint64_t pfn);
BH_API int64_t bh_addr_to_pfn(const bh_arena_t *arena, const void *addr);

/* Returns every pcp list's pages to the buddy lists (drain_all_pages). */
BH_API void bh_drain_pcp(bh_arena_t *arena);
/*
 * The kernel's once-a-second vmstat work for pcp lists (decay_pcp_high): lowers each pcp's
 * high mark by an eighth towards its minimum and drains what lies above it.  Replays call it
 * every virtual second, and a hinting worker thread (BH_CLOCK_THREAD) every second; without
 * either, call it from your own timer if idle pcp lists should shrink as they do in Linux.
 */
BH_API void bh_vmstat_tick(bh_arena_t *arena);

/* ---- Compaction (mm/compaction.c) ---- */

/*
 * Moves one allocated block for compaction: its 2^order pages at old_pfn have been copied to
 * new_pfn (mmap and memfd backing; sim has no data).  The owner of the block updates its
 * references and returns 0, or returns nonzero to keep the block where it is (a pinned page:
 * the copy is dropped).  Called with the zone lock held: it must not call into the arena.
 */
typedef int (*bh_migrate_fn)(void *ctx, uint64_t old_pfn, uint64_t new_pfn, unsigned order);

/*
 * Splits an allocated block for compaction, as split_folio() splits a large folio: the 2^order
 * pages at pfn become 2^order order-0 blocks, which the owner frees (and compaction moves) one
 * by one from then on.  Compaction asks when a block above order 0 finds no target (the
 * kernel's try_split_folio after migrate_pages' -ENOMEM) and then moves the pages one by one
 * after the rest of the batch.  Return 0 to let it split, nonzero to keep the block whole:
 * the split failed, and the batch and the run end (unless compact_skip_unsplit).  Called with
 * the zone lock held: it must not call into the arena.
 */
typedef int (*bh_split_fn)(void *ctx, uint64_t pfn, unsigned order);

/* Sets the split callback of an arena's compaction (NULL, the default: never split).  It gets
 * the ctx of the compaction call.  Returns 0 or BH_EINVAL. */
BH_API int bh_compact_set_split(bh_arena_t *arena, bh_split_fn split);

typedef struct bh_compact_result {
  uint64_t zones;           /* zones compacted */
  uint64_t migrate_scanned; /* pages the migrate scanner looked at (compact_migrate_scanned) */
  uint64_t free_scanned;    /* pages the free scanner looked at (compact_free_scanned) */
  uint64_t isolated;        /* free pages taken as migration targets (compact_isolated) */
  uint64_t migrated;        /* pages moved (pgmigrate_success) */
  uint64_t migrate_failed;  /* pages that did not move (pgmigrate_fail) */
  uint64_t split;           /* blocks split because they found no target */
  unsigned score_before, score_after; /* highest node fragmentation score, 0..100 */
} bh_compact_result_t;

/*
 * The kernel's fragmentation score of a node (fragmentation_score_node): per zone the percent
 * of its free pages in blocks below the pageblock order (extfrag_for_order), weighted by the
 * zone's share of the node's pages (present / (node present + 1), rounded down per zone as
 * fragmentation_score_zone_weighted does); 0..100.
 */
BH_API unsigned bh_fragmentation_score(bh_arena_t *arena, int node);

/*
 * /proc/sys/vm/compact_memory: compacts every zone of the arena completely.  Only blocks
 * allocated as movable (BH_GFP_MOVABLE) and below the pageblock order are moved, each through
 * `migrate`, from the low end of a zone to free pages taken from its high end (the kernel's
 * migrate and free scanners), 32 pages at a time, until the scanners meet or a block finds no
 * target (and, above order 0, is not split).  Free pages on pcp lists stay there, and the blocks
 * compaction frees go to the pcp lists of the zone's node for the orders they hold, as in Linux
 * (bh_drain_pcp first or after if they should merge).  Blocks split with bh_split_pages are moved
 * page by page. Returns 0 (res may be NULL) or BH_EINVAL.
 */
BH_API int bh_compact_memory(bh_arena_t *arena, bh_migrate_fn migrate, void *ctx,
                             bh_compact_result_t *res);

/*
 * One proactive compaction check of every node's kcompactd (vm.compaction_proactiveness,
 * Linux 5.9+): for each node whose fragmentation score is above
 * min(max(100 - proactiveness, 5) + 10, 100), compacts its zones until each zone's score is
 * at most max(100 - proactiveness, 5).  proactiveness 0 does nothing.  Returns the number of
 * nodes compacted (0: none needed it), or BH_EINVAL.  No timer: see bh_kcompactd_run.
 */
BH_API int bh_compact_proactive(bh_arena_t *arena, unsigned proactiveness, bh_migrate_fn migrate,
                                void *ctx, bh_compact_result_t *res);

/*
 * kcompactd's proactive timer, one per node as in Linux: a node's check (as in
 * bh_compact_proactive) runs when it is due at or before now_ns, and its next check is due
 * 500 ms later (HPAGE_FRAG_CHECK_INTERVAL_MSEC), or 32 s later (500 ms << COMPACT_MAX_DEFER_
 * SHIFT) when its run did not lower its score.  Every node is due at the first call.  Sets
 * *next_ns to the earliest next check (UINT64_MAX with proactiveness 0), in the clock of
 * now_ns.  Returns the number of nodes compacted, or BH_EINVAL.
 */
BH_API int bh_kcompactd_run(bh_arena_t *arena, unsigned proactiveness, uint64_t now_ns,
                            bh_migrate_fn migrate, void *ctx, bh_compact_result_t *res,
                            uint64_t *next_ns);

/* ---- Starting from a machine's state ---- */

/* A run of count blocks of 2^order pages, the first at pfn, each after the one before. */
typedef struct bh_block_run {
  uint64_t pfn;
  uint32_t count;
  uint8_t order;
} bh_block_run_t;

/* Pages [pfn, pfn + count). */
typedef struct bh_page_run {
  uint64_t pfn, count;
} bh_page_run_t;

/*
 * A block of 2^order pages at pfn on the pcp list of CPU slot cpu (taken modulo nr_cpus).
 * list: 0, the list of its pageblock's migratetype (where a free puts it); else the list of
 * migratetype list - 1 (a pcp type: where a request of that type finds it, which can differ
 * from the pageblock's type if that changed after the block was freed).
 */
typedef struct bh_pcp_block {
  uint64_t pfn;
  uint8_t order;
  uint8_t list;
  uint16_t cpu;
} bh_pcp_block_t;

/* A pageblock that a kernel does not count in /proc/pagetypeinfo (no memory, or memory not
 * initialised yet), in bh_populate_t.pageblock_mt. */
#define BH_PAGEBLOCK_ABSENT 0xff

/* The state bh_arena_populate() gives an arena. */
typedef struct bh_populate {
  /* per pageblock from pfn 0 (pfn >> pageblock_order): its migratetype (BH_MT_UNMOVABLE ..
   * BH_MT_ISOLATE) or BH_PAGEBLOCK_ABSENT (Movable, as at boot, and not counted in dumps);
   * pageblocks past nr_pageblocks are absent */
  const uint8_t *pageblock_mt;
  uint64_t nr_pageblocks;
  /* the free blocks, in pfn order: each goes on its pageblock's type's free list, in this
   * order (tail insertion, as memblock_free_all leaves the lists at boot) */
  const bh_block_run_t *free;
  size_t nr_free;
  /* blocks on pcp lists (orders with pcp lists only), in list order */
  const bh_pcp_block_t *pcp;
  size_t nr_pcp;
  /* allocated pages that are movable (compaction moves them; the claim rule counts them);
   * NULL: the allocated pages of Movable pageblocks are */
  const bh_page_run_t *movable;
  size_t nr_movable;
  /* each pcp's high mark at the start, zone-major (zone i's CPU slot c at i * nr_cpus + c,
   * zones as the arena orders them), clamped to the zone's high_min..high_max; 0 or NULL:
   * high_min, as after boot.  A machine's zoneinfo prints them ("high:" under pagesets), and
   * Linux 6.7+ tunes them as it runs (nr_pcp_high, decay_pcp_high) */
  const uint32_t *pcp_high;
  size_t nr_pcp_high;
} bh_populate_t;

/*
 * Gives a newly created arena (before any allocation, and before hinting is attached) the
 * state of a machine: exactly the given blocks are free, on the buddy lists or the pcp lists,
 * the pageblocks have the given types, and every other page of a zone is allocated "before
 * the trace", as an order-0 block (bh_arena_adopt joins such pages into larger blocks).
 * Returns 0; BH_EBUSY if hinting is attached; BH_EINVAL (with the first problem in why, if
 * given) for a block that is misaligned, outside its zone's span, in an absent pageblock,
 * across pageblocks of different types, overlapping another, of an order without pcp lists
 * (pcp), or the buddy of another free block of its order that the kernel would have merged
 * with it; BH_ENOMEM if its working bitmaps (a bit per page, twice) cannot be mapped.  After
 * an error the arena's state is undefined: destroy it.
 */
BH_API int bh_arena_populate(bh_arena_t *arena, const bh_populate_t *pop, const char **why);

/*
 * The 2^order pages from pfn, each allocated before the trace (bh_arena_populate) and not
 * freed since, become one allocated block of that order, which bh_free_pfn then frees.  Its
 * pageblocks count in dumps from now on (memory that a kernel initialises late comes free
 * this way).  Returns 0, or BH_EFAULT (outside a zone's span), BH_EALIGN, BH_ENOTALLOC (a page
 * that is not such a page); on error nothing changes.
 */
BH_API int bh_arena_adopt(bh_arena_t *arena, uint64_t pfn, unsigned order);

/*
 * Allocates the block of 2^order pages at pfn itself, as a kernel trace says the kernel did:
 * the free block (or pcp block) that holds it is taken off its list and split as
 * __rmqueue_smallest/expand would have, the other halves going back to the free lists.
 * gfp gives the request's migratetype; watermarks are not checked (the kernel decided).
 * Returns 0; BH_EBUSY if the block is not free in the arena (nothing changes); BH_EINVAL,
 * BH_EFAULT, BH_EALIGN for a bad order, pfn or alignment.
 */
BH_API int bh_alloc_pfn_at(bh_arena_t *arena, unsigned gfp, unsigned order, int cpu, uint64_t pfn);

/* ---------------------------------------------------------------------------------------- */
/* Observation                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* Counters: fills out[BH_NR_STATS] with the sums over the arena. */
BH_API void bh_stats_read(const bh_arena_t *arena, uint64_t out[BH_NR_STATS]);
/* Name ("pgalloc_normal") and help text of a counter; NULL if out of range. */
BH_API const char *bh_stat_name(int stat);
BH_API const char *bh_stat_help(int stat);

/* One zone's state, read under its lock. */
typedef struct bh_zone_info {
  int node, type; /* type is enum bh_zone_type */
  /* the zone's span as a kernel prints it (an explicit layout's recorded values) */
  uint64_t start_pfn, spanned_pages, managed_pages;
  uint64_t present_pages;  /* spanned_pages unless an explicit layout says otherwise */
  uint64_t free_pages;     /* NR_FREE_PAGES: free pages on buddy lists, Isolate excluded */
  uint64_t pcp_pages;      /* pages sitting on pcp lists */
  uint64_t isolated_pages; /* pages taken off the lists by isolation (hinting) */
  uint64_t wmark_min, wmark_low, wmark_high, wmark_boost;
  uint64_t lowmem_reserve[BH_NR_ZONE_TYPES];
  uint64_t nr_reserved_highatomic;
  unsigned pcp_batch, pcp_high;
  uint64_t nr_free[BH_ORDER_LIMIT + 1];                 /* blocks per order */
  uint64_t nr_free_mt[BH_ORDER_LIMIT + 1][BH_MT_TYPES]; /* blocks per order and type */
  uint64_t pageblocks[BH_MT_TYPES];                     /* pageblocks per type */
} bh_zone_info_t;

/* Number of populated zones, and the info of zone i (0..n-1, node-major, low to high). */
BH_API int bh_zone_count(const bh_arena_t *arena);
BH_API int bh_zone_info(bh_arena_t *arena, int i, bh_zone_info_t *out);

/*
 * Dumps in the kernel's formats, so they can be diffed against a real machine:
 * /proc/buddyinfo, /proc/pagetypeinfo, the watermark part of /proc/zoneinfo.
 * Each returns 0, or BH_EIO if a write failed (the stream's error flag counts, so a failure
 * of an earlier buffered write is seen too; a write that fails only when the caller flushes
 * or closes the stream is the caller's to check).
 */
BH_API int bh_dump_buddyinfo(bh_arena_t *arena, FILE *out);
BH_API int bh_dump_pagetypeinfo(bh_arena_t *arena, FILE *out);
BH_API int bh_dump_zoneinfo(bh_arena_t *arena, FILE *out);
/* Counters as vmstat-style "name value" lines, or as one JSON object. */
BH_API int bh_dump_vmstat(const bh_arena_t *arena, FILE *out);
BH_API int bh_dump_stats_json(const bh_arena_t *arena, FILE *out);

/*
 * Invariant checker.  Walks every page and list: every page is in exactly one state (free
 * block head on the right list, inside a free block, allocated, on a pcp list, isolated), no
 * two free buddies are left unmerged, nr_free and the zone free counters agree with the lists,
 * pageblock types are valid.  Takes every lock.  Returns the number of violations (BH_EINVAL
 * for a NULL arena); if report is not NULL, each is described on its own line (at most
 * max_reports lines, 0 = no limit).
 */
BH_API long bh_arena_check(bh_arena_t *arena, FILE *report, unsigned max_reports);

#ifdef __cplusplus
}
#endif

/* Regression gates: two runs' figures compared under tolerances (for CI). */
#include <buddyhint/gate.h>

#endif
