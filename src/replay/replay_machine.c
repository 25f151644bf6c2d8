/*
 * Replays in the recorded machine's shape: the description a replay uses (the trace's own,
 * or snapshots from /proc files given as directories), the arena's layout and start state
 * from it, and at the end of the trace how far the prediction lands from the end snapshot.
 *
 * The prediction error compares the arena's free blocks per zone and order with the end
 * snapshot's buddyinfo, and its pageblocks per zone and type with pagetypeinfo's.  What it can
 * and cannot mean is in docs/MACHINE-SHAPE.md: the kernel's own events that the trace lost,
 * what sat on pcp lists, the start state's own error, and the snapshots' reading time all end
 * up in it, beside the allocator's divergence.
 */
#include "replay/replay_machine.h"

#include "buddy/replay_core.h"
#include "common/errdetail.h"
#include "common/grow.h"
#include "common/json.h"
#include "machine/freemap.h"

#include <buddyhint/report.h>
#include <buddyhint/strategy.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool bh__rm_rereadable(const char *path) {
  struct stat st;
  return strcmp(path, "-") && !stat(path, &st) && S_ISREG(st.st_mode);
}

static int trace_description(const char *trace, bh_machine_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (!bh__rm_rereadable(trace))
    return 0; /* standard input, a FIFO, a device: read once, by the replay, after the arena
                 is laid out, so its description goes unused (docs/MACHINE-SHAPE.md) */
  bh_trace_t *t;
  int rc = bh_trace_open(trace, NULL, &t);
  if (rc)
    return bh__errf(err, errlen, rc, "%s", bh_trace_error(NULL));
  size_t len;
  const char *d = bh_trace_description(t, &len);
  char msg[256] = "";
  if (d && (rc = bh_machine_parse(d, len, out, msg, sizeof(msg))))
    bh__errf(err, errlen, rc, "%s: machine description: %s", trace, msg);
  bh_trace_close(t);
  return rc;
}

/* What reading the snapshot folders noticed, as the summary's warnings. */
static void warn_folder(bh_replay_summary_t *s, const bh_machine_t *m) {
  for (const char *w = bh_machine_warnings(m), *nl; *w; w = nl + 1) {
    nl = strchr(w, '\n');
    bh__replay_warn(s, "%.*s", (int)(nl - w), w);
  }
}

/* --start DIR and --end DIR: they replace the trace's snapshots; the layout is theirs. */
static int read_dirs(bh__rmachine_t *rm, const bh_replay_config_t *cfg, bh_replay_summary_t *s,
                     char *err, size_t errlen) {
  char msg[512];
  if (cfg->start_dir) {
    bh_machine_t *n = bh_machine_new();
    if (!n)
      return BH_ENOMEM;
    int rc = bh_machine_read_snapshot(n, BH_SNAP_START, cfg->start_dir, 0, 0, msg, sizeof(msg));
    if (!rc && cfg->end_dir)
      rc = bh_machine_read_snapshot(n, BH_SNAP_END, cfg->end_dir, 0, 0, msg, sizeof(msg));
    else if (!rc && rm->m && bh_machine_snapshot(rm->m, BH_SNAP_END) &&
             bh_machine_copy_snapshot(n, rm->m, BH_SNAP_END, NULL, 0))
      bh_machine_drop_snapshot(n, BH_SNAP_END); /* the trace's end snapshot does not fit */
    bh_machine_free(rm->m);
    rm->m = n;
    if (rc)
      return bh__errf(err, errlen, rc, "--start/--end: %s", msg);
    warn_folder(s, n);
    return 0;
  }
  if (cfg->end_dir) {
    if (!rm->m && !(rm->m = bh_machine_new()))
      return BH_ENOMEM;
    int rc = bh_machine_read_snapshot(rm->m, BH_SNAP_END, cfg->end_dir, 0, 0, msg, sizeof(msg));
    if (rc)
      return bh__errf(err, errlen, rc, "--end: %s", msg);
    warn_folder(s, rm->m);
  }
  return 0;
}

/*
 * A machine description is a claim: a 65 KB trace can say its machine had a 1 TiB zone, and
 * a replay in that shape allocates metadata for every page of it (the 16-byte descriptor, the
 * 4-byte free-map cell, the pfn map: about BYTES_PER_PAGE; measured, a 1 TiB shape took 4.2 GB
 * and 90 s for a 4 MiB trace).  Past SHAPE_META_LIMIT of metadata (a 341 GiB machine), or half
 * this machine's memory if that is less, the replay is refused before anything is allocated,
 * unless --memory (memory_bytes) says at least the claimed size: the user has seen the figure
 * and means it.
 */
#define BYTES_PER_PAGE 24
#define SHAPE_META_LIMIT (2ull << 30)

static int check_shape_size(const bh__rmachine_t *rm, const bh_replay_config_t *cfg, char *err,
                            size_t errlen) {
  uint64_t pages = bh__rm_pages(rm), claimed = pages << BH_PAGE_SHIFT, limit = SHAPE_META_LIMIT;
  long phys = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  if (phys > 0 && psz > 0 && (uint64_t)phys * (uint64_t)psz / 2 < limit)
    limit = (uint64_t)phys * (uint64_t)psz / 2;
  uint64_t need = pages * BYTES_PER_PAGE;
  if (pages >> 50 == 0 && need <= limit)
    return 0;
  if (cfg->memory_bytes && cfg->memory_bytes >= claimed)
    return 0;
  return bh__errf(
      err, errlen, BH_EINVAL,
      "%s: the machine %s claims zones up to %llu GiB (%llu pages); a replay in that shape "
      "needs about %llu MiB of page metadata, more than the %llu MiB allowed without --memory "
      "(2 GiB, or half this machine's memory if less).  --memory %lluG (the claimed size) "
      "replays it anyway; --layout default ignores the shape",
      cfg->start_dir ? cfg->start_dir : cfg->trace,
      cfg->start_dir ? "snapshot's zoneinfo" : "description", (unsigned long long)(claimed >> 30),
      (unsigned long long)pages, (unsigned long long)(need >> 20),
      (unsigned long long)(limit >> 20), (unsigned long long)((claimed + (1ull << 30) - 1) >> 30));
}

