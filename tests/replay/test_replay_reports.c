/*
 * bh_replay_config_t.reports (`replay --reports FILE`): one CSV line per reported block,
 * time_s on the trace's own clock.
 *
 * The trace starts at 1000 s: an order-10 block is allocated and freed at 1000.5 s, and an
 * order-0 page stays allocated.  Bubble (free page reporting) must then report the free blocks
 * of order >= 9 of a 256 MiB arena (DMA32 passes the check of low watermark + 32 << 9 pages,
 * mm/page_reporting.c:269), the first pass PAGE_REPORTING_DELAY (2 s, mm/page_reporting.c:50)
 * after the initial request that registering the device makes (mm/page_reporting.c:386), i.e.
 * at 1002 s on the trace's clock, where the virtual clock starts with the first event; the
 * blocks add up to the summary's reported_bytes, each aligned to its order and inside the
 * arena, none twice (nothing is allocated after the reports).
 */
#include "trace/trace_test_util.h"

#include <buddyhint/replay.h>

static const char trace_text[] = "# buddyhint-trace 1\n"
                                 "1000000000000 A 0x10000 10 gfp=GFP_HIGHUSER_MOVABLE\n"
                                 "1000500000000 F 0x10000 10\n"
                                 "1001000000000 A 0x20000 0 gfp=GFP_KERNEL\n";

typedef struct row {
  double t;
  unsigned long pfn;
  unsigned order;
} row_t;

/* Replays the trace with strategy into a reports file; returns the rows (n of them). */
/* the kernel's HZ replay_text gives the replay (cfg.kernel_hz; 0: none) */
static unsigned text_hz;

static row_t *replay_text(const char *text, const char *strategy, bool hex, bh_replay_summary_t *s,
                          size_t *n) {
  const char *trace = tt_write_str("reports.txt", text);
  const char *csv = tt_path("reports.csv");
  FILE *f = fopen(csv, "w");
  assert_non_null(f);
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = trace;
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.memory_bytes = 256ull << 20;
  cfg.idle_ns = 30 * BH_NS_PER_SEC;
  cfg.hint.strategy = strategy;
  cfg.reports = f;
  cfg.reports_hex = hex;
  cfg.kernel_hz = text_hz;
  char err[512] = "";
  int rc = bh_replay_run(&cfg, s, err, sizeof(err));
  if (rc)
    fail_msg("replay: %s", err);
  assert_int_equal(fclose(f), 0);

  f = fopen(csv, "r");
  assert_non_null(f);
  char line[256];
  assert_non_null(fgets(line, sizeof(line), f));
  assert_string_equal(line, "trace_time_s,pfn,order\n");
  size_t cap = 1024;
  row_t *rows = malloc(cap * sizeof(*rows));
  assert_non_null(rows);
  *n = 0;
  while (fgets(line, sizeof(line), f)) {
    assert_true(*n < cap);
    row_t *r = &rows[*n];
    char tail;
    if (sscanf(line, hex ? "%lf,0x%lx,%u%c" : "%lf,%lu,%u%c", &r->t, &r->pfn, &r->order, &tail) !=
            4 ||
        tail != '\n')
      fail_msg("bad line: %s", line);
    (*n)++;
  }
  fclose(f);
  return rows;
}

static row_t *replay_reports(const char *strategy, bool hex, bh_replay_summary_t *s, size_t *n) {
  return replay_text(trace_text, strategy, hex, s, n);
}

static void test_bubble_reports(void **state) {
  (void)state;
  bh_replay_summary_t s;
  size_t n;
  row_t *rows = replay_reports("bubble", false, &s, &n);
  assert_true(n > 0);
  assert_true(s.reported_bytes > 0);
  /* the first pass: 2 s after the start of the trace's clock, in its own seconds */
  if (!(rows[0].t > 1002.0 - 1e-6 && rows[0].t < 1002.0 + 1e-6))
    fail_msg("first report at %.6f, expected 1002.000000", rows[0].t);
  uint64_t bytes = 0, pages = s.memory_bytes / 4096;
  for (size_t i = 0; i < n; i++) {
    assert_true(rows[i].t >= rows[0].t);
    assert_true(rows[i].t <= 1001.0 + 30.0 + 1e-6); /* within the idle time */
    if (i)
      assert_true(rows[i].t >= rows[i - 1].t);
    assert_true(rows[i].order >= 9 && rows[i].order <= 10); /* page_reporting_order 9 */
    assert_int_equal(rows[i].pfn % (1ul << rows[i].order), 0);
    assert_true(rows[i].pfn + (1ul << rows[i].order) <= pages);
    for (size_t j = 0; j < i; j++)
      assert_false(rows[j].pfn == rows[i].pfn);
    bytes += 4096ull << rows[i].order;
  }
  assert_int_equal(bytes, s.reported_bytes);
  free(rows);
}

