/*
 * Replays in a recorded machine's shape.
 *
 *  - A crafted snapshot (an arena's state written as a machine description: zoneinfo,
 *    buddyinfo, pagetypeinfo and a free map with its exact pageblock types) replayed from a
 *    trace without events: the dumps at the end of the trace (--dump) equal the snapshot's
 *    buddyinfo and pagetypeinfo byte for byte.
 *  - The same from a Debian 6.1 guest's /proc files (--start DIR, counts start state, a CMA
 *    column), the interface of the real-guest experiment.
 *  - Frees of memory allocated before the trace are ordinary frees; allocations are compared
 *    with the kernel's choice (agreement); --placement trace takes the recorded block and
 *    counts the ones that were not free.
 *  - A trace recorded before machine descriptions existed still replays, in the default
 *    layout from an empty start, and with --start DIR in the machine's.
 *  - Free blocks the start snapshot records as reported start reported under the bubble
 *    strategy: they are not reported again, the others are; they wait at the tail of their
 *    free lists, so an allocation takes an unreported block first.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/machine.h>
#include <buddyhint/replay.h>
#include <buddyhint/strategy.h>

#include "buddy/internal.h"
#include "replay/replay_machine.h"

#include <sys/stat.h>

#define MDATA BH_SOURCE_DIR "/tests/trace/data/machine"

/* The first free block of at least min_order from pfn from in a pageblock of type mt. */
static uint64_t free_block(bh_arena_t *a, uint64_t from, unsigned min_order, int mt);

/* Not inlined: gcc 12 then takes the text for the local buf itself (-Wdangling-pointer). */
__attribute__((noinline)) static char *dump(bh_arena_t *a, int (*fn)(bh_arena_t *, FILE *)) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  assert_int_equal(fn(a, f), 0);
  fclose(f);
  return buf;
}

static char *slurp(const char *path) {
  size_t n;
  unsigned char *b = tt_read(path, &n);
  b[n] = 0;
  return (char *)b;
}

/* "@NAME N" and the text's lines. */
static void section(FILE *f, const char *name, const char *text) {
  size_t lines = 0;
  for (const char *p = text; *p; p++)
    lines += *p == '\n';
  fprintf(f, "@%s %zu\n%s", name, lines, text);
}

/* The arena's free map, with extra's lines after it (malloc'd). */
static char *free_map(bh_arena_t *a, const char *extra) {
  char *fm = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&fm, &n);
  fprintf(f, "freemap 1\n");
  uint64_t last = 0;
  for (uint64_t p = 0; p < a->nr_pages; p++)
    if (a->pages[p].flags & BH__PG_BUDDY) {
      fprintf(f, "F %lu %u\n", (unsigned long)(p - last), a->pages[p].order);
      last = p + (1ull << a->pages[p].order);
    }
  static const char letters[] = "UMRHI";
  for (uint64_t b = 0; b < a->nr_pages >> a->pb_order; b++)
    fprintf(f, "P %lx %c1\n", (unsigned long)(b << a->pb_order),
            a->pageblock[b] & BH__PB_ABSENT ? '-' : letters[a->pageblock[b] & 7]);
  fputs(extra, f);
  fclose(f);
  return fm;
}

/* The arena's state as a machine description with a start snapshot (exact free map, and
 * fm_extra's lines after it) and, if end, the same as the end snapshot (with a free map of
 * end_extra's lines after it, if end_extra is not NULL). */
static char *describe_zi(bh_arena_t *a, bool end, const char *fm_extra, const char *end_extra,
                         const char *zi_text) {
  char *fm = free_map(a, fm_extra), *out = NULL;
  size_t n = 0;
  FILE *f;
  char *zi = zi_text ? strdup(zi_text) : dump(a, bh_dump_zoneinfo),
       *bi = dump(a, bh_dump_buddyinfo), *pi = dump(a, bh_dump_pagetypeinfo);
  f = open_memstream(&out, &n);
  fprintf(f, "buddyhint-machine 1\n");
  for (int w = 0; w < (end ? 2 : 1); w++) {
    char name[64];
    const char *s = w ? "end" : "start";
    snprintf(name, sizeof(name), "%s/zoneinfo", s);
    section(f, name, zi);
    snprintf(name, sizeof(name), "%s/buddyinfo", s);
    section(f, name, bi);
    snprintf(name, sizeof(name), "%s/pagetypeinfo", s);
    section(f, name, pi);
    if (!w) {
      section(f, "start/freemap", fm);
    } else if (end_extra) {
      char *efm = free_map(a, end_extra);
      section(f, "end/freemap", efm);
      free(efm);
    }
  }
  fprintf(f, "@end\n");
  fclose(f);
  free(fm);
  free(zi);
  free(bi);
  free(pi);
  return out;
}

static char *describe_with(bh_arena_t *a, bool end, const char *fm_extra, const char *end_extra) {
  return describe_zi(a, end, fm_extra, end_extra, NULL);
}

static char *describe(bh_arena_t *a, bool end) { return describe_with(a, end, "", NULL); }

/* A version 3 trace of lines with desc, in format fmt (written further down). */
static const char *write_trace3(const char *name, int fmt, const char *desc, const char *lines);

/* A trace of these native text lines (version 2, with desc, if given). */
static const char *write_trace(const char *name, const char *desc, const char *lines) {
  const char *p = tt_path(name);
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open2(p, BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE, desc, &w),
                   0);
  bh_trace_t *t;
  const char *tp = tt_write_str("lines.txt", lines);
  assert_int_equal(bh_trace_open(tp, NULL, &t), 0);
  bh_event_t ev;
  while (bh_trace_next(t, &ev) == 1)
    assert_int_equal(bh_trace_write(w, &ev), 0);
  bh_trace_close(t);
  assert_int_equal(bh_trace_writer_close(w), 0);
  return p;
}

static void replay(bh_replay_config_t *cfg, bh_replay_summary_t *s) {
  char err[512] = "";
  cfg->arena.backing = BH_BACKING_SIM;
  cfg->idle_ns = 0;
  int rc = bh_replay_run(cfg, s, err, sizeof(err));
  if (rc)
    fail_msg("replay %s: %s", cfg->trace, err);
  assert_int_equal(s->check_violations, 0);
}

/* The default configuration, for the trace at path. */
static bh_replay_config_t config_of(const char *path) {
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  return cfg;
}

/* Replays the trace at path with the default configuration (sim backing, no idle). */
static void replay_defaults(const char *path, bh_replay_summary_t *s) {
  bh_replay_config_t cfg = config_of(path);
  replay(&cfg, s);
}

/* A fragmented arena: every mobility, orders 0..4, half freed, the pcp lists drained. */
static bh_arena_t *crafted_arena(void) {
  bh_arena_t *a = tt_sim_arena(16, 112, 128);
  tt_churn(a, 99, 30000, 20000);
  bh_drain_pcp(a);
  return a;
}

static void expect_file(const char *path, const char *want, const char *what) {
  char *got = slurp(path);
  if (strcmp(got, want))
    fail_msg("%s differs:\n--- got\n%s--- want\n%s", what, got, want);
  free(got);
}

static void test_crafted_snapshot(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, true);
  const char *p = write_trace("crafted.bht", desc, "# buddyhint-trace 1\n");
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = p;
  const char *out = tt_path("dump-crafted");
  cfg.dump_dir = out;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_string_equal(s.layout, "machine");
  assert_string_equal(s.start_state, "kpageflags");
  char path[512];
  char *bi = dump(a, bh_dump_buddyinfo), *pi = dump(a, bh_dump_pagetypeinfo);
  snprintf(path, sizeof(path), "%s/buddyinfo", out);
  expect_file(path, bi, "buddyinfo");
  snprintf(path, sizeof(path), "%s/pagetypeinfo", out);
  expect_file(path, pi, "pagetypeinfo");
  /* the end snapshot is the same state: no prediction error */
  assert_true(s.fidelity.present);
  assert_true(s.fidelity.free_order_error == 0);
  assert_true(s.fidelity.pageblock_error == 0);
  assert_int_equal(s.fidelity.predicted_free_pages, s.fidelity.recorded_free_pages);
  /* a second dump into the same directory would overwrite: refused */
  bh_replay_summary_t s2;
  char err[512];
  assert_int_equal(bh_replay_run(&cfg, &s2, err, sizeof(err)), BH_EINVAL);
  assert_non_null(strstr(err, "exists already"));
  static const char *const files[] = {"buddyinfo", "pagetypeinfo", "zoneinfo", "vmstat"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof(path), "%s/%s", out, files[i]);
    unlink(path);
  }
  rmdir(out);
  free(bi);
  free(pi);
  free(desc);
  bh_arena_destroy(a);
}

/* The real-guest interface: --start DIR of a 6.1 guest's files, from its counts alone. */
static void test_guest_dir(void **state) {
  (void)state;
  const char *p = write_trace("none.bht", NULL, "# buddyhint-trace 1\n");
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = p;
  cfg.start_dir = MDATA "/guest61";
  cfg.end_dir = MDATA "/guest61";
  const char *out = tt_path("dump-guest");
  cfg.dump_dir = out;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_string_equal(s.layout, "machine");
  assert_string_equal(s.start_state, "counts");
  assert_int_equal(s.start_unplaced_blocks, 0);
  assert_int_equal(s.nr_cpus, 2);
  char path[512], *want;
  snprintf(path, sizeof(path), "%s/buddyinfo", out);
  expect_file(path, want = slurp(MDATA "/guest61/buddyinfo"), "the guest's buddyinfo");
  free(want);
  snprintf(path, sizeof(path), "%s/pagetypeinfo", out);
  expect_file(path, want = slurp(MDATA "/guest61/pagetypeinfo"), "the guest's pagetypeinfo");
  free(want);
  assert_true(s.fidelity.present && s.fidelity.free_order_error == 0);
  /* a 6.1 kernel (its zoneinfo prints no high_min/high_max) keeps one pcp high mark,
   * zone_highsize() of the low watermark (6.1 mm/page_alloc.c pageset_update): DMA32's CPUs
   * print 1779 (tests/trace/data/machine/guest61/zoneinfo), and so does the replay's dump */
  assert_false(s.pcp_high_tuned);
  assert_false(s.pcp_free_high_raised); /* 6.1: free_high from batch (before 6.16) */
  snprintf(path, sizeof(path), "%s/zoneinfo", out);
  char *zi = slurp(path), *dma32 = strstr(zi, "zone    DMA32");
  assert_non_null(dma32);
  char *hl = strstr(dma32, "high:");
  assert_non_null(hl);
  assert_int_equal(strtol(hl + 5, NULL, 10), 1779);
  free(zi);
  static const char *const files[] = {"buddyinfo", "pagetypeinfo", "zoneinfo", "vmstat"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof(path), "%s/%s", out, files[i]);
    unlink(path);
  }
  rmdir(out);
  cfg.dump_dir = NULL;
  cfg.pcp_high_tuning = 1;      /* the 6.7+ rule asked for */
  cfg.pcp_free_high_raised = 1; /* and the 6.16+ one */
  replay(&cfg, &s);
  assert_true(s.pcp_high_tuned);
  assert_true(s.pcp_free_high_raised);
  cfg.pcp_high_tuning = -1;
  cfg.pcp_free_high_raised = -1;
  /* kpageflags asked for without one: refused with a reason */
  cfg.dump_dir = NULL;
  cfg.start = BH_START_KPAGEFLAGS;
  char err[512];
  assert_int_equal(bh_replay_run(&cfg, &s, err, sizeof(err)), BH_EINVAL);
  assert_non_null(strstr(err, "no free map"));
}

/*
 * The rules that differ between the kernels users record, by the release the machine
 * description carries: the pcp high mark is tuned from 6.7 (zoneinfo's high_min/high_max
 * otherwise), free_high waits for batch + high_min / 2 from 6.16 (mm/page_alloc.c:2703 has
 * batch in 6.12.117); an unknown release gets the 6.12 rule.
 */
static void test_kernel_rules_by_release(void **state) {
  (void)state;
  static const struct {
    const char *release;
    bool tunes, raises;
  } k[] = {{"6.1.0-28-amd64", false, false},
           {"6.6.58", false, false},
           {"6.7.0", true, false},
           {"6.12.117+deb12-amd64", true, false},
           {"6.15.11", true, false},
           {"6.16.0", true, true},
           {"6.18.44-fc-v1272", true, true},
           {"7.0.1", true, true},
           {"5.15.0-91-generic", false, false}};
  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
    bh_machine_info_t in;
    memset(&in, 0, sizeof(in));
    snprintf(in.kernel_release, sizeof(in.kernel_release), "%s", k[i].release);
    assert_int_equal(bh__rm_kernel_tunes_pcp_high(&in), k[i].tunes);
    assert_int_equal(bh__rm_kernel_raises_free_high(&in), k[i].raises);
  }
  bh_machine_info_t none;
  memset(&none, 0, sizeof(none));
  assert_false(bh__rm_kernel_raises_free_high(&none));
}

/*
 * The crafted arena as the start, and a trace that frees memory allocated before it, takes a
 * free block, and takes an allocated one.
 */
static void test_pretrace_and_placement(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  uint64_t used = UINT64_MAX, freeb = UINT64_MAX, used_pretrace_order3 = UINT64_MAX;
  for (uint64_t p = 4096; p < a->nr_pages; p++) {
    const bh__page_t *pg = &a->pages[p];
    if ((pg->flags & BH__PG_ALLOC) && pg->order == 0 && used == UINT64_MAX)
      used = p;
    if ((pg->flags & BH__PG_BUDDY) && pg->order == 0 && freeb == UINT64_MAX)
      freeb = p;
    if (used_pretrace_order3 == UINT64_MAX && !(p & 7)) {
      bool all = true;
      for (uint64_t i = p; i < p + 8 && all; i++)
        all = (a->pages[i].flags & BH__PG_ALLOC) && a->pages[i].order == 0;
      if (all)
        used_pretrace_order3 = p;
    }
  }
  assert_true(used != UINT64_MAX && freeb != UINT64_MAX && used_pretrace_order3 != UINT64_MAX);
  char lines[512];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n"
           "1000 F %#lx 0 cpu=0\n"                /* allocated before the trace */
           "2000 F %#lx 3 cpu=0\n"                /* eight pages allocated before, freed as one */
           "3000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n" /* a free page */
           "4000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n" /* allocated in the start state */
           "5000 F %#lx 0 cpu=0\n",
           (unsigned long)used, (unsigned long)used_pretrace_order3, (unsigned long)freeb,
           (unsigned long)(used + 0x2000000), (unsigned long)freeb);
  const char *p = write_trace("pretrace.bht", desc, lines);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = p;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.unknown_frees, 0);
  assert_int_equal(s.pretrace_frees, 2);
  assert_int_equal(s.frees, 3);
  assert_true(s.agreement.present);
  assert_int_equal(s.agreement.allocs, 2);
  assert_false(s.fidelity.present); /* no end snapshot */
  cfg.placement = BH_PLACEMENT_TRACE;
  replay(&cfg, &s);
  assert_string_equal(s.placement, "trace");
  assert_false(s.agreement.present);
  /* freeb is free: taken itself; used + 32 MiB lies outside the arena: a conflict */
  assert_int_equal(s.placement_conflicts, 1);
  assert_int_equal(s.unknown_frees, 0);
  /* without the layout, the same frees are unknown */
  cfg.placement = BH_PLACEMENT_ALLOCATOR;
  cfg.layout = BH_LAYOUT_DEFAULT;
  replay(&cfg, &s);
  assert_string_equal(s.layout, "default");
  assert_string_equal(s.start_state, "empty");
  assert_int_equal(s.unknown_frees, 2);
  free(desc);
  bh_arena_destroy(a);
}

/* Three allocated order-0 pages of one Movable pageblock, in pfn order, that the start state
 * holds allocated: the pages a trace that allocates them first finds on a pcp list. */
static void three_movable_used(bh_arena_t *a, uint64_t p3[3]) {
  int n = 0;
  for (uint64_t b = 1; b < a->nr_pages >> a->pb_order && n < 3; b++) {
    if ((a->pageblock[b] & 7) != BH_MT_MOVABLE)
      continue;
    n = 0;
    for (uint64_t p = b << a->pb_order; p < (b + 1) << a->pb_order && n < 3; p++) {
      const bh__page_t *pg = &a->pages[p];
      if ((pg->flags & BH__PG_ALLOC) && pg->order == 0)
        p3[n++] = p;
    }
  }
  assert_int_equal(n, 3);
}

/* The crafted arena, its description (*desc, the caller frees it) and three_movable_used's
 * pages. */
static bh_arena_t *arena_with_used(char **desc, uint64_t p3[3]) {
  bh_arena_t *a = crafted_arena();
  *desc = describe(a, false);
  three_movable_used(a, p3);
  return a;
}

/* events into out, with X and Y (the trace lines use neither letter otherwise) replaced by the
 * pfns x and y. */
static void with_pfns(const char *events, uint64_t x, uint64_t y, char *out, size_t len) {
  size_t k = 0;
  for (const char *e = events; *e && k + 24 < len; e++)
    if (*e == 'X' || *e == 'Y')
      k += (size_t)snprintf(out + k, len - k, "%#lx", (unsigned long)(*e == 'X' ? x : y));
    else
      out[k++] = *e;
  out[k] = '\0';
}

/*
 * The pcp lists' order at the start, from the trace: the kernel takes a list's head
 * (__rmqueue_pcplist, mm/page_alloc.c:3092 in 6.12), so pages that a CPU allocates first
 * were on its list in the order it took them.  Taken in the opposite of pfn order, both are
 * the kernel's pfn (with the lists in pfn order the first would take lo, a miss where the
 * kernel's block was one deeper on the same list, and the second a miss on a block the arena
 * had already handed out).  Then lo, freed on CPU 1, goes to CPU 1's list
 * (free_unref_page_commit, mm/page_alloc.c:2689), and CPU 0's allocation of it is a miss whose
 * cause is a block on another CPU's list, the first miss of that list.  Before all that, a
 * page of the same Movable pageblock that an Unmovable request takes first was on CPU 0's
 * Unmovable list, where that request looks (the request's migratetype picks the list,
 * rmqueue_pcplist, mm/page_alloc.c:3124), not on the pageblock type's list.
 */
static void test_start_pcp_order(void **state) {
  (void)state;
  uint64_t p3[3];
  char *desc;
  bh_arena_t *a = arena_with_used(&desc, p3);
  uint64_t u = p3[0], lo = p3[1], hi = p3[2];
  char lines[512];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n"
           "500 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
           "1000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
           "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
           "3000 F %#lx 0 cpu=1\n"
           "4000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
           (unsigned long)u, (unsigned long)hi, (unsigned long)lo, (unsigned long)lo,
           (unsigned long)lo);
  const char *p = write_trace("pcporder.bht", desc, lines);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = p;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.start_pcp_pages, 3);
  assert_true(s.agreement.present);
  assert_int_equal(s.agreement.allocs, 4);
  assert_int_equal(s.agreement.same, 3);
  assert_int_equal(s.agreement.miss_where[BH_WHERE_PCP_OTHER_CPU], 1);
  assert_int_equal(s.agreement.first_miss_where[BH_WHERE_PCP_OTHER_CPU], 1);
  uint64_t misses = 0;
  for (int i = 0; i < BH_WHERE_NR; i++)
    misses += s.agreement.miss_where[i];
  assert_int_equal(misses, 1);
  free(desc);
  bh_arena_destroy(a);
}

/* An aligned group of four allocated pages in a Movable pageblock (an allocated block of
 * order 2 or more); its first pfn. */
static uint64_t four_movable_used(bh_arena_t *a) {
  for (uint64_t p = 1ull << a->pb_order; p < a->nr_pages; p++) {
    const bh__page_t *pg = &a->pages[p];
    if ((pg->flags & BH__PG_ALLOC) && pg->order >= 2 &&
        (a->pageblock[p >> a->pb_order] & 7) == BH_MT_MOVABLE)
      return p;
  }
  fail_msg("no allocated block of order 2 in a Movable pageblock");
  return 0;
}

/*
 * A page taken and freed before the trace allocates the order-2 block that holds it: the block
 * formed only when the page's pcp list was drained, so it was not whole on a pcp list at the
 * start.  The start state puts the inner page first (its own first allocation) and each other
 * page as an order-0 block, no page twice, in the trace's order and in pfn order alike (the
 * trace's order once put the order-2 block over the inner page: "a pcp block overlaps a free
 * block or another pcp block", a replay that could not start).
 */
static void test_start_pcp_inner_first(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  uint64_t p = four_movable_used(a);
  char lines[512];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n"
           "1000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
           "2000 F %#lx 0 cpu=0\n"
           "3000 A %#lx 2 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
           (unsigned long)(p + 2), (unsigned long)(p + 2), (unsigned long)p);
  const char *path = write_trace("pcpinner.bht", desc, lines);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  bh_replay_summary_t s;
  for (int pfn_order = 0; pfn_order < 2; pfn_order++) {
    cfg.start_order_pfn = pfn_order;
    replay(&cfg, &s);
    assert_int_equal(s.start_pcp_pages, 4);
    assert_int_equal(s.agreement.allocs, 2);
  }
  free(desc);
  bh_arena_destroy(a);
}

/* The two lowest free blocks of the lowest order on the Movable lists of the arena's highest
 * zone (where a movable request looks first), their order in *order. */
static void two_movable_free(bh_arena_t *a, uint64_t *lo, uint64_t *hi, unsigned *order) {
  const bh_zone_t *z = &a->zones[a->nr_zones - 1];
  for (unsigned o = 0; o <= a->max_order; o++) {
    *lo = *hi = UINT64_MAX;
    for (uint64_t p = z->start_pfn; p < z->start_pfn + z->spanned_pages && *hi == UINT64_MAX; p++) {
      const bh__page_t *pg = &a->pages[p];
      if ((pg->flags & BH__PG_BUDDY) && pg->order == o &&
          (a->pageblock[p >> a->pb_order] & 7) == BH_MT_MOVABLE) {
        if (*lo == UINT64_MAX)
          *lo = p;
        else
          *hi = p;
      }
    }
    *order = o;
    if (*lo != UINT64_MAX) /* a lower order's single block would be taken first */
      break;
  }
  assert_true(*hi != UINT64_MAX);
}

/*
 * The buddy lists' order at the start, from the trace: the kernel takes a free list's head
 * (get_page_from_free_area, mm/page_alloc.c:743 in 6.12.117, from __rmqueue_smallest :1644;
 * rmqueue_bulk :2376 refills a pcp list from it), so of two free blocks the one the trace
 * allocates first was nearer the head.  The start state puts the higher one first when the
 * trace takes it first: every allocation is the kernel's pfn.  In pfn order
 * (--start-order pfn) the refill takes the lower one first, and every allocation misses.
 */
static void test_start_buddy_order(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  uint64_t lo, hi;
  unsigned order;
  two_movable_free(a, &lo, &hi, &order);
  /* every page of the higher block, in pfn order (a refill splits it so), then the lower's
   * first */
  char *lines = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&lines, &n);
  fprintf(f, "# buddyhint-trace 1\n");
  uint64_t t = 1000;
  for (uint64_t q = hi; q < hi + (1ull << order); q++, t += 1000)
    fprintf(f, "%lu A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n", (unsigned long)t, (unsigned long)q);
  fprintf(f, "%lu A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n", (unsigned long)t, (unsigned long)lo);
  fclose(f);
  const char *p = write_trace("buddyorder.bht", desc, lines);
  uint64_t allocs = (1ull << order) + 1;
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = p;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.start_pcp_pages, 0);
  assert_int_equal(s.agreement.allocs, allocs);
  assert_int_equal(s.agreement.same, allocs);
  cfg.start_order_pfn = true;
  replay(&cfg, &s);
  assert_int_equal(s.agreement.allocs, allocs);
  assert_int_equal(s.agreement.same, 0);
  free(lines);
  free(desc);
  bh_arena_destroy(a);
}

/* The trace at path replayed under none and under bubble: the start marks `reported` blocks
 * reported (none missed), and every one of the allocs allocations is the kernel's pfn. */
static void all_kernel_pfns(const char *path, uint64_t reported, uint64_t allocs) {
  static const char *const strategies[] = {"none", "bubble"};
  for (int i = 0; i < 2; i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = path;
    cfg.hint.strategy = strategies[i];
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_reported_blocks, reported);
    assert_int_equal(s.start_reported_missed, 0);
    assert_int_equal(s.agreement.allocs, allocs);
    assert_int_equal(s.agreement.same, allocs);
  }
}

/*
 * The same when the kernel had reported both blocks (R lines): reporting put them back at
 * their list's tail in the order it took them from the list's head (page_reporting_cycle walks
 * a list from its head, mm/page_reporting.c:184 in 6.12; page_reporting_drain puts each back,
 * :120, at the tail, mm/page_alloc.c:2950-2951), so their order on the list is still the one
 * the trace shows, whatever the strategy.  Marking them reported at the start keeps that
 * order (it was pfn order, and the first allocation missed).
 */