/* Layout, start state and placement from rm->m (may be NULL) and cfg. */
static int decide(bh__rmachine_t *rm, const bh_replay_config_t *cfg, bh_replay_summary_t *s,
                  char *err, size_t errlen) {
  int rc;
  bool has_layout = rm->m && bh_machine_info(rm->m)->nr_zones > 0;
  if (cfg->layout == BH_LAYOUT_TRACE && !has_layout)
    return bh__errf(err, errlen, BH_EINVAL,
                    "%s has no machine description (record it with buddyhint record, or give "
                    "--start DIR)",
                    cfg->trace);
  rm->shape = has_layout && cfg->layout != BH_LAYOUT_DEFAULT;
  if (rm->shape && (rc = check_shape_size(rm, cfg, err, errlen)))
    return rc;
  const bh_snapshot_t *snap = rm->m ? bh_machine_snapshot(rm->m, BH_SNAP_START) : NULL;
  bool freemap = snap && snap->have_freemap,
       counts = snap && snap->have_buddyinfo && snap->have_pagetypeinfo;
  switch (cfg->start) {
  case BH_START_AUTO:
    rm->start = !rm->shape ? BH__START_EMPTY
                : freemap  ? BH__START_KPAGEFLAGS
                : counts   ? BH__START_COUNTS
                           : BH__START_EMPTY;
    break;
  case BH_START_KPAGEFLAGS:
  case BH_START_COUNTS:
    if (!rm->shape)
      return bh__errf(err, errlen, BH_EINVAL,
                      "a start state from a snapshot needs the machine's layout (%s)",
                      has_layout ? "not --layout default" : "the trace has no description");
    if (cfg->start == BH_START_KPAGEFLAGS ? !freemap : !counts)
      return bh__errf(err, errlen, BH_EINVAL, "the start snapshot has no %s",
                      cfg->start == BH_START_KPAGEFLAGS ? "free map (kpageflags)"
                                                        : "buddyinfo and pagetypeinfo");
    rm->start = cfg->start == BH_START_KPAGEFLAGS ? BH__START_KPAGEFLAGS : BH__START_COUNTS;
    break;
  default:
    rm->start = BH__START_EMPTY;
  }
  if (cfg->placement == BH_PLACEMENT_TRACE && !rm->shape)
    return bh__errf(err, errlen, BH_EINVAL,
                    "--placement trace needs the machine's layout (its pfns are the trace's)");
  static const char *const starts[] = {"empty", "kpageflags", "counts"};
  snprintf(s->layout, sizeof(s->layout), "%s", rm->shape ? "machine" : "default");
  snprintf(s->start_state, sizeof(s->start_state), "%s", starts[rm->start]);
  snprintf(s->placement, sizeof(s->placement), "%s",
           cfg->placement == BH_PLACEMENT_TRACE ? "trace" : "allocator");
  return 0;
}

int bh__rm_load(bh__rmachine_t *rm, const bh_replay_config_t *cfg, bh_replay_summary_t *s,
                char *err, size_t errlen) {
  memset(rm, 0, sizeof(*rm));
  int rc = trace_description(cfg->trace, &rm->m, err, errlen);
  if (!rc)
    rc = read_dirs(rm, cfg, s, err, errlen);
  return rc ? rc : decide(rm, cfg, s, err, errlen);
}

int bh__rm_load_machine(bh__rmachine_t *rm, bh_machine_t *m, const bh_replay_config_t *cfg,
                        bh_replay_summary_t *s, char *err, size_t errlen) {
  memset(rm, 0, sizeof(*rm));
  rm->m = m;
  return decide(rm, cfg, s, err, errlen);
}

uint64_t bh__rm_pages(const bh__rmachine_t *rm) {
  if (!rm->shape)
    return 0;
  const bh_machine_info_t *in = bh_machine_info(rm->m);
  uint64_t end = 0, bp = 1ull << in->max_order;
  for (int i = 0; i < in->nr_zones; i++)
    if (in->zones[i].start_pfn + in->zones[i].spanned_pages > end)
      end = in->zones[i].start_pfn + in->zones[i].spanned_pages;
  return (end + bp - 1) & ~(bp - 1);
}

int bh__rm_want_first_events(bh__rmachine_t *rm) {
  if (!rm->shape || rm->start == BH__START_EMPTY)
    return 0;
  rm->fe.nr_pages = bh__rm_pages(rm);
  rm->fe.fe = calloc(rm->fe.nr_pages ? rm->fe.nr_pages : 1, sizeof(uint32_t));
  if (!rm->fe.fe)
    return BH_ENOMEM;
  /* the evidence of pageblock types, if there is room for it (without it: the map's types) */
  const bh_machine_info_t *in = bh_machine_info(rm->m);
  rm->fe.pb_order = in->pageblock_order;
  rm->fe.nr_pageblocks = (rm->fe.nr_pages >> in->pageblock_order) + 1;
  rm->fe.last_free = calloc(rm->fe.nr_pages ? rm->fe.nr_pages : 1, 1);
  rm->fe.pb_type = calloc(rm->fe.nr_pageblocks, 1);
  rm->fe.taken = calloc((rm->fe.nr_pages + 63) / 64 + 1, sizeof(uint64_t));
  if (!rm->fe.last_free || !rm->fe.pb_type) {
    free(rm->fe.last_free);
    free(rm->fe.pb_type);
    rm->fe.last_free = rm->fe.pb_type = NULL;
  }
  return 0;
}

