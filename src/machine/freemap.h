/*
 * What a snapshot holds beyond bh_snapshot_t that a start state reads (the replay's,
 * src/replay/replay_machine.c): the free blocks the kernel had reported, the allocated pages
 * with no flag, and each CPU's pageset as zoneinfo prints it.  Not
 * private, so that the replay may use it without the machine module's internals
 * (machine/machine_internal.h, which includes this header; freemap.c defines it).
 */
#ifndef BH_MACHINE_FREEMAP_H
#define BH_MACHINE_FREEMAP_H

#include <buddyhint/machine.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The free blocks snapshot which's free map records as reported (PG_reported), in pfn order;
 * their number in *n (0 and NULL without any).  *known (may be NULL): whether the map says
 * which blocks were reported at all (maps written before it did hold no R lines). */
const bh_block_run_t *bh__machine_reported_runs(const bh_machine_t *m, int which, size_t *n,
                                                bool *known);

/* The allocated pages with no flag at all in snapshot which's kpageflags (Q lines: the start
 * snapshot's only), in pfn order; their number of runs in *n.  *known (may be NULL): whether
 * the map lists them (maps written before it did hold no "quiet" line).  Pages on pcp lists
 * are among them (free, not buddy pages: free_pages_prepare clears their flags), beside
 * kernel allocations that set no flag. */
const bh_page_run_t *bh__machine_quiet_runs(const bh_machine_t *m, int which, size_t *n,
                                            bool *known);

/* One CPU's pageset of one zone, as zoneinfo prints it (zoneinfo_show_print, mm/vmstat.c:1791-1806
 * in 6.12): the pages on its pcp lists and its high mark. */
typedef struct bh__pageset {
  unsigned cpu;   /* "cpu:" */
  uint64_t count; /* "count:" */
  uint64_t high;  /* "high:" (0 if not printed) */
} bh__pageset_t;

/* The k-th pageset zoneinfo prints for zone zi in snapshot which; NULL past the last (or with
 * no zoneinfo). */
const bh__pageset_t *bh__machine_pageset(const bh_machine_t *m, int which, int zi, unsigned k);

#endif