static void test_start_buddy_order_reported(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  uint64_t lo, hi;
  unsigned order;
  two_movable_free(a, &lo, &hi, &order);
  char r[128];
  snprintf(r, sizeof(r), "reported 2\nR %lu %u\nR %lu %u\n", (unsigned long)lo, order,
           (unsigned long)(hi - lo - (1ull << order)), order);
  char *desc = describe_with(a, false, r, NULL);
  char *lines = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&lines, &n);
  fprintf(f, "# buddyhint-trace 1\n");
  uint64_t t = 1000;
  for (uint64_t q = hi; q < hi + (1ull << order); q++, t += 1000)
    fprintf(f, "%lu A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n", (unsigned long)t, (unsigned long)q);
  fprintf(f, "%lu A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n", (unsigned long)t, (unsigned long)lo);
  fclose(f);
  all_kernel_pfns(write_trace("buddyorder-reported.bht", desc, lines), 2, (1ull << order) + 1);
  free(lines);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * One of the two reported, the one the trace takes first, and the takes traced (version 3,
 * mm_page_alloc_zone_locked): reporting put it back at its list's tail before the snapshot
 * (mm/page_alloc.c:2950-2951 in 6.12), but the blocks ahead of it went before the trace took
 * it, as the kernel takes a list's head (get_page_from_free_area :743): it stays where its
 * take puts it, and every allocation is the kernel's.  Moved to the tail behind the other
 * block, which the trace never takes, the first allocation missed.
 */
static void test_start_reported_taken(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  uint64_t lo, hi;
  unsigned order;
  two_movable_free(a, &lo, &hi, &order);
  char r[64];
  snprintf(r, sizeof(r), "reported 1\nR %lu %u\n", (unsigned long)hi, order);
  char *desc = describe_with(a, false, r, NULL);
  char *lines = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&lines, &n);
  fprintf(f, "# buddyhint-trace 3\n");
  uint64_t t = 1000;
  for (uint64_t q = hi; q < hi + (1ull << order); q++, t += 10)
    fprintf(f, "%lu Z %#lx 0 cpu=0 mt=1 refill=1\n", (unsigned long)t, (unsigned long)q);
  for (uint64_t q = hi; q < hi + (1ull << order); q++, t += 1000)
    fprintf(f, "%lu A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n", (unsigned long)t, (unsigned long)q);
  fclose(f);
  all_kernel_pfns(write_trace3("reported-taken.bht", BH_TRACE_NATIVE_BINARY, desc, lines), 1,
                  1ull << order);
  free(lines);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * The free map's mistake as a map makes it, keeping pagetypeinfo's counts: Movable pageblock
 * pb typed Unmovable, swapped with an Unmovable pageblock of its zone that holds no free page
 * (the trace does not touch it).  The map's extra lines that say so, into extra.
 */
static void mistype_pageblock(bh_arena_t *a, uint64_t pb, char *extra, size_t len) {
  const bh_zone_t *z = bh__pfn_zone(a, pb);
  uint64_t quiet = UINT64_MAX;
  for (uint64_t b = z->zone_start_pfn >> a->pb_order;
       b < (z->zone_start_pfn + z->zone_spanned_pages) >> a->pb_order && quiet == UINT64_MAX; b++) {
    bool ok = (a->pageblock[b] & 7) == BH_MT_UNMOVABLE && !(a->pageblock[b] & BH__PB_ABSENT);
    for (uint64_t p = b << a->pb_order; ok && p < (b + 1) << a->pb_order; p++)
      ok = !(a->pages[p].flags & (BH__PG_BUDDY | BH__PG_NOPAGE));
    if (ok)
      quiet = b;
  }
  assert_true(quiet != UINT64_MAX);
  snprintf(extra, len, "P %lx U1\nP %lx M1\n", (unsigned long)pb,
           (unsigned long)(quiet << a->pb_order));
}

static void test_start_pageblock_types(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  uint64_t p3[3];
  three_movable_used(a, p3);
  uint64_t pb = p3[0] >> a->pb_order << a->pb_order;
  /* The start state retypes the pageblock the trace shows, and gives a quiet Movable
   * pageblock of the zone the Unmovable type: the counts hold. */
  char extra[64];
  mistype_pageblock(a, pb, extra, sizeof(extra));
  /* the end snapshot is the arena as it is: the trace gives back what it takes */
  char *desc = describe_with(a, true, extra, NULL);
  char lines[512];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n"
           "1000 F %#lx 0 cpu=0\n"
           "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
           (unsigned long)p3[0], (unsigned long)p3[0]);
  const char *p = write_trace("pbtypes.bht", desc, lines);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = p;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.start_retyped_pageblocks, 1);
  assert_int_equal(s.agreement.allocs, 1);
  assert_int_equal(s.agreement.same, 1);
  /* a quiet Movable pageblock took the Unmovable type: the counts by type hold at the end */
  assert_true(s.fidelity.present);
  assert_true(s.fidelity.pageblock_error == 0.0);
  cfg.start_order_pfn = true;
  replay(&cfg, &s);
  assert_int_equal(s.start_retyped_pageblocks, 0);
  assert_int_equal(s.agreement.same, 0);
  assert_int_equal(s.agreement.miss_where[BH_WHERE_PCP_OTHER_LIST], 1);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * Allocations without an event: alloc_pages_bulk takes pages off a pcp list's head without
 * mm_page_alloc (alloc_pages_bulk_noprof, mm/page_alloc.c:4659-4818 in 6.12.117:
 * __rmqueue_pcplist at :4774, no trace_mm_page_alloc on that path), so a page the trace frees
 * and then frees again, with nothing allocated over it between, was taken between the two
 * frees.  Page u is freed on CPU 0 and freed again.
 * - Freed again on CPU 0, after the kernel's next allocation there took x (which the start
 *   state puts on CPU 0's list, its first event being that allocation): inferred
 *   (--untraced-allocs infer), u stays allocated at its first free and the allocation takes
 *   x, the kernel's pfn (untraced_allocs); otherwise u goes to the head of the list and the
 *   allocation takes it (a miss), and the second free finds it allocated (untraced_frees).
 * - Freed again on CPU 1, whose next allocation takes u (the second free put it at the head
 *   of CPU 1's list, free_unref_page_commit :2676): late (the default) takes u from CPU 0's
 *   list right before the second free and frees it onto CPU 1's (untraced_frees_applied), and
 *   so does infer; ignored, u stays on CPU 0's list and CPU 1's allocation takes another block.
 */
static void test_untraced_allocs(void **state) {
  (void)state;
  uint64_t p3[3];
  char *desc;
  bh_arena_t *a = arena_with_used(&desc, p3);
  unsigned long u = (unsigned long)p3[0], x = (unsigned long)p3[1];
  char lines[512];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n"
           "1000 F %#lx 0 cpu=0\n"
           "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
           "3000 F %#lx 0 cpu=0\n",
           u, x, u);
  const char *same_cpu = strdup(write_trace("untraced.bht", desc, lines));
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n"
           "1000 F %#lx 0 cpu=0\n"
           "2000 F %#lx 0 cpu=1\n"
           "3000 A %#lx 0 cpu=1 gfp=GFP_HIGHUSER_MOVABLE\n",
           u, u, u);
  const char *other_cpu = strdup(write_trace("untraced-cpu1.bht", desc, lines));
  /* late, infer, ignore: on same_cpu, allocations the kernel's, untraced_allocs,
   * untraced_frees, untraced_frees_applied; on other_cpu, allocations the kernel's */
  static const struct {
    bool infer, ignore;
    uint64_t same, inferred, frees, applied, same2;
  } want[] = {
      {false, false, 0, 0, 1, 0, 1}, {true, false, 1, 1, 0, 0, 1}, {false, true, 0, 0, 1, 0, 0}};
  for (int i = 0; i < 3; i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.untraced_infer = want[i].infer;
    cfg.untraced_ignore = want[i].ignore;
    bh_replay_summary_t s;
    cfg.trace = same_cpu;
    replay(&cfg, &s);
    assert_int_equal(s.agreement.allocs, 1);
    assert_int_equal(s.agreement.same, want[i].same);
    assert_int_equal(s.untraced_allocs, want[i].inferred);
    assert_int_equal(s.untraced_frees, want[i].frees);
    assert_int_equal(s.untraced_frees_applied, want[i].applied);
    cfg.trace = other_cpu;
    replay(&cfg, &s);
    assert_int_equal(s.agreement.allocs, 1);
    assert_int_equal(s.agreement.same, want[i].same2);
    assert_int_equal(s.untraced_frees_applied, i == 0 ? 1 : 0);
  }
  free((void *)same_cpu);
  free((void *)other_cpu);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * When the trace shows when an allocation without an event took a page: a pcp list is last in,
 * first out for frees (free_unref_page_commit adds at the head, mm/page_alloc.c:2692 in 6.12;
 * __rmqueue_pcplist takes the head, :3095).  x and then u are freed onto CPU 0's list, so u is
 * above x; the kernel's next allocation there takes x: u had left the list with no event, and
 * its next free is a free of a page so taken.  By default (late) that pair is held from u's
 * first free (untraced_allocs), and the allocation takes x, the kernel's pfn; where nothing
 * shows it (no allocation between the frees), u is taken at its second free
 * (untraced_frees_applied); with ignore the allocation takes u, a miss.
 */
static void test_untraced_allocs_lifo(void **state) {
  (void)state;
  uint64_t p3[3];
  char *desc;
  bh_arena_t *a = arena_with_used(&desc, p3);
  /* X: x, Y: u; without the allocation at 3000, nothing shows when u left */
  static const char shown_fmt[] = "# buddyhint-trace 1\n"
                                  "1000 A X 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
                                  "1100 A Y 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
                                  "2000 F X 0 cpu=0\n"
                                  "2100 F Y 0 cpu=0\n"
                                  "3000 A X 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
                                  "4000 F Y 0 cpu=0\n";
  static const char unshown_fmt[] = "# buddyhint-trace 1\n"
                                    "1000 A X 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
                                    "1100 A Y 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
                                    "2000 F X 0 cpu=0\n"
                                    "2100 F Y 0 cpu=0\n"
                                    "4000 F Y 0 cpu=0\n";
  char shown[600], unshown[600];
  with_pfns(shown_fmt, p3[1], p3[0], shown, sizeof(shown));
  with_pfns(unshown_fmt, p3[1], p3[0], unshown, sizeof(unshown));
  char *paths[2] = {strdup(write_trace("lifo.bht", desc, shown)),
                    strdup(write_trace("lifo-none.bht", desc, unshown))};
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  bh_replay_summary_t s;
  cfg.trace = paths[0];
  replay(&cfg, &s);
  assert_int_equal(s.untraced_allocs, 1);
  assert_int_equal(s.untraced_frees, 0);
  assert_int_equal(s.agreement.allocs, 3);
  assert_int_equal(s.agreement.same, 3);
  cfg.untraced_ignore = true;
  replay(&cfg, &s);
  assert_int_equal(s.untraced_allocs, 0);
  assert_int_equal(s.agreement.same, 2); /* the allocation at 3000 took u */
  cfg.untraced_ignore = false;
  cfg.trace = paths[1];
  replay(&cfg, &s);
  assert_int_equal(s.untraced_allocs, 0);
  assert_int_equal(s.untraced_frees_applied, 1);
  free(paths[0]);
  free(paths[1]);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * A free made under its CPU's pcp lock.  free_unref_folios frees a batch in two loops, the
 * second holding the pcp lock from the first mm_page_free_batched to the last (Linux 6.12
 * mm/page_alloc.c:2840, :2857); a free on that CPU meanwhile (an interrupt's) finds the lock
 * taken and goes to the buddy lists (free_unref_page's trylock, :2761-2766).  The batch frees
 * x and y (the replay puts them on CPU 0's list at their mm_page_free, y at the head); z's
 * free comes between the batch's two mm_page_free_batched events, so it never reaches the
 * list, and the kernel's next allocation takes y, the head.  With z freed after the batch
 * (the control), or as a new batch's first page, it is the head.
 */
static void test_locked_frees(void **state) {
  (void)state;
  uint64_t p3[3];
  char *desc;
  bh_arena_t *a = arena_with_used(&desc, p3);
  unsigned long x = (unsigned long)p3[0], y = (unsigned long)p3[1], z = (unsigned long)p3[2];
  static const char *const fmts[3] = {
      /* z under the lock: y is the head */
      "# buddyhint-trace 1\n1000 F %#lx 0 cpu=0\n1001 F %#lx 0 cpu=0\n1002 B %#lx 0 cpu=0\n"
      "1003 F %#lx 0 cpu=0\n1004 B %#lx 0 cpu=0\n2000 A %#lx 0 cpu=0 "
      "gfp=GFP_HIGHUSER_MOVABLE\n",
      /* z after the batch: the head */
      "# buddyhint-trace 1\n1000 F %#lx 0 cpu=0\n1001 F %#lx 0 cpu=0\n1002 B %#lx 0 cpu=0\n"
      "1004 B %#lx 0 cpu=0\n1005 F %#lx 0 cpu=0\n2000 A %#lx 0 cpu=0 "
      "gfp=GFP_HIGHUSER_MOVABLE\n",
      /* y and z a second batch after x's: z is the head */
      "# buddyhint-trace 1\n1000 F %#lx 0 cpu=0\n1002 B %#lx 0 cpu=0\n1003 F %#lx 0 cpu=0\n"
      "1004 F %#lx 0 cpu=0\n1005 B %#lx 0 cpu=0\n1006 B %#lx 0 cpu=0\n2000 A %#lx 0 cpu=0 "
      "gfp=GFP_HIGHUSER_MOVABLE\n"};
  char lines[3][600];
  snprintf(lines[0], sizeof(lines[0]), fmts[0], x, y, x, z, y, y);
  snprintf(lines[1], sizeof(lines[1]), fmts[1], x, y, x, y, z, z);
  snprintf(lines[2], sizeof(lines[2]), fmts[2], x, x, y, z, y, z, z);
  static const uint64_t locked[3] = {1, 0, 0};
  for (int k = 0; k < 3; k++) {
    char name[32];
    snprintf(name, sizeof(name), "locked%d.bht", k);
    char *path = strdup(write_trace(name, desc, lines[k]));
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    bh_replay_summary_t s;
    cfg.trace = path;
    replay(&cfg, &s);
    assert_int_equal(s.locked_frees, locked[k]);
    assert_int_equal(s.frees, 3);
    assert_int_equal(s.agreement.allocs, 1);
    assert_int_equal(s.agreement.same, 1);
    free(path);
  }
  free(desc);
  bh_arena_destroy(a);
}

/*
 * A free that went to the buddy lists with no event to say so: free_unref_page frees to the
 * buddy lists when its trylock fails (an interrupt while the CPU's pcp lock is held) or the
 * pageblock is isolated (Linux 6.12 mm/page_alloc.c:2751-2754, :2760-2766).  The trace shows it
 * by a take of the block from the buddy lists (mm_page_alloc_zone_locked, here a refill) with
 * no drain or allocation of it since its free: a block on a pcp list leaves it only by a drain
 * (mm_page_pcpu_drain) or an allocation.  y and then x are freed on CPU 0; the kernel's next
 * allocation takes y, the head of a list x never reached; the refill at 3000 takes x.  Without
 * the refill (the control) nothing shows where x went: it is the list's head, and the
 * allocation of y a miss.
 */
/*
 * A batch's frees reach the pcp list at their mm_page_free_batched, not at their mm_page_free:
 * free_unref_folios frees every folio first (mm_page_free, Linux 6.12 mm/page_alloc.c:2787,
 * :1097), then puts each on its CPU's list right after its mm_page_free_batched (:2857-2859).
 * y is on CPU 1's list; x's batch frees it, an allocation on CPU 1 takes the list's head
 * (y: x is on no list yet), then x arrives and the next allocation takes it.  Played at its
 * mm_page_free, x is the head at the first allocation and both miss.
 */
static void test_batched_frees_deferred(void **state) {
  (void)state;
  uint64_t p3[3];
  char *desc;
  bh_arena_t *a = arena_with_used(&desc, p3);
  char with[600];
  with_pfns("# buddyhint-trace 1\n"
            "900 F Y 0 cpu=1\n"
            "1000 F X 0 cpu=1\n"
            "1001 A Y 0 cpu=1 gfp=GFP_HIGHUSER_MOVABLE\n"
            "1002 B X 0 cpu=1\n"
            "2000 A X 0 cpu=1 gfp=GFP_HIGHUSER_MOVABLE\n",
            p3[0], p3[1], with, sizeof(with));
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  bh_replay_summary_t s;
  cfg.trace = write_trace("deferred.bht", desc, with);
  replay(&cfg, &s);
  assert_int_equal(s.batched_frees_deferred, 1);
  assert_int_equal(s.frees, 2);
  assert_int_equal(s.agreement.allocs, 2);
  assert_int_equal(s.agreement.same, 2);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * The frees waiting for their mm_page_free_batched are a ring of 128: one CPU's free whose
 * second event comes late (x, CPU 1) holds the ring's head while CPU 0 frees 200 pages, each
 * followed by its own mm_page_free_batched; the played ones behind the head are dropped when
 * the ring fills, so that every one of the 201 still waits for its second event.
 */
static void test_batched_frees_deferred_many(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  enum { N = 200 };
  uint64_t pfn[N + 1];
  size_t n = 0;
  for (uint64_t p = 0; p < a->nr_pages && n < N + 1; p++)
    if (a->pages[p].flags == BH__PG_ALLOC && !a->pages[p].order)
      pfn[n++] = p;
  assert_int_equal(n, N + 1);
  size_t cap = 64 * (2 * N + 8), k = 0;
  char *lines = malloc(cap);
  assert_non_null(lines);
  k += (size_t)snprintf(lines + k, cap - k, "# buddyhint-trace 1\n1000 F %#lx 0 cpu=1\n",
                        (unsigned long)pfn[N]);
  for (int i = 0; i < N; i++)
    k += (size_t)snprintf(lines + k, cap - k, "%d F %#lx 0 cpu=0\n%d B %#lx 0 cpu=0\n",
                          1001 + 2 * i, (unsigned long)pfn[i], 1002 + 2 * i, (unsigned long)pfn[i]);
  snprintf(lines + k, cap - k, "5000 B %#lx 0 cpu=1\n", (unsigned long)pfn[N]);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  bh_replay_summary_t s;
  cfg.trace = write_trace("deferred-many.bht", desc, lines);
  replay(&cfg, &s);
  assert_int_equal(s.batched_frees_deferred, N + 1);
  assert_int_equal(s.frees, N + 1);
  free(lines);
  free(desc);
  bh_arena_destroy(a);
}

static void test_locked_frees_taken(void **state) {
  (void)state;
  uint64_t p3[3];
  char *desc;
  bh_arena_t *a = arena_with_used(&desc, p3);
  static const char *const fmts[2] = {"# buddyhint-trace 3\n"
                                      "1000 F Y 0 cpu=0\n"
                                      "1001 F X 0 cpu=0\n"
                                      "2000 A Y 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
                                      "3000 Z X 0 cpu=0 mt=1 refill=1\n",
                                      "# buddyhint-trace 3\n"
                                      "1000 F Y 0 cpu=0\n"
                                      "1001 F X 0 cpu=0\n"
                                      "2000 A Y 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"};
  static const struct { uint64_t locked, taken, same; } want[2] = {{1, 1, 1}, {0, 0, 0}};
  for (int k = 0; k < 2; k++) {
    char with[600], name[32];
    with_pfns(fmts[k], p3[0], p3[1], with, sizeof(with));
    snprintf(name, sizeof(name), "taken%d.bht", k);
    char *path = strdup(write_trace3(name, BH_TRACE_NATIVE_BINARY, desc, with));
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    bh_replay_summary_t s;
    cfg.trace = path;
    replay(&cfg, &s);
    assert_int_equal(s.locked_frees, want[k].locked);
    assert_int_equal(s.locked_frees_taken, want[k].taken);
    assert_int_equal(s.agreement.allocs, 1);
    assert_int_equal(s.agreement.same, want[k].same);
    free(path);
  }
  free(desc);
  bh_arena_destroy(a);
}

/*
 * The pcp decay where the trace has the vmstat worker's runs (BH_EV_VMSTAT): each CPU's
 * decay_pcp_high runs in vmstat_update (mm/vmstat.c:839 in 6.12), deferrable work that an idle
 * CPU does not run (mm/vmstat.c:2120), so it follows the runs, not the clock.  2,048 pages are
 * allocated and freed on CPU 0, then 8 s pass before the last allocation: every second's decay
 * returns part of the list (--pcp-decay tick, or a trace without runs); with one run in the
 * idle, one decay; with the only run before the frees (an empty list), none.
 */
static char *decay_trace(const char *vm_lines) {
  size_t cap = 1 << 19, k = 0; /* 4,097 lines of at most 64 bytes, and the runs' */
  char *b = malloc(cap);
  assert_non_null(b);
  k += (size_t)snprintf(b + k, cap - k, "# buddyhint-trace 3\n%s",
                        vm_lines[0] == '1' ? vm_lines : "");
  for (int i = 0; i < 2048; i++)
    k += (size_t)snprintf(b + k, cap - k, "%d A %#x 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
                          1000000 + i * 100, 0x1000 + i);
  for (int i = 0; i < 2048; i++)
    k += (size_t)snprintf(b + k, cap - k, "%d F %#x 0 cpu=0\n", 2000000000 + i * 100, 0x1000 + i);
  k += (size_t)snprintf(b + k, cap - k, "%s", vm_lines[0] == '3' ? vm_lines : "");
  snprintf(b + k, cap - k, "10000000000 A 0x9000 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n");
  return b;
}

static void test_pcp_decay_vmstat(void **state) {
  (void)state;
  static const char *const vm[3] = {"", "3000000000 V 0 0 cpu=0\n", "100 V 0 0 cpu=0\n"};
  uint64_t drained[4];
  char decay[4][8];
  for (int k = 0; k < 4; k++) {
    char *lines = decay_trace(vm[k < 3 ? k : 1]);
    char name[32];
    snprintf(name, sizeof(name), "decay%d.txt", k);
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = tt_write_str(name, lines);
    cfg.pcp_decay_tick = k == 3; /* the one-run trace, told to tick */
    bh_replay_summary_t s;
    replay(&cfg, &s);
    drained[k] = s.arena_stats[BH_STAT_pcp_drain_pages];
    snprintf(decay[k], sizeof(decay[k]), "%s", s.pcp_decay);
    assert_int_equal(s.vmstat_events, k == 0 ? 0 : 1);
    free(lines);
  }
  assert_string_equal(decay[0], "tick");
  assert_string_equal(decay[1], "vmstat");
  assert_string_equal(decay[2], "vmstat");
  assert_string_equal(decay[3], "tick");
  assert_true(drained[0] > drained[1]); /* eight decays against one */
  assert_true(drained[1] > drained[2]); /* one against none */
  assert_int_equal(drained[3], drained[0]);
}

/*
 * Refilled pages taken without an event (--untraced-allocs lists): a refill puts pages at its
 * list's tail in the order it takes them (rmqueue_bulk, mm/page_alloc.c:2376 in 6.12), the
 * list's head goes first (__rmqueue_pcplist, :3095), so where the trace's next allocation
 * takes the third refilled page the first two had left the list unseen (alloc_pages_bulk:
 * a fork's kernel stack).  With lists they are allocated right before that allocation
 * (untraced_takes), and their later frees are ordinary ones; by default (late) those frees
 * find memory the replay holds free (untraced_frees).
 */
static void test_untraced_allocs_refill(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  uint64_t p = free_block(a, a->zones[a->nr_zones - 1].start_pfn, 2, BH_MT_UNMOVABLE);
  static const char fmt[] = "# buddyhint-trace 3\n"
                            "1000 Z X 0 cpu=0 mt=0 refill=1\n"
                            "1001 Z Y 0 cpu=0 mt=0 refill=1\n"
                            "1002 Z %#lx 0 cpu=0 mt=0 refill=1\n"
                            "2000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
                            "3000 F X 0 cpu=0\n"
                            "3001 F Y 0 cpu=0\n";
  char lines[600], with[700];
  snprintf(lines, sizeof(lines), fmt, (unsigned long)(p + 2), (unsigned long)(p + 2));
  with_pfns(lines, p, p + 1, with, sizeof(with));
  char *paths[2] = {strdup(write_trace3("refill-takes.bht", BH_TRACE_NATIVE_BINARY, desc, with)),
                    NULL};
  /* a lone such event followed by the allocation of its page is what an order-0 allocation
   * that skips the pcp list makes (rmqueue_buddy when the pcp lock is taken: :3115, :3165, with
   * percpu_refill set, :1650): the list keeps Y, which the next allocation takes, no take */
  static const char lone_fmt[] = "# buddyhint-trace 3\n"
                                 "1000 Z X 0 cpu=0 mt=0 refill=1\n"
                                 "1001 Z Y 0 cpu=0 mt=0 refill=1\n"
                                 "2000 A X 0 cpu=0 gfp=GFP_KERNEL\n"
                                 "3000 Z %#lx 0 cpu=0 mt=0 refill=1\n"
                                 "3001 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
                                 "4000 A Y 0 cpu=0 gfp=GFP_KERNEL\n";
  snprintf(lines, sizeof(lines), lone_fmt, (unsigned long)(p + 2), (unsigned long)(p + 2));
  with_pfns(lines, p, p + 1, with, sizeof(with));
  paths[1] = strdup(write_trace3("refill-lone.bht", BH_TRACE_NATIVE_BINARY, desc, with));
  static const struct {
    int path;
    bool lists;
    uint64_t takes, frees, allocs;
  } want[] = {{0, true, 2, 0, 1}, {0, false, 0, 2, 1}, {1, true, 0, 0, 3}};
  for (int i = 0; i < 3; i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = paths[want[i].path];
    cfg.untraced_lists = want[i].lists;
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.untraced_takes, want[i].takes);
    assert_int_equal(s.untraced_frees, want[i].frees);
    assert_int_equal(s.agreement.allocs, want[i].allocs); /* not the takes: not the trace's */
  }
  free(paths[0]);
  free(paths[1]);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * Freed pages taken without an event (--untraced-allocs lists), for a recording without
 * record's alloc_pages_bulk probes.  A free puts its page on the head of its CPU's list
 * (free_unref_page_commit, mm/page_alloc.c:2692 in 6.12) and an allocation takes the head
 * (__rmqueue_pcplist, :3095): W, X, Y freed in that order and then W allocated, X and Y had
 * left the list unseen.  With lists they are allocated right before it (two takes) and their
 * later frees are ordinary; late waits for their second frees, which then leave them
 * allocated from their first (untraced_allocs: a pair of frees with nothing allocated
 * between, the list having shown them gone).  A page whose first event is an allocation lay
 * on the list at the start, below everything freed onto it since (no refill came between: a
 * refill is traced), so W freed and then S allocated shows W gone (late: W's second free
 * finds it free, untraced_frees); not so where a lone refill event of S comes first (an
 * allocation that skipped the list, rmqueue_buddy: :3115, :1650).  And the recording's
 * "record" section (record writes bulk_probes 0 without the probes) chooses lists by itself,
 * unless late is asked for.  Pages allocated before the trace (U, V) go on the list of the
 * type the trace has shown their pageblock to have (E freed and allocated again from the
 * Unmovable list; free_unref_page puts a page on its pageblock's type's list, :2750-2756):
 * U, V freed and then U allocated shows V gone (one take).  Where the trace shows their
 * pageblock's type only later (U, V freed first, U's allocation from the Unmovable list the
 * first evidence: a pending take, settled at the first pass's end), one take too; for a page
 * of a pageblock whose type the trace never shows (G, Movable, freed in place of V), none.  A free
 * the trace later shows made to the buddy lists (X taken by a refill with no drain between:
 * free_unref_page's failed trylock, :2760-2766) put nothing on the list, so W allocated after
 * it shows nothing gone (no take).
 */
static void test_untraced_allocs_freed(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  uint64_t p = free_block(a, a->zones[a->nr_zones - 1].start_pfn, 2, BH_MT_UNMOVABLE);
  unsigned long w = (unsigned long)p, x = w + 1, y = w + 2, st = w + 3;
  char lines[3][600];
  snprintf(lines[0], sizeof(lines[0]),
           "# buddyhint-trace 3\n"
           "1000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n1001 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
           "1002 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
           "2000 F %#lx 0 cpu=0\n2001 F %#lx 0 cpu=0\n2002 F %#lx 0 cpu=0\n"
           "3000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
           "4000 F %#lx 0 cpu=0\n4001 F %#lx 0 cpu=0\n",
           w, x, y, w, x, y, w, x, y);
  snprintf(lines[1], sizeof(lines[1]),
           "# buddyhint-trace 3\n"
           "1000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n2000 F %#lx 0 cpu=0\n"
           "3000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n4000 F %#lx 0 cpu=0\n",
           w, w, st, w);
  snprintf(lines[2], sizeof(lines[2]),
           "# buddyhint-trace 3\n"
           "1000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n2000 F %#lx 0 cpu=0\n"
           "2999 Z %#lx 0 cpu=0 mt=0 refill=1\n3000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
           "4000 F %#lx 0 cpu=0\n",
           w, w, st, st, w);
  size_t dl = strlen(desc);
  char *unprobed = malloc(dl + 64);
  assert_non_null(unprobed);
  char *end = strstr(desc, "@end"); /* the section goes before the description's end */
  assert_non_null(end);
  snprintf(unprobed, dl + 64, "%.*s@record 1\nbulk_probes 0\n%s", (int)(end - desc), desc, end);
  char locked_lines[600];
  snprintf(locked_lines, sizeof(locked_lines),
           "# buddyhint-trace 3\n"
           "1000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n1001 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
           "2000 F %#lx 0 cpu=0\n2001 F %#lx 0 cpu=0\n"
           "3000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
           "4000 Z %#lx 0 cpu=0 mt=0 refill=1\n4001 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n",
           w, x, w, x, w, x, x);
  char *paths[8];
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof(name), "freed-takes%d.bht", i);
    paths[i] = strdup(write_trace3(name, BH_TRACE_NATIVE_BINARY, desc, lines[i]));
  }
  paths[3] = strdup(write_trace3("freed-unprobed.bht", BH_TRACE_NATIVE_BINARY, unprobed, lines[0]));
  /* E, U, V allocated at the start, in one Unmovable pageblock */
  unsigned long e = (unsigned long)free_block(a, p + 4, 2, BH_MT_UNMOVABLE), u = e + 1, v = e + 2;
  for (unsigned long q = e; q < e + 3; q++)
    assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_KERNEL, 0, 0, q), BH_OK);
  /* G allocated at the start in a Movable pageblock, which no event touches */
  unsigned long g = (unsigned long)free_block(a, e, 0, BH_MT_MOVABLE);
  assert_true(g >> a->pb_order != e >> a->pb_order);
  assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, 0, 0, g), BH_OK);
  bh_drain_pcp(a);
  char *pretrace = describe(a, false), pre_lines[400];
  snprintf(pre_lines, sizeof(pre_lines),
           "# buddyhint-trace 3\n"
           "1000 F %#lx 0 cpu=0\n1001 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n"
           "2000 F %#lx 0 cpu=0\n2001 F %#lx 0 cpu=0\n3000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n",
           e, e, u, v, u);
  paths[4] =
      strdup(write_trace3("freed-pretrace.bht", BH_TRACE_NATIVE_BINARY, pretrace, pre_lines));
  paths[5] = strdup(write_trace3("freed-locked.bht", BH_TRACE_NATIVE_BINARY, desc, locked_lines));
  for (int i = 0; i < 2; i++) { /* U, then V (same pageblock) or G, freed; U allocated */
    char later[300], name[32];
    snprintf(later, sizeof(later),
             "# buddyhint-trace 3\n"
             "1000 F %#lx 0 cpu=0\n1001 F %#lx 0 cpu=0\n2000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n",
             u, i ? g : v, u);
    snprintf(name, sizeof(name), "freed-later%d.bht", i);
    paths[6 + i] = strdup(write_trace3(name, BH_TRACE_NATIVE_BINARY, pretrace, later));
  }
  static const struct {
    int path, mode; /* 0 default, 1 lists, 2 late */
    uint64_t takes, frees, pairs;
    bool lists;
  } want[] = {{0, 1, 2, 0, 0, true},  {0, 0, 0, 0, 2, false}, {1, 1, 1, 0, 0, true},
              {1, 0, 0, 1, 0, false}, {2, 1, 0, 1, 0, true},  {3, 0, 2, 0, 0, true},
              {3, 2, 0, 0, 2, false}, {4, 1, 1, 0, 0, true},  {5, 1, 0, 0, 0, true},
              {6, 1, 1, 0, 0, true},  {7, 1, 0, 0, 0, true}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = paths[want[i].path];
    cfg.untraced_lists = want[i].mode == 1;
    cfg.untraced_late = want[i].mode == 2;
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.untraced_takes, want[i].takes);
    assert_int_equal(s.untraced_frees, want[i].frees);
    assert_int_equal(s.untraced_allocs, want[i].pairs);
    assert_int_equal(s.untraced_lists, want[i].lists);
  }
  for (int i = 0; i < 8; i++)
    free(paths[i]);
  free(pretrace);
  free(unprobed);
  free(desc);
  bh_arena_destroy(a);
}