/* Whether the machine's kernel_release is at least major.minor: 1 or 0, -1 if not known. */
static int release_at_least(const bh_machine_info_t *in, unsigned major, unsigned minor) {
  unsigned x, y;
  if (sscanf(in->kernel_release, "%u.%u", &x, &y) != 2)
    return -1;
  return x > major || (x == major && y >= minor);
}

/*
 * Whether the recorded kernel tunes its pcp high marks (Linux 6.7 and later: nr_pcp_high and
 * decay_pcp_high between high_min and high_max, which zoneinfo prints after 6.12) or keeps one
 * fixed mark (6.1's pageset_update, zone_highsize() of the low watermark, which is 6.12's
 * high_min).  By its release where the description has one, else by whether its zoneinfo prints
 * high_max.
 */
bool bh__rm_kernel_tunes_pcp_high(const bh_machine_info_t *in) {
  int at = release_at_least(in, 6, 7);
  if (at >= 0)
    return at;
  for (int i = 0; i < in->nr_zones; i++)
    if (in->zones[i].pcp_high_max)
      return true;
  return in->nr_zones == 0;
}

/*
 * free_high, the drain of a CPU that frees orders 1-3 with no allocation between, waits in
 * Linux 6.16+ for free_count to reach batch + high_min / 2 ("mm: pcp: increase
 * pcp->free_count threshold to trigger free_high", merged for 6.16); 6.7-6.15 wait for batch
 * (mm/page_alloc.c:2703 in 6.12.117).  Only by the release: zoneinfo does not show it.
 */
bool bh__rm_kernel_raises_free_high(const bh_machine_info_t *in) {
  return release_at_least(in, 6, 16) == 1;
}

bool bh__rm_high_max_printed(const bh__rmachine_t *rm) {
  const bh_machine_info_t *in = rm->m ? bh_machine_info(rm->m) : NULL;
  for (int i = 0; in && i < in->nr_zones; i++)
    if (in->zones[i].pcp_high_max)
      return true;
  return false;
}

long long bh__rm_boot_freed_kb(const bh__rmachine_t *rm) {
  const char *t = rm->m ? bh_machine_section(rm->m, "record") : NULL;
  for (const char *l = t; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    long long v;
    if (sscanf(l, "boot_freed_kb %lld", &v) == 1 && v >= 0)
      return v;
  }
  return -1;
}

bool bh__rm_bulk_unprobed(const bh__rmachine_t *rm) {
  const char *t = rm->m ? bh_machine_section(rm->m, "record") : NULL;
  for (const char *l = t; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    unsigned v;
    if (sscanf(l, "bulk_probes %u", &v) == 1)
      return v == 0;
  }
  return false;
}

int bh__rm_configure(const bh__rmachine_t *rm, bh_config_t *ac, char *err, size_t errlen) {
  int rc = bh__layout_from_machine(ac, rm->m, err, errlen);
  const bh_machine_info_t *in = bh_machine_info(rm->m);
  if (!rc && !ac->nr_cpus && in->nr_cpus)
    ac->nr_cpus = in->nr_cpus;
  if (!rc) {
    ac->pcp_high_tuning = bh__rm_kernel_tunes_pcp_high(in);
    ac->pcp_free_high_raised = bh__rm_kernel_raises_free_high(in);
  }
  return rc;
}

/*
 * Each pcp's high mark at the start: the start snapshot's zoneinfo prints every CPU's
 * ("high:" under pagesets), which Linux 6.7+ tunes as it runs (nr_pcp_high raises it while a
 * CPU frees, decay_pcp_high lowers it each second, nr_pcp_high at mm/page_alloc.c:2625,
 * decay_pcp_high at :2409 in 6.12).  CPU slot c starts at the high of the CPUs whose events
 * go to it (cpu % nr_cpus == c: the CPU's own, with as many slots as CPUs), their mean if
 * several; a slot no CPU maps to, at the zone's mean.  NULL (high_min, as after boot) without
 * a zoneinfo, when the zones do not match the layout, or out of memory.
 */
