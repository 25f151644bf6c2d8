/*
 * libbuddyhint: machine descriptions and /proc snapshots.
 *
 * A machine description holds what a replay needs to rebuild the machine a trace was
 * recorded on: its nodes and zones (start pfn, spanned, present and managed pages, watermarks,
 * lowmem protection), the page allocator's settings (MAX_PAGE_ORDER, pageblock order, CPUs,
 * the vm sysctls, page_reporting_order, the kernel release), and up to two snapshots of the
 * allocator's state, at the start and at the end of the recording: /proc/buddyinfo,
 * /proc/pagetypeinfo, /proc/zoneinfo and, when /proc/kpageflags could be read (root), a free
 * map: every free block with its order, and every pageblock's migratetype as inferred.
 *
 * The description is text, kept in the header of a version 2 native trace
 * (traces/FORMAT.md): named sections of lines,
 *
 *   buddyhint-machine 1
 *   @machine 9
 *   kernel_release 6.12.117-amd64
 *   ...
 *   @start/buddyinfo 3
 *   Node 0, zone      DMA      0      0 ...
 *   ...
 *   @end
 *
 * where "@NAME N" is followed by N lines: "machine" (KEY VALUE settings), and per snapshot
 * "start/" or "end/" + "buddyinfo", "pagetypeinfo", "zoneinfo" (the /proc files as the kernel
 * printed them), "freemap" (see bh_snapshot_t) and "info" (when and how it was taken).
 * Unknown sections and keys are kept and ignored, so that later versions can add some.
 *
 * Everything that reads input returns 0 or a negative BH_E* code with a message
 * ("zoneinfo:12: what is wrong").
 */
#ifndef BUDDYHINT_MACHINE_H
#define BUDDYHINT_MACHINE_H

#include <buddyhint.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BH_MACHINE_MAX_ZONES (BH_MAX_NODES * BH_NR_ZONE_TYPES)
/* The migratetype columns /proc/pagetypeinfo may print: ours, and CMA (index BH_MT_CMA). */
#define BH_MT_CMA BH_MT_TYPES
#define BH_SNAP_TYPES (BH_MT_TYPES + 1)
/* A pageblock the kernel does not count (no page, or outside its zone), in pageblock_mt. */
#define BH_PB_ABSENT BH_PAGEBLOCK_ABSENT

enum bh_snapshot_id { BH_SNAP_START, BH_SNAP_END, BH_NR_SNAPS };

/* One populated zone of the machine, as its /proc/zoneinfo says. */
typedef struct bh_machine_zone {
  int node, type; /* type: enum bh_zone_type */
  uint64_t start_pfn, spanned_pages, present_pages, managed_pages;
  uint64_t wmark_min, wmark_low, wmark_high;
  /* lowmem_reserve against requests whose highest zone is of each type (protection: (...)) */
  uint64_t protection[BH_NR_ZONE_TYPES];
  unsigned pcp_batch;                  /* of the first CPU */
  unsigned pcp_high_min, pcp_high_max; /* 0 if the kernel does not print them (before 6.7) */
} bh_machine_zone_t;

/* What the machine description says about the machine itself. */
typedef struct bh_machine_info {
  char kernel_release[80];  /* "" if unknown */
  unsigned max_order;       /* MAX_PAGE_ORDER: buddyinfo's columns - 1 */
  unsigned pageblock_order; /* pagetypeinfo's "Page block order" */
  unsigned nr_cpus;         /* CPUs with a pageset in zoneinfo */
  unsigned nr_nodes;
  uint64_t min_free_kbytes; /* 0 if unknown, as the rest of the sysctls */
  unsigned watermark_scale_factor, watermark_boost_factor;
  unsigned lowmem_reserve_ratio[BH_NR_ZONE_TYPES];
  int page_reporting_order; /* -1 if unknown (the module is not loaded) */
  bool has_cma;             /* the kernel prints a CMA migratetype */
  int nr_zones;
  bh_machine_zone_t zones[BH_MACHINE_MAX_ZONES]; /* node-major, low to high */
  unsigned hz; /* the kernel's CONFIG_HZ (its tick: timers, delayed work); 0 if unknown */
} bh_machine_info_t;