/* A version 3 trace with desc: CPU 0 refills its Movable order-0 list with the pages x and y,
 * in that order, then allocates two pages from it. */
static const char *refill_then_take(const char *name, const char *desc, uint64_t x, uint64_t y) {
  char lines[512];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n"
           "1000 Z %#lx 0 cpu=0 mt=1 refill=1\n1001 Z %#lx 0 cpu=0 mt=1 refill=1\n"
           "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
           "2001 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
           (unsigned long)x, (unsigned long)y, (unsigned long)x, (unsigned long)y);
  return write_trace3(name, BH_TRACE_NATIVE_BINARY, desc, lines);
}

/* The first n free max-order blocks of the last zone on Movable pageblocks, into w. */
static void movable_max_blocks(const bh_arena_t *a, uint64_t *w, int n) {
  const bh_zone_t *z = &a->zones[a->nr_zones - 1];
  uint64_t big = 1ull << a->max_order;
  int k = 0;
  for (uint64_t p = z->zone_start_pfn;
       p + big <= z->zone_start_pfn + z->zone_spanned_pages && k < n; p += big)
    if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == a->max_order &&
        bh__pb_mt(a, p) == BH_MT_MOVABLE)
      w[k++] = p;
  assert_int_equal(k, n);
}

/*
 * A split shows the lists below it empty (types_from_splits).  In a fresh arena's Normal zone:
 * H, a free order-1 block (an order-1 allocation at the head of a free max-order block), and
 * B, a free order-0 page in another pageblock (its buddy allocated), both Movable in the map;
 * Q, a pageblock with no free page, Unmovable in the map.  The trace's refill takes H and H + 1
 * at order 0: the kernel split H (__rmqueue_smallest takes the lowest order with a block,
 * expand() hands out the head, mm/page_alloc.c:1641-1650, :1441 in 6.12.117), so its Movable
 * order-0 list was empty and B, which the trace never shows, was not Movable.  B's pageblock swaps
 * types with Q, and the replay's refill splits H as the kernel's did: both allocations take the
 * kernel's pages.  Without the inference (--start-order pfn) the refill takes B first.
 */
static void test_split_shows_types(void **state) {
  (void)state;
  bh_arena_t *a = tt_sim_arena(16, 112, 128);
  uint64_t w[3];
  movable_max_blocks(a, w, 3);
  assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, 1, 0, w[0]), BH_OK);
  assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, 0, 0, w[1] + 1), BH_OK);
  assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, a->pb_order, 0, w[2]), BH_OK);
  bh_drain_pcp(a);
  uint64_t h = w[0] + 2, b = w[1];
  assert_true((a->pages[h].flags & BH__PG_BUDDY) && a->pages[h].order == 1);
  assert_true((a->pages[b].flags & BH__PG_BUDDY) && a->pages[b].order == 0);
  char extra[64];
  snprintf(extra, sizeof(extra), "P %lx U1\n", (unsigned long)w[2]);
  char *desc = describe_with(a, false, extra, NULL);
  const char *path = refill_then_take("split-types.bht", desc, h, h + 1);
  for (int pfn_order = 0; pfn_order < 2; pfn_order++) {
    bh_replay_config_t cfg = config_of(path);
    cfg.start_order_pfn = pfn_order;
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_split_retyped_pageblocks, pfn_order ? 0 : 1);
    assert_int_equal(s.agreement.allocs, 2);
    assert_int_equal(s.agreement.same, pfn_order ? 0 : 2);
  }
  free(desc);
  bh_arena_destroy(a);
}

/*
 * A block the start snapshot shows reported leaves the rest of its pageblock where the start
 * state put it.  The kernel's isolation of a block of pageblock_order - 1 or more moved the
 * pageblock's other free blocks to the Movable lists' tails (__isolate_free_page,
 * mm/page_alloc.c:2916-2925 in 6.12.117) when it reported the block, before the snapshot; the
 * trace's takes show the lists' order since.  Here the first order-0 block taken shares its
 * pageblock with a reported order-8 block: both allocations are the kernel's (0 of 2 when the
 * start isolated that block again, which put the first block behind the second).
 */
static void test_start_reported_keeps_order(void **state) {
  (void)state;
  bh_arena_t *a = tt_sim_arena(16, 112, 128);
  uint64_t w[2];
  movable_max_blocks(a, w, 2);
  for (int i = 0; i < 2; i++)
    assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, 0, 0, w[i] + 1), BH_OK);
  bh_drain_pcp(a);
  uint64_t x = w[0], y = w[1], rep = w[0] + (1ull << (a->pb_order - 1));
  assert_true((a->pages[x].flags & BH__PG_BUDDY) && a->pages[x].order == 0);
  assert_true((a->pages[y].flags & BH__PG_BUDDY) && a->pages[y].order == 0);
  assert_true((a->pages[rep].flags & BH__PG_BUDDY) && a->pages[rep].order == a->pb_order - 1);
  char extra[64];
  snprintf(extra, sizeof(extra), "R %lu %u\n", (unsigned long)rep, a->pb_order - 1);
  char *desc = describe_with(a, false, extra, NULL);
  bh_replay_summary_t s;
  replay_defaults(refill_then_take("start-reported-order.bht", desc, x, y), &s);
  assert_int_equal(s.start_reported_blocks, 1);
  assert_int_equal(s.agreement.allocs, 2);
  assert_int_equal(s.agreement.same, 2);
  free(desc);
  bh_arena_destroy(a);
}

/* A trace recorded before descriptions existed (version 1): the default layout, an empty
 * start, no fidelity; with --start DIR the machine's layout and a counts start. */
static void test_old_trace(void **state) {
  (void)state;
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = BH_SOURCE_DIR "/tests/trace/data/v1-real-thp-256M.bht.zst";
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_string_equal(s.layout, "default");
  assert_string_equal(s.start_state, "empty");
  assert_false(s.fidelity.present);
  assert_false(s.agreement.present);
  assert_true(s.unknown_frees > 0);
  cfg.layout = BH_LAYOUT_TRACE;
  char err[512];
  assert_int_equal(bh_replay_run(&cfg, &s, err, sizeof(err)), BH_EINVAL);
  assert_non_null(strstr(err, "has no machine description"));
  cfg.layout = BH_LAYOUT_AUTO;
  cfg.start_dir = MDATA "/host";
  replay(&cfg, &s);
  assert_string_equal(s.layout, "machine");
  assert_string_equal(s.start_state, "counts");
}

/* Whether the test's kernel had reported the free block at pfn of order: every other one, or
 * all of them. */
static bool all_reported;
static bool was_reported(uint64_t pfn, unsigned order) {
  return all_reported || ((pfn >> order) & 1);
}

/* Reported at the end of 60 s idle with bubble: every block of the reporting order and above
 * outside DMA (pfn 4096 on), and whatever started reported. */
static bool end_reported(uint64_t pfn, unsigned order, bool with_r) {
  return (pfn >= 4096 && order >= 9) || (with_r && was_reported(pfn, order));
}

/* A free map's "reported" line and R lines for a's free blocks that start reported (end: that
 * end reported), malloc'd. */
static char *r_lines(bh_arena_t *a, bool end, bool with_r) {
  char *r = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&r, &n);
  uint64_t last = 0, nr = 0;
  for (int pass = 0; pass < 2; pass++)
    for (uint64_t p = 0; p < a->nr_pages; p++) {
      if (!(a->pages[p].flags & BH__PG_BUDDY))
        continue;
      unsigned o = a->pages[p].order;
      if (end ? !end_reported(p, o, with_r) : !(with_r && was_reported(p, o)))
        continue;
      if (!pass) {
        nr++;
        continue;
      }
      fprintf(f, "R %lu %u\n", (unsigned long)(p - last), o);
      last = p + (1ull << o);
    }
  fclose(f);
  char *out = NULL;
  f = open_memstream(&out, &n);
  fprintf(f, "reported %lu\n%s", (unsigned long)nr, r);
  fclose(f);
  free(r);
  return out;
}

/* Runs cfg with its reports (--reports) written to a string, which the caller frees. */
static char *replay_reports(bh_replay_config_t *cfg, bh_replay_summary_t *s) {
  char *csv = NULL, err[512] = "";
  size_t n = 0;
  cfg->reports = open_memstream(&csv, &n);
  assert_non_null(cfg->reports);
  if (bh_replay_run(cfg, s, err, sizeof(err)))
    fail_msg("replay: %s", err);
  fclose(cfg->reports);
  cfg->reports = NULL;
  return csv;
}

/* The row of a reports CSV after the line at *at (the header first): the reported block's pfn
 * and order, and *at moved to it; false at the end. */
static bool next_report(char **at, unsigned long *pfn, unsigned *order) {
  char *nl = strchr(*at, '\n');
  if (!nl || !nl[1])
    return false;
  double t;
  assert_int_equal(sscanf(nl + 1, "%lf,%lu,%u", &t, pfn, order), 3);
  *at = nl + 1;
  return true;
}

static bool g_start_reported_all; /* bubble_from's replays with --start-reported all */

/*
 * Runs the bubble strategy for 60 s on a nearly idle machine started from a's free blocks, with R
 * lines for the was_reported() ones if with_r, and an end snapshot whose R lines are the
 * end_reported() ones.  Returns how many blocks it reported, asserting each is one of a's
 * free blocks, reported once; *again: how many of them was_reported().
 */
static uint64_t bubble_from(bh_arena_t *a, bool with_r, uint64_t *again, bh_replay_summary_t *s) {
  char *r = r_lines(a, false, with_r), *er = r_lines(a, true, with_r);
  char *desc = describe_with(a, true, r, er);
  /* 60 s of trace, idle but for one page of DMA32 taken at the start and given back at the
   * end (where the end snapshot is compared): ~16 passes report an idle machine
   * (page_reporting.c) */
  uint64_t x = 4096;
  while (!(a->pages[x].flags & BH__PG_BUDDY) || a->pages[x].order || (x & 1))
    x++;
  char lines[256];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n1000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n60000001000 F %#lx 0 cpu=0\n",
           (unsigned long)x, (unsigned long)x);
  const char *path = write_trace(with_r ? "reported.bht" : "unreported.bht", desc, lines);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.hint.strategy = "bubble";
  cfg.placement = BH_PLACEMENT_TRACE; /* the page the trace names */
  cfg.idle_ns = 0;
  cfg.start_reported_all = g_start_reported_all;
  char *csv = replay_reports(&cfg, s);
  assert_int_equal(s->check_violations, 0);
  assert_string_equal(s->start_state, "kpageflags");
  uint8_t *seen = calloc(a->nr_pages, 1);
  uint64_t blocks = 0;
  *again = 0;
  unsigned long pfn;
  unsigned order;
  for (char *at = csv; next_report(&at, &pfn, &order);) {
    assert_true(pfn < a->nr_pages);
    assert_int_equal(seen[pfn]++, 0); /* nothing is allocated: each block once */
    assert_true(a->pages[pfn].flags & BH__PG_BUDDY);
    assert_int_equal(a->pages[pfn].order, order);
    blocks++;
    *again += was_reported(pfn, order);
  }
  free(seen);
  free(csv);
  free(r);
  free(er);
  free(desc);
  return blocks;
}

/*
 * A start snapshot whose free map says which blocks the guest had reported: they start with
 * PageReported, and the kernel's reporting skips them (mm/page_reporting.c:186, "if
 * (PageReported(page)) continue;"), so only the others are reported, each once.  The zones
 * below low watermark + 32 << order free are skipped (mm/page_reporting.c:276): DMA here.
 * Without the R lines every block is reported, the marked ones included.
 */
static void test_start_reported(void **state) {
  (void)state;
  bh_arena_t *a = tt_sim_arena(16, 240, 256);
  tt_churn(a, 7, 3000, 2000); /* blocks of orders 9 and 10 among smaller ones */
  bh_drain_pcp(a);
  uint64_t marked = 0, eligible = 0, eligible_marked = 0, pbo = a->pb_order;
  for (uint64_t p = 0; p < a->nr_pages; p++) {
    if (!(a->pages[p].flags & BH__PG_BUDDY))
      continue;
    unsigned o = a->pages[p].order;
    marked += was_reported(p, o);
    if (o >= pbo && p >= 4096) { /* DMA32 and Normal, the reporting order and above */
      eligible++;
      eligible_marked += was_reported(p, o);
    }
  }
  assert_true(eligible_marked > 0 && eligible_marked < eligible);
  bh_replay_summary_t s;
  uint64_t again;
  uint64_t n = bubble_from(a, true, &again, &s);
  print_message("start reported: %lu of %lu eligible blocks marked; %lu reported\n",
                (unsigned long)eligible_marked, (unsigned long)eligible, (unsigned long)n);
  assert_int_equal(s.start_reported_blocks, marked);
  assert_int_equal(s.start_reported_missed, 0);
  assert_int_equal(again, 0);
  assert_int_equal(n, eligible - eligible_marked);
  /* at the end the arena's reported blocks are the end snapshot's */
  assert_true(s.fidelity.reported_present);
  assert_int_equal(s.fidelity.reported_recorded, marked + eligible - eligible_marked);
  assert_int_equal(s.fidelity.reported_predicted, s.fidelity.reported_recorded);
  assert_int_equal(s.fidelity.reported_matched, s.fidelity.reported_recorded);
  n = bubble_from(a, false, &again, &s);
  assert_int_equal(s.start_reported_blocks, 0);
  assert_int_equal(again, eligible_marked);
  assert_int_equal(n, eligible);
  assert_int_equal(s.fidelity.reported_recorded, eligible);
  assert_int_equal(s.fidelity.reported_matched, eligible);
  bh_arena_destroy(a);
}

/*
 * --start-reported all, the counterfactual start of a recording made with reporting off: every
 * free block at or above the reporting order starts reported, as on a guest whose reporting
 * has run since boot (page_reporting_register's initial flush, mm/page_reporting.c:385-386,
 * and every pass since).  With no block marked in the snapshot, the eligible blocks start
 * reported and discarded: no pass reports anything, and at the end they are all reported.
 */
static void test_start_reported_all(void **state) {
  (void)state;
  bh_arena_t *a = tt_sim_arena(16, 240, 256);
  tt_churn(a, 7, 3000, 2000);
  bh_drain_pcp(a);
  uint64_t eligible = 0;
  for (uint64_t p = 4096; p < a->nr_pages; p++)
    eligible += (a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order >= a->pb_order;
  bh_replay_summary_t s;
  uint64_t again;
  g_start_reported_all = true;
  uint64_t n = bubble_from(a, false, &again, &s);
  g_start_reported_all = false;
  assert_true(s.start_reported_all);
  assert_int_equal(s.start_reported_blocks, eligible);
  assert_int_equal(n, 0);
  assert_int_equal(again, 0);
  assert_int_equal(s.fidelity.reported_predicted, eligible);
  assert_int_equal(s.fidelity.reported_matched, eligible);
  bh_arena_destroy(a);
}

static double strategy_stat(const bh_replay_summary_t *s, const char *name) {
  for (int i = 0; i < s->nr_strategy_stats; i++)
    if (!strcmp(s->strategy_stat_names[i], name))
      return s->strategy_stats[i];
  fail_msg("no strategy stat %s", name);
  return 0;
}

/*
 * The recorded guest's page_reporting_order (the description's machine section) is the order
 * the kernel's page reporting ran at: a replay with bubble or adaptive reports at it unless
 * its order option gives another; without one recorded, the strategy's own (the pageblock
 * order); other strategies have none.
 */
static void test_recorded_reporting_order(void **state) {
  (void)state;
  bh_arena_t *a = tt_sim_arena(16, 240, 256);
  char *plain = describe(a, false);
  size_t n = strlen(plain) + 64;
  char *desc = malloc(n);
  assert_non_null(desc);
  const char *nl = strchr(plain, '\n'); /* after "buddyhint-machine 1" */
  snprintf(desc, n, "%.*s@machine 1\npage_reporting_order 5\n%s", (int)(nl + 1 - plain), plain,
           nl + 1);
  const char *lines = "# buddyhint-trace 1\n1000 A 0x2000 0 cpu=0 gfp=GFP_KERNEL\n";
  const char *with = strdup(write_trace("order5.bht", desc, lines)),
             *without = strdup(write_trace("order-none.bht", plain, lines));
  static const bh_opt_t seven = {"order", "7"};
  const struct {
    const char *trace, *strategy;
    const bh_opt_t *opt;
    int order;
    const char *source;
  } want[] = {{with, "bubble", NULL, 5, "recorded"}, {with, "adaptive", NULL, 5, "recorded"},
              {with, "bubble", &seven, 7, "option"}, {without, "bubble", NULL, 9, "default"},
              {with, "none", NULL, -1, ""},          {with, "bitmap", NULL, -1, ""}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = want[i].trace;
    cfg.hint.strategy = want[i].strategy;
    cfg.hint.opts = want[i].opt;
    cfg.hint.nopts = want[i].opt != NULL;
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.reporting_order, want[i].order);
    assert_string_equal(s.reporting_order_source, want[i].source);
  }
  free((void *)with);
  free((void *)without);
  free(desc);
  free(plain);
  bh_arena_destroy(a);
}

/*
 * The recorded machine's page reporting was registered when it booted
 * (page_reporting_register's initial flush, mm/page_reporting.c:385-386, is long past): with
 * every eligible block reported at the start nothing is pending, and on a trace whose frees
 * never reach the reporting order (page_reporting_notify_free, mm/page_reporting.h:40-44)
 * no pass runs at all; the replay used to run the initial flush at 2 s.  With unreported
 * eligible blocks the free that made them notified, and their pass is pending: it runs.
 */
static void test_start_no_initial_flush(void **state) {
  (void)state;
  bh_arena_t *a = tt_sim_arena(16, 240, 256);
  tt_churn(a, 7, 3000, 2000);
  bh_drain_pcp(a);
  bh_replay_summary_t s;
  uint64_t again;
  all_reported = true;
  uint64_t n = bubble_from(a, true, &again, &s);
  all_reported = false;
  assert_int_equal(n, 0);
  assert_true(strategy_stat(&s, "passes") == 0);
  assert_true(strategy_stat(&s, "requests") == 0);
  n = bubble_from(a, true, &again, &s);
  assert_true(n > 0);
  assert_true(strategy_stat(&s, "requests") >= 1);
  assert_true(strategy_stat(&s, "passes") >= 1);
  bh_arena_destroy(a);
}

