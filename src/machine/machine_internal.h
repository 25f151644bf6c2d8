/*
 * Internals of machine descriptions (machine.c: the text form and the /proc parsers,
 * freemap.c: free maps, machine_proc.c: reading /proc or a directory of its files).
 */
#ifndef BH_MACHINE_MACHINE_INTERNAL_H
#define BH_MACHINE_MACHINE_INTERNAL_H

#include "common/errdetail.h"
#include "machine/freemap.h"

#include <buddyhint/machine.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define BH__MACHINE_MAGIC "buddyhint-machine"
#define BH__MACHINE_VERSION 1
#define BH__MACHINE_ERR 256

typedef struct bh__section {
  char *name, *text; /* text: NUL-terminated, every line ends with '\n' */
  size_t len;
} bh__section_t;

typedef struct bh__snap {
  bool present;
  bh_snapshot_t pub;
  bh_block_run_t *free_runs;
  uint8_t *pageblock_mt;
  bh_page_run_t *movable_runs;
  /* free blocks the kernel had reported (PG_reported, R lines), in pfn order: each one of
   * free_runs' blocks */
  bh_block_run_t *reported_runs;
  size_t nr_reported_runs;
  bool reported_known; /* the map says which blocks were reported (a "reported" line) */
  /* allocated pages with no flag at all (Q lines), in pfn order; quiet_known: the map has a
   * "quiet" line (maps written before it said nothing of them) */
  bh_page_run_t *quiet_runs;
  size_t nr_quiet_runs;
  bool quiet_known;
  /* zoneinfo's pagesets, zone-major: zone zi's k-th at zi * nr_pagesets + k (NULL: none) */
  bh__pageset_t *pagesets;
  unsigned nr_pagesets; /* per zone: the most any zone prints */
} bh__snap_t;

struct bh_machine {
  bh_machine_info_t info;
  bool layout_set;
  bh__snap_t snaps[BH_NR_SNAPS];
  bh__section_t *sec;
  int nsec, sec_cap;
  /* what reading snapshot folders noticed (bh_machine_warnings): lines, or NULL */
  char *warnings;
  size_t warnings_len;
};

/* "start" or "end". */
const char *bh__snap_name(int which);

/* Sets (replaces) section name to a copy of text (a final newline is added if missing). */
int bh__machine_set_section(bh_machine_t *m, const char *name, const char *text, size_t len);
void bh__machine_drop_section(bh_machine_t *m, const char *name);

/* Rewrites the "machine" section from m->info. */
int bh__machine_update_settings(bh_machine_t *m);

/* Interprets snapshot which's sections (zoneinfo first, for the layout). */
int bh__machine_interpret_snapshot(bh_machine_t *m, int which, char *err, size_t errlen);

/* The first line of s (up to the newline) in [*line, *end); advances *s. false at the end. */
static inline bool bh__next_line(const char **s, const char *end, const char **line,
                                 const char **line_end) {
  if (*s >= end)
    return false;
  const char *nl = memchr(*s, '\n', (size_t)(end - *s));
  *line = *s;
  *line_end = nl ? nl : end;
  *s = nl ? nl + 1 : end;
  return true;
}

/* ---- freemap.c ---- */

/* Parses a freemap section into snapshot which. */
int bh__freemap_parse(bh_machine_t *m, int which, const char *text, size_t len, char *err,
                      size_t errlen);
/*
 * Derives snapshot which's freemap text from kpageflags (and kpagecount, may be NULL) as read
 * from /proc: n entries from pfn 0.  The layout, buddyinfo and pagetypeinfo of the snapshot
 * must be interpreted already.  Returns 0 and the text (malloc'd) in *text.
 */
int bh__freemap_derive(bh_machine_t *m, int which, const uint64_t *flags, const uint64_t *count,
                       uint64_t n, char **text, char *err, size_t errlen);
void bh__snap_free_map(bh__snap_t *s);
/* bh__machine_reported_runs: machine/freemap.h */

#endif