/* One zone in one snapshot (same index as bh_machine_info_t.zones). */
typedef struct bh_snapshot_zone {
  uint64_t free_pages;    /* zoneinfo "pages free" */
  uint64_t pcp_pages;     /* pages on its pcp lists (pagesets) */
  uint64_t pcp_high_sum;  /* the pagesets' "high:" summed over the CPUs that print one */
  unsigned pcp_high_cpus; /* how many do (0: none read) */
  uint64_t nr_free[BH_ORDER_LIMIT + 1];                   /* buddyinfo: free blocks per order */
  uint64_t nr_free_mt[BH_SNAP_TYPES][BH_ORDER_LIMIT + 1]; /* pagetypeinfo (100000 if capped) */
  uint64_t pageblocks[BH_SNAP_TYPES];                     /* pagetypeinfo: pageblocks per type */
} bh_snapshot_zone_t;

/*
 * A snapshot.  The free map (have_freemap) comes from /proc/kpageflags: the kernel marks every
 * page of a free block KPF_BUDDY, and free blocks are always merged as far as they can be, so
 * the blocks are the largest aligned runs of such pages (bounded by the zone and
 * MAX_PAGE_ORDER).  Pageblock migratetypes are not exported; they are inferred from the pages
 * in each block (LRU, anonymous or mapped pages: movable; slab, page tables, other kernel
 * pages: unmovable or reclaimable), then adjusted to match pagetypeinfo's counts per type and,
 * as far as it can, its free blocks per type and order (see src/machine/freemap.c).
 */
typedef struct bh_snapshot {
  bool have_buddyinfo, have_pagetypeinfo, have_zoneinfo, have_freemap;
  bh_snapshot_zone_t zones[BH_MACHINE_MAX_ZONES];
  /* the free map: free blocks in pfn order */
  const bh_block_run_t *free_runs;
  size_t nr_free_runs;
  /* per pageblock from pfn 0 (pfn >> pageblock_order): BH_MT_* or BH_PB_ABSENT */
  const uint8_t *pageblock_mt;
  uint64_t nr_pageblocks;
  /* allocated pages that looked movable (LRU, anonymous, mapped), in pfn order */
  const bh_page_run_t *movable_runs;
  size_t nr_movable_runs;
  /* free pages where the free map and buddyinfo (read right after it) disagree, per order
   * weighted by block size and halved: the pages that changed state while kpageflags was
   * read */
  uint64_t freemap_skew_pages;
  /* the free map's pageblock types against pagetypeinfo: free blocks on the wrong type's
   * list, weighted by size and halved (0: the inference matched every count) */
  uint64_t freemap_type_error_pages;
  /* the trace clock (ns) when the snapshot was begun and finished, 0 if unknown: events
   * between the two may or may not be in it */
  uint64_t window_begin_ns, window_end_ns;
} bh_snapshot_t;

typedef struct bh_machine bh_machine_t;

/* A machine description with nothing in it; NULL if out of memory. */
BH_API bh_machine_t *bh_machine_new(void);
/* Frees m; NULL is accepted. */
BH_API void bh_machine_free(bh_machine_t *m);

/*
 * Parses a machine description's text (len bytes).  Returns 0 and sets *out; BH_EFORMAT with
 * "LINE: what" (or "SECTION:LINE: what" for a /proc file) in err; BH_ENOMEM.
 */
BH_API int bh_machine_parse(const char *text, size_t len, bh_machine_t **out, char *err,
                            size_t errlen);
/*
 * The text of m (malloc'd, NUL-terminated, the caller frees it) in *text, its length in *len
 * (may be NULL).  Returns 0 or BH_ENOMEM.
 */
BH_API int bh_machine_format(const bh_machine_t *m, char **text, size_t *len);

/*
 * Reads a snapshot from a directory of /proc files under their own names: buddyinfo,
 * pagetypeinfo, zoneinfo and, if present, kpageflags and kpagecount as read from /proc
 * ("/proc" itself takes a snapshot of this machine).  The first snapshot read sets the
 * machine's layout from its zoneinfo (and MAX_PAGE_ORDER, the pageblock order and the CPUs
 * from the other files); a later one must agree with it.  Each file may also be NAME.txt, and
 * compressed (NAME.zst, NAME.gz, NAME.txt.zst, NAME.txt.gz); files of the folder not read are
 * named in bh_machine_warnings.  Missing files are left out (at least zoneinfo is needed); a
 * kpageflags that cannot be read (not root) gives no free map.
 * begin_ns/end_ns are the trace clock's times around the reading (0: unknown).  Returns 0,
 * BH_EFORMAT (no zoneinfo, a file that is there and cannot be read, a malformed or corrupt
 * file, or a layout that does not agree), BH_ENOMEM; err says what.
 */