/*
 * A block the start map held allocated and the trace takes first from the buddy lists is
 * free at the start (test_start_taken), but nothing records the free that made it, nor
 * whether it notified: with every block the map shows free reported, nothing is pending
 * (on the guests measured at order 9 no pass followed the start: docs/START-STATE.md).  The
 * same block in the map, free and unreported, was made by a free that notified
 * (page_reporting_notify_free from __free_one_page, mm/page_alloc.c:896-897 in 6.12): its
 * pass runs 2 s on (PAGE_REPORTING_DELAY, mm/page_reporting.c:35).
 */
static void test_start_taken_no_pass(void **state) {
  (void)state;
  for (int shown = 0; shown < 2; shown++) {
    bh_arena_t *a = tt_sim_arena(16, 240, 256);
    bh_drain_pcp(a);
    uint64_t big = 1ull << a->max_order, w = UINT64_MAX;
    for (uint64_t p = 4096 * 2; w == UINT64_MAX && p + big <= a->nr_pages; p += big)
      if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == a->max_order &&
          bh__pb_mt(a, p) == BH_MT_MOVABLE)
        w = p;
    assert_true(w != UINT64_MAX);
    assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, a->max_order, 0, w), BH_OK);
    all_reported = true;
    char *r = r_lines(a, false, true); /* every other free block reported */
    all_reported = false;
    if (shown) /* the block in the map, free and unreported */
      assert_int_equal(bh_free_pfn(a, w, a->max_order, -1), BH_OK);
    char *desc = describe_with(a, false, r, NULL);
    char lines[256];
    snprintf(lines, sizeof(lines),
             "# buddyhint-trace 3\n1000 Z %#lx %u cpu=0 mt=1\n"
             "2000 A %#lx %u cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
             "10000000000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n",
             (unsigned long)w, a->max_order, (unsigned long)w, a->max_order,
             (unsigned long)(w + big));
    const char *path = write_trace3("taken-pass.bht", BH_TRACE_NATIVE_BINARY, desc, lines);
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = path;
    cfg.hint.strategy = "bubble";
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_string_equal(s.start_state, "kpageflags");
    assert_int_equal(s.start_taken_pages, shown ? 0 : big);
    assert_int_equal(strategy_stat(&s, "requests"), shown);
    assert_int_equal(strategy_stat(&s, "passes"), shown);
    free(r);
    free(desc);
    bh_arena_destroy(a);
  }
}

/*
 * The start's reported blocks wait at the tail of their free lists, where
 * page_reporting_drain() put them back (__putback_isolated_page, mm/page_reporting.c:120),
 * and allocation takes a list's head (get_page_from_free_area, mm/page_alloc.c:743, from
 * __rmqueue_smallest, mm/page_alloc.c:1641): an order-10 allocation takes the one unreported
 * block, the highest of its zone, and refaults nothing, though the lowest blocks are first in
 * pfn order.
 */
/* The tail test's machine: an arena whose Normal zone's order-10 free blocks below the highest
 * one are reported in its free map, and a trace of one order-10 allocation at the highest.
 * Then a second one, which finds only reported blocks left and takes the first of them
 * (put back first, so nearest the head).  Sets *nr to the reported blocks and returns the
 * trace's path. */
static const char *reported_tail_trace(bh_arena_t **out, uint64_t *nr_out) {
  bh_arena_t *a = tt_sim_arena(16, 240, 256);
  bh_drain_pcp(a);
  bh_zone_info_t zn;
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_info(a, i, &zn);
    if (zn.type == BH_ZONE_NORMAL)
      break;
  }
  assert_int_equal(zn.type, BH_ZONE_NORMAL);
  uint64_t lo = zn.start_pfn, hi = zn.start_pfn + zn.spanned_pages, top = 0, nr = 0,
           first = UINT64_MAX;
  for (uint64_t p = lo; p < hi; p++)
    if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == 10)
      top = p;
  char *r = NULL, *desc;
  size_t n = 0;
  FILE *f = open_memstream(&r, &n);
  uint64_t last = 0;
  for (uint64_t p = lo; p < top; p++)
    if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == 10) {
      fprintf(f, "R %lu 10\n", (unsigned long)(p - last));
      last = p + 1024;
      nr++;
      if (first == UINT64_MAX)
        first = p;
    }
  fprintf(f, "reported %lu\n", (unsigned long)nr);
  fclose(f);
  assert_true(nr >= 32);
  desc = describe_with(a, false, r, NULL);
  char lines[256];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n1000 A %#lx 10 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
           "2000 A %#lx 10 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
           (unsigned long)top, (unsigned long)first);
  const char *path = write_trace("tail.bht", desc, lines);
  free(r);
  free(desc);
  *out = a;
  *nr_out = nr;
  return path;
}

static int replay_strategy(const char *trace, const char *strategy, bh_replay_summary_t *s) {
  bh_replay_config_t rc;
  bh_replay_config_init(&rc);
  rc.trace = trace;
  rc.arena.backing = BH_BACKING_SIM;
  rc.hint.strategy = strategy;
  rc.idle_ns = 0;
  char err[512] = "";
  int ret = bh_replay_run(&rc, s, err, sizeof(err));
  if (ret)
    fail_msg("replay with %s: %s", strategy, err);
  return ret;
}

static void test_start_reported_tail(void **state) {
  (void)state;
  bh_arena_t *a;
  uint64_t nr;
  const char *trace = reported_tail_trace(&a, &nr);
  bh_replay_summary_t s;
  replay_strategy(trace, "bubble", &s);
  assert_int_equal(s.check_violations, 0);
  assert_string_equal(s.placement, "allocator");
  assert_int_equal(s.start_reported_blocks, nr);
  assert_int_equal(s.refaults, 1024); /* the second allocation reuses a discarded block */
  assert_true(s.agreement.present);
  assert_int_equal(s.agreement.allocs, 2);
  assert_int_equal(s.agreement.same, 2); /* the kernel's choices: the unreported block first */
  bh_arena_destroy(a);
}

/* A user's strategy that keeps PageReported: it reports nothing, it only says so. */
static int keeper_create(bh_hint_t *h, const bh_opt_t *o, size_t n, void **st) {
  (void)o, (void)n;
  bh_hint_set_orders(h, UINT8_MAX, UINT8_MAX);
  *st = h;
  return 0;
}
static void keeper_destroy(void *st) { (void)st; }
static uint64_t keeper_step(void *st, uint64_t now) {
  (void)st, (void)now;
  return BH_HINT_IDLE;
}

/*
 * Every strategy starts from the same host state: the blocks the machine had reported are
 * discarded by the host and at the tail of their free lists whatever the strategy, so their
 * reuse is a refault under each (1024 pages here).  Which strategies also see them as
 * reported (PageReported, so they do not report them again) is their capability
 * (BH_STRATEGY_PAGE_REPORTED), not their name: bubble and adaptive keep it as
 * mm/page_reporting.c does, a user's strategy may say it does; bitmap hinting and no hinting
 * do not (start_reported_marked 0).
 */
static void test_start_reported_capability(void **state) {
  (void)state;
  static const bh_strategy_ops_t keeper = {.name = "test-keeper",
                                           .summary = "keeps PageReported, reports nothing",
                                           .create = keeper_create,
                                           .destroy = keeper_destroy,
                                           .step = keeper_step,
                                           .flags = BH_STRATEGY_PAGE_REPORTED};
  int reg = bh_strategy_register(&keeper);
  assert_true(reg == 0 || reg == BH_EBUSY);
  bh_arena_t *a;
  uint64_t nr;
  const char *trace = reported_tail_trace(&a, &nr);
  static const struct {
    const char *strategy;
    bool starts_reported;
  } cases[] = {{"bubble", true},
               {"adaptive", true},
               {"test-keeper", true},
               {"bitmap", false},
               {"none", false}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bh_replay_summary_t s;
    replay_strategy(trace, cases[i].strategy, &s);
    print_message("%-12s start_reported_blocks %lu refaults %lu\n", cases[i].strategy,
                  (unsigned long)s.start_reported_blocks, (unsigned long)s.refaults);
    assert_int_equal(s.check_violations, 0);
    assert_int_equal(s.start_reported_blocks, nr);
    assert_int_equal(s.start_reported_marked, cases[i].starts_reported ? nr : 0);
    assert_int_equal(s.start_reported_missed, 0);
    /* the blocks wait at the list tail: the first allocation takes the unreported head */
    assert_int_equal(s.agreement.same, 2);
    assert_int_equal(s.refaults, 1024);
  }
  bh_arena_destroy(a);
}

/* The pcp pages of a dump's zoneinfo: its "count:" lines summed. */
static long zoneinfo_pcp(const char *dir) {
  char path[512];
  snprintf(path, sizeof(path), "%s/zoneinfo", dir);
  char *zi = slurp(path);
  long sum = 0;
  for (const char *q = zi; (q = strstr(q, "count:")); q += 6)
    sum += strtol(q + 6, NULL, 10);
  free(zi);
  return sum;
}

/* Native text lines into a version 3 trace of format fmt with desc, the pcp events kept. */
static const char *write_trace3(const char *name, int fmt, const char *desc, const char *lines) {
  const char *p = tt_path(name);
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open2(p, fmt, BH_TRACE_COMP_NONE, desc, &w), 0);
  assert_int_equal(bh_trace_writer_pcp_events(w), 0);
  bh_trace_opts_t o = {.pcp_events = true};
  bh_trace_t *t;
  assert_int_equal(bh_trace_open(tt_write_str("lines3.txt", lines), &o, &t), 0);
  bh_event_t ev;
  while (bh_trace_next(t, &ev) == 1)
    assert_int_equal(bh_trace_write(w, &ev), 0);
  bh_trace_close(t);
  assert_int_equal(bh_trace_writer_close(w), 0);
  return p;
}

/* A --placement trace replay of path, its end state dumped into a new directory dir (with
 * --start-order pfn if pfn_order: no inference of the start from the trace). */
static long replay_pcp_order(const char *path, const char *dir, bool pfn_order,
                             bh_replay_summary_t *s) {
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  cfg.start_order_pfn = pfn_order;
  cfg.placement = BH_PLACEMENT_TRACE;
  cfg.dump_dir = tt_path(dir);
  replay(&cfg, s);
  return zoneinfo_pcp(cfg.dump_dir);
}

static long replay_pcp(const char *path, const char *dir, bh_replay_summary_t *s) {
  return replay_pcp_order(path, dir, false, s);
}

/*
 * Pageblock types from the pcp events: a refill (mm_page_alloc_zone_locked) comes from
 * __rmqueue_smallest, which takes only the request's migratetype's lists (mm/page_alloc.c:
 * 1644-1650 in 6.12), so the refilled block's pageblock had the request's type.  The map
 * holds a Movable pageblock Unmovable (its mistake, swapped with a quiet Unmovable one); a
 * Movable refill from it retypes it.  A claim (mm_page_alloc_extfrag, change_ownership) is
 * traced after the refill it made (try_to_steal_block's __move_freepages_block and
 * __rmqueue_smallest, :2022-2023, then __rmqueue_claim's trace_mm_page_alloc_extfrag, :2255):
 * then the refill says nothing of the pageblock's start type.
 */
/* The pageblocks the start state retyped, replaying a version 3 trace of lines with desc. */
static uint64_t retyped_by(const char *desc, const char *lines) {
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = write_trace3("pbtypes3.bht", BH_TRACE_NATIVE_BINARY, desc, lines);
  bh_replay_summary_t s;
  replay(&cfg, &s);
  return s.start_retyped_pageblocks;
}

static void test_start_types_from_refills(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  uint64_t p3[3];
  three_movable_used(a, p3);
  uint64_t pb = p3[0] >> a->pb_order << a->pb_order;
  char extra[64];
  mistype_pageblock(a, pb, extra, sizeof(extra));
  char *desc = describe_with(a, false, extra, NULL);
  for (int claimed = 0; claimed < 2; claimed++) {
    char claim[128] = "", lines[512];
    if (claimed) /* the claim is traced after the refill it made (try_to_steal_block) */
      snprintf(claim, sizeof(claim),
               "1001 X %#lx 0 cpu=0 mt=1 fallback_order=0 fallback_mt=0 claim=1\n",
               (unsigned long)p3[1]);
    snprintf(lines, sizeof(lines),
             "# buddyhint-trace 3\n"
             "1000 Z %#lx 0 cpu=0 mt=1 refill=1\n"
             "%s"
             "2000 F %#lx 0 cpu=0\n",
             (unsigned long)p3[1], claim, (unsigned long)p3[0]);
    assert_int_equal(retyped_by(desc, lines), claimed ? 0 : 1);
  }
  /* A drain that is a page's first event (a page on a pcp list at the start) prints its
   * pageblock's type as free_pcppages_bulk reads it (get_pfnblock_migratetype,
   * mm/page_alloc.c:1256, traced at :1264 in 6.12): the same evidence.  Movable retypes the
   * pageblock; Unmovable agrees with the map. */
  for (int mt = 0; mt < 2; mt++) {
    char lines[256];
    snprintf(lines, sizeof(lines),
             "# buddyhint-trace 3\n1000 D %#lx 0 cpu=0 mt=%d\n"
             "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
             (unsigned long)p3[0], mt, (unsigned long)p3[0]);
    assert_int_equal(retyped_by(desc, lines), mt == BH_MT_MOVABLE);
  }
  free(desc);
  bh_arena_destroy(a);
}

static uint64_t free_movable(bh_arena_t *a, uint64_t from, unsigned min_order);

/*
 * A page whose first event is an allocation that no take gave out (the trace records the
 * refills) came off a pcp list it lay on at the start; a free put it there by its pageblock's
 * type then (free_unref_page, mm/page_alloc.c:2750-2756 in 6.12), so a Movable allocation of
 * it is evidence that its pageblock was Movable: the map's Unmovable pageblock is retyped.
 * Weak evidence: the pageblock may have been retyped between that free and the start, so any
 * other evidence wins, here a drain of another of its pages (a first event) printing
 * Unmovable.  With no pcp event in the trace, it may not record the refills: none.  A pcp
 * event after the allocation shows that it does (a start's full lists can serve thousands of
 * allocations before the first refill): the evidence is taken at the first pass's end.
 */
static void test_start_types_from_pcp_allocs(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  uint64_t p3[3];
  three_movable_used(a, p3);
  uint64_t pb = p3[0] >> a->pb_order << a->pb_order;
  char extra[64];
  mistype_pageblock(a, pb, extra, sizeof(extra));
  char *desc = describe_with(a, false, extra, NULL);
  /* the last page of a free block: a take of its head would be a split, which shows the lower
   * Movable lists empty (types_from_splits) where this map holds Movable blocks */
  uint64_t q = free_movable(a, pb + (1ull << a->pb_order), 0);
  q += (1ull << a->pages[q].order) - 1;
  const struct {
    unsigned pcp_at; /* the time of a pcp event, 0: none */
    bool drain;
    uint64_t retyped;
  } want[] = {{500, false, 1}, {500, true, 0}, {0, false, 0}, {1500, false, 1}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    char lines[512], pcp[96] = "";
    if (want[i].pcp_at) /* a refill elsewhere, of its pageblock's type */
      snprintf(pcp, sizeof(pcp), "%u Z %#lx 0 cpu=1 mt=1 refill=1\n", want[i].pcp_at,
               (unsigned long)q);
    snprintf(lines, sizeof(lines),
             "# buddyhint-trace 3\n%s1000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n%s",
             want[i].pcp_at < 1000 ? pcp : "", (unsigned long)p3[0],
             want[i].pcp_at > 1000 ? pcp : "");
    if (want[i].drain)
      snprintf(lines + strlen(lines), sizeof(lines) - strlen(lines), "2000 D %#lx 0 cpu=0 mt=0\n",
               (unsigned long)p3[1]);
    assert_int_equal(retyped_by(desc, lines), want[i].retyped);
  }
  free(desc);
  bh_arena_destroy(a);
}

/* Free blocks of order o on type's lists in zone (pagetypeinfo's text, "Normal", "Movable"). */
static long free_count(const char *pagetypeinfo, const char *zone, const char *type, unsigned o) {
  char key[96];
  snprintf(key, sizeof(key), "zone %8s, type %12s", zone, type);
  const char *q = strstr(pagetypeinfo, key);
  assert_non_null(q);
  char *e = (char *)q + strlen(key);
  long v = -1;
  for (unsigned i = 0; i <= o; i++)
    v = strtol(e, &e, 10);
  return v;
}

/*
 * A free pageblock retyped by the trace swaps with another free pageblock: two free blocks of
 * the pageblock order in one zone, X Movable and Y Unmovable, that the map typed the other way
 * round (its counts hold either way).  A Movable refill from X shows X Movable; the nearest
 * free pageblock-order block the map typed Movable whose type nothing shows (Y) takes
 * Unmovable, so that pagetypeinfo's free blocks per order and type hold as well as its
 * pageblocks per type.  (A pageblock with no free page taking Unmovable would leave two free
 * Movable blocks where the kernel had one, and the kernel's next Movable requests would find
 * one it did not have, __rmqueue_smallest taking the smallest order first,
 * mm/page_alloc.c:1644-1650 in 6.12.)
 *
 * Y may show Movable too, later: page reporting (or compaction) isolates a free pageblock-order
 * block through __isolate_free_page, which moves its pageblock to Movable with no event
 * (mm/page_alloc.c:2916-2927), so the later of two such pieces of evidence is the one that
 * gives way ("late"), whichever pfn comes first.  Where Y's came first ("early"), X's Movable
 * evidence is not taken: X keeps the map's Unmovable, nothing is retyped, and the counts hold.
 */
/* Does pageblock q hold a free page (a free block in it, or one holding it)? */
static bool pageblock_has_free(const bh_arena_t *a, uint64_t q) {
  for (uint64_t p = q; p < q + (1ull << a->pb_order); p++)
    if (a->pages[p].flags & BH__PG_BUDDY)
      return true;
  for (unsigned o = a->pb_order; o <= a->max_order; o++) {
    uint64_t h = q & ~((1ull << o) - 1);
    if ((a->pages[h].flags & BH__PG_BUDDY) && a->pages[h].order >= o)
      return true;
  }
  return false;
}

/* How the map of free_swap types X and Y (truth: X Movable, Y Unmovable); each keeps the
 * map's counts of pageblocks by type with a pageblock that holds no free page typed the other
 * way round */
enum map_xy { MAP_SWAPPED, MAP_Y_MOVABLE, MAP_X_UNMOVABLE };

/* A machine section that says the recorded machine reported at order 9, and a start map that
 * shows one reported block (the first free block outside zone z): page reporting ran. */
static void reporting_machine(const bh_arena_t *a, const bh_zone_t *z, char *desc_head, size_t hlen,
                              char *r_lines, size_t rlen) {
  uint64_t r = UINT64_MAX;
  for (uint64_t p = 0; p < z->zone_start_pfn && r == UINT64_MAX; p++)
    if (a->pages[p].flags & BH__PG_BUDDY)
      r = p;
  assert_true(r != UINT64_MAX);
  snprintf(desc_head, hlen, "@machine 1\npage_reporting_order 9\n");
  snprintf(r_lines, rlen, "reported 1\nR %lu %u\n", (unsigned long)r, a->pages[r].order);
}

/* The first of two free Movable blocks of the top order one after the other in zone z. */
static uint64_t two_free_movable_max(const bh_arena_t *a, const bh_zone_t *z) {
  uint64_t big = 1ull << a->max_order;
  for (uint64_t p = z->zone_start_pfn; p + 2 * big <= z->zone_start_pfn + z->zone_spanned_pages;
       p += big)
    if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == a->max_order &&
        (a->pages[p + big].flags & BH__PG_BUDDY) && a->pages[p + big].order == a->max_order &&
        bh__pb_mt(a, p) == BH_MT_MOVABLE && bh__pb_mt(a, p + big) == BH_MT_MOVABLE)
      return p;
  fail_msg("no two free Movable top-order blocks in a row");
  return UINT64_MAX;
}

static void free_swap_in(const char *name, enum map_xy map, bool reporting, const char *events,
                         int retyped, bool counts_hold) {
  bh_arena_t *a = crafted_arena();
  bh_zone_t *z = &a->zones[a->nr_zones - 1];
  uint64_t big = 1ull << a->max_order, pb = 1ull << a->pb_order, w = two_free_movable_max(a, z);
  /* a page taken from the lower pageblock of each: the upper ones are free order-9 blocks */
  for (int i = 0; i < 2; i++)
    assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, 0, 0, w + i * big), BH_OK);
  bh_drain_pcp(a);
  uint64_t x = w + pb, y = w + big + pb;
  assert_true((a->pages[x].flags & BH__PG_BUDDY) && a->pages[x].order == a->pb_order);
  assert_true((a->pages[y].flags & BH__PG_BUDDY) && a->pages[y].order == a->pb_order);
  bh__move_freepages_block(z, y, BH_MT_MOVABLE, BH_MT_UNMOVABLE);
  /* X and Y the zone's only free pageblock-order blocks, as in a recorded guest where this
   * was seen: a page taken from each other one */
  for (uint64_t p = z->zone_start_pfn; p < z->zone_start_pfn + z->zone_spanned_pages; p += pb)
    if (p != x && p != y && (a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == a->pb_order)
      assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, 0, 0, p), BH_OK);
  bh_drain_pcp(a);
  char *truth = dump(a, bh_dump_pagetypeinfo);
  char extra[128], head[64] = "", r_lines[64] = "";
  if (reporting)
    reporting_machine(a, z, head, sizeof(head), r_lines, sizeof(r_lines));
  if (map != MAP_SWAPPED) { /* the map typed one of them wrong, and a pageblock q with no free
                             * page of the other type the other way round */
    int qt = map == MAP_Y_MOVABLE ? BH_MT_MOVABLE : BH_MT_UNMOVABLE;
    uint64_t q = z->zone_start_pfn;
    while (q < z->zone_start_pfn + z->zone_spanned_pages &&
           (bh__pb_mt(a, q) != qt || pageblock_has_free(a, q)))
      q += pb;
    assert_true(q < z->zone_start_pfn + z->zone_spanned_pages);
    if (map == MAP_Y_MOVABLE)
      snprintf(extra, sizeof(extra), "P %lx M1\nP %lx U1\n%s", (unsigned long)y, (unsigned long)q,
               r_lines);
    else
      snprintf(extra, sizeof(extra), "P %lx U1\nP %lx M1\n%s", (unsigned long)x, (unsigned long)q,
               r_lines);
  } else {
    snprintf(extra, sizeof(extra), "P %lx U1\nP %lx M1\n%s", (unsigned long)x, (unsigned long)y,
             r_lines);
  }
  char *plain = describe_with(a, false, extra, NULL);
  const char *nl = strchr(plain, '\n'); /* after "buddyhint-machine 1" */
  size_t dn = strlen(plain) + strlen(head) + 1;
  char *desc = malloc(dn);
  assert_non_null(desc);
  snprintf(desc, dn, "%.*s%s%s", (int)(nl + 1 - plain), plain, head, nl + 1);
  free(plain);
  char lines[512], file[64], dir[64];
  with_pfns(events, x, y, lines, sizeof(lines)); /* X and Y: the two blocks' pfns */
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  snprintf(file, sizeof(file), "pbswap-%s.bht", name);
  snprintf(dir, sizeof(dir), "dump-pbswap-%s", name);
  cfg.trace = write_trace3(file, BH_TRACE_NATIVE_BINARY, desc, lines);
  cfg.dump_dir = tt_path(dir);
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.start_retyped_pageblocks, retyped);
  char path[600];
  snprintf(path, sizeof(path), "%s/pagetypeinfo", cfg.dump_dir);
  char *got = slurp(path);
  const char *zn = bh_zone_name(z->type);
  bool same =
      free_count(got, zn, "Unmovable", a->pb_order) ==
          free_count(truth, zn, "Unmovable", a->pb_order) &&
      free_count(got, zn, "Movable", a->pb_order) == free_count(truth, zn, "Movable", a->pb_order);
  assert_true(same == counts_hold);
  free(got);
  free(truth);
  free(desc);
  bh_arena_destroy(a);
}

static void free_swap(const char *name, bool map_y_only, const char *events, int retyped) {
  free_swap_in(name, map_y_only ? MAP_Y_MOVABLE : MAP_SWAPPED, false, events, retyped, true);
}

static void test_start_types_free_swap(void **state) {
  (void)state;
  /* X shows Movable; Y shows nothing */
  free_swap("x", false,
            "# buddyhint-trace 3\n1000 Z X 0 cpu=0 mt=1 refill=1\n"
            "2000 A X 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
            1);
  /* Y shows Movable after X: a refill of the whole of Y (order 9; its first allocation, which
   * orders the evidence, after X's) */
  free_swap("late", false,
            "# buddyhint-trace 3\n1000 Z X 0 cpu=0 mt=1 refill=1\n"
            "2000 A X 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
            "3000 Z Y 9 cpu=0 mt=1 refill=1\n"
            "4000 A Y 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
            1);
  /* Y shows Movable before X: X's evidence gives way */
  free_swap("early", false,
            "# buddyhint-trace 3\n500 Z Y 9 cpu=0 mt=1 refill=1\n"
            "600 A Y 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
            "1000 Z X 0 cpu=0 mt=1 refill=1\n"
            "2000 A X 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
            0);
  /* The map typed only Y wrong (and a pageblock with no free page the other way): X shows
   * Movable, as the map has it, so no evidence retypes anything, but the zone's free
   * pageblock-order blocks are two Movable where pagetypeinfo counts one of each type; the
   * one whose type nothing shows, Y, is retyped Unmovable (fit_free_pageblocks) */
  free_swap("fit", true,
            "# buddyhint-trace 3\n1000 Z X 0 cpu=0 mt=1 refill=1\n"
            "2000 A X 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
            1);
  /* The map typed X Unmovable (truth: Movable), so the zone's free pageblock-order blocks are
   * two Unmovable where pagetypeinfo counts one of each type.  Y shows Unmovable (a refill of
   * that type takes its first page); X shows Movable only when a Movable refill takes it whole,
   * late.  On a machine whose page reporting isolates free pageblocks (at order 9; the start
   * map shows a reported block) that evidence may follow the isolation's retype
   * (mm/page_alloc.c:2916-2927 in 6.12) and says nothing of X's type at the start, so X is
   * the one the counts retype, to Movable (fit_free_pageblocks): the counts hold.  Without
   * reporting the evidence stands against the map and nothing may be retyped. */
  static const char late_x[] = "# buddyhint-trace 3\n1000 Z Y 0 cpu=0 mt=0 refill=1\n"
                               "3000 Z X 9 cpu=0 mt=1 refill=1\n";
  free_swap_in("isolated", MAP_X_UNMOVABLE, true, late_x, 1, true);
  free_swap_in("unreported", MAP_X_UNMOVABLE, false, late_x, 0, false);
}