static uint32_t *start_pcp_high(const bh__rmachine_t *rm, const bh_arena_t *a) {
  const bh_snapshot_t *s = rm->m ? bh_machine_snapshot(rm->m, BH_SNAP_START) : NULL;
  int zones = bh_zone_count(a);
  if (!s || !s->have_zoneinfo || bh_machine_info(rm->m)->nr_zones != zones)
    return NULL;
  unsigned n = bh_arena_config(a)->nr_cpus;
  uint32_t *h = calloc((size_t)zones * n, sizeof(*h));
  for (int i = 0; h && i < zones; i++) {
    const bh_snapshot_zone_t *z = &s->zones[i];
    uint64_t mean = z->pcp_high_cpus ? z->pcp_high_sum / z->pcp_high_cpus : 0;
    for (unsigned c = 0; c < n; c++) {
      uint64_t count, sum;
      unsigned cpus;
      bh__start_pagesets(rm->m, i, c, n, &count, &sum, &cpus);
      uint64_t v = cpus ? sum / cpus : mean;
      h[(size_t)i * n + c] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
  }
  return h;
}

int bh__rm_populate(bh__rmachine_t *rm, bh_arena_t *a, unsigned pcp_orders, uint64_t seed,
                    bh_replay_summary_t *s, char *err, size_t errlen) {
  bh__start_t st;
  char msg[256] = "";
  bh__pb_settle(&rm->fe);
  int rc = bh__start_build(&st, rm->start, rm->m, bh_arena_pages(a), pcp_orders,
                           bh_arena_config(a)->nr_cpus, &rm->fe, seed, msg, sizeof(msg));
  bh__first_events_free(&rm->fe); /* used up */
  if (rc)
    return bh__errf(err, errlen, rc, "start state: %s", msg[0] ? msg : bh_strerror(rc));
  rm->nr_pages = bh_arena_pages(a);
  rm->kfree = calloc((rm->nr_pages + 63) / 64, sizeof(uint64_t));
  if (!rm->kfree) {
    bh__start_free(&st);
    return BH_ENOMEM;
  }
  /* A free entry is count blocks of its order side by side: marked as one range, cut to
   * the blocks that lie wholly inside the machine (as bh__rm_kfree_mark does each block). */
  for (size_t i = 0; i < st.pop.nr_free; i++) {
    uint64_t pfn = st.pop.free[i].pfn, count = st.pop.free[i].count;
    unsigned order = st.pop.free[i].order;
    if (order > 20 || pfn >= rm->nr_pages)
      continue;
    uint64_t fit = (rm->nr_pages - pfn) >> order;
    bh__rm_kfree_set(rm, pfn, (count < fit ? count : fit) << order, true);
  }
  for (size_t i = 0; i < st.pop.nr_pcp; i++)
    bh__rm_kfree_mark(rm, st.pop.pcp[i].pfn, st.pop.pcp[i].order, true);
  uint32_t *high = start_pcp_high(rm, a);
  st.pop.pcp_high = high;
  st.pop.nr_pcp_high = high ? (size_t)bh_zone_count(a) * bh_arena_config(a)->nr_cpus : 0;
  const char *why = NULL;
  rc = bh_arena_populate(a, &st.pop, &why);
  free(high);
  if (rc)
    bh__errf(err, errlen, rc, "start state: %s", why ? why : bh_strerror(rc));
  else if (st.nr_hidden && bh__pcp_surplus_set(a, st.hidden, st.nr_hidden))
    rc = bh__errf(err, errlen, BH_ENOMEM, "start state: %s", bh_strerror(BH_ENOMEM));
  s->start_pcp_pages = st.pcp_pages;
  s->start_pcp_hidden_pages = st.pcp_hidden_pages;
  s->start_pcp_count_events = st.pcp_count_events;
  s->start_pcp_count_adjust = st.pcp_count_adjust;
  s->start_unplaced_blocks = st.unplaced_blocks;
  s->start_unexplained_pages = st.unexplained_pages;
  s->start_repaired_pages = st.repaired_pages;
  s->start_taken_pages = st.taken_pages;
  free(rm->unseen);
  rm->unseen = st.taken; /* kept */
  rm->nr_unseen = st.nr_taken;
  st.taken = NULL;
  s->start_retyped_pageblocks = st.retyped_pageblocks;
  s->start_split_retyped_pageblocks = st.split_retyped_pageblocks;
  bh__start_free(&st);
  return rc;
}

/*
 * Marks the free block pfn of order reported in whichever zone holds it, at the tail of its
 * free list, where page_reporting_drain() put it back (__putback_isolated_page): the
 * allocator takes blocks from the head, unreported ones first.  Only the block moves: what
 * the kernel's isolation did to its pageblock came before the snapshot
 * (bh__start_block_reported).  Flagged PageReported if mark.  False if no zone has it as a
 * free block of that order.
 */
static bool start_block_reported(bh_arena_t *a, uint64_t pfn, unsigned order, bool mark) {
  if (!bh__start_block_reported(a, pfn, order, mark))
    return false;
  if (*bh__discard_map(a)) /* the host has discarded it: its reuse is a refault */
    bh__discard_mark(a, pfn, 1ull << order);
  return true;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/*
 * Moves the free blocks of zone z at or above order `from` that `want` holds (sorted keys
 * pfn << 8 | order), or with want NULL every one not reported yet, to their lists' tails as
 * reported, in the order their lists hold them.  The lists' order is the start state's (the
 * blocks the trace allocates first nearest the head, docs/MACHINE-SHAPE.md), and reporting
 * keeps it among the blocks it moves: page_reporting_cycle walks a list from its head
 * (mm/page_reporting.c:184 in 6.12) and page_reporting_drain puts each block back (:120) at
 * the tail (__putback_isolated_page, mm/page_alloc.c:2950-2951).  The blocks are collected first,
 * then moved (walking a list while moving its blocks would meet them again).  Returns how many were
 * moved, or -1 out of memory.
 */
static long report_in_list_order(bh_arena_t *a, bh_zone_t *z, unsigned from, const uint64_t *want,
                                 size_t nwant, bool page_reported) {
  size_t n = 0, cap = 0;
  uint64_t *blk = NULL;
  bh_zone_lock(z);
  for (unsigned o = from; o <= bh_arena_max_order(a); o++)
    for (int mt = 0; mt < BH_MT_TYPES; mt++)
      for (uint64_t p = bh_free_list_first(z, o, mt); p != BH_PFN_NONE;
           p = bh_free_list_next(z, o, mt, p)) {
        uint64_t key = p << 8 | o;
        if (want ? !bsearch(&key, want, nwant, sizeof(*want), cmp_u64) : bh_block_reported(z, p))
          continue;
        if (n == cap) {
          uint64_t *q = realloc(blk, (cap = cap ? cap * 2 : 256) * sizeof(*q));
          if (!q) {
            bh_zone_unlock(z);
            free(blk);
            return -1;
          }
          blk = q;
        }
        blk[n++] = key;
      }
  bh_zone_unlock(z);
  long moved = 0;
  for (size_t k = 0; k < n; k++)
    moved += start_block_reported(a, blk[k] >> 8, (unsigned)(blk[k] & 0xff), page_reported);
  free(blk);
  return moved;
}

void bh__rm_start_reported(const bh__rmachine_t *rm, bh_arena_t *a, bool page_reported,
                           bh_replay_summary_t *s) {
  size_t n = 0, nb = 0;
  const bh_block_run_t *runs = rm->start == BH__START_KPAGEFLAGS
                                   ? bh__machine_reported_runs(rm->m, BH_SNAP_START, &n, NULL)
                                   : NULL;
  if (!n)
    return;
  for (size_t i = 0; i < n; i++)
    nb += runs[i].count;
  uint64_t *want = malloc(nb * sizeof(*want));
  if (!want || bh__discard_enable(a) < 0) {
    free(want);
    return; /* out of memory: the blocks stay as they are, and uncounted */
  }
  size_t k = 0;
  unsigned from = UINT_MAX;
  for (size_t i = 0; i < n; i++)
    for (uint64_t j = 0; j < runs[i].count; j++) {
      uint64_t pfn = runs[i].pfn + (j << runs[i].order);
      if (pfn < bh_arena_pages(a)) {
        want[k++] = pfn << 8 | runs[i].order;
        from = runs[i].order < from ? runs[i].order : from;
      }
    }
  qsort(want, k, sizeof(*want), cmp_u64);
  uint64_t moved = 0;
  for (int i = 0; i < bh_zone_count(a) && k; i++) {
    long m = report_in_list_order(a, bh_arena_zone(a, i), from, want, k, page_reported);
    if (m < 0)
      break; /* out of memory: the rest stay as they are, and count as missed */
    moved += (uint64_t)m;
  }
  s->start_reported_blocks += moved;
  s->start_reported_marked += page_reported ? moved : 0;
  s->start_reported_missed += nb - moved;
  free(want);
}

int bh__rm_start_reported_all(bh_arena_t *a, bool page_reported, bh_replay_summary_t *s) {
  if (bh__discard_enable(a) < 0)
    return BH_ENOMEM;
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_t *z = bh_arena_zone(a, i);
    unsigned from = bh__zone_notify_order(z);
    if (from > bh_arena_max_order(a))
      continue; /* no reporting order: a strategy that reports nothing */
    /* a zone the kernel's reporting skips, short of its low watermark plus a full report's
     * pages (page_reporting_process_zone, mm/page_reporting.c:269-277 in 6.12.117), keeps its
     * blocks unreported */
    bh_zone_lock(z);
    bool ok = bh_zone_low_wmark_ok(z, (uint64_t)BH_REPORT_CAPACITY << from);
    bh_zone_unlock(z);
    if (!ok)
      continue;
    long m = report_in_list_order(a, z, from, NULL, 0, page_reported);
    if (m < 0)
      return BH_ENOMEM;
    s->start_reported_blocks += (uint64_t)m;
    s->start_reported_marked += page_reported ? (uint64_t)m : 0;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Fidelity                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* The arena's reported free blocks against the end snapshot's (its R lines). */
static void end_reported(const bh__rmachine_t *rm, bh_arena_t *a, bh_replay_fidelity_t *f) {
  size_t n;
  bool known;
  const bh_block_run_t *runs = bh__machine_reported_runs(rm->m, BH_SNAP_END, &n, &known);
  if (!known)
    return;
  f->reported_present = true;
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_t *z = bh_arena_zone(a, i);
    bh_zone_lock(z);
    for (unsigned o = 0; o <= bh_arena_max_order(a); o++)
      for (int mt = 0; mt < BH_MT_TYPES; mt++)
        for (uint64_t p = bh_free_list_first(z, o, mt); p != BH_PFN_NONE;
             p = bh_free_list_next(z, o, mt, p))
          f->reported_predicted += bh_block_reported(z, p);
    for (size_t r = 0; r < n; r++)
      for (uint64_t k = 0; k < runs[r].count; k++) {
        uint64_t pfn = runs[r].pfn + (k << runs[r].order);
        unsigned o;
        f->reported_matched +=
            bh_zone_free_block(z, pfn, &o, NULL) && o == runs[r].order && bh_block_reported(z, pfn);
      }
    bh_zone_unlock(z);
  }
  for (size_t r = 0; r < n; r++)
    f->reported_recorded += runs[r].count;
}

void bh__rm_fidelity(const bh__rmachine_t *rm, bh_arena_t *a, bh_replay_summary_t *s) {
  const bh_snapshot_t *e = rm->m ? bh_machine_snapshot(rm->m, BH_SNAP_END) : NULL;
  bh_replay_fidelity_t *f = &s->fidelity;
  memset(f, 0, sizeof(*f));
  if (!e || !e->have_buddyinfo)
    return;
  const bh_machine_info_t *in = bh_machine_info(rm->m);
  f->present = true;
  f->nr_zones = in->nr_zones;
  f->max_order = in->max_order;
  f->pageblock_order = in->pageblock_order;
  uint64_t l1 = 0, pb_l1 = 0, pb_rec = 0;
  for (int i = 0; i < in->nr_zones; i++) {
    f->zones[i].node = in->zones[i].node;
    f->zones[i].type = in->zones[i].type;
    memcpy(f->zones[i].recorded, e->zones[i].nr_free, sizeof(f->zones[i].recorded));
    memcpy(f->zones[i].pb_recorded, e->zones[i].pageblocks, sizeof(f->zones[i].pb_recorded));
    for (int z = 0; z < bh_zone_count(a); z++) { /* the arena's zone of this node and type */
      bh_zone_info_t zi;
      if (bh_zone_info(a, z, &zi) || zi.node != in->zones[i].node || zi.type != in->zones[i].type)
        continue;
      memcpy(f->zones[i].predicted, zi.nr_free, sizeof(f->zones[i].predicted));
      memcpy(f->zones[i].pb_predicted, zi.pageblocks, sizeof(zi.pageblocks));
    }
    for (unsigned o = 0; o <= in->max_order && o <= BH_ORDER_LIMIT; o++) {
      uint64_t p = f->zones[i].predicted[o], r = f->zones[i].recorded[o];
      l1 += (p > r ? p - r : r - p) << o;
      f->predicted_free_pages += p << o;
      f->recorded_free_pages += r << o;
      if (o >= in->pageblock_order) {
        f->predicted_high_order_pages += p << o;
        f->recorded_high_order_pages += r << o;
      }
    }
    if (e->have_pagetypeinfo)
      for (int t = 0; t <= BH_MT_TYPES; t++) {
        uint64_t p = f->zones[i].pb_predicted[t], r = f->zones[i].pb_recorded[t];
        pb_l1 += p > r ? p - r : r - p;
        pb_rec += r;
      }
  }
  uint64_t both = f->predicted_free_pages + f->recorded_free_pages;
  f->free_order_error = both ? (double)l1 / (double)both : 0;
  f->high_order_error =
      f->recorded_high_order_pages
          ? ((double)f->predicted_high_order_pages - (double)f->recorded_high_order_pages) /
                (double)f->recorded_high_order_pages
          : 0;
  f->pageblock_error = pb_rec ? (double)pb_l1 / (2.0 * (double)pb_rec) : 0;
  end_reported(rm, a, f);
}

/* ---------------------------------------------------------------------------------------- */
/* Dumps                                                                                     */
/* ---------------------------------------------------------------------------------------- */

static const char *const dump_files[] = {"buddyinfo", "pagetypeinfo", "zoneinfo", "vmstat"};

int bh__rm_dump_check(const char *dir, char *err, size_t errlen) {
  for (int i = 0; i < 4; i++) {
    char p[4096];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, dump_files[i]);
    if (!lstat(p, &st))
      return bh__errf(err, errlen, BH_EINVAL, "--dump: %s exists already (give a new directory)",
                      p);
  }
  return 0;
}

/* pagetypeinfo as a kernel with CMA prints it: a CMA row and column (always 0 here). */
static int pagetypeinfo_cma(bh_arena_t *a, FILE *out, unsigned pbo, unsigned maxo) {
  static const char *const names[] = {"Unmovable",  "Movable", "Reclaimable",
                                      "HighAtomic", "CMA",     "Isolate"};
  static const int idx[] = {BH_MT_UNMOVABLE, BH_MT_MOVABLE, BH_MT_RECLAIMABLE, BH_MT_HIGHATOMIC, -1,
                            BH_MT_ISOLATE};
  int nodes = 0;
  for (int z = 0; z < bh_zone_count(a); z++) {
    bh_zone_info_t zi;
    bh_zone_info(a, z, &zi);
    nodes = zi.node + 1 > nodes ? zi.node + 1 : nodes;
  }
  for (int node = 0; node < nodes; node++) {
    fprintf(out, "Page block order: %u\nPages per block:  %lu\n\n", pbo, 1ul << pbo);
    fprintf(out, "%-43s ", "Free pages count per migrate type at order");
    for (unsigned o = 0; o <= maxo; o++)
      fprintf(out, "%6u ", o);
    fprintf(out, "\n");
    for (int z = 0; z < bh_zone_count(a); z++) {
      bh_zone_info_t zi;
      bh_zone_info(a, z, &zi);
      if (zi.node != node)
        continue;
      for (int t = 0; t < 6; t++) {
        fprintf(out, "Node %4d, zone %8s, type %12s ", zi.node, bh_zone_name(zi.type), names[t]);
        for (unsigned o = 0; o <= maxo; o++) {
          uint64_t n = idx[t] < 0 ? 0 : zi.nr_free_mt[o][idx[t]];
          fprintf(out, "%s%6lu ", n >= 100000 ? ">" : "", (unsigned long)(n > 100000 ? 100000 : n));
        }
        fprintf(out, "\n");
      }
    }
    fprintf(out, "\n%-23s", "Number of blocks type ");
    for (int t = 0; t < 6; t++)
      fprintf(out, "%12s ", names[t]);
    fprintf(out, "\n");
    for (int z = 0; z < bh_zone_count(a); z++) {
      bh_zone_info_t zi;
      bh_zone_info(a, z, &zi);
      if (zi.node != node)
        continue;
      fprintf(out, "Node %d, zone %8s ", zi.node, bh_zone_name(zi.type));
      for (int t = 0; t < 6; t++)
        fprintf(out, "%12lu ", (unsigned long)(idx[t] < 0 ? 0 : zi.pageblocks[idx[t]]));
      fprintf(out, "\n");
    }
  }
  return ferror(out) ? BH_EIO : 0;
}

/* One dump into dir/name through a temporary file that is renamed when complete. */
static int dump_one(const bh__rmachine_t *rm, bh_arena_t *a, const char *dir, int which, char *err,
                    size_t errlen) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof(path), "%s/%s", dir, dump_files[which]);
  snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, dump_files[which]);
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0)
      close(fd);
    return bh__errf(err, errlen, BH_ESYS, "--dump: cannot write in %s: %s", dir, strerror(errno));
  }
  const bh_machine_info_t *in = rm->m ? bh_machine_info(rm->m) : NULL;
  const bh_config_t *c = bh_arena_config(a);
  int rc;
  switch (which) {
  case 0:
    rc = bh_dump_buddyinfo(a, f);
    break;
  case 1:
    rc = in && in->has_cma ? pagetypeinfo_cma(a, f, c->pageblock_order, c->max_order)
                           : bh_dump_pagetypeinfo(a, f);
    break;
  case 2:
    rc = bh_dump_zoneinfo(a, f);
    break;
  default:
    rc = bh_dump_vmstat(a, f);
  }
  if (fclose(f) && !rc)
    rc = BH_EIO;
  if (!rc && (link(tmp, path) || unlink(tmp))) /* link: never over a file that appeared */
    rc = BH_ESYS;
  if (rc) {
    unlink(tmp);
    return bh__errf(err, errlen, rc, "--dump: cannot write %s: %s", path,
                    rc == BH_ESYS ? strerror(errno) : bh_strerror(rc));
  }
  return 0;
}

