/*
 * The arena's event counters, declared once.  BH_STAT_FIELDS(X) expands X(name, help) for
 * every counter; the same list generates the enum, the names used by the text (vmstat-style)
 * and JSON emitters, and their documentation.  Names follow /proc/vmstat where Linux has one.
 * All counters are cumulative event counts (pages where the name says so).
 */
#ifndef BUDDYHINT_STATS_H
#define BUDDYHINT_STATS_H

#define BH_STAT_FIELDS(X)                                                                          \
  X(pgalloc_dma, "pages allocated from DMA zones")                                                 \
  X(pgalloc_dma32, "pages allocated from DMA32 zones")                                             \
  X(pgalloc_normal, "pages allocated from Normal zones")                                           \
  X(pgalloc_movable, "pages allocated from Movable zones")                                         \
  X(pgfree, "pages freed")                                                                         \
  X(alloc_calls, "successful allocation calls")                                                    \
  X(free_calls, "successful free calls")                                                           \
  X(alloc_fail, "allocation calls that found no memory")                                           \
  X(alloc_fail_pages, "pages requested by failed allocation calls")                                \
  X(alloc_zone_fallback, "allocations served by a zone below the preferred one")                   \
  X(numa_hit, "allocations served by the intended node")                                           \
  X(numa_miss, "allocations served by another node than intended")                                 \
  X(extfrag_fallback, "migratetype fallbacks (mm_page_alloc_extfrag events)")                      \
  X(extfrag_fragmenting, "fallbacks that split a block below pageblock order")                     \
  X(extfrag_claim, "fallbacks that claimed the pageblock for the requester")                       \
  X(nofragment_retry, "allocations retried without ALLOC_NOFRAGMENT")                              \
  X(wmark_fail, "zones skipped by the watermark check")                                            \
  X(merges, "buddy merges in the free path")                                                       \
  X(splits, "block halves put back by expand")                                                     \
  X(to_tail, "freed blocks placed at the tail of their list")                                      \
  X(pcp_alloc, "allocations served from a pcp list")                                               \
  X(pcp_free, "frees put on a pcp list")                                                           \
  X(pcp_refill, "pcp list refills from the buddy lists (rmqueue_bulk)")                            \
  X(pcp_refill_pages, "pages moved to pcp lists by refills")                                       \
  X(pcp_drain, "pcp drains to the buddy lists (free_pcppages_bulk)")                               \
  X(pcp_drain_pages, "pages returned from pcp lists by drains")                                    \
  X(highatomic_reserve, "pageblocks reserved for high-order atomic use")                           \
  X(highatomic_unreserve, "reserved pageblocks given back before failing")                         \
  X(watermark_boost, "watermark boosts after a fragmenting fallback")                              \
  X(pageoutrun, "kswapd passes (balance_pgdat) woken by this zone")                                \
  X(isolate_calls, "free blocks isolated for hinting")                                             \
  X(isolate_fail, "isolations refused by the watermark check")                                     \
  X(isolate_pages, "pages isolated for hinting")                                                   \
  X(putback_pages, "isolated pages returned to the free lists")                                    \
  X(reported_alloc, "reported blocks taken off a free list by allocation")                         \
  X(reported_merge, "reported blocks taken off a free list by a merge")                            \
  X(hint_notify, "post-merge notifications passed to the strategy")                                \
  X(compact_runs, "zones compacted (whole-zone or proactive runs)")                                \
  X(compact_migrate_scanned, "pages looked at by the migrate scanner")                             \
  X(compact_free_scanned, "pages looked at by the free scanner")                                   \
  X(compact_isolated, "free pages isolated as migration targets")                                  \
  X(pgmigrate_success, "pages moved by compaction")                                                \
  X(pgmigrate_fail, "pages compaction could not move (kept by their owner)")

#define BH__STAT_ENUM(name, help) BH_STAT_##name,
enum bh_stat { BH_STAT_FIELDS(BH__STAT_ENUM) BH_NR_STATS };
#undef BH__STAT_ENUM

#endif