/* Every page of pageblock pb allocated with gfp, but the order-3 block at pb + 8. */
static void all_but_order3(bh_arena_t *a, uint64_t pb, unsigned gfp) {
  static const struct { unsigned off, order; } used[] = {{0, 0}, {1, 0}, {2, 1}, {4, 2}};
  for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
    assert_int_equal(bh_alloc_pfn_at(a, gfp, used[i].order, 0, pb + used[i].off), BH_OK);
  for (unsigned o = 4; o < a->pb_order; o++)
    assert_int_equal(bh_alloc_pfn_at(a, gfp, o, 0, pb + (1ull << o)), BH_OK);
}

/*
 * The partner of a retype holds free blocks like the retyped pageblock's.  X Movable and Y
 * Unmovable, each allocated but for one free order-3 block, that the map typed the other way
 * round (its counts hold either way).  A page of X freed and allocated again from the Movable
 * pcp list shows X Movable (free_unref_page_commit puts it on its pageblock's type's list,
 * mm/page_alloc.c:2689 in 6.12.117); the pageblock that takes Unmovable in its place is one
 * whose type nothing shows with the same free blocks (Y, or one like it), so that
 * pagetypeinfo's free blocks per type and order hold: the kernel's Movable requests find no
 * Movable order-3 block it did not have (__rmqueue_smallest takes the smallest order first,
 * :1644-1650).  The nearest pageblock with no free page instead left two Movable order-3 blocks
 * where pagetypeinfo counts one.
 */
static void test_start_types_partner_shape(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  bh_zone_t *z = &a->zones[a->nr_zones - 1];
  uint64_t x = two_free_movable_max(a, z), y = x + (1ull << a->max_order);
  all_but_order3(a, x, BH_GFP_USER_MOVABLE);
  all_but_order3(a, y, BH_GFP_KERNEL);
  bh__move_freepages_block(z, y, BH_MT_MOVABLE, BH_MT_UNMOVABLE);
  bh_drain_pcp(a);
  char *truth = dump(a, bh_dump_pagetypeinfo);
  char extra[64];
  snprintf(extra, sizeof(extra), "P %lx U1\nP %lx M1\n", (unsigned long)x, (unsigned long)y);
  char *desc = describe_with(a, false, extra, NULL);
  char lines[256];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 1\n1000 F %#lx 0 cpu=0\n"
           "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
           (unsigned long)x, (unsigned long)x);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = write_trace("pbpartner.bht", desc, lines);
  cfg.dump_dir = tt_path("dump-pbpartner");
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.start_retyped_pageblocks, 1);
  assert_int_equal(s.agreement.same, 1);
  char path[600];
  snprintf(path, sizeof(path), "%s/pagetypeinfo", cfg.dump_dir);
  char *got = slurp(path);
  const char *zn = bh_zone_name(z->type);
  assert_int_equal(free_count(got, zn, "Movable", 3), free_count(truth, zn, "Movable", 3));
  assert_int_equal(free_count(got, zn, "Unmovable", 3), free_count(truth, zn, "Unmovable", 3));
  free(got);
  free(truth);
  free(desc);
  bh_arena_destroy(a);
}

/* The lowest and the highest free Movable block of the highest order in DMA32: the zone
 * where the crafted machine has enough free memory for reporting to visit
 * (page_reporting_process_zone's watermark, mm/page_reporting.c:268-277). */
static void dma32_max_order_movable(const bh_arena_t *a, uint64_t *lo, uint64_t *hi) {
  const bh_zone_t *z = &a->zones[a->nr_zones - 2];
  uint64_t big = 1ull << a->max_order;
  *lo = *hi = UINT64_MAX;
  for (uint64_t p = z->zone_start_pfn; p + big <= z->zone_start_pfn + z->zone_spanned_pages;
       p += big)
    if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == a->max_order &&
        bh__pb_mt(a, p) == BH_MT_MOVABLE) {
      if (*lo == UINT64_MAX)
        *lo = p;
      *hi = p;
    }
  assert_true(*lo != UINT64_MAX && *hi > *lo + big);
}

/*
 * The trace at path replayed with bubble, once inferring the start's list order and once in
 * pfn order (--start-order pfn): its first pass is one batch (fewer blocks than
 * PAGE_REPORTING_CAPACITY), which the kernel fills from the end of its scatterlist
 * (mm/page_reporting.c:208-209) and reports as it lies: the list's head last, which is head
 * as inferred, and lo in pfn order.
 */
static void expect_head_reported_last(const char *path, uint64_t lo, uint64_t head,
                                      bool refill_alloc) {
  for (int pfn_order = 0; pfn_order < 2; pfn_order++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = path;
    cfg.arena.backing = BH_BACKING_SIM;
    cfg.hint.strategy = "bubble";
    cfg.start_order_pfn = pfn_order;
    cfg.pcp_refill_alloc = refill_alloc;
    bh_replay_summary_t s;
    char *csv = replay_reports(&cfg, &s);
    long at_lo = -1, at_head = -2, k = 0;
    unsigned long pfn;
    unsigned order;
    for (char *at = csv; next_report(&at, &pfn, &order); k++) {
      if (pfn == lo && at_lo < 0)
        at_lo = k;
      if (pfn == head && at_head < 0)
        at_head = k;
    }
    assert_true(k > 1 && k < 32);
    assert_int_equal(pfn_order ? at_lo : at_head, k - 1);
    free(csv);
  }
}

/*
 * With the pcp events recorded, the buddy lists' order at the start is the order of the
 * kernel's takes from them (mm_page_alloc_zone_locked, traced in __rmqueue_smallest,
 * mm/page_alloc.c:1650 in 6.12.117, each from a list's head, :743), not of the first
 * allocations, which come later and from the pcp lists.  Two free blocks of the highest order,
 * the lowest (lo) and the highest (hi) of a zone: the kernel takes from hi first (a
 * refill on CPU 0), from lo second, and allocates neither.  The start state puts hi nearer its
 * list's head than lo, and page reporting, which walks a list from its head
 * (page_reporting_cycle, mm/page_reporting.c:184), takes hi before lo; with --start-order pfn
 * lo goes first.
 */
/* The first events of a buddy_order_case trace: hi, lo and the highest order in. */
typedef int (*head_events_fn)(char *b, size_t n, unsigned long hi, unsigned long lo,
                              unsigned max_order);

/* A crafted arena's two Movable DMA32 blocks of the highest order, lo and hi, the events
 * head() writes, then a block of that order taken and given back, which starts page reporting
 * (page_reporting_notify_free from __free_one_page): expect_head_reported_last. */
static void buddy_order_case(const char *name, head_events_fn head, bool refill_alloc) {
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  uint64_t lo, hi;
  dma32_max_order_movable(a, &lo, &hi);
  unsigned long d = (unsigned long)(lo + (1ull << a->max_order));
  char lines[512];
  int k = snprintf(lines, sizeof(lines), "# buddyhint-trace 3\n");
  k += head(lines + k, sizeof(lines) - (size_t)k, (unsigned long)hi, (unsigned long)lo,
            a->max_order);
  snprintf(lines + k, sizeof(lines) - (size_t)k,
           "3000 A %#lx %u cpu=0 gfp=GFP_DMA32|__GFP_MOVABLE\n4000 F %#lx %u cpu=0\n", d,
           a->max_order, d, a->max_order);
  expect_head_reported_last(write_trace3(name, BH_TRACE_NATIVE_BINARY, desc, lines), lo, hi,
                            refill_alloc);
  free(desc);
  bh_arena_destroy(a);
}

static int two_takes(char *b, size_t n, unsigned long hi, unsigned long lo, unsigned max_order) {
  (void)max_order;
  return snprintf(b, n, "1000 Z %#lx 0 cpu=0 mt=1 refill=1\n2000 Z %#lx 0 cpu=0 mt=1 refill=1\n",
                  hi, lo);
}

static void test_start_buddy_order_takes(void **state) {
  (void)state;
  /* the takes are evidence of the start, no allocation's: refills at the allocations */
  buddy_order_case("buddyorder-takes.bht", two_takes, true);
}

/*
 * A fallback that claims a free block of a pageblock or more takes the head of the fallback
 * type's list at its order and traces only mm_page_alloc_extfrag (try_to_steal_block,
 * mm/page_alloc.c:1975-1980 in 6.12.117, from __rmqueue_claim's get_page_from_free_area,
 * :2251; no mm_page_alloc_zone_locked): the highest Movable block of the highest order, which
 * an Unmovable refill claims first, lay at its list's head at the start.  Page reporting
 * shows the list's order (its batch, filled from the scatterlist's end, reports the list's
 * head last, mm/page_reporting.c:208-209): the claimed block last; in pfn order
 * (--start-order pfn), the lowest.
 */
static int one_claim(char *b, size_t n, unsigned long hi, unsigned long lo, unsigned max_order) {
  (void)lo;
  return snprintf(b, n, "1000 X %#lx 0 cpu=0 mt=0 fallback_order=%u fallback_mt=1 claim=1\n", hi,
                  max_order);
}

static void test_start_buddy_order_claim(void **state) {
  (void)state;
  buddy_order_case("buddyorder-claim.bht", one_claim, false);
}

/*
 * A page drained before any other event of it lay on a pcp list at the start: its pageblock's
 * type's (free_unref_page, mm/page_alloc.c:2750-2756 in 6.12), unless the trace refilled that
 * list before the drain: rmqueue_bulk refills only an empty list (__rmqueue_pcplist,
 * :3082-3092) and whatever goes on a pcp list after the start has an event, so the page lay
 * on another type's list (its pageblock had that type when the page was freed).  Here CPU 0's
 * Movable list is refilled with the smallest free Movable block's first page, which the next
 * allocation takes, before a page of a Movable pageblock is drained.  On the Movable list, the
 * drained page would have kept the list from being empty and the allocation would have taken
 * it: the refill, at its event under allocator placement, finds the list empty only when the
 * page lies on the Unmovable list.
 */
static void test_start_drain_refilled(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  const bh_zone_t *z = &a->zones[a->nr_zones - 1]; /* Normal */
  uint64_t q = UINT64_MAX, p = UINT64_MAX, end = z->zone_start_pfn + z->zone_spanned_pages;
  for (uint64_t i = z->zone_start_pfn; i < end; i++) {
    if ((a->pages[i].flags & BH__PG_BUDDY) && bh__pb_mt(a, i) == BH_MT_MOVABLE &&
        (q == UINT64_MAX || a->pages[i].order < a->pages[q].order))
      q = i;
    if (p == UINT64_MAX && a->pages[i].flags == BH__PG_ALLOC && !a->pages[i].order &&
        bh__pb_mt(a, i) == BH_MT_MOVABLE)
      p = i;
  }
  assert_true(q != UINT64_MAX && p != UINT64_MAX);
  char *desc = describe(a, false);
  char lines[256];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n1000 Z %#lx 0 cpu=0 mt=1 refill=1\n"
           "1100 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n2000 D %#lx 0 cpu=0 mt=1\n",
           (unsigned long)q, (unsigned long)q, (unsigned long)p);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = write_trace3("drain-refilled.bht", BH_TRACE_NATIVE_BINARY, desc, lines);
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.agreement.allocs, 1);
  assert_int_equal(s.agreement.same, 1);
  assert_int_equal(s.pcp_refills_at_event, 1);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * A block the free map holds allocated whose first event is a take from the buddy lists
 * (mm_page_alloc_zone_locked) was free at the start: the map is read page by page while the
 * kernel runs, and a block allocated as its pages were read and freed before the trace began
 * shows allocated.  The start state holds it free (start_taken_pages), merged with its free
 * buddy as the kernel keeps free blocks (__free_one_page, mm/page_alloc.c:831-875 in 6.12):
 * two free buddies of one order would be a state the kernel cannot be in, which the arena
 * refuses.  Here the lower half of a free block of the highest order is allocated when the
 * map is taken; the trace takes it first, at its order.
 */
/*
 * Page reporting isolates a free block of at least half a pageblock through
 * __isolate_free_page, which moves its pageblock to Movable with no event (mm/page_alloc.c:
 * 2916-2927 in 6.12; page_reporting_cycle, mm/page_reporting.c:202), so Movable evidence of
 * a pageblock that holds such a block at the start may follow that retype.  Pageblock W, of
 * the map's type Unmovable, holds an allocated lower half and a free upper half (order 8);
 * page W, on CPU 0's pcp list at the start, is drained first (the drain prints Movable) and
 * an Unmovable request takes it.  Where the recorded machine reports at order 5 (the start
 * map shows reported blocks), W keeps Unmovable and the drained page lies on the Unmovable
 * list it was freed to (free_unref_page by the pageblock's type then, :2750-2756): the
 * request takes it.  At order 9 (the half is not reported) or with nothing reported the
 * evidence is taken: W is retyped and the page lies on the Movable list.  With earlier
 * Unmovable evidence (a free and an allocation of W + 1 on CPU 0) the drain's type gives way
 * at any order, and the page lies on its pageblock's start type's list.
 */
static void test_start_drain_after_isolation(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  bh_zone_t *z = &a->zones[a->nr_zones - 1];
  uint64_t big = 1ull << a->max_order, w = UINT64_MAX, r = UINT64_MAX;
  for (uint64_t p = z->zone_start_pfn; p + big <= z->zone_start_pfn + z->zone_spanned_pages;
       p += big)
    if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == a->max_order &&
        bh__pb_mt(a, p) == BH_MT_MOVABLE && r == UINT64_MAX) {
      r = w == UINT64_MAX ? UINT64_MAX : p;
      w = w == UINT64_MAX ? p : w;
    }
  assert_true(w != UINT64_MAX && r != UINT64_MAX);
  unsigned half = a->pb_order - 1;
  /* W's lower half allocated; the other pageblock of the order-10 block, and the order-10
   * block r, stay free (r: the block the map marks reported) */
  assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, half, 0, w), BH_OK);
  bh__move_freepages_block(z, w, BH_MT_MOVABLE, BH_MT_UNMOVABLE);
  assert_true((a->pages[w + (1ull << half)].flags & BH__PG_BUDDY) &&
              a->pages[w + (1ull << half)].order == half);
  char reported[64];
  snprintf(reported, sizeof(reported), "reported 1\nR %lu %u\n", (unsigned long)r, a->max_order);
  const struct {
    int order;    /* the recorded page_reporting_order */
    bool with_r;  /* the map shows a reported block */
    bool earlier; /* Unmovable evidence before the drain */
    uint64_t retyped, same;
  } want[] = {{5, true, false, 0, 1},
              {9, true, false, 1, 0},
              {5, false, false, 1, 0},
              {9, true, true, 0, 2}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    char *plain = describe_with(a, false, want[i].with_r ? reported : "", NULL);
    size_t n = strlen(plain) + 64;
    char *desc = malloc(n);
    assert_non_null(desc);
    const char *nl = strchr(plain, '\n');
    snprintf(desc, n, "%.*s@machine 1\npage_reporting_order %d\n%s", (int)(nl + 1 - plain), plain,
             want[i].order, nl + 1);
    char lines[512], pre[160] = "";
    if (want[i].earlier)
      snprintf(pre, sizeof(pre), "900 F %#lx 0 cpu=0\n950 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n",
               (unsigned long)(w + 1), (unsigned long)(w + 1));
    snprintf(lines, sizeof(lines),
             "# buddyhint-trace 3\n%s1000 D %#lx 0 cpu=0 mt=1\n"
             "2000 A %#lx 0 cpu=0 gfp=GFP_KERNEL\n",
             pre, (unsigned long)w, (unsigned long)w);
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = write_trace3("drain-isolation.bht", BH_TRACE_NATIVE_BINARY, desc, lines);
    bh_replay_summary_t s;
    replay(&cfg, &s);
    print_message("order %d reported %d earlier %d: retyped %lu, same %lu of %lu\n", want[i].order,
                  want[i].with_r, want[i].earlier, (unsigned long)s.start_retyped_pageblocks,
                  (unsigned long)s.agreement.same, (unsigned long)s.agreement.allocs);
    assert_int_equal(s.start_retyped_pageblocks, want[i].retyped);
    assert_int_equal(s.agreement.same, want[i].same);
    free(desc);
    free(plain);
  }
  bh_arena_destroy(a);
}

static void test_start_taken(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  const bh_zone_t *z = &a->zones[a->nr_zones - 1];
  uint64_t big = 1ull << a->max_order, w = UINT64_MAX;
  for (uint64_t p = z->zone_start_pfn;
       w == UINT64_MAX && p + big <= z->zone_start_pfn + z->zone_spanned_pages; p += big)
    if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == a->max_order &&
        bh__pb_mt(a, p) == BH_MT_MOVABLE)
      w = p;
  assert_true(w != UINT64_MAX);
  unsigned o = a->max_order - 1;
  assert_int_equal(bh_alloc_pfn_at(a, BH_GFP_USER_MOVABLE, o, 0, w), BH_OK);
  char *desc = describe(a, false);
  char lines[256];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n1000 Z %#lx %u cpu=0 mt=1\n"
           "2000 A %#lx %u cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
           (unsigned long)w, o, (unsigned long)w, o);
  const char *path = write_trace3("taken.bht", BH_TRACE_NATIVE_BINARY, desc, lines);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.start_taken_pages, 1ull << o);
  assert_int_equal(s.start_unexplained_pages, 0);
  /* --start-order pfn leaves out what the trace shows of the start: the map as it is */
  cfg.start_order_pfn = true;
  replay(&cfg, &s);
  assert_int_equal(s.start_taken_pages, 0);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * The same pair of frees with the pcp events recorded, and a drain of u between them
 * (mm_page_pcpu_drain): u went from CPU 0's pcp list to the buddy lists
 * (free_pcppages_bulk, mm/page_alloc.c:1264 in 6.12.117), so the allocation without an event
 * that the second free shows took it later, from a pcp list a refill put it on, not right
 * after its first free.  Inferred, the first free stays a free (no untraced allocation), and
 * without the drain it does not.
 */
static void test_untraced_allocs_drained(void **state) {
  (void)state;
  uint64_t p3[3];
  char *desc;
  bh_arena_t *a = arena_with_used(&desc, p3);
  unsigned long u = (unsigned long)p3[0], x = (unsigned long)p3[1];
  for (int drained = 0; drained < 2; drained++) {
    char drain[64] = "", lines[512];
    if (drained)
      snprintf(drain, sizeof(drain), "1500 D %#lx 0 cpu=0 mt=1\n", u);
    snprintf(lines, sizeof(lines),
             "# buddyhint-trace 3\n"
             "1000 F %#lx 0 cpu=0\n"
             "%s"
             "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
             "3000 F %#lx 0 cpu=0\n",
             u, drain, x, u);
    bh_replay_config_t cfg = config_of(write_trace3(drained ? "untraced-d.bht" : "untraced-nd.bht",
                                                    BH_TRACE_NATIVE_BINARY, desc, lines));
    cfg.untraced_infer = true;
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.untraced_allocs, drained ? 0 : 1);
  }
  free(desc);
  bh_arena_destroy(a);
}

/* The head of the first free block from pfn from in a Movable pageblock, of order min_order
 * or more (the test fails if there is none). */
static uint64_t free_block(bh_arena_t *a, uint64_t from, unsigned min_order, int mt) {
  for (uint64_t p = from; p < a->nr_pages; p++)
    if ((a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order >= min_order &&
        bh__pb_mt(a, p) == mt)
      return p;
  fail_msg("no free block of order %u and type %d from %#lx", min_order, mt, (unsigned long)from);
  return UINT64_MAX;
}

static uint64_t free_movable(bh_arena_t *a, uint64_t from, unsigned min_order) {
  return free_block(a, from, min_order, BH_MT_MOVABLE);
}

/*
 * A page a refill takes (mm_page_alloc_zone_locked, before any other event of it) was free at
 * the start, though its first page event is a free: it left the pcp list with no traced
 * allocation (alloc_pages_bulk traces none) and was freed.  The start state keeps it in its
 * free block (it used to split the block around it as memory allocated before the trace, and
 * the refill then missed, refill_start_state).
 */
static void test_start_take_then_free(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  /* the first page of a free block: the refill splits it */
  uint64_t q = free_movable(a, a->zones[a->nr_zones - 1].zone_start_pfn, 0);
  char *desc = describe(a, false);
  char lines[256];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n"
           "1000 Z %#lx 0 cpu=0 mt=1 refill=1\n"
           "2000 F %#lx 0 cpu=1\n",
           (unsigned long)q, (unsigned long)q);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = write_trace3("takefree.bht", BH_TRACE_NATIVE_BINARY, desc, lines);
  cfg.placement = BH_PLACEMENT_TRACE;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.start_repaired_pages, 0);
  assert_int_equal(s.pcp_events_applied, 1);
  assert_int_equal(s.pcp_events_missed, 0);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * A page the map holds free whose first event is a drain, or an allocation no take came
 * before, was on a pcp list at the start, not in the buddy lists: a page reaches a pcp list
 * from them only by a refill (rmqueue_bulk), which the trace would show, and a drain takes a
 * pcp page (free_pcppages_bulk, mm/page_alloc.c:1254-1264 in 6.12).  The map read it at
 * another moment (it is read page by page, before the trace begins).  The start state splits
 * its free block around it and puts it on the pcp list the event shows: the drain is played
 * (it used to be missed, drain_start_state), and both make a start pcp page.
 */
static void test_start_map_free_on_pcp(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  /* the first page of a free block of order 1 or more: its block is split around it */
  uint64_t q = free_movable(a, a->zones[a->nr_zones - 1].zone_start_pfn, 1);
  char *desc = describe(a, false);
  /* a refill elsewhere, first: the trace records the pcp events (without them every allocation
   * looks untaken, and only a free says the map read a page at another moment) */
  uint64_t r = free_movable(a, q + (1ull << a->pages[q].order), 0);
  const char *first[] = {"D %#lx 0 cpu=0 mt=1", "A %#lx 0 cpu=1 gfp=GFP_HIGHUSER_MOVABLE"};
  for (int i = 0; i < 2; i++) {
    char lines[256], ev[96];
    snprintf(ev, sizeof(ev), first[i], (unsigned long)q);
    snprintf(lines, sizeof(lines),
             "# buddyhint-trace 3\n500 Z %#lx 0 cpu=0 mt=1 refill=1\n1000 %s\n", (unsigned long)r,
             ev);
    char name[32];
    snprintf(name, sizeof(name), "mapfree%d.bht", i);
    bh_replay_config_t cfg = config_of(write_trace3(name, BH_TRACE_NATIVE_BINARY, desc, lines));
    cfg.placement = BH_PLACEMENT_TRACE;
    cfg.start_pcp_trace = true; /* no hidden pages: the start pcp pages are the trace's */
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_pcp_pages, 1);
    assert_int_equal(s.start_repaired_pages, 0);
    assert_int_equal(s.pcp_events_applied, 1 + (i == 0)); /* the refill, and the drain */
    assert_int_equal(s.pcp_events_missed, 0);
  }
  free(desc);
  bh_arena_destroy(a);
}

/* The arena's zoneinfo with the Normal zone's pagesets set: CPU c's "count:" to count[c] and,
 * if high[c], its "high:" to high[c]. */
static char *zoneinfo_pagesets(bh_arena_t *a, const long *count, const long *high) {
  char *zi = dump(a, bh_dump_zoneinfo), *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  assert_non_null(strstr(zi, "zone   Normal"));
  bool normal = false;
  int cpu = -1;
  for (size_t at = 0, len; zi[at]; at += len) {
    const char *l = zi + at, *nl = strchr(l, '\n');
    len = nl ? (size_t)(nl - l + 1) : strlen(l);
    normal = normal || !strncmp(l, "Node 0, zone   Normal", 21);
    if (normal && !strncmp(l, "    cpu:", 8))
      cpu++;
    if (normal && cpu >= 0 && cpu < 2 && !strncmp(l, "              count:", 20))
      fprintf(f, "              count: %ld\n", count[cpu]);
    else if (normal && cpu >= 0 && cpu < 2 && high[cpu] && !strncmp(l, "              high:", 19))
      fprintf(f, "              high:  %ld\n", high[cpu]);
    else
      fwrite(l, 1, len, f);
  }
  fclose(f);
  free(zi);
  return out;
}

