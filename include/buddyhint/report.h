/*
 * libbuddyhint: reporting free memory to the host, and measuring memory.
 *
 * A "report" hands a batch of free blocks (pfn, order) to the host side, which discards their
 * memory as QEMU does for virtio-balloon free page reporting.  The host side lives inside the
 * library; this header gives its public vocabulary (modes, ranges, counters) and the
 * measurement calls used to check what a report really gave back: resident pages of the arena
 * (mincore) and of the process (/proc/self/smaps_rollup, getrusage).
 */
#ifndef BUDDYHINT_REPORT_H
#define BUDDYHINT_REPORT_H

#include <buddyhint.h>

#include <stdint.h>

/* If buddyhint.h is the includer, it may not have defined these yet. */
#ifndef BH_API
#if defined(BH_BUILDING_LIBRARY)
#define BH_API __attribute__((visibility("default")))
#else
#define BH_API
#endif
#endif
typedef struct bh_arena bh_arena_t;

#ifdef __cplusplus
extern "C" {
#endif

/* Ranges per report call of Linux's page reporting (PAGE_REPORTING_CAPACITY). */
#define BH_REPORT_CAPACITY 32

/* How the host discards a reported range. */
typedef enum bh_report_mode {
  BH_REPORT_DONTNEED, /* madvise(MADV_DONTNEED): freed at once, refaults zero-filled (default) */
  BH_REPORT_FREE,     /* madvise(MADV_FREE): freed lazily under pressure (private anon only) */
  BH_REPORT_PUNCH,    /* fallocate(PUNCH_HOLE) on the arena's memfd (memfd backing only) */
  BH_REPORT_NONE      /* nothing is discarded, the report is only counted (any backing) */
} bh_report_mode_t;

/* One reported block: 2^order pages at pfn, pfn aligned to 2^order. */
typedef struct bh_report_range {
  uint64_t pfn;
  unsigned order;
} bh_report_range_t;

/* Cumulative counters of a reporter. */
typedef struct bh_reporter_stats {
  uint64_t calls;  /* madvise/fallocate calls made (after coalescing; 0 in NONE mode) */
  uint64_t ranges; /* ranges reported successfully */
  uint64_t bytes;  /* bytes reported successfully */
  uint64_t ns;     /* CLOCK_MONOTONIC nanoseconds spent inside the calls */
  uint64_t errors; /* calls that failed */
  /* Of bytes, those resident when reported that the report took back: in real memory, pages
   * mincore saw resident before the call and not after it (0 in FREE mode, which leaves them
   * until the host needs them, and in NONE mode); in the replay's sim backing, pages written
   * and not discarded since.  Never-touched and already-discarded memory is not counted. */
  uint64_t returned;
} bh_reporter_stats_t;

/* Returns "dontneed", "free", "punch" or "none"; "?" for a value outside the enum. */
BH_API const char *bh_report_mode_name(bh_report_mode_t mode);
/*
 * Parses a mode name as bh_report_mode_name prints it (case-insensitive).  Returns 0 and sets
 * *out, BH_ENOENT for an unknown name (*out unchanged), BH_EINVAL if s or out is NULL.
 */
BH_API int bh_report_mode_parse(const char *s, bh_report_mode_t *out);

/* ---------------------------------------------------------------------------------------- */
/* Measurement                                                                               */
/* ---------------------------------------------------------------------------------------- */

/*
 * Resident bytes of the arena's data pages, exact, from mincore(2).  Pages of a memfd arena
 * count as resident while they are in the memfd's page cache.  Sim backing: 0.  Returns 0,
 * BH_EINVAL for a NULL argument, BH_ENOMEM, or BH_ESYS if mincore failed (errno is kept).
 */
BH_API int bh_arena_resident(const bh_arena_t *arena, uint64_t *bytes);
/*
 * Resident pages among the npages pages from pfn, as bh_arena_resident.  Returns 0, BH_EINVAL
 * for a NULL argument, BH_EFAULT if the range leaves the arena, BH_ENOMEM, or BH_ESYS.
 */
BH_API int bh_arena_resident_range(const bh_arena_t *arena, uint64_t pfn, uint64_t npages,
                                   uint64_t *resident_pages);

/* Memory of the whole process. */
typedef struct bh_procmem {
  uint64_t rss_bytes;      /* Rss of /proc/self/smaps_rollup */
  uint64_t lazyfree_bytes; /* LazyFree: MADV_FREE pages not yet reclaimed */
  uint64_t anon_bytes;     /* Anonymous */
  uint64_t minflt, majflt; /* getrusage(RUSAGE_SELF) page faults */
} bh_procmem_t;

/*
 * Fills *out.  A field whose line is missing from smaps_rollup is left 0.  Returns 0,
 * BH_EINVAL for NULL, or BH_ESYS if smaps_rollup could not be read or getrusage failed.
 */
BH_API int bh_procmem_read(bh_procmem_t *out);

#ifdef __cplusplus
}
#endif

#endif
