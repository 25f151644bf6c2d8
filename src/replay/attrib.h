/*
 * Attribution of a replay's memory to who allocated it (replay --by pid|comm|callsite): which
 * processes or call sites hold the resident memory at the end and took the refaults.  The
 * replay calls in here only when asked (bh_replay_config_t.by), so a replay without it pays
 * one predictable branch per allocation.
 */
#ifndef BH_TRACE_ATTRIB_H
#define BH_TRACE_ATTRIB_H

#include "trace/foreign.h"
#include "replay/pfnmap.h"

#include <buddyhint/replay.h>

#include <stdint.h>
#include <stdio.h>

struct bh__origin_stat {
  uint64_t allocs, alloc_pages, refaults;
};

typedef struct bh__attrib {
  enum bh_replay_by by;
  uint32_t *page_origin; /* per arena page: the origin of the allocation that last held it */
  uint64_t nr_pages;
  struct bh__origin_stat *per; /* by origin id (0: unknown) */
  uint32_t nper;
  uint64_t refaults_seen; /* the arena's refault count when last looked at */
} bh__attrib_t;

/* Returns 0 or BH_ENOMEM. */
int bh__attrib_init(bh__attrib_t *a, enum bh_replay_by by, uint64_t nr_pages);
void bh__attrib_destroy(bh__attrib_t *a);

/* An allocation of arena block (pfn, order) for origin, which took refaults pages that had
 * been reported.  Returns 0 or BH_ENOMEM. */
int bh__attrib_alloc(bh__attrib_t *a, uint64_t pfn, unsigned order, uint32_t origin,
                     uint64_t refaults);
/* Compaction moved a block: its pages keep their origin. */
void bh__attrib_move(bh__attrib_t *a, uint64_t old_pfn, uint64_t new_pfn, unsigned order);

/*
 * The rows of the summary: per key (pid, comm or call site of the origins), the allocations,
 * the memory allocated and still allocated (map: the replay's live blocks), the resident
 * memory of the arena's pages (resident[p] != 0) whose last allocation was theirs, and the
 * refaults; the top rows by resident memory, then the rest as one row "(other)".
 */
void bh__attrib_rows(const bh__attrib_t *a, const bh__origins_t *o, const bh__pfnmap_t *map,
                     const uint8_t *resident, unsigned top, bh_replay_summary_t *s);

/* The "by" object of a summary's JSON: {"key": "comm", "rows": [{...}, ...]}. */
void bh__attrib_json(const bh_replay_summary_t *s, FILE *f);

#endif