/* The pcp pages a dump's zoneinfo counts for CPU cpu in the Normal zone. */
static long zoneinfo_cpu_field(const char *dir, int cpu, const char *field) {
  char path[512];
  snprintf(path, sizeof(path), "%s/zoneinfo", dir);
  char *zi = slurp(path), *q = strstr(zi, "zone   Normal");
  assert_non_null(q);
  for (int c = 0; c <= cpu; c++)
    assert_non_null(q = strstr(q + 1, "cpu:"));
  assert_non_null(q = strstr(q, field));
  long v = strtol(q + strlen(field), NULL, 10);
  free(zi);
  return v;
}

/* Q lines for the pages pfn[0..n) (ascending), with their "quiet" line. */
static void quiet_lines(char *buf, size_t len, const uint64_t *pfn, size_t n) {
  int k = snprintf(buf, len, "quiet %zu\n", n);
  uint64_t end = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && pfn[j] == pfn[j - 1] + 1)
      j++;
    k += snprintf(buf + k, len - (size_t)k, "Q %lu %zu\n", (unsigned long)(pfn[i] - end), j - i);
    end = pfn[j - 1] + 1;
    i = j;
  }
}

/* Q lines for 40 allocated Movable and 10 Unmovable order-0 pages of zone z (the pages with
 * no flag, where the hidden pcp pages hide); their pfns in pfns[50] if not NULL. */
static void quiet_pages(bh_arena_t *a, const bh_zone_t *z, char *buf, size_t len, uint64_t *pfns) {
  uint64_t pfn[50], mov = 0, unmov = 0;
  size_t n = 0;
  for (uint64_t p = z->zone_start_pfn; p < z->zone_start_pfn + z->zone_spanned_pages; p++) {
    int mt = bh__pb_mt(a, p);
    if (a->pages[p].flags != BH__PG_ALLOC || a->pages[p].order)
      continue;
    if (mt == BH_MT_MOVABLE && mov < 40) {
      pfn[n++] = p;
      mov++;
    } else if (mt == BH_MT_UNMOVABLE && unmov < 10) {
      pfn[n++] = p;
      unmov++;
    }
  }
  assert_int_equal(n, 50);
  quiet_lines(buf, len, pfn, n);
  if (pfns)
    memcpy(pfns, pfn, sizeof(pfn));
}

/*
 * The pcp pages the trace does not show: zoneinfo counts each CPU's (zoneinfo_show_print,
 * mm/vmstat.c:1797-1799 in 6.12), and the map lists the allocated pages with no flag, where
 * they hide (free_pages_prepare clears a freed page's flags; a pcp page is no buddy page).
 * With an empty trace, each CPU's lists get as many of those pages as its count says, on
 * their pageblock's type's list, and keep them to the end (the dump's counts); none with
 * --start-pcp trace or a map that does not list them.  A list the trace shows refilled
 * (mm_page_alloc_zone_locked with percpu_refill) was empty then (__rmqueue_pcplist refills
 * only an empty list, mm/page_alloc.c:3082-3092): CPU 0's Movable list gets none, so CPU 0
 * gets the Unmovable pages only.  So does a list the trace shows drained down to a page freed
 * in the trace: a drain takes a list's tail (free_pcppages_bulk, :1254), frees go on its head
 * (:2692), so every page the list held at the start had left it, with an event; so do the
 * lists one drain passes (free_pcppages_bulk's round robin, :1240-1266).  What the order-0
 * lists cannot hold of the count was on an open list of orders 1 to 3 (free_unref_page_commit
 * lists a block by its order, order_to_pindex :537-554, and counts it in pages, :2692), as
 * whole aligned blocks of pages with no flag.  Each CPU's high mark starts at its own (tuned
 * rule).
 */
static void test_start_pcp_hidden(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  const bh_zone_t *z = &a->zones[a->nr_zones - 1]; /* Normal */
  uint64_t free_mov = free_movable(a, z->zone_start_pfn, 0);
  char q[4096];
  quiet_pages(a, z, q, sizeof(q), NULL);
  long count[2] = {12, 20}, high[2] = {0, 0};
  char *zi = zoneinfo_pagesets(a, count, high);
  char *desc = describe_zi(a, false, q, NULL, zi), *plain = describe_zi(a, false, "", NULL, zi);
  /* tt_path's buffer is reused: each path copied */
  char *empty =
      strdup(write_trace3("hidden.bht", BH_TRACE_NATIVE_BINARY, desc, "# buddyhint-trace 3\n"));
  char *old =
      strdup(write_trace3("hidden0.bht", BH_TRACE_NATIVE_BINARY, plain, "# buddyhint-trace 3\n"));
  char lines[256];
  snprintf(lines, sizeof(lines), "# buddyhint-trace 3\n1000 Z %#lx 0 cpu=0 mt=1 refill=1\n",
           (unsigned long)free_mov);
  char *refilled = strdup(write_trace3("hidden1.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
  uint64_t free_mov2 = free_movable(a, free_mov + 1, 0);
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n1000 Z %#lx 0 cpu=0 mt=1 refill=1\n"
           "1100 Z %#lx 0 cpu=0 mt=0 refill=1\n",
           (unsigned long)free_mov, (unsigned long)free_mov2);
  char *refilled0 = strdup(write_trace3("hidden3.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
  uint64_t m = UINT64_MAX; /* the zone's last allocated Movable page: not one of the quiet */
  for (uint64_t p = z->zone_start_pfn; p < z->zone_start_pfn + z->zone_spanned_pages; p++)
    if (a->pages[p].flags == BH__PG_ALLOC && !a->pages[p].order && bh__pb_mt(a, p) == BH_MT_MOVABLE)
      m = p;
  assert_true(m != UINT64_MAX);
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n1000 F %#lx 0 cpu=0\n2000 D %#lx 0 cpu=0 mt=1\n", (unsigned long)m,
           (unsigned long)m);
  char *drained = strdup(write_trace3("hidden2.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
  /* the zone's last aligned run of 4 allocated Movable pages (not m, not among the quiet) */
  uint64_t y = UINT64_MAX;
  for (uint64_t p = z->zone_start_pfn; p + 4 <= z->zone_start_pfn + z->zone_spanned_pages; p += 4) {
    unsigned n = 0;
    while (n < 4 && p + n != m && a->pages[p + n].flags == BH__PG_ALLOC && !a->pages[p + n].order &&
           bh__pb_mt(a, p + n) == BH_MT_MOVABLE)
      n++;
    if (n == 4)
      y = p;
  }
  assert_true(y != UINT64_MAX);
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n1000 Z %#lx 0 cpu=0 mt=1 refill=1\n"
           "1100 Z %#lx 0 cpu=0 mt=0 refill=1\n1200 D %#lx 0 cpu=0 mt=1\n"
           "1300 D %#lx 2 cpu=0 mt=1\n",
           (unsigned long)free_mov, (unsigned long)free_mov2, (unsigned long)m, (unsigned long)y);
  char *passed = strdup(write_trace3("hidden4.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
  struct {
    const char *trace;
    bool trace_only;
    long hidden, cpu0, cpu1, known; /* known: the pcp pages the trace shows (drained first) */
  } cases[] = {
      {empty, false, 32, 12, 20, 0},     /* as zoneinfo counts */
      {empty, true, 0, 0, 0, 0},         /* --start-pcp trace */
      {old, false, 0, 0, 0, 0},          /* no Q lines: which pages is not known */
      {refilled, false, 32, 12, 20, 0},  /* CPU 0's Movable list was empty: the 10 Unmovable,
                                          * and the 2 its count still lacks as an order-1 block */
      {refilled0, false, 32, 12, 20, 0}, /* both its order-0 lists were: all 12 at order 1 */
      {passed, false, 24, 9, 20, 5},     /* and one drain went on from its order-0 Movable list
                                          * to the order-2 one: the lists between were empty then
                                          * (free_pcppages_bulk's round robin, :1240-1266), so of
                                          * the 7 pages the count lacks beyond the drained 1 and
                                          * 4, one order-2 block */
      {drained, false, 32, 13, 20, 0},   /* drained down to m: as refilled, and m (its drain is
                                          * the trace's, not played under allocator placement) */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = cases[i].trace;
    cfg.start_pcp_trace = cases[i].trace_only;
    cfg.pcp_refill_alloc = true; /* the refill is evidence of the start here, no allocation's */
    char dir[64];
    snprintf(dir, sizeof(dir), "dump-hidden%zu", i);
    cfg.dump_dir = tt_path(dir);
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_pcp_hidden_pages, cases[i].hidden);
    assert_int_equal(s.start_pcp_pages, cases[i].hidden + cases[i].known);
    assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 0, "count:"), cases[i].cpu0);
    assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 1, "count:"), cases[i].cpu1);
  }
  free(empty);
  free(old);
  free(refilled);
  free(refilled0);
  free(passed);
  free(drained);
  free(desc);
  free(plain);
  free(zi);
  /* each CPU's high mark from its own pageset (the tuned rule keeps it between high_min and
   * high_max: nr_pcp_high, mm/page_alloc.c:2625 in 6.12) */
  long zero[2] = {0, 0}, highs[2] = {170, 190};
  zi = zoneinfo_pagesets(a, zero, highs);
  desc = describe_zi(a, false, "", NULL, zi);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = write_trace3("highs.bht", BH_TRACE_NATIVE_BINARY, desc, "# buddyhint-trace 3\n");
  cfg.pcp_high_tuning = 1;
  cfg.dump_dir = tt_path("dump-highs");
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 0, "high:"), 170);
  assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 1, "high:"), 190);
  free(desc);
  free(zi);
  bh_arena_destroy(a);
}

/* The Q lines of quiet_pages into buf, and a map of the pages they name (a->nr_pages long). */
static bool *quiet_map(bh_arena_t *a, const bh_zone_t *z, char *buf, size_t len) {
  uint64_t qp[50];
  quiet_pages(a, z, buf, len, qp);
  bool *quiet = calloc(a->nr_pages, sizeof(bool));
  assert_non_null(quiet);
  for (int i = 0; i < 50; i++)
    quiet[qp[i]] = true;
  return quiet;
}

/* n order-0 Movable pages of zone z allocated before the trace and not quiet, from the top. */
static uint64_t *allocated_movable(const bh_arena_t *a, const bh_zone_t *z, const bool *quiet,
                                   size_t n) {
  uint64_t *pages = calloc(n, sizeof(uint64_t));
  assert_non_null(pages);
  size_t k = 0;
  for (uint64_t p = z->zone_start_pfn + z->zone_spanned_pages; p-- > z->zone_start_pfn && k < n;)
    if (a->pages[p].flags == BH__PG_ALLOC && !a->pages[p].order &&
        bh__pb_mt(a, p) == BH_MT_MOVABLE && !quiet[p])
      pages[k++] = p;
  assert_int_equal(k, n);
  return pages;
}

/* nr_pcp_free's clamp of free_count outside free_high (mm/page_alloc.c:2603-2626 in 6.12). */
static long nr_free(long free_count, long batch, long high) {
  return free_count < batch ? batch : free_count > high - batch ? high - batch : free_count;
}

/*
 * The start's pcp count against the trace's first drain.  free_unref_page_commit drains a
 * CPU's lists once a free brings its count to the high mark (mm/page_alloc.c:2713-2717 in
 * 6.12), so until the trace's first drain on CPU 0 every free left its count below the mark.
 * zoneinfo counts 12 pages on CPU 0's lists, all hidden (the trace shows none); the mark is
 * high_min (H) and the trace frees order-0 pages allocated before it on CPU 0.  Where its first
 * drain follows the (H - 9)th free, the kernel's lists held 3 pages fewer than zoneinfo's
 * count says: the replay's free that reaches H earlier takes a hidden page off instead of
 * draining, three times (start_pcp_surplus_pages 3), and drains at the trace's free, what
 * free_count says (nr_pcp_free: clamp(free_count, batch, high - batch), :2603-2626; one per
 * free since the start, :2711-2712).  Where the drain follows the (H - 12)th, the count was
 * right: none taken.  With no drain at all (a refill on CPU 1 shows the trace records the
 * pcp events), the kernel never reached the mark: every free from the (H - 12)th takes one,
 * four, and H - 1 pages are left.  --placement trace plays the trace's drains: none taken.
 * With zoneinfo's mark 3 above high_min (H + 3, the tuned rule), where the drain follows the
 * (H - 12)th free, the kernel's mark was 3 lower than the replay's, or its count 3 higher:
 * that free would leave the replay's count at H, 3 short.  A page more on the kernel's lists
 * would be one the trace never shows, drained or allocated, where that drain takes the free's
 * list's tail first (free_pcppages_bulk, :1232-1254): the mark is lowered to H
 * (start_pcp_deficit_pages 3), the free drains there as the kernel's did, clamp(free_count,
 * batch, H - batch) pages, and the 3 frees after stay below the mark.  At high_min the mark
 * cannot be lower: the same trace with zoneinfo's mark H drains at the (H - 12)th free of the
 * replay's own count (deficit 0: the trace's drain came 3 frees earlier).  Where the first
 * drain follows an order-1 free (a Movable pair allocated before the trace: two pages on the
 * count at once), it says only that the count reached the mark within that pair; the first
 * drain after an order-0 free says at which page.  The pair's drain shows CPU 0's order-1
 * Movable list emptied, so the 2 hidden pages the start puts there otherwise are not placed
 * (10 hidden), and allocator placement plays no trace drain: the replay holds the pair.  At
 * the (H - 14)th order-0 free its count is H - 3, short of the mark H + 3 by more than the
 * room above high_min: the mark goes to H (deficit 3), reached at the (H - 12)th free, which
 * drains clamp(free_count H - 10, batch, H - batch); 3 frees follow.  Without that reading the
 * deficit was spent on the pair's free (order 1: nothing lowered) and the replay drained at
 * the last free.  Until that drain the frees stay below the mark as before the first: with
 * the mark at H and the drain after the (H - 9)th order-0 free, the replay's count reaches H
 * at the (H - 12)th and takes a hidden page off there and at the two frees after (surplus 3),
 * then drains at the kernel's free, clamp(H - 7, batch, H - batch) pages, the last free.
 * Without it, calibrating ended at the pair's free and the replay drained 3 frees early.
 */
static void test_start_pcp_surplus(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  const bh_zone_t *z = &a->zones[a->nr_zones - 1]; /* Normal */
  long h = (long)z->pcp_high_min, batch = (long)z->pcp_batch;
  char q[4096];
  bool *quiet = quiet_map(a, z, q, sizeof(q));
  long count[2] = {12, 0}, high[2] = {h, 0};
  char *zi = zoneinfo_pagesets(a, count, high);
  char *desc = describe_zi(a, false, q, NULL, zi);
  size_t nfree = (size_t)(h - 9); /* order-0 Movable pages allocated before the trace */
  assert_true(h > 12 + 3 && h - 9 < batch << 5); /* free_count grows by one a free throughout */
  uint64_t *pages = allocated_movable(a, z, quiet, nfree);
  long high3[2] = {h + 3, 0};
  char *zi3 = zoneinfo_pagesets(a, count, high3);
  char *desc3 = describe_zi(a, false, q, NULL, zi3);
  long after = nr_free(h - 12, batch, h), after2 = nr_free(h - 10, batch, h),
       after3 = nr_free(h - 7, batch, h);
  uint64_t pair = UINT64_MAX; /* an order-1 Movable block allocated before the trace */
  for (uint64_t p = z->zone_start_pfn; p < z->zone_start_pfn + z->zone_spanned_pages; p++)
    if (a->pages[p].flags == BH__PG_ALLOC && a->pages[p].order == 1 &&
        bh__pb_mt(a, p) == BH_MT_MOVABLE && !quiet[p] && !quiet[p + 1]) {
      pair = p;
      break;
    }
  assert_true(pair != UINT64_MAX);
  const struct {
    long drain_after; /* the free the trace's first drain follows; 0: none */
    bool trace;       /* --placement trace */
    bool mark3;       /* zoneinfo's mark H + 3, tuned */
    bool pair_first;  /* the order-1 block freed first, a drain right after it */
    long surplus, deficit, end;
  } cases[] = {
      {h - 9, false, false, false, 3, 0, h - nr_free(h - 9, batch, h)},
      {h - 12, false, false, false, 0, 0, -1},
      {0, false, false, false, 4, 0, h - 1},
      {h - 9, true, false, false, 0, 0, -1},
      {h - 12, false, true, false, 0, 3, h - after + 3},
      {h - 15, false, false, false, 0, 0, h - after + 3},
      {h - 14, false, true, true, 0, 3, h - after2 + 3},
      {h - 9, false, false, true, 3, 0, h - after3},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    size_t len = 192 + 48 * (nfree + 1), n = 0;
    char *lines = malloc(len);
    assert_non_null(lines);
    n += (size_t)snprintf(lines + n, len - n, "# buddyhint-trace 3\n");
    if (cases[i].pair_first)
      n += (size_t)snprintf(lines + n, len - n, "990 F %#lx 1 cpu=0\n995 D %#lx 1 cpu=0 mt=1\n",
                            (unsigned long)pair, (unsigned long)pair);
    for (size_t f = 0; f < nfree; f++) {
      n += (size_t)snprintf(lines + n, len - n, "%zu F %#lx 0 cpu=0\n", 1000 + 10 * f,
                            (unsigned long)pages[f]);
      if ((long)f + 1 == cases[i].drain_after) /* the list's tail: the first page freed */
        n += (size_t)snprintf(lines + n, len - n, "%zu D %#lx 0 cpu=0 mt=1\n", 1005 + 10 * f,
                              (unsigned long)pages[0]);
    }
    if (!cases[i].drain_after) /* a pcp event all the same: the trace records them */
      n +=
          (size_t)snprintf(lines + n, len - n, "%zu Z %#lx 0 cpu=1 mt=1 refill=1\n",
                           1000 + 10 * nfree, (unsigned long)free_movable(a, z->zone_start_pfn, 0));
    char name[64];
    snprintf(name, sizeof(name), "surplus%zu.bht", i);
    bh_replay_config_t cfg =
        config_of(write_trace3(name, BH_TRACE_NATIVE_BINARY, cases[i].mark3 ? desc3 : desc, lines));
    cfg.placement = cases[i].trace ? BH_PLACEMENT_TRACE : cfg.placement;
    if (cases[i].mark3)
      cfg.pcp_high_tuning = 1;
    snprintf(name, sizeof(name), "dump-surplus%zu", i);
    cfg.dump_dir = tt_path(name);
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_pcp_hidden_pages, cases[i].pair_first ? 10 : 12);
    assert_int_equal(s.start_pcp_surplus_pages, cases[i].surplus);
    assert_int_equal(s.start_pcp_deficit_pages, cases[i].deficit);
    if (cases[i].end >= 0)
      assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 0, "count:"), cases[i].end);
    free(lines);
  }
  free(pages);
  free(quiet);
  free(desc);
  free(zi);
  free(desc3);
  free(zi3);
  bh_arena_destroy(a);
}

/* A crafted arena's Normal zone (pcp_open); then n of its Movable pages allocated before the
 * trace, as the quiet map leaves them, and the machine description with no pcp page counted
 * and CPU 0's and 1's high mark as given (pcp_pages). */
struct pcp_fixture {
  bh_arena_t *a;
  const bh_zone_t *z;
  char q[4096];
  bool *quiet;
  uint64_t *pages;
  char *zi, *desc;
};

static void pcp_open(struct pcp_fixture *f) {
  memset(f, 0, sizeof(*f));
  f->a = crafted_arena();
  f->z = &f->a->zones[f->a->nr_zones - 1];
  f->quiet = quiet_map(f->a, f->z, f->q, sizeof(f->q));
}

static void pcp_pages(struct pcp_fixture *f, long n, long high0, long high1) {
  f->pages = allocated_movable(f->a, f->z, f->quiet, (size_t)n);
  long count[2] = {0, 0}, high[2] = {high0, high1};
  f->zi = zoneinfo_pagesets(f->a, count, high);
  f->desc = describe_zi(f->a, false, f->q, NULL, f->zi);
}

static void pcp_close(struct pcp_fixture *f) {
  free(f->pages);
  free(f->quiet);
  free(f->desc);
  free(f->zi);
  bh_arena_destroy(f->a);
}

/*
 * The mark calibrated with no hidden page: zoneinfo counts none on CPU 0 (the trace shows
 * none either) and gives its mark as H + 3 (tuned; H = high_min); the trace's first drain
 * follows the H-th order-0 free, so the kernel's mark was H or its count 3 higher (item 10's
 * rule: start_pcp_deficit_pages 3), and that free drains clamp(H, batch, H - batch) pages
 * (nr_pcp_free, mm/page_alloc.c:2603-2626 in 6.12), the oldest first: the drains alike
 * (pcp_drains).  Not calibrated, the replay's count stays 3 short of its mark: no drain.
 */
static void test_start_pcp_deficit_unhidden(void **state) {
  (void)state;
  struct pcp_fixture x;
  pcp_open(&x);
  long h = (long)x.z->pcp_high_min, batch = (long)x.z->pcp_batch, drained = nr_free(h, batch, h);
  assert_true((long)x.z->pcp_high_max >= h + 3 && h < batch << 5);
  pcp_pages(&x, h, h + 3, 0);
  const uint64_t *pages = x.pages;
  size_t len = 256 + 48 * (size_t)(h + drained), n = 0;
  char *lines = malloc(len);
  assert_non_null(lines);
  n += (size_t)snprintf(lines + n, len - n, "# buddyhint-trace 3\n");
  for (long f = 0; f < h; f++)
    n += (size_t)snprintf(lines + n, len - n, "%ld F %#lx 0 cpu=0\n", 1000 + 10 * f,
                          (unsigned long)pages[f]);
  for (long d = 0; d < drained; d++)
    n += (size_t)snprintf(lines + n, len - n, "%ld D %#lx 0 cpu=0 mt=1\n", 1000 + 10 * h + d,
                          (unsigned long)pages[d]);
  bh_replay_config_t cfg =
      config_of(write_trace3("unhidden.bht", BH_TRACE_NATIVE_BINARY, x.desc, lines));
  cfg.pcp_high_tuning = 1;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.start_pcp_hidden_pages, 0);
  assert_int_equal(s.start_pcp_deficit_pages, 3);
  assert_int_equal(s.drains.kernel, 1);
  assert_int_equal(s.drains.same, 1);
  assert_true(s.drains.first_time_s < 0);
  free(lines);
  pcp_close(&x);
}

/*
 * The cap, where zoneinfo does not print it (6.12 prints "high:" alone, mm/vmstat.c:1795-1805).
 * Both CPUs' marks stand at the arena's cap C (zone_highsize() of the managed pages now), no
 * page counted.  Each CPU frees C - 100 pages and the trace's first drain follows the last:
 * the kernel's mark was 100 lower.  At the cap that is the cap: the kernel set high_max once
 * for the zone, every CPU's (zone_set_pageset_high_and_batch, mm/page_alloc.c:5793-5822), so
 * CPU 0's drain lowers it for CPU 1 too (pcp_high_max_lowered 100), whose drain then needs no
 * lowering of its own (start_pcp_deficit_pages 100).  Where zoneinfo prints high_max, the cap
 * is known: each CPU's mark is lowered, the cap stays (deficit 200, lowered 0).
 */