static void test_none_reports_nothing(void **state) {
  (void)state;
  bh_replay_summary_t s;
  size_t n;
  row_t *rows = replay_reports("none", false, &s, &n);
  assert_int_equal(n, 0);
  assert_int_equal(s.reported_bytes, 0);
  free(rows);
}

/* --hex: the same rows with the pfns in hex. */
static void test_hex(void **state) {
  (void)state;
  bh_replay_summary_t s, h;
  size_t n, nh;
  row_t *dec = replay_reports("bubble", false, &s, &n);
  row_t *hex = replay_reports("bubble", true, &h, &nh);
  assert_int_equal(n, nh);
  assert_true(n > 0);
  for (size_t i = 0; i < n; i++) {
    assert_true(dec[i].t == hex[i].t);
    assert_int_equal(dec[i].pfn, hex[i].pfn);
    assert_int_equal(dec[i].order, hex[i].order);
  }
  free(dec);
  free(hex);
}

/*
 * A free that notifies between the replay's clock steps (its once-a-second vmstat tick,
 * kcompactd's checks every 500 ms) requests a pass PAGE_REPORTING_DELAY after the free
 * itself: __page_reporting_request queues the work 2 s from jiffies then
 * (mm/page_reporting.c:50 and :83-84 in 6.12).  After the first pass (1002 s) every free
 * block is reported; an order-10 block allocated at 1003.55 s and freed at 1003.95 s notifies
 * (page_reporting_notify_free from __free_one_page, mm/page_alloc.c:896-897), so the next
 * pass, the one that reports it again, runs at 1005.95 s, not 2 s after the clock's last
 * move before the free (the allocation's, at a step) as it did while the hinting clock moved
 * only at the replay's steps.
 */
static void test_request_at_free(void **state) {
  (void)state;
  static const char text[] = "# buddyhint-trace 1\n"
                             "1000000000000 A 0x20000 0 gfp=GFP_KERNEL\n"
                             "1003550000000 A 0x10000 10 gfp=GFP_HIGHUSER_MOVABLE\n"
                             "1003950000000 F 0x10000 10\n";
  bh_replay_summary_t s;
  size_t n;
  row_t *rows = replay_text(text, "bubble", false, &s, &n);
  size_t i = 0;
  while (i < n && rows[i].t < 1003.0)
    i++;
  assert_true(i > 0 && i < n);
  if (!(rows[i].t > 1005.95 - 1e-6 && rows[i].t < 1005.95 + 1e-6))
    fail_msg("the pass after the free at 1003.95 s reported at %.6f, expected 1005.950000",
             rows[i].t);
  free(rows);
}

/*
 * Delayed work fires on the recorded kernel's timer wheel (kernel/time/timer.c in 6.12): the
 * 2 s of PAGE_REPORTING_DELAY are 500 ticks at HZ 250, a level-1 timer (LVL_START(1) = 63 to
 * LVL_START(2) = 504 ticks, :584-596) whose expiry calc_index rounds up to the next multiple
 * of 8 ticks, strictly after (:579-580).  The vmstat worker's runs, all 5 ms past a multiple
 * of 32 ms, place the ticks whose jiffies are multiples of 8 (its own delayed work is such a
 * timer).  The free at 1003.95 s is in tick 986 after the aligned one at 1000.005 s; 986 + 500
 * = 1486 rounds up to 1488: the pass runs at 1000.005 + 1488 * 0.004 = 1005.957 s, not at
 * 1005.950 (--pass-timer exact, or no HZ).
 */
static void test_request_on_wheel(void **state) {
  (void)state;
  char text[2048];
  int k = snprintf(text, sizeof(text), "# buddyhint-trace 3\n");
  for (int i = 0; i < 10; i++)
    k += snprintf(text + k, sizeof(text) - (size_t)k, "%llu V 0x0 0 cpu=0\n",
                  1000000000000ull + (unsigned long long)i * 992000000ull + 5000000ull);
  snprintf(text + k, sizeof(text) - (size_t)k,
           "1000000000000 A 0x20000 0 gfp=GFP_KERNEL\n"
           "1003550000000 A 0x10000 10 gfp=GFP_HIGHUSER_MOVABLE\n"
           "1003950000000 F 0x10000 10\n");
  const struct {
    unsigned hz;
    double at;
    const char *timer;
  } want[] = {{250, 1005.957, "wheel"}, {0, 1005.950, "exact"}};
  for (size_t c = 0; c < sizeof(want) / sizeof(want[0]); c++) {
    bh_replay_summary_t s;
    size_t n, i = 0;
    text_hz = want[c].hz;
    row_t *rows = replay_text(text, "bubble", false, &s, &n);
    text_hz = 0;
    assert_string_equal(s.pass_timer, want[c].timer);
    while (i < n && rows[i].t < 1003.0)
      i++;
    assert_true(i < n);
    if (!(rows[i].t > want[c].at - 1e-6 && rows[i].t < want[c].at + 1e-6))
      fail_msg("hz %u: the pass after the free at 1003.95 s reported at %.6f, expected %.6f",
               want[c].hz, rows[i].t, want[c].at);
    free(rows);
  }
}