BH_API int bh_machine_read_snapshot(bh_machine_t *m, int which, const char *dir, uint64_t begin_ns,
                                    uint64_t end_ns, char *err, size_t errlen);
/*
 * The two halves of bh_machine_read_snapshot, for a recorder that wants to know when the free
 * map was read: the text files (buddyinfo, pagetypeinfo, zoneinfo; quick), then the free map
 * from kpageflags (slow on a large machine; nothing without one, or without the right to read
 * it).  The second needs the first's snapshot.  Return as bh_machine_read_snapshot.
 */
BH_API int bh_machine_read_counts(bh_machine_t *m, int which, const char *dir, uint64_t begin_ns,
                                  uint64_t end_ns, char *err, size_t errlen);
/*
 * bh_machine_read_counts with zoneinfo_read (NULL: none) called as soon as zoneinfo has been
 * read, before anything else is done: a recorder marks the moment in its trace, so that the
 * pcp lists' changes between the counts zoneinfo printed and the trace's start can be kept
 * (record: start/count_events).  Reading a live /proc allocates no page between the two:
 * the buffer read into is touched before the read.
 */
BH_API int bh_machine_read_counts_marked(bh_machine_t *m, int which, const char *dir,
                                         uint64_t begin_ns, uint64_t end_ns,
                                         void (*zoneinfo_read)(void *ctx), void *ctx, char *err,
                                         size_t errlen);
/* read_done (NULL: none) is called once kpageflags is read, before the map is derived. */
BH_API int bh_machine_read_freemap(bh_machine_t *m, int which, const char *dir,
                                   void (*read_done)(void *ctx), void *ctx, char *err,
                                   size_t errlen);

/*
 * Reads the settings of the running machine: the vm sysctls (min_free_kbytes,
 * watermark_scale_factor, watermark_boost_factor, lowmem_reserve_ratio), page_reporting_order
 * and the kernel release.  What cannot be read stays unknown.  Returns 0.
 */
BH_API int bh_machine_read_settings(bh_machine_t *m);

/* Sets the trace clock's times around snapshot which's reading.  Returns 0, BH_EINVAL (no
 * such snapshot) or BH_ENOMEM. */
BH_API int bh_machine_set_window(bh_machine_t *m, int which, uint64_t begin_ns, uint64_t end_ns);

/*
 * What reading snapshot folders into m noticed and did not fail on, one line each ("PATH:
 * what"): files there but not used (a second copy under another name, kpagecount, meminfo...),
 * files that could not be read for want of permission, a free map shorter than the layout.
 * "" when there is nothing, NULL for a NULL m; valid until m changes.
 */
BH_API const char *bh_machine_warnings(const bh_machine_t *m);

/* The machine's info (zones empty until a snapshot was read). */
BH_API const bh_machine_info_t *bh_machine_info(const bh_machine_t *m);
/* Snapshot which (enum bh_snapshot_id), or NULL if the description has none. */
BH_API const bh_snapshot_t *bh_machine_snapshot(const bh_machine_t *m, int which);
/* A section's text as stored ("start/buddyinfo", "end/zoneinfo", ...), or NULL. */
BH_API const char *bh_machine_section(const bh_machine_t *m, const char *name);
/*
 * Stores text (lines; a last newline is added) as section name, replacing one of that name:
 * a section of one's own, kept with the description and ignored by what does not know it.
 * Not the sections the description is made of ("machine", and a snapshot's zoneinfo,
 * buddyinfo, pagetypeinfo, freemap or info): those come from snapshots.  A name is one word
 * of printable characters.  Returns 0, BH_EINVAL or BH_ENOMEM.
 */
BH_API int bh_machine_set_section(bh_machine_t *m, const char *name, const char *text);
/* Removes snapshot which from m (its sections too). */
BH_API void bh_machine_drop_snapshot(bh_machine_t *m, int which);
/* Copies snapshot which of src (with its sections) into dst, whose layout must agree or be
 * empty.  Returns 0, BH_EFORMAT (layouts differ, err says how) or BH_ENOMEM. */
BH_API int bh_machine_copy_snapshot(bh_machine_t *dst, const bh_machine_t *src, int which,
                                    char *err, size_t errlen);

/* The zone of pfn in m's layout (index into info->zones), or -1. */
BH_API int bh_machine_zone_of(const bh_machine_t *m, uint64_t pfn);

#ifdef __cplusplus
}
#endif

#endif