static void test_start_pcp_cap(void **state) {
  (void)state;
  struct pcp_fixture x;
  pcp_open(&x);
  long cap = (long)x.z->pcp_high_max, k = cap - 100;
  assert_true(k > (long)x.z->pcp_high_min);
  pcp_pages(&x, 2 * k, cap, cap);
  const uint64_t *pages = x.pages;
  const char *zi = x.zi;
  /* the same with the pagesets' high_min and high_max after CPU 0's batch (as 6.18 prints) */
  const char *normal = strstr(zi, "zone   Normal"),
             *b = normal ? strstr(normal, "\n              batch:") : NULL;
  assert_non_null(b);
  b = strchr(b + 1, '\n');
  size_t zl = strlen(zi) + 128;
  char *zi_max = malloc(zl);
  assert_non_null(zi_max);
  snprintf(zi_max, zl, "%.*s\n              high_min: %u\n              high_max: %ld%s",
           (int)(b - zi), zi, x.z->pcp_high_min, cap, b);
  size_t len = 256 + 48 * (size_t)(2 * k + 2);
  char *lines = malloc(len);
  assert_non_null(lines);
  size_t n = (size_t)snprintf(lines, len, "# buddyhint-trace 3\n");
  for (int c = 0; c < 2; c++) {
    for (long f = 0; f < k; f++)
      n += (size_t)snprintf(lines + n, len - n, "%ld F %#lx 0 cpu=%d\n", 1000 + 10 * (f + c * k),
                            (unsigned long)pages[f + c * k], c);
    n += (size_t)snprintf(lines + n, len - n, "%ld D %#lx 0 cpu=%d mt=1\n",
                          1005 + 10 * (c * k + k - 1), (unsigned long)pages[c * k],
                          c); /* the list's tail */
  }
  for (int printed = 0; printed < 2; printed++) {
    char *desc = describe_zi(x.a, false, x.q, NULL, printed ? zi_max : zi);
    bh_replay_config_t cfg = config_of(
        write_trace3(printed ? "cap1.bht" : "cap0.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
    cfg.pcp_high_tuning = 1;
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_pcp_hidden_pages, 0);
    assert_int_equal(s.pcp_high_max_lowered, printed ? 0 : 100);
    assert_int_equal(s.start_pcp_deficit_pages, printed ? 200 : 100);
    free(desc);
  }
  free(lines);
  free(zi_max);
  pcp_close(&x);
}

/*
 * The cap told by a decay: CPU 0's mark stands at the arena's cap C, and its first drain is
 * the vmstat worker's decay, which lowers the mark to high - high / 8 and drains the count
 * above it (decay_pcp_high, mm/page_alloc.c:2425-2440 in 6.12).  The count is that of the
 * kernel's cap C' = C - 100 decayed, plus 50, and the decay drains 50: the replay's would
 * drain nothing.  The least mark that decays to the kernel's is the cap: pcp_high_max_lowered
 * C - C' (item 15's lowering, told as the zone's cap).
 */
static void test_start_pcp_cap_decay(void **state) {
  (void)state;
  struct pcp_fixture x;
  pcp_open(&x);
  long cap = (long)x.z->pcp_high_max, kcap = cap - 100, l = kcap - (kcap >> 3), nfree = l + 50;
  while (kcap - 1 - ((kcap - 1) >> 3) >= l) /* the least mark that decays to l */
    kcap--;
  assert_true(l > (long)x.z->pcp_high_min && nfree < cap);
  pcp_pages(&x, nfree, cap, 0);
  const uint64_t *pages = x.pages;
  size_t len = 256 + 48 * (size_t)(nfree + 52), n = 0;
  char *lines = malloc(len);
  assert_non_null(lines);
  n += (size_t)snprintf(lines + n, len - n, "# buddyhint-trace 3\n");
  for (long f = 0; f < nfree; f++)
    n += (size_t)snprintf(lines + n, len - n, "%ld F %#lx 0 cpu=0\n", 1000 + 10 * f,
                          (unsigned long)pages[f]);
  n += (size_t)snprintf(lines + n, len - n, "%ld V 0x0 0 cpu=0\n", 1000 + 10 * nfree);
  for (long d = 0; d < 50; d++) /* the oldest first */
    n += (size_t)snprintf(lines + n, len - n, "%ld D %#lx 0 cpu=0 mt=1\n", 1001 + 10 * nfree + d,
                          (unsigned long)pages[d]);
  bh_replay_config_t cfg =
      config_of(write_trace3("capdecay.bht", BH_TRACE_NATIVE_BINARY, x.desc, lines));
  cfg.pcp_high_tuning = 1;
  bh_replay_summary_t s;
  replay(&cfg, &s);
  assert_int_equal(s.pcp_high_max_lowered, cap - kcap);
  assert_int_equal(s.drains.same, 1);
  free(lines);
  pcp_close(&x);
}

/*
 * The cap from the kernel's log: the recording's "record" section says how many KiB the
 * kernel freed after mem_init (record's boot_freed_kb), after its pcp lists were set up; the
 * kernel's zone_highsize() saw the managed pages without them (mm/page_alloc.c:5680-5723 in
 * 6.12).  They come off the zone that holds the kernel image and the initrd, DMA32: its cap is
 * ((managed - freed) / 8) / CPUs, 100 pages below the arena's (pcp_high_max_lowered 100).  No
 * such line: the cap stays.
 */
static void test_start_pcp_boot_cap(void **state) {
  (void)state;
  struct pcp_fixture x;
  pcp_open(&x);
  pcp_pages(&x, 1, 0, 0);
  const bh_zone_t *z32 = NULL;
  for (int i = 0; i < x.a->nr_zones; i++)
    if (x.a->zones[i].type == BH_ZONE_DMA32)
      z32 = &x.a->zones[i];
  assert_non_null(z32);
  uint64_t cpus = bh_arena_config(x.a)->nr_cpus, freed = 800 * cpus; /* pages */
  uint64_t cap = (z32->managed_pages - freed) / 8 / cpus;
  assert_true(z32->pcp_high_max == z32->managed_pages / 8 / cpus && cap > z32->pcp_high_min);
  char lines[128];
  snprintf(lines, sizeof(lines), "# buddyhint-trace 3\n1000 F %#lx 0 cpu=0\n",
           (unsigned long)x.pages[0]);
  const char *end = strstr(x.desc, "@end");
  assert_non_null(end);
  size_t dl = strlen(x.desc) + 128;
  char *withlog = malloc(dl);
  assert_non_null(withlog);
  snprintf(withlog, dl, "%.*s@record 1\nboot_freed_kb %lu\n%s", (int)(end - x.desc), x.desc,
           (unsigned long)(freed * 4), end);
  for (int variant = 0; variant < 2; variant++) {
    bh_replay_config_t cfg =
        config_of(write_trace3(variant ? "bootcap1.bht" : "bootcap0.bht", BH_TRACE_NATIVE_BINARY,
                               variant ? withlog : x.desc, lines));
    cfg.pcp_high_tuning = 1;
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.pcp_high_max_lowered, variant ? z32->pcp_high_max - cap : 0);
  }
  free(withlog);
  pcp_close(&x);
}

/*
 * Mark or count, told apart by a decay.  zoneinfo's mark for CPU 0 is H + 16 (tuned; H =
 * high_min), its count 12, all hidden; the trace's first drain follows the (H - 12)th order-0
 * free, where the replay's count is H: 16 short, so the mark is lowered to H (item 10's rule,
 * start_pcp_deficit_pages 16) and the free drains clamp(H - 12, batch, H - batch) pages
 * (nr_pcp_free, mm/page_alloc.c:2603-2626 in 6.12).  Then enough frees bring the count to 155
 * and the vmstat worker runs.  At the mark H (high_min) decay_pcp_high changes nothing and
 * drains nothing (:2425-2435); had the kernel's count been 16 higher instead, its mark H + 16
 * would decay to max(H + 16 - (H + 16) / 8, high_min) = H and drain 155 + 16 - H pages.  The
 * trace's run drains that many: the mark goes back to H + 16 and the 16 pages count as the
 * kernel's (start_pcp_ghost_pages 16); the replay drains as the kernel did, and its lists end
 * that much shorter.  Where the run drains nothing, the lowered mark stays.
 */
static void test_start_pcp_decay_check(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  const bh_zone_t *z = &a->zones[a->nr_zones - 1]; /* Normal */
  long h = (long)z->pcp_high_min, batch = (long)z->pcp_batch, mark = h + 16, end_count = 155;
  assert_true((long)z->pcp_high_max >= mark && mark - mark / 8 <= h && end_count < h);
  char q[4096];
  bool *quiet = quiet_map(a, z, q, sizeof(q));
  long first = nr_free(h - 12, batch, h); /* the first drain, at the (H - 12)th free */
  size_t nfree = (size_t)(h - 12 + end_count - (12 - first + h - 12));
  uint64_t *pages = allocated_movable(a, z, quiet, nfree);
  long count[2] = {12, 0}, high[2] = {mark, 0};
  char *zi = zoneinfo_pagesets(a, count, high);
  char *desc = describe_zi(a, false, q, NULL, zi);
  long drained = end_count + 16 - h; /* the decay's drain had the count been 16 higher */
  for (int run_drains = 0; run_drains < 2; run_drains++) {
    size_t len = 256 + 48 * (nfree + (size_t)drained + 2), n = 0;
    char *lines = malloc(len);
    assert_non_null(lines);
    n += (size_t)snprintf(lines + n, len - n, "# buddyhint-trace 3\n");
    for (size_t f = 0; f < nfree; f++) {
      n += (size_t)snprintf(lines + n, len - n, "%zu F %#lx 0 cpu=0\n", 1000 + 10 * f,
                            (unsigned long)pages[f]);
      if ((long)f + 1 == h - 12) /* the first drain: the list's tail, the first page freed */
        n += (size_t)snprintf(lines + n, len - n, "%zu D %#lx 0 cpu=0 mt=1\n", 1005 + 10 * f,
                              (unsigned long)pages[0]);
    }
    size_t t = 1000 + 10 * nfree;
    n += (size_t)snprintf(lines + n, len - n, "%zu V 0x0 0 cpu=0\n", t);
    for (long d = 0; run_drains && d < drained; d++) /* the oldest pages left on the list */
      n += (size_t)snprintf(lines + n, len - n, "%zu D %#lx 0 cpu=0 mt=1\n", t + 1 + (size_t)d,
                            (unsigned long)pages[first - 12 + d]);
    n += (size_t)snprintf(lines + n, len - n, "%zu Z %#lx 0 cpu=1 mt=1 refill=1\n", t + 100,
                          (unsigned long)free_movable(a, z->zone_start_pfn, 0));
    char name[64];
    snprintf(name, sizeof(name), "check%d.bht", run_drains);
    bh_replay_config_t cfg = config_of(write_trace3(name, BH_TRACE_NATIVE_BINARY, desc, lines));
    cfg.pcp_high_tuning = 1;
    snprintf(name, sizeof(name), "dump-check%d", run_drains);
    cfg.dump_dir = tt_path(name);
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_pcp_hidden_pages, 12);
    assert_int_equal(s.start_pcp_deficit_pages, 16);
    assert_int_equal(s.start_pcp_ghost_pages, run_drains ? 16 : 0);
    /* the drains compared: the first drain is written as its first page only (first pages
     * in the replay); the decay's, where the trace has one, alike */
    assert_int_equal(s.drains.kernel, run_drains ? 2 : 1);
    assert_int_equal(s.drains.replay, run_drains ? 2 : 1);
    assert_int_equal(s.drains.same, run_drains ? 1 : 0);
    assert_int_equal(s.drains.first_kernel_pages, 1);
    assert_int_equal(s.drains.first_replay_pages, first);
    assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 0, "count:"),
                     run_drains ? end_count - drained : end_count);
    assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 0, "high:"), h);
    free(lines);
  }
  free(pages);
  free(quiet);
  free(desc);
  free(zi);
  bh_arena_destroy(a);
}

/*
 * A page alloc_pages_bulk took (bulk=1, a recording's bulk probe) comes off the pcp list
 * without rmqueue_pcplist's free_count halving (mm/page_alloc.c:3126 in 6.12; the bulk path,
 * :4659-4818, calls __rmqueue_pcplist directly).  CPU 0 frees H - 1 pages (free_count H - 1),
 * allocates one (halved: (H - 1) / 2) and one bulk page (not halved), then frees 3: the third
 * brings the count to the mark H and drains nr_pcp_free's clamp(free_count, batch, H - batch)
 * (:2603-2626), (H - 1) / 2 + 3 pages as the trace shows.  Read as an ordinary allocation
 * the bulk page would halve it again: the replay would drain (H - 1) / 4 + 3 (pcp_drains).
 */
static void test_bulk_alloc_keeps_free_count(void **state) {
  (void)state;
  struct pcp_fixture x;
  pcp_open(&x);
  long h = (long)x.z->pcp_high_min, batch = (long)x.z->pcp_batch;
  long kept = nr_free((h - 1) / 2 + 3, batch, h), halved = nr_free((h - 1) / 4 + 3, batch, h);
  assert_true(kept != halved);
  size_t nfree = (size_t)h + 2;
  pcp_pages(&x, (long)nfree, h, 0);
  const uint64_t *pages = x.pages;
  for (int bulk = 0; bulk < 2; bulk++) {
    size_t len = 256 + 64 * (nfree + (size_t)kept + 4), n = 0, t = 1000;
    char *lines = malloc(len);
    assert_non_null(lines);
    n += (size_t)snprintf(lines + n, len - n, "# buddyhint-trace 3\n");
    for (long f = 0; f < h - 1; f++)
      n += (size_t)snprintf(lines + n, len - n, "%zu F %#lx 0 cpu=0\n", t++,
                            (unsigned long)pages[f]);
    n += (size_t)snprintf(lines + n, len - n, "%zu A %#lx 0 cpu=0 mt=1 gfp=GFP_HIGHUSER_MOVABLE\n",
                          t++, (unsigned long)pages[h - 2]);
    n +=
        (size_t)snprintf(lines + n, len - n, "%zu A %#lx 0 cpu=0 mt=1 gfp=GFP_HIGHUSER_MOVABLE%s\n",
                         t++, (unsigned long)pages[h - 3], bulk ? " bulk=1" : "");
    for (long f = h - 1; f < h + 2; f++)
      n += (size_t)snprintf(lines + n, len - n, "%zu F %#lx 0 cpu=0\n", t++,
                            (unsigned long)pages[f]);
    for (long d = 0; d < kept; d++) /* the list's tail first: the oldest frees */
      n += (size_t)snprintf(lines + n, len - n, "%zu D %#lx 0 cpu=0 mt=1\n", t++,
                            (unsigned long)pages[d]);
    char name[64];
    snprintf(name, sizeof(name), "bulk%d.bht", bulk);
    bh_replay_config_t cfg = config_of(write_trace3(name, BH_TRACE_NATIVE_BINARY, x.desc, lines));
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_true(s.drains.present);
    assert_int_equal(s.drains.kernel, 1);
    assert_int_equal(s.drains.replay, 1);
    assert_int_equal(s.drains.same, bulk ? 1 : 0);
    if (!bulk) {
      assert_int_equal(s.drains.first_kernel_pages, kept);
      assert_int_equal(s.drains.first_replay_pages, halved);
    }
    free(lines);
  }
  pcp_close(&x);
}

/*
 * The start's pcp count against the trace's first drain where it is a decay's: the vmstat
 * worker's run on CPU 0 (mm_page_pcpu_drain right after it) drains count - high once it has
 * lowered the mark, high - high / 8 (decay_pcp_high, mm/page_alloc.c:2425-2430 in 6.12), so
 * the kernel's count stood that many above the new mark.  zoneinfo's mark 190 (tuned, above
 * high_min H = 160): the new mark 167.  CPU 0's first drain gives back 30 pages, drained
 * first (known start pcp pages, :1254), then a later decay 150 more: with zoneinfo's count
 * 200 (20 hidden), the replay's decay would drain 33, so 3 hidden pages go back first
 * (start_pcp_surplus_pages 3); with 196 it would drain 29, so the new mark is lowered by one
 * (start_pcp_deficit_pages 1); with the mark at high_min (nothing decays) and 185 it would drain
 * 25, and the mark cannot be lower: neither.
 */
static void test_start_pcp_decay_first(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  const bh_zone_t *z = &a->zones[a->nr_zones - 1]; /* Normal */
  long h = (long)z->pcp_high_min;
  assert_int_equal(h, 160); /* the expected values below are worked out for it */
  char q[4096];
  quiet_pages(a, z, q, sizeof(q), NULL);
  uint64_t d[180]; /* free pages of Movable pageblocks, first drained: on CPU 0's lists */
  size_t nd = 0;
  for (uint64_t p = z->zone_start_pfn; p < z->zone_start_pfn + z->zone_spanned_pages && nd < 180;
       p++)
    if ((a->pages[p].flags & BH__PG_BUDDY) && bh__pb_mt(a, p) == BH_MT_MOVABLE)
      for (uint64_t k = 0; k < (1ull << a->pages[p].order) && nd < 180; k++)
        d[nd++] = p + k;
  assert_int_equal(nd, 180);
  size_t len = 64 + 48 * 182, n = 0;
  char *lines = malloc(len);
  assert_non_null(lines);
  n += (size_t)snprintf(lines + n, len - n, "# buddyhint-trace 3\n1000 V 0x0 0 cpu=0\n");
  for (size_t i = 0; i < 180; i++) {
    if (i == 30)
      n += (size_t)snprintf(lines + n, len - n, "5000 V 0x0 0 cpu=0\n");
    n += (size_t)snprintf(lines + n, len - n, "%zu D %#lx 0 cpu=0 mt=1\n",
                          (i < 30 ? 1001 : 5001) + i, (unsigned long)d[i]);
  }
  /* the new mark: high - high / 8, above count - (batch << 5) and high_min here
   * (mm/page_alloc.c:2426-2427); the decay drains count - mark (:2432), the trace 30 */
  long mark = 190, decayed = mark - (mark >> 3), drained = 30;
  assert_true(decayed > h && decayed > 200 - ((long)z->pcp_batch << 5));
  const struct {
    long count, high, surplus, deficit;
  } cases[] = {{decayed + drained + 3, mark, 3, 0},
               {decayed + drained - 1, mark, 0, 1},
               {h + drained - 5, h, 0, 0}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    long count[2] = {cases[i].count, 0}, high[2] = {cases[i].high, 0};
    char *zi = zoneinfo_pagesets(a, count, high);
    char *desc = describe_zi(a, false, q, NULL, zi);
    char name[64];
    snprintf(name, sizeof(name), "decayfirst%zu.bht", i);
    bh_replay_config_t cfg = config_of(write_trace3(name, BH_TRACE_NATIVE_BINARY, desc, lines));
    cfg.pcp_high_tuning = 1;
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_pcp_pages, cases[i].count);
    assert_int_equal(s.start_pcp_surplus_pages, cases[i].surplus);
    assert_int_equal(s.start_pcp_deficit_pages, cases[i].deficit);
    free(desc);
    free(zi);
  }
  free(lines);
  bh_arena_destroy(a);
}

/* desc with a section of its own added before its @end line (freed; a new string). */
static char *with_section(char *desc, const char *name, const char *lines) {
  char *end = strstr(desc, "@end\n");
  assert_non_null(end);
  size_t n = 0;
  for (const char *l = lines; *l; l++)
    n += *l == '\n';
  char *out = NULL;
  assert_true(asprintf(&out, "%.*s@%s %zu\n%s@end\n", (int)(end - desc), desc, name, n, lines) > 0);
  free(desc);
  return out;
}

/*
 * The pcp pages at the start are zoneinfo's counts with what the recorded events between
 * zoneinfo's reading and the trace's start did (start/count_events, written by record):
 * zoneinfo prints pcp->count (mm/vmstat.c:1797-1799 in 6.12); an allocation of a pcp order
 * took a page off a list (rmqueue_pcplist, mm/page_alloc.c:3122-3150), a free put one on
 * (free_unref_page_commit, :2676-2722), a batched free once (its mm_page_free and
 * mm_page_free_batched, :2840-2862; the batched event alone if its plain one came before),
 * a refill added its block (rmqueue_bulk, :2331-2345), a drain took one away
 * (free_pcppages_bulk, :1248-1300); an order-4 allocation never touches the pcp lists
 * (pcp_allowed_order, :555-563).  CPU 0: -1 + 1 + 2 = +2 on its 12; CPU 1: +1 + 1 - 1 = +1
 * on its 20.  Without the section, zoneinfo's counts as they are.
 */
static void test_start_pcp_count_events(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  const bh_zone_t *z = &a->zones[a->nr_zones - 1]; /* Normal */
  char q[4096], ev[1024];
  quiet_pages(a, z, q, sizeof(q), NULL);
  unsigned long b = (unsigned long)z->zone_start_pfn;
  snprintf(ev, sizeof(ev),
           "A %lx 0 0 100\n" /* CPU 0 -1 */
           "F %lx 0 1 200\n" /* CPU 1 +1 */
           "F %lx 0 1 300\n" /* CPU 1 +1, and its batched twin nothing */
           "B %lx 0 1 310\n"
           "B %lx 0 0 400\n"  /* CPU 0 +1: its mm_page_free came before the mark */
           "Z %lx 1 0 500\n"  /* CPU 0 +2 */
           "D %lx 0 1 600\n"  /* CPU 1 -1 */
           "A %lx 4 0 700\n", /* no pcp order: nothing */
           b + 1, b + 2, b + 3, b + 3, b + 4, b + 6, b + 8, b + 16);
  long count[2] = {12, 20}, high[2] = {0, 0};
  char *zi = zoneinfo_pagesets(a, count, high);
  char *plain = describe_zi(a, false, q, NULL, zi);
  char *desc = with_section(describe_zi(a, false, q, NULL, zi), "start/count_events", ev);
  char *with =
      strdup(write_trace3("counted.bht", BH_TRACE_NATIVE_BINARY, desc, "# buddyhint-trace 3\n"));
  char *without =
      strdup(write_trace3("uncounted.bht", BH_TRACE_NATIVE_BINARY, plain, "# buddyhint-trace 3\n"));
  struct {
    const char *trace;
    long events, adjust, cpu0, cpu1;
  } cases[] = {{with, 8, 3, 14, 21}, {without, 0, 0, 12, 20}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bh_replay_config_t cfg;
    bh_replay_config_init(&cfg);
    cfg.trace = cases[i].trace;
    char dir[64];
    snprintf(dir, sizeof(dir), "dump-counted%zu", i);
    cfg.dump_dir = tt_path(dir);
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_int_equal(s.start_pcp_count_events, cases[i].events);
    assert_int_equal(s.start_pcp_count_adjust, cases[i].adjust);
    assert_int_equal(s.start_pcp_hidden_pages, cases[i].cpu0 + cases[i].cpu1);
    assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 0, "count:"), cases[i].cpu0);
    assert_int_equal(zoneinfo_cpu_field(cfg.dump_dir, 1, "count:"), cases[i].cpu1);
  }
  free(with);
  free(without);
  free(desc);
  free(plain);
  free(zi);
  bh_arena_destroy(a);
}

/*
 * A block freed past the pcp lists, then refilled in pieces: the kernel frees a block into the
 * free lists directly when the CPU's pcp lock is taken (free_unref_page's trylock,
 * mm/page_alloc.c:2761-2766 in 6.12: an interrupt freeing on a CPU whose task holds it), which
 * no event shows.  The refills of its two pages (mm_page_alloc_zone_locked at order 0) show
 * it was on the free lists: the first pass finds the take of the freed block with no drain
 * between, the replay frees it there (locked_frees_taken; before, it put the block on CPU 1's
 * pcp list and moved it at the first refill, pcp_refills_relisted), both refills apply, and
 * the allocations take them from the list.
 */
static void test_pcp_refill_piece(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  unsigned long f = (unsigned long)free_movable(a, 4096, 1);
  char lines[1024];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n"
           "1000 A %#lx 1 cpu=0 mt=1 gfp=GFP_HIGHUSER_MOVABLE\n"
           "2000 F %#lx 1 cpu=1\n"               /* the kernel: into the free lists */
           "3000 Z %#lx 0 cpu=1 mt=1 refill=1\n" /* its first page: the block moves */
           "3001 Z %#lx 0 cpu=1 mt=1 refill=1\n" /* its second: free, applied */
           "4000 A %#lx 0 cpu=1 mt=1 gfp=GFP_HIGHUSER_MOVABLE\n"
           "4001 A %#lx 0 cpu=1 mt=1 gfp=GFP_HIGHUSER_MOVABLE\n",
           f, f, f, f + 1, f, f + 1);
  bh_replay_summary_t s;
  replay_pcp(write_trace3("piece.bht", BH_TRACE_NATIVE_BINARY, desc, lines), "dump-piece", &s);
  assert_int_equal(s.pcp_events_applied, 2);
  assert_int_equal(s.pcp_events_missed, 0);
  assert_int_equal(s.locked_frees_taken, 1);
  assert_int_equal(s.pcp_refills_relisted, 0);
  assert_int_equal(s.placement_conflicts, 0);
  assert_int_equal(s.allocs, 3);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * --placement trace with the pcp events: a refill (mm_page_alloc_zone_locked, percpu_refill=1)
 * moves the block from the free lists to the CPU's pcp list, a drain (mm_page_pcpu_drain) back;
 * an event whose block is not where it says is counted, not applied; a zone_locked event
 * without percpu_refill needs nothing; an allocation takes a refilled block from the pcp list
 * (no placement conflict).  A refill of a block on a pcp list moves it to the refilling CPU's;
 * a drain of memory allocated before the trace frees it (it was on a pcp list at the start);
 * every miss is counted by its cause; a refill of a block the map holds allocated, its first
 * event, shows it free at the start (start_taken_pages).  At the end the pcp lists hold the
 * freed block and the three refilled ones nobody allocated: three pages more than without the
 * pcp events.
 * Read from native text (the first pass keeps the events for the second) and binary.
 */