/*
 * A vmstat worker's run with no page event before it runs after the work due by its time: the
 * pass, then the pcp decay.  3000 order-0 pages are allocated at 1000 s and freed at 1001 s
 * onto CPU 0's pcp list, whose high mark follows them up (nr_pcp_high, mm/page_alloc.c:2665-2670
 * in 6.12.117): nothing drains, and the registration's pass at 1002 s (mm/page_reporting.c:386,
 * :50) reports what was free before.  Six runs from 1002.5 s decay the high mark by an eighth
 * each (decay_pcp_high, :2425-2436): the second is the first to drain pages, whose merges
 * request a pass 2 s later (page_reporting_notify_free, :83-84 of mm/page_reporting.c), at
 * 1004.6 s.  Which run drains first follows from the arena's list after the frees, not from
 * the kernel alone: 3,345 pages under a high mark of 3,945, an eighth off leaves 3,452
 * (above the count), a second 3,021 (324 drained).  Played at the clock of the frees before them,
 * the runs drained ahead of the 1002 s pass, which then reported their blocks, and no pass
 * followed.  The reference is the trace with only the first run, which drains nothing.
 */
static void test_vmstat_run_after_due_pass(void **state) {
  (void)state;
  enum { N = 3000 };
  size_t cap = (size_t)N * 2 * 64 + 1024, k;
  char *text = malloc(cap), *ref = malloc(cap);
  assert_non_null(text);
  assert_non_null(ref);
  for (int pass = 0; pass < 2; pass++) {
    char *b = pass ? ref : text;
    k = (size_t)snprintf(b, cap, "# buddyhint-trace 3\n");
    for (int i = 0; i < N; i++)
      k += (size_t)snprintf(b + k, cap - k, "%llu A 0x%x 0 cpu=0 gfp=GFP_HIGHUSER_MOVABLE\n",
                            1000000000000ull + (unsigned long long)i * 1000, 0x10000 + i);
    for (int i = 0; i < N; i++)
      k += (size_t)snprintf(b + k, cap - k, "%llu F 0x%x 0 cpu=0\n",
                            1001000000000ull + (unsigned long long)i * 1000, 0x10000 + i);
    for (int v = 0; v < (pass ? 1 : 6); v++)
      k += (size_t)snprintf(b + k, cap - k, "%llu V 0x0 0 cpu=0\n",
                            1002500000000ull + (unsigned long long)v * 100000000);
    snprintf(b + k, cap - k, "1010000000000 A 0x20000 0 cpu=0 gfp=GFP_KERNEL\n");
  }
  bh_replay_summary_t s, sr;
  size_t n, nr;
  row_t *rows = replay_text(text, "bubble", false, &s, &n);
  row_t *want = replay_text(ref, "bubble", false, &sr, &nr);
  free(text);
  free(ref);
  assert_int_equal(s.vmstat_events, 6);
  assert_true(s.arena_stats[BH_STAT_pcp_drain] > 0);
  assert_int_equal(sr.arena_stats[BH_STAT_pcp_drain], 0);
  size_t i = 0, j = 0;
  uint64_t at_pass = 0, want_at_pass = 0;
  for (; i < n && rows[i].t < 1002.5; i++)
    at_pass += 4096ull << rows[i].order;
  for (; j < nr && want[j].t < 1002.5; j++)
    want_at_pass += 4096ull << want[j].order;
  assert_true(want_at_pass > 0);
  assert_int_equal(at_pass, want_at_pass);
  assert_int_equal(nr, j); /* the reference: nothing after the first pass */
  assert_true(i < n);
  if (!(rows[i].t > 1004.6 - 1e-6 && rows[i].t < 1004.6 + 1e-6))
    fail_msg("the pass after the decay's drain reported at %.6f, expected 1004.600000", rows[i].t);
  free(rows);
  free(want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bubble_reports),
      cmocka_unit_test(test_none_reports_nothing),
      cmocka_unit_test(test_hex),
      cmocka_unit_test(test_request_at_free),
      cmocka_unit_test(test_request_on_wheel),
      cmocka_unit_test(test_vmstat_run_after_due_pass),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