int bh__rm_dump(const bh__rmachine_t *rm, bh_arena_t *a, const char *dir, char *err,
                size_t errlen) {
  if (mkdir(dir, 0777) && errno != EEXIST)
    return bh__errf(err, errlen, BH_ESYS, "--dump: cannot make %s: %s", dir, strerror(errno));
  for (int i = 0; i < 4; i++) {
    int rc = dump_one(rm, a, dir, i, err, errlen);
    if (rc)
      return rc;
  }
  return 0;
}

/* The next line of start/window_frees at *t ("PFN ORDER [TIME]"), moving *t past it: the
 * fields read (2, or 3 with a time), 1 for a line that is not one (skipped: the description
 * was read as it was written), 0 at the end. */
static int window_free_line(const char **t, unsigned long long *pfn, unsigned *order,
                            unsigned long long *when) {
  if (!*t || !**t)
    return 0;
  const char *nl = strchr(*t, '\n');
  int k = sscanf(*t, "%llx %u %llu", pfn, order, when);
  *t = nl ? nl + 1 : *t + strlen(*t);
  return k >= 2 && *order <= BH_ORDER_LIMIT ? k : 1;
}

bool bh__rm_window_request(const bh__rmachine_t *rm, bh_arena_t *a, uint64_t *t_ns) {
  const char *t = rm->m ? bh_machine_section(rm->m, "start/window_frees") : NULL;
  bool found = false;
  unsigned long long pfn, when;
  unsigned order;
  for (int k; (k = window_free_line(&t, &pfn, &order, &when));) {
    if (k != 3 || pfn >= bh_arena_pages(a))
      continue;
    int zi = bh__pfn_zone_id(a, pfn);
    if (zi < 0 || order < bh__zone_notify_order(bh_arena_zone(a, zi)))
      continue;
    if (!found || when < *t_ns)
      *t_ns = when;
    found = true;
  }
  return found;
}