static void test_pcp_events(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  uint64_t fb[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX}, pre = UINT64_MAX, pre2 = UINT64_MAX;
  int k = 0;
  for (uint64_t p = 4096; p < a->nr_pages; p++) {
    if (bh__pb_mt(a, p) >= BH_MT_PCPTYPES)
      continue;
    if (k < 2 && (a->pages[p].flags & BH__PG_BUDDY) && a->pages[p].order == 0)
      fb[k++] = p;
    else if (fb[2] == UINT64_MAX && (a->pages[p].flags & BH__PG_BUDDY))
      fb[2] = p; /* the head of a free block of any order */
    if (a->pages[p].flags == BH__PG_ALLOC && a->pages[p].order == 0) {
      if (pre == UINT64_MAX)
        pre = p; /* allocated in the snapshot: before the trace in the replay */
      else if (pre2 == UINT64_MAX)
        pre2 = p;
    }
  }
  assert_int_equal(k, 2);
  assert_true(fb[2] != UINT64_MAX && pre != UINT64_MAX && pre2 != UINT64_MAX);
  unsigned long f0 = (unsigned long)fb[0], f1 = (unsigned long)fb[1], f2 = (unsigned long)fb[2];
  unsigned long pa = (unsigned long)pre, pb = (unsigned long)pre2;
  char lines[2048];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n"
           "1000 Z %#lx 0 cpu=0 mt=1 refill=1\n" /* refill: applied */
           "2000 D %#lx 0 cpu=0 mt=1\n"          /* drain: applied */
           "3000 D %#lx 0 cpu=0 mt=1\n"          /* free on the free lists: drain_free */
           "4000 Z %#lx 0 cpu=1 mt=1 refill=0\n" /* direct */
           "5000 Z %#lx 0 cpu=1 mt=1 refill=1\n" /* refill: applied */
           "6000 A %#lx 0 cpu=1 mt=1 gfp=GFP_HIGHUSER_MOVABLE\n"
           "7000 F %#lx 0 cpu=1\n"               /* to the free lists, as 7500 shows */
           "7500 Z %#lx 0 cpu=0 mt=1 refill=1\n" /* taken from them: applied */
           "8000 Z %#lx 0 cpu=0 mt=1 refill=1\n" /* refill: applied, never allocated */
           "8500 A %#lx 0 cpu=0 mt=1 gfp=GFP_HIGHUSER_MOVABLE\n"
           "9000 D %#lx 0 cpu=0 mt=1\n"          /* allocated: drain_allocated */
           "9100 Z %#lx 0 cpu=0 mt=1 refill=1\n" /* allocated: refill_allocated */
           "9200 D %#lx 0 cpu=1 mt=1\n"          /* before the trace: adopted and drained */
           "9300 Z %#lx 0 cpu=1 mt=1 refill=1\n" /* free now: applied */
           "9350 Z %#lx 0 cpu=1 mt=1 refill=1\n" /* allocated in the map, first taken: free */
           "9400 D %#lx 3 cpu=1 mt=1\n",         /* order 3 around f0: drain_split */
           f0, f0, f0, f0, f0, f0, f0, f0, f1, f2, f2, f2, pa, pa, pb, f0 & ~7ul);
  char *paths[2]; /* tt_path's buffers are reused */
  paths[0] = strdup(write_trace3("pcp3.txt", BH_TRACE_NATIVE_TEXT, desc, lines));
  paths[1] = strdup(write_trace3("pcp3.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
  bh_replay_summary_t s;
  long with[2];
  for (int i = 0; i < 2; i++) {
    with[i] = replay_pcp(paths[i], i ? "dump-pcp-bin" : "dump-pcp-txt", &s);
    assert_int_equal(s.pcp_events_applied, 8);
    assert_int_equal(s.start_taken_pages, 1);  /* pb */
    assert_int_equal(s.locked_frees_taken, 1); /* the free at 7000 */
    assert_int_equal(s.pcp_refills_relisted, 0);
    assert_int_equal(s.pcp_refills_relisted_start, 0);
    assert_int_equal(s.pcp_drains_adopted, 0); /* pa's drain: on a pcp list from the start */
    assert_int_equal(s.pcp_events_missed, 4);
    assert_int_equal(s.pcp_events_direct, 1);
    assert_int_equal(s.pcp_drains_missed, 3);
    uint64_t want[BH_PCP_MISS_CAUSES] = {0}, sum = 0;
    want[BH_PCP_MISS_drain_free] = want[BH_PCP_MISS_drain_allocated] = 1;
    want[BH_PCP_MISS_refill_allocated] = 1;
    want[BH_PCP_MISS_drain_split] = 1;
    for (int c = 0; c < BH_PCP_MISS_CAUSES; c++) {
      if (s.pcp_missed_by_cause[c] != want[c])
        fail_msg("cause %s: %lu, not %lu", bh_replay_pcp_cause_name(c),
                 (unsigned long)s.pcp_missed_by_cause[c], (unsigned long)want[c]);
      sum += s.pcp_missed_by_cause[c];
    }
    assert_int_equal(sum, s.pcp_events_missed); /* every miss has its cause */
    assert_int_equal(s.placement_conflicts, 0);
    assert_int_equal(s.allocs, 2);
    assert_int_equal(s.frees, 1);
  }
  assert_int_equal(with[0], with[1]);
  /* --start-order pfn: the start holds pa allocated; its drain adopts it (on a pcp list at
   * the start, which that start did not know) */
  replay_pcp_order(paths[1], "dump-pcp-pfn", true, &s);
  assert_int_equal(s.pcp_drains_adopted, 1);
  assert_int_equal(s.pcp_events_applied, 7);
  assert_int_equal(s.pcp_events_missed, 5);
  /* the page events alone (a version 2 trace: its reader skipped the pcp lines) */
  char *v2 = strdup(write_trace("pcp2.bht", desc, lines));
  long without = replay_pcp(v2, "dump-pcp-v2", &s);
  free(v2);
  assert_int_equal(s.pcp_events_applied + s.pcp_events_missed + s.pcp_events_direct, 0);
  assert_int_equal(with[1], without + 3); /* f1, pa and pb, refilled and never allocated */
  /* allocator placement does not read them */
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = paths[1];
  replay(&cfg, &s);
  assert_int_equal(s.pcp_events_applied + s.pcp_events_missed + s.pcp_events_direct, 0);
  free(paths[0]);
  free(paths[1]);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * A drain above order 0 of memory the free map shows in use (a map shows no pcp pages): the
 * kernel drained it from its order-1 pcp list (free_pcppages_bulk, mm/page_alloc.c:1264 in
 * 6.12.117, with the block's order).  A drain before any other event of its block shows that
 * the block was on that pcp list at the start: the start state puts it there, at the drain's
 * order, and the drain applies.  With --start-order pfn (no inference) the start holds it as
 * order-0 pieces allocated before the trace, which join into the drained block: adopted, not
 * a drain_split miss, and the refill of it that follows applies (a 6.12 guest's memhog
 * recording missed 55 such drains and the refills after them).
 */
/*
 * A refill under allocator placement happens at the trace's refill event, not at the
 * allocation's: the kernel traces an allocation after post_alloc_hook has zeroed its pages
 * (init_on_alloc, mm/page_alloc.c:1601, before trace_mm_page_alloc at :4881 in 6.12), and the
 * refill (rmqueue_bulk from rmqueue_pcplist, :3082-3092) came before that.  CPU 1's Movable
 * list is refilled first (its events at 1000), CPU 0's second (1001), and CPU 0's allocation
 * is traced first (2000): with --pcp-refill event CPU 1 gets the head of the first refill,
 * the block CPU 0 gets with --pcp-refill alloc, where the allocations order the refills; the
 * two CPUs' blocks are the other way round.
 */
/* The arena's pfn of each CPU's allocation in a replay of path (placement rows, cpu 0 and 1). */
static void refill_pfns(const char *path, bool at_alloc, unsigned long pfn[2],
                        bh_replay_summary_t *s) {
  const char *csv = tt_path(at_alloc ? "refill-alloc.csv" : "refill-event.csv");
  FILE *f = fopen(csv, "w+");
  assert_non_null(f);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  cfg.pcp_refill_alloc = at_alloc;
  cfg.placements = f;
  replay(&cfg, s);
  rewind(f);
  char line[256];
  pfn[0] = pfn[1] = ~0ul;
  while (fgets(line, sizeof(line), f)) {
    double t;
    unsigned cpu, order;
    unsigned long kernel, arena;
    char mt[16];
    if (sscanf(line, "%lf,%u,%u,%15[^,],%lu,%lu", &t, &cpu, &order, mt, &kernel, &arena) == 6 &&
        cpu < 2)
      pfn[cpu] = arena;
  }
  fclose(f);
  assert_true(pfn[0] != ~0ul && pfn[1] != ~0ul);
}

static void test_pcp_refill_at_event(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  const bh_zone_t *z = &a->zones[a->nr_zones - 1];
  uint64_t p[2] = {UINT64_MAX, UINT64_MAX};
  for (uint64_t q = z->start_pfn; q < z->start_pfn + z->spanned_pages && p[1] == UINT64_MAX; q++)
    if ((a->pages[q].flags & BH__PG_BUDDY) && bh__pb_mt(a, q) == BH_MT_MOVABLE)
      p[p[0] == UINT64_MAX ? 0 : 1] = q;
  assert_true(p[1] != UINT64_MAX);
  char lines[512];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n"
           "1000 Z %#lx 0 cpu=1 mt=1 refill=1\n"
           "1001 Z %#lx 0 cpu=0 mt=1 refill=1\n"
           "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
           "2001 A %#lx 0 cpu=1 gfp=GFP_HIGHUSER_MOVABLE\n",
           (unsigned long)p[0], (unsigned long)p[1], (unsigned long)p[1], (unsigned long)p[0]);
  char *path = strdup(write_trace3("refill-event.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
  bh_replay_summary_t s;
  unsigned long ev[2], al[2];
  refill_pfns(path, false, ev, &s);
  assert_string_equal(s.pcp_refill, "event");
  assert_int_equal(s.pcp_refills_at_event, 2);
  refill_pfns(path, true, al, &s);
  assert_string_equal(s.pcp_refill, "alloc");
  assert_int_equal(s.pcp_refills_at_event, 0);
  print_message("refill at the event: cpu 0 %#lx, cpu 1 %#lx; at the allocation: %#lx, %#lx\n",
                ev[0], ev[1], al[0], al[1]);
  assert_true(ev[1] == al[0] && ev[0] == al[1] && ev[0] != ev[1]);
  /* without the machine's layout the kernel's pfns name no zone of the arena: no refill is
   * followed, and the pcp events are not played (the two allocations are the events) */
  char *plain = strdup(write_trace3("refill-plain.bht", BH_TRACE_NATIVE_BINARY, NULL, lines));
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = plain;
  cfg.memory_bytes = 256ull << 20;
  replay(&cfg, &s);
  assert_string_equal(s.pcp_refill, "alloc");
  assert_int_equal(s.pcp_refills_at_event, 0);
  assert_int_equal(s.events, 2);
  free(plain);
  free(path);
  free(desc);
  bh_arena_destroy(a);
}

/*
 * The drains compared (pcp_drains): CPU 0's list refilled at the trace's event, a page of it
 * allocated and freed.  The replay's count stays below its high mark (high_min after one
 * refill of batch pages; free_unref_page_commit drains at count >= high, mm/page_alloc.c:
 * 2713-2717 in 6.12), so it drains nothing where the trace shows the kernel's drain of that
 * page: the first moment that differs, at the free.  Without that drain nothing differs; with
 * the kernel's blocks (--placement trace) nothing is compared.
 */
static void test_pcp_drains_compared(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  const bh_zone_t *z = &a->zones[a->nr_zones - 1];
  uint64_t p = free_movable(a, z->zone_start_pfn, 0);
  for (int drain = 0; drain < 2; drain++) {
    char lines[512];
    snprintf(lines, sizeof(lines),
             "# buddyhint-trace 3\n"
             "1000 Z %#lx 0 cpu=0 mt=1 refill=1\n"
             "2000 A %#lx 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n"
             "3000 F %#lx 0 cpu=0\n"
             "%s"
             "4000 V 0x0 0 cpu=0\n",
             (unsigned long)p, (unsigned long)p, (unsigned long)p,
             drain ? "3001 D PFN 0 cpu=0 mt=1\n" : "");
    char *d = strstr(lines, "PFN");
    if (d) { /* the drained page's pfn, as long as the placeholder */
      char pfn[16];
      snprintf(pfn, sizeof(pfn), "%#lx", (unsigned long)p);
      memmove(d + strlen(pfn), d + 3, strlen(d + 3) + 1);
      memcpy(d, pfn, strlen(pfn));
    }
    char name[64];
    snprintf(name, sizeof(name), "drains%d.bht", drain);
    char *path = strdup(write_trace3(name, BH_TRACE_NATIVE_BINARY, desc, lines));
    bh_replay_config_t cfg = config_of(path);
    bh_replay_summary_t s;
    replay(&cfg, &s);
    assert_true(s.drains.present);
    assert_int_equal(s.drains.kernel, drain ? 1 : 0);
    assert_int_equal(s.drains.replay, 0);
    assert_int_equal(s.drains.same, 0);
    if (drain) {
      assert_true(s.drains.first_time_s > 2.9e-6 && s.drains.first_time_s < 3.1e-6);
      assert_int_equal(s.drains.first_cpu, 0);
      assert_int_equal(s.drains.first_kernel_pages, 1);
      assert_int_equal(s.drains.first_replay_pages, 0);
    } else {
      assert_true(s.drains.first_time_s < 0);
    }
    cfg.placement = BH_PLACEMENT_TRACE;
    replay(&cfg, &s);
    assert_false(s.drains.present);
    free(path);
  }
  free(desc);
  bh_arena_destroy(a);
}

static void test_pcp_drain_pretrace_pieces(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  unsigned long p = (unsigned long)four_movable_used(a);
  char lines[512];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n"
           "1000 D %#lx 1 cpu=0 mt=1\n"          /* on a pcp list at the start */
           "2000 Z %#lx 1 cpu=0 mt=1 refill=1\n" /* free now: applied */
           "3000 D %#lx 1 cpu=0 mt=1\n"          /* the other half: the same */
           "4000 A %#lx 1 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
           p, p, p + 2, p);
  bh_replay_summary_t s;
  char *path = strdup(write_trace3("pcppieces.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
  replay_pcp_order(path, "dump-pieces", false, &s);
  assert_int_equal(s.start_pcp_pages, 4);
  assert_int_equal(s.pcp_drains_adopted, 0);
  assert_int_equal(s.pcp_events_applied, 3);
  assert_int_equal(s.pcp_events_missed, 0);
  /* --start-order pfn: p's block is on a pcp list only as its allocation shows it (its first
   * page event), and the other half's pieces are adopted by its drain */
  replay_pcp_order(path, "dump-pieces-pfn", true, &s);
  assert_int_equal(s.start_pcp_pages, 2);
  assert_int_equal(s.pcp_drains_adopted, 1);
  assert_int_equal(s.pcp_events_applied, 3);
  assert_int_equal(s.pcp_events_missed, 0);
  /* allocator placement: the start state reads the drains too; the replay plays the pcp
   * events only for the refills (at their events, --pcp-refill event: the default), and this
   * one finds CPU 0's list holding the start's blocks, so it refills nothing; with
   * --pcp-refill alloc it plays none */
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  replay(&cfg, &s);
  assert_int_equal(s.start_pcp_pages, 4);
  assert_int_equal(s.events, 4);
  assert_string_equal(s.pcp_refill, "event");
  assert_int_equal(s.pcp_refills_at_event, 0);
  assert_int_equal(s.pcp_events_applied + s.pcp_events_missed, 0);
  cfg.pcp_refill_alloc = true;
  replay(&cfg, &s);
  assert_int_equal(s.start_pcp_pages, 4);
  assert_int_equal(s.events, 1);
  assert_string_equal(s.pcp_refill, "alloc");
  assert_int_equal(s.pcp_events_applied + s.pcp_events_missed, 0);
  free(path);
  free(desc);
  bh_arena_destroy(a);
}

/* A dump's pagetypeinfo: pageblocks of type mt, and free pages on mt's lists (all zones). */
static void ptinfo(const char *dir, int mt, long *blocks, long *free_pages) {
  static const char *const names[] = {"Unmovable", "Movable", "Reclaimable"};
  char path[512];
  snprintf(path, sizeof(path), "%s/pagetypeinfo", dir);
  char *pi = slurp(path), *save = NULL;
  int col = -1;
  *blocks = *free_pages = 0;
  for (char *line = strtok_r(pi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (!strncmp(line, "Number of blocks type", 21)) {
      col = 0;
      char *q = line + 21, *tok, *s2 = NULL;
      for (int i = 0; (tok = strtok_r(i ? NULL : q, " ", &s2)); i++)
        if (!strcmp(tok, names[mt]))
          col = i;
      continue;
    }
    char word[32];
    int n = 0;
    if (col >= 0 && sscanf(line, "Node %*d, zone %31s%n", word, &n) == 1 && !strchr(word, ',')) {
      char *q = line + n;
      for (int i = 0; i <= col; i++)
        *blocks += i == col ? strtol(q, &q, 10) : (strtol(q, &q, 10), 0);
    } else if (sscanf(line, "Node %*d, zone %*s type %31s%n", word, &n) == 1 &&
               !strcmp(word, names[mt])) {
      char *q = line + n;
      for (int o = 0; *q; o++) {
        char *e;
        long v = strtol(q, &e, 10);
        if (e == q)
          break;
        *free_pages += v << o;
        q = e;
      }
    }
  }
  free(pi);
}

/*
 * --placement trace with the fallbacks (mm_page_alloc_extfrag).  A claim below pageblock order
 * (Linux 6.12 mm/page_alloc.c:2021-2024: __move_freepages_block retypes the pageblock and moves
 * every free block in it to the claiming type's lists, then __rmqueue_smallest takes the block,
 * its zone_locked event first) turns one Movable pageblock Unmovable: one pageblock more of
 * Unmovable, one fewer of Movable, and the pageblock's free pages (but the one refilled) move
 * from the Movable lists to the Unmovable lists.  A claim of a free pageblock-order block
 * (:1973-1980, change_pageblock_range, no zone_locked event) retypes it and puts the allocated
 * page on the pcp list as the refill it was; a steal (:2285, page_del_and_expand) changes no
 * type.  A claim outside the arena is missed; allocator placement reads none of them.
 */
static void test_extfrag_events(void **state) {
  (void)state;
  bh_arena_t *a = crafted_arena();
  char *desc = describe(a, false);
  uint64_t pb = 1ull << a->pb_order, part = UINT64_MAX, whole = UINT64_MAX, steal = UINT64_MAX;
  unsigned part_order = 0;
  uint64_t part_free = 0;
  for (uint64_t b = 4096; b + pb <= a->nr_pages; b += pb) {
    if (bh__pb_mt(a, b) != BH_MT_MOVABLE || (a->pageblock[b >> a->pb_order] & BH__PB_ABSENT))
      continue;
    uint64_t fp = 0, head = UINT64_MAX;
    unsigned ho = 0;
    for (uint64_t p = b; p < b + pb;) {
      const bh__page_t *pg = &a->pages[p];
      if (pg->flags & BH__PG_BUDDY) {
        fp += 1ull << pg->order;
        if (head == UINT64_MAX && pg->order >= 1 && pg->order < a->pb_order)
          head = p, ho = pg->order;
        p += 1ull << pg->order;
      } else {
        p++;
      }
    }
    if (fp == pb && (a->pages[b].flags & BH__PG_BUDDY) && a->pages[b].order == a->pb_order &&
        whole == UINT64_MAX)
      whole = b; /* a free block of exactly pageblock order */
    else if (fp < pb && head != UINT64_MAX && part == UINT64_MAX)
      part = head, part_order = ho, part_free = fp;
    else if (fp < pb && head != UINT64_MAX && steal == UINT64_MAX)
      steal = head;
  }
  assert_true(part != UINT64_MAX && whole != UINT64_MAX && steal != UINT64_MAX);
  char lines[2048];
  snprintf(lines, sizeof(lines),
           "# buddyhint-trace 3\n"
           "1000 Z %#lx 0 cpu=0 mt=0 refill=1\n"
           "1001 X %#lx 0 cpu=0 mt=0 fallback_order=%u fallback_mt=1 claim=1\n"
           "1002 A %#lx 0 cpu=0 mt=0 gfp=GFP_KERNEL\n"
           "2000 X %#lx 0 cpu=1 mt=2 fallback_order=%u fallback_mt=1 claim=1\n"
           "2001 A %#lx 0 cpu=1 mt=2 gfp=GFP_KERNEL|__GFP_RECLAIMABLE\n"
           "3000 X %#lx 0 cpu=0 mt=0 fallback_order=%u fallback_mt=1\n"
           "3001 A %#lx 0 cpu=0 mt=0 gfp=GFP_KERNEL\n"
           "4000 X 0xfffffff000 0 cpu=0 mt=0 fallback_order=9 fallback_mt=1 claim=1\n",
           (unsigned long)part, (unsigned long)part, part_order, (unsigned long)part,
           (unsigned long)whole, a->pb_order, (unsigned long)whole, (unsigned long)steal,
           a->pages[steal].order, (unsigned long)steal);
  /* the same without the fallbacks (the X lines and the claim's Z are the kernel's doing) */
  char plain[2048] = "", *o = plain;
  for (const char *l = lines; *l;) {
    const char *e = strchr(l, '\n') + 1;
    if (!strstr(l, " X ") || strstr(l, " X ") > e)
      o += snprintf(o, sizeof(plain) - (size_t)(o - plain), "%.*s", (int)(e - l), l);
    l = e;
  }
  bh_replay_summary_t s;
  char *with = strdup(write_trace3("xf3.bht", BH_TRACE_NATIVE_BINARY, desc, lines));
  char *without = strdup(write_trace3("xf3-plain.bht", BH_TRACE_NATIVE_BINARY, desc, plain));
  /* --start-order pfn: the start as the map has it in both (a refill would otherwise give its
   * pageblock's start type, and the claim take it back only in the trace that has it) */
  replay_pcp_order(without, "dump-xf-without", true, &s);
  assert_int_equal(s.extfrag_events_applied + s.extfrag_events_missed, 0);
  assert_int_equal(s.placement_conflicts, 0);
  replay_pcp_order(with, "dump-xf-with", true, &s);
  assert_int_equal(s.extfrag_events_applied, 3);
  assert_int_equal(s.extfrag_events_missed, 1);
  assert_int_equal(s.extfrag_claims_applied, 2);
  assert_int_equal(s.extfrag_pageblocks_retyped, 2);
  assert_int_equal(s.extfrag_refills, 2); /* the whole block's page and the steal's */
  assert_int_equal(s.placement_conflicts, 0);
  assert_int_equal(s.allocs, 3);
  long bu[2], fu[2], bm[2], fm[2], br[2], fr[2];
  for (int i = 0; i < 2; i++) {
    const char *dir = tt_path(i ? "dump-xf-with" : "dump-xf-without");
    ptinfo(dir, BH_MT_UNMOVABLE, &bu[i], &fu[i]);
    ptinfo(dir, BH_MT_MOVABLE, &bm[i], &fm[i]);
    ptinfo(dir, BH_MT_RECLAIMABLE, &br[i], &fr[i]);
  }
  print_message("pageblocks U %ld->%ld M %ld->%ld R %ld->%ld, free U %ld->%ld M %ld->%ld\n", bu[0],
                bu[1], bm[0], bm[1], br[0], br[1], fu[0], fu[1], fm[0], fm[1]);
  assert_int_equal(bu[1], bu[0] + 1);
  assert_int_equal(br[1], br[0] + 1);
  assert_int_equal(bm[1], bm[0] - 2);
  /* the claimed pageblock's free pages but the page refilled, and the whole block's but the
   * page the allocation took, are on the new types' lists */
  assert_int_equal(fu[1], fu[0] + (long)part_free - 1);
  assert_int_equal(fr[1], fr[0] + (long)pb - 1);
  assert_int_equal(fm[1], fm[0] - ((long)part_free - 1) - ((long)pb - 1));
  /* allocator placement does not read them */
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = with;
  replay(&cfg, &s);
  assert_int_equal(s.extfrag_events_applied + s.extfrag_events_missed, 0);
  free(with);
  free(without);
  free(desc);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crafted_snapshot),
      cmocka_unit_test(test_guest_dir),
      cmocka_unit_test(test_kernel_rules_by_release),
      cmocka_unit_test(test_pretrace_and_placement),
      cmocka_unit_test(test_old_trace),
      cmocka_unit_test(test_start_reported),
      cmocka_unit_test(test_start_reported_all),
      cmocka_unit_test(test_start_reported_tail),
      cmocka_unit_test(test_start_reported_capability),
      cmocka_unit_test(test_start_no_initial_flush),
      cmocka_unit_test(test_recorded_reporting_order),
      cmocka_unit_test(test_start_taken_no_pass),
      cmocka_unit_test(test_pcp_events),
      cmocka_unit_test(test_pcp_drain_pretrace_pieces),
      cmocka_unit_test(test_pcp_refill_at_event),
      cmocka_unit_test(test_pcp_drains_compared),
      cmocka_unit_test(test_start_pcp_deficit_unhidden),
      cmocka_unit_test(test_start_pcp_cap),
      cmocka_unit_test(test_start_pcp_cap_decay),
      cmocka_unit_test(test_start_pcp_boot_cap),
      cmocka_unit_test(test_bulk_alloc_keeps_free_count),
      cmocka_unit_test(test_extfrag_events),
      cmocka_unit_test(test_start_pcp_order),
      cmocka_unit_test(test_start_pcp_inner_first),
      cmocka_unit_test(test_start_buddy_order),
      cmocka_unit_test(test_start_reported_taken),
      cmocka_unit_test(test_start_pageblock_types),
      cmocka_unit_test(test_start_types_from_refills),
      cmocka_unit_test(test_start_types_from_pcp_allocs),
      cmocka_unit_test(test_start_buddy_order_reported),
      cmocka_unit_test(test_start_types_free_swap),
      cmocka_unit_test(test_start_types_partner_shape),
      cmocka_unit_test(test_start_buddy_order_takes),
      cmocka_unit_test(test_start_buddy_order_claim),
      cmocka_unit_test(test_start_drain_refilled),
      cmocka_unit_test(test_start_taken),
      cmocka_unit_test(test_start_drain_after_isolation),
      cmocka_unit_test(test_untraced_allocs_drained),
      cmocka_unit_test(test_start_take_then_free),
      cmocka_unit_test(test_start_pcp_hidden),
      cmocka_unit_test(test_start_pcp_surplus),
      cmocka_unit_test(test_start_pcp_decay_first),
      cmocka_unit_test(test_start_pcp_decay_check),
      cmocka_unit_test(test_start_map_free_on_pcp),
      cmocka_unit_test(test_start_pcp_count_events),
      cmocka_unit_test(test_pcp_refill_piece),
      cmocka_unit_test(test_untraced_allocs),
      cmocka_unit_test(test_untraced_allocs_lifo),
      cmocka_unit_test(test_locked_frees),
      cmocka_unit_test(test_locked_frees_taken),
      cmocka_unit_test(test_batched_frees_deferred),
      cmocka_unit_test(test_batched_frees_deferred_many),
      cmocka_unit_test(test_pcp_decay_vmstat),
      cmocka_unit_test(test_untraced_allocs_refill),
      cmocka_unit_test(test_untraced_allocs_freed),
      cmocka_unit_test(test_split_shows_types),
      cmocka_unit_test(test_start_reported_keeps_order),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
