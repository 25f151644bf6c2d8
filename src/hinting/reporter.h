/*
 * The host side of free page reporting (reporter.c).
 *
 * A strategy isolates free blocks, hands them to bh__reporter_report() in batches of up to
 * BH_REPORT_CAPACITY ranges, and puts them back when the call returns.  The reporter discards
 * the memory as the configured mode says and marks every reported page in arena->discarded,
 * a bitmap the allocator core owns (src/buddy/discard.c): the core clears the marks when it
 * hands out a block with marked pages and counts the refaults the host would see.
 */
#ifndef BH_HINTING_REPORTER_H
#define BH_HINTING_REPORTER_H

#include "buddy/internal.h"

#include <buddyhint/report.h>

typedef struct bh__reporter bh__reporter_t;

/*
 * Attaches a reporter in `mode` to arena a.  Allocates a->discarded (one bit per page) if it
 * is NULL; the reporter that allocated it frees it.  One reporter per arena is the intended
 * use; a second one shares the bitmap and must be destroyed before the first.
 * Returns 0 and sets *out, or:
 *   BH_EINVAL   a NULL argument, a mode outside the enum, or a non-sim arena without base;
 *   BH_ENOTSUP  a mode other than NONE in sim backing, PUNCH without a memfd, FREE on a memfd
 *               (shared) arena, or a host page size other than BH_PAGE_SIZE;
 *   BH_ENOMEM.
 */
BH__INTERNAL int bh__reporter_create(bh_arena_t *a, bh_report_mode_t mode, bh__reporter_t **out);
/* Detaches the reporter (freeing the bitmap if it allocated it); NULL is accepted.  No report
 * and no allocation may run on the arena meanwhile. */
BH__INTERNAL void bh__reporter_destroy(bh__reporter_t *r);

/*
 * Reports n ranges (any order; n may exceed BH_REPORT_CAPACITY).  The batch is copied, sorted
 * by pfn, and runs of adjacent ranges are discarded by one call each.  Synchronous: returns
 * when the host is done, as virtio-balloon's report waits for the host.  Thread safe.
 * Returns 0, or:
 *   BH_EINVAL   r NULL, ranges NULL with n > 0, an order above BH_ORDER_LIMIT, or two ranges
 *               that overlap;
 *   BH_EALIGN   a pfn not aligned to its order;
 *   BH_EFAULT   a range past the end of the arena;
 *   BH_ENOMEM   (batches above BH_REPORT_CAPACITY only);
 *   BH_ESYS     a discard call failed (errno kept; the other runs are still discarded).
 * Nothing is discarded or counted on the first four errors.
 */
BH__INTERNAL int bh__reporter_report(bh__reporter_t *r, const bh_report_range_t *ranges, size_t n);

/* Copies the reporter's cumulative counters into *out. */
BH__INTERNAL void bh__reporter_stats(const bh__reporter_t *r, bh_reporter_stats_t *out);
/* The reporter's mode. */
BH__INTERNAL bh_report_mode_t bh__reporter_mode(const bh__reporter_t *r);

#endif