bh_block_run_t *bh__rm_window_frees(const bh__rmachine_t *rm, size_t *n) {
  *n = 0;
  const char *t = rm->m ? bh_machine_section(rm->m, "start/window_frees") : NULL;
  size_t cap = 0;
  bh_block_run_t *v = NULL;
  unsigned long long pfn, when;
  unsigned order;
  for (int k; (k = window_free_line(&t, &pfn, &order, &when));) {
    if (k < 2)
      continue;
    if (bh__grow(&v, &cap, *n, sizeof(*v))) {
      free(v);
      *n = 0;
      return NULL;
    }
    v[(*n)++] = (bh_block_run_t){.pfn = pfn, .count = 1, .order = (uint8_t)order};
  }
  return v;
}

void bh__rm_free(bh__rmachine_t *rm) {
  bh_machine_free(rm->m);
  bh__first_events_free(&rm->fe);
  free(rm->kfree);
  free(rm->unseen);
  memset(rm, 0, sizeof(*rm));
}

/* ---------------------------------------------------------------------------------------- */
/* JSON                                                                                      */
/* ---------------------------------------------------------------------------------------- */

static void u64_array(FILE *f, const uint64_t *v, unsigned n) {
  fputc('[', f);
  for (unsigned i = 0; i < n; i++)
    fprintf(f, "%s%lu", i ? ", " : "", (unsigned long)v[i]);
  fputc(']', f);
}

const char *const bh__where_names[BH_WHERE_NR] = {
    "pcp_head", "pcp_deeper",   "pcp_far",   "pcp_other_list", "pcp_other_cpu",
    "buddy",    "buddy_inside", "allocated", "pretrace",       "other"};

/* Misses by where the kernel's block was (BH_WHERE_*), as an object of non-zero counts. */
static void where_json(FILE *f, const uint64_t *v) {
  const char *const *names = bh__where_names;
  fputc('{', f);
  for (int i = 0, k = 0; i < BH_WHERE_NR; i++)
    if (v[i])
      fprintf(f, "%s\"%s\": %lu", k++ ? ", " : "", names[i], (unsigned long)v[i]);
  fputc('}', f);
}

void bh__rm_json(FILE *f, const bh_replay_summary_t *s, const char *nl, int indent) {
  static const char *const mts[] = {"Unmovable",  "Movable", "Reclaimable",
                                    "HighAtomic", "Isolate", "CMA"};
  const bh_replay_agreement_t *g = &s->agreement;
  fprintf(f, ",%s%*s\"placement_agreement\": ", nl, indent, "");
  if (!g->present) {
    fprintf(f, "null");
  } else {
    fprintf(f, "{\"overall\": %.6f, \"allocs\": %lu, \"same_pfn\": %lu, \"by_order\": {",
            g->allocs ? (double)g->same / (double)g->allocs : 0, (unsigned long)g->allocs,
            (unsigned long)g->same);
    int k = 0;
    for (unsigned o = 0; o <= BH_ORDER_LIMIT; o++)
      if (g->by_order[o][0])
        fprintf(f, "%s\"%u\": {\"allocs\": %lu, \"agreement\": %.6f}", k++ ? ", " : "", o,
                (unsigned long)g->by_order[o][0],
                (double)g->by_order[o][1] / (double)g->by_order[o][0]);
    fprintf(f, "}, \"by_migratetype\": {");
    k = 0;
    for (int t = 0; t < BH_MT_TYPES; t++)
      if (g->by_mt[t][0])
        fprintf(f, "%s\"%s\": {\"allocs\": %lu, \"agreement\": %.6f}", k++ ? ", " : "", mts[t],
                (unsigned long)g->by_mt[t][0], (double)g->by_mt[t][1] / (double)g->by_mt[t][0]);
    fprintf(f, "}, \"misses_by_where\": ");
    where_json(f, g->miss_where);
    fprintf(f, ", \"first_misses_by_where\": ");
    where_json(f, g->first_miss_where);
    fprintf(f, "}");
  }
  const bh_replay_drains_t *d = &s->drains;
  fprintf(f, ",%s%*s\"pcp_drains\": ", nl, indent, "");
  if (!d->present) {
    fprintf(f, "null");
  } else {
    fprintf(f, "{\"kernel\": %lu, \"replay\": %lu, \"same\": %lu, \"first_differ\": ",
            (unsigned long)d->kernel, (unsigned long)d->replay, (unsigned long)d->same);
    if (d->first_time_s < 0)
      fprintf(f, "null}");
    else
      fprintf(f,
              "{\"trace_time_s\": %.6f, \"cpu\": %d, \"kernel_pages\": %lu, "
              "\"replay_pages\": %lu}}",
              d->first_time_s, d->first_cpu, (unsigned long)d->first_kernel_pages,
              (unsigned long)d->first_replay_pages);
  }
  const bh_replay_fidelity_t *fi = &s->fidelity;
  fprintf(f, ",%s%*s\"fidelity\": ", nl, indent, "");
  if (!fi->present) {
    fprintf(f, "null");
    return;
  }
  fprintf(f,
          "{\"free_order_error\": %.6f, \"high_order_error\": %.6f, \"pageblock_error\": %.6f, "
          "\"predicted_free_pages\": %lu, \"recorded_free_pages\": %lu, "
          "\"predicted_high_order_pages\": %lu, \"recorded_high_order_pages\": %lu, "
          "\"high_order\": %u, \"zones\": [",
          fi->free_order_error, fi->high_order_error, fi->pageblock_error,
          (unsigned long)fi->predicted_free_pages, (unsigned long)fi->recorded_free_pages,
          (unsigned long)fi->predicted_high_order_pages,
          (unsigned long)fi->recorded_high_order_pages, fi->pageblock_order);
  for (int i = 0; i < fi->nr_zones; i++) {
    fprintf(f, "%s{\"node\": %d, \"zone\": ", i ? ", " : "", fi->zones[i].node);
    bh__json_str(f, bh_zone_name(fi->zones[i].type));
    fprintf(f, ", \"free_blocks_predicted\": ");
    u64_array(f, fi->zones[i].predicted, fi->max_order + 1);
    fprintf(f, ", \"free_blocks_recorded\": ");
    u64_array(f, fi->zones[i].recorded, fi->max_order + 1);
    fprintf(f, ", \"pageblocks_predicted\": {");
    for (int t = 0; t <= BH_MT_TYPES; t++)
      fprintf(f, "%s\"%s\": %lu", t ? ", " : "", mts[t],
              (unsigned long)fi->zones[i].pb_predicted[t]);
    fprintf(f, "}, \"pageblocks_recorded\": {");
    for (int t = 0; t <= BH_MT_TYPES; t++)
      fprintf(f, "%s\"%s\": %lu", t ? ", " : "", mts[t],
              (unsigned long)fi->zones[i].pb_recorded[t]);
    fprintf(f, "}}");
  }
  fprintf(f, "]");
  if (fi->reported_present)
    fprintf(f, ", \"reported_blocks\": {\"recorded\": %lu, \"predicted\": %lu, \"matched\": %lu}",
            (unsigned long)fi->reported_recorded, (unsigned long)fi->reported_predicted,
            (unsigned long)fi->reported_matched);
  fprintf(f, "}");
}
